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
/* A request body: exactly the named members (and "$schema", which the root
 * API's bodies may carry); the dispatcher enforces it (src/mgmt/jsonschema.h). */
#define BODY(required, properties)                                                                 \
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[" required "],"             \
    "\"properties\":{\"$schema\":{\"type\":\"string\"}," properties "}}"
/* A BODY whose handler checks more (its description says what). */
#define BODY_CHECKED(description, required, properties)                                            \
    "{\"type\":\"object\",\"additionalProperties\":false,\"description\":\"" description "\","     \
    "\"required\":[" required "],\"properties\":{\"$schema\":{\"type\":\"string\"}," properties    \
    "}}"
#define TEXT(min, max) "{\"type\":\"string\",\"minLength\":" #min ",\"maxLength\":" #max "}"
#define TEXT_OR_NULL(min, max)                                                                     \
    "{\"type\":[\"string\",\"null\"],\"minLength\":" #min ",\"maxLength\":" #max "}"
#define KEY_OR_NULL                                                                                \
    "{\"type\":[\"string\",\"null\"],\"minLength\":1,\"maxLength\":63,"                            \
    "\"pattern\":\"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$\"}"
#define KEY                                                                                        \
    "{\"type\":\"string\",\"minLength\":1,\"maxLength\":63,"                                       \
    "\"pattern\":\"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$\"}"
#define LOGIN TEXT(1, 320)
#define ORG_ROLE_OR_NULL                                                                           \
    "{\"type\":[\"string\",\"null\"],\"enum\":[\"owner\",\"admin\",\"member\",\"viewer\",null]}"
#define INVITE_ROLE_OR_NULL                                                                        \
    "{\"type\":[\"string\",\"null\"],\"enum\":[\"admin\",\"member\",\"viewer\",null]}"
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
#define SCOPES_OR_NULL                                                                             \
    "{\"type\":[\"object\",\"null\"],\"additionalProperties\":{\"type\":\"string\",\"enum\":["     \
    "\"read\",\"write\"]},\"propertyNames\":{\"enum\":[\"flags\",\"orgs\",\"projects\","           \
    "\"members\",\"audit\",\"tokens\",\"notifications\"]}}"
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
const char schema_acc_org_create[] =
    BODY("\"name\"", "\"name\":" TEXT(1, 200) ",\"slug\":" KEY_OR_NULL);
const char schema_acc_org_rename[] = BODY("\"name\"", "\"name\":" TEXT(1, 200));
const char schema_acc_project[] = PROJECT;
const char schema_acc_project_list[] = LIST("projects", PROJECT);
const char schema_acc_project_create[] = BODY(
    "\"name\"", "\"name\":" TEXT(1, 200) ",\"slug\":" KEY_OR_NULL ",\"description\":" TEXT(
                    0, 2000) ",\"readme\":" TEXT(0, 100000) ",\"repository_url\":" TEXT(0, 2000));
const char schema_acc_project_update[] =
    BODY("", "\"name\":" TEXT(1, 200) ",\"slug\":" KEY ",\"description\":" TEXT(
                 0, 2000) ",\"readme\":" TEXT(0, 100000) ",\"repository_url\":" TEXT(0, 2000));
const char schema_acc_member_list[] = LIST("members", MEMBER);
const char schema_acc_member_add[] =
    BODY("\"login\"", "\"login\":" LOGIN ",\"role\":" ORG_ROLE_OR_NULL);
const char schema_acc_role[] = BODY("\"role\"", "\"role\":" ORG_ROLE);
const char schema_acc_collaborator_add[] =
    BODY("\"login\",\"role\"", "\"login\":" LOGIN ",\"role\":" PROJECT_ROLE);
const char schema_acc_collaborator_role[] = BODY("\"role\"", "\"role\":" PROJECT_ROLE);
const char schema_acc_invitation_list[] = LIST("invitations", INVITATION);
const char schema_acc_invite[] =
    BODY("\"login\"", "\"login\":" LOGIN ",\"role\":" INVITE_ROLE_OR_NULL);
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
const char schema_acc_token_create[] = BODY_CHECKED(
    "The handler checks that full or a scope is given, that the scopes stay within"
    " the user's role, and that expires_at lies ahead.",
    "\"name\"",
    "\"name\":" TEXT(1, 200) ",\"expires_at\":{\"type\":[\"string\",\"null\"],\"minLength\":1,"
                             "\"maxLength\":64,\"format\":\"date-time\"},"
                             "\"expires_in_days\":{\"type\":[\"integer\",\"null\"],\"minimum\":0,"
                             "\"maximum\":36500},\"full\":{\"type\":[\"boolean\",\"null\"]},"
                             "\"scopes\":" SCOPES_OR_NULL);
const char schema_acc_token_created[] =
    OBJECT("\"id\",\"prefix\",\"token\"", "\"id\":" UUID ",\"prefix\":" STR ",\"token\":" STR);
const char schema_acc_notification_list[] = LIST("notifications", NOTIFICATION);
const char schema_acc_count[] = OBJECT("\"count\"", "\"count\":{\"type\":\"integer\"}");
const char schema_acc_login[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"email\",\"password\"],"
    "\"properties\":{\"email\":" TEXT(1, 320) ",\"password\":" TEXT(1, 1024) "}}";
const char schema_acc_session[] = OBJECT("\"user\"", "\"user\":" USER);
const char schema_acc_password_change[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"current\",\"new\"],"
    "\"properties\":{\"current\":" TEXT(1, 1024) ",\"new\":" TEXT(8, 1024) "}}";
const char schema_acc_deleted[] = BODY("\"deleted\"", "\"deleted\":" BOOL);
#define PROFILE_TEXT TEXT_OR_NULL(0, 2000)
const char schema_acc_profile[] = BODY(
    "", "\"avatarUrl\":" PROFILE_TEXT ",\"bio\":" PROFILE_TEXT ",\"company\":" PROFILE_TEXT
        ",\"location\":" PROFILE_TEXT
        ",\"name\":" TEXT(1, 200) ",\"pronouns\":" PROFILE_TEXT ",\"publicEmail\":" PROFILE_TEXT
                                  ",\"username\":" TEXT_OR_NULL(
                                      1, 39) ",\"websiteUrl\":" PROFILE_TEXT
                                             ",\"socialLinks\":{\"type\":[\"object\",\"null\"]}");
const char schema_acc_provision[] =
    BODY("\"org_id\"", "\"org_id\":" TEXT(1, 63) ",\"role\":" ORG_ROLE_OR_NULL);
