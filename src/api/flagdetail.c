/*
 * flagdetail.c - the body of GET /v1/orgs/{org}/flags/{key}, written in C
 * from FLAGDETAIL_SQL's rows (see flagdetail.h).
 *
 * Owns the detail statement and its JSON form. The flag and its variants
 * stay JSON built by PostgreSQL with the record forms of sql/0002 (one
 * row, a few items); the revisions are the flag's page of sql/0010 (the
 * newest 20 since sql/0011, as finished JSON text kept by a trigger on
 * every insert of revisions), copied as they are; the environments' configurations and
 * their rules come as plain rows and are written here. A jsonb per
 * revision and per rule (to_char, jsonb_build_object, json_agg) was most
 * of a detail's execution, and 100 revision rows (fetched, sent and
 * written one by one) what made a flag with a long history cost more
 * than one with 5 revisions; the page is one value however long the
 * history (doc/choices.md, "Flag detail").
 *
 * Invariants: the body is the one json_build_object('flag', ...,
 * 'revisions', json_agg(ensign_revision_json(r)), 'variants', ...,
 * 'environments', json_agg(ensign_flag_environment_json(fe, e))) wrote,
 * byte for byte: " : " after the top-level names, members in jsonb's order
 * (keys by length, then bytes), JSON columns (conditions, serve, default
 * serve) as jsonb's text, strings escaped as PostgreSQL escapes them,
 * timestamps as ensign_iso() writes them; the page is that json_agg's own
 * text ('[]' for a flag without revisions, which has no page).
 *
 * Called by flags.c (flags_get).
 */
#include "api/flagdetail.h"

#include <stdbool.h>
#include <string.h>

#include "mgmt/jsonout.h"

/* clang-format off */

/*
 * Rows: kind, ord (the order within the kind), then text columns a..h:
 *   0 the flag: a its detail JSON with stale (sql/0015), b its variants' JSON array, c its
 *     revisions' JSON array (the page of sql/0010)
 *   1 an environment's configuration: a environment id, b key, c name,
 *     d enabled, e default variant key, f default serve (JSON), g off
 *     variant key
 *   2 a rule: a environment id, b id, c priority, d description,
 *     e conditions (JSON), f serve (JSON), g created at, h updated at
 * ordered by kind and ord: the environments by sort order and key, the
 * rules by their environment's order and then evaluation order
 * (priority, created at, id). The flag's id reaches the rules as a scalar
 * (an InitPlan), so even the generic plan of the prepared statement looks
 * them up by that id rather than joining.
 */
const char FLAGDETAIL_SQL[] =
    "WITH fl AS (SELECT f.id FROM flags f WHERE f.org_id = $1::uuid AND f.key = $2)"
    " SELECT 0 AS kind, 0::bigint AS ord,"
    "        (ensign_flag_detail_json(f)"
    "         || jsonb_build_object('stale',"
    "                               ensign_flag_stale_json(f, $3::interval, $4::timestamptz)))::text,"
    "        COALESCE((SELECT json_agg(ensign_variant_json(v)"
    "                                  ORDER BY v.sort_order, v.created_at, v.id)"
    "                    FROM variants v WHERE v.flag_id = f.id), '[]')::text,"
    "        COALESCE((SELECT p.page FROM flag_revision_pages p WHERE p.flag_id = f.id), '[]'),"
    "        NULL, NULL, NULL, NULL, NULL"
    "   FROM fl JOIN flags f ON f.id = fl.id"
    " UNION ALL"
    " SELECT 1, row_number() OVER (ORDER BY e.sort_order, e.key), e.id::text, e.key, e.name,"
    "        fe.enabled::text, fe.default_serve ->> 'variant', fe.default_serve::text,"
    "        fe.off_variant_key, NULL"
    "   FROM fl JOIN flag_environments fe ON fe.flag_id = fl.id"
    "   JOIN environments e ON e.id = fe.environment_id"
    " UNION ALL"
    " SELECT 2, row_number() OVER (ORDER BY e.sort_order, e.key, r.priority, r.created_at, r.id),"
    "        e.id::text, r.id::text, r.priority::text, r.description, r.conditions::text,"
    "        r.serve::text, r.created_at::text, r.updated_at::text"
    "   FROM rules r JOIN environments e ON e.id = r.environment_id"
    "  WHERE r.flag_id = (SELECT fl.id FROM fl)"
    " ORDER BY 1, 2";

/* clang-format on */

enum { COL_KIND, COL_ORD, COL_A, COL_B, COL_C, COL_D, COL_E, COL_F, COL_G, COL_H, COL_COUNT };

enum { KIND_FLAG, KIND_ENVIRONMENT, KIND_RULE };

