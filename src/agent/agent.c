/*
 * agent.c - POST /ai/messages and POST /ai/actions/execute (see agent.h).
 *
 * Both are dispatched rows (routes.c, MGMT_OWN(ANY, FLAGS, false)): the
 * dispatcher authenticates the caller, checks the flags:read scope and the
 * body against the row's schema, then calls agent_messages or
 * agent_execute.
 *
 * /ai/messages: rate limit, the byte limits, organization, then one query for
 * the catalogue (agent_catalog.h), then either the language model
 * (agent_llm.c, when agent_llm_url is set; its tool calls checked by
 * agent_tool_check) or the built-in parser (agent_parse.c). "Explain"
 * evaluates from the worker's served snapshot with the evaluator itself
 * (eval_flag), the same code and data OFREP answers from; a matched rule
 * is then read by id for its priority, description and conditions.
 * Nothing here writes.
 *
 * /ai/actions/execute: organization, then the tool's REST
 * request (agent_tools.c) dispatched internally (http_internal_request)
 * through the same router and handler a client's request would reach, with
 * the caller's own Authorization: validation, role checks, rate limit,
 * revision, audit and NOTIFY are the REST operation's own.
 *
 * Usage counts of the built-in agent are words (agent_count_words): in,
 * the content of every message of the conversation; out, the reply and
 * the actions' summaries. With a language model, its own usage counts when
 * it reports them.
 *
 * Every request's state is one malloc'd struct freed on the one path that
 * answers.
 */
#include "agent/agent.h"

#include <event2/keyvalq_struct.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "agent/agent_catalog.h"
#include "agent/agent_llm.h"
#include "agent/agent_parse.h"
#include "agent/agent_tools.h"
#include "base/config.h"
#include "eval/eval.h"
#include "base/hex.h"
#include "http/json_flat.h"
#include "http/http.h"
#include "base/log.h"
#include "mgmt/mgmt.h"
#include "eval/ratelimit.h"
#include "eval/served_snapshot.h"
#include "http/server.h"
#include "mgmt/validate.h"

/*
 * $1 organization id, $2 AGENT_SERVED_DAYS. One row: the catalogue as
 * agent_catalog.h describes it. Variants and the served variants are aggregated once for the whole
 * organization (usage through the organization's environments, whose
 * index usage_counters has), then joined to the flags.
 */
static const char CATALOG_SQL[] =
    "WITH f AS (SELECT id, key, name, type, archived_at FROM flags WHERE org_id = $1::uuid),"
    " en AS (SELECT fe.flag_id, jsonb_object_agg(e.key, fe.enabled) AS enabled"
    "          FROM flag_environments fe JOIN environments e ON e.id = fe.environment_id"
    "         WHERE e.org_id = $1::uuid GROUP BY fe.flag_id),"
    " v AS (SELECT v.flag_id, jsonb_agg(v.key ORDER BY v.sort_order, v.created_at) AS keys"
    "         FROM variants v JOIN f ON f.id = v.flag_id GROUP BY v.flag_id),"
    " s AS (SELECT x.flag_id, jsonb_object_agg(x.env, x.variants) AS served"
    "         FROM (SELECT u.flag_id, e.key AS env, jsonb_agg(DISTINCT u.variant_key) AS variants"
    "                 FROM usage_counters u JOIN environments e ON e.id = u.environment_id"
    "                WHERE e.org_id = $1::uuid AND u.count > 0"
    "                  AND u.hour >= now() - make_interval(days => $2::int)"
    "                GROUP BY u.flag_id, e.key) x"
    "        GROUP BY x.flag_id)"
    "SELECT jsonb_build_object("
    "  'now', floor(extract(epoch FROM now()))::bigint,"
    "  'environments', (SELECT coalesce(jsonb_agg(e.key ORDER BY e.sort_order, e.key), '[]')"
    "                     FROM environments e WHERE e.org_id = $1::uuid),"
    "  'segments', (SELECT coalesce(jsonb_agg(g.key ORDER BY g.key), '[]')"
    "                 FROM segments g WHERE g.org_id = $1::uuid),"
    "  'flags', (SELECT coalesce(jsonb_agg(jsonb_build_object("
    "      'key', f.key, 'name', f.name, 'type', f.type, 'archived', f.archived_at IS NOT NULL,"
    "      'enabled', coalesce(en.enabled, '{}'),"
    "      'variants', coalesce(v.keys, '[]'), 'total', coalesce(t.total, 0),"
    "      'idleDays', CASE WHEN t.last_seen_at IS NULL OR t.total = 0 THEN NULL"
    "                  ELSE floor(extract(epoch FROM now() - t.last_seen_at) / 86400)::int END,"
    "      'served', coalesce(s.served, '{}')) ORDER BY f.key), '[]')"
    "    FROM f LEFT JOIN v ON v.flag_id = f.id LEFT JOIN s ON s.flag_id = f.id"
    "    LEFT JOIN en ON en.flag_id = f.id"
    "    LEFT JOIN flag_usage_totals t ON t.flag_id = f.id)"
    ")::text";

