/*
 * flaglist.c - the body of GET /v1/orgs/{org}/flags, written in C from the
 * plain rows of FLAGLIST_SQL (see flaglist.h).
 *
 * Owns the list statement and its JSON form. PostgreSQL builds no JSON per
 * item (a jsonb per flag, merged and aggregated, was about a third of a
 * 1,000-flag list's time; the 24 usage rows per flag most of the rest, now
 * one row of sql/0008's roll-up): it returns columns, and this file writes
 * them once into one buffer. The members and their order are those the
 * jsonb of the former statement gave (keys by length, then bytes), so the
 * body is the same JSON, byte for byte.
 *
 * Invariants: text columns are escaped as PostgreSQL's JSON output escapes
 * them; columns that are JSON already (tags, value) and the total are
 * copied as PostgreSQL wrote them; checksPerHour is written as
 * round(sum / 24.0, 2) writes it; timestamps come as plain timestamptz
 * and are written as ensign_iso() writes them (jsonout.h, pgtime.h):
 * to_char in 4,000 rows was a third of the statement's execution.
 *
 * Pages (doc/choices.md "The flag list pages"): every statement is a
 * keyset page on the key (the cursor of pagination.h holds the last key
 * shown) of at most limit + 1 rows; the body holds the first limit, so an
 * organization of at most limit flags answers the body it always did. One
 * statement text per kind of request (active or archived, q none, short
 * or indexed, stale or not): each is prepared once per session and keeps
 * the plan its own conditions ask for.
 *
 * Called by flags.c (flags_list).
 */
#include "api/flaglist.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mgmt/jsonout.h"
#include "mgmt/pagination.h"
#include "mgmt/validate.h"

/* clang-format off */

/*
 * The usage summary of a flag, from the roll-ups of sql/0002 and 0008:
 * none until anything was counted (no flag_usage_totals row); the 24
 * hourly counts of flag_usage_series (one row per flag; as the text
 * sql/0009 keeps beside them) and how many hours its newest hour lies
 * behind the current one. When the newest hour is ahead of the current one
 * (a clock ahead), the 24 hours up to the current one are read from
 * flag_usage_hours instead (ensign_usage_counts of sql/0008, behind 0).
 * enabledIn lists the keys of the environments where the flag is on (the
 * dashboard's per-row switch), as the JSON text sql/0022 keeps on the flag
 * (three index scans per flag before: two thirds of a page's execution).
 * The production default's value is the one sql/0012 keeps on the flag
 * (NULL for a rollout: no value; three joins per flag before); the tags
 * come as the JSON text sql/0009 keeps beside them. Why and since when
 * the flag is stale comes from columns the row has already (sql/0015:
 * created_at, the usage total's last_seen_at, flags.rolled_out_since kept
 * by triggers): two inlined expressions per row, no subquery.
 */
/* The current hour, as an uncorrelated scalar subquery: PostgreSQL
 * computes it once per statement (an InitPlan) rather than once per row
 * and use (3,000 date_trunc calls with a time zone lookup each were a
 * sixth of a 1,000-flag list's execution). */
#define CURRENT_HOUR "(SELECT date_trunc('hour', now(), 'UTC'))"

/* The horizon (now minus stale_after_days) comes as a parameter: computed
 * per row and use, now() - interval was most of what stale added (0.2 ms
 * of 0.3 ms for 1,000 flags). */
#define STALE_ARGUMENTS                                                                            \
    "f.permanent, f.created_at, ut.last_seen_at, f.rolled_out_since, $8::timestamptz"
#define STALE_REASON "ensign_stale_reason(" STALE_ARGUMENTS ")"

/* One index probe per flag of the page, whatever plan PostgreSQL makes
 * (LATERAL, OFFSET 0 so that it stays a subquery): as plain joins, the
 * plan made knowing the page's 1,001 rows read the whole of both tables
 * into hashes (27,000 flags with usage, load 5.5: 1,334 buffers and 13 ms
 * instead of 4.5; with every flag of every organization counted, millions
 * of rows per page). The series only for a flag with a total. */
