/*
 * apidoc.c - writes the Markdown API reference from the route table.
 *
 * Owns the text of doc/api.md and of GET /docs/api: a fixed preamble with
 * the rules every operation shares (its section titles are what comments
 * in the tree cite), then one section per surface and one entry per row.
 * Role and scope names come from mgmt.h and auth.h, so a row says here
 * exactly what mgmt_dispatch enforces. Invariant: nothing here knows a
 * route by name; the table is the truth.
 */
#include "api/apidoc.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "db/auth.h"
#include "http/http.h"
#include "mgmt/mgmt.h"
#include "http/server.h"

static const char preamble[] =
    "# Ensign API reference\n"
    "\n"
    "Generated from the route table (`src/daemon/routes.c`) by `make api-doc`;\n"
    "`make check` fails when this file and the table differ. ensignd serves the\n"
    "same text at `GET /docs/api`, and the OpenAPI 3.1 description at\n"
    "`GET /openapi.json`. Ensign's choices where the contract leaves room are in\n"
    "`doc/choices.md`; the operator's side is in ensignd(8) and ensign.conf(5).\n"
    "\n"
    "## Surfaces and error bodies\n"
    "\n"
    "- **Evaluation** (`/ofrep/...`, OpenFeature Remote Evaluation Protocol):\n"
    "  errors are `{errorCode, errorDetails, message, status}` (and `key` on the\n"
    "  single-flag route); `message` equals `errorDetails`.\n"
    "- **Flags management** (`/v1/...`): errors are `{message, status}`, with\n"
    "  `errors` (field name to messages) only on a 422. Timestamps are ISO 8601\n"
    "  in UTC with milliseconds (`2025-01-31T12:00:00.123Z`). The flag list\n"
    "  pages by key: `limit` 1 to 1,000 (default 1,000; outside, a 422),\n"
    "  `cursor` (from the `Link: <...>; rel=\"next\"` present while more flags\n"
    "  remain; bound to the organization, `q`, `archived` and `stale`: any\n"
    "  other use is a 422) and `q` (key, name or a tag, case-insensitive, on the\n"
    "  server); without them an organization of up to 1,000 flags answers them\n"
    "  all, as it always did. A flag's revisions page like the lists below.\n"
    "- **Accounts, organizations, projects** (no prefix: `/me`, `/orgs`, ...):\n"
    "  errors are RFC 9457 Problem bodies (`application/problem+json`, `type`\n"
    "  `about:blank`, `title` the reason phrase, field messages in `errors` on a\n"
    "  422). Lists page with `limit` (1 to 100) and an opaque `cursor`; the next\n"
    "  page is a relative `Link: <...>; rel=\"next\"`. A list answers `GET` and\n"
    "  `QUERY` (the same parameters in a JSON body) alike.\n"
    "- **MCP** (`POST /mcp`, the Model Context Protocol's streamable HTTP\n"
    "  transport for coding agents, protocol 2025-06-18 and 2025-11-25): one\n"
    "  JSON-RPC 2.0 message per POST, answered with one `application/json` body\n"
    "  (one `message` event of a `text/event-stream` when `Accept` takes only\n"
    "  that; 202 and no body for a notification); no session, no GET stream\n"
    "  (`GET /mcp` is a 405). Errors of the message are JSON-RPC errors (-32700\n"
    "  not JSON, -32600 not a message or a batch, both with 400; -32601 unknown\n"
    "  method, -32602 bad params with 200); 401 and 403 answer as on the\n"
    "  other unprefixed routes. Its tools (`tools/list`) are `/v1` operations,\n"
    "  each taking `org`, the organization's slug: a call runs the operation as\n"
    "  the token's user, and the operation's error is the tool's result with\n"
    "  `isError: true`, its message as text and `structuredContent`\n"
    "  `{error: {status, message, errors}}`.\n"
    "- Every surface: 400 for a body that is not JSON, 401 without a valid\n"
    "  credential, 403 for a credential that may not do the operation, 404 for an\n"
    "  organization the caller does not belong to (its existence is never\n"
    "  revealed), 422 for a body that breaks its schema, 429 when rate limited,\n"
    "  503 with `Retry-After` while the database is unavailable.\n"
    "\n"
    "## Credentials\n"
    "\n"
    "- **SDK key** (`svc_sdk_...`): `Authorization: Bearer KEY` or\n"
    "  `X-API-Key: KEY`, on `/ofrep` only; it selects one environment.\n"
    "- **Access token** (`svc_oat_...`): `Authorization: Bearer TOKEN`. A\n"
    "  personal token acts as its user; an organization token acts as its\n"
    "  organization with role `admin`, in that organization only. An access\n"
    "  token on `/ofrep`, or an SDK key elsewhere, is a 401.\n"
    "- **Session cookie** (`ensign_session`): set by `POST /v1/session`\n"
    "  (HttpOnly, SameSite=Lax), ended by `DELETE /v1/session`; it acts as its\n"
    "  user with every scope. An unsafe method so authenticated needs the\n"
    "  server's own `Origin` or `Sec-Fetch-Site: same-origin`, else 403.\n"
    "- **Internal operations** (summaries start with \"Internal\"): the access\n"
    "  token (a deleted user's is accepted) and an `Ensign-Internal-Key`\n"
    "  header (`svc_int_...`, made by `ensignctl internal-key create`); a\n"
    "  missing or invalid key is a 403. Never a browser's.\n"
    "- Secrets (tokens, keys, invitation tokens) are stored as SHA-256 digests\n"
    "  and passwords with scrypt; a secret's plaintext is shown once.\n"
    "\n"
    "## Roles and scopes\n"
    "\n"
    "Organization roles, each including the one before: `viewer` reads;\n"
    "`member` also writes flags, variants, rules, segments and entities; `admin`\n"
    "also manages SDK keys, members, invitations, projects, audit settings and\n"
    "webhooks (scope `audit`: a webhook carries the audit log out);\n"
    "`owner` also renames the organization and manages owners. An organization\n"
    "always keeps an owner (demoting or removing the last one, or the last one\n"
    "leaving, is a 409).\n"
    "\n"
    "Token scopes: `flags`, `orgs`, `projects`, `members`, `audit`, `tokens`,\n"
    "`notifications`, each `read` or `write` (`write` implies `read`); `full`\n"
    "grants every scope. A token never grants more than its user's role.\n"
    "\n"
    "An operation below that names **Needs** is checked before it runs, in this\n"
    "order: credential (401), the management write rate limit for writes (429),\n"
    "organization (404), role and scope (403), then the request body (400, 422)\n"
    "against its **Request body** schema below: what the schema says is what is\n"
    "enforced, every field it refuses named in `errors`. Checks a schema cannot\n"
    "state (the variants or segments a body names, rules across fields) follow\n"
    "in the operation, and its schema's description names them.\n"
    "\n"
    "## Browsers\n"
    "\n"
    "Every `/ofrep` answer carries `Vary: Origin`; the `Access-Control-*` headers\n"
    "come only when the request carries `Origin`, and\n"
    "`Access-Control-Allow-Origin` follows `cors_allow_origins` (ensign.conf(5)).\n"
    "`OPTIONS` on `/ofrep` (a preflight) needs no credential.\n"
    "\n"
    "## Webhook deliveries\n"
    "\n"
    "Each audit event matching an active webhook's `events` is POSTed to its\n"
    "`url` with `Content-Type: application/json` and the body `{id, action, org,\n"
    "actor, at, location, summary, before, after}` (`id` the audit event's id,\n"
    "`org` the organization's slug, `actor` `{userId, tokenId, name}`;\n"
    "`before`/`after` the flag's whole state around the change for an event on a\n"
    "flag, else null). Headers: `Ensign-Event` (the action), `Ensign-Delivery`\n"
    "(the delivery's id: the same on every retry, so dedupe on it) and\n"
    "`Ensign-Signature: t=UNIX,v1=HEX`, HEX the lowercase hex HMAC-SHA256 of\n"
    "`t + \".\" + body` keyed with the webhook's secret. A 2xx within 10 s is\n"
    "delivered; anything else, a redirect included (never followed), is retried\n"
    "with exponential backoff and jitter for 24 hours, then `failed`. A\n"
    "delivery is sent at least once: only a node crashing between the request\n"
    "and its record sends it twice.\n";

