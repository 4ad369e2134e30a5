/*
 * membership.h - the one shape of the member, collaborator and invitation
 * writes (org_members.c, project_members.c, invitations.c).
 *
 * Each of those operations is: an optional JSON body of known fields
 * (login and/or role), an optional {userId}/{id} route parameter that must
 * be a uuid, then one statement answered in the house shape (mgmt.h
 * mgmt_answer). The statement's parameters come in one order:
 *   $1 organization id, then (by second) the caller's role name or the
 *   {project} parameter, then the subject (the body's login, or the
 *   route parameter), then the role (when the body has one), then the
 *   audit actor.
 * Answers, in order: 400/422 for a body the row's schema refuses (the
 * dispatcher), 404 (not_found) for a parameter that is not a uuid, then
 * the statement's answer.
 */
#ifndef ENSIGN_MEMBERSHIP_H
#define ENSIGN_MEMBERSHIP_H

#include <stdbool.h>
#include <json-c/json.h>

struct http_request;
struct mgmt_ctx;

enum membership_second { MEMBERSHIP_NO_SECOND, MEMBERSHIP_CALLER_ROLE, MEMBERSHIP_PROJECT };

/* The body's role (the row's schema checked it), or the default. */
typedef const char *(*membership_role_reader)(const struct json_object *body);

struct membership_write {
    const char *sql;               /* compile-time constant, parameters as above */
    enum membership_second second; /* what follows the organization id */
    bool login;                    /* the body has a required login: the subject */
    membership_role_reader role;   /* the body has a role; NULL: no role */
    const char *param;             /* the route parameter that is the subject, or NULL */
    const char *not_found;         /* the 404 message when param is not a uuid */
};

/* Runs w for the caller ctx; answers r. A body is read when w has login or role. */
void membership_write(struct http_request *r, const struct mgmt_ctx *ctx,
                      const struct membership_write *w);

#endif
