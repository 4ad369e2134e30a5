/*
 * snapshot_source.c - reads the configuration for a snapshot (see
 * snapshot_source.h).
 *
 * One REPEATABLE READ transaction, one query per kind of row, all sent at
 * once in a libpq pipeline, so there is no round trip between them and
 * PostgreSQL computes each result while libpq still parses the previous
 * one. The last and largest, the flag configurations, is read in
 * single-row mode: the builder works on each row while the server sends
 * the next. The rows reach the builder in the order it requires
 * (snapshot_build.h): environments, entity attributes, segments, SDK keys,
 * then each flag configuration followed by its rules in evaluation order.
 * A row the builder refuses is skipped and counted; the build goes on.
 *
 * Variants and rules (a row or more per flag) come unsorted and without a
 * join to flags: sorting or joining a few hundred thousand rows costs
 * PostgreSQL more than all the rest of the read. They are grouped by flag
 * with hash indexes here (rowindex.h) and put in order per flag (a flag
 * has few of each).
 */
#include "snapshot_source.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dbsync.h"
#include "log.h"
#include "rowindex.h"
#include "snapshot_build.h"

static const char generation_sql[] = "SELECT generation FROM config_generation WHERE id = 1";

/* The statements of one read, in the order their results are used. */
enum query {
    Q_BEGIN,
    Q_GENERATION,
    Q_ENVIRONMENTS,
    Q_ATTRIBUTES,
    Q_SEGMENTS,
    Q_SDK_KEYS,
    Q_VARIANTS,
    Q_RULES,
    Q_FLAGS,
    Q_COUNT
};

/* Columns of the variants, rules and flags queries, read by number. */
enum { V_FLAG, V_KEY, V_VALUE, V_ORDER };
enum { R_FLAG, R_ENV, R_ID, R_CONDITIONS, R_SERVE, R_PRIORITY, R_CREATED };
enum { F_ENV, F_ID, F_KEY, F_TYPE, F_ENABLED, F_OFF, F_DEFAULT };

static const struct {
    const char *what, *sql;
} queries[Q_COUNT] = {
    [Q_BEGIN] = {"BEGIN", "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"},
    [Q_GENERATION] = {"the configuration generation", generation_sql},
    [Q_ENVIRONMENTS] =
        {"environments",
         "SELECT id, org_id, key FROM environments ORDER BY org_id, sort_order, key"},
    [Q_ATTRIBUTES] = {"entity attributes",
                      "SELECT e.org_id, e.key, a.key, a.data_type FROM entity_attributes a"
                      " JOIN entities e ON e.id = a.entity_id"
                      " ORDER BY e.org_id, e.key, a.sort_order, a.key"},
    [Q_SEGMENTS] = {"segments",
                    "SELECT org_id, key, conditions::text FROM segments ORDER BY org_id, key"},
    [Q_SDK_KEYS] = {"SDK keys", "SELECT token_digest, environment_id FROM sdk_keys"
                                " WHERE revoked_at IS NULL AND environment_id IS NOT NULL"},
    [Q_VARIANTS] = {"variants", "SELECT flag_id, key, value::text, sort_order FROM variants"},
    [Q_RULES] = {"rules", "SELECT flag_id, environment_id, id, conditions::text, serve::text,"
                          " priority, (extract(epoch FROM created_at) * 1000000)::bigint"
                          " FROM rules"},
    [Q_FLAGS] = {"flags", "SELECT fe.environment_id, f.id, f.key, f.type, fe.enabled,"
                          " fe.off_variant_key, fe.default_serve::text"
                          " FROM flag_environments fe JOIN flags f ON f.id = fe.flag_id"},
};

struct source {
    PGconn *conn;
    struct snapshot_builder *builder;
    char *err;
    size_t errlen;
    size_t skipped;
    PGresult *variants, *rules;
    struct rowindex variants_by_flag, rules_by_flag;
    int *rows; /* one flag's variant or rule rows, in order */
    struct snapshot_variant_input *scratch;
    size_t scratch_cap;
};

static const char *value(const PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) ? NULL : PQgetvalue(res, row, col);
}

/* Counts a row the builder refused; the first one is logged. */
static void note_skipped(struct source *s, const char *what)
{
    if (s->skipped++ == 0)
        log_warn("snapshot: skipped a row of %s: %s", what, snapshot_builder_error(s->builder));
}

