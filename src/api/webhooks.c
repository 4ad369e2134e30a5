/*
 * webhooks.c - an organization's webhooks: /v1/orgs/{org}/webhooks
 * (doc/choices.md "Webhooks").
 *
 * Owns the webhook routes: create {url, events, description} (201
 * {webhook} with its secret, the only time it is shown), list ({webhooks},
 * oldest first), read, PATCH (url, events, description, active) and
 * delete ({ok: true}). A webhook is {id, url, events, description, active,
 * consecutiveFailures, deactivatedAt, createdAt, updatedAt}.
 *
 * Invariants:
 *  - url is http(s) (base/webhook_target.h). With webhook_allow_private
 *    off, a host that is, or resolves to, a refused address class is 422;
 *    the name is resolved here (getaddrinfo on the worker's helper
 *    threads, never on its loop), every address it resolves to is
 *    checked, and a name that does not resolve is 422 too. The deliverer
 *    checks the address again on every connection.
 *  - events: 1 to 20 distinct patterns, each "*", "<resource>.*" or
 *    "<resource>.<action>" of [a-z0-9_] words.
 *  - The secret (svc_whk_ + 43 base62 characters, token.c) is minted here
 *    and stored as it is: it is the HMAC key the deliverer signs with,
 *    so it must be recoverable. It is added to the creation answer in C and
 *    never answered again.
 *  - Every write records its audit event (webhook.created, .updated,
 *    .deleted) in the same statement. A webhook reactivated by PATCH
 *    {active: true} starts its failure count again.
 *  - Roles (doc/api.md "Roles and scopes"): admin only, for reading too;
 *    the token needs the audit scope (a webhook carries the audit log out).
 *
 * Called by the worker's dispatch from the route table (routes.c).
 */
#include "api/webhooks.h"

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/token.h"
#include "base/webhook_target.h"
#include "base/work_pool.h"
#include "http/http.h"
#include "http/server.h"
#include "mgmt/audit_record.h"
#include "mgmt/validate.h"

#define EVENTS_MAX 20
#define PATTERN_MAX_CHARS 100
#define DESCRIPTION_MAX_CHARS 500
#define TOKEN_PREFIX_WEBHOOK "svc_whk_"

/* $1 org id. */
static const char LIST_SQL[] =
    "SELECT 200 AS status, json_build_object('webhooks', COALESCE(json_agg("
    "ensign_webhook_form(w) ORDER BY w.created_at, w.id), '[]'::json))::text AS body,"
    " NULL::text AS message FROM webhooks w WHERE w.org_id = $1";

/* $1 org id, $2 id. */
static const char GET_SQL[] =
    "SELECT 200 AS status, json_build_object('webhook', ensign_webhook_form(w))::text AS body,"
    " NULL::text AS message FROM webhooks w WHERE w.org_id = $1 AND w.id = $2";

/* clang-format off */

/* $1 org id, $2 url, $3 events (JSON array), $4 description, $5 secret,
 * $6 creating user or NULL, $7 audit actor. */
static const char CREATE_SQL[] =
    "WITH w AS (INSERT INTO webhooks AS x (org_id, url, events, description, secret,"
    "                                      created_by_user_id)"
    "           VALUES ($1, $2, ARRAY(SELECT jsonb_array_elements_text($3::jsonb)), $4, $5, $6)"
    "           RETURNING x.id, x.url, ensign_webhook_form(x) AS form),"
    " aud AS (" AUDIT_INSERT("(SELECT 'webhook.created' AS action,"
                             " 'Created webhook to ' || w.url AS summary,"
                             " 'webhooks/' || w.id AS location FROM w) AS s", "$7") ")"
    " SELECT 201 AS status, json_build_object('webhook', w.form)::text AS body,"
    " NULL::text AS message FROM w";

/* $1 org id, $2 id, $3 url or NULL, $4 events (JSON array) or NULL,
 * $5 description given, $6 description, $7 active or NULL, $8 actor. */
