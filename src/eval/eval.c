/*
 * eval.c - evaluation of flags against a context (see eval.h).
 *
 * Sections: coercion helpers; case folding; reading context attributes;
 * operators; conditions, segments and rules; serves and rollouts; the
 * flag; the context; the bulk ETag.
 *
 * Invariants: the snapshot was validated by snapshot_open, so indexes are
 * used without bounds checks; nothing here allocates except
 * eval_scratch_new. The context is flat JSON (json_flat.h), read in place.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "eval/eval.h"

#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/cond_ops.h"
#include "base/hex.h"
#include "eval/isotime.h"
#include "http/json_flat.h"
#include "eval/murmur3.h"
#include "eval/semver.h"

/* PCRE2 limits: clients control the subject, so bound the work per match. */
#define EVAL_REGEX_MATCH_LIMIT 100000u
#define EVAL_REGEX_DEPTH_LIMIT 1000u
#define EVAL_REGEX_HEAP_LIMIT_KIB 4096u

struct eval_scratch {
    pcre2_match_data *match_data;
    pcre2_match_context *match_context;
};

/* ------------------------------------------------------------------ */
/* Coercion helpers */

size_t eval_number_text(double number, bool is_integer, int64_t integer,
                        char out[EVAL_NUMBER_TEXT_SIZE])
{
    if (!is_integer && number == floor(number) && fabs(number) < 9.2e18) {
        is_integer = true;
        integer = (int64_t)number;
    }
    if (is_integer)
        return (size_t)snprintf(out, EVAL_NUMBER_TEXT_SIZE, "%" PRId64, integer);
    int n = 0;
    for (int precision = 15; precision <= 17; precision++) {
        n = snprintf(out, EVAL_NUMBER_TEXT_SIZE, "%.*g", precision, number);
        if (strtod(out, NULL) == number)
            break;
    }
    return (size_t)n;
}

static size_t skip_digits(const char *text, size_t len, size_t i)
{
    while (i < len && text[i] >= '0' && text[i] <= '9')
        i++;
    return i;
}

/* JSON number grammar, leniently: optional '-', digits, optional fraction,
 * optional exponent. Sets *plain when there is neither. */
static bool number_shaped(const char *text, size_t len, bool *plain)
{
    size_t i = (len > 0 && text[0] == '-') ? 1 : 0;
    size_t start = i;
    i = skip_digits(text, len, i);
    if (i == start)
        return false;
    *plain = true;
    if (i < len && text[i] == '.') {
        size_t frac = i + 1;
        i = skip_digits(text, len, frac);
        if (i == frac)
            return false;
        *plain = false;
    }
    if (i < len && (text[i] == 'e' || text[i] == 'E')) {
        i++;
        if (i < len && (text[i] == '+' || text[i] == '-'))
            i++;
        size_t exp = i;
        i = skip_digits(text, len, exp);
        if (i == exp)
            return false;
        *plain = false;
    }
    return i == len;
}

bool eval_text_to_number(const char *text, size_t len, double *number, bool *is_integer,
                         int64_t *integer)
{
    bool plain;
    if (!number_shaped(text, len, &plain))
        return false;
    *number = strtod(text, NULL);
    if (!isfinite(*number))
        return false;
    *is_integer = false;
    if (plain) {
        char *end;
        errno = 0;
        long long v = strtoll(text, &end, 10);
        if (errno == 0 && end == text + len) {
            *is_integer = true;
            *integer = v;
        }
    }
    return true;
}

bool eval_text_to_boolean(const char *text, size_t len, bool *out)
{
    if (len == 4 && memcmp(text, "true", 4) == 0)
        *out = true;
    else if (len == 5 && memcmp(text, "false", 5) == 0)
        *out = false;
    else
        return false;
    return true;
}

/* ------------------------------------------------------------------ */
/* Case folding for caseInsensitive: simple one-to-one folds of ASCII,
 * Latin-1, Latin Extended-A, Greek and Cyrillic. Each fold keeps the UTF-8
 * length of the character, so folded texts compare byte range by byte
 * range. Invalid UTF-8 bytes stand for themselves (never equal to a
 * character). */

#define RAW_BYTE 0x80000000u

static uint32_t decode_utf8(const unsigned char *p, size_t len, size_t *used)
{
    *used = 1;
    if (p[0] < 0x80)
        return p[0];
    size_t n = (p[0] & 0xe0) == 0xc0   ? 2
               : (p[0] & 0xf0) == 0xe0 ? 3
               : (p[0] & 0xf8) == 0xf0 ? 4
                                       : 0;
    if (n == 0 || n > len)
        return RAW_BYTE | p[0];
    uint32_t c = p[0] & (0x7f >> n);
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return RAW_BYTE | p[0];
        c = c << 6 | (p[i] & 0x3f);
    }
    *used = n;
    return c;
}

