/*
 * ofrep.c - the two OFREP evaluation routes (see ofrep.h).
 *
 * Each request runs the same gate (begin_call): a snapshot must be mapped
 * (503), the SDK key must be one of the index's digests (401), the part
 * holding its environment's flags must be mapped (503; from then on the
 * call works in that part), the key's bucket must have room (429), the body must be JSON
 * (PARSE_ERROR; plain bodies through json_quick, the rest through json-c)
 * and its context valid (INVALID_CONTEXT). Then the single route looks the flag up
 * (FLAG_NOT_FOUND) and evaluates it; the bulk route first compares
 * If-None-Match with the context-correct ETag (304 needs no evaluation)
 * and otherwise evaluates every flag of the environment in key order.
 * Answers are written as JSON text directly: variant values are stored
 * pre-serialized in the snapshot.
 */
#include "eval/ofrep.h"

#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "http/answer.h"
#include "eval/eval.h"
#include "base/hex.h"
#include "http/http.h"
#include "http/json_guard.h"
#include "http/json_quick.h"
#include "http/metrics.h"
#include "eval/murmur3.h"
#include "eval/ratelimit.h"
#include "eval/shm.h"
#include "eval/served_snapshot.h"
#include "eval/snapshot.h"
#include "eval/streams.h"
#include "base/token.h"
#include "eval/usage_batch.h"
#include "http/server.h"

#define KEY_MAX 63

const char ofrep_request_schema[] =
    "{\"type\":\"object\",\"properties\":{\"context\":{\"type\":[\"object\",\"null\"],"
    "\"properties\":{\"targetingKey\":{\"type\":\"string\"}},"
    "\"additionalProperties\":true}}}";

#define RESULT_SCHEMA                                                                              \
    "{\"type\":\"object\",\"required\":[\"key\",\"value\",\"reason\",\"metadata\"],"               \
    "\"properties\":{\"key\":{\"type\":\"string\"},\"value\":{},"                                  \
    "\"reason\":{\"type\":\"string\",\"enum\":[\"STATIC\",\"DEFAULT\",\"TARGETING_MATCH\","        \
    "\"SPLIT\",\"DISABLED\"]},\"variant\":{\"type\":\"string\"},"                                  \
    "\"metadata\":{\"type\":\"object\",\"properties\":{\"environment\":{\"type\":\"string\"},"     \
    "\"ruleId\":{\"type\":\"string\"}}}}}"

#define FAILURE_SCHEMA                                                                             \
    "{\"type\":\"object\",\"required\":[\"key\",\"errorCode\"],\"properties\":{"                   \
    "\"key\":{\"type\":\"string\"},\"errorCode\":{\"type\":\"string\"},"                           \
    "\"errorDetails\":{\"type\":\"string\"}}}"

const char ofrep_flag_response_schema[] = RESULT_SCHEMA;

const char ofrep_bulk_response_schema[] =
    "{\"type\":\"object\",\"required\":[\"flags\"],\"properties\":{"
    "\"flags\":{\"type\":\"array\",\"items\":{\"oneOf\":[" RESULT_SCHEMA "," FAILURE_SCHEMA "]}},"
    "\"metadata\":{\"type\":\"object\",\"properties\":{\"environment\":{\"type\":\"string\"}}},"
    "\"eventStreams\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
    "\"required\":[\"type\",\"url\"],\"properties\":{\"type\":{\"const\":\"sse\"},"
    "\"url\":{\"type\":\"string\"},\"inactivityDelaySec\":{\"type\":\"integer\"}}}}}}";

/* ---- answer text (written in place: answer.h) ---- */

static void put_cstring(struct http_answer *a, const char *s)
{
    http_answer_string(a, s, strlen(s));
}

/* ---- per-worker state ---- */

#define DIGEST_CACHE_SLOTS 8

/* A recent SDK key and its digest: most requests of a worker come with one
 * of a few keys, and a hit saves a SHA-256. */
struct digest_entry {
    char key[TOKEN_MAX_LEN];
    char digest[TOKEN_DIGEST_HEX_LEN + 1];
    /* the key's environment in the index of that generation mapped at
     * base (NULL: unknown there); looked up again when either moved: an
     * index mapped again is a new mapping, whatever its generation */
    const struct snapshot *s;
    const unsigned char *base;
    uint64_t generation;
    const struct snapshot_env *env;
};