static const char UPDATE_SQL[] =
    "WITH old AS (SELECT id FROM webhooks WHERE org_id = $1 AND id = $2 FOR UPDATE),"
    " u AS (UPDATE webhooks x SET url = COALESCE($3, x.url),"
    "        events = CASE WHEN $4::jsonb IS NULL THEN x.events"
    "                      ELSE ARRAY(SELECT jsonb_array_elements_text($4::jsonb)) END,"
    "        description = CASE WHEN $5::boolean THEN $6 ELSE x.description END,"
    "        active = COALESCE($7::boolean, x.active),"
    "        consecutive_failures = CASE WHEN $7::boolean AND NOT x.active THEN 0"
    "                                    ELSE x.consecutive_failures END,"
    "        deactivated_at = CASE WHEN $7::boolean THEN NULL ELSE x.deactivated_at END,"
    "        updated_at = now()"
    "        FROM old WHERE x.id = old.id RETURNING x.id, x.url, ensign_webhook_form(x) AS form),"
    " aud AS (" AUDIT_INSERT("(SELECT 'webhook.updated' AS action,"
                             " 'Updated webhook to ' || u.url AS summary,"
                             " 'webhooks/' || u.id AS location FROM u) AS s", "$8") ")"
    " SELECT 200 AS status, json_build_object('webhook', u.form)::text AS body,"
    " NULL::text AS message FROM u";

/* $1 org id, $2 id, $3 actor. */
static const char DELETE_SQL[] =
    "WITH d AS (DELETE FROM webhooks WHERE org_id = $1 AND id = $2 RETURNING id, url),"
    " aud AS (" AUDIT_INSERT("(SELECT 'webhook.deleted' AS action,"
                             " 'Deleted webhook to ' || d.url AS summary,"
                             " 'webhooks/' || d.id AS location FROM d) AS s", "$3") ")"
    " SELECT 200 AS status, '{\"ok\": true}' AS body, NULL::text AS message FROM d";

/* clang-format on */

/* A create or an update in flight: its inputs, copied out of the request's
 * body and context (both end with the dispatcher's call), wait here while
 * the host resolves. Owned by the request's flow; freed once answered. */
struct hook_write {
    struct work_item item; /* first: the work pool hands back this pointer */
    struct http_request *r;
    bool create;
    bool resolve; /* the host is a name to check after DNS */
    struct webhook_url target;
    char refused[160]; /* the helper thread's verdict: "" when every address is fine */
    char org_id[AUTH_UUID_LEN + 1];
    char id[AUTH_UUID_LEN + 1];
    char user_id[AUTH_UUID_LEN + 1];
    char audit_actor[AUDIT_ACTOR_JSON_MAX];
    char *url;         /* NULL: unchanged (update) */
    char *events;      /* JSON array text; NULL: unchanged (update) */
    char *description; /* NULL: none */
    bool description_given;
    int active; /* -1 unchanged, 0, 1 */
    struct token_secret secret;
};

static void write_free(struct hook_write *w)
{
    explicit_bzero(w->secret.token, sizeof w->secret.token);
    free(w->url);
    free(w->events);
    free(w->description);
    free(w);
}

static char *dup_or_null(const char *s)
{
    return s != NULL ? strdup(s) : NULL;
}

/* ---- events ---- */

static bool word_ok(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return false;
    return true;
}

/* "*", "word.*" or "word.word". */
static bool pattern_ok(const char *p)
{
    if (strcmp(p, "*") == 0)
        return true;
    const char *dot = strchr(p, '.');
    if (dot == NULL || !word_ok(p, (size_t)(dot - p)))
        return false;
    return strcmp(dot + 1, "*") == 0 || word_ok(dot + 1, strlen(dot + 1));
}

static void validate_events(struct validate *v, struct json_object *events)
{
    size_t n = json_object_array_length(events);
    if (n == 0)
        validate_error(v, "events", "must name at least one pattern");
    for (size_t i = 0; i < n; i++) {
        const char *p = json_object_get_string(json_object_array_get_idx(events, i));
        size_t mark = validate_push_field(v, "events");
        size_t at = validate_push_index(v, i);
        if (!pattern_ok(p))
            validate_error(v, NULL, "must be *, <resource>.* or <resource>.<action>");
        for (size_t j = 0; j < i; j++)
            if (strcmp(p, json_object_get_string(json_object_array_get_idx(events, j))) == 0)
                validate_error(v, NULL, "is listed twice");
        validate_pop(v, at);
        validate_pop(v, mark);
    }
}

