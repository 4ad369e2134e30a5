/*
 * eval.h - the evaluator: (snapshot, flag, context, clock) -> variant.
 *
 * Owns the meaning of conditions, segments, rules, serves and rollouts
 * (doc/choices.md "Conditions" and "Environment configuration and
 * evaluation"), the validation of an evaluation
 * context (INVALID_CONTEXT) and the bulk ETag fast form.
 *
 * Invariants: eval_flag is a pure function of its arguments: no I/O, no
 * globals, no allocation (PCRE2 match data lives in the caller-owned
 * scratch). Results point into the snapshot mapping and stay valid while
 * that snapshot is open. The clock comes from the caller (`now_us`);
 * `$currentTime` is that clock, never the client's.
 *
 * Called by: the OFREP handlers (src/ofrep.c) and the unit tests.
 */
#ifndef ENSIGN_EVAL_H
#define ENSIGN_EVAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eval/snapshot.h"

struct json_flat; /* json_flat.h: the context as flat JSON */

/* The evaluation context of one request, prepared once by
 * eval_context_init and then shared by every flag of the request. */
struct eval_context {
    const struct json_flat *attributes; /* the context object, or NULL for {} */
    const char *targeting_key;          /* NULL when missing or "" */
    size_t targeting_key_len;
    int64_t now_us;     /* server clock, us since the epoch */
    char now_iso[32];   /* $currentTime as "YYYY-MM-DDTHH:MM:SSZ", */
    size_t now_iso_len; /* written by the first condition that needs it (0: not yet) */
    /* Whole-name attribute lookups already made for this context (eval.c):
     * rules of many flags name the same few attributes, and snapshot
     * strings are interned, so the name's offset identifies it. Filled
     * during evaluation, emptied by eval_context_init. */
    struct eval_attr_memo {
        const struct snapshot *s; /* whose string offsets these are */
        unsigned count;
        struct {
            uint32_t off, len;
            const struct json_flat *value; /* NULL: no such attribute */
        } entries[8];
    } memo;
};

enum eval_context_status {
    EVAL_CONTEXT_OK,
    EVAL_CONTEXT_NOT_OBJECT,           /* INVALID_CONTEXT */
    EVAL_CONTEXT_TARGETING_KEY_INVALID /* INVALID_CONTEXT: present, not a string */
};

/* Prepares ctx from the request's `context` member (NULL when the body has
 * none or it is JSON null). The value is borrowed: keep its nodes (and what
 * they point into) alive while ctx is used. Returns EVAL_CONTEXT_OK, or an error status with
 * *detail set to a message for errorDetails. */
enum eval_context_status eval_context_init(struct eval_context *ctx,
                                           const struct json_flat *context, int64_t now_us,
                                           const char **detail);

/* Per-worker scratch space (PCRE2 match data and limits). */
struct eval_scratch;
struct eval_scratch *eval_scratch_new(void);
void eval_scratch_free(struct eval_scratch *scratch);

enum eval_status {
    EVAL_OK,
    EVAL_ERROR_GENERAL,              /* the flag's configuration cannot resolve */
    EVAL_ERROR_TARGETING_KEY_MISSING /* a rollout found no bucket value */
};

enum eval_reason {
    EVAL_REASON_STATIC,
    EVAL_REASON_DEFAULT,
    EVAL_REASON_TARGETING_MATCH,
    EVAL_REASON_SPLIT,
    EVAL_REASON_DISABLED,
    EVAL_REASON_ERROR /* status is not EVAL_OK */
};

struct eval_result {
    enum eval_status status;
    enum eval_reason reason;
    enum snapshot_flag_type type;
    uint32_t variant_index;  /* absolute index into s->variants (EVAL_OK) */
    const char *variant_key; /* NUL-terminated, in the mapping */
    size_t variant_key_len;
    const char *value_json; /* pre-serialized value, copy as-is */
    size_t value_json_len;
    const char *rule_id; /* the matching rule's id, or NULL */
    size_t rule_id_len;
    const char *error_detail; /* static text when status is not EVAL_OK */
};

/* Asks the processor to bring what eval_flag and the answer will read of
 * flag (its key, its first rule, its default serve) into the
 * cache, without waiting and without touching anything else: the bulk
 * answer calls it a few flags ahead of the one it evaluates, so that an
 * environment larger than the cache costs per flag what a small one does. */
void eval_prefetch_flag(const struct snapshot *s, const struct snapshot_flag *flag);

/* Evaluates flag (from snapshot_flag_by_key/snapshot_env_flags of s) for
 * ctx. Never fails otherwise: every outcome is in *out. */
void eval_flag(const struct snapshot *s, const struct snapshot_flag *flag,
               const struct eval_context *ctx, struct eval_scratch *scratch,
               struct eval_result *out);

/* "STATIC", "DEFAULT", "TARGETING_MATCH", "SPLIT", "DISABLED", "ERROR". */
const char *eval_reason_name(enum eval_reason reason);

/* "GENERAL", "TARGETING_KEY_MISSING" (NULL for EVAL_OK). */
const char *eval_error_code(enum eval_status status);

/* The bulk ETag fast form: a strong validator (quoted, NUL-terminated)
 * derived from the snapshot generation, the environment, the canonical
 * form of the context (keys sorted recursively) and which interval between
 * the environment's `$currentTime` time boundaries now_us falls in. Same
 * inputs give the same tag on every worker and node. context may be NULL
 * ({}). */
#define EVAL_ETAG_SIZE 64
void eval_bulk_etag(const struct snapshot *s, const struct snapshot_env *env,
                    const struct json_flat *context, int64_t now_us, char out[EVAL_ETAG_SIZE]);

/* The same tag for an environment whose flags are in chunks (snapshot.h
 * "Chunks"): generation the organization's, env_id (env_id_len bytes) the
 * environment's, and chunk(ctx, i, &env) chunk i with the environment's
 * record in it, NULL past the last. With one chunk, eval_bulk_etag's. */
typedef const struct snapshot *(*eval_chunk_fn)(void *ctx, size_t i,
                                                const struct snapshot_env **env);
void eval_bulk_etag_chunks(uint64_t generation, const char *env_id, size_t env_id_len,
                           eval_chunk_fn chunk, void *ctx, const struct json_flat *context,
                           int64_t now_us, char out[EVAL_ETAG_SIZE]);

/* Coercion helpers shared with the snapshot writer, so that condition
 * values and context values are coerced to an entity dataType alike. */
#define EVAL_NUMBER_TEXT_SIZE 32

/* A number as text: integers (and integral doubles within int64) in
 * decimal, other doubles in the shortest form that reads back exactly. */
size_t eval_number_text(double number, bool is_integer, int64_t integer,
                        char out[EVAL_NUMBER_TEXT_SIZE]);

/* A JSON-number-shaped text as a finite number; false otherwise. text[len]
 * must be a byte that cannot continue a number (NUL, or the closing quote
 * of a string read in place). *is_integer when it has no fraction or
 * exponent and fits int64 (then *integer is exact). */
bool eval_text_to_number(const char *text, size_t len, double *number, bool *is_integer,
                         int64_t *integer);

/* "true" or "false" exactly; false otherwise. */
bool eval_text_to_boolean(const char *text, size_t len, bool *out);

#endif