struct ofrep_state {
    struct json_tokener *tok;  /* reset before each body */
    struct json_flat_doc flat; /* the body's flat form (call_end frees the json-c tree first) */
    struct digest_entry digests[DIGEST_CACHE_SLOTS];
    /* The last eventStreams entry and its hash (bulk_etag): an SDK's
     * entry (its Host and key) is the same on every request it sends. */
    char entry[STREAMS_ENTRY_MAX];
    size_t entry_len;
    uint32_t entry_hash;
};

void ofrep_state_free(struct ofrep_state *state)
{
    if (state == NULL)
        return;
    json_tokener_free(state->tok);
    json_flat_doc_free(&state->flat);
    free(state);
}

static struct ofrep_state *server_state(struct http_server *w)
{
    if (w->ofrep != NULL)
        return w->ofrep;
    struct ofrep_state *state = calloc(1, sizeof *state);
    if (state == NULL)
        return NULL;
    state->tok = json_tokener_new_ex(HTTP_JSON_MAX_DEPTH);
    if (state->tok == NULL) {
        free(state);
        return NULL;
    }
    w->ofrep = state;
    return state;
}

/* The digest of a well-formed SDK key, from the cache or computed. The
 * cache slot comes from a hash of the key and the key is compared in
 * constant time, so timing tells nothing about a near miss. */
static struct digest_entry *sdk_key_digest(struct ofrep_state *state, const char *key,
                                           char digest[TOKEN_DIGEST_HEX_LEN + 1])
{
    size_t len = strlen(key);
    unsigned slot = 0;
    for (size_t i = 0; i < len; i++)
        slot = slot * 31 + (unsigned char)key[i];
    struct digest_entry *e = &state->digests[slot % DIGEST_CACHE_SLOTS];
    if (token_equal_ct(e->key, key)) {
        memcpy(digest, e->digest, TOKEN_DIGEST_HEX_LEN + 1);
        return e;
    }
    token_digest_hex(key, len, digest);
    if (len >= sizeof e->key)
        return NULL;
    memcpy(e->key, key, len + 1);
    memcpy(e->digest, digest, TOKEN_DIGEST_HEX_LEN + 1);
    e->s = NULL;
    return e;
}

/* The environment of the SDK key whose digest entry e holds (NULL: not
 * cached), from the entry while the snapshot has not moved. */
static const struct snapshot_env *env_of_key(const struct snapshot *s, struct digest_entry *e,
                                             const char *digest)
{
    uint64_t generation = snapshot_generation(s);
    if (e != NULL && e->s == s && e->base == s->base && e->generation == generation)
        return e->env;
    const struct snapshot_env *env = snapshot_env_by_sdk_digest(s, digest);
    if (e != NULL) {
        e->s = s;
        e->base = s->base;
        e->generation = generation;
        e->env = env;
    }
    return env;
}

/* ---- one evaluation call ---- */

struct call {
    struct http_request *r;
    struct http_server *w;
    struct ofrep_state *state;
    const char *key;                /* the path key on the single route, else NULL */
    const struct snapshot *s;       /* the part (or, evaluating, the flag's chunk) */
    const struct snapshot_env *env; /* the environment in it */
    const struct snapshot *part;    /* the part (a chunked organization's header) */
    const struct snapshot_env *part_env;
    const struct snapshot_env *index_env; /* the environment in the index */
    struct json_object *body; /* owned: the body when json-c parsed it (ctx points into it) */
    struct eval_context ctx;
    int64_t now_us;
    char digest[TOKEN_DIGEST_HEX_LEN + 1]; /* of the SDK key, once authenticated */
};

static void call_end(struct call *c)
{
    json_object_put(c->body);
    c->body = NULL;
}

static void fail(struct call *c, int status, const char *code, const char *details)
{
    if (status == 401)
        http_add_header(c->r, "WWW-Authenticate", "Bearer");
    http_send_eval_error(c->r, status, c->key, code, details);
}

