/*
 * flagctx.h - what a write to one flag must know before it can validate:
 * the flag (id, type, archived), optionally one of its environments, its
 * variant keys (live and retired), and the segments and entity attributes
 * the request refers to. Part of the dispatcher's query (flagctx_dispatch:
 * one round trip for both), before the write statement.
 *
 * Writes validate in two passes: first the request's shape, collecting the
 * segment and entity keys it names (flagctx_wanted, a struct validate_refs
 * that accepts everything); then, with the loaded context, the references
 * (flagctx_refs). That keeps validation in validate.c and the read small:
 * only the named segments and entities are fetched.
 *
 * Called by variants.c, rules.c, environments.c, schedules.c and
 * schedule_apply.c.
 */
#ifndef ENSIGN_FLAGCTX_H
#define ENSIGN_FLAGCTX_H

#include <stdbool.h>
#include <json-c/json.h>

#include "db/auth.h"
#include "mgmt/mgmt.h"
#include "mgmt/validate.h"

struct http_request;

/* The keys a request refers to, collected by the first validation pass. */
struct flagctx_wanted {
    struct json_object *segments; /* array of segment keys; owned */
    struct json_object *entities; /* array of entity keys; owned */
    struct validate_refs refs;    /* collects into the arrays, accepts everything */
};

void flagctx_wanted_init(struct flagctx_wanted *w);
void flagctx_wanted_free(struct flagctx_wanted *w);

struct flagctx {
    char flag_id[AUTH_UUID_LEN + 1];
    char env_id[AUTH_UUID_LEN + 1]; /* "" when no environment was asked for */
    enum validate_flag_type type;
    bool archived;
    long long variant_seq; /* variants the flag has ever had */
    /* {"variants": [keys in order], "retired": [keys], "segments": [existing
     * named keys], "entities": {entity key: [attribute keys]}} */
    struct json_object *data;
    struct validate_refs refs; /* resolves against data */
};

/* What a write runs with a loaded context (variants.c hands it on). */
typedef void (*flagctx_cb)(struct http_request *r, const struct flagctx *fc, void *arg);

/*
 * A route row's load (router.h route_load): mgmt_dispatch_row (mgmt.h)
 * with the context of flag flag_key (and of environment env_key when not
 * NULL) in the same round trip as the row's checks. The row's operation
 * runs only after every check passed, with the context in ctx->row; it
 * calls flagctx_from_row when it is ready for the context's answers.
 */
void flagctx_dispatch(struct http_request *r, const char *flag_key, const char *env_key,
                      const struct flagctx_wanted *wanted);

/*
 * The context in ctx->row of an operation loaded by flagctx_dispatch; false after
 * answering r (404 flag not found, 404 environment not found when
 * want_env, 500). On true, flagctx_release(fc) when done.
 */
bool flagctx_from_row(struct http_request *r, const PGresult *res, bool want_env,
                      struct flagctx *fc);

/*
 * The context without a caller, for a blocking connection inside a
 * transaction (the scheduler: schedule_apply.c): $1 organization id, $2
 * flag key, $3 environment key; its row's columns from 0. It also locks
 * the flag's row FOR UPDATE NOWAIT: SQLSTATE 55P03 when another
 * transaction holds it. flagctx_from_result reads it: false when the flag
 * or the environment is missing (or the row does not parse); on true,
 * flagctx_release(fc) when done.
 */
extern const char FLAGCTX_LOCKED_SQL[];
bool flagctx_from_result(const PGresult *res, struct flagctx *fc);

/* Frees what fc holds. */
void flagctx_release(struct flagctx *fc);

/*
 * SQL pieces for the write statement that follows the context: a CTE "f"
 * locking the flag $1 (its id and organization, which a new variant or
 * rule row carries) FOR UPDATE, so writes to one flag run one after the
 * other and see an archive that happened since the context was read; the status column (404 flag gone, 409 archived, else done_status,
 * an SQL expression); and the start of the message column's CASE (callers
 * add their own WHEN/ELSE branches and END).
 */
#define FLAGCTX_LOCK_SQL                                                                           \
    "f AS (SELECT id, org_id, archived_at FROM flags WHERE id = $1::uuid FOR UPDATE)"

#define FLAGCTX_STATUS_SQL(done_status)                                                            \
    "CASE WHEN NOT EXISTS (SELECT 1 FROM f) THEN 404"                                              \
    "     WHEN (SELECT archived_at FROM f) IS NOT NULL THEN 409 ELSE " done_status " END"

#define FLAGCTX_MESSAGE_SQL                                                                        \
    "CASE WHEN NOT EXISTS (SELECT 1 FROM f) THEN 'flag not found'"                                 \
    "     WHEN (SELECT archived_at FROM f) IS NOT NULL"                                            \
    "     THEN 'the flag is archived; restore it first'"

/* True when a JSON array of strings holds s. */
bool flagctx_array_has(const struct json_object *array, const char *s);

#endif
