/*
 * flagdetail.h - the flag detail's statement and its JSON body (GET
 * /v1/orgs/{org}/flags/{key}, doc/api.md): the
 * flag with its creator's and maintainer's names and why it is stale, its newest 20
 * revisions (newest first, ties by id; the whole history is
 * flagrevisions.c's), its variants and its configuration in every
 * environment with the rules in evaluation order.
 *
 * Called by flags.c.
 */
#ifndef ENSIGN_FLAGDETAIL_H
#define ENSIGN_FLAGDETAIL_H

#include <libpq-fe.h>

/* $1 org id, $2 flag key, $3 stale_after_days as an interval of seconds
 * and $4 the horizon, as flaglist.h's. No rows when there is no such flag; else the
 * flag's row (kind 0, with its revisions' page) and then one row per
 * environment (kind 1) and per rule (kind 2). */
extern const char FLAGDETAIL_SQL[];

/* The body {"flag", "revisions", "variants", "environments"} of
 * FLAGDETAIL_SQL's rows (caller frees), or NULL when out of memory or the
 * result has another shape (no rows included: the caller answers 404). */
char *flagdetail_json(const PGresult *res);

#endif