/* The SDK key of the request: Authorization: Bearer, else X-API-Key. */
static const char *credential(const struct http_request *r)
{
    const char *bearer = http_bearer(r);
    if (bearer != NULL)
        return bearer;
    const char *api_key = http_header(r, "X-API-Key");
    if (api_key != NULL) {
        while (*api_key == ' ')
            api_key++;
        if (*api_key != '\0')
            return api_key;
    }
    return NULL;
}

/* Sets c->env and c->digest from the credential; answers 401 and returns
 * false if none. */
static bool authenticate(struct call *c)
{
    char *digest = c->digest;
    const char *presented = credential(c->r);
    if (presented == NULL) {
        fail(c, 401, "AUTHENTICATION_ERROR", "an SDK key is required");
        return false;
    }
    if (!token_well_formed(presented, TOKEN_PREFIX_SDK)) {
        fail(c, 401, "AUTHENTICATION_ERROR",
             strncmp(presented, TOKEN_PREFIX_ACCESS, strlen(TOKEN_PREFIX_ACCESS)) == 0
                 ? "access tokens cannot evaluate flags: use an SDK key"
                 : "malformed SDK key");
        return false;
    }
    c->env = env_of_key(c->s, sdk_key_digest(c->state, presented, digest), digest);
    if (c->env == NULL) {
        fail(c, 401, "AUTHENTICATION_ERROR", "unknown or revoked SDK key");
        return false;
    }
    return true;
}

/* Moves c->s and c->env from the index to the part holding the
 * environment's flags; 503 when that part is not mapped. */
static bool enter_part(struct call *c)
{
    const struct snapshot_env *part_env;
    const struct snapshot *part = served_snapshot_part(c->w->snapshot, c->env, &part_env);
    if (part == NULL) {
        http_add_header(c->r, "Retry-After", "1");
        fail(c, 503, "GENERAL", "the flags of this environment are not available yet");
        return false;
    }
    c->index_env = c->env;
    c->s = c->part = part;
    c->env = c->part_env = part_env;
    return true;
}

/* Moves c->s and c->env to the chunk holding the flags of key (the part
 * itself without chunks); 503 when it is not mapped. */
static bool enter_chunk(struct call *c, const char *key, size_t len)
{
    const struct snapshot_env *env;
    const struct snapshot *s =
        served_snapshot_flag_part(c->w->snapshot, c->index_env, key, len, &env);
    if (s == NULL) {
        http_add_header(c->r, "Retry-After", "1");
        fail(c, 503, "GENERAL", "the flags of this environment are not available yet");
        return false;
    }
    c->s = s;
    c->env = env;
    return true;
}

/* Chunk i of the call's environment (eval_chunk_fn; ctx is the call). */
static const struct snapshot *call_chunk(void *ctx, size_t i, const struct snapshot_env **env)
{
    const struct call *c = ctx;
    return served_snapshot_chunk(c->w->snapshot, c->index_env, i, env);
}

static bool within_rate_limit(struct call *c, const char *digest)
{
    struct ratelimit_result limit;
    if (ratelimit_apply(c->r, RATELIMIT_EVALUATION, digest, TOKEN_DIGEST_HEX_LEN, &limit))
        return true;
    char message[96];
    snprintf(message, sizeof message, "rate limit of %u evaluations per minute exceeded",
             limit.limit);
    fail(c, 429, "GENERAL", message);
    return false;
}

/* Object members a body may hold (context attributes and their nested
 * members together): the bound on the work one request can cause, since
 * parsing, the bulk ETag's canonical form and attribute lookups grow with
 * it. A 900 KB context of 50,000 attributes is refused before json-c
 * parses it. */
#define OFREP_MAX_BODY_MEMBERS 1024

/* Array elements a body may hold, all arrays together (a context's list
 * attributes): the same bound, for the same reason. A 450,000-element
 * array took 7.7 ms to parse and evaluate; it is refused after 1,025. */
#define OFREP_MAX_BODY_ELEMENTS 1024

/* What json_guard refuses, as this surface's error codes (doc/choices.md
 * "Environment configuration and evaluation"): text that is not JSON (not UTF-8, a NUL byte) is
 * PARSE_ERROR, content no context may hold is INVALID_CONTEXT. */
