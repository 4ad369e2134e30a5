/*
 * test_snapshot.c - the snapshot writer and reader (src/eval/snapshot_build.c,
 * src/eval/snapshot.c): a round trip of environments, SDK keys, flags, variants,
 * rules, segments and patterns; the builder's refusals; atomic replacement;
 * and corrupt files (bad magic, wrong version, truncation, a flipped body
 * byte, out-of-bounds offsets and indexes), which snapshot_open must refuse
 * leaving nothing mapped or allocated (ASan checks the latter).
 * Files live under /tmp and are removed.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "eval/cond_ops.h"
#include "eval/snapshot.h"
#include "eval/snapshot_build.h"
#include "suites.h"
#include "mgmt/validate.h"

#define DIGEST_A "aa00000000000000000000000000000000000000000000000000000000000001"
#define DIGEST_B "0b00000000000000000000000000000000000000000000000000000000000002"
#define DIGEST_C "ff000000000000000000000000000000000000000000000000000000000000ff"

static char snap_path[64];

static const char *temp_snapshot_path(void)
{
    snprintf(snap_path, sizeof snap_path, "/tmp/ensign-snap-XXXXXX");
    int fd = mkstemp(snap_path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    return snap_path;
}

static const struct snapshot_variant_input bool_variants[] = {{"on", "true"}, {"off", "false"}};

static void add_bool_flag(struct snapshot_builder *b, const char *env, const char *key,
                          bool enabled)
{
    struct snapshot_flag_input in = {
        env, key, key, "boolean", enabled, "off", "{\"variant\": \"on\"}", bool_variants, 2};
    ck_assert_msg(snapshot_builder_add_flag(b, &in) == 0, "%s", snapshot_builder_error(b));
}

/* Two organizations, three environments, flags added out of key order. */
static struct snapshot_builder *sample_builder(void)
{
    struct snapshot_builder *b = snapshot_builder_new(42);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(snapshot_builder_add_environment(b, "e1", "o1", "production"), 0);
    ck_assert_int_eq(snapshot_builder_add_environment(b, "e2", "o1", "preview"), 0);
    ck_assert_int_eq(snapshot_builder_add_environment(b, "e3", "o2", "production"), 0);
    ck_assert_int_eq(snapshot_builder_add_entity_attribute(b, "o1", "user", "age", "number"), 0);
    ck_assert_int_eq(
        snapshot_builder_add_segment(b, "o1", "beta",
                                     "[{\"attribute\": \"email\", \"operator\": \"ends_with\","
                                     " \"values\": [\"@example.com\"]}]"),
        0);
    ck_assert_int_eq(snapshot_builder_add_sdk_key(b, DIGEST_A, "e1"), 0);
    ck_assert_int_eq(snapshot_builder_add_sdk_key(b, DIGEST_B, "e3"), 0);
    ck_assert_int_eq(snapshot_builder_add_sdk_key(b, DIGEST_C, "e2"), 0);
    const char *keys[] = {"zeta", "alpha", "mid", "alpha-2", "b"};
    for (size_t i = 0; i < 5; i++)
        add_bool_flag(b, "e1", keys[i], i % 2 == 0);
    add_bool_flag(b, "e2", "alpha", false);
    static const struct snapshot_variant_input json_variants[] = {
        {"small", "{\"a\": 1, \"b\": [1, 2]}"}, {"big", "[ {\"x\" : \"y/z\"} ]"}};
    struct snapshot_flag_input json_flag = {
        "e3", "id-cfg", "cfg", "json", true, "big", "{\"variant\": \"small\"}", json_variants, 2};
    ck_assert_int_eq(snapshot_builder_add_flag(b, &json_flag), 0);
    ck_assert_int_eq(snapshot_builder_add_rule(b, "e1", "mid", "rule-1",
                                               "[{\"segment\": \"beta\"}]",
                                               "{\"variant\": \"off\"}"),
                     0);
    ck_assert_int_eq(
        snapshot_builder_add_rule(b, "e1", "mid", "rule-2",
                                  "[{\"attribute\": \"name\", \"operator\": \"matches\","
                                  " \"values\": [\"^a+$\", \"b\"], \"caseInsensitive\": true}]",
                                  "{\"rollout\": [{\"variant\": \"on\", \"weight\": 1}],"
                                  " \"bucketBy\": \"user.id\"}"),
        0);
    ck_assert_int_eq(
        snapshot_builder_add_rule(b, "e1", "zeta", "rule-3", "[]", "{\"variant\": \"on\"}"), 0);
    return b;
}