static uint32_t fold_latin_extended_a(uint32_t c)
{
    bool even_upper = (c <= 0x137) || (c >= 0x14a && c <= 0x177);
    bool odd_upper = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e);
    if ((even_upper && c % 2 == 0) || (odd_upper && c % 2 == 1))
        return c + 1;
    return c == 0x178 ? 0xff : c;
}

/* Greek capitals with tonos, U+0386 to U+038F. */
static uint32_t fold_greek_tonos(uint32_t c)
{
    static const uint16_t lower[10] = {0x3ac, 0x387, 0x3ad, 0x3ae, 0x3af,
                                       0x38b, 0x3cc, 0x38d, 0x3cd, 0x3ce};
    return lower[c - 0x386];
}

static uint32_t fold_char(uint32_t c)
{
    if (c >= 'A' && c <= 'Z')
        return c + 32;
    if (c < 0xc0)
        return c;
    if (c <= 0xde)
        return c == 0xd7 ? c : c + 32;
    if (c >= 0x100 && c <= 0x17f)
        return fold_latin_extended_a(c);
    if (c >= 0x391 && c <= 0x3a9 && c != 0x3a2)
        return c + 32;
    if (c >= 0x386 && c <= 0x38f)
        return fold_greek_tonos(c);
    if (c >= 0x410 && c <= 0x42f)
        return c + 32;
    if (c >= 0x400 && c <= 0x40f)
        return c + 80;
    return c;
}

/* len bytes of a and b are equal after folding. */
static bool fold_equal(const char *a, const char *b, size_t len)
{
    const unsigned char *pa = (const unsigned char *)a, *pb = (const unsigned char *)b;
    size_t i = 0;
    while (i < len) {
        size_t ua, ub;
        uint32_t ca = decode_utf8(pa + i, len - i, &ua);
        uint32_t cb = decode_utf8(pb + i, len - i, &ub);
        if (ua != ub || fold_char(ca) != fold_char(cb))
            return false;
        i += ua;
    }
    return true;
}

static bool text_equal(const char *a, size_t alen, const char *b, size_t blen, bool caseless)
{
    if (alen != blen)
        return false;
    return caseless ? fold_equal(a, b, alen) : memcmp(a, b, alen) == 0;
}

static bool text_has_prefix(const char *s, size_t slen, const char *p, size_t plen, bool caseless)
{
    return plen <= slen && text_equal(s, plen, p, plen, caseless);
}

static bool text_has_suffix(const char *s, size_t slen, const char *p, size_t plen, bool caseless)
{
    return plen <= slen && text_equal(s + slen - plen, plen, p, plen, caseless);
}

static bool text_contains(const char *s, size_t slen, const char *p, size_t plen, bool caseless)
{
    if (!caseless)
        return memmem(s, slen, p, plen) != NULL;
    for (size_t i = 0; i + plen <= slen; i++)
        if (fold_equal(s + i, p, plen))
            return true;
    return false;
}

/* ------------------------------------------------------------------ */
/* Reading context attributes */

enum scalar_type { SCALAR_STRING, SCALAR_NUMBER, SCALAR_BOOLEAN, SCALAR_OTHER };

/* One context value as the operators see it, after dataType coercion. */
struct scalar {
    enum scalar_type type;
    const char *text;
    size_t len;
    double number;
    int64_t integer;
    bool is_integer;
    bool boolean;
    char buf[EVAL_NUMBER_TEXT_SIZE];
};

static const struct json_flat *member(const struct snapshot *s, const struct json_flat *obj,
                                      struct snapshot_str name)
{
    return json_flat_member(obj, snapshot_string(s, name), name.len);
}

static const struct json_flat *walk_path(const struct snapshot *s, const struct json_flat *root,
                                         uint32_t first, uint32_t count)
{
    const struct json_flat *cur = root;
    for (uint32_t i = 0; i < count; i++) {
        if (cur->type != JSON_FLAT_OBJECT || (cur = member(s, cur, s->paths[first + i])) == NULL)
            return NULL;
    }
    return cur->type == JSON_FLAT_NULL ? NULL : cur;
}

/* The context's member named key (NULL when none), through ctx->memo.
 * The memo is the one part of a context evaluation writes: ctx is const
 * to the evaluator, never a const object (eval_context_init fills it). */
static const struct json_flat *
whole_attribute(const struct snapshot *s, const struct eval_context *ctx, struct snapshot_str key)
{
    struct eval_attr_memo *memo = (struct eval_attr_memo *)&ctx->memo;
    if (memo->s != s) {
        memo->s = s;
        memo->count = 0;
    }
    for (unsigned i = 0; i < memo->count; i++)
        if (memo->entries[i].off == key.off && memo->entries[i].len == key.len)
            return memo->entries[i].value;
    const struct json_flat *found = member(s, ctx->attributes, key);
    if (found != NULL && found->type == JSON_FLAT_NULL)
        found = NULL;
    if (memo->count < sizeof memo->entries / sizeof memo->entries[0]) {
        memo->entries[memo->count].off = key.off;
        memo->entries[memo->count].len = key.len;
        memo->entries[memo->count].value = found;
        memo->count++;
    }
    return found;
}