static enum ofrep_body_status guard_status(enum json_guard_verdict verdict, const char **detail)
{
    *detail = json_guard_message(verdict);
    return json_guard_not_json(verdict) || verdict == JSON_GUARD_DUPLICATE_KEY
               ? OFREP_BODY_PARSE_ERROR
               : OFREP_BODY_INVALID_CONTEXT;
}

/* ctx from the body's context member (NULL: none; JSON null is none). */
static enum ofrep_body_status context_ready(struct eval_context *ctx,
                                            const struct json_flat *context, int64_t now_us,
                                            const char **detail)
{
    if (eval_context_init(ctx, context, now_us, detail) != EVAL_CONTEXT_OK) {
        if (*detail == NULL)
            *detail = "invalid context";
        return OFREP_BODY_INVALID_CONTEXT;
    }
    return OFREP_BODY_OK;
}

/* The body as json-c reads it, for what the quick parse declined: *body
 * (caller puts it) and its flat form in doc, or an error status. */
static enum ofrep_body_status parse_with_json_c(struct json_tokener *tok, struct json_flat_doc *doc,
                                                const char *text, size_t len, size_t members,
                                                struct json_object **body,
                                                const struct json_flat **root, const char **detail)
{
    json_tokener_reset(tok);
    json_tokener_set_flags(tok, JSON_GUARD_TOKENER_FLAGS);
    *body = json_tokener_parse_ex(tok, text, (int)len);
    enum json_tokener_error err = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    bool complete = err == json_tokener_success && end + strspn(text + end, " \t\r\n") == len;
    if (!complete || !json_object_is_type(*body, json_type_object)) {
        *detail = complete ? "the request body must be a JSON object"
                           : "the request body is not valid JSON";
        return OFREP_BODY_PARSE_ERROR;
    }
    if (!json_guard_members_kept(*body, members))
        return guard_status(JSON_GUARD_DUPLICATE_KEY, detail);
    if ((*root = json_flat_from_json(doc, *body)) == NULL) {
        *detail = "out of memory";
        return OFREP_BODY_NO_MEMORY;
    }
    return OFREP_BODY_OK;
}

enum ofrep_body_status ofrep_read_body(struct json_tokener *tok, struct json_flat_doc *doc,
                                       const char *text, size_t len, int64_t now_us,
                                       struct json_object **body, struct eval_context *ctx,
                                       const char **detail)
{
    *body = NULL;
    *detail = NULL;
    json_flat_doc_reset(doc); /* an empty body leaves no nodes of the last one */
    const struct json_flat *root = NULL;
    if (text != NULL && len != strspn(text, " \t\r\n")) {
        /* what json_quick accepts, json_guard_scan accepts (json_quick.h) */
        root = json_quick_parse(text, len, OFREP_MAX_BODY_MEMBERS, OFREP_MAX_BODY_ELEMENTS, doc);
        if (root == NULL) { /* outside the plain subset: the guard, then json-c */
            size_t members;
            enum json_guard_verdict verdict = json_guard_scan_bounded(
                text, len, OFREP_MAX_BODY_MEMBERS, OFREP_MAX_BODY_ELEMENTS, &members);
            if (verdict != JSON_GUARD_OK)
                return guard_status(verdict, detail);
            enum ofrep_body_status status =
                parse_with_json_c(tok, doc, text, len, members, body, &root, detail);
            if (status != OFREP_BODY_OK)
                return status;
        }
    }
    const struct json_flat *context =
        root != NULL ? json_flat_member(root, "context", strlen("context")) : NULL;
    return context_ready(ctx, context, now_us, detail);
}

static int64_t wall_clock_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Reads the body into c->body and c->ctx; PARSE_ERROR when it is not a
 * JSON object, INVALID_CONTEXT when its context is not valid. */
static bool read_body(struct call *c)
{
    size_t len;
    const char *text = http_body(c->r, &len);
    const char *detail;
    switch (ofrep_read_body(c->state->tok, &c->state->flat, text, len, c->now_us, &c->body, &c->ctx,
                            &detail)) {
    case OFREP_BODY_OK:
        return true;
    case OFREP_BODY_PARSE_ERROR:
        fail(c, 400, "PARSE_ERROR", detail);
        return false;
    case OFREP_BODY_INVALID_CONTEXT:
        fail(c, 400, "INVALID_CONTEXT", detail);
        return false;
    case OFREP_BODY_NO_MEMORY:
        fail(c, 500, "GENERAL", detail);
        return false;
    }
    return false;
}

