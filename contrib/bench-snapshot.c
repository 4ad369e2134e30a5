/*
 * bench-snapshot.c - times the snapshot writer, reader and evaluator.
 *
 * Builds N flags (default 100000) in E environments (default 1) of one
 * organization, each with 3 rules (attribute conditions of several kinds,
 * segment references, a rollout), writes the file, opens it, and evaluates
 * every flag for a few contexts. Prints build, write, open and evaluation
 * times and the file size. Not a test: numbers depend on the machine.
 *
 * Build by hand from a configured build directory (after `make`):
 *   cc -std=c11 -O2 -D_GNU_SOURCE -I$SRC/src -I. \
 *      $SRC/contrib/bench-snapshot.c \
 *      src/libensign_core.a $(pkg-config --cflags --libs json-c libpcre2-8) \
 *      -o bench-snapshot
 *   ./bench-snapshot [flags] [environments] [path] [keep]
 * (a build configured with --enable-sanitizers also needs
 * -fsanitize=address,undefined on that line). Contexts are handed to the
 * evaluator in its flat form (json_flat_from_json), as ofrep.c does.
 */
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "eval/eval.h"
#include "http/json_flat.h"
#include "eval/snapshot.h"
#include "eval/snapshot_build.h"

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long minor_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

static int64_t wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void die(const char *what, const char *why)
{
    fprintf(stderr, "bench-snapshot: %s: %s\n", what, why);
    exit(1);
}

static void add_segments(struct snapshot_builder *b)
{
    char conditions[256];
    for (int i = 0; i < 100; i++) {
        char key[32];
        snprintf(key, sizeof key, "segment-%d", i);
        snprintf(conditions, sizeof conditions,
                 "[{\"attribute\": \"email\", \"operator\": \"ends_with\","
                 " \"values\": [\"@customer-%d.example\"]}]",
                 i);
        if (snapshot_builder_add_segment(b, "org", key, conditions) != 0)
            die("segment", snapshot_builder_error(b));
    }
}

/* The input rows of one flag, prepared before the clock starts so that
 * only the builder is timed. */
struct flag_row {
    char key[16];
    char values[3][48];
    char c1[256], c2[160], c3[192];
    char rule_ids[3][24];
};

static void prepare_row(struct flag_row *row, int i)
{
    snprintf(row->key, sizeof row->key, "flag-%06d", i);
    for (int v = 0; v < 3; v++) {
        snprintf(row->values[v], sizeof row->values[v], "\"value %d of flag %d\"", v, i);
        snprintf(row->rule_ids[v], sizeof row->rule_ids[v], "%s-r%d", row->key, v + 1);
    }
    snprintf(row->c1, sizeof row->c1,
             "[{\"attribute\": \"country\", \"operator\": \"in\", \"values\": [\"NL\", \"BE\","
             " \"C%d\"]}, {\"attribute\": \"user.plan\", \"operator\": \"eq\", \"values\":"
             " [\"pro\"], \"caseInsensitive\": true}]",
             i);
    snprintf(row->c2, sizeof row->c2,
             "[{\"segment\": \"segment-%d\"}, {\"attribute\": \"appVersion\","
             " \"operator\": \"semver_gte\", \"values\": [\"%d.%d.0\"]}]",
             i % 100, i % 7, i % 13);
    snprintf(row->c3, sizeof row->c3,
             "[{\"attribute\": \"age\", \"operator\": \"gte\", \"values\": [%d]},"
             " {\"attribute\": \"$currentTime\", \"operator\": \"before\","
             " \"values\": [\"2030-01-%02dT00:00:00Z\"]}]",
             18 + i % 50, 1 + i % 28);
}

static void add_flag(struct snapshot_builder *b, const char *env, const struct flag_row *row, int i)
{
    static const struct snapshot_variant_input bools[] = {{"on", "true"}, {"off", "false"}};
    static const char *const names[3] = {"red", "green", "blue"};
    struct snapshot_variant_input strings[3];
    for (int v = 0; v < 3; v++) {
        strings[v].key = names[v];
        strings[v].value_json = row->values[v];
    }
    bool is_string = i % 3 == 0;
    struct snapshot_flag_input in = {
        .env_id = env,
        .flag_id = row->key,
        .flag_key = row->key,
        .type = is_string ? "string" : "boolean",
        .enabled = i % 10 != 0,
        .off_variant_key = is_string ? "green" : "off",
        .default_serve_json = is_string ? "{\"rollout\": [{\"variant\": \"red\", \"weight\": 50},"
                                          " {\"variant\": \"blue\", \"weight\": 50}]}"
                                        : "{\"variant\": \"off\"}",
        .variants = is_string ? strings : bools,
        .variant_count = is_string ? 3 : 2,
    };
    if (snapshot_builder_add_flag(b, &in) != 0)
        die("flag", snapshot_builder_error(b));
}

static void add_rules(struct snapshot_builder *b, const char *env, const struct flag_row *row,
                      int i)
{
    bool is_string = i % 3 == 0;
    const char *serves[3] = {
        is_string ? "{\"variant\": \"red\"}" : "{\"variant\": \"on\"}",
        is_string ? "{\"variant\": \"blue\"}" : "{\"variant\": \"off\"}",
        is_string ? "{\"rollout\": [{\"variant\": \"red\", \"weight\": 1},"
                    " {\"variant\": \"green\", \"weight\": 3}], \"bucketBy\": \"user.id\"}"
                  : "{\"rollout\": [{\"variant\": \"on\", \"weight\": 1},"
                    " {\"variant\": \"off\", \"weight\": 3}]}"};
    const char *conditions[3] = {row->c1, row->c2, row->c3};
    for (int r = 0; r < 3; r++)
        if (snapshot_builder_add_rule(b, env, row->key, row->rule_ids[r], conditions[r],
                                      serves[r]) != 0)
            die("rule", snapshot_builder_error(b));
}

