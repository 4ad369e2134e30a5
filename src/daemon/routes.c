/*
 * routes.c - the route table (see routes.h).
 *
 * Sections are grouped by surface and resource; keep evaluation first.
 */
#include "daemon/routes.h"

#include "mgmt/mgmt.h"

#include "api/apidoc.h"
#include "accounts/me.h"
#include "daemon/healthz_route.h"
#include "http/meta.h"
#include "http/ui_route.h"
#include "daemon/metrics_route.h"
/* section includes: evaluation */
#include "eval/ofrep.h"
#include "eval/streams.h"
/* section includes: flags */
#include "api/environments.h"
#include "api/envcopy.h"
#include "api/evaluate.h"
#include "api/flagrevision.h"
#include "api/flagrevisions.h"
#include "api/flags.h"
#include "api/flagschemas.h"
#include "api/rules.h"
#include "api/schedules.h"
#include "api/variants.h"
/* section includes: agent */
#include "agent/agent.h"
/* section includes: MCP */
#include "mcp/mcp.h"
/* section includes: accounts, organizations, projects (the root API) */
#include "accounts/internal.h"
#include "accounts/invitations.h"
#include "accounts/notifications.h"
#include "accounts/org_members.h"
#include "accounts/password_change.h"
#include "accounts/orgs.h"
#include "accounts/project_members.h"
#include "accounts/projects.h"
#include "accounts/schemas.h"
#include "accounts/sessions.h"
#include "accounts/tokens.h"
/* section includes: org resources */
#include "api/entities.h"
#include "api/envusage.h"
#include "api/members.h"
#include "api/sdkkeys.h"
#include "api/segments.h"
#include "api/unknownflags.h"
/* section includes: webhooks */
#include "api/webhook_deliveries.h"
#include "api/webhooks.h"
/* section includes: waitlist */
#include "api/waitlist.h"
/* section includes: audit log */
#include "accounts/audit.h"
#include "accounts/audit_verify.h"
#include "accounts/org_events.h"

/*
 * A row of an organization operation: the dispatcher (mgmt_dispatch)
 * authenticates the caller (access token, or the dashboard's session
 * cookie), finds the organization, checks NEED(role, scope, write) and
 * only then runs op. What the row says is what /openapi.json says.
 */
#define NEED(role, scope, write) MGMT_NEED(role, scope, write)
#define OP(method, pattern, op, summary, need, request, response, status)                          \
    {                                                                                              \
        METHOD_##method, pattern, mgmt_dispatch, summary, ROUTE_AUTH_TOKEN_OR_COOKIE, request,     \
            response, status, need, op, NULL                                                       \
    }
/* A row whose operation asks an extra statement (load) in the dispatcher's
 * round trip: the flag context of the flag's writes, for example. */
#define OPX(method, pattern, op, load, summary, need, request, response, status)                   \
    {                                                                                              \
        METHOD_##method, pattern, mgmt_dispatch, summary, ROUTE_AUTH_TOKEN_OR_COOKIE, request,     \
            response, status, need, op, load                                                       \
    }
/* The rest of a row whose handler does its own checks. */
#define NO_OP {0}, NULL, NULL

