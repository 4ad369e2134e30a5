/*
 * agent_catalog.h - what the agent knows of one organization: its flags
 * (key, type, archived, variant keys, usage), environments and segments,
 * read in one query (agent.c) and handed to the pure parts of the agent
 * (agent_parse.c, agent_tools.c) as a json-c object.
 *
 * The JSON shape (the SQL in agent.c builds exactly this):
 *   {"now": UNIX_SECONDS, "environments": [KEY, ...], "segments": [KEY, ...],
 *    "flags": [{"key", "name", "type", "archived": bool, "variants": [KEY, ...],
 *               "enabled": {ENV: bool}, "total": N, "idleDays": N|null,
 *               "served": {ENV: [VARIANT, ...]}}, ...]}
 * now is the database's clock (the parser reads times against it and
 * has no clock of its own); enabled each environment's switch; total is
 * every evaluation ever counted, idleDays whole days since the
 * last one (null: never), served the distinct variants served per
 * environment in the last AGENT_SERVED_DAYS days.
 *
 * Also owns the "closest existing key" rule used when a name is unknown:
 * Levenshtein distance at most 2 (at most 1 for names under 5 characters),
 * or one name a prefix of the other with at least 3 characters; ties go to
 * the first candidate in catalogue order.
 */
#ifndef ENSIGN_AGENT_CATALOG_H
#define ENSIGN_AGENT_CATALOG_H

#include <stdbool.h>
#include <json-c/json.h>

#define AGENT_SERVED_DAYS 30

struct agent_catalog {
    struct json_object *root;                            /* owned */
    struct json_object *flags, *environments, *segments; /* borrowed from root */
};

/* Parses text (the query's JSON). Returns 0, or -1 when it is not the shape above. */
int agent_catalog_parse(struct agent_catalog *c, const char *text);
void agent_catalog_free(struct agent_catalog *c);

/* The flag object of key, or NULL. */
struct json_object *agent_catalog_flag(const struct agent_catalog *c, const char *key);
bool agent_catalog_has_env(const struct agent_catalog *c, const char *key);
bool agent_catalog_has_segment(const struct agent_catalog *c, const char *key);

/* Members of a flag object. */
const char *agent_flag_key(const struct json_object *flag);
const char *agent_flag_type(const struct json_object *flag);
bool agent_flag_archived(const struct json_object *flag);
struct json_object *agent_flag_variants(const struct json_object *flag); /* array of keys */
bool agent_flag_has_variant(const struct json_object *flag, const char *key);

/* True when a JSON array of strings holds s. */
bool agent_array_has(const struct json_object *array, const char *s);

/* The closest string of candidates (an array of strings, or of objects
 * with a "key" member) to name by the rule above, or NULL. */
const char *agent_closest(const struct json_object *candidates, const char *name);

/* Levenshtein distance of a and b (bytes), capped at cap + 1. */
int agent_edit_distance(const char *a, const char *b, int cap);

#endif