#define MESSAGE_SCHEMA                                                                             \
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"role\",\"content\"],"     \
    "\"properties\":{\"role\":{\"enum\":[\"user\",\"assistant\"]},\"content\":{\"type\":"          \
    "\"string\",\"minLength\":1,\"maxLength\":4000}}}"

const char agent_messages_request_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"org_id\",\"messages\"],"
    "\"description\":\"The handler checks the byte limits (4000 per message, 32000 in all) and"
    " that the last message is the user's.\",\"properties\":{"
    "\"org_id\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":64,"
    "\"description\":\"organization id or slug\"},"
    "\"messages\":{\"description\":\"the conversation, ending with the user's new message (or "
    "one message object)\",\"oneOf\":[{\"type\":\"array\",\"minItems\":1,\"maxItems\":50,"
    "\"items\":" MESSAGE_SCHEMA "}," MESSAGE_SCHEMA "]}}}";

const char agent_messages_response_schema[] =
    "{\"type\":\"object\",\"required\":[\"reply\",\"proposals\",\"usage\"],\"properties\":{"
    "\"reply\":{\"type\":\"string\"},\"proposals\":{\"type\":\"object\",\"required\":["
    "\"actions\"],\"properties\":{\"actions\":{\"type\":\"array\",\"items\":{\"type\":"
    "\"object\",\"required\":[\"id\",\"tool\",\"input\",\"summary\"],\"properties\":{\"id\":{"
    "\"type\":\"string\"},\"tool\":{\"enum\":[\"create_flag\",\"update_flag_environment\","
    "\"add_rule\",\"archive_flag\",\"restore_flag\",\"create_segment\",\"schedule_change\","
    "\"restore_revision\"]},\"input\":{\"type\":"
    "\"object\"},\"summary\":{\"type\":\"string\"}}}}}},\"usage\":{\"type\":\"object\","
    "\"required\":[\"input_tokens\",\"output_tokens\"],\"properties\":{\"input_tokens\":{"
    "\"type\":\"integer\"},\"output_tokens\":{\"type\":\"integer\"}}}}}";

const char agent_execute_request_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,"
    "\"required\":[\"org_id\",\"tool\",\"input\"],\"properties\":{"
    "\"org_id\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":64},"
    "\"tool\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":64},"
    "\"input\":{\"type\":\"object\",\"description\":\"the tool's input; the REST operation"
    " checks it\"}}}";

const char agent_execute_response_schema[] =
    "{\"type\":\"object\",\"required\":[\"result\"],\"properties\":{\"result\":{\"type\":"
    "\"object\",\"description\":\"the REST operation's success body\"}}}";

/* ---- the request body ---- */

/* The byte limit of one message (the row's schema checked its shape and
 * its length in characters); adds its bytes to *bytes. */
static void check_message(struct validate *v, const struct json_object *msg, size_t *bytes)
{
    const char *content = mgmt_body_text(msg, "content");
    size_t len = strlen(content);
    if (len > AGENT_MESSAGE_MAX_BYTES)
        validate_error(v, "content", "at most %d bytes", AGENT_MESSAGE_MAX_BYTES);
    *bytes += len;
}

/*
 * The conversation of body as an array (a new reference: a single message
 * object is wrapped), or NULL with the problems in v.
 */
