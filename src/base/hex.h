/*
 * hex.h - hexadecimal digits: the one decoder and encoder of the tree.
 *
 * Used for percent-decoding (router), SHA-256 digests in hex (tokens, SDK
 * keys in the snapshot) and uuids (usage counters). Pure functions.
 */
#ifndef ENSIGN_HEX_H
#define ENSIGN_HEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The value of one hex digit (either case), or -1. */
int hex_value(char c);

/* Decodes text, exactly 2 * nbytes hex digits then NUL, into out. */
bool hex_decode(const char *text, uint8_t *out, size_t nbytes);

/* Writes 2 * nbytes lowercase digits and a NUL to out. */
void hex_encode(const uint8_t *bytes, size_t nbytes, char *out);

/* Writes value in lowercase hex, at least min_digits digits (zero-padded,
 * as printf's %0*x), without a NUL; returns the digits written (1 to 16). */
size_t hex_u64(uint64_t value, int min_digits, char *out);

#endif