/* ---- the target check ---- */

/* Helper thread: resolves the host and judges every address. */
static void resolve_target(struct work_item *item)
{
    struct hook_write *w = (struct hook_write *)item;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *list = NULL;
    if (getaddrinfo(w->target.host, NULL, &hints, &list) != 0 || list == NULL) {
        snprintf(w->refused, sizeof w->refused, "names a host that does not resolve");
        return;
    }
    for (struct addrinfo *a = list; a != NULL; a = a->ai_next) {
        const char *why = webhook_address_class(a->ai_addr, a->ai_addrlen);
        if (why != NULL) {
            snprintf(w->refused, sizeof w->refused,
                     "resolves to a %s address (webhook_allow_private is off)", why);
            break;
        }
    }
    freeaddrinfo(list);
}

static void on_written(PGresult *res, const char *error, void *arg);

/* Sends the created webhook with its secret; false when res is not a 201. */
static bool send_with_secret(struct hook_write *w, const PGresult *res)
{
    if (!db_result_ok(res) || PQntuples(res) != 1 || PQnfields(res) < 2 ||
        strcmp(PQgetvalue(res, 0, 0), "201") != 0)
        return false;
    struct json_object *body = json_tokener_parse(PQgetvalue(res, 0, 1)), *hook;
    if (body == NULL || !json_object_object_get_ex(body, "webhook", &hook)) {
        json_object_put(body);
        return false;
    }
    json_object_object_add(hook, "secret", json_object_new_string(w->secret.token));
    http_send_json(w->r, 201, body);
    return true;
}

static void on_written(PGresult *res, const char *error, void *arg)
{
    struct hook_write *w = arg;
    if (!w->create || !send_with_secret(w, res))
        mgmt_answer(w->r, res, error, "webhook not found");
    write_free(w);
}

static void send_url_refused(struct http_request *r, const char *message)
{
    struct validate v;
    validate_init(&v);
    validate_error(&v, "url", "%s", message);
    mgmt_send_invalid(r, &v);
    validate_free(&v);
}

/* Queues the statement once the target passed; answers r either way. */
static void write_hook(struct hook_write *w)
{
    if (w->refused[0] != '\0') {
        send_url_refused(w->r, w->refused);
        write_free(w);
        return;
    }
    struct http_request *r = w->r;
    if (w->create) {
        if (token_mint(TOKEN_PREFIX_WEBHOOK, &w->secret) != 0) {
            http_send_error(r, 500, "cannot generate a webhook secret");
            write_free(w);
            return;
        }
        const char *params[] = {w->org_id,      w->url,          w->events,
                                w->description, w->secret.token, w->user_id[0] ? w->user_id : NULL,
                                w->audit_actor};
        if (mgmt_query(r, CREATE_SQL, 7, params, on_written, w) != 0)
            write_free(w);
        return;
    }
    const char *active = w->active < 0 ? NULL : w->active ? "true" : "false";
    const char *params[] = {
        w->org_id,      w->id,  w->url,        w->events, w->description_given ? "true" : "false",
        w->description, active, w->audit_actor};
    if (mgmt_query(r, UPDATE_SQL, 8, params, on_written, w) != 0)
        write_free(w);
}

/* Loop thread: the helper's verdict is in. */
static void on_resolved(struct work_item *item, bool cancelled)
{
    struct hook_write *w = (struct hook_write *)item;
    if (cancelled) {
        http_send_error(w->r, 503, "shutting down");
        write_free(w);
        return;
    }
    write_hook(w);
}

