/*
 * fuzz_snapshot.c - libFuzzer target: the snapshot reader on a hostile file.
 *
 * The input is a snapshot file. So that the fuzzer gets past the checksum,
 * the target first rewrites the header's total_size and checksum to match
 * the input (corrupt checksums and sizes are the unit tests' job: see
 * tests/unit/test_snapshot.c). snapshot_open must then either refuse the
 * file or accept one that every lookup and every evaluation can use
 * without reading outside the mapping: the target looks up each SDK key,
 * environment and flag, and evaluates every flag for a few contexts
 * (fuzz_evaluate_all; values are not required to be JSON here).
 *
 * Seeds (tests/fuzz/snapshot/) are real snapshots, written by the
 * builder from fuzz_eval's seeds; a change of the file format makes them
 * stale: remake them with
 *   ENSIGN_FUZZ_KEEP_SNAPSHOT=tests/fuzz/snapshot/NAME \
 *       build/fuzz/tests/fuzz/fuzz_eval tests/fuzz/eval/NAME.json
 */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eval/eval.h"
#include "fuzz_common.h"
#include "base/hex.h"
#include "http/json_flat.h"
#include "eval/snapshot.h"

#define NOW_US INT64_C(1717243200000000) /* 2024-06-01T12:00:00Z */

static const char *const context_texts[] = {
    "{}",
    ("{\"targetingKey\":\"user-1\",\"country\":\"NO\",\"email\":\"a@x.io\",\"name\":\"aaab\","
     "\"version\":\"1.2.3\",\"signup\":\"2023-01-01\",\"score\":12.5,"
     "\"user\":{\"age\":30,\"beta\":true,\"plan\":\"pro\",\"id\":\"u-9\"},\"tags\":[\"x\",\"y\"]}"),
    ("{\"targetingKey\":\"\\u00e9\\u00e9\",\"user\":\"not-an-object\",\"version\":\"v9\","
     "\"score\":\"17\",\"country\":null}"),
};
#define CONTEXT_COUNT (sizeof context_texts / sizeof context_texts[0])

static struct json_object *contexts[CONTEXT_COUNT];
static struct eval_scratch *scratch;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    for (size_t i = 0; i < CONTEXT_COUNT; i++)
        if ((contexts[i] = json_tokener_parse(context_texts[i])) == NULL)
            abort();
    if ((scratch = eval_scratch_new()) == NULL)
        abort();
    return 0;
}

/* Every lookup finds what the file lists, and every flag evaluates. */
static void use_snapshot(const struct snapshot *s)
{
    for (uint32_t i = 0; i < s->counts[SNAPSHOT_SEC_SDK_KEYS]; i++) {
        char hex[2 * SNAPSHOT_DIGEST_LEN + 1];
        hex_encode(s->sdk_keys[i].digest, SNAPSHOT_DIGEST_LEN, hex);
        if (snapshot_env_by_sdk_digest(s, hex) != &s->envs[s->sdk_keys[i].env])
            abort();
    }
    for (uint32_t i = 0; i < s->counts[SNAPSHOT_SEC_ENVS]; i++)
        (void)snapshot_env_by_key(s, snapshot_string(s, s->envs[i].org),
                                  snapshot_string(s, s->envs[i].key));
    /* a header's chunks: each first key is found as its own chunk's */
    for (uint32_t i = 0; i < s->counts[SNAPSHOT_SEC_CHUNKS]; i++) {
        struct snapshot_str first = s->chunks[i].first_key;
        if (snapshot_chunk_find(s, snapshot_string(s, first), first.len) != i)
            abort();
    }
    for (size_t i = 0; i < CONTEXT_COUNT; i++) {
        static struct json_flat_doc doc; /* reused: emptied by each conversion */
        const struct json_flat *flat = json_flat_from_json(&doc, contexts[i]);
        struct eval_context ctx;
        const char *detail;
        if (flat == NULL || eval_context_init(&ctx, flat, NOW_US, &detail) != EVAL_CONTEXT_OK)
            abort();
        fuzz_evaluate_all(s, &ctx, scratch, false);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char *file = malloc(size > 0 ? size : 1);
    if (file == NULL)
        abort();
    memcpy(file, data, size);
    struct snapshot_header h;
    if (size >= sizeof h) {
        memcpy(&h, file, sizeof h);
        h.total_size = size;
        h.checksum = snapshot_checksum(file + sizeof h, size - sizeof h);
        memcpy(file, &h, sizeof h);
    }
    char path[FUZZ_PATH_MAX];
    int fd = fuzz_memfile(file, size, path);
    struct snapshot s;
    char err[256];
    if (snapshot_open(path, &s, err, sizeof err) == 0) {
        use_snapshot(&s);
        snapshot_close(&s);
    }
    close(fd);
    free(file);
    return 0;
}
