/*
 * flaglist.h - the flag list's statement and its JSON body (GET
 * /v1/orgs/{org}/flags, doc/api.md): each flag
 * with its creator's and maintainer's names, its production value and its
 * usage summary (total, lastSeenAt, checksPerHour, series of 24 hourly
 * counts oldest first; null until anything was counted) and why it is
 * stale (null, or {since, reason}).
 *
 * Called by flags.c.
 */
#ifndef ENSIGN_FLAGLIST_H
#define ENSIGN_FLAGLIST_H

#include <libpq-fe.h>

/* $1 org id, $2 "t" for the archived flags, else the active ones, $3
 * stale_after_days as an interval of seconds ("2592000 seconds"), $4 the
 * horizon: now minus stale_after_days ("2026-10-28 01:02:03+00"). Plain
 * rows, ordered by key. */
extern const char FLAGLIST_SQL[];

/* The same with the stale flags only (?stale=true). */
extern const char FLAGLIST_STALE_SQL[];

/* The body {"flags": [...]} of FLAGLIST_SQL's result (caller frees), or
 * NULL when out of memory or the result has other columns. */
char *flaglist_json(const PGresult *res);

#endif
