/*
 * password.c - scrypt password hashes through libscrypt.
 *
 * Hashes use N = 2^14, r = 8, p = 1 (16 MiB, the scrypt paper's interactive
 * setting) with a 16-byte random salt, stored in libscrypt's MCF form; the
 * parameters travel inside the hash, so they can be raised later without
 * breaking old hashes. Plaintext passwords are never kept or logged.
 * Called by ensignctl (user create) and, on the helper threads of
 * password_pool.c, by the session routes. Thread-safe (no shared state).
 */
#include "db/password.h"

#include <libscrypt.h>
#include <string.h>

enum { PASSWORD_SCRYPT_N = 16384, PASSWORD_SCRYPT_R = 8, PASSWORD_SCRYPT_P = 1 };

int password_hash(const char *password, char out[PASSWORD_HASH_MAX])
{
    size_t len = strlen(password);
    if (len == 0 || len > PASSWORD_MAX_BYTES)
        return -1;
    char mcf[SCRYPT_MCF_LEN];
    if (libscrypt_hash(mcf, password, PASSWORD_SCRYPT_N, PASSWORD_SCRYPT_R, PASSWORD_SCRYPT_P) <= 0)
        return -1;
    mcf[SCRYPT_MCF_LEN - 1] = '\0';
    if (strlen(mcf) >= PASSWORD_HASH_MAX)
        return -1;
    memcpy(out, mcf, strlen(mcf) + 1);
    return 0;
}

bool password_verify(const char *stored_hash, const char *password)
{
    /* libscrypt_check tokenizes its argument in place: give it a copy. */
    char mcf[SCRYPT_MCF_LEN];
    size_t len = strlen(stored_hash);
    if (len >= sizeof mcf || strncmp(stored_hash, SCRYPT_MCF_ID "$", 4) != 0)
        return false;
    if (strlen(password) > PASSWORD_MAX_BYTES)
        return false;
    memcpy(mcf, stored_hash, len + 1);
    return libscrypt_check(mcf, password) > 0;
}
