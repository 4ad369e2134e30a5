/*
 * env_evaluate.c - the dashboard's evaluation of one environment (see
 * env_evaluate.h; doc/choices.md, "Revision state").
 *
 * Same results and semantics as the OFREP bulk answer (ofrep.c) for the
 * environment: the body is read by the same function (ofrep_read_body:
 * same bounds, same context rules), every flag is evaluated by the same
 * pure evaluator (eval.c) from the same served snapshot, in key order,
 * and each item is the bulk item (key, value, reason, variant, metadata
 * with environment and ruleId; or key, errorCode, errorDetails) plus
 * ruleId at the top: the matched rule's id, or null. Keys asked for that
 * the environment does not have follow as FLAG_NOT_FOUND items, in the
 * order asked.
 *
 * Differences, all on purpose: the caller is a person (the dispatcher
 * authenticated an access token or session), so no SDK key, no
 * evaluation rate limit, no usage count, no /metrics evaluation count, no
 * ETag and no eventStreams; errors use the /v1 envelope: 422 for an
 * invalid context (errors.context), 400 for a body that is not a JSON
 * object, 404 when the served snapshot has no such environment (also
 * briefly for one created a moment ago), 503 while no snapshot (or not the
 * organization's part) is mapped.
 *
 * Invariants: reads only the snapshot and the request; no database. The
 * parser and the flat context are per request (a management route, not
 * the OFREP path: its per-worker caches stay untouched).
 */
#include "eval/env_evaluate.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eval/eval.h"
#include "eval/ofrep.h"
#include "eval/served_snapshot.h"
#include "eval/snapshot.h"
#include "http/answer.h"
#include "http/http.h"
#include "http/json_flat.h"
#include "http/server.h"

struct env_call {
    struct http_request *r;
    struct served_snapshot *view;
    const struct snapshot_env *index_env; /* the environment in the index */
    const struct snapshot *part;          /* its part (a chunked organization's header) */
    const struct snapshot_env *part_env;
    const struct snapshot *s; /* the part or chunk of the flag being answered */
    const struct snapshot_env *env;
    struct eval_context ctx;
    struct http_answer t;
    bool first;
};

static int64_t wall_clock_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void put_separator(struct env_call *c)
{
    if (!c->first)
        http_answer_lit(&c->t, ",");
    c->first = false;
}

static void put_rule_id(struct http_answer *t, const struct eval_result *res)
{
    http_answer_lit(t, ",\"ruleId\":");
    if (res != NULL && res->rule_id != NULL)
        http_answer_string(t, res->rule_id, res->rule_id_len);
    else
        http_answer_lit(t, "null");
}

/* One item: the bulk item of ofrep.c, plus ruleId. */
static void put_result(struct env_call *c, const struct snapshot_flag *flag)
{
    struct eval_result res;
    eval_flag(c->s, flag, &c->ctx, c->r->server->eval_scratch, &res);
    struct http_answer *t = &c->t;
    put_separator(c);
    http_answer_lit(t, "{\"key\":");
    http_answer_string(t, snapshot_string(c->s, flag->key), flag->key.len);
    if (res.status != EVAL_OK) {
        const char *code = eval_error_code(res.status);
        http_answer_lit(t, ",\"errorCode\":");
        http_answer_string(t, code, strlen(code));
        http_answer_lit(t, ",\"errorDetails\":");
        const char *detail = res.error_detail != NULL ? res.error_detail : "evaluation failed";
        http_answer_string(t, detail, strlen(detail));
        put_rule_id(t, NULL);
        http_answer_lit(t, "}");
        return;
    }
    http_answer_lit(t, ",\"value\":");
    http_answer_put(t, res.value_json, res.value_json_len);
    http_answer_lit(t, ",\"reason\":");
    const char *reason = eval_reason_name(res.reason);
    http_answer_plain(t, reason, strlen(reason));
    http_answer_lit(t, ",\"variant\":");
    http_answer_string(t, res.variant_key, res.variant_key_len);
    http_answer_lit(t, ",\"metadata\":{\"environment\":");
    http_answer_string(t, snapshot_string(c->s, c->env->key), c->env->key.len);
    if (res.rule_id != NULL) {
        http_answer_lit(t, ",\"ruleId\":");
        http_answer_string(t, res.rule_id, res.rule_id_len);
    }
    http_answer_lit(t, "}");
    put_rule_id(t, &res);
    http_answer_lit(t, "}");
}

static void put_not_found(struct env_call *c, const char *key)
{
    put_separator(c);
    http_answer_lit(&c->t, "{\"key\":");
    http_answer_string(&c->t, key, strlen(key));
    http_answer_lit(&c->t, ",\"errorCode\":\"FLAG_NOT_FOUND\",\"errorDetails\":"
                           "\"no flag with this key in the environment\",\"ruleId\":null}");
}

static bool asked_before(const char *const *keys, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if (strcmp(keys[j], keys[i]) == 0)
            return true;
    return false;
}

/* A flag asked for, in the part or chunk that holds it. */
struct found_flag {
    const struct snapshot *s;
    const struct snapshot_env *env;
    const struct snapshot_flag *flag;
    const char *key; /* as asked (equal to the flag's) */
};

static int by_key(const void *a, const void *b)
{
    return strcmp(((const struct found_flag *)a)->key, ((const struct found_flag *)b)->key);
}

