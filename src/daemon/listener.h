/*
 * listener.h - the listening sockets the master binds for its workers.
 *
 * One SO_REUSEPORT socket per worker slot, all on the configured address.
 * Every worker polls all of them and the accept balance (accept_balance.h)
 * decides which worker takes a queued connection: the kernel's hash alone
 * spread few keep-alive connections unevenly. The master holds every
 * socket open for its lifetime: replacing a worker never closes a socket,
 * so no queued connection is refused.
 */
#ifndef ENSIGN_LISTENER_H
#define ENSIGN_LISTENER_H

#include <stddef.h>

struct config;

#define LISTENER_MAX 256

struct listener_set {
    int fds[LISTENER_MAX];
    size_t count;
};

/* Fails with a message when the address is taken by anyone else. */
int listener_check_free(const struct config *cfg, char *err, size_t errlen);

/* Binds sockets until set->count == want (keeps existing ones). */
int listener_grow(struct listener_set *set, const struct config *cfg, size_t want, char *err,
                  size_t errlen);

void listener_close_all(struct listener_set *set);

/* The one socket of metrics_listen (no SO_REUSEPORT: a second ensignd
 * cannot join it), shared by every worker; -1 with a message in err. */
int listener_open_metrics(const struct config *cfg, char *err, size_t errlen);

#endif
