/*
 * token.c - generation, digests and display forms of secrets.
 *
 * Randomness comes from getrandom(2), digests from OpenSSL's libcrypto
 * (never hand-rolled). Plaintext secrets only pass through here on their
 * way to the caller once; nothing here logs or stores them.
 */
#include "base/token.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "base/hex.h"

static const char base62_digits[] =
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

int token_base62_encode(const unsigned char *bytes, size_t len, char *out, size_t width)
{
    unsigned char work[64];
    if (len > sizeof work)
        return -1;
    memcpy(work, bytes, len);
    /* Repeated division of the big-endian number by 62, least digit first. */
    for (size_t pos = width; pos > 0; pos--) {
        unsigned remainder = 0;
        for (size_t i = 0; i < len; i++) {
            unsigned value = (remainder << 8) | work[i];
            work[i] = (unsigned char)(value / 62);
            remainder = value % 62;
        }
        out[pos - 1] = base62_digits[remainder];
    }
    out[width] = '\0';
    for (size_t i = 0; i < len; i++)
        if (work[i] != 0)
            return -1; /* did not fit in width digits */
    return 0;
}

int token_generate(const char *prefix, char *out, size_t outlen)
{
    size_t prefix_len = strlen(prefix);
    if (outlen < prefix_len + TOKEN_BODY_LEN + 1)
        return -1;
    unsigned char random_bytes[TOKEN_RANDOM_BYTES];
    if (getrandom(random_bytes, sizeof random_bytes, 0) != (ssize_t)sizeof random_bytes)
        return -1;
    memcpy(out, prefix, prefix_len);
    int rc =
        token_base62_encode(random_bytes, sizeof random_bytes, out + prefix_len, TOKEN_BODY_LEN);
    explicit_bzero(random_bytes, sizeof random_bytes);
    return rc;
}

int token_mint(const char *prefix, struct token_secret *out)
{
    if (token_generate(prefix, out->token, sizeof out->token) != 0)
        return -1;
    token_digest_hex(out->token, strlen(out->token), out->digest);
    token_display_prefix(out->token, out->prefix);
    token_last_four(out->token, out->last4);
    return 0;
}

void token_digest_hex(const char *text, size_t len, char out[TOKEN_DIGEST_HEX_LEN + 1])
{
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int digest_len = 0;
    EVP_Digest(text, len, digest, &digest_len, EVP_sha256(), NULL);
    hex_encode(digest, digest_len < 32 ? digest_len : 32, out);
}

/* c is one of base62_digits (a strchr per character showed in the
 * evaluation profile). */
static bool is_base62(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

bool token_well_formed(const char *text, const char *prefix)
{
    if (text == NULL)
        return false;
    size_t prefix_len = strlen(prefix);
    if (strncmp(text, prefix, prefix_len) != 0 || strlen(text) != prefix_len + TOKEN_BODY_LEN)
        return false;
    for (const char *p = text + prefix_len; *p; p++)
        if (!is_base62(*p))
            return false;
    return true;
}

void token_display_prefix(const char *token, char out[TOKEN_DISPLAY_PREFIX_LEN + 1])
{
    size_t n = strnlen(token, TOKEN_DISPLAY_PREFIX_LEN);
    memcpy(out, token, n);
    out[n] = '\0';
}

void token_last_four(const char *token, char out[5])
{
    size_t len = strlen(token), n = len >= 4 ? 4 : len;
    memcpy(out, token + len - n, n);
    out[n] = '\0';
}

void token_masked(const char *token, char *out, size_t outlen)
{
    char prefix[TOKEN_DISPLAY_PREFIX_LEN + 1], last[5];
    token_display_prefix(token, prefix);
    token_last_four(token, last);
    snprintf(out, outlen, "%s\u2026%s", prefix, last);
}

bool token_equal_ct(const char *a, const char *b)
{
    size_t len = strlen(a);
    if (len != strlen(b))
        return false;
    return CRYPTO_memcmp(a, b, len) == 0;
}
