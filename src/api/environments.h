/*
 * environments.h - GET /v1/orgs/{org}/environments and PATCH
 * /v1/orgs/{org}/flags/{key}/environments/{envKey} (see environments.c).
 */
#ifndef ENSIGN_ENVIRONMENTS_H
#define ENSIGN_ENVIRONMENTS_H

#include <json-c/json.h>

struct http_request;
struct mgmt_ctx;
struct validate;
struct validate_refs;

void environments_list(struct http_request *r, const struct mgmt_ctx *ctx);
void environments_configure(struct http_request *r, const struct mgmt_ctx *ctx);

/* The configure row's load (router.h route_load): the flag and environment. */
void environments_configure_load(struct http_request *r);

/*
 * The configuration change a PATCH body asks for, as the statement's
 * values: enabled "t", "f" or "" (unchanged), serve the default serve
 * (owned; NULL unchanged), off_key (borrowed from the body; NULL
 * unchanged). A scheduled change (schedules.c, schedule_apply.c) is the
 * same body, read by the same function.
 */
struct environment_change {
    const char *enabled;
    struct json_object *serve;
    const char *off_key;
};

/*
 * Reads a PATCH body whose shape the PATCH's schema (flagschema_configure)
 * checked: the variant keys it names must be the flag's (refs), not both
 * defaultVariantKey and defaultServe, a rollout's weights not all zero;
 * errors into v, the change into c. environments_change_free(c)
 * afterwards, whatever v says.
 */
void environments_read_change(struct validate *v, const struct json_object *body,
                              const struct validate_refs *refs, struct environment_change *c);
void environments_change_free(struct environment_change *c);

/*
 * The configuration write: locks the flag, skips an unchanged row, records
 * one revision and its audit event. Parameters: $1 flag id, $2
 * environment id, $3..$5 the change (enabled, serve JSON, off key), $6
 * actor user id ("" for none), $7 actor name, $8 audit actor, $9 the
 * revision's action ("environment.updated"; "flag.schedule_applied"), $10
 * text put before the summary ("" or "Scheduled change: "). Answers the
 * house shape (mgmt.h mgmt_answer): 200, 404 flag or environment gone,
 * 409 archived.
 */
extern const char ENVIRONMENTS_CONFIGURE_SQL[];
#define ENVIRONMENTS_CONFIGURE_NPARAMS 10

#endif
