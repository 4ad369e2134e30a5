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
 * What a broken link is, and the checks, are db/auditwalk.h's (shared
 * with the HTTP route). Called by ensignctl.c only.
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
