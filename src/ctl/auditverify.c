/*
 * auditverify.c - recomputing an organization's audit chain (see
 * auditverify.h): reads it through a cursor; the link checks are
 * db/auditwalk.h's, shared with GET /orgs/{slug}/audit/verify. SQL is
 * constant with $n parameters.
 */
#include "ctl/auditverify.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/auditwalk.h"

/* $1 slug: the organization and its chain head (0 and the genesis hash
 * when it has no event yet). */
static const char ORG_SQL[] =
    "SELECT o.id, COALESCE(h.seq, 0), COALESCE(h.hash, repeat('0', 64))"
    "  FROM orgs o LEFT JOIN audit_chain_heads h ON h.org_id = o.id WHERE o.slug = $1";

/* $1 org id: every event in chain order, through a cursor read in batches. */
static const char EVENTS_CURSOR_SQL[] =
    "DECLARE audit_walk NO SCROLL CURSOR FOR"
    " SELECT " AUDITWALK_COLUMNS "   FROM audit_events e WHERE e.org_id = $1::uuid"
    "  ORDER BY e.seq";

#define STRINGIFY(x) #x
#define FETCH_SQL(n) "FETCH FORWARD " STRINGIFY(n) " FROM audit_walk"

/* Walks every event; returns OK, BROKEN (w->report) or ERROR. */
static enum auditverify_result walk_events(PGconn *conn, const char *org_id, struct auditwalk *w,
                                           struct dbsync_error *error)
{
    const char *params[] = {org_id};
    if (dbsync_command(conn, EVENTS_CURSOR_SQL, 1, params, error) != 0)
        return AUDITVERIFY_ERROR;
    for (;;) {
        PGresult *res = dbsync_exec(conn, FETCH_SQL(AUDITVERIFY_BATCH), 0, NULL, error);
        if (res == NULL)
            return AUDITVERIFY_ERROR;
        int rows = PQntuples(res);
        bool ok = auditwalk_rows(w, res);
        PQclear(res);
        if (!ok)
            return AUDITVERIFY_BROKEN;
        if (rows < AUDITVERIFY_BATCH)
            return AUDITVERIFY_OK;
    }
}

static enum auditverify_result verify_in_snapshot(PGconn *conn, const char *org_slug, char *report,
                                                  size_t report_len, struct dbsync_error *error)
{
    const char *params[] = {org_slug};
    PGresult *org = dbsync_exec(conn, ORG_SQL, 1, params, error);
    if (org == NULL)
        return AUDITVERIFY_ERROR;
    if (PQntuples(org) != 1) {
        PQclear(org);
        return AUDITVERIFY_NO_ORG;
    }
    struct auditwalk w;
    auditwalk_init(&w);
    enum auditverify_result result = walk_events(conn, PQgetvalue(org, 0, 0), &w, error);
    if (result == AUDITVERIFY_OK &&
        !auditwalk_head(&w, strtoll(PQgetvalue(org, 0, 1), NULL, 10), PQgetvalue(org, 0, 2)))
        result = AUDITVERIFY_BROKEN;
    if (result != AUDITVERIFY_ERROR)
        snprintf(report, report_len, "%s", w.report);
    PQclear(org);
    return result;
}

enum auditverify_result auditverify_run(PGconn *conn, const char *org_slug, char *report,
                                        size_t report_len, struct dbsync_error *error)
{
    report[0] = '\0';
    /* The chain hashes UTF-8 text: read the columns as UTF-8. */
    if (PQsetClientEncoding(conn, "UTF8") != 0) {
        dbsync_error_from_result(error, NULL, conn);
        return AUDITVERIFY_ERROR;
    }
    if (dbsync_command(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY", 0, NULL, error) !=
        0)
        return AUDITVERIFY_ERROR;
    enum auditverify_result result = verify_in_snapshot(conn, org_slug, report, report_len, error);
    dbsync_rollback(conn);
    return result;
}