/* The whole key as-is first, then the key split on dots. */
static const struct json_flat *lookup_attribute(const struct snapshot *s,
                                                const struct eval_context *ctx,
                                                struct snapshot_str key, uint32_t path_first,
                                                uint32_t path_count)
{
    if (ctx->attributes == NULL)
        return NULL;
    const struct json_flat *found = whole_attribute(s, ctx, key);
    if (found != NULL)
        return found;
    if (path_count < 2)
        return NULL;
    return walk_path(s, ctx->attributes, path_first, path_count);
}

static void scalar_from_text(struct scalar *x, const char *text, size_t len)
{
    x->type = SCALAR_STRING;
    x->text = text;
    x->len = len;
}

static void scalar_from_json(const struct json_flat *v, struct scalar *x)
{
    switch (v->type) {
    case JSON_FLAT_STRING:
        scalar_from_text(x, v->u.text, v->len);
        return;
    case JSON_FLAT_INT:
        x->type = SCALAR_NUMBER;
        x->integer = v->u.integer;
        x->number = (double)x->integer;
        x->is_integer = true;
        return;
    case JSON_FLAT_DOUBLE:
        x->type = SCALAR_NUMBER;
        x->number = v->u.number;
        return;
    case JSON_FLAT_BOOLEAN:
        x->type = SCALAR_BOOLEAN;
        x->boolean = v->boolean;
        return;
    default:
        x->type = SCALAR_OTHER;
        return;
    }
}

static void coerce_to_string(struct scalar *x)
{
    if (x->type == SCALAR_NUMBER) {
        size_t n = eval_number_text(x->number, x->is_integer, x->integer, x->buf);
        scalar_from_text(x, x->buf, n);
    } else if (x->type == SCALAR_BOOLEAN) {
        scalar_from_text(x, x->boolean ? "true" : "false", x->boolean ? 4 : 5);
    }
}

static void coerce_to_number(struct scalar *x)
{
    if (x->type == SCALAR_STRING) {
        bool ok = eval_text_to_number(x->text, x->len, &x->number, &x->is_integer, &x->integer);
        x->type = ok ? SCALAR_NUMBER : SCALAR_OTHER;
    } else if (x->type != SCALAR_NUMBER) {
        x->type = SCALAR_OTHER;
    }
}

static void coerce_to_boolean(struct scalar *x)
{
    if (x->type == SCALAR_STRING)
        x->type =
            eval_text_to_boolean(x->text, x->len, &x->boolean) ? SCALAR_BOOLEAN : SCALAR_OTHER;
    else if (x->type != SCALAR_BOOLEAN)
        x->type = SCALAR_OTHER;
}

static void coerce(struct scalar *x, uint32_t data_type)
{
    if (data_type == SNAPSHOT_DATA_STRING)
        coerce_to_string(x);
    else if (data_type == SNAPSHOT_DATA_NUMBER)
        coerce_to_number(x);
    else if (data_type == SNAPSHOT_DATA_BOOLEAN)
        coerce_to_boolean(x);
}

/* ------------------------------------------------------------------ */
/* Operators (the positive ones; negative twins negate them) */

struct match_env {
    const struct snapshot *s;
    const struct snapshot_cond *cond;
    const struct eval_context *ctx;
    struct eval_scratch *scratch;
};

static int compare_numbers(const struct scalar *x, const struct snapshot_value *v)
{
    if (x->is_integer && v->is_integer)
        return x->integer < v->integer ? -1 : (x->integer > v->integer ? 1 : 0);
    return x->number < v->number ? -1 : (x->number > v->number ? 1 : 0);
}

static bool scalar_equals(const struct snapshot *s, const struct scalar *x,
                          const struct snapshot_value *v, bool caseless)
{
    if (x->type == SCALAR_STRING && v->type == SNAPSHOT_VALUE_STRING)
        return text_equal(x->text, x->len, snapshot_string(s, v->text), v->text.len, caseless);
    if (x->type == SCALAR_NUMBER && v->type == SNAPSHOT_VALUE_NUMBER)
        return x->number == v->number && compare_numbers(x, v) == 0;
    if (x->type == SCALAR_BOOLEAN && v->type == SNAPSHOT_VALUE_BOOLEAN)
        return x->boolean == (v->boolean != 0);
    return false;
}

static bool regex_finds(const struct match_env *m, const struct scalar *x,
                        const struct snapshot_value *v)
{
    const pcre2_code *re = snapshot_regex(m->s, v->pattern);
    if (re == NULL)
        return false;
    int rc = pcre2_match(re, (PCRE2_SPTR)x->text, x->len, 0, 0, m->scratch->match_data,
                         m->scratch->match_context);
    return rc >= 0;
}

