/*
 * deliverer.h - the process that sends webhook deliveries (title
 * "ensignd: deliverer"; doc/choices.md "Webhooks").
 *
 * One job: claim due rows of webhook_deliveries (sql/0017_webhooks.sql)
 * with FOR UPDATE SKIP LOCKED under a lease that commits before any HTTP,
 * POST them with libcurl's multi interface driven by a libevent loop, and
 * record each outcome under its claim. Any number of nodes may run one:
 * a row is claimed by one node at a time, and a lease left by a crashed
 * node expires and is claimed again. Supervised by the master like the
 * refresher and the flusher.
 */
#ifndef ENSIGN_DELIVERER_H
#define ENSIGN_DELIVERER_H

struct config;

int deliverer_main(const struct config *cfg);

#endif