/* Judges the URL's host: a literal at once, a name on a helper thread. */
static void check_target_then_write(struct hook_write *w)
{
    const struct config *cfg = w->r->server->cfg;
    if (w->url == NULL || cfg->webhook_allow_private) {
        write_hook(w);
        return;
    }
    bool literal = false;
    const char *why = webhook_literal_class(w->target.host, &literal);
    if (literal) {
        if (why != NULL)
            snprintf(w->refused, sizeof w->refused,
                     "is a %s address (webhook_allow_private is off)", why);
        write_hook(w);
        return;
    }
    w->item.run = resolve_target;
    w->item.done = on_resolved;
    if (w->r->server->passwords == NULL ||
        work_pool_submit(w->r->server->passwords, &w->item) != 0) {
        http_send_error(w->r, 503, "busy: cannot resolve the webhook's host now");
        write_free(w);
    }
}

/* ---- the routes ---- */

static struct hook_write *write_new(struct http_request *r, const struct mgmt_ctx *ctx, bool create)
{
    struct hook_write *w = calloc(1, sizeof *w);
    if (w == NULL)
        return NULL;
    w->r = r;
    w->create = create;
    w->active = -1;
    snprintf(w->org_id, sizeof w->org_id, "%s", ctx->org_id);
    snprintf(w->user_id, sizeof w->user_id, "%s", ctx->actor_user_id);
    snprintf(w->audit_actor, sizeof w->audit_actor, "%s", ctx->audit_actor);
    return w;
}

/* Validates the fields common to create and update into w (url parsed). */
static void read_fields(struct validate *v, struct json_object *body, bool create,
                        struct hook_write *w)
{
    const char *url = NULL, *description = NULL;
    struct json_object *events = NULL;
    unsigned required = create ? VALIDATE_REQUIRED : 0;
    if (validate_string(v, body, "url", 1, WEBHOOK_URL_MAX, required, &url) == VALIDATE_SET) {
        const char *bad = webhook_url_parse(url, &w->target);
        if (bad != NULL)
            validate_error(v, "url", "%s", bad);
        w->url = strdup(url);
    }
    if (validate_string_array(v, body, "events", EVENTS_MAX, 1, PATTERN_MAX_CHARS, required,
                              &events) == VALIDATE_SET) {
        validate_events(v, events);
        w->events = strdup(json_object_to_json_string(events));
    }
    enum validate_found d = validate_string(v, body, "description", 0, DESCRIPTION_MAX_CHARS,
                                            VALIDATE_NULLABLE, &description);
    w->description_given = d == VALIDATE_SET || d == VALIDATE_NULL;
    w->description = dup_or_null(d == VALIDATE_SET ? description : NULL);
}

/* Answers 422 with v's errors (and frees w), or checks w's target and
 * writes it; frees v. */
static void write_if_valid(struct http_request *r, struct hook_write *w, struct validate *v)
{
    if (validate_ok(v)) {
        check_target_then_write(w);
    } else {
        mgmt_send_invalid(r, v);
        write_free(w);
    }
    validate_free(v);
}

void webhooks_create(struct http_request *r, const struct mgmt_ctx *ctx)
{
    static const char *const fields[] = {"url", "events", "description", NULL};
    struct json_object *body = ctx->body; /* mgmt_dispatch parsed it; ours to put */
    struct hook_write *w = write_new(r, ctx, true);
    if (w == NULL) {
        json_object_put(body);
        http_send_error(r, 500, "out of memory");
        return;
    }
    struct validate v;
    validate_init(&v);
    validate_only_fields(&v, body, fields);
    read_fields(&v, body, true, w);
    json_object_put(body);
    write_if_valid(r, w, &v);
}

void webhooks_update(struct http_request *r, const struct mgmt_ctx *ctx)
{
    static const char *const fields[] = {"url", "events", "description", "active", NULL};
    struct json_object *body = ctx->body;
    const char *id = mgmt_param(r, "id");
    struct hook_write *w = validate_uuid_ok(id) ? write_new(r, ctx, false) : NULL;
    if (w == NULL) {
        json_object_put(body);
        http_send_error(r, 404, "webhook not found");
        return;
    }
    snprintf(w->id, sizeof w->id, "%s", id);
    struct validate v;
    validate_init(&v);
    validate_only_fields(&v, body, fields);
    read_fields(&v, body, false, w);
    bool active;
    if (validate_bool(&v, body, "active", 0, &active) == VALIDATE_SET)
        w->active = active ? 1 : 0;
    json_object_put(body);
    write_if_valid(r, w, &v);
}