static struct json_object *read_messages(struct validate *v, const struct json_object *body)
{
    struct json_object *messages = mgmt_body_member(body, "messages"), *list;
    if (json_object_is_type(messages, json_type_object)) {
        list = json_object_new_array();
        json_object_array_add(list, json_object_get(messages));
    } else {
        list = json_object_get(messages);
    }
    size_t n = json_object_array_length(list), bytes = 0;
    size_t mark = validate_push_field(v, "messages");
    for (size_t i = 0; i < n; i++) {
        size_t at = validate_push_index(v, i);
        check_message(v, json_object_array_get_idx(list, i), &bytes);
        validate_pop(v, at);
    }
    validate_pop(v, mark);
    if (bytes > AGENT_CONVERSATION_MAX_BYTES)
        validate_error(v, "messages", "at most %d bytes of content in all",
                       AGENT_CONVERSATION_MAX_BYTES);
    const char *last = mgmt_body_text(json_object_array_get_idx(list, n - 1), "role");
    if (validate_ok(v) && strcmp(last, "user") != 0)
        validate_error(v, "messages", "the last message must be the user's");
    if (!validate_ok(v)) {
        json_object_put(list);
        return NULL;
    }
    return list;
}

/* ---- /ai/messages ---- */

struct conversation {
    struct http_request *r;
    struct json_object *messages; /* owned */
    char org_id[AUTH_UUID_LEN + 1];
    struct agent_catalog catalog;
    /* the built-in answer while the matched rule is read (explain) */
    char *reply;                 /* owned */
    struct json_object *actions; /* owned */
    char rule_id[AUTH_UUID_LEN + 1];
};

static void conversation_free(struct conversation *cv)
{
    json_object_put(cv->messages);
    agent_catalog_free(&cv->catalog);
    free(cv->reply);
    json_object_put(cv->actions);
    free(cv);
}

static size_t words_in(const struct json_object *messages)
{
    size_t words = 0;
    for (size_t i = 0; i < json_object_array_length(messages); i++) {
        struct json_object *content;
        if (json_object_object_get_ex(json_object_array_get_idx(messages, i), "content", &content))
            words += agent_count_words(json_object_get_string(content));
    }
    return words;
}

static void action_id(char out[40])
{
    uint8_t bytes[12];
    if (getrandom(bytes, sizeof bytes, 0) != (ssize_t)sizeof bytes)
        memset(bytes, 0, sizeof bytes);
    memcpy(out, "act_", 4);
    hex_encode(bytes, sizeof bytes, out + 4);
}

/* Sends {reply, proposals: {actions}, usage}; takes actions. */
static void send_answer(struct conversation *cv, const char *reply, struct json_object *actions,
                        long long input_tokens, long long output_tokens)
{
    for (size_t i = 0; i < json_object_array_length(actions); i++) {
        char id[40];
        action_id(id);
        json_object_object_add(json_object_array_get_idx(actions, i), "id",
                               json_object_new_string(id));
    }
    struct json_object *body = json_object_new_object(), *proposals = json_object_new_object();
    struct json_object *usage = json_object_new_object();
    json_object_object_add(proposals, "actions", actions);
    json_object_object_add(usage, "input_tokens", json_object_new_int64(input_tokens));
    json_object_object_add(usage, "output_tokens", json_object_new_int64(output_tokens));
    json_object_object_add(body, "reply", json_object_new_string(reply));
    json_object_object_add(body, "proposals", proposals);
    json_object_object_add(body, "usage", usage);
    http_send_json(cv->r, 200, body);
}

static size_t words_out(const char *reply, const struct json_object *actions)
{
    size_t words = agent_count_words(reply);
    for (size_t i = 0; i < json_object_array_length(actions); i++) {
        struct json_object *summary;
        if (json_object_object_get_ex(json_object_array_get_idx(actions, i), "summary", &summary))
            words += agent_count_words(json_object_get_string(summary));
    }
    return words;
}

static int64_t wall_clock_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static const char *reason_text(enum eval_reason reason)
{
    switch (reason) {
    case EVAL_REASON_DISABLED:
        return "the flag is disabled in this environment, so it serves its off variant";
    case EVAL_REASON_TARGETING_MATCH:
        return "a targeting rule matched this context";
    case EVAL_REASON_SPLIT:
        return "a percentage rollout placed this context in that variant's bucket";
    case EVAL_REASON_DEFAULT:
        return "no targeting rule matched, so the default serve applies";
    case EVAL_REASON_STATIC:
        return "the environment has no rules and its default serve is a single variant";
    case EVAL_REASON_ERROR:
        break;
    }
    return "the configuration cannot resolve";
}