static void write_sample(const char *path)
{
    struct snapshot_builder *b = sample_builder();
    char err[256];
    ck_assert_msg(snapshot_builder_write(b, path, err, sizeof err) == 0, "%s", err);
    snapshot_builder_free(b);
}

static void open_ok(const char *path, struct snapshot *s)
{
    char err[256];
    ck_assert_msg(snapshot_open(path, s, err, sizeof err) == 0, "%s", err);
}

static const struct snapshot_flag *flag_in(const struct snapshot *s, const char *org,
                                           const char *env_key, const char *key)
{
    const struct snapshot_env *env = snapshot_env_by_key(s, org, env_key);
    ck_assert_ptr_nonnull(env);
    return snapshot_flag_by_key(s, env, key, strlen(key));
}

START_TEST(round_trip_lookups)
{
    const char *path = temp_snapshot_path();
    write_sample(path);
    struct snapshot s;
    open_ok(path, &s);
    ck_assert_uint_eq(snapshot_generation(&s), 42);
    const struct snapshot_env *e1 = snapshot_env_by_sdk_digest(&s, DIGEST_A);
    ck_assert_ptr_nonnull(e1);
    ck_assert_str_eq(snapshot_string(&s, e1->key), "production");
    ck_assert_str_eq(snapshot_string(&s, e1->org), "o1");
    ck_assert_str_eq(snapshot_string(&s, e1->id), "e1");
    const struct snapshot_env *e3 = snapshot_env_by_sdk_digest(&s, DIGEST_B);
    ck_assert_str_eq(snapshot_string(&s, e3->id), "e3");
    ck_assert_str_eq(snapshot_string(&s, snapshot_env_by_sdk_digest(&s, DIGEST_C)->id), "e2");
    char upper[] = DIGEST_C;
    upper[0] = 'F', upper[1] = 'F';
    ck_assert_ptr_eq(snapshot_env_by_sdk_digest(&s, upper),
                     snapshot_env_by_sdk_digest(&s, DIGEST_C));
    ck_assert_ptr_null(snapshot_env_by_sdk_digest(
        &s, "1100000000000000000000000000000000000000000000000000000000000000"));
    ck_assert_ptr_null(snapshot_env_by_sdk_digest(&s, "aa00"));
    ck_assert_ptr_null(snapshot_env_by_sdk_digest(
        &s, "zz00000000000000000000000000000000000000000000000000000000000001"));

    size_t n;
    const struct snapshot_flag *flags = snapshot_env_flags(&s, e1, &n);
    const char *sorted[] = {"alpha", "alpha-2", "b", "mid", "zeta"};
    ck_assert_uint_eq(n, 5);
    for (size_t i = 0; i < n; i++) {
        ck_assert_str_eq(snapshot_string(&s, flags[i].key), sorted[i]);
        ck_assert_ptr_eq(snapshot_flag_by_key(&s, e1, sorted[i], strlen(sorted[i])), &flags[i]);
        ck_assert_str_eq(snapshot_flag_type_name(flags[i].type), "boolean");
    }
    ck_assert_ptr_null(snapshot_flag_by_key(&s, e1, "alph", 4));
    ck_assert_ptr_null(snapshot_flag_by_key(&s, e1, "cfg", 3));
    ck_assert_ptr_nonnull(snapshot_flag_by_key(&s, e1, "alpha-2xyz", 7));
    ck_assert_uint_eq(flag_in(&s, "o1", "production", "zeta")->enabled, 1);
    ck_assert_uint_eq(flag_in(&s, "o1", "production", "alpha")->enabled, 0);
    ck_assert_uint_eq(flag_in(&s, "o1", "preview", "alpha")->enabled, 0);
    ck_assert_ptr_null(flag_in(&s, "o1", "preview", "zeta"));
    snapshot_close(&s);
    unlink(path);
}
END_TEST

