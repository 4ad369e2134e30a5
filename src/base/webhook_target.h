/*
 * webhook_target.h - where a webhook may send: the URL form and the
 * classes of addresses that are refused unless webhook_allow_private is
 * on (ensign.conf(5)).
 *
 * Owns two pure functions: the parsing of a webhook URL (scheme http or
 * https, a host, an optional port, the rest) and the classifier of socket
 * addresses. The same classifier runs at creation (worker: on the literal
 * address, or on every address the name resolves to) and at every
 * delivery (deliverer: on the address libcurl is about to connect to,
 * after DNS), so a name that later resolves elsewhere (DNS rebinding) is
 * still refused. No I/O, no database: unit-tested in
 * tests/unit/test_webhook_target.c.
 */
#ifndef ENSIGN_WEBHOOK_TARGET_H
#define ENSIGN_WEBHOOK_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#define WEBHOOK_URL_MAX 2048 /* characters of a webhook URL */
#define WEBHOOK_HOST_MAX 254 /* a DNS name, or an address literal without brackets */

struct webhook_url {
    bool https;
    char host[WEBHOOK_HOST_MAX + 1]; /* lowercase; an IPv6 literal without its brackets */
    unsigned port;                   /* the URL's, else 443 or 80 */
};

/*
 * Parses url: "http://" or "https://" (case-insensitive), a host (a name
 * of letters, digits, '-' and '.', an IPv4 literal, or a bracketed IPv6
 * literal), an optional ":port" (1..65535), then nothing or a path, query
 * starting with '/' or '?'. No user information, no fragment, no spaces or
 * control characters, at most WEBHOOK_URL_MAX characters. Returns NULL and
 * fills out, or a message saying what is wrong.
 */
const char *webhook_url_parse(const char *url, struct webhook_url *out);

/* Why an address is refused: the class name, or NULL when it is public. */
const char *webhook_address_class(const struct sockaddr *sa, socklen_t len);

/* The same for an address literal (IPv4, or IPv6 without brackets); sets
 * *literal false (and returns NULL) when text is not an address. */
const char *webhook_literal_class(const char *text, bool *literal);

#endif