/* Evaluates flag for context (a json-c value, NULL for none) into *res,
 * through its flat form; false with *detail when the context is not valid. */
static bool evaluate_for(struct http_server *w, const struct snapshot *s,
                         const struct snapshot_flag *flag, struct json_object *context,
                         struct eval_result *res, const char **detail)
{
    struct json_flat_doc doc = {0};
    const struct json_flat *flat = context != NULL ? json_flat_from_json(&doc, context) : NULL;
    struct eval_context ctx;
    bool ok = false;
    if (context != NULL && flat == NULL)
        *detail = "out of memory";
    else
        ok = eval_context_init(&ctx, flat, wall_clock_us(), detail) == EVAL_CONTEXT_OK;
    if (ok)
        eval_flag(s, flag, &ctx, w->eval_scratch, res);
    json_flat_doc_free(&doc);
    return ok;
}

/* What the evaluator answers for the outcome's explain request, written to f. */
static void explain(struct conversation *cv, const struct agent_outcome *o, FILE *f)
{
    struct http_server *w = cv->r->server;
    const struct snapshot *index = w->snapshot ? served_snapshot_current(w->snapshot) : NULL;
    const char *context =
        json_object_to_json_string_ext(o->explain_context, JSON_C_TO_STRING_PLAIN);
    const struct snapshot_env *index_env =
        index ? snapshot_env_by_key(index, cv->org_id, o->explain_env) : NULL;
    const struct snapshot_env *env = NULL; /* the environment's record in its part */
    const struct snapshot *s =
        index_env ? served_snapshot_flag_part(w->snapshot, index_env, o->explain_flag,
                                              strlen(o->explain_flag), &env)
                  : NULL;
    const struct snapshot_flag *flag =
        s != NULL && env != NULL
            ? snapshot_flag_by_key(s, env, o->explain_flag, strlen(o->explain_flag))
            : NULL;
    if (flag == NULL) {
        fprintf(f,
                "%s is not served in %s yet (changes are served within refresh_interval_ms); "
                "try again in a moment.",
                o->explain_flag, o->explain_env);
        return;
    }
    const char *detail = NULL;
    struct eval_result res;
    if (!evaluate_for(w, s, flag, o->explain_context, &res, &detail)) {
        fprintf(f, "The context %s is not valid: %s.", context, detail ? detail : "invalid");
        return;
    }
    if (res.status != EVAL_OK) {
        fprintf(f, "%s cannot be evaluated in %s for %s: %s (%s).", o->explain_flag, o->explain_env,
                context, eval_error_code(res.status), res.error_detail ? res.error_detail : "");
        return;
    }
    fprintf(f, "For the context %s, %s in %s serves the variant %.*s (value %.*s). Reason %s: %s",
            context, o->explain_flag, o->explain_env, (int)res.variant_key_len, res.variant_key,
            (int)res.value_json_len, res.value_json, eval_reason_name(res.reason),
            reason_text(res.reason));
    if (res.rule_id != NULL) {
        fprintf(f, " (rule %.*s)", (int)res.rule_id_len, res.rule_id);
        if (res.rule_id_len < sizeof cv->rule_id)
            snprintf(cv->rule_id, sizeof cv->rule_id, "%.*s", (int)res.rule_id_len, res.rule_id);
    }
    fputc('.', f);
}

/* Sends the built-in answer kept in cv and frees cv. */
static void finish_builtin(struct conversation *cv)
{
    send_answer(cv, cv->reply, json_object_get(cv->actions), (long long)words_in(cv->messages),
                (long long)words_out(cv->reply, cv->actions));
    conversation_free(cv);
}

/* $1 rule id, $2 organization id: the matched rule as the REST API shows it. */
static const char RULE_SQL[] = "SELECT r.priority, r.description, r.conditions::text"
                               "  FROM rules r JOIN flags f ON f.id = r.flag_id"
                               " WHERE r.id = $1::uuid AND f.org_id = $2::uuid";