START_TEST(round_trip_records)
{
    const char *path = temp_snapshot_path();
    write_sample(path);
    struct snapshot s;
    open_ok(path, &s);
    const struct snapshot_flag *cfg = flag_in(&s, "o2", "production", "cfg");
    ck_assert_ptr_nonnull(cfg);
    ck_assert_str_eq(snapshot_string(&s, cfg->id), "id-cfg");
    ck_assert_uint_eq(cfg->type, SNAPSHOT_TYPE_JSON);
    ck_assert_uint_eq(cfg->variant_count, 2);
    const struct snapshot_variant *v = &s.variants[cfg->variant_first];
    ck_assert_str_eq(snapshot_string(&s, v[0].key), "small");
    ck_assert_str_eq(snapshot_string(&s, v[0].value_json), "{\"a\":1,\"b\":[1,2]}");
    ck_assert_str_eq(snapshot_string(&s, v[1].value_json), "[{\"x\":\"y/z\"}]");
    const struct snapshot_serve *def = &s.serves[cfg->default_serve];
    ck_assert_uint_eq(def->kind, SNAPSHOT_SERVE_VARIANT);
    ck_assert_uint_eq(def->variant, 0); /* relative to the flag's variants */
    ck_assert_uint_eq(s.serves[cfg->off_serve].variant, 1);

    const struct snapshot_flag *mid = flag_in(&s, "o1", "production", "mid");
    ck_assert_uint_eq(mid->rule_count, 2);
    const struct snapshot_rule *r = &s.rules[mid->rule_first];
    ck_assert_str_eq(snapshot_string(&s, r[0].id), "rule-1");
    ck_assert_str_eq(snapshot_string(&s, r[1].id), "rule-2");
    ck_assert_uint_eq(r[0].broken, 0);
    const struct snapshot_cond *c = &s.conds[r[0].cond_first];
    ck_assert_uint_eq(c->kind, SNAPSHOT_COND_SEGMENT);
    const struct snapshot_segment *g = &s.segments[c->segment];
    ck_assert_str_eq(snapshot_string(&s, g->key), "beta");
    ck_assert_str_eq(snapshot_string(&s, g->org), "o1");
    ck_assert_uint_eq(g->cond_count, 1);
    ck_assert_uint_eq(s.conds[g->cond_first].op, SNAPSHOT_OP_ENDS_WITH);
    const struct snapshot_cond *m = &s.conds[r[1].cond_first];
    ck_assert_uint_eq(m->op, SNAPSHOT_OP_MATCHES);
    ck_assert_uint_eq(m->flags & SNAPSHOT_COND_CASELESS, SNAPSHOT_COND_CASELESS);
    ck_assert_uint_eq(m->value_count, 2);
    const struct snapshot_value *pv = &s.values[m->value_first];
    ck_assert_ptr_nonnull(snapshot_regex(&s, pv->pattern));
    ck_assert_str_eq(snapshot_string(&s, s.patterns[pv->pattern].text), "^a+$");
    const struct snapshot_serve *roll = &s.serves[r[1].serve];
    ck_assert_uint_eq(roll->kind, SNAPSHOT_SERVE_ROLLOUT);
    ck_assert_str_eq(snapshot_string(&s, roll->bucket_by), "user.id");
    ck_assert_uint_eq(roll->bucket_path_count, 2);
    ck_assert_str_eq(snapshot_string(&s, s.paths[roll->bucket_path_first + 1]), "id");
    ck_assert_uint_eq(roll->total_weight, 1);
    const struct snapshot_flag *zeta = flag_in(&s, "o1", "production", "zeta");
    ck_assert_str_eq(snapshot_string(&s, s.rules[zeta->rule_first].id), "rule-3");
    ck_assert_uint_eq(s.rules[zeta->rule_first].cond_count, 0);
    snapshot_close(&s);
    unlink(path);
}
END_TEST