struct surface {
    const char *title;
    const char *prefix; /* the paths of the surface start with it; NULL: the rest */
};

static const struct surface surfaces[] = {
    {"Evaluation (`/ofrep`)", "/ofrep/"},
    {"Flags management (`/v1`)", "/v1/"},
    {"Accounts, organizations, projects and the rest (no prefix)", NULL},
};

static bool in_surface(const struct surface *s, const char *pattern)
{
    if (s->prefix != NULL)
        return strncmp(pattern, s->prefix, strlen(s->prefix)) == 0;
    for (size_t i = 0; i < sizeof surfaces / sizeof surfaces[0]; i++) {
        if (surfaces[i].prefix != NULL &&
            strncmp(pattern, surfaces[i].prefix, strlen(surfaces[i].prefix)) == 0)
            return false;
    }
    return true;
}

static const char *credential_text(enum route_auth auth)
{
    switch (auth) {
    case ROUTE_AUTH_ACCESS_TOKEN:
        return "access token";
    case ROUTE_AUTH_TOKEN_OR_COOKIE:
        return "access token or session cookie";
    case ROUTE_AUTH_SDK_KEY:
        return "SDK key";
    case ROUTE_AUTH_NONE:
        break;
    }
    return "none";
}

/* True when an earlier row has the same method and pattern. */
static bool repeated(const struct route *routes, size_t i)
{
    for (size_t j = 0; j < i; j++) {
        if (routes[j].method == routes[i].method &&
            strcmp(routes[j].pattern, routes[i].pattern) == 0)
            return true;
    }
    return false;
}