/* Appends the matched rule's priority, description and conditions. */
static void on_rule(PGresult *res, const char *error, void *arg)
{
    struct conversation *cv = arg;
    char *longer = NULL;
    if (db_result_ok(res) && PQntuples(res) == 1) {
        bool described = !PQgetisnull(res, 0, 1);
        if (asprintf(&longer, "%s The rule has priority %s%s%s%s and the conditions %s.", cv->reply,
                     PQgetvalue(res, 0, 0), described ? " (\"" : "",
                     described ? PQgetvalue(res, 0, 1) : "", described ? "\")" : "",
                     PQgetvalue(res, 0, 2)) < 0)
            longer = NULL;
    } else {
        log_debug("agent: the matched rule %s could not be read: %s", cv->rule_id,
                  error ? error : "no such rule (changed since the snapshot)");
    }
    if (longer != NULL) {
        free(cv->reply);
        cv->reply = longer;
    }
    finish_builtin(cv);
}

static void answer_builtin(struct conversation *cv)
{
    struct agent_outcome o;
    if (agent_respond(&cv->catalog, cv->messages, &o) != 0) {
        http_send_error(cv->r, 500, "out of memory");
        conversation_free(cv);
        return;
    }
    size_t len = 0;
    FILE *f = open_memstream(&cv->reply, &len);
    if (f != NULL) {
        fputs(o.reply, f);
        if (o.explain)
            explain(cv, &o, f);
        fclose(f);
    }
    if (cv->reply == NULL && (cv->reply = strdup(o.reply)) == NULL) {
        http_send_error(cv->r, 500, "out of memory");
        agent_outcome_free(&o);
        conversation_free(cv);
        return;
    }
    cv->actions = json_object_get(o.actions);
    agent_outcome_free(&o);
    const char *params[] = {cv->rule_id, cv->org_id};
    if (cv->rule_id[0] == '\0' ||
        db_query(cv->r->server->db, RULE_SQL, 2, params, on_rule, cv) != 0)
        finish_builtin(cv);
}

/* ---- the language model's answer ---- */

static long long usage_member(const struct json_object *usage, const char *name, long long dflt)
{
    struct json_object *value;
    if (usage == NULL || !json_object_object_get_ex(usage, name, &value) ||
        !json_object_is_type(value, json_type_int) || json_object_get_int64(value) < 0)
        return dflt;
    return json_object_get_int64(value);
}

/* One tool call: added to actions when it passes the checks, else told in f. */
static void take_tool_call(struct conversation *cv, const struct json_object *call,
                           struct json_object *actions, FILE *f)
{
    struct json_object *function, *name, *arguments;
    const char *tool = "(none)";
    char why[512] = "the call has no function name and arguments";
    struct json_object *input = NULL;
    if (json_object_object_get_ex(call, "function", &function) &&
        json_object_object_get_ex(function, "name", &name) &&
        json_object_is_type(name, json_type_string) &&
        json_object_object_get_ex(function, "arguments", &arguments)) {
        tool = json_object_get_string(name);
        input = json_object_is_type(arguments, json_type_string)
                    ? json_tokener_parse(json_object_get_string(arguments))
                    : json_object_get(arguments);
        if (input == NULL)
            snprintf(why, sizeof why, "its arguments are not JSON");
        else if (agent_tool_check(&cv->catalog, tool, input, why, sizeof why)) {
            char summary[512];
            agent_tool_summary(tool, input, summary, sizeof summary);
            struct json_object *action = json_object_new_object();
            json_object_object_add(action, "tool", json_object_new_string(tool));
            json_object_object_add(action, "input", input);
            json_object_object_add(action, "summary", json_object_new_string(summary));
            json_object_array_add(actions, action);
            return;
        }
    }
    log_info("agent: rejected a language model's tool call %.64s: %s", tool, why);
    fprintf(f, "%sI rejected a proposed action (%.64s): %s.", ftell(f) > 0 ? " " : "", tool, why);
    json_object_put(input);
}

/* Writes at most max bytes of the UTF-8 text s, never half a character. */
static void fputs_bounded(const char *s, size_t max, FILE *f)
{
    size_t len = strlen(s);
    if (len > max) {
        len = max;
        while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80)
            len--;
    }
    fwrite(s, 1, len, f);
}