START_TEST(builder_refusals)
{
    struct snapshot_builder *b = snapshot_builder_new(1);
    ck_assert_str_eq(snapshot_builder_error(b), "");
    ck_assert_int_eq(snapshot_builder_add_environment(b, "e1", "o1", "production"), 0);
    ck_assert_int_eq(snapshot_builder_add_environment(b, "e1", "o1", "production"), -1);
    ck_assert_int_eq(snapshot_builder_add_sdk_key(b, "abc", "e1"), -1);
    ck_assert_int_eq(snapshot_builder_add_sdk_key(b, DIGEST_A, "nope"), -1);
    struct snapshot_flag_input in = {
        "nope", "f", "f", "boolean", true, "off", "{\"variant\": \"on\"}", bool_variants, 2};
    ck_assert_int_eq(snapshot_builder_add_flag(b, &in), -1);
    ck_assert_ptr_nonnull(strstr(snapshot_builder_error(b), "unknown environment"));
    ck_assert_int_eq(snapshot_builder_add_rule(b, "e1", "f", "r", "[]", "{\"variant\":\"on\"}"),
                     -1);
    in.env_id = "e1";
    ck_assert_int_eq(snapshot_builder_add_flag(b, &in), 0);
    ck_assert_int_eq(snapshot_builder_add_flag(b, &in), -1);
    ck_assert_int_eq(snapshot_builder_add_segment(b, "o1", "late", "[]"), -1);
    ck_assert_int_eq(snapshot_builder_add_entity_attribute(b, "o1", "user", "a", "number"), -1);
    ck_assert_int_eq(snapshot_builder_add_segment(b, "o2", "other-org", "[]"), 0);
    ck_assert_int_eq(snapshot_builder_add_segment(b, "o2", "other-org", "[]"), -1);
    ck_assert_uint_eq(snapshot_builder_flag_count(b), 1);
    /* after refusals the builder still writes what it accepted */
    const char *path = temp_snapshot_path();
    char err[256];
    ck_assert_int_eq(snapshot_builder_write(b, path, err, sizeof err), 0);
    snapshot_builder_free(b);
    struct snapshot s;
    open_ok(path, &s);
    ck_assert_ptr_nonnull(flag_in(&s, "o1", "production", "f"));
    snapshot_close(&s);
    unlink(path);
}
END_TEST

