/*
 * audit.c - the organization's audit log: GET (and QUERY)
 * /orgs/{slug}/audit, GET and PUT /orgs/{slug}/audit/config.
 *
 * Owns the list statement and the ip_disclosure setting. Events are
 * written by the writes themselves (audit_record.h); this file only reads
 * them, newest first, keyset on the organization's chain position (seq,
 * unique per organization, so pages neither skip nor repeat while events
 * are added), through the pagination module.
 *
 * Filters: q (case-insensitive substring of summary, action, actor name
 * and location), action (repeatable, exact action keys, at most
 * AUDIT_ACTIONS_MAX), actor (a user id, or an organization token's id).
 * The cursor is bound to the organization and to the filters (they are
 * part of its scope), and the Link URL carries them.
 *
 * Items (doc/choices.md "Records"): {id, action, summary, actor: {id, name},
 * ip (only while ip_disclosure is on), location, created_at}.
 *
 * Authorization (doc/api.md "Roles and scopes"): reading the log and its setting
 * is a read (any role, scope audit:read); changing the setting needs role
 * admin and audit:write, and is itself an audited event. A caller outside
 * the organization gets 404 (mgmt.c).
 *
 * Called by the worker's dispatch from the route table (routes.c).
 */
#include "accounts/audit.h"

#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mgmt/audit_record.h"
#include "http/event_memory.h"
#include "http/http.h"
#include "mgmt/mgmt.h"
#include "mgmt/pagination.h"
#include "mgmt/validate.h"

#define AUDIT_ACTIONS_MAX 20
#define AUDIT_ACTION_MAX_CHARS 100

/* clang-format off */

/*
 * The page statement (pagination.h: $1 to $5), $6 org id, $7 action keys
 * (JSON array, [] for any), $8 actor id ("" for any). Newest first.
 */
static const char LIST_SQL[] =
    PAGE_WITH_CURSOR("'9223372036854775807'") ","
    " o AS (SELECT ip_disclosure FROM orgs WHERE id = $6::uuid),"
    " p AS (SELECT e.seq,"
    "         jsonb_build_object('id', e.id, 'action', e.action, 'summary', e.summary,"
    "           'actor', jsonb_build_object('id', COALESCE(e.actor_id, e.actor_token_id),"
    "                                       'name', e.actor_name),"
    "           'location', e.location, 'created_at', ensign_rfc3339(e.created_at))"
    "         || CASE WHEN o.ip_disclosure THEN jsonb_build_object('ip', host(e.ip))"
    "                 ELSE '{}'::jsonb END AS item"
    "    FROM audit_events e, o"
    "   WHERE e.org_id = $6::uuid AND e.seq < " PAGE_KEY(1) "::bigint"
    "     AND (jsonb_array_length($7::jsonb) = 0"
    "          OR e.action IN (SELECT jsonb_array_elements_text($7::jsonb)))"
    "     AND ($8 = '' OR e.actor_id = NULLIF($8, '')::uuid"
    "          OR e.actor_token_id = NULLIF($8, '')::uuid)"
    "     AND ($3 = '' OR ensign_audit_text(e.summary, e.action, e.actor_name, e.location)"
    "                     LIKE ensign_search_pattern($3))"
    "   ORDER BY e.seq DESC LIMIT $5::int)"
    PAGE_SELECT("seq DESC", "seq::text");

/* $1 org id. */
static const char CONFIG_SQL[] =
    "SELECT 200, json_build_object('ip_disclosure', ip_disclosure)::text, NULL::text"
    "  FROM orgs WHERE id = $1::uuid";

/* $1 org id, $2 ip_disclosure ("t"/"f"), $3 audit actor. A change is an event. */
static const char CONFIG_PUT_SQL[] =
    "WITH old AS (SELECT id, ip_disclosure FROM orgs WHERE id = $1::uuid FOR UPDATE),"
    " u AS (UPDATE orgs SET ip_disclosure = $2::boolean, updated_at = now() FROM old"
    "        WHERE orgs.id = old.id AND old.ip_disclosure <> $2::boolean"
    "       RETURNING orgs.ip_disclosure),"
    " aud AS (" AUDIT_INSERT("(SELECT 'audit.config_updated' AS action,"
                             " CASE WHEN u.ip_disclosure THEN 'Turned IP disclosure on'"
                             "      ELSE 'Turned IP disclosure off' END AS summary,"
                             " 'audit/config' AS location FROM u) AS s", "$3") ")"
    " SELECT 200, json_build_object('ip_disclosure', $2::boolean)::text, NULL::text FROM old";