static void fail(struct source *s, const char *what, const char *message)
{
    snprintf(s->err, s->errlen, "reading %s: %s", what, message);
}

/* ---- the pipeline ---- */

static int send_queries(struct source *s)
{
    if (PQenterPipelineMode(s->conn) != 1) {
        fail(s, "the configuration", PQerrorMessage(s->conn));
        return -1;
    }
    for (int q = 0; q < Q_COUNT; q++)
        if (PQsendQueryParams(s->conn, queries[q].sql, 0, NULL, NULL, NULL, NULL, 0) != 1) {
            fail(s, queries[q].what, PQerrorMessage(s->conn));
            PQpipelineSync(s->conn); /* so that what was sent can be read back */
            return -1;
        }
    if (PQpipelineSync(s->conn) != 1) {
        fail(s, "the configuration", PQerrorMessage(s->conn));
        return -1;
    }
    return 0;
}

/* The result of the next query (the caller PQclears it), or NULL with
 * s->err set. */
static PGresult *next_result(struct source *s, enum query q)
{
    PGresult *res = PQgetResult(s->conn);
    ExecStatusType status = PQresultStatus(res);
    if (res != NULL && (status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK)) {
        PGresult *end = PQgetResult(s->conn); /* NULL: the end of this query's results */
        if (end == NULL)
            return res;
        PQclear(end);
        PQclear(res);
        fail(s, queries[q].what, "more results than one");
        return NULL;
    }
    struct dbsync_error error;
    dbsync_error_from_result(&error, res, s->conn);
    fail(s, queries[q].what, error.message);
    PQclear(res);
    return NULL;
}

/* Reads and drops whatever the pipeline still holds up to its sync point,
 * and leaves pipeline mode. */
static void finish_pipeline(PGconn *conn)
{
    for (int nulls = 0; nulls < 2 && PQstatus(conn) == CONNECTION_OK;) {
        PGresult *res = PQgetResult(conn);
        if (res == NULL) {
            nulls++;
            continue;
        }
        nulls = 0;
        bool sync = PQresultStatus(res) == PGRES_PIPELINE_SYNC;
        PQclear(res);
        if (sync)
            break;
    }
    PQexitPipelineMode(conn);
}

/* ---- small results ---- */

typedef int (*row_fn)(struct source *s, const PGresult *res, int row);

static int add_environment(struct source *s, const PGresult *res, int row)
{
    return snapshot_builder_add_environment(s->builder, value(res, row, 0), value(res, row, 1),
                                            value(res, row, 2));
}

static int add_attribute(struct source *s, const PGresult *res, int row)
{
    return snapshot_builder_add_entity_attribute(s->builder, value(res, row, 0), value(res, row, 1),
                                                 value(res, row, 2), value(res, row, 3));
}

static int add_segment(struct source *s, const PGresult *res, int row)
{
    return snapshot_builder_add_segment(s->builder, value(res, row, 0), value(res, row, 1),
                                        value(res, row, 2));
}

