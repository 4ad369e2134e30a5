/*
 * refresher.h - the process that follows configuration changes.
 *
 * It LISTENs on the channel every configuration write NOTIFYs in the same
 * transaction, polls the generation counter every refresh_interval_ms as
 * well, builds <state_dir>/snapshot.bin for each new generation and then
 * publishes that generation in shared memory (workers re-map the file when
 * it moves). At start it publishes the generation of the file already on
 * disk, so evaluation works while the database is down. Never exits
 * because the database is down: it reconnects with backoff.
 */
#ifndef ENSIGN_REFRESHER_H
#define ENSIGN_REFRESHER_H

struct config;
struct shm_region;

#define REFRESHER_CHANNEL "ensign_config"
/* The snapshot file, in state_dir; workers map it read-only. */

int refresher_main(const struct config *cfg, struct shm_region *shm);

#endif
