/*
 * scheduler.h - the process that applies scheduled changes (ensignd:
 * scheduler), one per node, started and restarted by the master like the
 * refresher and the flusher. Every node runs one; the claim
 * (schedule_apply.h) makes each schedule applied exactly once whichever
 * node gets there first. It never serves a request.
 */
#ifndef ENSIGN_SCHEDULER_H
#define ENSIGN_SCHEDULER_H

struct config;
struct shm_region;

/* Longest sleep between two looks at the table (a lost notification). */
#define SCHEDULER_POLL_BOUND_MS 5000

int scheduler_main(const struct config *cfg, struct shm_region *shm);

#endif