#define USAGE_SQL                                                                                  \
    "LEFT JOIN LATERAL (SELECT ut.* FROM flag_usage_totals ut"                                     \
    "                    WHERE ut.flag_id = f.id OFFSET 0) AS ut ON true "                         \
    "LEFT JOIN LATERAL (SELECT s.* FROM flag_usage_series s"                                       \
    "                    WHERE s.flag_id = f.id AND ut.flag_id IS NOT NULL OFFSET 0) AS s ON true "

/*
 * The page (pagination.h's $1 route, $2 scope, $3 q, $4 cursor, $5 limit
 * + 1; then $6 org id, $7 stale_after_days as an interval, $8 the
 * horizon). The keyset is the key: the cursor carries the last key shown,
 * the first page starts after ''. CTE pg picks the page's flags (in key
 * order, at most limit + 1, through an index); only those are then joined
 * to their names, usage and environments, so a search that matches
 * 100,000 flags joins 1,001 of them. The last column is the next page's
 * cursor on the limit-th row (NULL on the others).
 */
#define FLAGS_AFTER_CURSOR                                                                         \
    " FROM flags f LEFT JOIN flag_usage_totals ut ON ut.flag_id = f.id"                            \
    " WHERE f.org_id = $6::uuid AND f.key > " PAGE_KEY(1)

#define FLAGLIST_PAGE(which, search, stale)                                                        \
    PAGE_WITH_CURSOR("''") ","                                                                     \
    " pg AS MATERIALIZED (SELECT f.*" FLAGS_AFTER_CURSOR which search stale                        \
    "  ORDER BY f.key LIMIT $5::int)"

/*
 * A q of three characters or more: the walk in key order reads at most
 * SEARCH_WALK flags after the cursor (five pages' worth, at least 1,000: a
 * q that many flags match fills its page there); when the page is not
 * full and the walk did not reach the organization's last flag, the
 * trigram index finds the matches past the walk's last key (a q few flags
 * match), and the page is the first limit + 1 of both. Either way the work
 * is bounded by the walk or by the matches. SEARCH_WALK is an expression
 * of $5, not a constant, on purpose: the plan PostgreSQL keeps for the
 * prepared statement (generic: it assumes an organization of average size)
 * then still walks the key index in order rather than reading every flag
 * of the organization to sort them.
 */
#define SEARCH_WALK "greatest($5::int * 5, 1000)"
#define FLAGLIST_SEARCH_PAGE(which, stale)                                                         \
    PAGE_WITH_CURSOR("''") ","                                                                     \
    " w AS MATERIALIZED (SELECT f.id, f.key, (true " SEARCH_TEXT MATCH_EACH ") AS hit"\
    FLAGS_AFTER_CURSOR which stale " ORDER BY f.key LIMIT " SEARCH_WALK "),"                       \
    " wh AS MATERIALIZED (SELECT w.id, w.key FROM w WHERE w.hit ORDER BY w.key LIMIT $5::int),"     \
    " g AS MATERIALIZED (SELECT f.id, f.key" FLAGS_AFTER_CURSOR which stale                        \
    "   AND (SELECT count(*) FROM wh) < $5::int"                                                   \
    "   AND (SELECT count(*) FROM w) = " SEARCH_WALK                                               \
    "   AND f.key > (SELECT max(w.key) FROM w)" INDEXED_SEARCH "),"                                \
    " pg AS MATERIALIZED (SELECT f.* FROM flags f JOIN (SELECT id, key FROM wh UNION ALL"          \
    "   SELECT id, key FROM g ORDER BY key LIMIT $5::int) AS u ON u.id = f.id)"

#define FLAGLIST_SELECT                                                                            \
    " SELECT f.id, f.key, f.name, f.tags_json, f.type,"                                            \
    "       f.production_value,"                                                                   \
    "       f.created_at, f.permanent, f.updated_at,"                                              \
    "       f.archived_at, f.description, cu.name, mu.name,"                                       \
    "       f.created_by_user_id, f.maintainer_user_id,"                                           \
    "       ut.total, ut.last_seen_at,"                                                            \
    "       CASE WHEN s.newest_hour > " CURRENT_HOUR " THEN 0"                                     \
    "            ELSE (date_part('epoch', " CURRENT_HOUR " - s.newest_hour) / 3600)::bigint END,"  \
    "       CASE WHEN s.newest_hour > " CURRENT_HOUR                                                \
    "            THEN array_to_string(ensign_usage_counts(f.id, " CURRENT_HOUR "), ',')"          \
    "            ELSE s.counts_text END,"                                                          \
    "       " STALE_REASON ","                                                                     \
    "       ensign_stale_since(" STALE_ARGUMENTS ", $7::interval),"                                \
    "       f.enabled_in_json,"                                                                    \
    "       CASE WHEN row_number() OVER (ORDER BY f.key) = $5::int - 1"                            \
    "            THEN ensign_cursor_make($1, $2, $3, ARRAY[f.key]) END"                            \
    "  FROM pg AS f"                                                                               \
    "  LEFT JOIN users cu ON cu.id = f.created_by_user_id"                                         \
    "  LEFT JOIN users mu ON mu.id = f.maintainer_user_id "                                        \
    USAGE_SQL                                                                                      \
    " ORDER BY f.key"

