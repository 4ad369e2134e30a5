/*
 * accept_balance.h - spreading connections evenly over the workers.
 *
 * Every worker polls every listening socket of the node (the master hands
 * all of them to each worker), and a worker accepts only while it holds no
 * more open connections than the least loaded of its accepting siblings.
 * A connection waiting in any socket's queue is then taken by a worker
 * that is not ahead, whichever socket the kernel's SO_REUSEPORT hash put
 * it in: with keep-alive clients the spread stays within one connection
 * of even, where the hash alone gave one of two workers 60-65% of 16
 * connections.
 *
 * The table lives in the node's shared memory (shm.h): one entry per
 * child slot of the master (ACCEPT_BALANCE_SLOTS, its child table size),
 * each written only by the worker of that slot, holding its open
 * connections, or ACCEPT_BALANCE_ABSENT while it does not accept for a
 * reason of its own (not started, draining, exited, out of descriptors,
 * at max_connections_per_worker). Absent entries never count as "least
 * loaded", so a dead, draining or old-generation worker holds nobody
 * back; the master marks a slot absent when it forks the slot's child and
 * when it reaps it, so a worker that died without a word is forgotten.
 * Entries are a cache line each: a worker rewrites its own on every
 * connection it opens or closes, and siblings only read it.
 *
 * The decision (accept_balance_decide) is pure; entries are read and
 * written with sequentially consistent atomics, and a worker publishes its
 * count before it reads its siblings', so of two workers accepting at once
 * at least one sees the other's new count. Called by intake.c (workers), shm.c (size,
 * init) and master.c (marking slots absent).
 */
#ifndef ENSIGN_ACCEPT_BALANCE_H
#define ENSIGN_ACCEPT_BALANCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ACCEPT_BALANCE_SLOTS 256
#define ACCEPT_BALANCE_ABSENT (-1)

struct accept_balance;
struct config;

/*
 * May a worker holding mine open connections accept another, given the
 * published counts of its siblings (ACCEPT_BALANCE_ABSENT for those that
 * do not accept)? Yes when no sibling accepts or mine is at most the
 * smallest sibling count.
 */
bool accept_balance_decide(int32_t mine, const int32_t *siblings, size_t n);

size_t accept_balance_area_size(void);
void accept_balance_area_init(void *area);

/* The shared-memory user's size and init functions (shm.c's table, which
 * also records where the area lives: this layer cannot see shm.h). */
size_t accept_balance_shm_size(const struct config *cfg);
void accept_balance_shm_init(void *area, size_t size, const struct config *cfg);

/* Publishes slot's open connections (or ACCEPT_BALANCE_ABSENT). A slot
 * out of range is ignored. */
void accept_balance_publish(struct accept_balance *t, unsigned slot, int32_t open);

/* accept_balance_decide for slot holding mine, over the table's other
 * entries. True when t is NULL or slot is out of range. */
bool accept_balance_may_accept(struct accept_balance *t, unsigned slot, int32_t mine);

#endif