static bool string_op(const struct match_env *m, uint32_t op, const struct scalar *x,
                      const struct snapshot_value *v)
{
    bool caseless = (m->cond->flags & SNAPSHOT_COND_CASELESS) != 0;
    const char *p = snapshot_string(m->s, v->text);
    switch (op) {
    case SNAPSHOT_OP_CONTAINS:
        return text_contains(x->text, x->len, p, v->text.len, caseless);
    case SNAPSHOT_OP_STARTS_WITH:
        return text_has_prefix(x->text, x->len, p, v->text.len, caseless);
    case SNAPSHOT_OP_ENDS_WITH:
        return text_has_suffix(x->text, x->len, p, v->text.len, caseless);
    default:
        return regex_finds(m, x, v);
    }
}

static bool compare_holds(uint32_t op, int c)
{
    switch (op) {
    case SNAPSHOT_OP_GT:
    case SNAPSHOT_OP_SEMVER_GT:
        return c > 0;
    case SNAPSHOT_OP_GTE:
    case SNAPSHOT_OP_SEMVER_GTE:
        return c >= 0;
    case SNAPSHOT_OP_LT:
    case SNAPSHOT_OP_SEMVER_LT:
        return c < 0;
    case SNAPSHOT_OP_LTE:
    case SNAPSHOT_OP_SEMVER_LTE:
        return c <= 0;
    default:
        return c == 0;
    }
}

static bool semver_op(const struct snapshot *s, uint32_t op, const struct scalar *x,
                      const struct snapshot_value *v)
{
    struct semver a, b;
    if (x->type != SCALAR_STRING || !semver_parse(x->text, x->len, &a) ||
        !semver_parse(snapshot_string(s, v->text), v->text.len, &b))
        return false;
    return compare_holds(op, semver_compare(&a, &b));
}

static bool time_op(uint32_t op, int64_t t, const struct snapshot_value *v)
{
    return op == SNAPSHOT_OP_BEFORE ? t < v->time_us : t > v->time_us;
}

/* before/after: the instant t against any value. */
static bool time_matches(const struct match_env *m, uint32_t op, int64_t t)
{
    const struct snapshot_cond *c = m->cond;
    for (uint32_t i = 0; i < c->value_count; i++)
        if (time_op(op, t, &m->s->values[c->value_first + i]))
            return true;
    return false;
}

static bool value_hit(const struct match_env *m, uint32_t op, const struct scalar *x,
                      const struct snapshot_value *v)
{
    switch (cond_ops[op].kind) {
    case COND_VALUES_SCALAR:
        return scalar_equals(m->s, x, v, (m->cond->flags & SNAPSHOT_COND_CASELESS) != 0);
    case COND_VALUES_STRING:
    case COND_VALUES_PATTERN:
        return x->type == SCALAR_STRING && v->type == SNAPSHOT_VALUE_STRING &&
               string_op(m, op, x, v);
    case COND_VALUES_NUMBER:
        return x->type == SCALAR_NUMBER && v->type == SNAPSHOT_VALUE_NUMBER &&
               compare_holds(op, compare_numbers(x, v));
    default:
        return semver_op(m->s, op, x, v);
    }
}

/* Whether the positive operator op holds for one scalar and any value. */
static bool scalar_matches(const struct match_env *m, uint32_t op, const struct scalar *x)
{
    const struct snapshot_cond *c = m->cond;
    if (cond_ops[op].kind == COND_VALUES_TIMESTAMP) {
        int64_t t;
        return x->type == SCALAR_STRING && isotime_parse(x->text, x->len, &t) &&
               time_matches(m, op, t);
    }
    for (uint32_t i = 0; i < c->value_count; i++)
        if (value_hit(m, op, x, &m->s->values[c->value_first + i]))
            return true;
    return false;
}

static bool json_matches(const struct match_env *m, uint32_t op, const struct json_flat *v)
{
    struct scalar x = {.type = SCALAR_OTHER};
    scalar_from_json(v, &x);
    coerce(&x, m->cond->data_type);
    return scalar_matches(m, op, &x);
}

/* $currentTime as text, formatted on first use: most requests compare
 * no time (ctx is const to the evaluator; the text, like the memo, is
 * what evaluation fills in). */
static const char *now_iso(const struct eval_context *ctx, size_t *len)
{
    struct eval_context *filled = (struct eval_context *)ctx;
    if (filled->now_iso_len == 0)
        filled->now_iso_len = isotime_format(ctx->now_us, filled->now_iso);
    *len = ctx->now_iso_len;
    return ctx->now_iso;
}

static bool clock_matches(const struct match_env *m, uint32_t op)
{
    if (cond_ops[op].kind == COND_VALUES_TIMESTAMP)
        return time_matches(m, op, m->ctx->now_us);
    struct scalar x = {.type = SCALAR_OTHER};
    size_t len;
    const char *now = now_iso(m->ctx, &len);
    scalar_from_text(&x, now, len);
    return scalar_matches(m, op, &x);
}

