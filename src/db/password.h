/*
 * password.h - password hashing with scrypt (libscrypt), in libscrypt's MCF
 * text form ("$s1$...") as stored in users.password_hash.
 *
 * Slow on purpose (about 16 MiB and tens of milliseconds per call): used by
 * ensignctl directly and by ensignd only through password_pool.h, on a
 * helper thread, never on a worker's event loop.
 */
#ifndef ENSIGN_PASSWORD_H
#define ENSIGN_PASSWORD_H

#include <stdbool.h>
#include <stddef.h>

#define PASSWORD_HASH_MAX 128 /* MCF string plus NUL */
#define PASSWORD_MIN_LEN 8
#define PASSWORD_MAX_LEN 1024 /* characters (the API's rule); ensignctl counts bytes */
#define PASSWORD_MAX_BYTES (4 * PASSWORD_MAX_LEN) /* UTF-8: four bytes a character at most */

/* A valid hash of a password no one has (same parameters as password_hash):
 * an unknown email is checked against it, so it costs the same scrypt. */
#define PASSWORD_DUMMY_HASH                                                                        \
    "$s1$0e0801$UxA1J3hGM+NsxOfpmTH58w==$KnIYQrXkIlTWT+mnRFuH1Wy5XrDDU9E3UrfjMwSiPfyszksAGhwx9ruV" \
    "1wBilHuCbFlDPL5PARjbvaQX3JXLeQ=="

/* Writes the MCF hash of password (fresh random salt) into out. 0 or -1. */
int password_hash(const char *password, char out[PASSWORD_HASH_MAX]);

/* True when password matches the stored MCF hash; false for a malformed
 * hash. The comparison is constant time (libscrypt_check). */
bool password_verify(const char *stored_hash, const char *password);

#endif
