/*
 * flaglist.h - the flag list's statement and its JSON body (GET
 * /v1/orgs/{org}/flags, doc/api.md): each flag
 * with its creator's and maintainer's names, its production value and its
 * usage summary (total, lastSeenAt, checksPerHour, series of 24 hourly
 * counts oldest first; null until anything was counted) and why it is
 * stale (null, or {since, reason}); page by page (limit, cursor, q).
 *
 * Called by flags.c.
 */
#ifndef ENSIGN_FLAGLIST_H
#define ENSIGN_FLAGLIST_H

#include <libpq-fe.h>
#include <stdbool.h>

/* Page sizes of the list (doc/api.md: 1 to 1,000, default 1,000). */
#define FLAGLIST_LIMIT_DEFAULT 1000
#define FLAGLIST_LIMIT_MAX 1000

/* A q of this many characters or more is looked up in the trigram index
 * (sql/0019); a shorter one has no trigram and is tested flag by flag. */
#define FLAGLIST_TRIGRAM 3

/*
 * The page statement for a request: the active or the archived flags, q
 * ("" none), only the stale ones or all. Its parameters: pagination.h's
 * $1 route pattern, $2 scope, $3 q, $4 cursor, $5 limit + 1, then $6 the
 * org id, $7 stale_after_days as an interval of seconds ("2592000
 * seconds"), $8 the horizon: now minus stale_after_days ("2026-10-28
 * 01:02:03+00"). Plain rows ordered by key, at most limit + 1.
 */
const char *flaglist_statement(bool archived, const char *q, bool stale_only);

/* The next page's cursor in a page's result, or NULL when the page is
 * the last (the result holds at most limit rows). Points into res. */
const char *flaglist_next_cursor(const PGresult *res, int limit);

/* The body {"flags": [...]} of the first limit rows of a page statement's
 * result (caller frees), or NULL when out of memory or the result has
 * other columns. */
char *flaglist_json(const PGresult *res, int limit);

#endif