static void answer_hook(PGresult *res, const char *error, void *arg)
{
    mgmt_answer(arg, res, error, "webhook not found");
}

void webhooks_list(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const char *params[] = {ctx->org_id};
    mgmt_query(r, LIST_SQL, 1, params, mgmt_answer_cb, r);
}

void webhooks_get(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const char *id = mgmt_uuid_param(r, "id", "webhook not found");
    if (id == NULL)
        return;
    const char *params[] = {ctx->org_id, id};
    mgmt_query(r, GET_SQL, 2, params, answer_hook, r);
}

void webhooks_delete(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const char *id = mgmt_uuid_param(r, "id", "webhook not found");
    if (id == NULL)
        return;
    const char *params[] = {ctx->org_id, id, ctx->audit_actor};
    mgmt_query(r, DELETE_SQL, 3, params, answer_hook, r);
}

/* ---- schemas ---- */

#define HOOK_PROPERTIES                                                                            \
    "\"id\":{\"type\":\"string\",\"format\":\"uuid\"},\"url\":{\"type\":\"string\"},"              \
    "\"events\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"                             \
    "\"description\":{\"type\":[\"string\",\"null\"]},\"active\":{\"type\":\"boolean\"},"          \
    "\"consecutiveFailures\":{\"type\":\"integer\"},"                                              \
    "\"deactivatedAt\":{\"type\":[\"string\",\"null\"],\"format\":\"date-time\"},"                 \
    "\"createdAt\":{\"type\":\"string\",\"format\":\"date-time\"},"                                \
    "\"updatedAt\":{\"type\":\"string\",\"format\":\"date-time\"}"

#define HOOK_REQUIRED                                                                              \
    "\"id\",\"url\",\"events\",\"description\",\"active\",\"consecutiveFailures\","                \
    "\"deactivatedAt\",\"createdAt\",\"updatedAt\""

#define HOOK_FIELDS                                                                                \
    "\"url\":{\"type\":\"string\",\"maxLength\":2048,\"description\":\"https:// or http://; "      \
    "loopback, private, link-local, unique-local and CGNAT hosts are 422 unless "                  \
    "webhook_allow_private is on.\"},"                                                             \
    "\"events\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":20,\"uniqueItems\":true,"          \
    "\"items\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":100},"                           \
    "\"description\":\"Audit action patterns: *, RESOURCE.* or RESOURCE.ACTION (lowercase "        \
    "letters, digits and underscores), e.g. flag.*, segment.created; the handler checks "          \
    "the form.\"},"                                                                                \
    "\"description\":{\"type\":[\"string\",\"null\"],\"maxLength\":500}"

const char webhooks_create_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"url\",\"events\"],"
    "\"properties\":{" HOOK_FIELDS "}}";

const char webhooks_update_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{" HOOK_FIELDS
    ",\"active\":{\"type\":\"boolean\"}}}";

const char webhooks_one_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"webhook\"],"
    "\"properties\":{\"webhook\":{\"type\":\"object\",\"additionalProperties\":false,"
    "\"required\":[" HOOK_REQUIRED "],\"properties\":{" HOOK_PROPERTIES "}}}}";

const char webhooks_created_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"webhook\"],"
    "\"properties\":{\"webhook\":{\"type\":\"object\",\"additionalProperties\":false,"
    "\"required\":[" HOOK_REQUIRED ",\"secret\"],\"properties\":{" HOOK_PROPERTIES ","
    "\"secret\":{\"type\":\"string\",\"description\":\"The signing secret (svc_whk_...), "
    "returned only here: Ensign-Signature is HMAC-SHA256 of t.body with it.\"}}}}}";

const char webhooks_list_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"webhooks\"],"
    "\"properties\":{\"webhooks\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
    "\"additionalProperties\":false,\"required\":[" HOOK_REQUIRED "],"
    "\"properties\":{" HOOK_PROPERTIES "}}}}}";

const char webhooks_ack_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"ok\"],"
    "\"properties\":{\"ok\":{\"const\":true}}}";
