/*
 * auditverify.h - `ensignctl audit verify --org SLUG`: recomputes an
 * organization's audit hash chain from the stored columns (auditchain.h)
 * and finds the first broken link.
 *
 * Reads in one REPEATABLE READ, READ ONLY transaction (one snapshot, so
 * writers adding events meanwhile neither block it nor confuse it), in
 * batches of AUDITVERIFY_BATCH events from one cursor, so memory stays
 * bounded.
 *
 * A link is broken when an event's seq is not the next number (an event
 * was deleted), its prev_hash is not the previous event's hash, or its
 * stored hash differs from the recomputed one (a hashed column was
 * edited). The chain head (audit_chain_heads) must match the last event
 * (events deleted at the end). Called by ensignctl.c only.
 */
#ifndef ENSIGN_AUDITVERIFY_H
#define ENSIGN_AUDITVERIFY_H

#include <libpq-fe.h>
#include <stddef.h>

#include "db/dbsync.h"

#define AUDITVERIFY_BATCH 1000

enum auditverify_result {
    AUDITVERIFY_OK,     /* report: "OK: N events, head HASH" */
    AUDITVERIFY_BROKEN, /* report: the first broken link */
    AUDITVERIFY_NO_ORG, /* no organization with that slug */
    AUDITVERIFY_ERROR   /* database error: error filled */
};

enum auditverify_result auditverify_run(PGconn *conn, const char *org_slug, char *report,
                                        size_t report_len, struct dbsync_error *error);

#endif