/* The checks every evaluation passes; false once an error was answered. */
static bool begin_call(struct call *c)
{
    c->state = server_state(c->w);
    if (c->state == NULL) {
        fail(c, 500, "GENERAL", "out of memory");
        return false;
    }
    c->s = served_snapshot_current(c->w->snapshot);
    if (c->s == NULL) {
        http_add_header(c->r, "Retry-After", "1");
        fail(c, 503, "GENERAL", "no flag snapshot is available yet");
        return false;
    }
    c->now_us = wall_clock_us();
    return authenticate(c) && enter_part(c) && within_rate_limit(c, c->digest) && read_body(c);
}

/* ---- results ---- */

static void count_usage(const struct call *c, const struct snapshot_flag *flag,
                        const struct eval_result *res)
{
    struct usage_table *table = c->w->shm != NULL ? c->w->shm->usage : NULL;
    usage_batch_count(c->w->usage_batch, table, c->s, (uint32_t)(flag - c->s->flags),
                      res->variant_index, c->now_us / 1000000);
}

/* A key that names no flag of the environment: counted beside the usage
 * counts, in the same batch (usage_batch.h). Only the single route asks
 * for a key; the bulk route answers the environment's flags. */
static void count_unknown(const struct call *c, const char *key, size_t len)
{
    struct usage_table *table = c->w->shm != NULL ? c->w->shm->usage : NULL;
    usage_batch_count_unknown(c->w->usage_batch, table, c->s, (uint32_t)(c->env - c->s->envs), key,
                              len, c->now_us / 1000000);
}

static void write_result(struct http_answer *t, const struct call *c,
                         const struct snapshot_flag *flag, const struct eval_result *res)
{
    http_answer_lit(t, "{\"key\":");
    http_answer_string(t, snapshot_string(c->s, flag->key), flag->key.len);
    http_answer_lit(t, ",\"value\":");
    http_answer_put(t, res->value_json, res->value_json_len);
    http_answer_lit(t, ",\"reason\":");
    const char *reason = eval_reason_name(res->reason); /* upper-case words */
    http_answer_plain(t, reason, strlen(reason));
    http_answer_lit(t, ",\"variant\":");
    http_answer_string(t, res->variant_key, res->variant_key_len);
    http_answer_lit(t, ",\"metadata\":{\"environment\":");
    http_answer_string(t, snapshot_string(c->s, c->env->key), c->env->key.len);
    if (res->rule_id != NULL) {
        http_answer_lit(t, ",\"ruleId\":");
        http_answer_string(t, res->rule_id, res->rule_id_len);
    }
    http_answer_lit(t, "}}");
}

static void write_failure(struct http_answer *t, const struct call *c,
                          const struct snapshot_flag *flag, const struct eval_result *res)
{
    http_answer_lit(t, "{\"key\":");
    http_answer_string(t, snapshot_string(c->s, flag->key), flag->key.len);
    http_answer_lit(t, ",\"errorCode\":");
    put_cstring(t, eval_error_code(res->status));
    http_answer_lit(t, ",\"errorDetails\":");
    put_cstring(t, res->error_detail != NULL ? res->error_detail : "evaluation failed");
    http_answer_lit(t, "}");
}

static void send_answer(struct call *c, int status, struct http_answer *t)
{
    if (t->failed) {
        http_answer_close(t);
        fail(c, 500, "GENERAL", "out of memory");
    } else {
        http_send_answer(c->r, status, t);
    }
}

/* ---- the single route ---- */

static bool key_pattern_ok(const char *key, size_t len)
{
    if (len == 0 || len > KEY_MAX || key[0] == '-' || key[len - 1] == '-')
        return false;
    for (size_t i = 0; i < len; i++)
        if (!((key[i] >= 'a' && key[i] <= 'z') || (key[i] >= '0' && key[i] <= '9') ||
              key[i] == '-'))
            return false;
    return true;
}

