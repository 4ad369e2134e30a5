/*
 * snapshot_source.c - reads the configuration for a snapshot (see
 * snapshot_source.h).
 *
 * One REPEATABLE READ transaction in two steps, each a libpq pipeline (its
 * queries sent at once, so there is no round trip between them and
 * PostgreSQL computes each result while libpq still parses the previous
 * one). First the generation and the per-organization generations (with a
 * catalog whole at a generation, only the organizations past it); compared
 * with the caller's catalog (snapshot_catalog.h: the generation, the
 * environments and the SDK keys of each organization as the published
 * index has them) they decide which organizations must be read again (the
 * caller keeps the others' parts). Then, only if some must, the queries of
 * those organizations' rows, their environments and SDK keys first: with
 * `org_id = ANY($1)` with a catalog, unfiltered without one. The new
 * catalog is the old one's unchanged organizations merged with the rows
 * read (both in organization order), and the index builder is filled from
 * it, so a change reads the environments and keys of the organizations it
 * touched only. When the caller writes parts as they are built (part_done)
 * and many organizations are read (every one on a first build, or more
 * than 64), their other rows are read a batch of organizations at a time
 * (`org_id = ANY($1)` per batch, sized by a count of their flags), each
 * batch read whole on a thread (batch_read.h) while the one before it is
 * built, in the same transaction, and each batch's parts handed over and
 * its builders freed before the next is built: memory holds the rows of two
 * batches and the builders of one. Otherwise they follow in the same
 * pipeline; the last and largest, the flag configurations, is then read in
 * single-row mode: the builders work on each row while the server sends
 * the next. Rows reach
 * each organization's builder in the order it requires (snapshot_build.h):
 * environments, entity attributes, segments, then each flag configuration
 * followed by its rules in evaluation order. A row a builder refuses is
 * skipped and counted; the build goes on.
 *
 * An organization of more than twice snapshot_chunk_flags flags is read
 * in chunks of its flags by key (doc/choices.md "Chunks of a large
 * organization"), after the batches, in the same transaction: its chunks
 * planned from its sorted keys (all of them, or, when the caller holds its
 * chunks and whole_generation did not move past them, only those covering
 * the keys config_flag_generation names since), then the rows of each run
 * of chunks read again with range forms of the variants, rules and flags
 * queries (`key COLLATE "C"` bounds, flags_org_key_bytes), each flag row
 * routed to the builder of the chunk covering its key.
 *
 * Variants and rules (a row or more per flag) come unsorted (and without a
 * join to flags in the unfiltered form, which only a caller without
 * part_done uses now): sorting a few hundred thousand rows costs
 * PostgreSQL more than all the rest of the read. They are grouped
 * by flag with hash indexes here (rowindex.h) and put in order per flag (a
 * flag has few of each).
 */
#include "db/snapshot_source.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "db/batch_read.h"
#include "db/dbsync.h"
#include "db/rowindex.h"
#include "eval/snapshot_build.h"
#include "eval/snapshot_catalog.h"
#include "eval/snapshot_chunks.h"

static const char generation_sql[] = "SELECT generation FROM config_generation WHERE id = 1";
/* generation_sql prepared once per connection: a refresher reading a
 * replica runs it every few tens of milliseconds, and a prepared statement
 * costs the server less than half of parsing and planning it each time
 * (doc/choices.md "Read replicas"). */
static const char generation_statement[] = "ensign_generation";

/* The first step's statements (one each), then the second step's, all of
 * the organizations read again. */
enum query {
    Q_BEGIN,
    Q_GENERATION,
    Q_ORG_GENERATIONS,
    Q_ENVIRONMENTS,
    Q_SDK_KEYS,
    Q_ATTRIBUTES,
    Q_SEGMENTS,
    Q_VARIANTS,
    Q_RULES,
    Q_FLAGS,
    Q_COUNT
};
#define Q_FIRST_OF_ORGS Q_ENVIRONMENTS

/* Columns of the environments, variants, rules and flags queries. */
enum { E_ID, E_ORG, E_KEY };
enum { V_FLAG, V_KEY, V_VALUE, V_ORDER };
enum { R_FLAG, R_ENV, R_ID, R_CONDITIONS, R_SERVE, R_PRIORITY, R_CREATED };
enum { F_ENV, F_ID, F_KEY, F_TYPE, F_ENABLED, F_OFF, F_DEFAULT };

/* The flags of the organizations in $1, for the `some` statements below. */
#define SOME_FLAG_IDS "SELECT id FROM flags WHERE org_id = ANY($1::uuid[])"

/* Each query whole (`all`) and for the organizations in $1 (`some`; the
 * first step's have none). A `some` statement reads
 * variants, rules and flag configurations by flag id through their
 * indexes, from an array the planner cannot see into (ARRAY(subquery)
 * counts as a few elements): a join on flags.org_id would let a missing or
 * skewed estimate of an organization's flags (fresh statistics lag a bulk
 * load; one organization holds a tenth of all flags) choose a hash join
 * over the whole table, seconds on a million flags for a change of twenty
 * (doc/choices.md, "The database side of a change"). */
static const struct {
    const char *what, *all, *some;
} queries[Q_COUNT] = {
    [Q_BEGIN] = {"BEGIN", "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", NULL},
    [Q_GENERATION] = {"the configuration generation", generation_sql, NULL},
    [Q_ORG_GENERATIONS] = {"organization generations",
                           "SELECT org_id, generation, whole_generation FROM config_org_generation",
                           "SELECT org_id, generation, whole_generation FROM config_org_generation"
                           " WHERE generation > $1::bigint"},
    [Q_ENVIRONMENTS] = {"environments",
                        "SELECT id, org_id, key FROM environments ORDER BY org_id, sort_order, key",
                        "SELECT id, org_id, key FROM environments WHERE org_id = ANY($1::uuid[])"
                        " ORDER BY org_id, sort_order, key"},
    [Q_SDK_KEYS] = {"SDK keys",
                    "SELECT token_digest, environment_id FROM sdk_keys"
                    " WHERE revoked_at IS NULL AND environment_id IS NOT NULL",
                    "SELECT k.token_digest, k.environment_id FROM sdk_keys k"
                    " JOIN environments e ON e.id = k.environment_id"
                    " WHERE k.revoked_at IS NULL AND k.org_id = ANY($1::uuid[])"
                    " AND e.org_id = ANY($1::uuid[])"},
    [Q_ATTRIBUTES] = {"entity attributes",
                      "SELECT e.org_id, e.key, a.key, a.data_type FROM entity_attributes a"
                      " JOIN entities e ON e.id = a.entity_id"
                      " ORDER BY e.org_id, e.key, a.sort_order, a.key",
                      "SELECT e.org_id, e.key, a.key, a.data_type FROM entity_attributes a"
                      " JOIN entities e ON e.id = a.entity_id WHERE e.org_id = ANY($1::uuid[])"
                      " ORDER BY e.org_id, e.key, a.sort_order, a.key"},
    [Q_SEGMENTS] = {"segments",
                    "SELECT org_id, key, conditions::text FROM segments ORDER BY org_id, key",
                    "SELECT org_id, key, conditions::text FROM segments"
                    " WHERE org_id = ANY($1::uuid[]) ORDER BY org_id, key"},
    [Q_VARIANTS] = {"variants", "SELECT flag_id, key, value::text, sort_order FROM variants",
                    "SELECT v.flag_id, v.key, v.value::text, v.sort_order FROM variants v"
                    " WHERE v.flag_id = ANY (ARRAY(" SOME_FLAG_IDS "))"},
    [Q_RULES] = {"rules",
                 "SELECT flag_id, environment_id, id, conditions::text, serve::text,"
                 " priority, (extract(epoch FROM created_at) * 1000000)::bigint"
                 " FROM rules",
                 "SELECT r.flag_id, r.environment_id, r.id, r.conditions::text, r.serve::text,"
                 " r.priority, (extract(epoch FROM r.created_at) * 1000000)::bigint"
                 " FROM rules r WHERE r.flag_id = ANY (ARRAY(" SOME_FLAG_IDS "))"},
    [Q_FLAGS] = {"flags",
                 "SELECT fe.environment_id, f.id, f.key, f.type, fe.enabled,"
                 " fe.off_variant_key, fe.default_serve::text"
                 " FROM flag_environments fe JOIN flags f ON f.id = fe.flag_id",
                 "WITH f AS MATERIALIZED (SELECT id, key, type FROM flags"
                 " WHERE org_id = ANY($1::uuid[]))"
                 " SELECT fe.environment_id, f.id, f.key, f.type, fe.enabled,"
                 " fe.off_variant_key, fe.default_serve::text"
                 " FROM flag_environments fe JOIN f ON f.id = fe.flag_id"
                 " WHERE fe.flag_id = ANY (ARRAY(SELECT id FROM f))"},
};