/* clang-format on */

/* The list's filters, as the statement and the Link URL take them. */
struct audit_filter {
    struct json_object *actions; /* array of action keys; owned */
    char actor[AUTH_UUID_LEN + 1];
};

/* An action key: dotted lowercase words ("flag.created", "sdk_key.revoked"). */
static bool action_key_ok(const char *s)
{
    size_t len = strlen(s);
    if (len == 0 || len > AUDIT_ACTION_MAX_CHARS || s[0] == '.' || s[len - 1] == '.' ||
        strchr(s, '.') == NULL || strstr(s, "..") != NULL)
        return false;
    return strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_.") == len;
}

static void add_action(struct validate *v, struct audit_filter *f, const char *action)
{
    if (!action_key_ok(action))
        validate_error(v, "action",
                       "not an action key (dotted lowercase words, e.g. "
                       "flag.created)");
    else if (json_object_array_length(f->actions) >= AUDIT_ACTIONS_MAX)
        validate_error(v, "action", "at most %d action keys", AUDIT_ACTIONS_MAX);
    else
        json_object_array_add(f->actions, json_object_new_string(action));
}

static void set_actor(struct validate *v, struct audit_filter *f, const char *actor)
{
    if (!validate_uuid_ok(actor))
        validate_error(v, "actor", "must be a user id (uuid)");
    else
        snprintf(f->actor, sizeof f->actor, "%s", actor);
}

/* GET: every action=, and actor=, of the query string. */
static void read_query_filters(struct http_request *r, struct validate *v, struct audit_filter *f)
{
    struct evkeyvalq query;
    if (r->query == NULL)
        return;
    if (evhttp_parse_query_str(r->query, &query) != 0) {
        evhttp_clear_headers(&query);
        validate_error(v, NULL, "unparseable query string");
        return;
    }
    for (struct evkeyval *kv = query.tqh_first; kv; kv = kv->next.tqe_next) {
        if (strcmp(kv->key, "action") == 0)
            add_action(v, f, kv->value);
        else if (strcmp(kv->key, "actor") == 0)
            set_actor(v, f, kv->value);
    }
    evhttp_clear_headers(&query);
}

/* QUERY: "action" (a string or an array of strings) and "actor" of the
 * JSON body (page_read has already checked that it parses). */
static void read_body_filters(struct http_request *r, struct validate *v, struct audit_filter *f)
{
    size_t len;
    const char *text = http_body(r, &len);
    struct json_object *body = text ? json_tokener_parse(text) : NULL, *action, *actor;
    if (!json_object_is_type(body, json_type_object)) {
        json_object_put(body);
        return;
    }
    if (json_object_object_get_ex(body, "action", &action) && action != NULL) {
        bool array = json_object_is_type(action, json_type_array);
        size_t n = array ? json_object_array_length(action) : 1;
        for (size_t i = 0; i < n; i++) {
            struct json_object *item = array ? json_object_array_get_idx(action, i) : action;
            if (json_object_is_type(item, json_type_string))
                add_action(v, f, json_object_get_string(item));
            else
                validate_error(v, "action", "an action key or an array of action keys");
        }
    }
    if (json_object_object_get_ex(body, "actor", &actor) && actor != NULL) {
        if (json_object_is_type(actor, json_type_string))
            set_actor(v, f, json_object_get_string(actor));
        else
            validate_error(v, "actor", "must be a user id (uuid)");
    }
    json_object_put(body);
}