#define NOT_FOUND_DETAILS "no flag with this key in the SDK key's environment"

/*
 * The FLAG_NOT_FOUND answer of a key of the key pattern, written into an
 * answer block like a result instead of through json-c: the same bytes as
 * the error envelope's (http_send_eval_error), at the cost of a found
 * flag's answer, so that SDKs asking for keys that do not exist cost no
 * more than those asking for flags that do. The key needs no escaping.
 */
static void answer_not_found(struct call *c, const char *key, size_t len)
{
    struct http_answer t;
    http_answer_open(c->w, &t);
    http_answer_lit(&t, "{\"key\":");
    http_answer_string(&t, key, len);
    http_answer_lit(&t, ",\"errorCode\":\"FLAG_NOT_FOUND\",\"errorDetails\":\"" NOT_FOUND_DETAILS
                        "\",\"message\":\"" NOT_FOUND_DETAILS "\",\"status\":404}");
    send_answer(c, 404, &t);
}

static void evaluate_one(struct call *c)
{
    size_t len = strlen(c->key);
    bool could_be_key = key_pattern_ok(c->key, len);
    if (!enter_chunk(c, c->key, len))
        return;
    const struct snapshot_flag *flag =
        could_be_key ? snapshot_flag_by_key(c->s, c->env, c->key, len) : NULL;
    if (flag == NULL && could_be_key) {
        count_unknown(c, c->key, len);
        answer_not_found(c, c->key, len);
        return;
    }
    if (flag == NULL) {
        fail(c, 404, "FLAG_NOT_FOUND", NOT_FOUND_DETAILS);
        return;
    }
    struct eval_result res;
    eval_flag(c->s, flag, &c->ctx, c->w->eval_scratch, &res);
    if (c->w->metrics != NULL)
        metrics_add(&c->w->metrics->flag_evaluations, 1);
    if (res.status != EVAL_OK) {
        fail(c, 400, eval_error_code(res.status),
             res.error_detail != NULL ? res.error_detail : "evaluation failed");
        return;
    }
    count_usage(c, flag, &res);
    struct http_answer t;
    http_answer_open(c->w, &t);
    write_result(&t, c, flag, &res);
    send_answer(c, 200, &t);
}

void ofrep_evaluate_flag(struct http_request *r)
{
    struct call c = {.r = r, .w = r->server, .key = http_param(r, "key")};
    if (c.key == NULL)
        c.key = "";
    if (begin_call(&c))
        evaluate_one(&c);
    call_end(&c);
}

/* ---- the bulk route ---- */

/* True when one entity tag of an If-None-Match list equals etag (quoted),
 * compared weakly: W/ is ignored, and so is "*". */
static bool etag_listed(const char *header, const char *etag)
{
    size_t etag_len = strlen(etag);
    const char *p = header;
    while (*p != '\0') {
        p += strspn(p, " \t,");
        if (p[0] == 'W' && p[1] == '/')
            p += 2;
        size_t n;
        if (*p == '"') {
            const char *close = strchr(p + 1, '"');
            n = close != NULL ? (size_t)(close - p) + 1 : strlen(p);
        } else {
            n = strcspn(p, " \t,");
        }
        bool quoted_equal = n == etag_len && memcmp(p, etag, n) == 0;
        bool bare_equal = n + 2 == etag_len && n > 0 && memcmp(p, etag + 1, n) == 0;
        if (quoted_equal || bare_equal)
            return true;
        p += n;
    }
    return false;
}

/* The bulk ETag covers the whole body: the eventStreams entry (which
 * names the Host and the key) adds a hash of itself, so a 304 never
 * stands for a body with another stream URL. */
#define BULK_ETAG_SIZE (EVAL_ETAG_SIZE + 16)

static uint32_t entry_hash(struct ofrep_state *state, const char *entry, size_t entry_len)
{
    if (entry_len != state->entry_len || memcmp(entry, state->entry, entry_len) != 0) {
        memcpy(state->entry, entry, entry_len);
        state->entry_len = entry_len;
        state->entry_hash = murmur3_x86_32(entry, entry_len, 0);
    }
    return state->entry_hash;
}