/* The chunks of one organization a range read fills: each flag row goes to
 * the builder of the chunk covering its key. */
struct chunk_target {
    const struct snapshot_source_chunks *chunks;
};

struct source {
    PGconn *conn;
    const struct snapshot_source_chunking *chunking; /* NULL: nothing chunked */
    const struct chunk_target *target;               /* a range read under way */
    snapshot_source_part_fn part_done;               /* NULL: the caller writes the parts after */
    void *part_ctx;
    struct snapshot_source_result *out;
    const struct snapshot_catalog *held; /* NULL: read every organization */
    bool patch;                          /* the caller can apply a patch (out->patch) */
    bool moved_only;                     /* gens holds only those past held's generation */
    char *err;
    size_t errlen;
    size_t skipped;
    PGresult *gens;              /* organization generations */
    struct rowindex gens_by_org; /* their rows by organization */
    const char **changed;        /* ids of the organizations read again, sorted */
    size_t changed_count;        /* (they point into gens or held) */
    bool *held_changed;          /* per organization of held: read again */
    PGresult *environments;      /* of the organizations read again */
    PGresult *sdk_keys;          /* of the same */
    struct rowindex env_ids;     /* environments by id */
    struct rowindex keys_by_env; /* SDK keys by environment id */
    size_t *env_orgs;            /* per environments row: its index in out->orgs */
    int *org_env_rows;           /* per out->orgs: its first environments row */
    PGresult *variants, *rules;
    struct rowindex variants_by_flag, rules_by_flag;
    int *rows; /* one flag's variant or rule rows, in order */
    struct snapshot_variant_input *scratch;
    size_t scratch_cap;
    struct batch_read *batch; /* a batch read whole: its results, not the connection's */
    char variants_flag[64];   /* the flag whose variants s->scratch holds, */
    long variants_count;      /* their count, or -1: none */
};

/* In a batch read, the results of Q_ATTRIBUTES..Q_FLAGS, then the batch's
 * flag rows (batch_flag_rows_sql) at this index. */
#define BATCH_FLAG_ROWS (Q_COUNT - Q_ATTRIBUTES)

static const char *value(const PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) ? NULL : PQgetvalue(res, row, col);
}

/* Counts a row a builder refused; the first one is logged. */
static void note_skipped(struct source *s, const struct snapshot_builder *b, const char *what)
{
    if (s->skipped++ == 0)
        log_warn("snapshot: skipped a row of %s: %s", what,
                 b != NULL ? snapshot_builder_error(b) : "out of memory");
}

static void fail(struct source *s, const char *what, const char *message)
{
    snprintf(s->err, s->errlen, "reading %s: %s", what, message);
}

/* ---- which builder a row goes to ---- */

static int compare_org_ids(const void *key, const void *org)
{
    return strcmp(key, ((const struct snapshot_source_org *)org)->id);
}

/* The builder of organization org_id, or NULL when it is not read again. */
static struct snapshot_builder *org_builder(const struct source *s, const char *org_id)
{
    const struct snapshot_source_org *org = org_id == NULL
                                                ? NULL
                                                : bsearch(org_id, s->out->orgs, s->out->org_count,
                                                          sizeof *s->out->orgs, compare_org_ids);
    return org != NULL ? org->builder : NULL;
}

/* The builder of the organization of environment env_id, or NULL. */
static struct snapshot_builder *env_builder(const struct source *s, const char *env_id)
{
    int row = env_id != NULL ? rowindex_first(&s->env_ids, env_id) : -1;
    return row >= 0 ? s->out->orgs[s->env_orgs[row]].builder : NULL;
}

/* ---- the pipeline ---- */

/* "{id,id,...}" of ids (count of them; malloc'd), or NULL. */
static char *id_array(const char *const *ids, size_t count)
{
    size_t len = 3;
    for (size_t i = 0; i < count; i++)
        len += strlen(ids[i]) + 1;
    char *text = malloc(len), *at = text;
    if (text == NULL)
        return NULL;
    *at++ = '{';
    for (size_t i = 0; i < count; i++) {
        if (i > 0)
            *at++ = ',';
        size_t n = strlen(ids[i]);
        memcpy(at, ids[i], n);
        at += n;
    }
    *at++ = '}';
    *at = '\0';
    return text;
}

/*
 * Sends queries [first, last) in pipeline mode, then a sync point. With
 * arg (an array literal of organization ids; in the first step, the
 * generation of the held catalog) the `some` form of each query goes with
 * it as $1; else the `all` form.
 */
