/*
 * routes.c - the route table (see routes.h).
 *
 * Sections are grouped by surface and resource; keep evaluation first.
 */
#include "routes.h"

#include "me.h"
#include "meta.h"
#include "metrics_route.h"
/* section includes: evaluation */
#include "ofrep.h"
#include "streams.h"
/* section includes: flags */
#include "environments.h"
#include "flagrevisions.h"
#include "flags.h"
#include "flagschemas.h"
#include "rules.h"
#include "variants.h"
/* section includes: agent */
#include "agent.h"
/* section includes: second document (accounts) */
#include "internal.h"
#include "invitations.h"
#include "notifications.h"
#include "org_members.h"
#include "password_change.h"
#include "orgs.h"
#include "project_members.h"
#include "projects.h"
#include "schemas.h"
#include "sessions.h"
#include "tokens.h"
/* section includes: org resources */
#include "entities.h"
#include "members.h"
#include "sdkkeys.h"
#include "segments.h"
/* section includes: waitlist */
#include "waitlist.h"
/* section includes: audit log */
#include "audit.h"

static const struct route route_table[] = {
    /* section: evaluation (/ofrep) */
    {METHOD_POST, "/ofrep/v1/evaluate/flags/{key}", ofrep_evaluate_flag,
     "Evaluate one flag for a context (OFREP); SDK key as Bearer or X-API-Key", ROUTE_AUTH_SDK_KEY,
     ofrep_request_schema, ofrep_flag_response_schema, 200},
    {METHOD_POST, "/ofrep/v1/evaluate/flags", ofrep_evaluate_bulk,
     "Evaluate every flag of the SDK key's environment (OFREP bulk, ETag and 304)",
     ROUTE_AUTH_SDK_KEY, ofrep_request_schema, ofrep_bulk_response_schema, 200},
    /* section: change streams (/ofrep/v1/events, decisions.md section 10) */
    {METHOD_GET, "/ofrep/v1/events/{environment}", streams_open,
     "Change notifications of an environment (text/event-stream; ?token= from eventStreams)",
     ROUTE_AUTH_NONE, NULL, streams_response_schema, 200},

    /* section: meta and identity */
    {METHOD_GET, "/v1/healthz", meta_healthz,
     "Health probe: 200 ok, or 503 degraded naming the failing checks; never touches the database",
     ROUTE_AUTH_NONE, NULL, meta_healthz_schema, 200},
    /* /metrics: decisions.md section 11 */
    {METHOD_GET, "/metrics", metrics_route_get,
     "Node counters in the Prometheus text format 0.0.4 (only on metrics_listen when set)",
     ROUTE_AUTH_NONE, NULL, NULL, 200},
    {METHOD_GET, "/v1/me", me_v1_get, "Identity of the caller's access token",
     ROUTE_AUTH_TOKEN_OR_COOKIE, NULL, NULL, 200},

    /* section: flags, variants, environments, rules (/v1/orgs/{org}/...) */
#define FLAG_PATH "/v1/orgs/{org}/flags/{key}"
#define RULES_PATH FLAG_PATH "/environments/{envKey}/rules"
    {METHOD_POST, "/v1/orgs/{org}/flags", flags_create,
     "Create a flag (disabled in every environment)", ROUTE_AUTH_ACCESS_TOKEN,
     flagschema_flag_create, flagschema_flag_answer, 201},
    {METHOD_GET, "/v1/orgs/{org}/flags", flags_list,
     "List the active flags (?archived=true: the archived ones) with value and usage",
     ROUTE_AUTH_ACCESS_TOKEN, NULL, flagschema_flag_list, 200},
    {METHOD_GET, FLAG_PATH, flags_get,
     "Read a flag with its revisions, variants and environment configurations",
     ROUTE_AUTH_ACCESS_TOKEN, NULL, flagschema_flag_detail, 200},
    {METHOD_PATCH, FLAG_PATH, flags_update,
     "Update a flag's name, description, maintainer, permanence or tags",
     ROUTE_AUTH_ACCESS_TOKEN, flagschema_flag_update, flagschema_flag_answer, 200},
    {METHOD_DELETE, FLAG_PATH, flags_delete, "Delete a flag (evaluation of the key stops)",
     ROUTE_AUTH_ACCESS_TOKEN, NULL, flagschema_ack, 200},
    {METHOD_GET, FLAG_PATH "/usage", flags_usage,
     "Evaluation counts of a flag per environment, variant and day", ROUTE_AUTH_ACCESS_TOKEN,
     NULL, flagschema_flag_usage, 200},
    {METHOD_GET, FLAG_PATH "/revisions", flags_revisions,
     "A flag's whole history, newest first, page by page (the detail shows the newest 20)",
     ROUTE_AUTH_ACCESS_TOKEN, NULL, flagschema_revision_list, 200},
    {METHOD_POST, FLAG_PATH "/archive", flags_archive,
     "Archive a flag (it keeps evaluating; no-op when archived)", ROUTE_AUTH_ACCESS_TOKEN, NULL,
     flagschema_flag_answer, 200},
    {METHOD_POST, FLAG_PATH "/restore", flags_restore,
     "Restore an archived flag (no-op when active)", ROUTE_AUTH_ACCESS_TOKEN, NULL,
     flagschema_flag_answer, 200},
    {METHOD_POST, FLAG_PATH "/variants", variants_create,
     "Add a variant to a multivariate flag", ROUTE_AUTH_ACCESS_TOKEN,
     flagschema_variant_create, flagschema_variant_answer, 201},
    {METHOD_PATCH, FLAG_PATH "/variants/{variantKey}", variants_update,
     "Update a variant's value or label", ROUTE_AUTH_ACCESS_TOKEN, flagschema_variant_update,
     flagschema_variant_answer, 200},
    {METHOD_DELETE, FLAG_PATH "/variants/{variantKey}", variants_delete,
     "Delete a variant (409 while a default, off variant or rule serves it)",
     ROUTE_AUTH_ACCESS_TOKEN, NULL, flagschema_ack, 200},
    {METHOD_GET, "/v1/orgs/{org}/environments", environments_list,
     "List the organization's environments", ROUTE_AUTH_ACCESS_TOKEN, NULL,
     flagschema_environment_list, 200},
    {METHOD_PATCH, FLAG_PATH "/environments/{envKey}", environments_configure,
     "Configure a flag in an environment: enabled, default serve, off variant",
     ROUTE_AUTH_ACCESS_TOKEN, flagschema_configure, flagschema_ack, 200},
    {METHOD_POST, RULES_PATH, rules_create, "Append a targeting rule", ROUTE_AUTH_ACCESS_TOKEN,
     flagschema_rule_create, flagschema_rule_answer, 201},
    {METHOD_GET, RULES_PATH, rules_list, "List the targeting rules in evaluation order",
     ROUTE_AUTH_ACCESS_TOKEN, NULL, flagschema_rule_list, 200},
    {METHOD_PUT, RULES_PATH, rules_replace,
     "Replace the whole ordered rule set atomically (one revision)", ROUTE_AUTH_ACCESS_TOKEN,
     flagschema_rule_replace, flagschema_rule_list, 200},
    {METHOD_POST, RULES_PATH "/reorder", rules_reorder,
     "Reorder the rules (every rule exactly once)", ROUTE_AUTH_ACCESS_TOKEN,
     flagschema_rule_reorder, flagschema_ack, 200},
    {METHOD_PATCH, RULES_PATH "/{ruleId}", rules_update,
     "Update a rule's description, conditions, serve or priority", ROUTE_AUTH_ACCESS_TOKEN,
     flagschema_rule_update, flagschema_rule_answer, 200},
    {METHOD_DELETE, RULES_PATH "/{ruleId}", rules_delete, "Delete a rule",
     ROUTE_AUTH_ACCESS_TOKEN, NULL, flagschema_ack, 200},
#undef RULES_PATH
#undef FLAG_PATH

    /* section: segments, entities, SDK keys, members (/v1/orgs/{org}/...) */
    {METHOD_POST, "/v1/orgs/{org}/segments", segments_create, "Create a segment",
     ROUTE_AUTH_ACCESS_TOKEN, segments_create_schema, segments_one_schema, 201},
    {METHOD_GET, "/v1/orgs/{org}/segments", segments_list, "List the segments",
     ROUTE_AUTH_ACCESS_TOKEN, NULL, segments_list_schema, 200},
    {METHOD_GET, "/v1/orgs/{org}/segments/{key}", segments_get, "Read a segment",
     ROUTE_AUTH_ACCESS_TOKEN, NULL, segments_one_schema, 200},
    {METHOD_PATCH, "/v1/orgs/{org}/segments/{key}", segments_update,
     "Update a segment's name, description or conditions", ROUTE_AUTH_ACCESS_TOKEN,
     segments_update_schema, segments_one_schema, 200},
    {METHOD_DELETE, "/v1/orgs/{org}/segments/{key}", segments_delete,
     "Delete a segment (409 while a rule uses it)", ROUTE_AUTH_ACCESS_TOKEN, NULL,
     segments_ack_schema, 200},
    {METHOD_POST, "/v1/orgs/{org}/entities", entities_create, "Create an entity",
     ROUTE_AUTH_ACCESS_TOKEN, entities_create_schema, entities_one_schema, 201},
    {METHOD_GET, "/v1/orgs/{org}/entities", entities_list, "List the entities with attributes",
     ROUTE_AUTH_ACCESS_TOKEN, NULL, entities_list_schema, 200},
    {METHOD_GET, "/v1/orgs/{org}/entities/{key}", entities_get, "Read an entity",
     ROUTE_AUTH_ACCESS_TOKEN, NULL, entities_one_schema, 200},
    {METHOD_PATCH, "/v1/orgs/{org}/entities/{key}", entities_update,
     "Update an entity's label or replace its attributes", ROUTE_AUTH_ACCESS_TOKEN,
     entities_update_schema, entities_one_schema, 200},
    {METHOD_DELETE, "/v1/orgs/{org}/entities/{key}", entities_delete, "Delete an entity",
     ROUTE_AUTH_ACCESS_TOKEN, NULL, segments_ack_schema, 200},
    {METHOD_POST, "/v1/orgs/{org}/sdk-keys", sdkkeys_create,
     "Create an SDK key for an environment (the token is shown once)", ROUTE_AUTH_ACCESS_TOKEN,
     sdkkeys_create_schema, sdkkeys_created_schema, 201},
    {METHOD_GET, "/v1/orgs/{org}/sdk-keys", sdkkeys_list, "List the SDK keys, masked",
     ROUTE_AUTH_ACCESS_TOKEN, NULL, sdkkeys_list_schema, 200},
    {METHOD_POST, "/v1/orgs/{org}/sdk-keys/{id}/revoke", sdkkeys_revoke, "Revoke an SDK key",
     ROUTE_AUTH_ACCESS_TOKEN, NULL, segments_ack_schema, 200},
    {METHOD_GET, "/v1/orgs/{org}/members", members_v1_list,
     "List the organization's members with their roles", ROUTE_AUTH_ACCESS_TOKEN, NULL,
     members_v1_list_schema, 200},

    /* section: waitlist */
    {METHOD_POST, "/v1/waitlist", waitlist_submit,
     "Join the waitlist (no credential; rate limited per client address)", ROUTE_AUTH_NONE,
     waitlist_request_schema, waitlist_response_schema, 200},

    /* section: second document (no prefix) */
    {METHOD_GET, "/openapi.json", meta_openapi, "This OpenAPI document", ROUTE_AUTH_NONE, NULL,
     NULL, 200},
    {METHOD_GET, "/me", me_root_get, "The caller's account and organizations",
     ROUTE_AUTH_TOKEN_OR_COOKIE, NULL, NULL, 200},

    /* section: audit log (/orgs/{slug}/audit) */
    {METHOD_GET, "/orgs/{slug}/audit", audit_list,
     "The organization's audit log, newest first (q, action (repeatable), actor, limit, cursor)",
     ROUTE_AUTH_ACCESS_TOKEN, NULL, audit_list_schema, 200},
    {METHOD_QUERY, "/orgs/{slug}/audit", audit_list,
     "The audit log with {q, limit, cursor, action, actor} in a JSON body (as GET)",
     ROUTE_AUTH_ACCESS_TOKEN, NULL, audit_list_schema, 200},
    {METHOD_GET, "/orgs/{slug}/audit/config", audit_config_get,
     "Whether the audit log discloses actor IP addresses", ROUTE_AUTH_ACCESS_TOKEN, NULL,
     audit_config_schema, 200},
    {METHOD_PUT, "/orgs/{slug}/audit/config", audit_config_put,
     "Turn the disclosure of actor IP addresses on or off (admin)", ROUTE_AUTH_ACCESS_TOKEN,
     audit_config_schema, audit_config_schema, 200},

    /* section: second document, accounts (issue 9). A list answers GET and QUERY alike. */
#define ACC(method, pattern, handler, summary, request, response)                                  \
    {METHOD_##method, pattern, handler, summary, ROUTE_AUTH_ACCESS_TOKEN, request, response, 200}
#define ACC_LIST(pattern, handler, summary, response)                                              \
    ACC(GET, pattern, handler, summary, NULL, response),                                           \
        ACC(QUERY, pattern, handler, summary, NULL, response)
#define PROJECT_PATH "/orgs/{slug}/projects/{project}"
    {METHOD_POST, "/v1/session", sessions_login,
     "Log in with email and password: sets the ensign_session cookie", ROUTE_AUTH_NONE,
     schema_acc_login, schema_acc_session, 200},
    {METHOD_DELETE, "/v1/session", sessions_logout, "Log out: ends the cookie's session",
     ROUTE_AUTH_NONE, NULL, schema_acc_ack, 200},
    {METHOD_PUT, "/v1/session/password", password_change_put,
     "Change the caller's password {current, new}; ends the user's other sessions",
     ROUTE_AUTH_TOKEN_OR_COOKIE, schema_acc_password_change, schema_acc_ack, 200},
    ACC_LIST("/me/tokens", tokens_list, "List the caller's personal access tokens",
             schema_acc_token_list),
    ACC(POST, "/me/tokens", tokens_create,
        "Create a personal access token (full or scopes, expiry); the token is shown once",
        schema_acc_token_create, schema_acc_token_created),
    ACC(DELETE, "/me/tokens/{id}", tokens_revoke, "Revoke a personal access token", NULL,
        schema_acc_ack),
    ACC(PUT, "/me/deleted", internal_me_deleted,
        "Internal (Ensign-Internal-Key): set the caller's deleted mirror", schema_acc_deleted,
        schema_acc_ack),
    ACC(PUT, "/me/profile", internal_me_profile,
        "Internal (Ensign-Internal-Key): update the caller's profile", schema_acc_profile,
        schema_acc_ack),
    ACC_LIST("/notifications", notifications_list, "The caller's notifications, newest first",
             schema_acc_notification_list),
    ACC(GET, "/notifications/unread-count", notifications_unread_count,
        "Count the caller's unread notifications", NULL, schema_acc_count),
    ACC(POST, "/notifications/read-all", notifications_read_all, "Mark every notification read",
        NULL, schema_acc_ack),
    ACC(POST, "/notifications/{id}/read", notifications_read_one, "Mark a notification read",
        NULL, schema_acc_ack),
    ACC_LIST("/orgs", orgs_list, "The caller's organizations with their role",
             schema_acc_org_list),
    ACC(POST, "/orgs", orgs_create, "Create an organization; the caller becomes its owner",
        schema_acc_org_create, schema_acc_organization),
    ACC(PATCH, "/orgs/{slug}", orgs_rename, "Rename an organization (owners)",
        schema_acc_org_rename, schema_acc_organization),
    ACC(POST, "/orgs/{slug}/leave", orgs_leave, "Leave an organization (not its last owner)",
        NULL, schema_acc_ack),
    ACC_LIST("/orgs/{slug}/deleted-projects", orgs_deleted_projects,
             "List the soft-deleted projects", schema_acc_project_list),
    ACC(POST, "/internal/sso/provision-member", internal_provision_member,
        "Internal (Ensign-Internal-Key): add the caller to an organization",
        schema_acc_provision, schema_acc_ack),
    ACC_LIST("/orgs/{slug}/invitations", invitations_list, "List the invitations",
             schema_acc_invitation_list),
    ACC(POST, "/orgs/{slug}/invitations", invitations_create,
        "Invite by email or username: added at once, or invited with a single-use token",
        schema_acc_invite, schema_acc_invite_answer),
    ACC(DELETE, "/orgs/{slug}/invitations/{id}", invitations_revoke,
        "Revoke a pending invitation", NULL, schema_acc_ack),
    ACC(GET, "/invitations/{token}", invitations_lookup, "Look up an invitation by its token",
        NULL, schema_acc_invitation_lookup),
    ACC(POST, "/invitations/{token}/accept", invitations_accept,
        "Internal (Ensign-Internal-Key): accept an invitation", NULL,
        schema_acc_invitation_accepted),
    ACC_LIST("/orgs/{slug}/members", org_members_list, "List the organization's members",
             schema_acc_member_list),
    ACC(POST, "/orgs/{slug}/members", org_members_add, "Add an existing user as a member",
        schema_acc_member_add, schema_acc_ack),
    ACC(DELETE, "/orgs/{slug}/members/{userId}", org_members_remove, "Remove a member", NULL,
        schema_acc_ack),
    ACC(PUT, "/orgs/{slug}/members/{userId}/role", org_members_set_role,
        "Change a member's role", schema_acc_role, schema_acc_ack),
    ACC_LIST("/orgs/{slug}/projects", projects_list, "List the active projects",
             schema_acc_project_list),
    ACC(POST, "/orgs/{slug}/projects", projects_create,
        "Create a project; the creator becomes its first admin", schema_acc_project_create,
        schema_acc_project),
    ACC(GET, PROJECT_PATH, projects_get, "Read a project (expand[]=organization)", NULL,
        schema_acc_project),
    ACC(PATCH, PROJECT_PATH, projects_update, "Update a project; a new slug renames it",
        schema_acc_project_update, schema_acc_project),
    ACC(DELETE, PROJECT_PATH, projects_delete, "Soft-delete a project (restorable)", NULL,
        schema_acc_project),
    ACC(POST, PROJECT_PATH "/restore", projects_restore, "Restore a soft-deleted project", NULL,
        schema_acc_project),
    ACC_LIST(PROJECT_PATH "/members", project_members_list, "List the project's collaborators",
             schema_acc_member_list),
    ACC(POST, PROJECT_PATH "/members", project_members_add,
        "Add an organization member as a collaborator", schema_acc_collaborator_add,
        schema_acc_ack),
    ACC(DELETE, PROJECT_PATH "/members/{userId}", project_members_remove,
        "Remove a collaborator", NULL, schema_acc_ack),
    ACC(PUT, PROJECT_PATH "/members/{userId}/role", project_members_set_role,
        "Change a collaborator's role", schema_acc_collaborator_role, schema_acc_ack),
    ACC_LIST(PROJECT_PATH "/owners", project_owners_list,
             "Who administers the project: its admins and the organization's owners",
             schema_acc_member_list),
#undef PROJECT_PATH
#undef ACC_LIST
#undef ACC

    /* section: agent (second document) */
    {METHOD_POST, "/ai/messages", agent_messages,
     "Send a conversation to the agent: a reply and proposed actions (nothing is written)",
     ROUTE_AUTH_ACCESS_TOKEN, agent_messages_request_schema, agent_messages_response_schema, 200},
    {METHOD_POST, "/ai/actions/execute", agent_execute,
     "Execute one confirmed agent action as the caller, through its REST operation",
     ROUTE_AUTH_ACCESS_TOKEN, agent_execute_request_schema, agent_execute_response_schema, 200},
};

const struct route *routes_table(size_t *count)
{
    *count = sizeof route_table / sizeof route_table[0];
    return route_table;
}
