/*
 * snapshot_source.c - reads the configuration for a snapshot (see
 * snapshot_source.h).
 *
 * One transaction, one query per kind of row, fed to the builder in the
 * order it requires (snapshot_build.h): environments, entity attributes,
 * segments, flags with their variants, SDK keys, then rules in evaluation
 * order. A row the builder refuses is skipped and counted; the build goes
 * on. The big results (variants, flag configurations and rules: a row or
 * more per flag) come unsorted: sorting a few hundred thousand rows by
 * uuid costs PostgreSQL more than all the rest of the read, so variants
 * are grouped by flag with a hash index here (rowindex.h), and rules are
 * put in (flag, environment, priority, creation time, id) order with
 * qsort.
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

static const char environments_sql[] =
    "SELECT id, org_id, key FROM environments ORDER BY org_id, sort_order, key";

static const char attributes_sql[] =
    "SELECT e.org_id, e.key, a.key, a.data_type FROM entity_attributes a"
    " JOIN entities e ON e.id = a.entity_id ORDER BY e.org_id, e.key, a.sort_order, a.key";

static const char segments_sql[] =
    "SELECT org_id, key, conditions::text FROM segments ORDER BY org_id, key";

/* Columns of variants_sql and rules_sql, read by number below. */
enum { V_FLAG, V_KEY, V_VALUE, V_ORDER, V_CREATED, V_ID };
enum { F_ENV, F_ID, F_KEY, F_TYPE, F_ENABLED, F_OFF, F_DEFAULT };
enum { R_ENV, R_FLAG_KEY, R_ID, R_CONDITIONS, R_SERVE, R_FLAG, R_PRIORITY, R_CREATED };

static const char variants_sql[] = "SELECT flag_id, key, value::text, sort_order,"
                                   " (extract(epoch FROM created_at) * 1000000)::bigint, id"
                                   " FROM variants";

static const char flags_sql[] =
    "SELECT fe.environment_id, f.id, f.key, f.type, fe.enabled, fe.off_variant_key,"
    " fe.default_serve::text FROM flag_environments fe JOIN flags f ON f.id = fe.flag_id";

static const char sdk_keys_sql[] = "SELECT token_digest, environment_id FROM sdk_keys"
                                   " WHERE revoked_at IS NULL AND environment_id IS NOT NULL";

static const char rules_sql[] =
    "SELECT r.environment_id, f.key, r.id, r.conditions::text, r.serve::text, r.flag_id,"
    " r.priority, (extract(epoch FROM r.created_at) * 1000000)::bigint"
    " FROM rules r JOIN flags f ON f.id = r.flag_id";

