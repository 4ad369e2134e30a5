/*
 * token.h - secrets: random tokens, their digests and their display forms.
 *
 * Access tokens (svc_oat_), SDK keys (svc_sdk_) and invitation tokens are
 * 256 bits from getrandom(2), base62-encoded after their prefix, and stored
 * only as the lowercase hex SHA-256 of the whole plaintext (libcrypto).
 * Comparisons of digests are constant time. No database access here.
 */
#ifndef ENSIGN_TOKEN_H
#define ENSIGN_TOKEN_H

#include <stdbool.h>
#include <stddef.h>

#define TOKEN_PREFIX_ACCESS "svc_oat_"
#define TOKEN_PREFIX_SDK "svc_sdk_"
#define TOKEN_PREFIX_INVITE "svc_inv_"
#define TOKEN_PREFIX_INTERNAL "svc_int_" /* Ensign-Internal-Key (internal operations) */
#define TOKEN_PREFIX_SESSION "svc_ses_"  /* the ensign_session cookie */
#define TOKEN_RANDOM_BYTES 32
#define TOKEN_BODY_LEN 43 /* base62 digits for 256 bits */
#define TOKEN_MAX_LEN 64  /* prefix + body + NUL fits */
#define TOKEN_DIGEST_HEX_LEN 64
#define TOKEN_DISPLAY_PREFIX_LEN 12 /* "svc_oat_" plus four characters */

/* Writes prefix + 43 base62 characters into out (at least TOKEN_MAX_LEN). */
int token_generate(const char *prefix, char *out, size_t outlen);

/*
 * A new secret as every issuer needs it: the plaintext (shown once), the
 * SHA-256 digest (the only form stored) and the display forms.
 */
struct token_secret {
    char token[TOKEN_MAX_LEN];
    char digest[TOKEN_DIGEST_HEX_LEN + 1];
    char prefix[TOKEN_DISPLAY_PREFIX_LEN + 1];
    char last4[5];
};

/* Mints a secret of prefix (TOKEN_PREFIX_...) into out; 0, or -1 when no
 * randomness is available. The one place a secret is made. */
int token_mint(const char *prefix, struct token_secret *out);

/* Base62 of a big-endian number of len bytes, zero-padded to width digits. */
int token_base62_encode(const unsigned char *bytes, size_t len, char *out, size_t width);

/* Lowercase hex SHA-256 of text; out has room for 65 bytes. */
void token_digest_hex(const char *text, size_t len, char out[TOKEN_DIGEST_HEX_LEN + 1]);

/* True when text has the prefix followed by exactly 43 base62 characters. */
bool token_well_formed(const char *text, const char *prefix);

/* Display forms: first TOKEN_DISPLAY_PREFIX_LEN characters; last four; a
 * masked form "svc_oat_abcd…wxyz". */
void token_display_prefix(const char *token, char out[TOKEN_DISPLAY_PREFIX_LEN + 1]);
void token_last_four(const char *token, char out[5]);
void token_masked(const char *token, char *out, size_t outlen);

/* Constant-time equality of two equal-length strings; false on length mismatch. */
bool token_equal_ct(const char *a, const char *b);

#endif