/* The filters in the Link URL: "action=A&...actor=ID&". */
static void link_extra(const struct audit_filter *f, char *out, size_t outlen)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < json_object_array_length(f->actions); i++) {
        char *enc = evhttp_uriencode(
            json_object_get_string(json_object_array_get_idx(f->actions, i)), -1, 0);
        if (enc != NULL && used < outlen)
            used += (size_t)snprintf(out + used, outlen - used, "action=%s&", enc);
        event_memory_release(enc); /* libevent's block (event_memory.h) */
    }
    if (f->actor[0] != '\0' && used < outlen)
        snprintf(out + used, outlen - used, "actor=%s&", f->actor);
}

static void run_list(struct http_request *r, const struct mgmt_ctx *ctx, struct page_request *page,
                     const struct audit_filter *f)
{
    const char *actions = json_object_to_json_string_ext(f->actions, JSON_C_TO_STRING_PLAIN);
    link_extra(f, page->link_extra, sizeof page->link_extra);
    /* The cursor's scope: the organization and the filters. */
    size_t scope_len = strlen(ctx->org_id) + strlen(actions) + strlen(f->actor) + 3;
    char *scope = malloc(scope_len);
    if (scope == NULL) {
        http_send_error(r, 500, "out of memory");
        return;
    }
    snprintf(scope, scope_len, "%s|%s|%s", ctx->org_id, actions, f->actor);
    const char *extra[] = {ctx->org_id, actions, f->actor};
    page_run(r, LIST_SQL, scope, page, 3, extra, "events");
    free(scope);
}

void audit_list(struct http_request *r, const struct mgmt_ctx *ctx)
{
    struct page_request *page = malloc(sizeof *page);
    if (page == NULL) {
        http_send_error(r, 500, "out of memory");
        return;
    }
    if (!page_read(r, page)) {
        free(page);
        return;
    }
    struct audit_filter f = {.actions = json_object_new_array()};
    struct validate v;
    validate_init(&v);
    if (r->method == METHOD_QUERY)
        read_body_filters(r, &v, &f);
    else
        read_query_filters(r, &v, &f);
    if (validate_ok(&v))
        run_list(r, ctx, page, &f);
    else
        mgmt_send_invalid(r, &v);
    validate_free(&v);
    json_object_put(f.actions);
    free(page);
}

void audit_config_get(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const char *params[] = {ctx->org_id};
    mgmt_query(r, CONFIG_SQL, 1, params, mgmt_answer_cb, r);
}

void audit_config_put(struct http_request *r, const struct mgmt_ctx *ctx)
{
    struct json_object *body = ctx->body; /* mgmt_dispatch parsed and checked it; ours to put */
    bool disclose = json_object_get_boolean(mgmt_body_member(body, "ip_disclosure"));
    const char *params[] = {ctx->org_id, disclose ? "t" : "f", ctx->audit_actor};
    mgmt_query(r, CONFIG_PUT_SQL, 3, params, mgmt_answer_cb, r);
    json_object_put(body);
}

/* ---- schemas ---- */

const char audit_list_schema[] =
    "{\"type\":\"object\",\"required\":[\"events\"],\"properties\":{\"events\":{"
    "\"type\":\"array\",\"items\":{\"type\":\"object\","
    "\"required\":[\"id\",\"action\",\"summary\",\"actor\",\"location\",\"created_at\"],"
    "\"properties\":{\"id\":{\"type\":\"string\",\"format\":\"uuid\"},"
    "\"action\":{\"type\":\"string\",\"description\":\"Dotted action key, e.g. "
    "flag.created\"},"
    "\"summary\":{\"type\":\"string\"},"
    "\"actor\":{\"type\":\"object\",\"properties\":{\"id\":{\"type\":[\"string\",\"null\"]},"
    "\"name\":{\"type\":[\"string\",\"null\"]}}},"
    "\"ip\":{\"type\":[\"string\",\"null\"],\"description\":\"Only while ip_disclosure is "
    "on\"},"
    "\"location\":{\"type\":[\"string\",\"null\"],\"description\":\"The changed resource's "
    "path in the organization\"},"
    "\"created_at\":{\"type\":\"string\",\"format\":\"date-time\"}}}}}}";

const char audit_config_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"ip_disclosure\"],"
    "\"properties\":{\"$schema\":{\"type\":\"string\"},\"ip_disclosure\":{\"type\":\"boolean\"}}}";