struct source {
    PGconn *conn;
    struct snapshot_builder *builder;
    char *err;
    size_t errlen;
    size_t skipped;
    PGresult *variants;      /* during the flags step */
    struct rowindex by_flag; /* variants by flag id */
    int *rows;               /* one flag's variant rows, in order */
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

/* ---- flags and their variants ---- */

/* Order within a flag: sort_order, then creation time, then id. */
static int compare_variant_rows(const PGresult *res, int a, int b)
{
    long long oa = atoll(PQgetvalue(res, a, V_ORDER)), ob = atoll(PQgetvalue(res, b, V_ORDER));
    if (oa != ob)
        return oa < ob ? -1 : 1;
    long long ca = atoll(PQgetvalue(res, a, V_CREATED)), cb = atoll(PQgetvalue(res, b, V_CREATED));
    if (ca != cb)
        return ca < cb ? -1 : 1;
    return strcmp(PQgetvalue(res, a, V_ID), PQgetvalue(res, b, V_ID));
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

/* Fills s->scratch with the variants of flag_id in order (an insertion
 * sort: a flag has few variants). Returns their count, or -1. */
static long variants_of(struct source *s, const char *flag_id)
{
    const PGresult *res = s->variants;
    size_t n = 0;
    for (int row = rowindex_first(&s->by_flag, flag_id); row >= 0;
         row = rowindex_next(&s->by_flag, row)) {
        if (!grow_scratch(s, n + 1))
            return -1;
        size_t at = n++;
        for (; at > 0 && compare_variant_rows(res, s->rows[at - 1], row) > 0; at--)
            s->rows[at] = s->rows[at - 1];
        s->rows[at] = row;
    }
    for (size_t i = 0; i < n; i++) {
        s->scratch[i].key = PQgetvalue(res, s->rows[i], V_KEY);
        s->scratch[i].value_json = PQgetvalue(res, s->rows[i], V_VALUE);
    }
    return (long)n;
}

static int add_flag(struct source *s, const PGresult *res, int row)
{
    long n = variants_of(s, value(res, row, F_ID));
    if (n < 0)
        return -1;
    const char *enabled = value(res, row, F_ENABLED);
    struct snapshot_flag_input flag = {
        .env_id = value(res, row, F_ENV),
        .flag_id = value(res, row, F_ID),
        .flag_key = value(res, row, F_KEY),
        .type = value(res, row, F_TYPE),
        .enabled = enabled != NULL && enabled[0] == 't',
        .off_variant_key = value(res, row, F_OFF),
        .default_serve_json = value(res, row, F_DEFAULT),
        .variants = s->scratch,
        .variant_count = (size_t)n,
    };
    return snapshot_builder_add_flag(s->builder, &flag);
}

/* ---- the steps ---- */

typedef int (*row_fn)(struct source *s, const PGresult *res, int row);

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Runs one of the constant queries; NULL with s->err set on failure. */
static PGresult *query(struct source *s, const char *what, const char *sql)
{
    struct dbsync_error error;
    PGresult *res = dbsync_exec(s->conn, sql, 0, NULL, &error);
    if (res == NULL)
        snprintf(s->err, s->errlen, "reading %s: %s", what, error.message);
    return res;
}

static void add_rows(struct source *s, const char *what, const PGresult *res, row_fn add)
{
    long long started = now_ms();
    int rows = PQntuples(res);
    for (int row = 0; row < rows; row++)
        if (add(s, res, row) != 0)
            note_skipped(s, what);
    log_debug("snapshot: %d rows of %s added in %lld ms", rows, what, now_ms() - started);
}

static int run_step(struct source *s, const char *what, const char *sql, row_fn add)
{
    PGresult *res = query(s, what, sql);
    if (res == NULL)
        return -1;
    add_rows(s, what, res, add);
    PQclear(res);
    return 0;
}

static int read_flags(struct source *s)
{
    s->variants = query(s, "variants", variants_sql);
    if (s->variants == NULL)
        return -1;
    int rc = rowindex_build(&s->by_flag, s->variants, V_FLAG);
    if (rc != 0)
        snprintf(s->err, s->errlen, "out of memory");
    else
        rc = run_step(s, "flags", flags_sql, add_flag);
    rowindex_free(&s->by_flag);
    PQclear(s->variants);
    s->variants = NULL;
    return rc;
}

/* One rule row with its sort key. */
struct rule_row {
    const char *flag_id, *env_id, *id;
    long long priority, created;
    int row;
};

static int compare_rules(const void *pa, const void *pb)
{
    const struct rule_row *a = pa, *b = pb;
    int c = strcmp(a->flag_id, b->flag_id);
    if (c == 0)
        c = strcmp(a->env_id, b->env_id);
    if (c == 0 && a->priority != b->priority)
        c = a->priority < b->priority ? -1 : 1;
    if (c == 0 && a->created != b->created)
        c = a->created < b->created ? -1 : 1;
    return c != 0 ? c : strcmp(a->id, b->id);
}

static int add_rule(struct source *s, const PGresult *res, int row)
{
    return snapshot_builder_add_rule(s->builder, value(res, row, R_ENV),
                                     value(res, row, R_FLAG_KEY), value(res, row, R_ID),
                                     value(res, row, R_CONDITIONS), value(res, row, R_SERVE));
}

/* Adds every rule of res in evaluation order. */
static int add_rules_in_order(struct source *s, const PGresult *res)
{
    int count = PQntuples(res);
    struct rule_row *order = malloc(((size_t)count + 1) * sizeof *order);
    if (order == NULL) {
        snprintf(s->err, s->errlen, "out of memory");
        return -1;
    }
    for (int row = 0; row < count; row++)
        order[row] = (struct rule_row){PQgetvalue(res, row, R_FLAG),
                                       PQgetvalue(res, row, R_ENV),
                                       PQgetvalue(res, row, R_ID),
                                       atoll(PQgetvalue(res, row, R_PRIORITY)),
                                       atoll(PQgetvalue(res, row, R_CREATED)),
                                       row};
    qsort(order, (size_t)count, sizeof *order, compare_rules);
    for (int i = 0; i < count; i++)
        if (add_rule(s, res, order[i].row) != 0)
            note_skipped(s, "rules");
    free(order);
    return 0;
}

static int read_rules(struct source *s)
{
    PGresult *res = query(s, "rules", rules_sql);
    if (res == NULL)
        return -1;
    long long started = now_ms();
    int rc = add_rules_in_order(s, res);
    log_debug("snapshot: %d rules ordered and added in %lld ms", PQntuples(res),
              now_ms() - started);
    PQclear(res);
    return rc;
}

static int read_all(struct source *s)
{
    if (run_step(s, "environments", environments_sql, add_environment) != 0 ||
        run_step(s, "entity attributes", attributes_sql, add_attribute) != 0 ||
        run_step(s, "segments", segments_sql, add_segment) != 0 || read_flags(s) != 0 ||
        run_step(s, "SDK keys", sdk_keys_sql, add_sdk_key) != 0 || read_rules(s) != 0)
        return -1;
    return 0;
}

/* ---- the transaction ---- */

int snapshot_source_generation(PGconn *conn, uint64_t *out, char *err, size_t errlen)
{
    struct dbsync_error error;
    PGresult *res = dbsync_exec(conn, generation_sql, 0, NULL, &error);
    if (res == NULL) {
        snprintf(err, errlen, "reading the configuration generation: %s", error.message);
        return -1;
    }
    int rc = -1;
    if (PQntuples(res) == 1) {
        *out = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
        rc = 0;
    } else {
        snprintf(err, errlen, "config_generation has no row: run ensignctl migrate");
    }
    PQclear(res);
    return rc;
}

struct snapshot_builder *snapshot_source_read(PGconn *conn, uint64_t *generation, char *err,
                                              size_t errlen)
{
    struct dbsync_error error;
    if (dbsync_command(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL, &error) !=
        0) {
        snprintf(err, errlen, "BEGIN: %s", error.message);
        return NULL;
    }
    if (snapshot_source_generation(conn, generation, err, errlen) != 0) {
        dbsync_rollback(conn);
        return NULL;
    }
    struct source s = {.conn = conn, .err = err, .errlen = errlen};
    s.builder = snapshot_builder_new(*generation);
    if (s.builder == NULL) {
        snprintf(err, errlen, "out of memory");
    } else if (read_all(&s) != 0) {
        snapshot_builder_free(s.builder);
        s.builder = NULL;
    }
    free(s.scratch);
    free(s.rows);
    dbsync_rollback(conn); /* read only: nothing to commit */
    if (s.skipped > 1)
        log_warn("snapshot: %zu rows skipped in all", s.skipped);
    return s.builder;
}
