/*
 * schemas.c - JSON Schema texts of the root API (see schemas.h).
 * Timestamps are RFC 3339 strings; nullable fields say so.
 */
#include "accounts/schemas.h"

#define STR "{\"type\":\"string\"}"
#define STR_OR_NULL "{\"type\":[\"string\",\"null\"]}"
#define TIME "{\"type\":\"string\",\"format\":\"date-time\"}"
#define TIME_OR_NULL "{\"type\":[\"string\",\"null\"],\"format\":\"date-time\"}"
#define UUID "{\"type\":\"string\",\"format\":\"uuid\"}"
#define BOOL "{\"type\":\"boolean\"}"
#define ORG_ROLE "{\"type\":\"string\",\"enum\":[\"owner\",\"admin\",\"member\",\"viewer\"]}"
#define INVITE_ROLE "{\"type\":\"string\",\"enum\":[\"admin\",\"member\",\"viewer\"]}"
#define PROJECT_ROLE                                                                               \
    "{\"type\":\"string\",\"enum\":[\"read\",\"triage\",\"write\",\"maintain\",\"admin\"]}"
#define OBJECT(required, properties)                                                               \
    "{\"type\":\"object\",\"required\":[" required "],\"properties\":{" properties "}}"
#define LIST(member, item)                                                                         \
    OBJECT("\"" member "\"", "\"" member "\":{\"type\":\"array\",\"items\":" item "}")

#define ORGANIZATION                                                                               \
    OBJECT("\"id\",\"name\",\"slug\",\"role\",\"enforce_two_factor\",\"require_sso\","             \
           "\"created_at\"",                                                                       \
           "\"id\":" UUID ",\"name\":" STR ",\"slug\":" STR ",\"role\":" ORG_ROLE                  \
           ",\"enforce_two_factor\":" BOOL ",\"require_sso\":" BOOL ",\"created_at\":" TIME)
#define PROJECT                                                                                    \
    OBJECT("\"id\",\"org_id\",\"name\",\"slug\",\"description\",\"readme\",\"repository_url\","    \
           "\"created_by\",\"created_at\",\"updated_at\"",                                         \
           "\"id\":" UUID ",\"org_id\":" UUID ",\"name\":" STR ",\"slug\":" STR                    \
           ",\"description\":" STR ",\"readme\":" STR ",\"repository_url\":" STR                   \
           ",\"created_by\":" STR_OR_NULL ",\"created_at\":" TIME ",\"updated_at\":" TIME          \
           ",\"deleted_at\":" TIME_OR_NULL ",\"organization\":" ORGANIZATION)
#define MEMBER                                                                                     \
    OBJECT("\"user_id\",\"name\",\"email\",\"username\",\"role\",\"created_at\"",                  \
           "\"user_id\":" UUID ",\"name\":" STR ",\"email\":" STR ",\"username\":" STR_OR_NULL     \
           ",\"role\":" STR ",\"created_at\":" TIME)
#define INVITER OBJECT("\"id\",\"name\"", "\"id\":" UUID ",\"name\":" STR)
#define INVITER_OR_NULL "{\"anyOf\":[" INVITER ",{\"type\":\"null\"}]}"
#define INVITATION                                                                                 \
    OBJECT("\"id\",\"email\",\"role\",\"status\",\"inviter\",\"created_at\",\"expires_at\"",       \
           "\"id\":" UUID ",\"email\":" STR ",\"role\":" INVITE_ROLE                               \
           ",\"status\":{\"type\":\"string\",\"enum\":[\"pending\",\"accepted\",\"revoked\","      \
           "\"expired\"]},\"inviter\":" INVITER_OR_NULL ",\"created_at\":" TIME                    \
           ",\"expires_at\":" TIME)
#define SCOPES                                                                                     \
    "{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\",\"enum\":[\"read\","       \
    "\"write\"]},\"propertyNames\":{\"enum\":[\"flags\",\"orgs\",\"projects\",\"members\","        \
    "\"audit\",\"tokens\",\"notifications\"]}}"
#define TOKEN                                                                                      \
    OBJECT("\"id\",\"name\",\"prefix\",\"scopes\",\"full\",\"expires_at\",\"last_used_at\","       \
           "\"created_at\"",                                                                       \
           "\"id\":" UUID ",\"name\":" STR ",\"prefix\":" STR ",\"scopes\":" SCOPES                \
           ",\"full\":" BOOL ",\"expires_at\":" TIME_OR_NULL ",\"last_used_at\":" TIME_OR_NULL     \
           ",\"created_at\":" TIME)
#define NOTIFICATION                                                                               \
    OBJECT("\"id\",\"kind\",\"title\",\"body\",\"read_at\",\"created_at\"",                        \
           "\"id\":" UUID ",\"kind\":" STR ",\"title\":" STR ",\"body\":" STR_OR_NULL              \
           ",\"read_at\":" TIME_OR_NULL ",\"created_at\":" TIME)
