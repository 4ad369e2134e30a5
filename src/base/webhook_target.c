/*
 * webhook_target.c - see webhook_target.h.
 *
 * Refused address classes (doc/choices.md "Webhooks"): IPv4 0/8
 * (unspecified, "this network"), 127/8 loopback, 10/8, 172.16/12 and
 * 192.168/16 private, 169.254/16 link-local, 100.64/10 CGNAT, 224/4
 * multicast and 240/4 reserved (with the broadcast address); IPv6 ::
 * unspecified, ::1 loopback, fe80::/10 link-local, fc00::/7 unique-local,
 * ff00::/8 multicast, and the IPv4 forms embedded in IPv6 (::ffff:a.b.c.d
 * mapped, ::a.b.c.d compatible, 64:ff9b::a.b.c.d NAT64), judged by their
 * IPv4 address.
 */
#include "base/webhook_target.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct v4_range {
    uint32_t net;
    unsigned bits;
    const char *name;
};

static const struct v4_range v4_refused[] = {
    {0x00000000u, 8, "unspecified"}, {0x7f000000u, 8, "loopback"},  {0x0a000000u, 8, "private"},
    {0xac100000u, 12, "private"},    {0xc0a80000u, 16, "private"},  {0xa9fe0000u, 16, "link-local"},
    {0x64400000u, 10, "CGNAT"},      {0xe0000000u, 4, "multicast"}, {0xf0000000u, 4, "reserved"},
};

static const char *v4_class(uint32_t addr)
{
    for (size_t i = 0; i < sizeof v4_refused / sizeof v4_refused[0]; i++) {
        uint32_t mask = 0xffffffffu << (32 - v4_refused[i].bits);
        if ((addr & mask) == v4_refused[i].net)
            return v4_refused[i].name;
    }
    return NULL;
}

static uint32_t v4_at(const unsigned char *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | (uint32_t)b[3];
}

static bool all_zero(const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != 0)
            return false;
    return true;
}

static const char *v6_class(const unsigned char *b)
{
    static const unsigned char nat64[12] = {0, 0x64, 0xff, 0x9b};
    if (all_zero(b, 16))
        return "unspecified";
    if (all_zero(b, 15) && b[15] == 1)
        return "loopback";
    if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
        return "link-local";
    if ((b[0] & 0xfe) == 0xfc)
        return "unique-local";
    if (b[0] == 0xff)
        return "multicast";
    bool mapped = all_zero(b, 10) && b[10] == 0xff && b[11] == 0xff;
    bool compatible = all_zero(b, 12);
    if (mapped || compatible || memcmp(b, nat64, sizeof nat64) == 0)
        return v4_class(v4_at(b + 12));
    return NULL;
}

const char *webhook_address_class(const struct sockaddr *sa, socklen_t len)
{
    if (sa == NULL)
        return "unknown";
    if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        return v4_class(ntohl(in->sin_addr.s_addr));
    }
    if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        return v6_class(in6->sin6_addr.s6_addr);
    }
    return "unknown";
}

const char *webhook_literal_class(const char *text, bool *literal)
{
    struct in_addr a4;
    struct in6_addr a6;
    *literal = true;
    if (inet_pton(AF_INET, text, &a4) == 1)
        return v4_class(ntohl(a4.s_addr));
    if (inet_pton(AF_INET6, text, &a6) == 1)
        return v6_class(a6.s6_addr);
    *literal = false;
    return NULL;
}

/* ---- URLs ---- */

static bool name_char(char c)
{
    return isalnum((unsigned char)c) || c == '-' || c == '.';
}

/* Copies the bracketed IPv6 literal at p (past '['); returns the end or NULL. */
static const char *parse_v6_host(const char *p, struct webhook_url *out)
{
    const char *close = strchr(p, ']');
    if (close == NULL || close == p || (size_t)(close - p) > WEBHOOK_HOST_MAX)
        return NULL;
    memcpy(out->host, p, (size_t)(close - p));
    out->host[close - p] = '\0';
    struct in6_addr a6;
    if (inet_pton(AF_INET6, out->host, &a6) != 1)
        return NULL;
    return close + 1;
}

static const char *parse_name_host(const char *p, struct webhook_url *out)
{
    size_t n = 0;
    while (name_char(p[n]))
        n++;
    if (n == 0 || n > WEBHOOK_HOST_MAX || p[0] == '.' || p[0] == '-')
        return NULL;
    for (size_t i = 0; i < n; i++)
        out->host[i] = (char)tolower((unsigned char)p[i]);
    out->host[n] = '\0';
    if (strstr(out->host, "..") != NULL)
        return NULL;
    return p + n;
}

static const char *parse_port(const char *p, unsigned *port)
{
    if (*p != ':')
        return p;
    p++;
    if (!isdigit((unsigned char)*p))
        return NULL;
    unsigned long value = 0;
    while (isdigit((unsigned char)*p) && value <= 65535)
        value = value * 10 + (unsigned long)(*p++ - '0');
    if (value == 0 || value > 65535)
        return NULL;
    *port = (unsigned)value;
    return p;
}

static bool rest_ok(const char *p)
{
    if (*p != '\0' && *p != '/' && *p != '?')
        return false;
    for (; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f || *p == '#')
            return false;
    return true;
}

const char *webhook_url_parse(const char *url, struct webhook_url *out)
{
    memset(out, 0, sizeof *out);
    if (url == NULL || strlen(url) > WEBHOOK_URL_MAX)
        return "must be at most 2048 characters";
    const char *p;
    if (strncasecmp(url, "https://", 8) == 0) {
        out->https = true;
        p = url + 8;
    } else if (strncasecmp(url, "http://", 7) == 0) {
        p = url + 7;
    } else {
        return "must start with https:// or http://";
    }
    size_t authority = strcspn(p, "/?#");
    if (memchr(p, '@', authority) != NULL)
        return "must not carry user information";
    p = *p == '[' ? parse_v6_host(p + 1, out) : parse_name_host(p, out);
    if (p == NULL)
        return "must name a host";
    out->port = out->https ? 443 : 80;
    p = parse_port(p, &out->port);
    if (p == NULL)
        return "has an invalid port";
    if (!rest_ok(p))
        return "must be a plain URL (no fragment, spaces or control characters)";
    return NULL;
}
