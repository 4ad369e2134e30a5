/*
 * audit_verify.c - GET /orgs/{slug}/audit/verify (see audit_verify.h).
 *
 * The walk runs on the worker's connection in keyset pages of
 * AUDIT_VERIFY_PAGE events (seq > the last checked, in order), one query
 * in flight at a time, so a long log neither holds a transaction open nor
 * fills memory, and evaluations interleave between pages. The first
 * statement reads the chain head (audit_chain_heads) and the highest seq
 * in one snapshot: the walk checks the events up to that head (events
 * added while it runs are the next verification's), and a head that does
 * not name the newest event is broken at once.
 *
 * The answer: ok, events (how many links were checked and held), brokenAt
 * (the id of the first event whose link does not hold; null when the
 * chain holds, or when only the head is wrong: events deleted at the end)
 * and detail (the line ensignctl prints). A request's state is one heap
 * block, freed when it answers.
 */
#include "accounts/audit_verify.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/auditwalk.h"
#include "http/http.h"
#include "mgmt/mgmt.h"

#define AUDIT_VERIFY_PAGE 1000
#define STRINGIFY(x) #x
#define TEXT_OF(x) STRINGIFY(x)

/* $1 org id: the head's seq and hash (0 and the genesis hash when the
 * organization has no event) and the newest event's seq. */
static const char HEAD_SQL[] =
    "SELECT COALESCE(h.seq, 0)::text, COALESCE(h.hash, repeat('0', 64)),"
    "       COALESCE((SELECT max(e.seq) FROM audit_events e WHERE e.org_id = $1::uuid), 0)::text"
    "  FROM (SELECT 1) one LEFT JOIN audit_chain_heads h ON h.org_id = $1::uuid";

/* $1 org id, $2 the last seq checked, $3 the head's seq. */
static const char PAGE_SQL[] = "SELECT " AUDITWALK_COLUMNS "  FROM audit_events e"
                               " WHERE e.org_id = $1::uuid AND e.seq > $2::bigint"
                               "   AND e.seq <= $3::bigint"
                               " ORDER BY e.seq LIMIT " TEXT_OF(AUDIT_VERIFY_PAGE);

struct verify_run {
    struct http_request *r;
    char org_id[AUTH_UUID_LEN + 1];
    long long head_seq;
    char head_hash[AUDITCHAIN_HASH_HEX_LEN + 1];
    struct auditwalk walk;
};

static void answer(struct verify_run *v)
{
    struct json_object *body = json_object_new_object();
    json_object_object_add(body, "ok", json_object_new_boolean(!v->walk.broken));
    json_object_object_add(body, "events", json_object_new_int64(v->walk.seq));
    json_object_object_add(body, "brokenAt",
                           v->walk.broken_at[0] != '\0' ? json_object_new_string(v->walk.broken_at)
                                                        : NULL);
    json_object_object_add(body, "detail", json_object_new_string(v->walk.report));
    http_send_json(v->r, 200, body); /* takes body */
    free(v);
}

static void fail(struct verify_run *v, const PGresult *res, const char *error)
{
    mgmt_send_failure(v->r, res, error);
    free(v);
}

static void on_page(PGresult *res, const char *error, void *arg);

static void next_page(struct verify_run *v)
{
    char after[24], head[24];
    snprintf(after, sizeof after, "%lld", v->walk.seq);
    snprintf(head, sizeof head, "%lld", v->head_seq);
    const char *params[] = {v->org_id, after, head};
    if (mgmt_query(v->r, PAGE_SQL, 3, params, on_page, v) != 0)
        free(v); /* answered 503 */
}

static void on_page(PGresult *res, const char *error, void *arg)
{
    struct verify_run *v = arg;
    if (!db_result_ok(res)) {
        fail(v, res, error);
        return;
    }
    if (!auditwalk_rows(&v->walk, res)) {
        answer(v);
        return;
    }
    if (PQntuples(res) == AUDIT_VERIFY_PAGE && v->walk.seq < v->head_seq) {
        next_page(v);
        return;
    }
    auditwalk_head(&v->walk, v->head_seq, v->head_hash);
    answer(v);
}

static void on_head(PGresult *res, const char *error, void *arg)
{
    struct verify_run *v = arg;
    if (!db_result_ok(res) || PQntuples(res) != 1) {
        fail(v, res, error);
        return;
    }
    v->head_seq = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    snprintf(v->head_hash, sizeof v->head_hash, "%s", PQgetvalue(res, 0, 1));
    long long newest = strtoll(PQgetvalue(res, 0, 2), NULL, 10);
    if (newest > v->head_seq) {
        v->walk.broken = true;
        snprintf(v->walk.report, sizeof v->walk.report,
                 "broken: the chain head is at event %lld but the last event is %lld", v->head_seq,
                 newest);
        answer(v);
        return;
    }
    next_page(v);
}

void audit_verify(struct http_request *r, const struct mgmt_ctx *ctx)
{
    struct verify_run *v = calloc(1, sizeof *v);
    if (v == NULL) {
        http_send_error(r, 500, "out of memory");
        return;
    }
    v->r = r;
    snprintf(v->org_id, sizeof v->org_id, "%s", ctx->org_id);
    auditwalk_init(&v->walk);
    const char *params[] = {v->org_id};
    if (mgmt_query(r, HEAD_SQL, 1, params, on_head, v) != 0)
        free(v);
}

const char audit_verify_schema[] =
    "{\"type\":\"object\",\"required\":[\"ok\",\"events\",\"brokenAt\"],\"properties\":{"
    "\"ok\":{\"type\":\"boolean\"},"
    "\"events\":{\"type\":\"integer\",\"description\":\"Events whose link was checked and "
    "holds\"},"
    "\"brokenAt\":{\"type\":[\"string\",\"null\"],\"format\":\"uuid\",\"description\":\"The "
    "first event whose link does not hold; null when the chain holds or only its head is "
    "wrong\"},"
    "\"detail\":{\"type\":\"string\",\"description\":\"What ensignctl audit verify "
    "prints\"}}}";
