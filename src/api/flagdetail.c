/*
 * flagdetail.c - the body of GET /v1/orgs/{org}/flags/{key}, written in C
 * from FLAGDETAIL_SQL's rows (see flagdetail.h).
 *
 * Owns the detail statement and its JSON form. The flag, its variants and
 * its environments (with their rules) stay JSON built by PostgreSQL with
 * the record forms of sql/0002 (one row, a few items each); the revisions,
 * up to 100 of them, come as plain rows and are written here: building a
 * jsonb per revision (to_char, jsonb_build_object, json_agg) was what made
 * a flag with a long history cost more than one with 5 revisions.
 *
 * Invariants: the body is the one json_build_object('flag', ...,
 * 'revisions', json_agg(ensign_revision_json(r)), 'variants', ...,
 * 'environments', ...) wrote, byte for byte: " : " after the top-level
 * names, the revision members in jsonb's order (keys by length, then
 * bytes), strings escaped as PostgreSQL escapes them, createdAt as
 * ensign_iso() writes it.
 *
 * Called by flags.c (flags_get).
 */
#include "flagdetail.h"

#include <string.h>

#include "jsonout.h"

/* clang-format off */

#define FLAGDETAIL_FLAG_SQL                                                                        \
    "  FROM flags f WHERE f.org_id = $1::uuid AND f.key = $2"

const char FLAGDETAIL_SQL[] =
    "SELECT 0 AS kind, ensign_flag_detail_json(f),"
    "       COALESCE((SELECT json_agg(ensign_variant_json(v)"
    "                                 ORDER BY v.sort_order, v.created_at, v.id)"
    "                   FROM variants v WHERE v.flag_id = f.id), '[]'),"
    "       COALESCE((SELECT json_agg(ensign_flag_environment_json(fe, e)"
    "                                 ORDER BY e.sort_order, e.key)"
    "                   FROM flag_environments fe"
    "                   JOIN environments e ON e.id = fe.environment_id"
    "                  WHERE fe.flag_id = f.id), '[]'),"
    "       NULL::uuid, NULL::text, NULL::text, NULL::jsonb, NULL::text, NULL::timestamptz"
    FLAGDETAIL_FLAG_SQL
    " UNION ALL "
    "(SELECT 1, NULL, NULL, NULL, r.id, r.action, r.summary, to_jsonb(r.changes), r.user_name,"
    "        r.created_at"
    "   FROM revisions r"
    "  WHERE r.flag_id = (SELECT f.id" FLAGDETAIL_FLAG_SQL ")"
    "  ORDER BY r.created_at DESC, r.id DESC"
    "  LIMIT 100)"
    " ORDER BY 1, 10 DESC, 5 DESC";

/* clang-format on */

enum {
    COL_KIND,
    COL_FLAG,
    COL_VARIANTS,
    COL_ENVIRONMENTS,
    COL_REV_ID,
    COL_REV_ACTION,
    COL_REV_SUMMARY,
    COL_REV_CHANGES,
    COL_REV_USER_NAME,
    COL_REV_CREATED_AT,
    COL_COUNT
};

static bool row_is(const PGresult *res, int row, const char *kind)
{
    return strcmp(PQgetvalue(res, row, COL_KIND), kind) == 0;
}

static void put_revision(struct jsonout *pb, const PGresult *res, int row)
{
    jsonout_put(pb, "{");
    jsonout_key(pb, "id", true);
    jsonout_text(pb, res, row, COL_REV_ID);
    jsonout_key(pb, "action", false);
    jsonout_text(pb, res, row, COL_REV_ACTION);
    jsonout_key(pb, "changes", false);
    jsonout_raw(pb, res, row, COL_REV_CHANGES);
    jsonout_key(pb, "summary", false);
    jsonout_text(pb, res, row, COL_REV_SUMMARY);
    jsonout_key(pb, "userName", false);
    jsonout_text(pb, res, row, COL_REV_USER_NAME);
    jsonout_key(pb, "createdAt", false);
    jsonout_time(pb, res, row, COL_REV_CREATED_AT);
    jsonout_put(pb, "}");
}

/* About the body's size: the columns' bytes, twice for escapes, and the
 * member names of each revision. */
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
    if (PQnfields(res) != COL_COUNT || rows == 0 || !row_is(res, 0, "0"))
        return NULL;
    struct jsonout body;
    struct jsonout *pb = &body;
    if (!jsonout_init(pb, estimated_size(res)))
        return NULL;
    jsonout_put(pb, "{\"flag\" : ");
    jsonout_raw(pb, res, 0, COL_FLAG);
    jsonout_put(pb, ", \"revisions\" : [");
    for (int row = 1; row < rows; row++) {
        if (!row_is(res, row, "1"))
            pb->failed = true;
        if (row > 1)
            jsonout_put(pb, ", ");
        put_revision(pb, res, row);
    }
    jsonout_put(pb, "], \"variants\" : ");
    jsonout_raw(pb, res, 0, COL_VARIANTS);
    jsonout_put(pb, ", \"environments\" : ");
    jsonout_raw(pb, res, 0, COL_ENVIRONMENTS);
    jsonout_put(pb, "}");
    return jsonout_finish(pb);
}