static void on_llm_answer(void *arg, struct json_object *message, struct json_object *usage,
                          const char *error)
{
    struct conversation *cv = arg;
    if (message == NULL) {
        log_warn("agent: language model at %s failed: %s; the built-in agent answers",
                 cv->r->server->cfg->agent_llm_url, error);
        answer_builtin(cv);
        return;
    }
    char *reply = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&reply, &len);
    struct json_object *content, *calls, *actions = json_object_new_array();
    if (f == NULL) {
        json_object_put(actions);
        http_send_error(cv->r, 500, "out of memory");
        conversation_free(cv);
        return;
    }
    if (json_object_object_get_ex(message, "content", &content) &&
        json_object_is_type(content, json_type_string))
        fputs_bounded(json_object_get_string(content), AGENT_MESSAGE_MAX_BYTES, f);
    if (json_object_object_get_ex(message, "tool_calls", &calls) &&
        json_object_is_type(calls, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(calls) && i < 16; i++)
            take_tool_call(cv, json_object_array_get_idx(calls, i), actions, f);
    }
    fclose(f);
    const char *text = reply && *reply ? reply : "(no reply)";
    send_answer(cv, text, actions,
                usage_member(usage, "prompt_tokens", (long long)words_in(cv->messages)),
                usage_member(usage, "completion_tokens", (long long)words_out(text, actions)));
    free(reply);
    conversation_free(cv);
}

/* Asks the configured model (the URL's fragment names the model when
 * agent_llm_model is empty), or answers with the built-in agent when the
 * request cannot start. */
static void ask_model(struct conversation *cv, const char *url)
{
    const struct config *cfg = cv->r->server->cfg;
    char bare[2048];
    size_t len = strcspn(url, "#");
    snprintf(bare, sizeof bare, "%.*s", (int)len, url);
    const char *model = cfg->agent_llm_model[0] ? cfg->agent_llm_model
                        : url[len] == '#'       ? url + len + 1
                                                : "";
    struct agent_llm_endpoint endpoint = {
        .url = bare, .model = model, .key_file = cfg->agent_llm_key_file};
    const char *why = NULL;
    if (agent_llm_ask(cv->r->server->base, &endpoint, cv->messages, &cv->catalog, on_llm_answer, cv,
                      &why) != 0) {
        log_warn("agent: cannot start a request to the language model at %s (%s); the built-in "
                 "agent answers",
                 bare, why ? why : "unknown");
        answer_builtin(cv);
    }
}

static void on_catalog(PGresult *res, const char *error, void *arg)
{
    struct conversation *cv = arg;
    if (!db_result_ok(res) || PQntuples(res) != 1) {
        auth_send_db_failure(cv->r, res, error ? error : "catalogue query returned no row");
        conversation_free(cv);
        return;
    }
    if (agent_catalog_parse(&cv->catalog, PQgetvalue(res, 0, 0)) != 0) {
        auth_send_db_failure(cv->r, NULL, "catalogue is not the expected JSON");
        conversation_free(cv);
        return;
    }
    const char *url = cv->r->server->cfg->agent_llm_url;
    if (url[0] == '\0') {
        answer_builtin(cv);
        return;
    }
    ask_model(cv, url);
}

static void on_messages_org(struct http_request *r, const struct mgmt_ctx *ctx, void *arg)
{
    struct conversation *cv = arg;
    if (ctx == NULL) {
        conversation_free(cv);
        return;
    }
    snprintf(cv->org_id, sizeof cv->org_id, "%s", ctx->org_id);
    char days[16];
    snprintf(days, sizeof days, "%d", AGENT_SERVED_DAYS);
    const char *params[] = {cv->org_id, days};
    if (mgmt_query(r, CATALOG_SQL, 2, params, on_catalog, cv) != 0)
        conversation_free(cv);
}