static struct snapshot_builder *build(const struct flag_row *rows, int flags, int envs)
{
    struct snapshot_builder *b = snapshot_builder_new(1);
    char env[16];
    for (int e = 0; e < envs; e++) {
        snprintf(env, sizeof env, "env-%d", e);
        snapshot_builder_add_environment(b, env, "org", env);
        snapshot_builder_add_sdk_key(
            b, "00000000000000000000000000000000000000000000000000000000000000aa", env);
    }
    add_segments(b);
    for (int e = 0; e < envs; e++) {
        snprintf(env, sizeof env, "env-%d", e);
        for (int i = 0; i < flags; i++) {
            add_flag(b, env, &rows[i], i);
            add_rules(b, env, &rows[i], i);
        }
    }
    return b;
}

static void bench_eval(const struct snapshot *s)
{
    static const char *const contexts[] = {
        "{\"targetingKey\": \"user-1\", \"country\": \"DE\", \"user\": {\"plan\": \"free\","
        " \"id\": \"u1\"}, \"email\": \"a@customer-3.example\", \"appVersion\": \"3.1.0\","
        " \"age\": 40}",
        "{\"targetingKey\": \"user-2\", \"country\": \"NL\", \"user\": {\"plan\": \"PRO\"}}",
        "{\"targetingKey\": \"user-3\", \"age\": 10}",
    };
    struct eval_scratch *scratch = eval_scratch_new();
    const struct snapshot_env *env = &s->envs[0];
    size_t n, evaluations = 0, ok = 0;
    const struct snapshot_flag *flags = snapshot_env_flags(s, env, &n);
    double start = now_seconds();
    for (size_t c = 0; c < 3; c++) {
        json_object *context = json_tokener_parse(contexts[c]);
        struct json_flat_doc flat = {0}; /* the form the evaluator reads (json_flat.h) */
        struct eval_context ctx;
        const char *detail;
        eval_context_init(&ctx, json_flat_from_json(&flat, context), wall_us(), &detail);
        for (size_t i = 0; i < n; i++) {
            struct eval_result r;
            eval_flag(s, &flags[i], &ctx, scratch, &r);
            ok += r.status == EVAL_OK;
            evaluations++;
        }
        json_flat_doc_free(&flat);
        json_object_put(context);
    }
    double elapsed = now_seconds() - start;
    printf("evaluate: %zu evaluations (%zu ok) in %.3f s, %.0f ns each\n", evaluations, ok, elapsed,
           elapsed * 1e9 / (double)evaluations);
    start = now_seconds();
    for (size_t i = 0; i < 100000; i++) {
        char key[32];
        int len = snprintf(key, sizeof key, "flag-%06zu", (i * 7919) % n);
        if (snapshot_flag_by_key(s, env, key, (size_t)len) == NULL)
            die("lookup", key);
    }
    printf("lookup: 100000 flag lookups in %.3f s\n", now_seconds() - start);
    eval_scratch_free(scratch);
}

int main(int argc, char **argv)
{
    int flags = argc > 1 ? atoi(argv[1]) : 100000;
    int envs = argc > 2 ? atoi(argv[2]) : 1;
    const char *path = argc > 3 ? argv[3] : "/tmp/bench-snapshot.snap";
    char err[256];
    struct flag_row *rows = calloc((size_t)flags, sizeof *rows);
    if (rows == NULL)
        die("rows", "out of memory");
    for (int i = 0; i < flags; i++)
        prepare_row(&rows[i], i);
    long f0 = minor_faults();
    double t0 = now_seconds(), c0 = cpu_seconds();
    struct snapshot_builder *b = build(rows, flags, envs);
    double t1 = now_seconds(), c1 = cpu_seconds();
    if (snapshot_builder_write(b, path, err, sizeof err) != 0)
        die("write", err);
    double t2 = now_seconds(), c2 = cpu_seconds();
    long f2 = minor_faults();
    snapshot_builder_free(b);
    free(rows);
    double t3 = now_seconds();
    struct snapshot s;
    if (snapshot_open(path, &s, err, sizeof err) != 0)
        die("open", err);
    double t4 = now_seconds();
    struct stat st;
    stat(path, &st);
    printf("flags: %d x %d environments, 3 rules each\n", flags, envs);
    printf("build (add_* calls, JSON parsing, compiling): %.3f s (cpu %.3f s)\n", t1 - t0, c1 - c0);
    printf("write (sort, layout, checksum, fsync, rename): %.3f s (cpu %.3f s)\n", t2 - t1,
           c2 - c1);
    printf("build + write: %.3f s (cpu %.3f s; free %.3f s; %ld page faults)\n", t2 - t0, c2 - c0,
           t3 - t2, f2 - f0);
    printf("file size: %.1f MB (%lld bytes)\n", (double)st.st_size / 1e6, (long long)st.st_size);
    printf("open (map, checksum, validate, compile patterns): %.3f s\n", t4 - t3);
    bench_eval(&s);
    snapshot_close(&s);
    if (argc <= 4 || strcmp(argv[4], "keep") != 0)
        unlink(path);
    return 0;
}
