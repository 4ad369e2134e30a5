/*
 * auditverify.c - recomputing an organization's audit chain (see
 * auditverify.h). SQL is constant with $n parameters.
 */
#include "ctl/auditverify.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/auditchain.h"

/* $1 slug: the organization and its chain head (0 and the genesis hash
 * when it has no event yet). */
static const char ORG_SQL[] =
    "SELECT o.id, COALESCE(h.seq, 0), COALESCE(h.hash, repeat('0', 64))"
    "  FROM orgs o LEFT JOIN audit_chain_heads h ON h.org_id = o.id WHERE o.slug = $1";

/* $1 org id: every event in chain order, through a cursor read in batches.
 * Columns in the order of struct auditchain_event, then prev_hash and hash. */
static const char EVENTS_CURSOR_SQL[] =
    "DECLARE audit_walk NO SCROLL CURSOR FOR"
    " SELECT org_id::text, seq::text, id::text, ensign_audit_time(created_at),"
    "        actor_id::text, actor_token_id::text, actor_name, action, summary, host(ip),"
    "        location, prev_hash, hash"
    "   FROM audit_events e WHERE e.org_id = $1::uuid"
    "  ORDER BY e.seq"; /* e.seq: the output column seq is text */

#define STRINGIFY(x) #x
#define FETCH_SQL(n) "FETCH FORWARD " STRINGIFY(n) " FROM audit_walk"

enum { COL_SEQ = 1, COL_ID = 2, COL_PREV_HASH = 11, COL_HASH = 12 };

/* Where the walk is: the last event checked and its (recomputed) hash. */
struct walk {
    long long seq;
    char hash[AUDITCHAIN_HASH_HEX_LEN + 1];
};

static const char *value_or_null(const PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) ? NULL : PQgetvalue(res, row, col);
}

static struct auditchain_event event_of(const PGresult *res, int row)
{
    const char *v[11];
    for (int col = 0; col < 11; col++)
        v[col] = value_or_null(res, row, col);
    return (struct auditchain_event){v[0], v[1], v[2], v[3], v[4], v[5],
                                     v[6], v[7], v[8], v[9], v[10]};
}

/* Checks one event against the walk; false with report filled when broken. */
static bool check_event(const PGresult *res, int row, struct walk *w, char *report,
                        size_t report_len)
{
    long long seq = strtoll(PQgetvalue(res, row, COL_SEQ), NULL, 10);
    const char *id = PQgetvalue(res, row, COL_ID);
    if (seq != w->seq + 1) {
        snprintf(report, report_len,
                 "broken: event %lld is missing (the next event is %lld, id %s)", w->seq + 1, seq,
                 id);
        return false;
    }
    if (strcmp(PQgetvalue(res, row, COL_PREV_HASH), w->hash) != 0) {
        snprintf(report, report_len,
                 "broken: event %lld (id %s) does not link to event %lld: prev_hash %s, "
                 "expected %s",
                 seq, id, w->seq, PQgetvalue(res, row, COL_PREV_HASH), w->hash);
        return false;
    }
    struct auditchain_event e = event_of(res, row);
    char hash[AUDITCHAIN_HASH_HEX_LEN + 1];
    if (auditchain_link(w->hash, &e, hash) != 0) {
        snprintf(report, report_len, "broken: out of memory at event %lld", seq);
        return false;
    }
    if (strcmp(hash, PQgetvalue(res, row, COL_HASH)) != 0) {
        snprintf(report, report_len,
                 "broken: event %lld (id %s, %s) was altered: stored hash %s, computed %s", seq, id,
                 e.action ? e.action : "?", PQgetvalue(res, row, COL_HASH), hash);
        return false;
    }
    w->seq = seq;
    memcpy(w->hash, hash, sizeof w->hash);
    return true;
}

/* Walks every event; returns OK, BROKEN (report filled) or ERROR. */
static enum auditverify_result walk_events(PGconn *conn, const char *org_id, struct walk *w,
                                           char *report, size_t report_len,
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
        for (int row = 0; row < rows; row++) {
            if (!check_event(res, row, w, report, report_len)) {
                PQclear(res);
                return AUDITVERIFY_BROKEN;
            }
        }
        PQclear(res);
        if (rows < AUDITVERIFY_BATCH)
            return AUDITVERIFY_OK;
    }
}

/* The head must name the last event. */
static enum auditverify_result check_head(const struct walk *w, long long head_seq,
                                          const char *head_hash, char *report, size_t report_len)
{
    if (head_seq != w->seq) {
        snprintf(report, report_len,
                 "broken: the chain head is at event %lld but the last event is %lld "
                 "(events were deleted at the end)",
                 head_seq, w->seq);
        return AUDITVERIFY_BROKEN;
    }
    if (strcmp(head_hash, w->hash) != 0) {
        snprintf(report, report_len,
                 "broken: the chain head's hash %s is not the last event's hash %s", head_hash,
                 w->hash);
        return AUDITVERIFY_BROKEN;
    }
    snprintf(report, report_len, "OK: %lld events, head %s", w->seq, w->hash);
    return AUDITVERIFY_OK;
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
    struct walk w = {.seq = 0};
    memcpy(w.hash, auditchain_genesis, sizeof w.hash);
    enum auditverify_result result =
        walk_events(conn, PQgetvalue(org, 0, 0), &w, report, report_len, error);
    if (result == AUDITVERIFY_OK)
        result = check_head(&w, strtoll(PQgetvalue(org, 0, 1), NULL, 10), PQgetvalue(org, 0, 2),
                            report, report_len);
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