/* ------------------------------------------------------------------ */
/* Conditions, segments and rules */

/* The positive operator on a present value: arrays match when any element
 * does. */
static bool value_matches(const struct match_env *m, uint32_t op, const struct json_flat *v)
{
    if (v->type != JSON_FLAT_ARRAY)
        return json_matches(m, op, v);
    const struct json_flat *item = json_flat_first(v);
    for (uint32_t i = 0; i < v->len; i++, item = json_flat_next(item))
        if (item->type != JSON_FLAT_NULL && json_matches(m, op, item))
            return true;
    return false;
}

static bool attribute_condition(const struct match_env *m)
{
    const struct snapshot_cond *c = m->cond;
    uint32_t op = cond_ops[c->op].positive; /* negative twins: the negation, below */
    bool result;
    if (c->flags & SNAPSHOT_COND_CURRENT_TIME) {
        result = op == SNAPSHOT_OP_EXISTS || clock_matches(m, op);
    } else {
        const struct json_flat *v =
            lookup_attribute(m->s, m->ctx, c->attribute, c->path_first, c->path_count);
        if (op == SNAPSHOT_OP_EXISTS)
            result = v != NULL;
        else
            result = v != NULL && value_matches(m, op, v);
    }
    return op != c->op ? !result : result;
}

static bool conditions_hold(const struct snapshot *s, uint32_t first, uint32_t count,
                            const struct eval_context *ctx, struct eval_scratch *scratch);

static bool condition_holds(const struct snapshot *s, const struct snapshot_cond *c,
                            const struct eval_context *ctx, struct eval_scratch *scratch)
{
    bool result = false;
    if (c->kind == SNAPSHOT_COND_ATTRIBUTE) {
        struct match_env m = {.s = s, .cond = c, .ctx = ctx, .scratch = scratch};
        result = attribute_condition(&m);
    } else if (c->kind == SNAPSHOT_COND_SEGMENT) {
        const struct snapshot_segment *g = &s->segments[c->segment];
        result = !g->broken && conditions_hold(s, g->cond_first, g->cond_count, ctx, scratch);
    }
    return (c->flags & SNAPSHOT_COND_NEGATE) ? !result : result;
}

static bool conditions_hold(const struct snapshot *s, uint32_t first, uint32_t count,
                            const struct eval_context *ctx, struct eval_scratch *scratch)
{
    for (uint32_t i = 0; i < count; i++)
        if (!condition_holds(s, &s->conds[first + i], ctx, scratch))
            return false;
    return true;
}

/* ------------------------------------------------------------------ */
/* Serves and rollouts */

static void set_error(struct eval_result *out, enum eval_status status, const char *detail)
{
    out->status = status;
    out->reason = EVAL_REASON_ERROR;
    out->error_detail = detail;
    out->variant_key = NULL;
    out->value_json = NULL;
    out->variant_index = SNAPSHOT_NONE;
}

static const char *serve_error_detail(uint32_t error)
{
    switch (error) {
    case SNAPSHOT_SERVE_NO_VARIANTS:
        return "the flag has no variants";
    case SNAPSHOT_SERVE_MISSING_VARIANT:
        return "the flag serves a variant it does not have";
    case SNAPSHOT_SERVE_BAD_VALUE:
        return "the served variant has an unusable value";
    case SNAPSHOT_SERVE_NO_OFF_VARIANT:
        return "the flag is disabled and has no off variant";
    case SNAPSHOT_SERVE_UNKNOWN_TYPE:
        return "the flag has an unknown type";
    default:
        return "the flag's configuration cannot be evaluated";
    }
}

/* The bucket value: bucketBy (string as-is, integer in decimal), else the
 * targeting key; false when neither exists. */
static bool bucket_value(const struct snapshot *s, const struct snapshot_serve *v,
                         const struct eval_context *ctx, char buf[EVAL_NUMBER_TEXT_SIZE],
                         const char **text, size_t *len)
{
    if (v->bucket_by.len > 0) {
        if (strcmp(snapshot_string(s, v->bucket_by), "$currentTime") == 0) {
            *text = now_iso(ctx, len);
            return true;
        }
        const struct json_flat *a =
            lookup_attribute(s, ctx, v->bucket_by, v->bucket_path_first, v->bucket_path_count);
        if (a != NULL && a->type == JSON_FLAT_STRING) {
            *text = a->u.text;
            *len = a->len;
            return true;
        }
        if (a != NULL && a->type == JSON_FLAT_INT) {
            *len = (size_t)snprintf(buf, EVAL_NUMBER_TEXT_SIZE, "%" PRId64, a->u.integer);
            *text = buf;
            return true;
        }
    }
    *text = ctx->targeting_key;
    *len = ctx->targeting_key_len;
    return ctx->targeting_key != NULL;
}

