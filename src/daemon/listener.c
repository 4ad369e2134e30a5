/*
 * listener.c - binding the listening sockets (see listener.h).
 *
 * "*" binds the IPv6 wildcard with IPV6_V6ONLY off (both families), or
 * the IPv4 wildcard where IPv6 is unavailable. Because SO_REUSEPORT would
 * let a second ensignd join our port silently, the master first probes the
 * address with a plain socket: "port in use" is a startup error.
 *
 * Every socket has TCP_NODELAY, which the connections accepted on it
 * inherit: an answer larger than one write of libevent's (16 KB by
 * default; query_method.c raises it) leaves in several segments, and with
 * Nagle's algorithm the last one waited for the client's delayed ACK,
 * 40 ms per large answer on a keep-alive connection. Every answer is
 * written whole by one writev, so no small segments come of it.
 */
#include "daemon/listener.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/config.h"

#define LISTEN_BACKLOG 511

/* label names the address in messages ("listen 127.0.0.1:8080"). */
static int open_address(const char *label, const char *host, int port_number, bool reuseport,
                        char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    char port[8];
    snprintf(port, sizeof port, "%d", port_number);
    bool wildcard = host == NULL || host[0] == '\0';
    hints.ai_family = wildcard ? AF_INET6 : AF_UNSPEC;
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(wildcard ? NULL : host, port, &hints, &res);
    if (rc != 0 && wildcard) {
        hints.ai_family = AF_INET;
        rc = getaddrinfo(NULL, port, &hints, &res);
    }
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s", label, gai_strerror(rc));
        return -1;
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1, zero = 0;
    if (fd >= 0) {
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (reuseport)
            setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
        /* inherited by every accepted connection (Linux copies the
         * listener's TCP options): see the header */
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (res->ai_family == AF_INET6 && wildcard)
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    }
    if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, LISTEN_BACKLOG) != 0) {
        snprintf(err, errlen, "%s: %s", label, strerror(errno));
        if (fd >= 0)
            close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

static int open_socket(const struct config *cfg, bool reuseport, char *err, size_t errlen)
{
    char label[300];
    snprintf(label, sizeof label, "listen %s", cfg->listen);
    return open_address(label, cfg->listen_host, cfg->listen_port, reuseport, err, errlen);
}

int listener_open_metrics(const struct config *cfg, char *err, size_t errlen)
{
    char host[256], label[300];
    int port;
    if (cfg->metrics_listen == NULL || cfg->metrics_listen[0] == '\0')
        return -1;
    snprintf(label, sizeof label, "metrics_listen %s", cfg->metrics_listen);
    if (config_parse_address(cfg->metrics_listen, host, sizeof host, &port) != 0) {
        snprintf(err, errlen, "%s: not an address", label);
        return -1;
    }
    return open_address(label, host, port, false, err, errlen);
}

int listener_check_free(const struct config *cfg, char *err, size_t errlen)
{
    int fd = open_socket(cfg, false, err, errlen);
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

int listener_grow(struct listener_set *set, const struct config *cfg, size_t want, char *err,
                  size_t errlen)
{
    if (want > LISTENER_MAX)
        want = LISTENER_MAX;
    while (set->count < want) {
        int fd = open_socket(cfg, true, err, errlen);
        if (fd < 0)
            return -1;
        set->fds[set->count++] = fd;
    }
    return 0;
}

void listener_close_all(struct listener_set *set)
{
    for (size_t i = 0; i < set->count; i++)
        close(set->fds[i]);
    set->count = 0;
}