/* The flag of key, found in the part or chunk that holds it, or false. */
static bool find_flag(const struct env_call *c, const char *key, struct found_flag *out)
{
    size_t len = strlen(key);
    out->s = served_snapshot_flag_part(c->view, c->index_env, key, len, &out->env);
    out->flag = out->s != NULL ? snapshot_flag_by_key(out->s, out->env, key, len) : NULL;
    out->key = key;
    return out->flag != NULL;
}

/* The flags asked for, each once, in key order (byte order, the order in
 * which the environment's flags are stored), then the keys it does not
 * have. */
static bool put_asked(struct env_call *c, const char *const *keys, size_t nkeys)
{
    struct found_flag *found = calloc(nkeys + 1, sizeof *found);
    if (found == NULL)
        return false;
    size_t n = 0;
    for (size_t j = 0; j < nkeys; j++)
        if (find_flag(c, keys[j], &found[n]))
            n++;
    qsort(found, n, sizeof *found, by_key);
    for (size_t i = 0; i < n; i++)
        if (i == 0 || found[i].flag != found[i - 1].flag) {
            c->s = found[i].s;
            c->env = found[i].env;
            put_result(c, found[i].flag);
        }
    for (size_t j = 0; j < nkeys; j++)
        if (!find_flag(c, keys[j], &found[0]) && !asked_before(keys, j))
            put_not_found(c, keys[j]);
    free(found);
    return true;
}

static bool put_flags(struct env_call *c, const char *const *keys, size_t nkeys)
{
    if (keys != NULL)
        return put_asked(c, keys, nkeys);
    for (size_t i = 0; (c->s = served_snapshot_chunk(c->view, c->index_env, i, &c->env)) != NULL;
         i++) {
        size_t count = 0;
        const struct snapshot_flag *flags = snapshot_env_flags(c->s, c->env, &count);
        for (size_t f = 0; f < count; f++)
            put_result(c, &flags[f]);
    }
    return true;
}

static void send_evaluation(struct env_call *c, const char *const *keys, size_t nkeys)
{
    http_answer_open(c->r->server, &c->t);
    c->first = true;
    http_answer_lit(&c->t, "{\"flags\":[");
    if (!put_flags(c, keys, nkeys))
        c->t.failed = true;
    http_answer_lit(&c->t, "],\"metadata\":{\"environment\":");
    http_answer_string(&c->t, snapshot_string(c->part, c->part_env->key), c->part_env->key.len);
    http_answer_lit(&c->t, "}}");
    if (c->t.failed) {
        http_answer_close(&c->t);
        http_send_error(c->r, 500, "out of memory");
    } else {
        http_send_answer(c->r, 200, &c->t);
    }
}

/* Finds the environment and moves to the part holding its flags; false
 * after answering 503 or 404. */
static bool find_environment(struct env_call *c, const char *org_id, const char *env_key)
{
    struct served_snapshot *view = c->r->server->snapshot;
    const struct snapshot *index = view != NULL ? served_snapshot_current(view) : NULL;
    if (index == NULL) {
        http_add_header(c->r, "Retry-After", "1");
        http_send_error(c->r, 503, "no flag snapshot is available yet");
        return false;
    }
    const struct snapshot_env *env = snapshot_env_by_key(index, org_id, env_key);
    if (env == NULL) {
        http_send_error(c->r, 404, "environment not found");
        return false;
    }
    c->view = view;
    c->index_env = env;
    c->s = c->part = served_snapshot_part(view, env, &c->env);
    c->part_env = c->env;
    if (c->s == NULL) {
        http_add_header(c->r, "Retry-After", "1");
        http_send_error(c->r, 503, "the flags of this environment are not available yet");
        return false;
    }
    return true;
}

/* Reads the context as OFREP does; false after answering 400, 422 or 500. */
static bool read_context(struct env_call *c, struct json_tokener *tok, struct json_flat_doc *doc,
                         struct json_object **body)
{
    size_t len;
    const char *text = http_body(c->r, &len);
    const char *detail;
    switch (ofrep_read_body(tok, doc, text, len, wall_clock_us(), body, &c->ctx, &detail)) {
    case OFREP_BODY_OK:
        return true;
    case OFREP_BODY_PARSE_ERROR:
        http_send_error(c->r, 400, detail);
        return false;
    case OFREP_BODY_INVALID_CONTEXT: {
        struct json_object *errors = json_object_new_object();
        struct json_object *list = json_object_new_array();
        json_object_array_add(list, json_object_new_string(detail));
        json_object_object_add(errors, "context", list);
        http_send_validation_error(c->r, "validation failed", errors);
        return false;
    }
    case OFREP_BODY_NO_MEMORY:
        break;
    }
    http_send_error(c->r, 500, "out of memory");
    return false;
}

void env_evaluate_answer(struct http_request *r, const char *org_id, const char *env_key,
                         const char *const *keys, size_t nkeys)
{
    struct env_call c = {.r = r};
    if (!find_environment(&c, org_id, env_key))
        return;
    struct json_tokener *tok = json_tokener_new_ex(HTTP_JSON_MAX_DEPTH);
    if (tok == NULL) {
        http_send_error(r, 500, "out of memory");
        return;
    }
    struct json_flat_doc doc = {0};
    struct json_object *body = NULL;
    if (read_context(&c, tok, &doc, &body))
        send_evaluation(&c, keys, nkeys);
    json_object_put(body);
    json_flat_doc_free(&doc);
    json_tokener_free(tok);
}