static void bulk_etag(const struct call *c, const char *entry, size_t entry_len,
                      char out[BULK_ETAG_SIZE])
{
    char etag[EVAL_ETAG_SIZE];
    /* the organization's generation (the header's), over all its chunks */
    eval_bulk_etag_chunks(snapshot_generation(c->part), snapshot_string(c->part, c->part_env->id),
                          c->part_env->id.len, call_chunk, (void *)c, c->ctx.attributes, c->now_us,
                          etag);
    size_t len = strlen(etag);
    if (entry_len == 0 || len < 2) {
        memcpy(out, etag, len + 1);
        return;
    }
    /* the tag without its closing quote, then "-HASH" (8 digits) */
    memcpy(out, etag, len - 1);
    char *p = out + len - 1;
    *p++ = '-';
    p += hex_u64(entry_hash(c->state, entry, entry_len), 8, p);
    *p++ = '"';
    *p = '\0';
}

/* How many flags ahead of the one evaluated the bulk loop asks for the
 * next one's memory (eval_prefetch_flag, usage_batch_prefetch): far enough
 * that a miss has time to arrive, near enough that the lines are still
 * there when they are used. */
#define BULK_PREFETCH_AHEAD 8

/* Evaluates the flags of c->env in c->s into t; *written: answers so far. */
static void evaluate_part(struct call *c, struct http_answer *t, size_t *written)
{
    size_t count = 0;
    const struct snapshot_flag *flags = snapshot_env_flags(c->s, c->env, &count);
    if (c->w->metrics != NULL)
        metrics_add(&c->w->metrics->flag_evaluations, count);
    for (size_t i = 0; i < count; i++) {
        if (i + BULK_PREFETCH_AHEAD < count) {
            eval_prefetch_flag(c->s, &flags[i + BULK_PREFETCH_AHEAD]);
            usage_batch_prefetch(c->w->usage_batch, c->s,
                                 (uint32_t)(&flags[i + BULK_PREFETCH_AHEAD] - c->s->flags));
        }
        struct eval_result res;
        eval_flag(c->s, &flags[i], &c->ctx, c->w->eval_scratch, &res);
        if ((*written)++ > 0)
            http_answer_lit(t, ",");
        if (res.status != EVAL_OK) {
            write_failure(t, c, &flags[i], &res);
            continue;
        }
        write_result(t, c, &flags[i], &res);
        count_usage(c, &flags[i], &res);
    }
}

/* The flags of every chunk in key order: the body one part would give. */
static void evaluate_all(struct call *c, const char *etag, const char *entry, size_t entry_len)
{
    struct http_answer t;
    http_answer_open(c->w, &t);
    http_answer_lit(&t, "{\"flags\":[");
    size_t written = 0;
    for (size_t i = 0; (c->s = call_chunk(c, i, &c->env)) != NULL; i++)
        evaluate_part(c, &t, &written);
    http_answer_lit(&t, "],\"metadata\":{\"environment\":");
    http_answer_string(&t, snapshot_string(c->part, c->part_env->key), c->part_env->key.len);
    http_answer_lit(&t, "}");
    if (entry_len > 0) {
        http_answer_lit(&t, ",\"eventStreams\":[");
        http_answer_put(&t, entry, entry_len);
        http_answer_lit(&t, "]");
    }
    http_answer_lit(&t, "}");
    http_add_header(c->r, "ETag", etag);
    send_answer(c, 200, &t);
}

void ofrep_evaluate_bulk(struct http_request *r)
{
    struct call c = {.r = r, .w = r->server};
    if (begin_call(&c)) {
        char entry[STREAMS_ENTRY_MAX];
        size_t entry_len = streams_entry_json(r, c.s, c.env, c.digest, entry, sizeof entry);
        char etag[BULK_ETAG_SIZE];
        bulk_etag(&c, entry, entry_len, etag);
        const char *if_none_match = http_header(r, "If-None-Match");
        if (if_none_match != NULL && etag_listed(if_none_match, etag)) {
            http_add_header(r, "ETag", etag);
            http_send_not_modified(r);
        } else {
            evaluate_all(&c, etag, entry, entry_len);
        }
    }
    call_end(&c);
}