/* The variant (index among the flag's) for hash h: the first rollout item
 * whose running weight sum exceeds p = (h * total) >> 32. */
static uint32_t rollout_pick(const struct snapshot *s, const struct snapshot_serve *v, uint32_t h)
{
    uint64_t p = ((uint64_t)h * v->total_weight) >> 32;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < v->item_count; i++) {
        sum += s->items[v->item_first + i].weight;
        if (sum > p)
            return s->items[v->item_first + i].variant;
    }
    return s->items[v->item_first + v->item_count - 1].variant; /* unreachable */
}

static void set_variant(const struct snapshot *s, uint32_t variant, struct eval_result *out)
{
    const struct snapshot_variant *var = &s->variants[variant];
    out->status = EVAL_OK;
    out->variant_index = variant;
    out->variant_key = snapshot_string(s, var->key);
    out->variant_key_len = var->key.len;
    out->value_json = snapshot_string(s, var->value_json);
    out->value_json_len = var->value_json.len;
}

static void serve(const struct snapshot *s, const struct snapshot_flag *flag, uint32_t index,
                  const struct eval_context *ctx, enum eval_reason single_reason,
                  struct eval_result *out)
{
    const struct snapshot_serve *v = &s->serves[index];
    if (v->kind == SNAPSHOT_SERVE_INVALID) {
        set_error(out, EVAL_ERROR_GENERAL, serve_error_detail(v->error));
        return;
    }
    if (v->kind == SNAPSHOT_SERVE_VARIANT) {
        set_variant(s, flag->variant_first + v->variant, out);
        out->reason = single_reason;
        return;
    }
    char buf[EVAL_NUMBER_TEXT_SIZE];
    const char *text;
    size_t len;
    if (!bucket_value(s, v, ctx, buf, &text, &len)) {
        set_error(out, EVAL_ERROR_TARGETING_KEY_MISSING,
                  "a rollout needs a targetingKey (or its bucketBy attribute)");
        return;
    }
    struct murmur3_state st;
    murmur3_init(&st, 0);
    murmur3_update(&st, snapshot_string(s, flag->key), flag->key.len);
    murmur3_update(&st, text, len);
    set_variant(s, flag->variant_first + rollout_pick(s, v, murmur3_final(&st)), out);
    out->reason = EVAL_REASON_SPLIT;
}

/* ------------------------------------------------------------------ */
/* The flag */

void eval_flag(const struct snapshot *s, const struct snapshot_flag *flag,
               const struct eval_context *ctx, struct eval_scratch *scratch,
               struct eval_result *out)
{
    memset(out, 0, sizeof *out);
    out->type = flag->type <= SNAPSHOT_TYPE_JSON ? flag->type : SNAPSHOT_TYPE_UNKNOWN;
    if (!flag->enabled) {
        serve(s, flag, flag->off_serve, ctx, EVAL_REASON_DISABLED, out);
        if (out->status == EVAL_OK)
            out->reason = EVAL_REASON_DISABLED;
        return;
    }
    for (uint32_t i = 0; i < flag->rule_count; i++) {
        const struct snapshot_rule *r = &s->rules[flag->rule_first + i];
        if (r->broken) {
            set_error(out, EVAL_ERROR_GENERAL, "a targeting rule of the flag cannot be evaluated");
            return;
        }
        if (conditions_hold(s, r->cond_first, r->cond_count, ctx, scratch)) {
            serve(s, flag, r->serve, ctx, EVAL_REASON_TARGETING_MATCH, out);
            out->rule_id = snapshot_string(s, r->id);
            out->rule_id_len = r->id.len;
            return;
        }
    }
    enum eval_reason single = flag->rule_count == 0 ? EVAL_REASON_STATIC : EVAL_REASON_DEFAULT;
    serve(s, flag, flag->default_serve, ctx, single, out);
}

void eval_prefetch_flag(const struct snapshot *s, const struct snapshot_flag *flag)
{
    __builtin_prefetch(snapshot_string(s, flag->key));
    __builtin_prefetch(&s->serves[flag->default_serve]);
    if (flag->rule_count > 0)
        __builtin_prefetch(&s->rules[flag->rule_first]);
}

const char *eval_reason_name(enum eval_reason reason)
{
    static const char *const names[] = {"STATIC", "DEFAULT",  "TARGETING_MATCH",
                                        "SPLIT",  "DISABLED", "ERROR"};
    return (unsigned)reason < sizeof names / sizeof names[0] ? names[reason] : "ERROR";
}

const char *eval_error_code(enum eval_status status)
{
    switch (status) {
    case EVAL_ERROR_GENERAL:
        return "GENERAL";
    case EVAL_ERROR_TARGETING_KEY_MISSING:
        return "TARGETING_KEY_MISSING";
    default:
        return NULL;
    }
}

/* ------------------------------------------------------------------ */
/* Scratch and context */

