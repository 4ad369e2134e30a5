/*
 * webhook_signature.c - see webhook_signature.h.
 */
#include "base/webhook_signature.h"

#include <openssl/evp.h>
#include <openssl/params.h>
#include <stdio.h>
#include <string.h>

#include "base/hex.h"

int webhook_signature(const char *secret, long long t, const char *body, size_t len,
                      char out[WEBHOOK_SIGNATURE_MAX])
{
    char prefix[32];
    int n = snprintf(prefix, sizeof prefix, "%lld.", t);
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    /* OpenSSL's HMAC (EVP_MAC) over the prefix then the body, without a copy. */
    EVP_MAC *hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_MAC_CTX *mctx = hmac != NULL ? EVP_MAC_CTX_new(hmac) : NULL;
    int rc = -1;
    if (mctx != NULL) {
        char digest[] = "SHA256";
        OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", digest, 0),
                               OSSL_PARAM_construct_end()};
        size_t got = 0;
        if (EVP_MAC_init(mctx, (const unsigned char *)secret, strlen(secret), params) == 1 &&
            EVP_MAC_update(mctx, (const unsigned char *)prefix, (size_t)n) == 1 &&
            EVP_MAC_update(mctx, (const unsigned char *)body, len) == 1 &&
            EVP_MAC_final(mctx, mac, &got, sizeof mac) == 1 && got == 32) {
            mac_len = (unsigned int)got;
            rc = 0;
        }
    }
    EVP_MAC_CTX_free(mctx);
    EVP_MAC_free(hmac);
    if (rc != 0)
        return -1;
    char hex[65];
    hex_encode(mac, mac_len, hex);
    snprintf(out, WEBHOOK_SIGNATURE_MAX, "t=%lld,v1=%s", t, hex);
    return 0;
}