/* Which flags: the active or the archived ones, in the text itself so that
 * the archived list uses its partial index (sql/0019). */
#define ACTIVE " AND f.archived_at IS NULL"
#define ARCHIVED " AND f.archived_at IS NOT NULL"

/* q in the key, the name or one tag (each tested on its own: MATCH_EACH),
 * first as one text (SEARCH_TEXT): the text of the trigram index of
 * sql/0019 for a q of three characters or more (INDEXED_SEARCH); a
 * shorter q has no trigram and tests a text the index does not hold, so
 * that no plan reads the whole index for it (SHORT_SEARCH). */
#define PATTERN "ensign_search_pattern($3)"
#define MATCH_EACH                                                                                 \
    " AND (lower(f.key) LIKE " PATTERN " OR lower(f.name) LIKE " PATTERN                           \
    "      OR EXISTS (SELECT FROM unnest(f.tags) AS t(tag) WHERE lower(t.tag) LIKE " PATTERN "))"
#define SEARCH_TEXT " AND ensign_flag_search_text(f.key, f.name, f.tags) LIKE " PATTERN
#define NO_SEARCH ""
#define SHORT_SEARCH                                                                               \
    " AND (f.key || E'\\n' || f.name || E'\\n' || array_to_string(f.tags, E'\\n')) ILIKE "         \
    PATTERN MATCH_EACH
#define INDEXED_SEARCH SEARCH_TEXT MATCH_EACH

#define ALL ""
#define STALE_ONLY " AND " STALE_REASON " IS NOT NULL"

#define FLAGLIST(which, search, stale) FLAGLIST_PAGE(which, search, stale) FLAGLIST_SELECT
#define FLAGLIST_SEARCH(which, stale) FLAGLIST_SEARCH_PAGE(which, stale) FLAGLIST_SELECT

/* [archived][search][stale], each text a prepared statement of its own
 * (db.c), so that each keeps the plan its conditions ask for. */
static const char *const statements[2][3][2] = {
    {{FLAGLIST(ACTIVE, NO_SEARCH, ALL), FLAGLIST(ACTIVE, NO_SEARCH, STALE_ONLY)},
     {FLAGLIST(ACTIVE, SHORT_SEARCH, ALL), FLAGLIST(ACTIVE, SHORT_SEARCH, STALE_ONLY)},
     {FLAGLIST_SEARCH(ACTIVE, ALL), FLAGLIST_SEARCH(ACTIVE, STALE_ONLY)}},
    {{FLAGLIST(ARCHIVED, NO_SEARCH, ALL), FLAGLIST(ARCHIVED, NO_SEARCH, STALE_ONLY)},
     {FLAGLIST(ARCHIVED, SHORT_SEARCH, ALL), FLAGLIST(ARCHIVED, SHORT_SEARCH, STALE_ONLY)},
     {FLAGLIST_SEARCH(ARCHIVED, ALL), FLAGLIST_SEARCH(ARCHIVED, STALE_ONLY)}},
};

/* clang-format on */

enum {
    COL_ID,
    COL_KEY,
    COL_NAME,
    COL_TAGS,
    COL_TYPE,
    COL_VALUE,
    COL_CREATED_AT,
    COL_PERMANENT,
    COL_UPDATED_AT,
    COL_ARCHIVED_AT,
    COL_DESCRIPTION,
    COL_CREATED_BY_NAME,
    COL_MAINTAINER_NAME,
    COL_CREATED_BY_USER_ID,
    COL_MAINTAINER_USER_ID,
    COL_USAGE_TOTAL,
    COL_USAGE_LAST_SEEN,
    COL_USAGE_BEHIND,
    COL_USAGE_COUNTS,
    COL_STALE_REASON,
    COL_STALE_SINCE,
    COL_ENABLED_IN,
    COL_CURSOR,
    COL_COUNT
};

