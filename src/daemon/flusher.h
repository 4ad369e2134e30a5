/*
 * flusher.h - the process that moves usage counters into PostgreSQL.
 *
 * Wakes every usage_flush_interval_ms and on shutdown, drains the usage
 * table (usage.h) and adds the counts to usage_counters in one upsert per
 * flush; counts it cannot write (database down) go back into the table for
 * the next flush. The master stops it only after every worker has exited,
 * so its final flush carries the last evaluations. When the master itself
 * dies (SIGKILL), every child is told to stop at once (PR_SET_PDEATHSIG):
 * the flusher then waits for the workers to exit (each hands in its last
 * batch on the way out) before its final flush, watching workers_fd, the
 * read end of a pipe whose write ends only the workers still hold (EOF:
 * none is left), for at most shutdown_timeout_ms plus a second. At most
 * one interval of counts can be lost when the flusher itself is killed.
 */
#ifndef ENSIGN_FLUSHER_H
#define ENSIGN_FLUSHER_H

#include <sys/types.h>

struct config;
struct shm_region;

/* master: the master's pid (the flusher's parent while it lives). */
int flusher_main(const struct config *cfg, struct shm_region *shm, int workers_fd, pid_t master);

#endif
