/*
 * hex.c - hexadecimal digits (see hex.h).
 */
#include "base/hex.h"

static const char hex_digits[] = "0123456789abcdef";

int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

bool hex_decode(const char *text, uint8_t *out, size_t nbytes)
{
    for (size_t i = 0; i < nbytes; i++) {
        int hi = hex_value(text[2 * i]);
        int lo = hi < 0 ? -1 : hex_value(text[2 * i + 1]);
        if (lo < 0)
            return false;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return text[2 * nbytes] == '\0';
}

void hex_encode(const uint8_t *bytes, size_t nbytes, char *out)
{
    for (size_t i = 0; i < nbytes; i++) {
        out[2 * i] = hex_digits[bytes[i] >> 4];
        out[2 * i + 1] = hex_digits[bytes[i] & 15];
    }
    out[2 * nbytes] = '\0';
}

size_t hex_u64(uint64_t value, int min_digits, char *out)
{
    size_t n = 1;
    while (n < 16 && (value >> (4 * n)) != 0)
        n++;
    if (min_digits > 16)
        min_digits = 16;
    if ((int)n < min_digits)
        n = (size_t)min_digits;
    for (size_t i = 0; i < n; i++)
        out[n - 1 - i] = hex_digits[(value >> (4 * i)) & 15];
    return n;
}
