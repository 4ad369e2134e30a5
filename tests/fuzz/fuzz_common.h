/*
 * fuzz_common.h - what the libFuzzer targets of tests/fuzz share.
 *
 * Owns the libFuzzer entry point prototypes (the build uses
 * -Wmissing-prototypes), a scratch directory for targets whose code under
 * test reads or writes files, and in-memory files (memfd) for code that
 * takes a path.
 *
 * Invariants: nothing here outlives the process: the scratch directory is
 * removed at exit, memory files are closed by the caller. Each target is
 * one process running inputs one after another, so the helpers keep no
 * per-input state.
 *
 * Called by the fuzz targets (tests/fuzz/fuzz_*.c), built by `make fuzz`
 * (configure CC=clang --enable-fuzzing) and run by contrib/fuzz.
 */
#ifndef ENSIGN_FUZZ_COMMON_H
#define ENSIGN_FUZZ_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A NUL-terminated copy of the input (caller frees); aborts when out of
 * memory. */
char *fuzz_text(const uint8_t *data, size_t size);

/* A private directory for this process (in /dev/shm when it exists, so
 * files cost no disk I/O), created on first use and removed at exit. */
const char *fuzz_dir(void);

/* An in-memory file holding the input: returns its descriptor (the caller
 * closes it) and writes a path that opens it into path. Aborts on error. */
#define FUZZ_PATH_MAX 64
int fuzz_memfile(const uint8_t *data, size_t size, char path[FUZZ_PATH_MAX]);

struct json_object;

/* The input as one JSON value (at most 64 levels deep, nothing but
 * whitespace after it), or NULL; the caller puts it. */
struct json_object *fuzz_json(const uint8_t *data, size_t size);

/*
 * The input as a request body is read on every surface (http.c and
 * ofrep.c): json_guard_scan first, then json-c with UTF-8 validation, then
 * json_guard_members_kept; NULL when any of them refuses. What it accepts
 * is checked against the guard's promises (fuzz_check_guarded) and aborts
 * when one is broken.
 */
struct json_object *fuzz_json_guarded(const uint8_t *data, size_t size);

/* Aborts unless every string (member names too) in the flat value is
 * valid UTF-8 without NUL and every number is finite: what json_guard.h
 * promises of an accepted body. */
struct json_flat;
void fuzz_check_guarded(const struct json_flat *root);

/* Builds spec (the evaluator's case-file format, eval_spec.h) into path;
 * rows the builder refuses are skipped. Returns 0, or -1 when the file
 * could not be written. */
int fuzz_build_snapshot(struct json_object *spec, uint64_t generation, const char *path);

struct snapshot;
struct eval_context;
struct eval_scratch;

/*
 * Evaluates every flag of every environment of s for ctx, and the bulk
 * ETag of each environment, aborting when a result breaks eval.h's
 * contract: a successful result names a variant of its flag, with a value
 * and a reason other than ERROR; a failed one has an error code. With
 * trusted (a file the builder wrote) the value must also be JSON text and
 * the variant key free of NUL.
 */
void fuzz_evaluate_all(const struct snapshot *s, const struct eval_context *ctx,
                       struct eval_scratch *scratch, bool trusted);

#endif