struct eval_scratch *eval_scratch_new(void)
{
    struct eval_scratch *scratch = calloc(1, sizeof *scratch);
    if (scratch == NULL)
        return NULL;
    scratch->match_data = pcre2_match_data_create(1, NULL);
    scratch->match_context = pcre2_match_context_create(NULL);
    if (scratch->match_data == NULL || scratch->match_context == NULL) {
        eval_scratch_free(scratch);
        return NULL;
    }
    pcre2_set_match_limit(scratch->match_context, EVAL_REGEX_MATCH_LIMIT);
    pcre2_set_depth_limit(scratch->match_context, EVAL_REGEX_DEPTH_LIMIT);
    pcre2_set_heap_limit(scratch->match_context, EVAL_REGEX_HEAP_LIMIT_KIB);
    return scratch;
}

void eval_scratch_free(struct eval_scratch *scratch)
{
    if (scratch == NULL)
        return;
    pcre2_match_data_free(scratch->match_data);
    pcre2_match_context_free(scratch->match_context);
    free(scratch);
}

enum eval_context_status eval_context_init(struct eval_context *ctx,
                                           const struct json_flat *context, int64_t now_us,
                                           const char **detail)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->now_us = now_us;
    *detail = NULL;
    if (context == NULL || context->type == JSON_FLAT_NULL)
        return EVAL_CONTEXT_OK;
    if (context->type != JSON_FLAT_OBJECT) {
        *detail = "context must be an object";
        return EVAL_CONTEXT_NOT_OBJECT;
    }
    ctx->attributes = context;
    const struct json_flat *key = json_flat_member(context, "targetingKey", strlen("targetingKey"));
    if (key != NULL) { /* present: null is not a string either */
        if (key->type != JSON_FLAT_STRING) {
            *detail = "targetingKey must be a string";
            return EVAL_CONTEXT_TARGETING_KEY_INVALID;
        }
        if (key->len > 0) {
            ctx->targeting_key = key->u.text;
            ctx->targeting_key_len = key->len;
        }
    }
    return EVAL_CONTEXT_OK;
}

/* ------------------------------------------------------------------ */
/* The bulk ETag: a 64-bit hash over a canonical, unambiguous encoding
 * (type tags, lengths, object keys sorted by bytes), then an avalanche.
 * Each piece of the encoding is taken 8 bytes at a time (little-endian
 * words, the last one zero-padded) by a multiply-rotate round of the
 * MurmurHash64 kind: the pieces and their order are fixed by the encoding,
 * so equal contexts always feed the same words. */

#define ETAG_SEED UINT64_C(0xcbf29ce484222325)
#define ETAG_K1 UINT64_C(0x87c37b91114253d5)
#define ETAG_K2 UINT64_C(0x4cf5ad432745937f)

struct etag_hash {
    uint64_t h;
};

static void hash_word(struct etag_hash *st, uint64_t w)
{
    w *= ETAG_K1;
    w = (w << 31) | (w >> 33);
    w *= ETAG_K2;
    uint64_t h = st->h ^ w;
    h = (h << 27) | (h >> 37);
    st->h = h * 5 + 0x52dce729;
}

static void hash_bytes(struct etag_hash *st, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (; len >= 8; p += 8, len -= 8) {
        uint64_t w;
        memcpy(&w, p, sizeof w);
        hash_word(st, le64toh(w));
    }
    if (len > 0) {
        uint64_t w = 0;
        for (size_t i = 0; i < len; i++)
            w |= (uint64_t)p[i] << (8 * i);
        hash_word(st, w);
    }
}

static void hash_u64(struct etag_hash *st, uint64_t v)
{
    hash_word(st, v);
}

/* A tagged piece: the tag and the length in one word (a length never
 * reaches 2^56), then the bytes. */
static void hash_text(struct etag_hash *st, char tag, const char *text, size_t len)
{
    hash_word(st, (uint64_t)(unsigned char)tag << 56 | (uint64_t)len);
    hash_bytes(st, text, len);
}

static void hash_json(struct etag_hash *st, const struct json_flat *v);

/* A small object's members by name: insertion sort of at most
 * JSON_FLAT_LINEAR_MAX (larger objects carry their order). */
static void sort_small(const struct json_flat *obj, const struct json_flat **members)
{
    const struct json_flat *m = json_flat_first(obj);
    for (uint32_t i = 0; i < obj->len; i++, m = json_flat_next(m)) {
        uint32_t j = i;
        for (; j > 0 && json_flat_compare_names(members[j - 1]->key, members[j - 1]->key_len,
                                                m->key, m->key_len) > 0;
             j--)
            members[j] = members[j - 1];
        members[j] = m;
    }
}

static void hash_member(struct etag_hash *st, const struct json_flat *m)
{
    hash_text(st, 'k', m->key, m->key_len);
    hash_json(st, m);
}

