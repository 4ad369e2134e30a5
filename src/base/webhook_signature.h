/*
 * webhook_signature.h - the Ensign-Signature header of a webhook delivery.
 *
 * "t=UNIX,v1=HEX" where HEX is the lowercase hex HMAC-SHA256, keyed with
 * the webhook's secret (the whole svc_whk_... text), of the decimal t, a
 * ".", and the body's bytes (doc/choices.md "Webhooks"). OpenSSL's HMAC;
 * no I/O. Called by the deliverer (daemon/deliverer.c); unit-tested in
 * tests/unit/test_webhook_target.c.
 */
#ifndef ENSIGN_WEBHOOK_SIGNATURE_H
#define ENSIGN_WEBHOOK_SIGNATURE_H

#include <stddef.h>

#define WEBHOOK_SIGNATURE_MAX 96 /* "t=" 20 digits ",v1=" 64 hex digits, NUL */

/* Writes the header value into out; 0, or -1 when HMAC failed. */
int webhook_signature(const char *secret, long long t, const char *body, size_t len,
                      char out[WEBHOOK_SIGNATURE_MAX]);

#endif