static const struct route route_table[] = {
    /* section: evaluation (/ofrep) */
    {METHOD_POST, "/ofrep/v1/evaluate/flags/{key}", ofrep_evaluate_flag,
     "Evaluate one flag for a context (OFREP); SDK key as Bearer or X-API-Key", ROUTE_AUTH_SDK_KEY,
     ofrep_request_schema, ofrep_flag_response_schema, 200, NO_OP},
    {METHOD_POST, "/ofrep/v1/evaluate/flags", ofrep_evaluate_bulk,
     "Evaluate every flag of the SDK key's environment (OFREP bulk, ETag and 304)",
     ROUTE_AUTH_SDK_KEY, ofrep_request_schema, ofrep_bulk_response_schema, 200, NO_OP},
    /* section: change streams (/ofrep/v1/events; doc/choices.md "Change notifications") */
    {METHOD_GET, "/ofrep/v1/events/{environment}", streams_open,
     "Change notifications of an environment (text/event-stream; ?token= from eventStreams)",
     ROUTE_AUTH_NONE, NULL, streams_response_schema, 200, NO_OP},

    /* section: meta and identity */
    {METHOD_GET, "/v1/healthz", healthz_answer,
     "Health probe: 200 ok, or 503 degraded naming the failing checks; never touches the database",
     ROUTE_AUTH_NONE, NULL, healthz_schema, 200, NO_OP},
    /* /metrics: doc/choices.md "Metrics" */
    {METHOD_GET, "/metrics", metrics_route_get,
     "Node counters in the Prometheus text format 0.0.4 (only on metrics_listen when set)",
     ROUTE_AUTH_NONE, NULL, NULL, 200, NO_OP},
    {METHOD_GET, "/v1/me", mgmt_dispatch, "Identity of the caller's access token",
     ROUTE_AUTH_TOKEN_OR_COOKIE, NULL, NULL, 200, MGMT_IDENTITY, me_v1_get, NULL},

/* section: flags, variants, environments, rules (/v1/orgs/{org}/...) */
#define FLAG_PATH "/v1/orgs/{org}/flags/{key}"
#define RULES_PATH FLAG_PATH "/environments/{envKey}/rules"
    OP(POST, "/v1/orgs/{org}/flags", flags_create, "Create a flag (disabled in every environment)",
       NEED(MEMBER, FLAGS, true), flagschema_flag_create, flagschema_flag_answer, 201),
    OP(GET, "/v1/orgs/{org}/flags", flags_list,
       "List the active flags by key (?archived=true: the archived ones; ?stale=true: only the "
       "stale ones) with value, usage and stale; pages: limit (1 to 1,000, default 1,000), "
       "cursor, q (key, name or tag), Link rel=\"next\" while more",
       NEED(VIEWER, FLAGS, false), NULL, flagschema_flag_list, 200),
    OP(GET, FLAG_PATH, flags_get,
       "Read a flag with its revisions, variants and environment configurations",
       NEED(VIEWER, FLAGS, false), NULL, flagschema_flag_detail, 200),
    OP(PATCH, FLAG_PATH, flags_update,
       "Update a flag's name, description, maintainer, permanence or tags",
       NEED(MEMBER, FLAGS, true), flagschema_flag_update, flagschema_flag_answer, 200),
    OP(DELETE, FLAG_PATH, flags_delete, "Delete a flag (evaluation of the key stops)",
       NEED(MEMBER, FLAGS, true), NULL, flagschema_ack, 200),
    OP(GET, FLAG_PATH "/usage", flags_usage,
       "Evaluation counts of a flag per environment, variant and day", NEED(VIEWER, FLAGS, false),
       NULL, flagschema_flag_usage, 200),
    OPX(GET, FLAG_PATH "/revisions", flags_revisions, flags_revisions_load,
        "A flag's whole history, newest first, page by page (the detail shows the newest 20)",
        NEED(VIEWER, FLAGS, false), NULL, flagschema_revision_list, 200),
    OPX(GET, FLAG_PATH "/revisions/{id}", flag_revision_get, flag_revision_get_load,
        "A revision with its state: the flag's targeting after the change (null before states)",
        NEED(VIEWER, FLAGS, false), NULL, flagschema_revision_answer, 200),
    OPX(POST, FLAG_PATH "/revisions/{id}/restore", flag_revision_restore,
        flag_revision_restore_load,
        "Bring back a revision's targeting as one new revision (409 without state or variants)",
        NEED(MEMBER, FLAGS, true), NULL, flagschema_revision_answer, 200),
    OP(POST, FLAG_PATH "/archive", flags_archive,
       "Archive a flag (it keeps evaluating; no-op when archived)", NEED(MEMBER, FLAGS, true), NULL,
       flagschema_flag_answer, 200),
    OP(POST, FLAG_PATH "/restore", flags_restore, "Restore an archived flag (no-op when active)",
       NEED(MEMBER, FLAGS, true), NULL, flagschema_flag_answer, 200),
    OPX(POST, FLAG_PATH "/variants", variants_create, variants_load,
        "Add a variant to a multivariate flag", NEED(MEMBER, FLAGS, true),
        flagschema_variant_create, flagschema_variant_answer, 201),
    OPX(PATCH, FLAG_PATH "/variants/{variantKey}", variants_update, variants_load,
        "Update a variant's value or label", NEED(MEMBER, FLAGS, true), flagschema_variant_update,
        flagschema_variant_answer, 200),
    OPX(DELETE, FLAG_PATH "/variants/{variantKey}", variants_delete, variants_load,
        "Delete a variant (409 while a default, off variant or rule serves it)",
        NEED(MEMBER, FLAGS, true), NULL, flagschema_ack, 200),
    OP(GET, "/v1/orgs/{org}/environments", environments_list,
       "List the organization's environments", NEED(VIEWER, FLAGS, false), NULL,
       flagschema_environment_list, 200),
    OPX(PATCH, FLAG_PATH "/environments/{envKey}", environments_configure,
        environments_configure_load,
        "Configure a flag in an environment: enabled, default serve, off variant",
        NEED(MEMBER, FLAGS, true), flagschema_configure, flagschema_ack, 200),
    OPX(POST, FLAG_PATH "/environments/{envKey}/copy", envcopy_copy, envcopy_load,
        "Copy default serve, off variant and rules from environment {from} (not enabled)",
        NEED(MEMBER, FLAGS, true), flagschema_copy, flagschema_environment_answer, 200),
    OP(GET, "/v1/orgs/{org}/environments/{envKey}/usage", envusage_week,
       "Evaluations of each flag of the environment per day, the last seven days (UTC)",
       NEED(VIEWER, FLAGS, false), NULL, envusage_week_schema, 200),
    OP(POST, "/v1/orgs/{org}/environments/{envKey}/evaluate", evaluate_environment,
       "Evaluate an environment for a context as OFREP bulk does, with each flag's ruleId",
       NEED(VIEWER, FLAGS, false), evaluate_request_schema, evaluate_response_schema, 200),
    OPX(POST, RULES_PATH, rules_create, rules_load, "Append a targeting rule",
        NEED(MEMBER, FLAGS, true), flagschema_rule_create, flagschema_rule_answer, 201),
    OP(GET, RULES_PATH, rules_list, "List the targeting rules in evaluation order",
       NEED(VIEWER, FLAGS, false), NULL, flagschema_rule_list, 200),
    OPX(PUT, RULES_PATH, rules_replace, rules_load,
        "Replace the whole ordered rule set atomically (one revision)", NEED(MEMBER, FLAGS, true),
        flagschema_rule_replace, flagschema_rule_list, 200),
    OPX(POST, RULES_PATH "/reorder", rules_reorder, rules_load,
        "Reorder the rules (every rule exactly once)", NEED(MEMBER, FLAGS, true),
        flagschema_rule_reorder, flagschema_ack, 200),
    OPX(PATCH, RULES_PATH "/{ruleId}", rules_update, rules_load,
        "Update a rule's description, conditions, serve or priority", NEED(MEMBER, FLAGS, true),
        flagschema_rule_update, flagschema_rule_answer, 200),
    OPX(DELETE, RULES_PATH "/{ruleId}", rules_delete, rules_load, "Delete a rule",
        NEED(MEMBER, FLAGS, true), NULL, flagschema_ack, 200),
    /* scheduled changes: doc/choices.md "Scheduled changes" */
    OPX(POST, FLAG_PATH "/schedules", schedules_create, schedules_create_load,
        "Schedule a change of a flag's environment configuration {at, environment, changes}",
        NEED(MEMBER, FLAGS, true), flagschema_schedule_create, flagschema_schedule_answer, 201),
    OP(GET, FLAG_PATH "/schedules", schedules_list_flag,
       "A flag's scheduled changes, soonest first (?status=)", NEED(VIEWER, FLAGS, false), NULL,
       flagschema_schedule_list, 200),
    OP(DELETE, FLAG_PATH "/schedules/{id}", schedules_cancel,
       "Cancel a pending scheduled change (409 once applied, failed or cancelled)",
       NEED(MEMBER, FLAGS, true), NULL, flagschema_ack, 200),
    OP(GET, "/v1/orgs/{org}/schedules", schedules_list_org,
       "The organization's scheduled changes, soonest first (?status=pending)",
       NEED(VIEWER, FLAGS, false), NULL, flagschema_schedule_list, 200),
#undef RULES_PATH
#undef FLAG_PATH

    /* section: segments, entities, SDK keys, members (/v1/orgs/{org}/...) */
    OP(POST, "/v1/orgs/{org}/segments", segments_create, "Create a segment",
       NEED(MEMBER, FLAGS, true), segments_create_schema, segments_one_schema, 201),
    OP(GET, "/v1/orgs/{org}/segments", segments_list, "List the segments",
       NEED(VIEWER, FLAGS, false), NULL, segments_list_schema, 200),
    OP(GET, "/v1/orgs/{org}/segments/{key}", segments_get, "Read a segment",
       NEED(VIEWER, FLAGS, false), NULL, segments_one_schema, 200),
    OP(PATCH, "/v1/orgs/{org}/segments/{key}", segments_update,
       "Update a segment's name, description or conditions", NEED(MEMBER, FLAGS, true),
       segments_update_schema, segments_one_schema, 200),
    OP(DELETE, "/v1/orgs/{org}/segments/{key}", segments_delete,
       "Delete a segment (409 while a rule uses it)", NEED(MEMBER, FLAGS, true), NULL,
       segments_ack_schema, 200),
    OP(POST, "/v1/orgs/{org}/entities", entities_create, "Create an entity",
       NEED(MEMBER, FLAGS, true), entities_create_schema, entities_one_schema, 201),
    OP(GET, "/v1/orgs/{org}/entities", entities_list, "List the entities with attributes",
       NEED(VIEWER, FLAGS, false), NULL, entities_list_schema, 200),
    OP(GET, "/v1/orgs/{org}/entities/{key}", entities_get, "Read an entity",
       NEED(VIEWER, FLAGS, false), NULL, entities_one_schema, 200),
    OP(PATCH, "/v1/orgs/{org}/entities/{key}", entities_update,
       "Update an entity's label or replace its attributes", NEED(MEMBER, FLAGS, true),
       entities_update_schema, entities_one_schema, 200),
    OP(DELETE, "/v1/orgs/{org}/entities/{key}", entities_delete, "Delete an entity",
       NEED(MEMBER, FLAGS, true), NULL, segments_ack_schema, 200),
    OP(POST, "/v1/orgs/{org}/sdk-keys", sdkkeys_create,
       "Create an SDK key for an environment (the token is shown once)", NEED(ADMIN, FLAGS, true),
       sdkkeys_create_schema, sdkkeys_created_schema, 201),
    OP(GET, "/v1/orgs/{org}/sdk-keys", sdkkeys_list, "List the SDK keys, masked",
       NEED(ADMIN, FLAGS, false), NULL, sdkkeys_list_schema, 200),
    OP(POST, "/v1/orgs/{org}/sdk-keys/{id}/revoke", sdkkeys_revoke, "Revoke an SDK key",
       NEED(ADMIN, FLAGS, true), NULL, segments_ack_schema, 200),
    OP(GET, "/v1/orgs/{org}/unknown-flags", unknownflags_list,
       "List the flag keys SDKs asked for that name no flag, most recently seen first "
       "(?environment=KEY: one environment)",
       NEED(VIEWER, FLAGS, false), NULL, unknownflags_list_schema, 200),

/* section: webhooks (/v1/orgs/{org}/webhooks; doc/choices.md "Webhooks") */
#define HOOK_PATH "/v1/orgs/{org}/webhooks/{id}"
    OP(POST, "/v1/orgs/{org}/webhooks", webhooks_create,
       "Create a webhook for audit action patterns (the signing secret is shown once)",
       NEED(ADMIN, AUDIT, true), webhooks_create_schema, webhooks_created_schema, 201),
    OP(GET, "/v1/orgs/{org}/webhooks", webhooks_list, "List the webhooks (never their secrets)",
       NEED(ADMIN, AUDIT, false), NULL, webhooks_list_schema, 200),
    OP(GET, HOOK_PATH, webhooks_get, "Read a webhook", NEED(ADMIN, AUDIT, false), NULL,
       webhooks_one_schema, 200),
    OP(PATCH, HOOK_PATH, webhooks_update,
       "Update a webhook's url, events, description or active (reactivating resets its failures)",
       NEED(ADMIN, AUDIT, true), webhooks_update_schema, webhooks_one_schema, 200),
    OP(DELETE, HOOK_PATH, webhooks_delete, "Delete a webhook and its deliveries",
       NEED(ADMIN, AUDIT, true), NULL, webhooks_ack_schema, 200),
    OP(GET, HOOK_PATH "/deliveries", webhook_deliveries_list,
       "A webhook's deliveries, newest first (?limit=, 1 to 200, default 50)",
       NEED(ADMIN, AUDIT, false), NULL, webhook_deliveries_list_schema, 200),
    OP(POST, HOOK_PATH "/deliveries/{deliveryId}/redeliver", webhook_deliveries_redeliver,
       "Send a delivery's event again as a new delivery (409 while the webhook is inactive)",
       NEED(ADMIN, AUDIT, true), NULL, webhook_deliveries_one_schema, 201),
#undef HOOK_PATH

    OP(GET, "/v1/orgs/{org}/members", members_v1_list,
       "List the organization's members with their roles", NEED(VIEWER, MEMBERS, false), NULL,
       members_v1_list_schema, 200),

    /* section: the organization change stream (doc/choices.md "The organization change stream") */
    OP(GET, "/v1/orgs/{org}/events", org_events_open,
       "The organization's audit events as they happen (text/event-stream; Last-Event-ID replays "
       "up to 1,000)",
       NEED(VIEWER, AUDIT, false), NULL, org_events_schema, 200),

    /* section: waitlist */
    {METHOD_POST, "/v1/waitlist", waitlist_submit,
     "Join the waitlist (no credential; rate limited per client address)", ROUTE_AUTH_NONE,
     waitlist_request_schema, waitlist_response_schema, 200, NO_OP},

    /* section: the dashboard (files from ui_dir, read at start; never the database) */
    {METHOD_GET, "/", ui_redirect, "Redirect (302) to the dashboard at /ui/", ROUTE_AUTH_NONE, NULL,
     NULL, 302, NO_OP},
    {METHOD_GET, "/ui", ui_redirect, "Redirect (302) to /ui/", ROUTE_AUTH_NONE, NULL, NULL, 302,
     NO_OP},
    {METHOD_GET, "/ui/", ui_serve, "The dashboard (index.html)", ROUTE_AUTH_NONE, NULL, NULL, 200,
     NO_OP},
    {METHOD_GET, "/ui/{file}", ui_serve,
     "A dashboard file (strong ETag, gzip when accepted, the dashboard's CSP)", ROUTE_AUTH_NONE,
     NULL, NULL, 200, NO_OP},
    {METHOD_GET, "/ui/{folder}/{file}", ui_serve, "A dashboard file in a folder", ROUTE_AUTH_NONE,
     NULL, NULL, 200, NO_OP},

    /* section: the root API (no prefix) */
    {METHOD_GET, "/openapi.json", meta_openapi, "This OpenAPI document", ROUTE_AUTH_NONE, NULL,
     NULL, 200, NO_OP},
    {METHOD_GET, "/docs/api", apidoc_get,
     "This API reference in Markdown (doc/api.md), generated from the route table", ROUTE_AUTH_NONE,
     NULL, NULL, 200, NO_OP},
    {METHOD_GET, "/me", mgmt_dispatch, "The caller's account and organizations",
     ROUTE_AUTH_TOKEN_OR_COOKIE, NULL, NULL, 200, MGMT_IDENTITY, me_root_get, NULL},

    /* section: audit log (/orgs/{slug}/audit) */
    OP(GET, "/orgs/{slug}/audit", audit_list,
       "The organization's audit log, newest first (q, action (repeatable), actor, limit, cursor)",
       NEED(VIEWER, AUDIT, false), NULL, audit_list_schema, 200),
    OP(QUERY, "/orgs/{slug}/audit", audit_list,
       "The audit log with {q, limit, cursor, action, actor} in a JSON body (as GET)",
       NEED(VIEWER, AUDIT, false), NULL, audit_list_schema, 200),
    OP(GET, "/orgs/{slug}/audit/config", audit_config_get,
       "Whether the audit log discloses actor IP addresses", NEED(VIEWER, AUDIT, false), NULL,
       audit_config_schema, 200),
    OP(PUT, "/orgs/{slug}/audit/config", audit_config_put,
       "Turn the disclosure of actor IP addresses on or off (admin)", NEED(ADMIN, AUDIT, true),
       audit_config_schema, audit_config_schema, 200),
    OP(GET, "/orgs/{slug}/audit/verify", audit_verify,
       "Check the organization's audit hash chain as ensignctl audit verify does (admin)",
       NEED(ADMIN, AUDIT, false), NULL, audit_verify_schema, 200),

/* section: the root API, accounts. A list answers GET and QUERY alike. */
/* Internal operations (Ensign-Internal-Key): never a browser's. */
#define INTERNAL(method, pattern, op, summary, request, response)                                  \
    {                                                                                              \
        METHOD_##method, pattern, mgmt_dispatch, summary, ROUTE_AUTH_ACCESS_TOKEN, request,        \
            response, 200, MGMT_INTERNAL, op, NULL                                                 \
    }
#define ACC_OP(method, pattern, op, need, summary, request, response)                              \
    {                                                                                              \
        METHOD_##method, pattern, mgmt_dispatch, summary, ROUTE_AUTH_TOKEN_OR_COOKIE, request,     \
            response, 200, need, op, NULL                                                          \
    }
/* (need is expanded once here: its braces may not pass through another macro) */
#define ACC_OP_LIST(pattern, op, need, summary, response)                                          \
    {METHOD_GET, pattern, mgmt_dispatch, summary, ROUTE_AUTH_TOKEN_OR_COOKIE, NULL, response, 200, \
     need,       op,      NULL},                                                                   \
    {                                                                                              \
        METHOD_QUERY, pattern, mgmt_dispatch, summary, ROUTE_AUTH_TOKEN_OR_COOKIE, NULL, response, \
            200, need, op, NULL                                                                    \
    }
/* An operation on no organization (the caller's own account, or any token):
 * the dispatcher checks the caller and the row's MGMT_OWN need. */
#define OWN(method, pattern, op, need, summary, request, response)                                 \
    {                                                                                              \
        METHOD_##method, pattern, mgmt_dispatch, summary, ROUTE_AUTH_TOKEN_OR_COOKIE, request,     \
            response, 200, need, op, NULL                                                          \
    }
#define OWN_LIST(pattern, op, need, summary, response)                                             \
    {METHOD_GET, pattern, mgmt_dispatch, summary, ROUTE_AUTH_TOKEN_OR_COOKIE, NULL, response, 200, \
     need,       op,      NULL},                                                                   \
    {                                                                                              \
        METHOD_QUERY, pattern, mgmt_dispatch, summary, ROUTE_AUTH_TOKEN_OR_COOKIE, NULL, response, \
            200, need, op, NULL                                                                    \
    }
#define ACCOUNT(scope, write) MGMT_OWN(ACCOUNT, scope, write)
#define PROJECT_PATH "/orgs/{slug}/projects/{project}"
    {METHOD_POST, "/v1/session", sessions_login,
     "Log in with email and password: sets the ensign_session cookie", ROUTE_AUTH_NONE,
     schema_acc_login, schema_acc_session, 200, NO_OP},
    {METHOD_DELETE, "/v1/session", sessions_logout, "Log out: ends the cookie's session",
     ROUTE_AUTH_NONE, NULL, schema_acc_ack, 200, NO_OP},
    {METHOD_PUT, "/v1/session/password", mgmt_dispatch,
     "Change the caller's password {current, new}; ends the user's other sessions",
     ROUTE_AUTH_TOKEN_OR_COOKIE, schema_acc_password_change, schema_acc_ack, 200,
     MGMT_IDENTITY_WRITE, password_change_put, NULL},
    OWN_LIST("/me/tokens", tokens_list, ACCOUNT(TOKENS, false),
             "List the caller's personal access tokens", schema_acc_token_list),
    OWN(POST, "/me/tokens", tokens_create, ACCOUNT(TOKENS, true),
        "Create a personal access token (full or scopes, expiry); the token is shown once",
        schema_acc_token_create, schema_acc_token_created),
    OWN(DELETE, "/me/tokens/{id}", tokens_revoke, ACCOUNT(TOKENS, true),
        "Revoke a personal access token", NULL, schema_acc_ack),
    INTERNAL(PUT, "/me/deleted", internal_me_deleted,
             "Internal (Ensign-Internal-Key): set the caller's deleted mirror", schema_acc_deleted,
             schema_acc_ack),
    INTERNAL(PUT, "/me/profile", internal_me_profile,
             "Internal (Ensign-Internal-Key): update the caller's profile", schema_acc_profile,
             schema_acc_ack),
    OWN_LIST("/notifications", notifications_list, ACCOUNT(NOTIFICATIONS, false),
             "The caller's notifications, newest first", schema_acc_notification_list),
    OWN(GET, "/notifications/unread-count", notifications_unread_count,
        ACCOUNT(NOTIFICATIONS, false), "Count the caller's unread notifications", NULL,
        schema_acc_count),
    OWN(POST, "/notifications/read-all", notifications_read_all, ACCOUNT(NOTIFICATIONS, true),
        "Mark every notification read", NULL, schema_acc_ack),
    OWN(POST, "/notifications/{id}/read", notifications_read_one, ACCOUNT(NOTIFICATIONS, true),
        "Mark a notification read", NULL, schema_acc_ack),
    OWN_LIST("/orgs", orgs_list, MGMT_OWN(ANY, ORGS, false),
             "The caller's organizations with their role", schema_acc_org_list),
    OWN(POST, "/orgs", orgs_create, ACCOUNT(ORGS, true),
        "Create an organization; the caller becomes its owner", schema_acc_org_create,
        schema_acc_organization),
    ACC_OP(PATCH, "/orgs/{slug}", orgs_rename, NEED(OWNER, ORGS, true),
           "Rename an organization (owners)", schema_acc_org_rename, schema_acc_organization),
    ACC_OP(POST, "/orgs/{slug}/leave", orgs_leave, NEED(VIEWER, ORGS, true),
           "Leave an organization (not its last owner)", NULL, schema_acc_ack),
    ACC_OP_LIST("/orgs/{slug}/deleted-projects", projects_list_deleted,
                NEED(VIEWER, PROJECTS, false), "List the soft-deleted projects",
                schema_acc_project_list),
    INTERNAL(POST, "/internal/sso/provision-member", internal_provision_member,
             "Internal (Ensign-Internal-Key): add the caller to an organization",
             schema_acc_provision, schema_acc_ack),
    ACC_OP_LIST("/orgs/{slug}/invitations", invitations_list, NEED(ADMIN, MEMBERS, false),
                "List the invitations", schema_acc_invitation_list),
    ACC_OP(POST, "/orgs/{slug}/invitations", invitations_create, NEED(ADMIN, MEMBERS, true),
           "Invite by email or username: added at once, or invited with a single-use token",
           schema_acc_invite, schema_acc_invite_answer),
    ACC_OP(DELETE, "/orgs/{slug}/invitations/{id}", invitations_revoke, NEED(ADMIN, MEMBERS, true),
           "Revoke a pending invitation", NULL, schema_acc_ack),
    OWN(GET, "/invitations/{token}", invitations_lookup, ACCOUNT(ORGS, false),
        "Look up an invitation by its token", NULL, schema_acc_invitation_lookup),
    INTERNAL(POST, "/invitations/{token}/accept", invitations_accept,
             "Internal (Ensign-Internal-Key): accept an invitation", NULL,
             schema_acc_invitation_accepted),
    ACC_OP_LIST("/orgs/{slug}/members", org_members_list, NEED(VIEWER, MEMBERS, false),
                "List the organization's members", schema_acc_member_list),
    ACC_OP(POST, "/orgs/{slug}/members", org_members_add, NEED(ADMIN, MEMBERS, true),
           "Add an existing user as a member", schema_acc_member_add, schema_acc_ack),
    ACC_OP(DELETE, "/orgs/{slug}/members/{userId}", org_members_remove, NEED(ADMIN, MEMBERS, true),
           "Remove a member", NULL, schema_acc_ack),
    ACC_OP(PUT, "/orgs/{slug}/members/{userId}/role", org_members_set_role,
           NEED(ADMIN, MEMBERS, true), "Change a member's role", schema_acc_role, schema_acc_ack),
    ACC_OP_LIST("/orgs/{slug}/projects", projects_list, NEED(VIEWER, PROJECTS, false),
                "List the active projects", schema_acc_project_list),
    ACC_OP(POST, "/orgs/{slug}/projects", projects_create, NEED(ADMIN, PROJECTS, true),
           "Create a project; the creator becomes its first admin", schema_acc_project_create,
           schema_acc_project),
    ACC_OP(GET, PROJECT_PATH, projects_get, NEED(VIEWER, PROJECTS, false),
           "Read a project (expand[]=organization)", NULL, schema_acc_project),
    ACC_OP(PATCH, PROJECT_PATH, projects_update, NEED(ADMIN, PROJECTS, true),
           "Update a project; a new slug renames it", schema_acc_project_update,
           schema_acc_project),
    ACC_OP(DELETE, PROJECT_PATH, projects_delete, NEED(ADMIN, PROJECTS, true),
           "Soft-delete a project (restorable)", NULL, schema_acc_project),
    ACC_OP(POST, PROJECT_PATH "/restore", projects_restore, NEED(ADMIN, PROJECTS, true),
           "Restore a soft-deleted project", NULL, schema_acc_project),
    ACC_OP_LIST(PROJECT_PATH "/members", project_members_list, NEED(VIEWER, PROJECTS, false),
                "List the project's collaborators", schema_acc_member_list),
    ACC_OP(POST, PROJECT_PATH "/members", project_members_add, NEED(ADMIN, PROJECTS, true),
           "Add an organization member as a collaborator", schema_acc_collaborator_add,
           schema_acc_ack),
    ACC_OP(DELETE, PROJECT_PATH "/members/{userId}", project_members_remove,
           NEED(ADMIN, PROJECTS, true), "Remove a collaborator", NULL, schema_acc_ack),
    ACC_OP(PUT, PROJECT_PATH "/members/{userId}/role", project_members_set_role,
           NEED(ADMIN, PROJECTS, true), "Change a collaborator's role",
           schema_acc_collaborator_role, schema_acc_ack),
    ACC_OP_LIST(PROJECT_PATH "/owners", project_owners_list, NEED(VIEWER, PROJECTS, false),
                "Who administers the project: its admins and the organization's owners",
                schema_acc_member_list),
#undef PROJECT_PATH
#undef ACC_OP_LIST
#undef ACC_OP
#undef ACC_LIST
#undef INTERNAL
#undef ACC

    /* section: agent (the root API) */
    {METHOD_POST, "/ai/messages", mgmt_dispatch,
     "Send a conversation to the agent: a reply and proposed actions (nothing is written)",
     ROUTE_AUTH_TOKEN_OR_COOKIE, agent_messages_request_schema, agent_messages_response_schema, 200,
     MGMT_OWN(ANY, FLAGS, false), agent_messages, NULL},
    {METHOD_POST, "/ai/actions/execute", mgmt_dispatch,
     "Execute one confirmed agent action as the caller, through its REST operation",
     ROUTE_AUTH_TOKEN_OR_COOKIE, agent_execute_request_schema, agent_execute_response_schema, 200,
     MGMT_OWN(ANY, FLAGS, false), agent_execute, NULL},

    /* section: MCP (the root API; doc/choices.md "MCP") */
    {METHOD_POST, "/mcp", mcp_post,
     "Model Context Protocol (streamable HTTP, JSON answers): flags for coding agents; one "
     "JSON-RPC message per POST, tools run as the token's user",
     ROUTE_AUTH_ACCESS_TOKEN, mcp_request_schema, mcp_response_schema, 200, NO_OP},
};

const struct route *routes_table(size_t *count)
{
    *count = sizeof route_table / sizeof route_table[0];
    return route_table;
}