#define HOURS 24

/* The counts of a list of bigints ("3,0,12", or array text "{3,0,12}") into out, at
 * most max; returns how many (strtoll's results for bigint values,
 * without its locale and errno work: 24,000 calls per list). */
static int parse_int_array(const char *text, long long *out, int max)
{
    int n = 0;
    const char *p = text[0] == '{' ? text + 1 : text;
    while (n < max) {
        bool negative = *p == '-';
        const char *digits = negative ? p + 1 : p;
        unsigned long long value = 0;
        for (p = digits; *p >= '0' && *p <= '9' && p - digits < 19; p++)
            value = value * 10 + (unsigned long long)(*p - '0'); /* bigint: 19 digits */
        if (p == digits || value > (unsigned long long)LLONG_MAX)
            break;
        out[n++] = negative ? -(long long)value : (long long)value;
        if (*p != ',')
            break;
        p++;
    }
    return n;
}

/*
 * The 24 hourly counts, oldest first (slot i is the hour 23 - i hours
 * before the current one), from the roll-up's counts whose newest hour is
 * behind hours before the current one.
 */
static void series_of(const PGresult *res, int row, long long series[HOURS])
{
    memset(series, 0, HOURS * sizeof series[0]);
    if (PQgetisnull(res, row, COL_USAGE_COUNTS) || PQgetisnull(res, row, COL_USAGE_BEHIND))
        return;
    long long counts[HOURS];
    int n = parse_int_array(PQgetvalue(res, row, COL_USAGE_COUNTS), counts, HOURS);
    long long behind = atoll(PQgetvalue(res, row, COL_USAGE_BEHIND));
    for (int i = 0; i < HOURS; i++) {
        long long j = i + behind;
        if (j >= 0 && j < n)
            series[i] = counts[j];
    }
}

static void put_series(struct jsonout *pb, const long long series[HOURS])
{
    for (int i = 0; i < HOURS; i++) {
        jsonout_put(pb, i ? ", " : "[");
        jsonout_count(pb, series[i]);
    }
    jsonout_put(pb, "]");
}

/* The mean per hour as round(total / 24.0, 2) writes it ("21.50"). */
static void put_per_hour(struct jsonout *pb, const long long series[HOURS])
{
    long long total = 0;
    for (int i = 0; i < HOURS; i++)
        total += series[i];
    long long hundredths = (total * 100 + HOURS / 2) / HOURS; /* counts are never negative */
    char number[48];
    snprintf(number, sizeof number, "%lld.%02lld", hundredths / 100, hundredths % 100);
    jsonout_put(pb, number);
}

static void put_usage(struct jsonout *pb, const PGresult *res, int row)
{
    if (PQgetisnull(res, row, COL_USAGE_TOTAL)) {
        jsonout_put(pb, "null");
        return;
    }
    long long series[HOURS];
    series_of(res, row, series);
    jsonout_put(pb, "{");
    jsonout_key(pb, "total", true);
    jsonout_raw(pb, res, row, COL_USAGE_TOTAL);
    jsonout_key(pb, "series", false);
    put_series(pb, series);
    jsonout_key(pb, "lastSeenAt", false);
    jsonout_time(pb, res, row, COL_USAGE_LAST_SEEN);
    jsonout_key(pb, "checksPerHour", false);
    put_per_hour(pb, series);
    jsonout_put(pb, "}");
}

/* null, or {"since": ..., "reason": ...} (jsonb's order, as the detail). */
static void put_stale(struct jsonout *pb, const PGresult *res, int row)
{
    if (PQgetisnull(res, row, COL_STALE_REASON)) {
        jsonout_put(pb, "null");
        return;
    }
    jsonout_put(pb, "{");
    jsonout_key(pb, "since", true);
    jsonout_time(pb, res, row, COL_STALE_SINCE);
    jsonout_key(pb, "reason", false);
    jsonout_text(pb, res, row, COL_STALE_REASON);
    jsonout_put(pb, "}");
}