/* The scope name of one enum auth_scope bit. */
static void write_scope(FILE *out, unsigned scope)
{
    struct json_object *names = auth_scopes_json(scope, 0);
    bool any = false;
    json_object_object_foreach(names, name, level)
    {
        (void)level;
        fprintf(out, "%s`%s`", any ? ", " : "", name);
        any = true;
    }
    if (!any)
        fputs("(none)", out);
    json_object_put(names);
}

static void write_schema(FILE *out, const char *label, const char *text)
{
    if (text == NULL)
        return;
    struct json_object *schema = json_tokener_parse(text);
    fprintf(out, "\n%s:\n\n```json\n%s\n```\n", label,
            schema != NULL ? json_object_to_json_string_ext(
                                 schema, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                             JSON_C_TO_STRING_NOSLASHESCAPE)
                           : text);
    json_object_put(schema);
}

/* The "Needs" line: who may call a dispatched row (its caller kind), with
 * the role and scope mgmt_dispatch checks where the kind has them. */
static void write_needs(FILE *out, const struct route_need *need)
{
    const char *access = need->write ? "write" : "read";
    switch (need->caller) {
    case ROUTE_CALLER_ORG:
        fprintf(out, "- Needs: role `%s`, scope ", mgmt_role_name((enum mgmt_role)need->role));
        write_scope(out, need->scope);
        fprintf(out, " at `%s`\n", access);
        return;
    case ROUTE_CALLER_ACCOUNT:
        fprintf(out, "- Needs: the caller's own account (not an organization token), scope ");
        break;
    case ROUTE_CALLER_ANY:
        fprintf(out, "- Needs: any access token (organization tokens too), scope ");
        break;
    case ROUTE_CALLER_INTERNAL:
        fputs("- Needs: a user's access token and the Ensign-Internal-Key header\n", out);
        return;
    case ROUTE_CALLER_IDENTITY:
        fputs("- Needs: any credential; no scope\n", out);
        return;
    }
    write_scope(out, need->scope);
    fprintf(out, " at `%s`\n", access);
}

static void write_route(FILE *out, const struct route *route)
{
    fprintf(out, "\n### %s %s\n\n%s.\n\n", router_method_name(route->method), route->pattern,
            route->summary);
    fprintf(out, "- Credential: %s\n", credential_text(route->auth));
    if (route->op != NULL)
        write_needs(out, &route->need);
    fprintf(out, "- Success: %d\n", route->success_status != 0 ? route->success_status : 200);
    write_schema(out, "Request body", route->request_schema);
    write_schema(out, "Response body", route->response_schema);
}

char *apidoc_markdown(const struct route *routes, size_t count)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (out == NULL)
        return NULL;
    fputs(preamble, out);
    for (size_t s = 0; s < sizeof surfaces / sizeof surfaces[0]; s++) {
        fprintf(out, "\n## %s\n", surfaces[s].title);
        for (size_t i = 0; i < count; i++) {
            if (routes[i].method != METHOD_HEAD && in_surface(&surfaces[s], routes[i].pattern) &&
                !repeated(routes, i))
                write_route(out, &routes[i]);
        }
    }
    if (fclose(out) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

void apidoc_get(struct http_request *r)
{
    const char *text = r->server->api_doc;
    if (text == NULL) {
        http_send_error(r, 500, "the API reference is not available");
        return;
    }
    http_send_text(r, 200, "text/markdown; charset=utf-8", text, strlen(text));
}