static int send_queries(struct source *s, enum query first, enum query last, const char *arg)
{
    const char *params[1] = {arg};
    if (PQpipelineStatus(s->conn) == PQ_PIPELINE_OFF && PQenterPipelineMode(s->conn) != 1) {
        fail(s, "the configuration", PQerrorMessage(s->conn));
        return -1;
    }
    for (enum query q = first; q < last; q++) {
        bool some = arg != NULL && queries[q].some != NULL;
        if (PQsendQueryParams(s->conn, some ? queries[q].some : queries[q].all, some ? 1 : 0, NULL,
                              params, NULL, NULL, 0) != 1) {
            fail(s, queries[q].what, PQerrorMessage(s->conn));
            PQpipelineSync(s->conn); /* so that what was sent can be read back */
            return -1;
        }
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
    if (s->batch != NULL && q >= Q_ATTRIBUTES) { /* read whole by batch_read, in order */
        PGresult *held = s->batch->results[q - Q_ATTRIBUTES];
        s->batch->results[q - Q_ATTRIBUTES] = NULL;
        return held;
    }
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

/* ---- the first step: generations, environments, SDK keys ---- */

static int parse_generation(const PGresult *res, uint64_t *out, char *err, size_t errlen)
{
    if (PQntuples(res) != 1) {
        snprintf(err, errlen, "config_generation has no row: run ensignctl migrate");
        return -1;
    }
    *out = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
    return 0;
}

/* The generation of org_id in the organization generations (a rowindex on
 * their first column), else the global one (an organization no write has
 * recorded yet, which only a database restored from elsewhere can have). */
static uint64_t org_generation(const struct rowindex *gens, const char *org_id, uint64_t global)
{
    int row = rowindex_first(gens, org_id);
    return row >= 0 ? strtoull(PQgetvalue(gens->res, row, 1), NULL, 10) : global;
}

static int compare_ids(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * Decides which organizations are read again: with a catalog, those whose
 * generation differs from the one it holds (or that it lacks), and, when
 * every generation row was read, those it holds that no row names while
 * the global generation moved (with only the rows past the catalog's
 * generation, a row not read is an organization that did not move);
 * without one, every organization with a generation row (those without one
 * come with their environments).
 */
static int choose_changed(struct source *s)
{
    size_t held = s->held != NULL ? s->held->org_count : 0;
    int rows = PQntuples(s->gens);
    s->changed = malloc(((size_t)rows + held + 1) * sizeof *s->changed);
    s->held_changed = calloc(held + 1, sizeof *s->held_changed);
    if (s->changed == NULL || s->held_changed == NULL) {
        fail(s, "organization generations", "out of memory");
        return -1;
    }
    for (int row = 0; row < rows; row++) {
        const char *org_id = PQgetvalue(s->gens, row, 0);
        const struct snapshot_catalog_org *org = snapshot_catalog_find(s->held, org_id);
        uint64_t generation = strtoull(PQgetvalue(s->gens, row, 1), NULL, 10);
        if (org != NULL && org->generation == generation)
            continue;
        if (org != NULL)
            s->held_changed[org - s->held->orgs] = true;
        s->changed[s->changed_count++] = org_id;
    }
    for (size_t i = 0; !s->moved_only && i < held; i++) {
        const struct snapshot_catalog_org *org = &s->held->orgs[i];
        if (rowindex_first(&s->gens_by_org, org->id) < 0 && org->generation != s->out->generation) {
            s->held_changed[i] = true;
            s->changed[s->changed_count++] = org->id;
        }
    }
    qsort(s->changed, s->changed_count, sizeof *s->changed, compare_ids);
    return 0;
}

/*
 * With a held catalog whole at a generation, only the organizations past
 * it are asked for (sql/0020 indexes config_org_generation.generation): a
 * change reads a row or two, not one per organization. A database whose
 * generation is below the catalog's went back (restored): every row is
 * read again, in the same transaction, and compared.
 */
static int read_org_generations(struct source *s, uint64_t since)
{
    if ((s->gens = next_result(s, Q_ORG_GENERATIONS)) == NULL)
        return -1;
    dbsync_finish_pipeline(s->conn); /* its sync point */
    if (!s->moved_only || s->out->generation >= since)
        return 0;
    log_info("snapshot: the database's generation %llu is below the index's %llu:"
             " every organization is compared",
             (unsigned long long)s->out->generation, (unsigned long long)since);
    PQclear(s->gens);
    s->gens = NULL;
    s->moved_only = false;
    if (send_queries(s, Q_ORG_GENERATIONS, Q_ORG_GENERATIONS + 1, NULL) != 0 ||
        (s->gens = next_result(s, Q_ORG_GENERATIONS)) == NULL)
        return -1;
    dbsync_finish_pipeline(s->conn);
    return 0;
}

static int read_first_step(struct source *s)
{
    PGresult *res;
    uint64_t since = s->held != NULL ? s->held->generation : 0;
    char since_text[24];
    snprintf(since_text, sizeof since_text, "%llu", (unsigned long long)since);
    s->moved_only = since > 0;
    if (send_queries(s, Q_BEGIN, Q_FIRST_OF_ORGS, s->moved_only ? since_text : NULL) != 0 ||
        (res = next_result(s, Q_BEGIN)) == NULL)
        return -1;
    PQclear(res);
    if ((res = next_result(s, Q_GENERATION)) == NULL)
        return -1;
    int rc = parse_generation(res, &s->out->generation, s->err, s->errlen);
    PQclear(res);
    if (rc != 0 || read_org_generations(s, since) != 0)
        return -1;
    s->out->generation_rows = (size_t)PQntuples(s->gens);
    if (rowindex_build(&s->gens_by_org, s->gens, 0) != 0) {
        fail(s, "organization generations", "out of memory");
        return -1;
    }
    return choose_changed(s);
}

/* ---- the new catalog: the unchanged organizations' records and the
 * changed ones' rows, merged in organization order ---- */

struct merge {
    size_t held;    /* next organization of s->held */
    size_t changed; /* next of s->changed */
    int env_row;    /* next row of s->environments */
};

/* The next unchanged organization of held, or NULL. */
static const struct snapshot_catalog_org *next_unchanged(const struct source *s, struct merge *m)
{
    for (; s->held != NULL && m->held < s->held->org_count; m->held++)
        if (!s->held_changed[m->held])
            return &s->held->orgs[m->held];
    return NULL;
}

/* The smallest of three ids (NULL: none). */
static const char *smallest(const char *a, const char *b, const char *c)
{
    const char *min = a;
    if (b != NULL && (min == NULL || strcmp(b, min) < 0))
        min = b;
    if (c != NULL && (min == NULL || strcmp(c, min) < 0))
        min = c;
    return min;
}

/* Appends an organization with environments to out->orgs; one read again
 * gets its builder later (open_builders), from its environment rows. */
static void add_result_org(struct source *s, const char *org_id, uint64_t generation, bool read,
                           int env_row)
{
    struct snapshot_source_org *org = &s->out->orgs[s->out->org_count];
    memcpy(org->id, org_id, strlen(org_id) + 1);
    org->generation = generation;
    org->builder = NULL;
    org->read = read;
    s->org_env_rows[s->out->org_count] = env_row;
    s->out->org_count++;
}

/* Gives each organization of out->orgs [first, last) that is read again its
 * builder, with its environments: only a batch's builders exist at once. */
static int open_builders(struct source *s, size_t first, size_t last)
{
    const PGresult *res = s->environments;
    int rows = PQntuples(res);
    for (size_t i = first; i < last; i++) {
        struct snapshot_source_org *org = &s->out->orgs[i];
        if (!org->read || org->builder != NULL || org->written)
            continue;
        struct snapshot_builder *b = snapshot_builder_new(org->generation);
        if ((org->builder = b) == NULL) {
            fail(s, "environments", "out of memory");
            return -1;
        }
        for (int row = s->org_env_rows[i]; row < rows && s->env_orgs[row] == i; row++)
            if (snapshot_builder_add_environment(b, value(res, row, E_ID), org->id,
                                                 value(res, row, E_KEY)) != 0)
                note_skipped(s, b, "environments");
    }
    return 0;
}

/* The catalog records and the builder of one organization read again:
 * its environment rows (from m->env_row, while they are of org_id) and
 * their SDK keys. */
static int add_changed_org(struct source *s, struct merge *m, const char *org_id)
{
    struct snapshot_catalog *cat = &s->out->catalog;
    uint64_t generation = org_generation(&s->gens_by_org, org_id, s->out->generation);
    if (snapshot_catalog_add_org(cat, org_id, generation) != 0)
        return -1;
    PGresult *res = s->environments;
    int rows = PQntuples(res);
    if (m->env_row >= rows || strcmp(value(res, m->env_row, E_ORG), org_id) != 0)
        return 0; /* no environments: recorded, no part */
    add_result_org(s, org_id, generation, true, m->env_row);
    for (; m->env_row < rows && strcmp(value(res, m->env_row, E_ORG), org_id) == 0; m->env_row++) {
        const char *id = value(res, m->env_row, E_ID), *key = value(res, m->env_row, E_KEY);
        s->env_orgs[m->env_row] = s->out->org_count - 1;
        if (snapshot_catalog_add_env(cat, id, key) != 0)
            return -1;
        for (int k = rowindex_first(&s->keys_by_env, id); k >= 0;
             k = rowindex_next(&s->keys_by_env, k))
            if (snapshot_catalog_add_key(cat, value(s->sdk_keys, k, 0), id) != 0)
                return -1;
    }
    return 0;
}

static int merge_step(struct source *s, struct merge *m)
{
    const struct snapshot_catalog_org *unchanged = next_unchanged(s, m);
    const char *changed = m->changed < s->changed_count ? s->changed[m->changed] : NULL;
    const char *env_org =
        m->env_row < PQntuples(s->environments) ? value(s->environments, m->env_row, E_ORG) : NULL;
    const char *next = smallest(unchanged != NULL ? unchanged->id : NULL, changed, env_org);
    if (unchanged != NULL && strcmp(next, unchanged->id) == 0) {
        m->held++;
        if (snapshot_catalog_copy_org(&s->out->catalog, s->held, unchanged) != 0)
            return -1;
        if (unchanged->env_count > 0)
            add_result_org(s, unchanged->id, unchanged->generation, false, -1);
        return 0;
    }
    if (changed != NULL && strcmp(next, changed) == 0)
        m->changed++;
    return add_changed_org(s, m, next);
}

/* ---- a patch: the changed organizations' environments and keys are as
 * held, only their generations moved ---- */

/* Whether held's organization org records the SDK key digest of env_id. */
static bool held_has_key(const struct snapshot_catalog *held,
                         const struct snapshot_catalog_org *org, const char *digest,
                         const char *env_id)
{
    for (size_t i = org->key_first; i < org->key_first + org->key_count; i++)
        if (strcmp(snapshot_catalog_text(held, held->keys[i].digest), digest) == 0 &&
            strcmp(snapshot_catalog_text(held, held->keys[i].env_id), env_id) == 0)
            return true;
    return false;
}

/* Whether the environment rows of org (from *row on, which it passes) and
 * their SDK keys are what held records of it. */
static bool same_as_held(const struct source *s, const struct snapshot_catalog_org *org, int *row)
{
    const PGresult *res = s->environments;
    int rows = PQntuples(res);
    size_t envs = 0, keys = 0;
    bool same = true;
    for (; *row < rows && strcmp(value(res, *row, E_ORG), org->id) == 0; ++*row, envs++) {
        const char *id = value(res, *row, E_ID);
        const struct snapshot_catalog_env *held = &s->held->envs[org->env_first + envs];
        same = same && envs < org->env_count &&
               strcmp(id, snapshot_catalog_text(s->held, held->id)) == 0 &&
               strcmp(value(res, *row, E_KEY), snapshot_catalog_text(s->held, held->key)) == 0;
        for (int k = rowindex_first(&s->keys_by_env, id); same && k >= 0;
             k = rowindex_next(&s->keys_by_env, k), keys++)
            same = held_has_key(s->held, org, value(s->sdk_keys, k, 0), id);
    }
    return same && envs == org->env_count && keys == org->key_count;
}

/* Whether every changed organization is held with the environments and
 * keys read now (rows of no other organization were read). */
static bool patchable(const struct source *s)
{
    int row = 0;
    for (size_t i = 0; i < s->changed_count; i++) {
        const struct snapshot_catalog_org *org = snapshot_catalog_find(s->held, s->changed[i]);
        if (org == NULL || !same_as_held(s, org, &row))
            return false;
    }
    return row == PQntuples(s->environments);
}

/* A patch: out->orgs is every changed organization (read again when it has
 * environments), out->catalog and out->index are not made. */
static void make_patch(struct source *s)
{
    const PGresult *res = s->environments;
    int row = 0, rows = PQntuples(res);
    for (size_t i = 0; i < s->changed_count; i++) {
        const char *org_id = s->changed[i];
        bool has_envs = row < rows && strcmp(value(res, row, E_ORG), org_id) == 0;
        add_result_org(s, org_id, org_generation(&s->gens_by_org, org_id, s->out->generation),
                       has_envs, has_envs ? row : -1);
        for (; row < rows && strcmp(value(res, row, E_ORG), org_id) == 0; row++)
            s->env_orgs[row] = s->out->org_count - 1;
    }
    s->out->patch = true;
}

/* Builds out->catalog, out->orgs and out->index, or a patch. */
static int merge_catalog(struct source *s)
{
    int rows = PQntuples(s->environments);
    size_t held = s->held != NULL ? s->held->org_count : 0,
           cap = held + s->changed_count + (size_t)rows + 1;
    s->out->orgs = calloc(cap, sizeof *s->out->orgs);
    s->org_env_rows = calloc(cap, sizeof *s->org_env_rows);
    s->env_orgs = calloc((size_t)rows + 1, sizeof *s->env_orgs);
    if (s->out->orgs == NULL || s->org_env_rows == NULL || s->env_orgs == NULL ||
        rowindex_build(&s->env_ids, s->environments, E_ID) != 0 ||
        rowindex_build(&s->keys_by_env, s->sdk_keys, 1) != 0) {
        fail(s, "environments", "out of memory");
        return -1;
    }
    if (s->patch && s->held != NULL && patchable(s)) {
        make_patch(s);
        return 0;
    }
    struct merge m = {0};
    for (;;) {
        bool more =
            next_unchanged(s, &m) != NULL || m.changed < s->changed_count || m.env_row < rows;
        if (!more)
            break;
        if (merge_step(s, &m) != 0) {
            if (s->err[0] == '\0')
                fail(s, "environments", "out of memory or out of order");
            return -1;
        }
    }
    if ((s->out->index = snapshot_builder_new(s->out->generation)) == NULL ||
        snapshot_catalog_fill(&s->out->catalog, s->out->index, &s->skipped) != 0) {
        fail(s, "the index", "out of memory");
        return -1;
    }
    return 0;
}

/* ---- small results ---- */

typedef void (*row_fn)(struct source *s, const PGresult *res, int row);

static void add_attribute(struct source *s, const PGresult *res, int row)
{
    struct snapshot_builder *b = org_builder(s, value(res, row, 0));
    if (b != NULL &&
        snapshot_builder_add_entity_attribute(b, value(res, row, 0), value(res, row, 1),
                                              value(res, row, 2), value(res, row, 3)) != 0)
        note_skipped(s, b, "entity attributes");
}

static void add_segment(struct source *s, const PGresult *res, int row)
{
    struct snapshot_builder *b = org_builder(s, value(res, row, 0));
    if (b != NULL && snapshot_builder_add_segment(b, value(res, row, 0), value(res, row, 1),
                                                  value(res, row, 2)) != 0)
        note_skipped(s, b, "segments");
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int run_step(struct source *s, enum query q, row_fn add)
{
    PGresult *res = next_result(s, q);
    if (res == NULL)
        return -1;
    long long started = now_ms();
    int rows = PQntuples(res);
    for (int row = 0; row < rows; row++)
        add(s, res, row);
    log_debug("snapshot: %d rows of %s added in %lld ms", rows, queries[q].what,
              now_ms() - started);
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

/* The variants of flag_id in s->scratch, their count returned (-1: out of
 * memory). Those of the flag before are still there when it is the same
 * one (a batch's configurations come flag by flag): the rules' collection
 * in between writes s->rows only. */
static long variants_of(struct source *s, const char *flag_id)
{
    if (s->variants_count >= 0 && strcmp(s->variants_flag, flag_id) == 0)
        return s->variants_count;
    long n = collect_rows(s, &s->variants_by_flag, flag_id, 0, NULL, compare_variant_rows);
    for (long i = 0; i < n; i++) {
        s->scratch[i].key = PQgetvalue(s->variants, s->rows[i], V_KEY);
        s->scratch[i].value_json = PQgetvalue(s->variants, s->rows[i], V_VALUE);
    }
    s->variants_count = strlen(flag_id) < sizeof s->variants_flag ? n : -1;
    if (s->variants_count >= 0)
        memcpy(s->variants_flag, flag_id, strlen(flag_id) + 1);
    return n;
}

/* Adds the rules of one flag configuration to b, in evaluation order. */
static int add_rules_of(struct source *s, struct snapshot_builder *b, const char *flag_id,
                        const char *env_id, const char *flag_key)
{
    long n = collect_rows(s, &s->rules_by_flag, flag_id, R_ENV, env_id, compare_rule_rows);
    if (n < 0)
        return -1;
    const PGresult *res = s->rules;
    for (long i = 0; i < n; i++) {
        int row = s->rows[i];
        if (snapshot_builder_add_rule(b, env_id, flag_key, value(res, row, R_ID),
                                      value(res, row, R_CONDITIONS), value(res, row, R_SERVE)) != 0)
            note_skipped(s, b, "rules");
    }
    return 0;
}

/* Adds one flag configuration row to its organization's builder (if that
 * organization is read again); -1 with *refused set to the builder that
 * refused it, or NULL when out of memory. */
/* The builder of the chunk covering key in the range read under way. */
static struct snapshot_builder *chunk_builder(const struct chunk_target *t, const char *key)
{
    const struct snapshot_source_chunks *c = t->chunks;
    size_t lo = 0, hi = c->count; /* the last first key <= key is in [lo, hi) */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(c->items[mid].first_key, key) <= 0)
            lo = mid;
        else
            hi = mid;
    }
    return c->count > 0 ? c->items[lo].builder : NULL;
}

static int add_flag(struct source *s, const PGresult *res, int row, const char *key,
                    const char *type, struct snapshot_builder **refused)
{
    const char *flag_id = value(res, row, F_ID), *env_id = value(res, row, F_ENV);
    struct snapshot_builder *b = s->target != NULL
                                     ? (key != NULL ? chunk_builder(s->target, key) : NULL)
                                     : env_builder(s, env_id);
    *refused = NULL;
    if (b == NULL)
        return 0;
    long n = variants_of(s, flag_id);
    if (n < 0)
        return -1;
    const char *enabled = value(res, row, F_ENABLED);
    struct snapshot_flag_input flag = {
        .env_id = env_id,
        .flag_id = flag_id,
        .flag_key = key,
        .type = type,
        .enabled = enabled != NULL && enabled[0] == 't',
        .off_variant_key = value(res, row, F_OFF),
        .default_serve_json = value(res, row, F_DEFAULT),
        .variants = s->scratch,
        .variant_count = (size_t)n,
    };
    if (snapshot_builder_add_flag(b, &flag) != 0) {
        *refused = b;
        return -1;
    }
    return add_rules_of(s, b, flag_id, env_id, flag.flag_key);
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

/* The flag configurations of a batch read whole, flag by flag in the
 * order of the batch's flag rows (batch_flag_rows_sql), each with its
 * flag's key and type from them. That order, not the configurations', is
 * the one the variants and rules come in, and the builders take the rows
 * about twice as fast in it (their lookups walk memory in order). */
static int add_batch_flags(struct source *s)
{
    PGresult *res = next_result(s, Q_FLAGS), *flags = s->batch->results[BATCH_FLAG_ROWS];
    struct rowindex by_flag;
    if (rowindex_build(&by_flag, res, F_ID) != 0) {
        fail(s, "flags", "out of memory");
        PQclear(res);
        return -1;
    }
    int count = PQntuples(flags);
    for (int flag = 0; flag < count; flag++)
        for (int row = rowindex_first(&by_flag, PQgetvalue(flags, flag, 0)); row >= 0;
             row = rowindex_next(&by_flag, row)) {
            struct snapshot_builder *refused;
            if (add_flag(s, res, row, PQgetvalue(flags, flag, 1), PQgetvalue(flags, flag, 2),
                         &refused) != 0)
                note_skipped(s, refused, "flags");
        }
    rowindex_free(&by_flag);
    PQclear(res);
    return 0;
}

/* The flag configurations come one row at a time (single-row mode), so the
 * builder works while PostgreSQL is still sending them; those of a batch
 * were read whole (batch_read.h). */
static int stream_flags(struct source *s)
{
    long long started = now_ms();
    int rows = 0;
    if (s->batch != NULL)
        return add_batch_flags(s);
    if (PQsetSingleRowMode(s->conn) != 1) { /* for the query whose results come next */
        fail(s, "flags", "cannot switch to single-row mode");
        return -1;
    }
    for (;;) {
        PGresult *res = PQgetResult(s->conn);
        ExecStatusType status = PQresultStatus(res);
        if (res != NULL && status == PGRES_SINGLE_TUPLE) {
            struct snapshot_builder *refused;
            if (add_flag(s, res, 0, value(res, 0, F_KEY), value(res, 0, F_TYPE), &refused) != 0)
                note_skipped(s, refused, "flags");
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
    s->variants_count = -1; /* none in s->scratch yet */
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

/* Prepares generation_statement on conn; NULL (and *error) or the result.
 * Already prepared (a read failed after an earlier prepare) is fine. */
static PGresult *prepare_generation(PGconn *conn, struct dbsync_error *error)
{
    PGresult *res = PQprepare(conn, generation_statement, generation_sql, 0, NULL);
    if (PQresultStatus(res) == PGRES_COMMAND_OK)
        return res;
    dbsync_error_from_result(error, res, conn);
    if (dbsync_error_is(error, "42P05")) /* duplicate_prepared_statement */
        return res;
    PQclear(res);
    return NULL;
}

static PGresult *exec_generation(PGconn *conn, struct dbsync_error *error)
{
    PGresult *res = PQexecPrepared(conn, generation_statement, 0, NULL, NULL, NULL, 0);
    if (PQresultStatus(res) == PGRES_TUPLES_OK)
        return res;
    dbsync_error_from_result(error, res, conn);
    PQclear(res);
    return NULL;
}

int snapshot_source_generation(PGconn *conn, bool prepare, uint64_t *out, char *err, size_t errlen)
{
    struct dbsync_error error;
    PGresult *res = prepare ? prepare_generation(conn, &error) : NULL;
    if (!prepare || res != NULL) {
        PQclear(res);
        res = exec_generation(conn, &error);
    }
    if (res == NULL) {
        snprintf(err, errlen, "reading the configuration generation: %s", error.message);
        return -1;
    }
    int rc = parse_generation(res, out, err, errlen);
    PQclear(res);
    return rc;
}

/* Hands each built part of orgs [first, last) of out->orgs to part_done,
 * then frees its builder. */
static int hand_over(struct source *s, size_t first, size_t last)
{
    for (size_t i = first; i < last; i++) {
        struct snapshot_source_org *org = &s->out->orgs[i];
        if (org->builder == NULL)
            continue;
        org->flag_count = snapshot_builder_flag_count(org->builder);
        if (s->part_done(s->part_ctx, org, s->err, s->errlen) != 0)
            return -1;
        snapshot_builder_free(org->builder);
        org->builder = NULL;
        org->written = true;
    }
    return 0;
}

/* The flag count of each organization read again, by organization id
 * (a result the caller PQclears), or NULL. */
static PGresult *flag_counts(struct source *s, const char *orgs)
{
    const char *params[1] = {orgs};
    struct dbsync_error error;
    PGresult *res = dbsync_exec(s->conn,
                                "SELECT org_id, count(*) FROM flags"
                                " WHERE org_id = ANY($1::uuid[]) GROUP BY org_id",
                                1, params, &error);
    if (res == NULL)
        fail(s, "flag counts", error.message);
    return res;
}

/* ---- chunks of a large organization (doc/choices.md "Chunks of a large
 * organization") ---- */

/* The flag ids of one organization's key range: $1 the organization, $2
 * the first key, $3 the key after the range (NULL: none), in byte order. */
#define RANGE_FLAG_IDS                                                                             \
    "SELECT id FROM flags WHERE org_id = $1::uuid AND key COLLATE \"C\" >= $2::text"               \
    " AND ($3::text IS NULL OR key COLLATE \"C\" < $3::text)"

static const char range_keys_sql[] =
    "SELECT key FROM flags WHERE org_id = $1::uuid AND key COLLATE \"C\" >= $2::text"
    " AND ($3::text IS NULL OR key COLLATE \"C\" < $3::text) ORDER BY key COLLATE \"C\"";
static const char changed_keys_sql[] = "SELECT flag_key FROM config_flag_generation"
                                       " WHERE org_id = $1::uuid AND generation > $2::bigint";
/* Variants, rules and flag configurations of a range, as Q_VARIANTS,
 * Q_RULES and Q_FLAGS answer them. */
static const char *const range_rows_sql[] = {
    "SELECT v.flag_id, v.key, v.value::text, v.sort_order FROM variants v"
    " WHERE v.flag_id = ANY (ARRAY(" RANGE_FLAG_IDS "))",
    "SELECT r.flag_id, r.environment_id, r.id, r.conditions::text, r.serve::text,"
    " r.priority, (extract(epoch FROM r.created_at) * 1000000)::bigint"
    " FROM rules r WHERE r.flag_id = ANY (ARRAY(" RANGE_FLAG_IDS "))",
    "WITH f AS MATERIALIZED (SELECT id, key, type FROM flags WHERE org_id = $1::uuid"
    " AND key COLLATE \"C\" >= $2::text AND ($3::text IS NULL OR key COLLATE \"C\" < $3::text))"
    " SELECT fe.environment_id, f.id, f.key, f.type, fe.enabled,"
    " fe.off_variant_key, fe.default_serve::text"
    " FROM flag_environments fe JOIN f ON f.id = fe.flag_id"
    " WHERE fe.flag_id = ANY (ARRAY(SELECT id FROM f))",
};

void snapshot_source_chunks_free(struct snapshot_source_chunks *c)
{
    for (size_t i = 0; i < c->count; i++) {
        free(c->items[i].first_key);
        snapshot_builder_free(c->items[i].builder);
    }
    free(c->items);
    c->items = NULL;
    c->count = 0;
}

/* Appends a chunk from first_key (copied), kept (extent and generation of
 * held) or read again (held NULL; its builder made later). */
static int append_chunk(struct snapshot_source_chunks *c, size_t *cap, const char *first_key,
                        const struct snapshot_source_chunk *held)
{
    if (c->count == *cap) {
        size_t grown = *cap ? *cap * 2 : 8;
        void *items = realloc(c->items, grown * sizeof *c->items);
        if (items == NULL)
            return -1;
        c->items = items;
        *cap = grown;
    }
    struct snapshot_source_chunk *chunk = &c->items[c->count];
    memset(chunk, 0, sizeof *chunk);
    if ((chunk->first_key = strdup(first_key)) == NULL)
        return -1;
    if (held != NULL) {
        chunk->kept = true;
        chunk->pack = held->pack;
        chunk->offset = held->offset;
        chunk->length = held->length;
        chunk->generation = held->generation;
    }
    c->count++;
    return 0;
}

static PGresult *run_query(struct source *s, const char *what, const char *sql, int n,
                           const char *const *params)
{
    struct dbsync_error error;
    PGresult *res = dbsync_exec(s->conn, sql, n, params, &error);
    if (res == NULL)
        fail(s, what, error.message);
    return res;
}

/* Appends the chunks the flags of org in [from, to) make now: pieces of
 * the chunk size (snapshot_chunks.h), none when it holds no flag. */
static int plan_range(struct source *s, const char *org, const char *from, const char *to,
                      struct snapshot_source_chunks *out, size_t *cap)
{
    const char *params[3] = {org, from, to};
    PGresult *keys = run_query(s, "flag keys", range_keys_sql, 3, params);
    if (keys == NULL)
        return -1;
    size_t count = (size_t)PQntuples(keys), size = s->chunking->size;
    size_t pieces = count == 0 ? 0 : (size > 0 ? snapshot_chunks_pieces(count, size) : 1);
    int rc = 0;
    for (size_t p = 0; rc == 0 && p < pieces; p++)
        rc = append_chunk(out, cap, p == 0 ? from : PQgetvalue(keys, (int)(p * size), 0), NULL);
    PQclear(keys);
    if (rc != 0)
        fail(s, "flag keys", "out of memory");
    return rc;
}

/* The chunk of held covering each changed key of org since generation. */
static int touched_chunks(struct source *s, const char *org, uint64_t since,
                          const struct snapshot_source_chunks *held, bool *touched)
{
    char since_text[24];
    snprintf(since_text, sizeof since_text, "%llu", (unsigned long long)since);
    const char *params[2] = {org, since_text};
    PGresult *keys = run_query(s, "changed flags", changed_keys_sql, 2, params);
    if (keys == NULL)
        return -1;
    for (int row = 0; row < PQntuples(keys); row++) {
        const char *key = PQgetvalue(keys, row, 0);
        size_t lo = 0, hi = held->count;
        while (hi - lo > 1) {
            size_t mid = lo + (hi - lo) / 2;
            if (strcmp(held->items[mid].first_key, key) <= 0)
                lo = mid;
            else
                hi = mid;
        }
        touched[lo] = true;
    }
    PQclear(keys);
    return 0;
}

/* The chunks of org now: only the touched chunks of held planned again
 * (incremental), or every one. The first starts at "". */
static int plan_chunks(struct source *s, const char *org, const struct snapshot_source_chunks *held,
                       bool incremental, uint64_t since, struct snapshot_source_chunks *out)
{
    size_t cap = 0;
    if (!incremental) {
        if (plan_range(s, org, "", NULL, out, &cap) != 0)
            return -1;
    } else {
        bool *touched = calloc(held->count, sizeof *touched);
        if (touched == NULL || touched_chunks(s, org, since, held, touched) != 0) {
            free(touched);
            return -1;
        }
        int rc = 0;
        for (size_t i = 0; rc == 0 && i < held->count; i++) {
            const char *to = i + 1 < held->count ? held->items[i + 1].first_key : NULL;
            rc = touched[i] ? plan_range(s, org, held->items[i].first_key, to, out, &cap)
                            : append_chunk(out, &cap, held->items[i].first_key, &held->items[i]);
        }
        free(touched);
        if (rc != 0)
            return -1;
    }
    if (out->count == 0 && append_chunk(out, &cap, "", NULL) != 0)
        return -1;                            /* no flag at all: one empty chunk */
    if (out->items[0].first_key[0] != '\0') { /* the first chunk was dropped */
        free(out->items[0].first_key);
        out->items[0].first_key = strdup("");
        if (out->items[0].first_key == NULL)
            return -1;
    }
    return 0;
}

/* A builder for org (index i of out->orgs) with its environments, and the
 * attribute and segment rows (NULL: none) added. */
static struct snapshot_builder *chunk_builder_new(struct source *s, size_t i, const PGresult *attrs,
                                                  const PGresult *segments)
{
    struct snapshot_source_org *org = &s->out->orgs[i];
    struct snapshot_builder *b = snapshot_builder_new(org->generation);
    const PGresult *envs = s->environments;
    if (b == NULL)
        return NULL;
    for (int row = s->org_env_rows[i]; row < PQntuples(envs) && s->env_orgs[row] == i; row++)
        if (snapshot_builder_add_environment(b, value(envs, row, E_ID), org->id,
                                             value(envs, row, E_KEY)) != 0)
            note_skipped(s, b, "environments");
    for (int row = 0; attrs != NULL && row < PQntuples(attrs); row++)
        if (snapshot_builder_add_entity_attribute(b, org->id, value(attrs, row, 1),
                                                  value(attrs, row, 2), value(attrs, row, 3)) != 0)
            note_skipped(s, b, "entity attributes");
    for (int row = 0; segments != NULL && row < PQntuples(segments); row++)
        if (snapshot_builder_add_segment(b, org->id, value(segments, row, 1),
                                         value(segments, row, 2)) != 0)
            note_skipped(s, b, "segments");
    return b;
}

/* Reads the flags of chunks [first, last) of org (all read again) with
 * one range query of each kind, each row to the chunk covering its key. */
static int read_range(struct source *s, struct snapshot_source_org *org, size_t first, size_t last)
{
    const struct snapshot_source_chunks *c = &org->chunks;
    const char *params[3] = {org->id, c->items[first].first_key,
                             last < c->count ? c->items[last].first_key : NULL};
    if (PQpipelineStatus(s->conn) == PQ_PIPELINE_OFF && PQenterPipelineMode(s->conn) != 1) {
        fail(s, "a chunk", PQerrorMessage(s->conn));
        return -1;
    }
    for (size_t q = 0; q < sizeof range_rows_sql / sizeof range_rows_sql[0]; q++)
        if (PQsendQueryParams(s->conn, range_rows_sql[q], 3, NULL, params, NULL, NULL, 0) != 1) {
            fail(s, "a chunk", PQerrorMessage(s->conn));
            PQpipelineSync(s->conn);
            dbsync_finish_pipeline(s->conn);
            return -1;
        }
    if (PQpipelineSync(s->conn) != 1) {
        fail(s, "a chunk", PQerrorMessage(s->conn));
        return -1;
    }
    struct chunk_target target = {c};
    s->target = &target;
    int rc = read_flags(s);
    s->target = NULL;
    dbsync_finish_pipeline(s->conn);
    return rc;
}

/* The attribute or segment rows of one organization (query q's `some`
 * form), or NULL with s->err set. */
static PGresult *org_rows(struct source *s, enum query q, const char *org_id)
{
    char array[sizeof((struct snapshot_source_org *)0)->id + 3];
    snprintf(array, sizeof array, "{%s}", org_id);
    const char *params[1] = {array};
    return run_query(s, queries[q].what, queries[q].some, 1, params);
}

/* Builders for the header of org (environments only) and for each chunk
 * read again (environments, attributes, segments). */
static int open_chunk_builders(struct source *s, size_t i)
{
    struct snapshot_source_org *org = &s->out->orgs[i];
    PGresult *attrs = org_rows(s, Q_ATTRIBUTES, org->id);
    PGresult *segments = attrs != NULL ? org_rows(s, Q_SEGMENTS, org->id) : NULL;
    int rc = segments != NULL ? 0 : -1;
    if (rc == 0 && (org->builder = chunk_builder_new(s, i, NULL, NULL)) == NULL)
        rc = -1;
    for (size_t c = 0; rc == 0 && c < org->chunks.count; c++) {
        struct snapshot_source_chunk *chunk = &org->chunks.items[c];
        if (chunk->kept)
            continue;
        if ((chunk->builder = chunk_builder_new(s, i, attrs, segments)) == NULL)
            rc = -1;
        org->chunks_read++;
    }
    if (rc != 0 && s->err[0] == '\0')
        fail(s, "a chunk", "out of memory");
    PQclear(attrs);
    PQclear(segments);
    return rc;
}

/*
 * Reads chunked organization i of out->orgs: plans its chunks (only the
 * touched ones again when the caller holds its chunks and nothing but
 * flags changed since), and reads the flags of the chunks read again, one
 * range query per run of them.
 */
static int read_chunked(struct source *s, size_t i)
{
    struct snapshot_source_org *org = &s->out->orgs[i];
    struct snapshot_source_chunks held = {0};
    if (s->chunking->held != NULL && s->chunking->held(s->chunking->ctx, org->id, &held) != 0) {
        fail(s, "held chunks", "out of memory");
        return -1;
    }
    const struct snapshot_catalog_org *cat =
        s->held != NULL ? snapshot_catalog_find(s->held, org->id) : NULL;
    uint64_t since = cat != NULL ? cat->generation : 0;
    int row = rowindex_first(&s->gens_by_org, org->id);
    uint64_t whole = row >= 0 ? strtoull(PQgetvalue(s->gens, row, 2), NULL, 10) : UINT64_MAX;
    bool incremental = held.count > 0 && since > 0 && whole <= since;
    int rc = plan_chunks(s, org->id, &held, incremental, since, &org->chunks);
    snapshot_source_chunks_free(&held);
    if (rc == 0)
        rc = open_chunk_builders(s, i);
    for (size_t a = 0; rc == 0 && a < org->chunks.count;) {
        size_t b = a;
        while (b < org->chunks.count && org->chunks.items[b].builder != NULL)
            b++;
        if (b > a)
            rc = read_range(s, org, a, b);
        a = b > a ? b : a + 1;
    }
    org->flag_count = 0;
    for (size_t c = 0; rc == 0 && c < org->chunks.count; c++)
        if (org->chunks.items[c].builder != NULL)
            org->flag_count += snapshot_builder_flag_count(org->chunks.items[c].builder);
    log_info("snapshot: organization %s in %zu chunks, %zu read again (%s, %zu flag"
             " configurations)",
             org->id, org->chunks.count, org->chunks_read, incremental ? "changed flags" : "whole",
             org->flag_count);
    return rc;
}

/* Whether the caller publishes org in chunks. */
static bool held_in_chunks(struct source *s, const char *org)
{
    struct snapshot_source_chunks held = {0};
    if (s->chunking == NULL || s->chunking->held == NULL ||
        s->chunking->held(s->chunking->ctx, org, &held) != 0)
        return false; /* out of memory: counted, and read in chunks if large */
    bool chunked = held.count > 0;
    snapshot_source_chunks_free(&held);
    return chunked;
}

/* Reads and hands over each organization of chunked (count of them,
 * indexes of out->orgs), freeing its builders. */
static int read_chunked_orgs(struct source *s, const size_t *chunked, size_t count)
{
    for (size_t k = 0; k < count; k++) {
        struct snapshot_source_org *org = &s->out->orgs[chunked[k]];
        if (read_chunked(s, chunked[k]) != 0 ||
            s->part_done(s->part_ctx, org, s->err, s->errlen) != 0)
            return -1;
        snapshot_builder_free(org->builder);
        org->builder = NULL;
        for (size_t c = 0; c < org->chunks.count; c++) {
            snapshot_builder_free(org->chunks.items[c].builder);
            org->chunks.items[c].builder = NULL;
        }
        org->written = true;
    }
    return 0;
}

/* One batch: organizations [first, last) of out->orgs, those read again
 * named in ids (an array literal). */
struct batch_plan {
    size_t first, last, orgs;
    long long flags;
    char *ids;
};

static void free_plan(struct batch_plan *plan, size_t count)
{
    for (size_t i = 0; plan != NULL && i < count; i++)
        free(plan[i].ids);
    free(plan);
}

/*
 * Cuts the organizations with a builder into batches of at most
 * SNAPSHOT_SOURCE_BATCH_FLAGS flags or SNAPSHOT_SOURCE_BATCH_ORGS
 * organizations (or one organization larger than that), their flags
 * counted first. The batches in *plan (the caller frees it with
 * free_plan), their number in *count; 0 or -1.
 */
static int plan_batches(struct source *s, const char **ids, size_t *chunked, size_t *chunked_count,
                        struct batch_plan **plan, size_t *count)
{
    size_t n = s->out->org_count, reading = 0;
    for (size_t i = 0; i < n; i++)
        if (s->out->orgs[i].read)
            ids[reading++] = s->out->orgs[i].id;
    char *all = id_array(ids, reading);
    PGresult *counts = all != NULL ? flag_counts(s, all) : NULL;
    struct rowindex by_org = {0};
    *count = 0;
    *plan = calloc(reading + 1, sizeof **plan);
    int rc = counts != NULL && *plan != NULL && rowindex_build(&by_org, counts, 0) == 0 ? 0 : -1;
    for (size_t i = 0; rc == 0 && s->chunking != NULL && i < n; i++) {
        int row = s->out->orgs[i].read ? rowindex_first(&by_org, s->out->orgs[i].id) : -1;
        size_t flags = row >= 0 ? (size_t)atoll(PQgetvalue(counts, row, 1)) : 0;
        if (row >= 0 && snapshot_chunks_wanted(flags, s->chunking->size)) {
            s->out->orgs[i].read = false; /* not in the batches: read in chunks */
            chunked[(*chunked_count)++] = i;
        }
    }
    for (size_t first = 0; rc == 0 && first < n;) {
        struct batch_plan *b = &(*plan)[*count];
        size_t last = first;
        b->first = first;
        for (; last < n && (b->orgs == 0 || (b->flags < SNAPSHOT_SOURCE_BATCH_FLAGS &&
                                             b->orgs < SNAPSHOT_SOURCE_BATCH_ORGS));
             last++) {
            if (!s->out->orgs[last].read)
                continue;
            int row = rowindex_first(&by_org, s->out->orgs[last].id);
            b->flags += row >= 0 ? atoll(PQgetvalue(counts, row, 1)) : 0;
            ids[b->orgs++] = s->out->orgs[last].id;
        }
        b->last = first = last;
        if (b->orgs > 0 && (b->ids = id_array(ids, b->orgs)) == NULL)
            rc = -1;
        if (b->orgs > 0)
            (*count)++;
    }
    if (rc != 0 && s->err[0] == '\0')
        fail(s, "the configuration", "out of memory");
    rowindex_free(&by_org);
    PQclear(counts);
    free(all);
    return rc;
}

/*
 * A batch's flag configurations by environment, without their flags' key
 * and type (the same columns as the flags query's, those two NULL), and its
 * flags' rows apart: a batch names hundreds of organizations and tens of
 * thousands of flags, and finding the configurations through
 * flag_environments_environment_idx takes a descent of the index per
 * environment (three per organization) where the `some` form's `flag_id =
 * ANY` takes one per flag, and the join that repeats each flag's key and
 * type on its three rows cost PostgreSQL more than the rows it adds to.
 * The client joins the two (add_batch_flags): the server's time is less
 * than half (doc/choices.md "The first build's read"). A configuration
 * joins a flag and an environment of one organization: the same rows.
 */
static const char batch_configurations_sql[] =
    "SELECT fe.environment_id, fe.flag_id, NULL, NULL, fe.enabled,"
    " fe.off_variant_key, fe.default_serve::text FROM flag_environments fe"
    " WHERE fe.environment_id = ANY (ARRAY(SELECT id FROM environments"
    " WHERE org_id = ANY($1::uuid[])))";
static const char batch_flag_rows_sql[] =
    "SELECT id, key, type FROM flags WHERE org_id = ANY($1::uuid[])";

/* Starts reading the rows of one batch on s->conn, on a thread. */
static void start_batch(struct source *s, struct batch_read *r, const struct batch_plan *b)
{
    memset(r, 0, sizeof *r);
    r->conn = s->conn;
    for (enum query q = Q_ATTRIBUTES; q < Q_COUNT; q++)
        r->sql[r->count++] = q == Q_FLAGS ? batch_configurations_sql : queries[q].some;
    r->sql[r->count++] = batch_flag_rows_sql; /* at BATCH_FLAG_ROWS */
    r->arg = b->ids;
    batch_read_start(r);
}

/* Builds the parts of a batch read whole (r) and hands them to part_done. */
static int build_batch(struct source *s, struct batch_read *r, const struct batch_plan *b)
{
    if (open_builders(s, b->first, b->last) != 0) {
        batch_read_clear(r);
        return -1;
    }
    s->batch = r;
    int rc = run_step(s, Q_ATTRIBUTES, add_attribute) == 0 &&
                     run_step(s, Q_SEGMENTS, add_segment) == 0 && read_flags(s) == 0
                 ? 0
                 : -1;
    s->batch = NULL;
    batch_read_clear(r);
    return rc == 0 ? hand_over(s, b->first, b->last) : -1;
}

/*
 * Reads the organizations with a builder a batch at a time, handing each
 * batch's parts to part_done before the next is built. Each batch is read
 * whole on a thread (batch_read.h) while the one before it is built: the
 * server computes the next batch while the client builds this one. The
 * rows held at once are two batches' (one built, one read), and the
 * builders one batch's.
 */
static int read_in_batches(struct source *s)
{
    size_t n = s->out->org_count, count = 0, chunked_count = 0;
    const char **ids = malloc((n ? n : 1) * sizeof *ids);
    size_t *chunked = malloc((n ? n : 1) * sizeof *chunked);
    struct batch_plan *plan = NULL;
    struct batch_read reads[2];
    int rc = ids != NULL && chunked != NULL ? 0 : -1;
    if (rc != 0)
        fail(s, "the configuration", "out of memory");
    /* an organization held in chunks is read in chunks without counting
     * its flags (a count grows with the organization, not the change) */
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (s->out->orgs[i].read && held_in_chunks(s, s->out->orgs[i].id)) {
            s->out->orgs[i].read = false;
            chunked[chunked_count++] = i;
        }
    if (rc == 0 && plan_batches(s, ids, chunked, &chunked_count, &plan, &count) != 0)
        rc = -1;
    if (rc == 0 && count > 0)
        start_batch(s, &reads[0], &plan[0]);
    for (size_t i = 0; rc == 0 && i < count; i++) {
        struct batch_read *r = &reads[i % 2], *next = &reads[(i + 1) % 2];
        long long started = now_ms();
        if (batch_read_finish(r) != 0) {
            fail(s, r->failed < BATCH_FLAG_ROWS ? queries[Q_ATTRIBUTES + r->failed].what : "flags",
                 r->message);
            batch_read_clear(r);
            rc = -1;
            break;
        }
        long long read = now_ms();
        if (i + 1 < count)
            start_batch(s, next, &plan[i + 1]); /* the server works while this is built */
        rc = build_batch(s, r, &plan[i]);
        log_info("snapshot: a batch of %zu organizations (%lld flags) waited for %lld ms,"
                 " built and its parts written in %lld ms",
                 plan[i].orgs, plan[i].flags, read - started, now_ms() - read);
        if (rc != 0 && i + 1 < count) { /* the connection is the thread's until it ends */
            batch_read_finish(next);
            batch_read_clear(next);
        }
    }
    if (rc == 0 && chunked_count > 0) /* the batches' thread has ended */
        rc = read_chunked_orgs(s, chunked, chunked_count);
    free(chunked);
    free_plan(plan, count);
    free(ids);
    return rc;
}

/* The environments and SDK keys of the organizations read again (all of
 * them without a catalog), then, if any has environments, their rows: in
 * the same pipeline when they are few or the caller writes the parts after
 * the read, else in batches. */
static int read_second_step(struct source *s)
{
    bool every_org = s->held == NULL;
    if (!every_org && s->changed_count == 0) { /* nothing moved: only the global generation */
        s->environments = PQmakeEmptyPGresult(s->conn, PGRES_TUPLES_OK);
        s->sdk_keys = PQmakeEmptyPGresult(s->conn, PGRES_TUPLES_OK);
        if (s->environments == NULL || s->sdk_keys == NULL) {
            fail(s, "the configuration", "out of memory");
            return -1;
        }
        return merge_catalog(s);
    }
    char *orgs = every_org ? NULL : id_array(s->changed, s->changed_count);
    if (!every_org && orgs == NULL) {
        fail(s, "the configuration", "out of memory");
        return -1;
    }
    bool many = every_org || s->changed_count > SNAPSHOT_SOURCE_BATCH_ORGS / 16;
    /* chunking reads the flag counts of the batches' path even for a few */
    bool batches = s->part_done != NULL && (many || s->chunking != NULL);
    s->patch = s->patch && !(s->part_done != NULL && many);
    int rc = send_queries(s, Q_FIRST_OF_ORGS, batches ? Q_ATTRIBUTES : Q_COUNT, orgs);
    if (rc != 0 || (s->environments = next_result(s, Q_ENVIRONMENTS)) == NULL ||
        (s->sdk_keys = next_result(s, Q_SDK_KEYS)) == NULL || merge_catalog(s) != 0)
        rc = -1;
    else if (batches) {
        dbsync_finish_pipeline(s->conn);
        rc = read_in_batches(s);
    } else if (open_builders(s, 0, s->out->org_count) != 0) {
        rc = -1;
    } else {
        rc = run_step(s, Q_ATTRIBUTES, add_attribute) == 0 &&
                     run_step(s, Q_SEGMENTS, add_segment) == 0 && read_flags(s) == 0
                 ? 0
                 : -1;
        if (rc == 0 && s->part_done != NULL) {
            dbsync_finish_pipeline(s->conn);
            rc = hand_over(s, 0, s->out->org_count);
        }
    }
    free(orgs);
    return rc;
}

int snapshot_source_read(PGconn *conn, const struct snapshot_catalog *held, bool patch,
                         snapshot_source_part_fn part_done, void *part_ctx,
                         const struct snapshot_source_chunking *chunking,
                         struct snapshot_source_result *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    snapshot_catalog_init(&out->catalog);
    err[0] = '\0';
    struct source s = {
        .conn = conn,
        .chunking = part_done != NULL && chunking != NULL && chunking->size > 0 ? chunking : NULL,
        .part_done = part_done,
        .part_ctx = part_ctx,
        .out = out,
        .held = held,
        .patch = patch,
        .err = err,
        .errlen = errlen};
    int rc = read_first_step(&s) == 0 && read_second_step(&s) == 0 ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < out->org_count; i++)
        if (out->orgs[i].builder != NULL)
            out->orgs[i].flag_count = snapshot_builder_flag_count(out->orgs[i].builder);
    if (rc == 0 && out->catalog.failed) {
        fail(&s, "the configuration", "out of memory");
        rc = -1;
    }
    if (rc == 0)
        out->catalog.generation = out->generation;
    dbsync_finish_pipeline(conn);
    rowindex_free(&s.gens_by_org);
    rowindex_free(&s.env_ids);
    rowindex_free(&s.keys_by_env);
    PQclear(s.gens);
    PQclear(s.environments);
    PQclear(s.sdk_keys);
    free(s.changed);
    free(s.held_changed);
    free(s.env_orgs);
    free(s.org_env_rows);
    free(s.scratch);
    free(s.rows);
    dbsync_rollback(conn); /* read only: nothing to commit */
    if (s.skipped > 1)
        log_warn("snapshot: %zu rows skipped in all", s.skipped);
    if (rc != 0)
        snapshot_source_result_free(out);
    return rc;
}

void snapshot_source_result_free(struct snapshot_source_result *r)
{
    snapshot_builder_free(r->index);
    for (size_t i = 0; i < r->org_count; i++) {
        snapshot_builder_free(r->orgs[i].builder);
        snapshot_source_chunks_free(&r->orgs[i].chunks);
    }
    free(r->orgs);
    snapshot_catalog_free(&r->catalog);
    memset(r, 0, sizeof *r);
}