void agent_messages(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const struct identity *who = &ctx->who;
    struct json_object *body = ctx->body; /* mgmt_dispatch parsed and checked it; ours to put */
    if (!ratelimit_check(r, RATELIMIT_MANAGEMENT, who->token_id, strlen(who->token_id))) {
        json_object_put(body);
        return;
    }
    struct validate v;
    validate_init(&v);
    struct json_object *messages = read_messages(&v, body);
    struct conversation *cv = validate_ok(&v) ? calloc(1, sizeof *cv) : NULL;
    if (cv == NULL) {
        json_object_put(messages);
        if (validate_ok(&v))
            http_send_error(r, 500, "out of memory");
        else
            mgmt_send_invalid(r, &v);
        validate_free(&v);
        json_object_put(body);
        return;
    }
    cv->r = r;
    cv->messages = messages;
    char org_copy[65];
    snprintf(org_copy, sizeof org_copy, "%s", mgmt_body_text(body, "org_id"));
    json_object_put(body);
    mgmt_begin_org(r, who, org_copy, MGMT_FLAGS_READ, on_messages_org, cv);
}

/* ---- /ai/actions/execute ---- */

struct execution {
    struct http_request *r;
    struct json_object *body; /* owned: tool and input live in it */
    const char *tool;
    struct json_object *input;
};

static void execution_free(struct execution *ex)
{
    json_object_put(ex->body);
    free(ex);
}

static void copy_header(struct http_request *r, const struct evkeyvalq *headers, const char *name)
{
    const char *value = evhttp_find_header(headers, name);
    if (value != NULL)
        http_add_header(r, name, value);
}

/* Answers the REST operation's failure (a /v1 envelope) as a Problem. */
static void send_rest_failure(struct http_request *r, int status, struct json_object *answer)
{
    struct json_object *message = NULL, *errors = NULL;
    if (answer != NULL) {
        json_object_object_get_ex(answer, "message", &message);
        json_object_object_get_ex(answer, "errors", &errors);
    }
    const char *text = message ? json_object_get_string(message) : envelope_reason_phrase(status);
    if (status == 422)
        http_send_validation_error(r, text, errors ? json_object_get(errors) : NULL);
    else
        http_send_error(r, status, text);
}

static void on_executed(void *arg, int status, const char *body, const struct evkeyvalq *headers)
{
    struct execution *ex = arg;
    struct http_request *r = ex->r;
    static const char *const passed[] = {"RateLimit-Limit", "RateLimit-Remaining",
                                         "RateLimit-Reset", "Retry-After", "WWW-Authenticate"};
    for (size_t i = 0; i < sizeof passed / sizeof passed[0]; i++)
        copy_header(r, headers, passed[i]);
    struct json_object *answer = body ? json_tokener_parse(body) : NULL;
    if (status >= 200 && status < 300) {
        struct json_object *out = json_object_new_object();
        json_object_object_add(out, "result", answer ? answer : json_object_new_object());
        http_send_json(r, 200, out);
    } else {
        send_rest_failure(r, status, answer);
        json_object_put(answer);
    }
    execution_free(ex);
}

static void on_execute_org(struct http_request *r, const struct mgmt_ctx *ctx, void *arg)
{
    struct execution *ex = arg;
    if (ctx == NULL) {
        execution_free(ex);
        return;
    }
    struct validate v;
    validate_init(&v);
    struct agent_rest_call call;
    if (agent_tool_request(ex->tool, ex->input, ctx->org_slug, &call, &v) != 0) {
        mgmt_send_invalid(r, &v);
        validate_free(&v);
        execution_free(ex);
        return;
    }
    log_debug("agent: executing %s as %s %s", ex->tool, router_method_name(call.method), call.path);
    int rc = http_internal_request(r, call.method, call.path, call.body, on_executed, ex);
    free(call.body);
    if (rc != 0) {
        http_send_error(r, 500, "out of memory");
        execution_free(ex);
    }
}

void agent_execute(struct http_request *r, const struct mgmt_ctx *ctx)
{
    struct json_object *body = ctx->body; /* mgmt_dispatch parsed and checked it; ours to put */
    struct execution *ex = calloc(1, sizeof *ex);
    if (ex == NULL) {
        http_send_error(r, 500, "out of memory");
        json_object_put(body);
        return;
    }
    *ex = (struct execution){.r = r,
                             .body = body,
                             .tool = mgmt_body_text(body, "tool"),
                             .input = mgmt_body_member(body, "input")};
    mgmt_begin_org(r, &ctx->who, mgmt_body_text(body, "org_id"), MGMT_FLAGS_READ, on_execute_org,
                   ex);
}