#define USER                                                                                       \
    OBJECT("\"id\",\"email\",\"created_at\"",                                                      \
           "\"id\":" UUID ",\"email\":" STR ",\"name\":" STR ",\"username\":" STR_OR_NULL          \
           ",\"created_at\":" TIME)

const char schema_acc_ack[] = OBJECT("\"ok\"", "\"ok\":" BOOL);
const char schema_acc_organization[] = ORGANIZATION;
const char schema_acc_org_list[] = LIST("orgs", ORGANIZATION);
const char schema_acc_org_create[] = OBJECT("\"name\"", "\"name\":" STR ",\"slug\":" STR);
const char schema_acc_org_rename[] = OBJECT("\"name\"", "\"name\":" STR);
const char schema_acc_project[] = PROJECT;
const char schema_acc_project_list[] = LIST("projects", PROJECT);
const char schema_acc_project_create[] =
    OBJECT("\"name\"", "\"name\":" STR ",\"slug\":" STR ",\"description\":" STR ",\"readme\":" STR
                       ",\"repository_url\":" STR);
const char schema_acc_project_update[] =
    OBJECT("", "\"name\":" STR ",\"slug\":" STR ",\"description\":" STR ",\"readme\":" STR
               ",\"repository_url\":" STR);
const char schema_acc_member_list[] = LIST("members", MEMBER);
const char schema_acc_member_add[] = OBJECT("\"login\"", "\"login\":" STR ",\"role\":" ORG_ROLE);
const char schema_acc_role[] = OBJECT("\"role\"", "\"role\":" ORG_ROLE);
const char schema_acc_collaborator_add[] =
    OBJECT("\"login\",\"role\"", "\"login\":" STR ",\"role\":" PROJECT_ROLE);
const char schema_acc_collaborator_role[] = OBJECT("\"role\"", "\"role\":" PROJECT_ROLE);
const char schema_acc_invitation_list[] = LIST("invitations", INVITATION);
const char schema_acc_invite[] = OBJECT("\"login\"", "\"login\":" STR ",\"role\":" INVITE_ROLE);
const char schema_acc_invite_answer[] =
    OBJECT("\"status\"", "\"status\":{\"type\":\"string\",\"enum\":[\"added\",\"invited\"]},"
                         "\"email\":" STR ",\"invitation\":" INVITATION ",\"org_name\":" STR
                         ",\"user_id\":" UUID ",\"token\":" STR);
const char schema_acc_invitation_lookup[] =
    OBJECT("\"id\",\"email\",\"expired\",\"inviter\",\"org_name\",\"org_slug\",\"role\","
           "\"status\"",
           "\"id\":" UUID ",\"email\":" STR ",\"expired\":" BOOL ",\"inviter\":" INVITER_OR_NULL
           ",\"org_name\":" STR ",\"org_slug\":" STR ",\"role\":" INVITE_ROLE ",\"status\":" STR);
const char schema_acc_invitation_accepted[] =
    OBJECT("\"org_name\",\"org_slug\"", "\"org_name\":" STR ",\"org_slug\":" STR);
const char schema_acc_token_list[] = LIST("tokens", TOKEN);
const char schema_acc_token_create[] =
    OBJECT("\"name\"", "\"name\":" STR ",\"expires_at\":" TIME
                       ",\"expires_in_days\":{\"type\":\"integer\",\"minimum\":0},"
                       "\"full\":" BOOL ",\"scopes\":" SCOPES);
const char schema_acc_token_created[] =
    OBJECT("\"id\",\"prefix\",\"token\"", "\"id\":" UUID ",\"prefix\":" STR ",\"token\":" STR);
const char schema_acc_notification_list[] = LIST("notifications", NOTIFICATION);
const char schema_acc_count[] = OBJECT("\"count\"", "\"count\":{\"type\":\"integer\"}");
const char schema_acc_login[] =
    OBJECT("\"email\",\"password\"", "\"email\":" STR ",\"password\":" STR);
const char schema_acc_session[] = OBJECT("\"user\"", "\"user\":" USER);
const char schema_acc_password_change[] = OBJECT(
    "\"current\",\"new\"", "\"current\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":1024},"
                           "\"new\":{\"type\":\"string\",\"minLength\":8,\"maxLength\":1024}");
const char schema_acc_deleted[] = OBJECT("\"deleted\"", "\"deleted\":" BOOL);
const char schema_acc_profile[] =
    OBJECT("", "\"avatarUrl\":" STR_OR_NULL ",\"bio\":" STR_OR_NULL ",\"company\":" STR_OR_NULL
               ",\"location\":" STR_OR_NULL ",\"name\":" STR ",\"pronouns\":" STR_OR_NULL
               ",\"publicEmail\":" STR_OR_NULL ",\"username\":" STR_OR_NULL
               ",\"websiteUrl\":" STR_OR_NULL ",\"socialLinks\":{\"type\":[\"object\",\"null\"]}");
const char schema_acc_provision[] = OBJECT("\"org_id\"", "\"org_id\":" STR ",\"role\":" ORG_ROLE);