/* Members written from several columns, in put_flag's table. */
enum { MEMBER_USAGE = -1, MEMBER_STALE = -2 };

static void put_flag(struct jsonout *pb, const PGresult *res, int row)
{
    static const struct {
        const char *name;
        int col;
        enum { TEXT, RAW, BOOL, TIME } kind;
    } members[] = {
        {"id", COL_ID, TEXT},
        {"key", COL_KEY, TEXT},
        {"name", COL_NAME, TEXT},
        {"tags", COL_TAGS, RAW},
        {"type", COL_TYPE, TEXT},
        {"stale", MEMBER_STALE, RAW},
        {"usage", MEMBER_USAGE, RAW},
        {"value", COL_VALUE, RAW},
        {"createdAt", COL_CREATED_AT, TIME},
        {"enabledIn", COL_ENABLED_IN, RAW},
        {"permanent", COL_PERMANENT, BOOL},
        {"updatedAt", COL_UPDATED_AT, TIME},
        {"archivedAt", COL_ARCHIVED_AT, TIME},
        {"description", COL_DESCRIPTION, TEXT},
        {"createdByName", COL_CREATED_BY_NAME, TEXT},
        {"maintainerName", COL_MAINTAINER_NAME, TEXT},
        {"createdByUserId", COL_CREATED_BY_USER_ID, TEXT},
        {"maintainerUserId", COL_MAINTAINER_USER_ID, TEXT},
    };
    jsonout_put(pb, "{");
    for (size_t i = 0; i < sizeof members / sizeof members[0]; i++) {
        jsonout_key(pb, members[i].name, i == 0);
        if (members[i].col == MEMBER_STALE)
            put_stale(pb, res, row);
        else if (members[i].col == MEMBER_USAGE)
            put_usage(pb, res, row);
        else if (members[i].kind == TEXT)
            jsonout_text(pb, res, row, members[i].col);
        else if (members[i].kind == TIME)
            jsonout_time(pb, res, row, members[i].col);
        else if (members[i].kind == BOOL && !PQgetisnull(res, row, members[i].col))
            jsonout_put(pb,
                        strcmp(PQgetvalue(res, row, members[i].col), "t") == 0 ? "true" : "false");
        else
            jsonout_raw(pb, res, row, members[i].col);
    }
    jsonout_put(pb, "}");
}

/* About the body's size (so the buffer grows rarely): the columns' bytes,
 * twice for escapes, and the member names and usage of each row. */
static size_t estimated_size(const PGresult *res)
{
    size_t size = 64;
    for (int row = 0; row < PQntuples(res); row++) {
        for (int col = 0; col < COL_COUNT; col++)
            size += (size_t)PQgetlength(res, row, col);
        size += 384;
    }
    return size;
}

/* The search a q asks: none, a walk testing each flag (no trigram in it),
 * or the trigram index. */
static int search_kind(const char *q)
{
    if (q[0] == '\0')
        return 0;
    return validate_utf8_length(q, strlen(q)) < FLAGLIST_TRIGRAM ? 1 : 2;
}

const char *flaglist_statement(bool archived, const char *q, bool stale_only)
{
    return statements[archived ? 1 : 0][search_kind(q)][stale_only ? 1 : 0];
}

const char *flaglist_next_cursor(const PGresult *res, int limit)
{
    if (PQnfields(res) != COL_COUNT || PQntuples(res) <= limit ||
        PQgetisnull(res, limit - 1, COL_CURSOR))
        return NULL;
    return PQgetvalue(res, limit - 1, COL_CURSOR);
}

char *flaglist_json(const PGresult *res, int limit)
{
    if (PQnfields(res) != COL_COUNT)
        return NULL;
    struct jsonout body;
    struct jsonout *pb = &body;
    if (!jsonout_init(pb, estimated_size(res)))
        return NULL;
    int rows = PQntuples(res) < limit ? PQntuples(res) : limit;
    jsonout_put(pb, "{\"flags\" : [");
    for (int row = 0; row < rows; row++) {
        if (row > 0)
            jsonout_put(pb, ", ");
        put_flag(pb, res, row);
    }
    jsonout_put(pb, "]}");
    return jsonout_finish(pb);
}
