/*
 * refresher.h - the process that follows configuration changes.
 *
 * It LISTENs on the channel every configuration write NOTIFYs in the same
 * transaction, polls the generation counter every refresh_interval_ms as
 * well, and publishes the newest generation in shared memory. (The
 * evaluation issue adds building the snapshot file for each generation.)
 * Never exits because the database is down: it reconnects with backoff.
 */
#ifndef ENSIGN_REFRESHER_H
#define ENSIGN_REFRESHER_H

struct config;
struct shm_region;

#define REFRESHER_CHANNEL "ensign_config"

int refresher_main(const struct config *cfg, struct shm_region *shm);

#endif
