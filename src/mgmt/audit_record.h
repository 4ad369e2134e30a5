/*
 * audit_record.h - how a write records its audit event: in the SAME
 * statement as the write (a data-modifying WITH clause), so a write that
 * fails or rolls back leaves no event and one that commits always has its
 * event: the log never shows a change that did not happen, nor misses one.
 *
 * A write statement gets one extra parameter, the actor (who and from
 * where), built once per request by audit_actor_init(), and one WITH
 * clause made with AUDIT_INSERT() from rows (action, summary, location)
 * of what the statement changed. Zero rows record nothing (a no-op write
 * is not an event). The chain fields (seq, prev_hash, hash) are set by the
 * trigger of sql/0004_audit.sql; never set them here.
 *
 * Action keys are dotted, lowercase, "<resource>.<past participle>"
 * (flag.created, rule.updated, sdk_key.revoked); the list is in
 * doc/choices.md. summary is one human sentence naming the target;
 * location is the changed resource's path relative to the organization
 * ("flags/checkout/environments/production").
 *
 * Keep the audit clause unreferenced by the rest of the statement:
 * PostgreSQL then runs it after the main query, so the organization's
 * chain-head lock is the last lock the statement takes and is held only
 * until commit.
 *
 * Used by the writes of /v1 (the .c files of src/api, through mgmt_ctx's
 * audit_actor and revisions.h) and of the root API (src/accounts/).
 */
#ifndef ENSIGN_AUDIT_RECORD_H
#define ENSIGN_AUDIT_RECORD_H

#include <stddef.h>

#include "db/auth.h"

struct http_request;

/* The actor parameter: a JSON object {org_id, user_id, token_id, name, ip}
 * (null members when unknown). Room for a 200-character name escaped. */
#define AUDIT_ACTOR_JSON_MAX 2048

/*
 * Writes the actor parameter into out (AUDIT_ACTOR_JSON_MAX bytes): the
 * organization the event belongs to, the caller who (its user, or for an
 * organization token no user; always the token), the actor's display name
 * at the time (NULL or "": the user's name, read by the statement), and the client address of r
 * (http_client_address()). Never fails: a name that does not fit is left out.
 */
void audit_actor_init(char *out, const struct http_request *r, const char *org_id,
                      const struct identity *who, const char *actor_name);

/*
 * The text of a statement for a WITH clause that records one audit event
 * per row of source (an SQL FROM item with columns action, summary and
 * location, all text). actor_param is the "$n" placeholder of the actor
 * parameter. Compile-time constant SQL only.
 *
 *     "aud AS (" AUDIT_INSERT("(SELECT 'segment.deleted' AS action,"
 *                             " 'Deleted segment ' || d.key AS summary,"
 *                             " 'segments/' || d.key AS location FROM d) AS s", "$3") ")"
 */
#define AUDIT_INSERT(source, actor_param) AUDIT_INSERT_FROM("a.org_id", source, actor_param)

/*
 * The same for a statement that learns the organization itself (creating
 * one): source has a fourth column org_id (uuid), and the actor parameter
 * was built with org_id "".
 */
#define AUDIT_INSERT_ORG(source, actor_param) AUDIT_INSERT_FROM("s.org_id", source, actor_param)

/*
 * A whole statement for a write done by a function that returns the house
 * answer (status, body, message), e.g. call = "SELECT * FROM
 * ensign_acc_member_add($1, $2, $3, $4)": runs call once (CTE w) and, when
 * its status is below 300 and summary is not NULL, records one event whose
 * action, summary and location are the given SQL text expressions (over
 * w.status, w.body and the statement's parameters). Answers w's row
 * unchanged. The expressions see the tables as they were before the
 * statement, so "CASE WHEN <the old state differs> THEN '...' END" as
 * summary leaves no-ops out of the log.
 */
#define AUDIT_ANSWER(call, action, summary, location, actor_param)                                 \
    "WITH w AS MATERIALIZED (" call "), aud AS (" AUDIT_INSERT(                                    \
        "(SELECT " action " AS action, " summary " AS summary, " location                          \
        " AS location FROM w WHERE w.status < 300 AND (" summary ") IS NOT NULL) AS s",            \
        actor_param) ") SELECT * FROM w"

/* The same when the organization comes from the answer or the parameters
 * (creating one, joining one): org is an SQL expression of its id (uuid). */
#define AUDIT_ANSWER_ORG(call, org, action, summary, location, actor_param)                        \
    "WITH w AS MATERIALIZED (" call "), aud AS (" AUDIT_INSERT_ORG(                                \
        "(SELECT " org " AS org_id, " action " AS action, " summary " AS summary, " location       \
        " AS location FROM w WHERE w.status < 300 AND (" summary ") IS NOT NULL) AS s",            \
        actor_param) ") SELECT * FROM w"

/* The common text of the two; org_expr is the organization column. */
#define AUDIT_INSERT_FROM(org_expr, source, actor_param)                                           \
    "INSERT INTO audit_events (org_id, actor_id, actor_token_id, actor_name, ip, action,"          \
    " summary, location)"                                                                          \
    " SELECT " org_expr ", a.user_id, a.token_id,"                                                 \
    " COALESCE(a.name, ensign_audit_user_name(a.user_id)), a.ip, s.action,"                        \
    " s.summary, s.location"                                                                       \
    " FROM " source ", jsonb_to_record(" actor_param "::jsonb)"                                    \
    " AS a(org_id uuid, user_id uuid, token_id uuid, name text, ip inet)"

#endif
