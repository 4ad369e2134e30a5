/*
 * password.h - password hashing with scrypt (libscrypt), in libscrypt's MCF
 * text form ("$s1$...") as stored in users.password_hash.
 *
 * Slow on purpose (about 16 MiB and tens of milliseconds per call): used by
 * ensignctl and the session login route only, never on the evaluation path.
 */
#ifndef ENSIGN_PASSWORD_H
#define ENSIGN_PASSWORD_H

#include <stdbool.h>
#include <stddef.h>

#define PASSWORD_HASH_MAX 128 /* MCF string plus NUL */
#define PASSWORD_MIN_LEN 8
#define PASSWORD_MAX_LEN 1024

/* Writes the MCF hash of password (fresh random salt) into out. 0 or -1. */
int password_hash(const char *password, char out[PASSWORD_HASH_MAX]);

/* True when password matches the stored MCF hash; false for a malformed
 * hash. The comparison is constant time (libscrypt_check). */
bool password_verify(const char *stored_hash, const char *password);

#endif
