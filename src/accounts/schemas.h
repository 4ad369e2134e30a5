/*
 * schemas.h - the JSON Schema texts of the root API's bodies, for
 * /openapi.json (routes.c hands them to the route table). One place for
 * every account, organization, project, member, invitation, token and
 * notification form, matching the SQL forms of sql/0003_accounts.sql
 * (ensign_*_form) and the answers of src/accounts/.
 */
#ifndef ENSIGN_ACCOUNT_SCHEMAS_H
#define ENSIGN_ACCOUNT_SCHEMAS_H

extern const char schema_acc_ack[];
extern const char schema_acc_organization[];
extern const char schema_acc_org_list[];
extern const char schema_acc_org_create[];
extern const char schema_acc_org_rename[];
extern const char schema_acc_project[];
extern const char schema_acc_project_list[];
extern const char schema_acc_project_create[];
extern const char schema_acc_project_update[];
extern const char schema_acc_member_list[];
extern const char schema_acc_member_add[];
extern const char schema_acc_role[];
extern const char schema_acc_collaborator_add[];
extern const char schema_acc_collaborator_role[];
extern const char schema_acc_invitation_list[];
extern const char schema_acc_invite[];
extern const char schema_acc_invite_answer[];
extern const char schema_acc_invitation_lookup[];
extern const char schema_acc_invitation_accepted[];
extern const char schema_acc_token_list[];
extern const char schema_acc_token_create[];
extern const char schema_acc_token_created[];
extern const char schema_acc_notification_list[];
extern const char schema_acc_count[];
extern const char schema_acc_login[];
extern const char schema_acc_session[];
extern const char schema_acc_password_change[];
extern const char schema_acc_deleted[];
extern const char schema_acc_profile[];
extern const char schema_acc_provision[];

#endif