static int kind_of(const PGresult *res, int row)
{
    return PQgetvalue(res, row, COL_KIND)[0] - '0';
}

/* One member of an object being written: "name": column col as a kind of value. */
struct member {
    const char *name;
    int col;
    enum { TEXT, RAW, TIME } as;
};

static void put_object(struct jsonout *pb, const PGresult *res, int row,
                       const struct member *members, size_t n)
{
    jsonout_put(pb, "{");
    for (size_t i = 0; i < n; i++) {
        jsonout_key(pb, members[i].name, i == 0);
        if (members[i].as == TEXT)
            jsonout_text(pb, res, row, members[i].col);
        else if (members[i].as == TIME)
            jsonout_time(pb, res, row, members[i].col);
        else
            jsonout_raw(pb, res, row, members[i].col);
    }
    jsonout_put(pb, "}");
}

/* The members in jsonb's order (keys by length, then bytes), as
 * ensign_rule_json wrote them. */
static const struct member rule_members[] = {
    {"id", COL_B, TEXT},          {"serve", COL_F, RAW},      {"priority", COL_C, RAW},
    {"createdAt", COL_G, TIME},   {"updatedAt", COL_H, TIME}, {"conditions", COL_E, RAW},
    {"description", COL_D, TEXT},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/*
 * The environment of row env as ensign_flag_environment_json wrote it, its
 * rules those from *rule on that belong to it (the rule rows follow the
 * environments' order); *rule is left at the first rule of a later one.
 */
static void put_environment(struct jsonout *pb, const PGresult *res, int env, int *rule)
{
    const char *env_id = PQgetvalue(res, env, COL_A);
    jsonout_put(pb, "{");
    jsonout_key(pb, "key", true);
    jsonout_text(pb, res, env, COL_B);
    jsonout_key(pb, "name", false);
    jsonout_text(pb, res, env, COL_C);
    jsonout_key(pb, "rules", false);
    jsonout_put(pb, "[");
    for (int first = *rule; *rule < PQntuples(res) && kind_of(res, *rule) == KIND_RULE &&
                            strcmp(PQgetvalue(res, *rule, COL_A), env_id) == 0;
         (*rule)++) {
        if (*rule > first)
            jsonout_put(pb, ", ");
        put_object(pb, res, *rule, rule_members, COUNT(rule_members));
    }
    jsonout_put(pb, "]");
    jsonout_key(pb, "enabled", false);
    jsonout_raw(pb, res, env, COL_D);
    jsonout_key(pb, "defaultServe", false);
    jsonout_raw(pb, res, env, COL_F);
    jsonout_key(pb, "offVariantKey", false);
    jsonout_text(pb, res, env, COL_G);
    jsonout_key(pb, "defaultVariantKey", false);
    jsonout_text(pb, res, env, COL_E);
    jsonout_put(pb, "}");
}

static void put_environments(struct jsonout *pb, const PGresult *res, int *row)
{
    int envs = *row, rule = *row;
    while (rule < PQntuples(res) && kind_of(res, rule) == KIND_ENVIRONMENT)
        rule++;
    jsonout_put(pb, "[");
    for (int env = envs; env < PQntuples(res) && kind_of(res, env) == KIND_ENVIRONMENT; env++) {
        if (env > envs)
            jsonout_put(pb, ", ");
        put_environment(pb, res, env, &rule);
    }
    jsonout_put(pb, "]");
    *row = rule;
}

/* About the body's size: the columns' bytes, twice for escapes, and the
 * member names of each row. */
static size_t estimated_size(const PGresult *res)
{
    size_t size = 128;
    for (int row = 0; row < PQntuples(res); row++) {
        for (int col = 0; col < COL_COUNT; col++)
            size += 2 * (size_t)PQgetlength(res, row, col);
        size += 128;
    }
    return size;
}

char *flagdetail_json(const PGresult *res)
{
    int rows = PQntuples(res);
    if (PQnfields(res) != COL_COUNT || rows == 0 || kind_of(res, 0) != KIND_FLAG)
        return NULL;
    struct jsonout body;
    struct jsonout *pb = &body;
    if (!jsonout_init(pb, estimated_size(res)))
        return NULL;
    int row = 1;
    jsonout_put(pb, "{\"flag\" : ");
    jsonout_raw(pb, res, 0, COL_A);
    jsonout_put(pb, ", \"revisions\" : ");
    jsonout_raw(pb, res, 0, COL_C);
    jsonout_put(pb, ", \"variants\" : ");
    jsonout_raw(pb, res, 0, COL_B);
    jsonout_put(pb, ", \"environments\" : ");
    put_environments(pb, res, &row);
    jsonout_put(pb, "}");
    if (row != rows) /* a rule of no environment: not the shape this writes */
        pb->failed = true;
    return jsonout_finish(pb);
}
