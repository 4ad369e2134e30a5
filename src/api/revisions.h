/*
 * revisions.h - how management writes record revisions (the history shown
 * in the flag detail, GET /v1/orgs/{org}/flags/{key} in doc/api.md).
 *
 * A revision is written by the same statement as the change it records (a
 * data-modifying WITH clause), so a failed write leaves no revision and a
 * successful one always has one. One statement = one revision per flag and
 * environment touched: a rule-set replacement is one revision.
 *
 * Actions (the vocabulary of revisions.action):
 *   flag.created  flag.updated  flag.archived  flag.restored
 *   flag.revision_restored
 *   variant.created  variant.updated  variant.deleted
 *   environment.updated  environment.copied
 *   rule.created  rule.updated  rule.deleted  rules.replaced  rules.reordered
 * summary is one human sentence; changes lists "field: old → new" lines.
 * user_name keeps the actor's name at the time (a user's name, or an
 * organization token's name); the JSON form is ensign_revision_json() in
 * sql/0002_flag_management.sql.
 *
 * Each revision also carries the flag's targeting after the change
 * (revisions.state), set by the trigger of sql/0013_revision_state.sql at
 * the end of the inserting statement: a write records it without doing
 * anything. The restore and the copy (flagrevision.c, envcopy.c) write
 * their revision through ensign_targeting_revision of the same file.
 *
 * Used by flags.c, variants.c, rules.c and environments.c.
 */
#ifndef ENSIGN_REVISIONS_H
#define ENSIGN_REVISIONS_H

#include "mgmt/audit_record.h"

/*
 * The text of a statement for a WITH clause that records one revision per
 * row of the CTE named source, whose columns are flag_id, environment_id
 * (or NULL), action, summary and changes (text[]). user_param and
 * name_param are the "$n" placeholders of the actor's user id ("" for an
 * organization token) and name. Compile-time constant SQL only.
 */
#define REVISION_INSERT(source, user_param, name_param)                                            \
    "INSERT INTO revisions (flag_id, environment_id, action, summary, changes, user_id,"           \
    " user_name) SELECT flag_id, environment_id, action, summary, changes,"                        \
    " NULLIF(" user_param ", '')::uuid, NULLIF(" name_param ", '') FROM " source                   \
    " RETURNING flag_id, environment_id, action, summary"

/*
 * The WITH clause text that records the audit event of each revision the
 * clause named "rev" (a REVISION_INSERT) wrote: same action, the summary
 * prefixed with the flag ("Flag checkout: Turned on in Production"), the
 * flag (and environment) as location. The flag must exist before the
 * statement (a flag created by it is not visible: flags.c records its
 * creation itself). actor_param: the "$n" of the audit actor parameter.
 */
#define REVISION_AUDIT(actor_param)                                                                \
    AUDIT_INSERT("(SELECT rev.action, 'Flag ' || fl.key || ': ' || rev.summary AS summary,"        \
                 " 'flags/' || fl.key || COALESCE('/environments/' || en.key, '') AS location"     \
                 " FROM rev JOIN flags fl ON fl.id = rev.flag_id"                                  \
                 " LEFT JOIN environments en ON en.id = rev.environment_id) AS s",                 \
                 actor_param)

/* "old → new" of two SQL text expressions, NULL when they do not differ. */
#define REVISION_CHANGE(label, old_expr, new_expr)                                                 \
    "CASE WHEN (" old_expr ") IS DISTINCT FROM (" new_expr ") THEN '" label ": ' ||"               \
    " COALESCE((" old_expr "), 'null') || ' → ' || COALESCE((" new_expr "), 'null') END"

#endif