START_TEST(write_replaces_atomically)
{
    const char *path = temp_snapshot_path();
    write_sample(path);
    struct snapshot old;
    open_ok(path, &old);
    struct snapshot_builder *b = snapshot_builder_new(43);
    snapshot_builder_add_environment(b, "e9", "o9", "production");
    char err[256];
    ck_assert_int_eq(snapshot_builder_write(b, path, err, sizeof err), 0);
    snapshot_builder_free(b);
    char tmp[80];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    ck_assert_int_ne(access(tmp, F_OK), 0);
    struct snapshot fresh;
    open_ok(path, &fresh);
    ck_assert_uint_eq(snapshot_generation(&fresh), 43);
    ck_assert_uint_eq(snapshot_generation(&old), 42); /* the old mapping still works */
    ck_assert_ptr_nonnull(flag_in(&old, "o1", "production", "mid"));
    snapshot_close(&fresh);
    snapshot_close(&old);
    b = snapshot_builder_new(44);
    ck_assert_int_eq(snapshot_builder_write(b, "/nonexistent-dir/x", err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent-dir/x.tmp"));
    snapshot_builder_free(b);
    unlink(path);
}
END_TEST

/* Identical records are stored once; caches keyed by text stay correct
 * across organizations, environments and unusable values. */
START_TEST(shared_records_and_caches)
{
    struct snapshot_builder *b = snapshot_builder_new(5);
    snapshot_builder_add_environment(b, "e1", "o1", "production");
    snapshot_builder_add_environment(b, "e2", "o1", "preview");
    snapshot_builder_add_environment(b, "e3", "o2", "production");
    ck_assert_int_eq(snapshot_builder_add_entity_attribute(b, "o1", "user", "age", "number"), 0);
    const char *rule = "[{\"attribute\": \"user.age\", \"operator\": \"eq\", \"values\": [\"5\"]},"
                       " {\"attribute\": \"$currentTime\", \"operator\": \"after\","
                       " \"values\": [\"2024-01-01T00:00:00Z\"]}]";
    static const struct snapshot_variant_input spaced[] = {
        {"on", "{\"a b\": \"c \\\" d\", \"e\": [1, 2]}"}, {"off", "{'a': 1}"}};
    const char *envs[] = {"e1", "e2", "e3"};
    for (int e = 0; e < 3; e++) {
        add_bool_flag(b, envs[e], "x", true);
        add_bool_flag(b, envs[e], "y", false);
        ck_assert_int_eq(
            snapshot_builder_add_rule(b, envs[e], "x", "r", rule, "{\"variant\": \"on\"}"), 0);
        struct snapshot_flag_input j = {
            envs[e], "j", "j", "json", true, "off", "{\"variant\": \"on\"}", spaced, 2};
        ck_assert_int_eq(snapshot_builder_add_flag(b, &j), 0);
    }
    const char *path = temp_snapshot_path();
    char err[256];
    ck_assert_int_eq(snapshot_builder_write(b, path, err, sizeof err), 0);
    snapshot_builder_free(b);
    struct snapshot s;
    open_ok(path, &s);
    const struct snapshot_flag *x1 = flag_in(&s, "o1", "production", "x");
    const struct snapshot_flag *y1 = flag_in(&s, "o1", "production", "y");
    const struct snapshot_flag *x3 = flag_in(&s, "o2", "production", "x");
    ck_assert_uint_eq(x1->variant_first, y1->variant_first);
    ck_assert_uint_eq(x1->default_serve, y1->default_serve);
    ck_assert_uint_eq(x1->off_serve, x3->off_serve);
    /* the same rule text compiles per organization: o1 knows user.age */
    const struct snapshot_cond *c1 = &s.conds[s.rules[x1->rule_first].cond_first];
    const struct snapshot_cond *c3 = &s.conds[s.rules[x3->rule_first].cond_first];
    ck_assert_uint_eq(c1->data_type, SNAPSHOT_DATA_NUMBER);
    ck_assert_uint_eq(s.values[c1->value_first].type, SNAPSHOT_VALUE_NUMBER);
    ck_assert_uint_eq(c3->data_type, SNAPSHOT_DATA_ANY);
    ck_assert_uint_eq(s.values[c3->value_first].type, SNAPSHOT_VALUE_STRING);
    /* every environment gets the rule's clock boundary, cached or not */
    for (int e = 0; e < 3; e++) {
        const struct snapshot_env *env = &s.envs[e];
        ck_assert_uint_eq(env->time_count, 1);
        ck_assert_int_eq(s.times[env->time_first], INT64_C(1704067200000000));
    }
    /* values are stored compact; non-strict JSON is unusable */
    const struct snapshot_flag *j = flag_in(&s, "o1", "production", "j");
    const struct snapshot_variant *v = &s.variants[j->variant_first];
    ck_assert_str_eq(snapshot_string(&s, v[0].value_json), "{\"a b\":\"c \\\" d\",\"e\":[1,2]}");
    ck_assert_uint_eq(v[1].value_json.len, 0);
    ck_assert_uint_eq(s.serves[j->default_serve].kind, SNAPSHOT_SERVE_VARIANT);
    ck_assert_uint_eq(s.serves[j->off_serve].kind, SNAPSHOT_SERVE_INVALID);
    ck_assert_uint_eq(s.serves[j->off_serve].error, SNAPSHOT_SERVE_BAD_VALUE);
    snapshot_close(&s);
    unlink(path);
}
END_TEST

/* Variant values are checked against RFC 8259 (json-c alone accepts NaN,
 * single quotes and raw control characters) and stored compact. */
START_TEST(variant_values_strict_json)
{
    static const struct {
        const char *type, *text, *stored; /* stored NULL: refused */
    } cases[] = {
        {"string", "\"a\\u00e9\\n\"", "\"a\\u00e9\\n\""},
        {"string", " \"é x\" ", "\"é x\""},
        {"json", "{ \"k\" : [ 1 , -2.5e+3 , true , null ] }", "{\"k\":[1,-2.5e+3,true,null]}"},
        {"json", "[ ]", "[]"},
        {"json", "{}", "{}"},
        {"number", "0", "0"},
        {"number", "-0.5", "-0.5"},
        {"boolean", "false", "false"},
        {"number", "NaN", NULL},
        {"json", "{'a': 1}", NULL},
        {"string", "\"a\tb\"", NULL},
        {"string", "\"\\x\"", NULL},
        {"string", "\"\\ud8\"", NULL},
        {"string", "\"\xff\"", NULL},
        {"string", "\"abc", NULL},
        {"json", "[1,]", NULL},
        {"json", "[1] x", NULL},
        {"json", "{\"a\" 1}", NULL},
        {"number", "01", NULL},
        {"number", "1.", NULL},
        {"number", ".5", NULL},
        {"number", "1e", NULL},
        {"string", "", NULL},
        {"json", "null", NULL},
        {"boolean", "\"true\"", NULL}, /* valid JSON, wrong type */
    };
    size_t n = sizeof cases / sizeof cases[0];
    char deep[300];
    memset(deep, '[', 100);
    memset(deep + 100, ']', 100);
    deep[200] = '\0';
    struct snapshot_builder *b = snapshot_builder_new(1);
    snapshot_builder_add_environment(b, "e1", "o1", "production");
    char key[32];
    for (size_t i = 0; i <= n; i++) {
        struct snapshot_variant_input v = {"v", i < n ? cases[i].text : deep};
        snprintf(key, sizeof key, "f%zu", i);
        struct snapshot_flag_input in = {
            "e1", key, key, i < n ? cases[i].type : "json", true, "v", "{\"variant\": \"v\"}",
            &v,   1};
        ck_assert_int_eq(snapshot_builder_add_flag(b, &in), 0);
    }
    const char *path = temp_snapshot_path();
    char err[256];
    ck_assert_int_eq(snapshot_builder_write(b, path, err, sizeof err), 0);
    snapshot_builder_free(b);
    struct snapshot s;
    open_ok(path, &s);
    for (size_t i = 0; i <= n; i++) {
        snprintf(key, sizeof key, "f%zu", i);
        const struct snapshot_flag *f = flag_in(&s, "o1", "production", key);
        const struct snapshot_variant *v = &s.variants[f->variant_first];
        const char *want = i < n ? cases[i].stored : NULL;
        if (want == NULL)
            ck_assert_msg(v->value_json.len == 0, "case %zu stored %s", i,
                          snapshot_string(&s, v->value_json));
        else
            ck_assert_str_eq(snapshot_string(&s, v->value_json), want);
    }
    snapshot_close(&s);
    unlink(path);
}
END_TEST

/* ---- corruption ---- */

static unsigned char *read_all(const char *path, size_t *len)
{
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    unsigned char *buf = malloc((size_t)st.st_size);
    FILE *f = fopen(path, "rb");
    ck_assert_uint_eq(fread(buf, 1, (size_t)st.st_size, f), (size_t)st.st_size);
    fclose(f);
    *len = (size_t)st.st_size;
    return buf;
}

static void write_all_bytes(const char *path, const unsigned char *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
    fclose(f);
}

/* Writes buf to path and expects snapshot_open to refuse it with a message
 * containing `why`, leaving the struct zeroed. */
static void expect_refused(const char *path, const unsigned char *buf, size_t len, const char *why)
{
    write_all_bytes(path, buf, len);
    struct snapshot s;
    memset(&s, 0xa5, sizeof s);
    char err[256] = "";
    ck_assert_int_eq(snapshot_open(path, &s, err, sizeof err), -1);
    ck_assert_msg(strstr(err, why) != NULL, "error \"%s\" lacks \"%s\"", err, why);
    ck_assert_ptr_null(s.base);
    ck_assert_ptr_null(s.regexes);
    snapshot_close(&s);
}

static void reseal(unsigned char *buf, size_t len)
{
    struct snapshot_header h;
    memcpy(&h, buf, sizeof h);
    h.checksum = snapshot_checksum(buf + sizeof h, len - sizeof h);
    memcpy(buf, &h, sizeof h);
}

START_TEST(corrupt_files_refused)
{
    const char *path = temp_snapshot_path();
    write_sample(path);
    size_t len;
    unsigned char *good = read_all(path, &len);
    unsigned char *buf = malloc(len);
    struct snapshot_header h;
    memcpy(&h, good, sizeof h);

    memcpy(buf, good, len);
    buf[0] ^= 0xff;
    expect_refused(path, buf, len, "magic");

    memcpy(buf, good, len);
    ((struct snapshot_header *)buf)->version = SNAPSHOT_FORMAT_VERSION + 1;
    expect_refused(path, buf, len, "version");

    expect_refused(path, good, len - 8, "truncated");
    expect_refused(path, good, 10, "truncated");
    expect_refused(path, good, 0, "truncated");

    memcpy(buf, good, len);
    buf[len - 1 - 100] ^= 0x01;
    expect_refused(path, buf, len, "checksum");

    memcpy(buf, good, len);
    ((struct snapshot_header *)buf)->sections[SNAPSHOT_SEC_FLAGS].offset = len + 64;
    expect_refused(path, buf, len, "out of bounds");

    memcpy(buf, good, len);
    ((struct snapshot_header *)buf)->sections[SNAPSHOT_SEC_RULES].count = 1u << 30;
    expect_refused(path, buf, len, "out of bounds");

    memcpy(buf, good, len);
    ((struct snapshot_header *)buf)->sections[SNAPSHOT_SEC_ENVS].offset += 4;
    expect_refused(path, buf, len, "out of bounds");

    /* an index inside a record, with a valid checksum */
    memcpy(buf, good, len);
    struct snapshot_flag *flags =
        (struct snapshot_flag *)(buf + h.sections[SNAPSHOT_SEC_FLAGS].offset);
    flags[0].off_serve = 100000;
    reseal(buf, len);
    expect_refused(path, buf, len, "bad flags");

    memcpy(buf, good, len);
    flags = (struct snapshot_flag *)(buf + h.sections[SNAPSHOT_SEC_FLAGS].offset);
    flags[1].key = flags[0].key; /* no longer sorted */
    reseal(buf, len);
    expect_refused(path, buf, len, "bad environments");

    /* a key outside the string table, in an environment of several flags
     * (found by fuzz_snapshot: the sort check read it before flags_ok) */
    memcpy(buf, good, len);
    flags = (struct snapshot_flag *)(buf + h.sections[SNAPSHOT_SEC_FLAGS].offset);
    flags[1].key.off = 0x7fffff00;
    reseal(buf, len);
    expect_refused(path, buf, len, "bad flags");

    /* a serve naming a variant beyond its flag's list */
    memcpy(buf, good, len);
    struct snapshot_serve *serves =
        (struct snapshot_serve *)(buf + h.sections[SNAPSHOT_SEC_SERVES].offset);
    for (uint64_t i = 0; i < h.sections[SNAPSHOT_SEC_SERVES].count; i++)
        if (serves[i].kind == SNAPSHOT_SERVE_VARIANT)
            serves[i].variant = 7;
    reseal(buf, len);
    expect_refused(path, buf, len, "bad flag serves");

    memcpy(buf, good, len);
    struct snapshot_str *paths =
        (struct snapshot_str *)(buf + h.sections[SNAPSHOT_SEC_PATHS].offset);
    paths[0].len = 1u << 31;
    reseal(buf, len);
    expect_refused(path, buf, len, "bad paths");

    unlink(path);
    struct snapshot s;
    char err[256];
    ck_assert_int_eq(snapshot_open(path, &s, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "open"));
    write_all_bytes(path, good, len); /* and the untouched bytes still open */
    open_ok(path, &s);
    snapshot_close(&s);
    snapshot_close(&s); /* twice is harmless */
    unlink(path);
    free(buf);
    free(good);
}
END_TEST

START_TEST(checksum_sensitivity)
{
    unsigned char data[300];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (unsigned char)(i * 7);
    for (size_t len = 0; len < sizeof data; len += 37) {
        uint64_t base = snapshot_checksum(data, len);
        for (size_t i = 0; i < len; i++) {
            data[i] ^= 0x10;
            ck_assert_uint_ne(snapshot_checksum(data, len), base);
            data[i] ^= 0x10;
        }
        ck_assert_uint_eq(snapshot_checksum(data, len), base);
    }
}
END_TEST

/* ---- the validator and the rule compiler read one rule language ---- */

static const char *const candidate_values[] = {NULL,
                                               "[]",
                                               "[\"x\"]",
                                               "[\"x\", \"y\"]",
                                               "[1]",
                                               "[1.5]",
                                               "[true]",
                                               "[null]",
                                               "[{}]",
                                               "[1, 2]",
                                               "\"x\"",
                                               "[\"1.2.3\"]",
                                               "[\"01.2.3\"]",
                                               "[\"V1.2\"]",
                                               "[\"1.2.3-01\"]",
                                               "[\"1.x\"]",
                                               "[\"18446744073709551616.0.0\"]",
                                               "[\"2024-06-01\"]",
                                               "[\"2024-06-01T14:00:00+02\"]",
                                               "[\"2024-06-01T14:00:00+2\"]",
                                               "[\"2024-06-01T12:00:00.5Z\"]",
                                               "[\"2023-02-29\"]",
                                               "[\"^a+$\"]",
                                               "[\"[a-\"]",
                                               "[\"1.2.3\\u0000\"]"};

/* Whether the validator accepts conditions (JSON text). */
static bool validator_accepts(const char *conditions)
{
    char body[512];
    snprintf(body, sizeof body, "{\"conditions\": %s}", conditions);
    struct json_object *obj = json_tokener_parse(body);
    ck_assert_ptr_nonnull(obj);
    struct validate v;
    validate_init(&v);
    validate_conditions(&v, obj, "conditions", false, NULL, NULL);
    bool ok = validate_ok(&v);
    validate_free(&v);
    json_object_put(obj);
    return ok;
}

/* For every operator of the table and every candidate values member: what
 * the management API accepts, the snapshot compiles (a rule that is not
 * broken). The compiler may accept more (rows stored before a rule of the
 * validator existed); it must never refuse what the validator let in. */
START_TEST(validator_accepts_only_what_compiles)
{
    enum { CASES = SNAPSHOT_OP_COUNT * (sizeof candidate_values / sizeof *candidate_values) };
    static char conds[CASES][256];
    static bool accepted[CASES];
    struct snapshot_builder *b = snapshot_builder_new(1);
    ck_assert_int_eq(snapshot_builder_add_environment(b, "e1", "o1", "production"), 0);
    int n = 0, accepted_count = 0;
    for (int op = 0; op < SNAPSHOT_OP_COUNT; op++) {
        for (size_t i = 0; i < sizeof candidate_values / sizeof *candidate_values; i++, n++) {
            const char *values = candidate_values[i];
            snprintf(conds[n], sizeof conds[n],
                     "[{\"attribute\": \"a\", \"operator\": \"%s\"%s%s}]",
                     cond_op_name((enum snapshot_op)op), values ? ", \"values\": " : "",
                     values ? values : "");
            accepted[n] = validator_accepts(conds[n]);
            accepted_count += accepted[n];
            char key[32];
            snprintf(key, sizeof key, "f%d", n);
            add_bool_flag(b, "e1", key, true);
            ck_assert_int_eq(
                snapshot_builder_add_rule(b, "e1", key, "r", conds[n], "{\"variant\": \"on\"}"), 0);
        }
    }
    const char *path = temp_snapshot_path();
    char err[256];
    ck_assert_msg(snapshot_builder_write(b, path, err, sizeof err) == 0, "%s", err);
    snapshot_builder_free(b);
    struct snapshot s;
    open_ok(path, &s);
    for (int i = 0; i < n; i++) {
        char key[32];
        snprintf(key, sizeof key, "f%d", i);
        const struct snapshot_flag *f = flag_in(&s, "o1", "production", key);
        ck_assert_ptr_nonnull(f);
        ck_assert_uint_eq(f->rule_count, 1);
        bool compiled = !s.rules[f->rule_first].broken;
        ck_assert_msg(!accepted[i] || compiled, "accepted but broken: %s", conds[i]);
    }
    snapshot_close(&s);
    unlink(path);
    /* Both outcomes occur, so the loop proves something either way. */
    ck_assert_int_gt(accepted_count, SNAPSHOT_OP_COUNT);
    ck_assert_int_lt(accepted_count, n);
}
END_TEST

Suite *suite_snapshot(void)
{
    Suite *s = suite_create("snapshot");
    TCase *tc = tcase_create("snapshot");
    tcase_add_test(tc, round_trip_lookups);
    tcase_add_test(tc, round_trip_records);
    tcase_add_test(tc, builder_refusals);
    tcase_add_test(tc, write_replaces_atomically);
    tcase_add_test(tc, shared_records_and_caches);
    tcase_add_test(tc, variant_values_strict_json);
    tcase_add_test(tc, corrupt_files_refused);
    tcase_add_test(tc, checksum_sensitivity);
    tcase_add_test(tc, validator_accepts_only_what_compiles);
    suite_add_tcase(s, tc);
    return s;
}