static int add_sdk_key(struct source *s, const PGresult *res, int row)
{
    return snapshot_builder_add_sdk_key(s->builder, value(res, row, 0), value(res, row, 1));
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void add_rows(struct source *s, enum query q, const PGresult *res, row_fn add)
{
    long long started = now_ms();
    int rows = PQntuples(res);
    for (int row = 0; row < rows; row++)
        if (add(s, res, row) != 0)
            note_skipped(s, queries[q].what);
    log_debug("snapshot: %d rows of %s added in %lld ms", rows, queries[q].what,
              now_ms() - started);
}

static int run_step(struct source *s, enum query q, row_fn add)
{
    PGresult *res = next_result(s, q);
    if (res == NULL)
        return -1;
    add_rows(s, q, res, add);
    PQclear(res);
    return 0;
}

/* ---- a flag's variants and rules, in order ---- */

typedef int (*row_order_fn)(const PGresult *res, int a, int b);

/* Variants within a flag: sort_order, then key (unique within the flag). */
static int compare_variant_rows(const PGresult *res, int a, int b)
{
    long long oa = atoll(PQgetvalue(res, a, V_ORDER)), ob = atoll(PQgetvalue(res, b, V_ORDER));
    if (oa != ob)
        return oa < ob ? -1 : 1;
    return strcmp(PQgetvalue(res, a, V_KEY), PQgetvalue(res, b, V_KEY));
}

/* Rules within a flag's environment: priority, then creation time, then id. */
static int compare_rule_rows(const PGresult *res, int a, int b)
{
    long long pa = atoll(PQgetvalue(res, a, R_PRIORITY)),
              pb = atoll(PQgetvalue(res, b, R_PRIORITY));
    if (pa != pb)
        return pa < pb ? -1 : 1;
    long long ca = atoll(PQgetvalue(res, a, R_CREATED)), cb = atoll(PQgetvalue(res, b, R_CREATED));
    if (ca != cb)
        return ca < cb ? -1 : 1;
    return strcmp(PQgetvalue(res, a, R_ID), PQgetvalue(res, b, R_ID));
}

static bool grow_scratch(struct source *s, size_t n)
{
    if (n <= s->scratch_cap)
        return true;
    size_t cap = s->scratch_cap ? s->scratch_cap * 2 : 16;
    void *inputs = realloc(s->scratch, cap * sizeof *s->scratch);
    if (inputs != NULL)
        s->scratch = inputs;
    void *rows = realloc(s->rows, cap * sizeof *s->rows);
    if (rows != NULL)
        s->rows = rows;
    if (inputs == NULL || rows == NULL)
        return false;
    s->scratch_cap = cap;
    return true;
}

/*
 * Puts in s->rows, in the order of cmp (an insertion sort: the groups are
 * small), the rows of index whose indexed column equals key and, when
 * filter is not NULL, whose column filter_col equals filter. Returns their
 * count, or -1 when out of memory.
 */
static long collect_rows(struct source *s, const struct rowindex *index, const char *key,
                         int filter_col, const char *filter, row_order_fn cmp)
{
    const PGresult *res = index->res;
    size_t n = 0;
    for (int row = rowindex_first(index, key); row >= 0; row = rowindex_next(index, row)) {
        if (filter != NULL && strcmp(PQgetvalue(res, row, filter_col), filter) != 0)
            continue;
        if (!grow_scratch(s, n + 1))
            return -1;
        size_t at = n++;
        for (; at > 0 && cmp(res, s->rows[at - 1], row) > 0; at--)
            s->rows[at] = s->rows[at - 1];
        s->rows[at] = row;
    }
    return (long)n;
}

static long variants_of(struct source *s, const char *flag_id)
{
    long n = collect_rows(s, &s->variants_by_flag, flag_id, 0, NULL, compare_variant_rows);
    for (long i = 0; i < n; i++) {
        s->scratch[i].key = PQgetvalue(s->variants, s->rows[i], V_KEY);
        s->scratch[i].value_json = PQgetvalue(s->variants, s->rows[i], V_VALUE);
    }
    return n;
}

/* Adds the rules of one flag configuration, in evaluation order. */
static int add_rules_of(struct source *s, const char *flag_id, const char *env_id,
                        const char *flag_key)
{
    long n = collect_rows(s, &s->rules_by_flag, flag_id, R_ENV, env_id, compare_rule_rows);
    if (n < 0)
        return -1;
    const PGresult *res = s->rules;
    for (long i = 0; i < n; i++) {
        int row = s->rows[i];
        if (snapshot_builder_add_rule(s->builder, env_id, flag_key, value(res, row, R_ID),
                                      value(res, row, R_CONDITIONS), value(res, row, R_SERVE)) != 0)
            note_skipped(s, "rules");
    }
    return 0;
}

static int add_flag(struct source *s, const PGresult *res, int row)
{
    const char *flag_id = value(res, row, F_ID), *env_id = value(res, row, F_ENV);
    long n = variants_of(s, flag_id);
    if (n < 0)
        return -1;
    const char *enabled = value(res, row, F_ENABLED);
    struct snapshot_flag_input flag = {
        .env_id = env_id,
        .flag_id = flag_id,
        .flag_key = value(res, row, F_KEY),
        .type = value(res, row, F_TYPE),
        .enabled = enabled != NULL && enabled[0] == 't',
        .off_variant_key = value(res, row, F_OFF),
        .default_serve_json = value(res, row, F_DEFAULT),
        .variants = s->scratch,
        .variant_count = (size_t)n,
    };
    if (snapshot_builder_add_flag(s->builder, &flag) != 0)
        return -1;
    return add_rules_of(s, flag_id, env_id, flag.flag_key);
}

/* Holds the result of q with an index on its flag id column. */
static int hold_indexed(struct source *s, enum query q, PGresult **res, struct rowindex *index)
{
    *res = next_result(s, q);
    if (*res == NULL)
        return -1;
    if (rowindex_build(index, *res, 0) != 0) {
        fail(s, queries[q].what, "out of memory");
        return -1;
    }
    return 0;
}

/* The flag configurations come one row at a time (single-row mode), so the
 * builder works while PostgreSQL is still sending them. */
static int stream_flags(struct source *s)
{
    long long started = now_ms();
    int rows = 0;
    if (PQsetSingleRowMode(s->conn) != 1) { /* for the query whose results come next */
        fail(s, "flags", "cannot switch to single-row mode");
        return -1;
    }
    for (;;) {
        PGresult *res = PQgetResult(s->conn);
        ExecStatusType status = PQresultStatus(res);
        if (res != NULL && status == PGRES_SINGLE_TUPLE) {
            if (add_flag(s, res, 0) != 0)
                note_skipped(s, "flags");
            rows++;
            PQclear(res);
            continue;
        }
        if (res != NULL && status == PGRES_TUPLES_OK) {
            PQclear(res);
            res = PQgetResult(s->conn);
            if (res == NULL)
                break;
        }
        struct dbsync_error error;
        dbsync_error_from_result(&error, res, s->conn);
        fail(s, "flags", res == NULL ? "no result" : error.message);
        PQclear(res);
        return -1;
    }
    log_debug("snapshot: %d flag configurations added in %lld ms", rows, now_ms() - started);
    return 0;
}

static int read_flags(struct source *s)
{
    int rc = -1;
    if (hold_indexed(s, Q_VARIANTS, &s->variants, &s->variants_by_flag) == 0 &&
        hold_indexed(s, Q_RULES, &s->rules, &s->rules_by_flag) == 0)
        rc = stream_flags(s);
    rowindex_free(&s->variants_by_flag);
    rowindex_free(&s->rules_by_flag);
    PQclear(s->variants);
    PQclear(s->rules);
    return rc;
}

/* ---- the transaction ---- */

static int parse_generation(const PGresult *res, uint64_t *out, char *err, size_t errlen)
{
    if (PQntuples(res) != 1) {
        snprintf(err, errlen, "config_generation has no row: run ensignctl migrate");
        return -1;
    }
    *out = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
    return 0;
}

int snapshot_source_generation(PGconn *conn, uint64_t *out, char *err, size_t errlen)
{
    struct dbsync_error error;
    PGresult *res = dbsync_exec(conn, generation_sql, 0, NULL, &error);
    if (res == NULL) {
        snprintf(err, errlen, "reading the configuration generation: %s", error.message);
        return -1;
    }
    int rc = parse_generation(res, out, err, errlen);
    PQclear(res);
    return rc;
}

static int read_start(struct source *s, uint64_t *generation)
{
    PGresult *begun = next_result(s, Q_BEGIN);
    if (begun == NULL)
        return -1;
    PQclear(begun);
    PGresult *res = next_result(s, Q_GENERATION);
    if (res == NULL)
        return -1;
    int rc = parse_generation(res, generation, s->err, s->errlen);
    PQclear(res);
    return rc;
}

static int read_all(struct source *s, uint64_t *generation)
{
    if (send_queries(s) != 0 || read_start(s, generation) != 0)
        return -1;
    s->builder = snapshot_builder_new(*generation);
    if (s->builder == NULL) {
        fail(s, "the configuration", "out of memory");
        return -1;
    }
    if (run_step(s, Q_ENVIRONMENTS, add_environment) != 0 ||
        run_step(s, Q_ATTRIBUTES, add_attribute) != 0 ||
        run_step(s, Q_SEGMENTS, add_segment) != 0 || run_step(s, Q_SDK_KEYS, add_sdk_key) != 0 ||
        read_flags(s) != 0)
        return -1;
    return 0;
}

struct snapshot_builder *snapshot_source_read(PGconn *conn, uint64_t *generation, char *err,
                                              size_t errlen)
{
    struct source s = {.conn = conn, .err = err, .errlen = errlen};
    if (read_all(&s, generation) != 0) {
        snapshot_builder_free(s.builder);
        s.builder = NULL;
    }
    finish_pipeline(conn);
    free(s.scratch);
    free(s.rows);
    dbsync_rollback(conn); /* read only: nothing to commit */
    if (s.skipped > 1)
        log_warn("snapshot: %zu rows skipped in all", s.skipped);
    return s.builder;
}