static void hash_object(struct etag_hash *st, const struct json_flat *obj)
{
    hash_u64(st, obj->len);
    if (obj->len > JSON_FLAT_LINEAR_MAX) {
        for (uint32_t i = 0; i < obj->len; i++)
            hash_member(st, obj + obj->u.order[i]);
        return;
    }
    const struct json_flat *members[JSON_FLAT_LINEAR_MAX];
    sort_small(obj, members);
    for (uint32_t i = 0; i < obj->len; i++)
        hash_member(st, members[i]);
}

static void hash_json(struct etag_hash *st, const struct json_flat *v)
{
    switch (v->type) {
    case JSON_FLAT_NULL:
        hash_text(st, 'n', "", 0);
        break;
    case JSON_FLAT_BOOLEAN:
        hash_text(st, v->boolean ? 't' : 'f', "", 0);
        break;
    case JSON_FLAT_INT:
        hash_text(st, 'i', "", 0);
        hash_u64(st, (uint64_t)v->u.integer);
        break;
    case JSON_FLAT_DOUBLE: {
        uint64_t bits;
        memcpy(&bits, &v->u.number, sizeof bits);
        hash_text(st, 'd', "", 0);
        hash_u64(st, bits);
        break;
    }
    case JSON_FLAT_STRING:
        hash_text(st, 's', v->u.text, v->len);
        break;
    case JSON_FLAT_ARRAY: {
        hash_text(st, 'a', "", 0);
        hash_u64(st, v->len);
        const struct json_flat *item = json_flat_first(v);
        for (uint32_t i = 0; i < v->len; i++, item = json_flat_next(item))
            hash_json(st, item);
        break;
    }
    case JSON_FLAT_OBJECT:
        hash_text(st, 'o', "", 0);
        hash_object(st, v);
        break;
    }
}

/* Which interval of the clock: 2k when k boundaries are below now, 2k+1
 * when now is exactly boundary k (before/after are both false there). */
static uint64_t clock_interval(const struct snapshot *s, const struct snapshot_env *env,
                               int64_t now_us)
{
    const int64_t *times = s->times + env->time_first;
    size_t lo = 0, hi = env->time_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (times[mid] < now_us)
            lo = mid + 1;
        else
            hi = mid;
    }
    bool on_boundary = lo < env->time_count && times[lo] == now_us;
    return 2 * (uint64_t)lo + on_boundary;
}

/* The one chunk of an organization without chunks (eval_chunk_fn; ctx is
 * the snapshot and *env the environment in it). */
struct single_part {
    const struct snapshot *s;
    const struct snapshot_env *env;
};

static const struct snapshot *single_chunk(void *ctx, size_t i, const struct snapshot_env **env)
{
    const struct single_part *one = ctx;
    *env = one->env;
    return i == 0 ? one->s : NULL;
}

void eval_bulk_etag(const struct snapshot *s, const struct snapshot_env *env,
                    const struct json_flat *context, int64_t now_us, char out[EVAL_ETAG_SIZE])
{
    struct single_part one = {s, env};
    eval_bulk_etag_chunks(snapshot_generation(s), snapshot_string(s, env->id), env->id.len,
                          single_chunk, &one, context, now_us, out);
}

/*
 * Over chunks, the clock's interval is the sum of each chunk's: a crossing
 * of any chunk's boundary moves it up by one or two and nothing moves it
 * down, so distinct intervals of the union of the boundaries give distinct
 * sums, equal ones equal sums; with one chunk it is that chunk's interval.
 */
void eval_bulk_etag_chunks(uint64_t generation, const char *env_id, size_t env_id_len,
                           eval_chunk_fn chunk, void *ctx, const struct json_flat *context,
                           int64_t now_us, char out[EVAL_ETAG_SIZE])
{
    struct etag_hash st = {ETAG_SEED};
    hash_text(&st, 'e', env_id, env_id_len);
    if (context == NULL)
        hash_text(&st, 'n', "", 0);
    else
        hash_json(&st, context);
    uint64_t h = st.h;
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    bool clock_opaque = false;
    uint64_t interval = 0;
    const struct snapshot_env *env;
    const struct snapshot *s;
    for (size_t i = 0; (s = chunk(ctx, i, &env)) != NULL; i++) {
        clock_opaque |= env->clock_opaque != 0;
        interval += clock_interval(s, env, now_us);
    }
    /* "GENERATION-INTERVAL-HASH" or "GENERATION-sSECOND-HASH", in hex
     * (at most 2 + 3 * 16 + 3 bytes: EVAL_ETAG_SIZE holds it). */
    char *p = out;
    *p++ = '"';
    p += hex_u64(generation, 1, p);
    *p++ = '-';
    if (clock_opaque) {
        int64_t second = now_us / 1000000 - (now_us % 1000000 < 0);
        *p++ = 's';
        p += hex_u64((uint64_t)second, 1, p);
    } else {
        p += hex_u64(interval, 1, p);
    }
    *p++ = '-';
    p += hex_u64(h, 16, p);
    *p++ = '"';
    *p = '\0';
}
