/*
 * snapshot.c - the snapshot reader: map, validate, look up (see snapshot.h).
 *
 * Invariant: after snapshot_open returns 0, every string reference, range
 * and index inside the file has been checked against the section it names,
 * segments do not reference segments, flags are sorted by key inside each
 * environment and SDK keys by digest; so lookups and the evaluator index the
 * mapping without further checks.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "eval/snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <pcre2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/hex.h"
#include "eval/cond_ops.h"
#include "eval/snapshot_packs.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the snapshot format is little-endian native structs"
#endif

_Static_assert(sizeof(struct snapshot_header) % 8 == 0, "header size");
_Static_assert(sizeof(struct snapshot_env) % 8 == 0, "env size");
_Static_assert(sizeof(struct snapshot_sdk_key) % 8 == 0, "sdk key size");
_Static_assert(sizeof(struct snapshot_flag) % 8 == 0, "flag size");
_Static_assert(sizeof(struct snapshot_serve) % 8 == 0, "serve size");
_Static_assert(sizeof(struct snapshot_cond) % 8 == 0, "cond size");
_Static_assert(sizeof(struct snapshot_value) % 8 == 0, "value size");
_Static_assert(sizeof(struct snapshot_segment) % 8 == 0, "segment size");
_Static_assert(sizeof(struct snapshot_part) % 8 == 0, "part size");
_Static_assert(sizeof(struct snapshot_chunk) % 8 == 0, "chunk size");

struct snapshot_regexes {
    uint32_t count;
    pcre2_code *codes[];
};

/* Record size of each section (1 for the byte-counted strings). */
static const size_t section_record_size[SNAPSHOT_SEC_COUNT] = {
    [SNAPSHOT_SEC_STRINGS] = 1,
    [SNAPSHOT_SEC_ENVS] = sizeof(struct snapshot_env),
    [SNAPSHOT_SEC_SDK_KEYS] = sizeof(struct snapshot_sdk_key),
    [SNAPSHOT_SEC_FLAGS] = sizeof(struct snapshot_flag),
    [SNAPSHOT_SEC_VARIANTS] = sizeof(struct snapshot_variant),
    [SNAPSHOT_SEC_RULES] = sizeof(struct snapshot_rule),
    [SNAPSHOT_SEC_SERVES] = sizeof(struct snapshot_serve),
    [SNAPSHOT_SEC_ITEMS] = sizeof(struct snapshot_item),
    [SNAPSHOT_SEC_CONDS] = sizeof(struct snapshot_cond),
    [SNAPSHOT_SEC_VALUES] = sizeof(struct snapshot_value),
    [SNAPSHOT_SEC_PATHS] = sizeof(struct snapshot_str),
    [SNAPSHOT_SEC_SEGMENTS] = sizeof(struct snapshot_segment),
    [SNAPSHOT_SEC_PATTERNS] = sizeof(struct snapshot_pattern),
    [SNAPSHOT_SEC_TIMES] = sizeof(int64_t),
    [SNAPSHOT_SEC_PARTS] = sizeof(struct snapshot_part),
    [SNAPSHOT_SEC_CHUNKS] = sizeof(struct snapshot_chunk),
};

/* ------------------------------------------------------------------ */
/* Checksum: four independent 64-bit multiply-rotate lanes over 32-byte
 * blocks, then the tail, then an avalanche. */

#define MIX_K1 UINT64_C(0x9e3779b185ebca87)
#define MIX_K2 UINT64_C(0xc2b2ae3d27d4eb4f)
#define MIX_K3 UINT64_C(0x165667b19e3779f9)

static uint64_t rotl64(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

static uint64_t lane_step(uint64_t acc, uint64_t word)
{
    acc += word * MIX_K2;
    acc = rotl64(acc, 31);
    return acc * MIX_K1;
}

static uint64_t read64(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof w);
    return w;
}

static uint64_t avalanche(uint64_t h)
{
    h ^= h >> 33;
    h *= MIX_K2;
    h ^= h >> 29;
    h *= MIX_K3;
    h ^= h >> 32;
    return h;
}

static void checksum_block(uint64_t lanes[4], const unsigned char *p)
{
    for (int l = 0; l < 4; l++)
        lanes[l] = lane_step(lanes[l], read64(p + 8 * (size_t)l));
}

void snapshot_checksum_init(struct snapshot_checksum_state *st)
{
    st->lanes[0] = MIX_K1;
    st->lanes[1] = MIX_K2;
    st->lanes[2] = MIX_K3;
    st->lanes[3] = MIX_K1 ^ MIX_K3;
    st->block_len = 0;
    st->total_len = 0;
}

void snapshot_checksum_update(struct snapshot_checksum_state *st, const void *data, size_t len)
{
    const unsigned char *p = data;
    if (len == 0)
        return;
    st->total_len += len;
    if (st->block_len > 0) {
        size_t take = len < 32 - st->block_len ? len : 32 - st->block_len;
        memcpy(st->block + st->block_len, p, take);
        st->block_len += take;
        p += take;
        len -= take;
        if (st->block_len < 32)
            return;
        checksum_block(st->lanes, st->block);
        st->block_len = 0;
    }
    for (; len >= 32; p += 32, len -= 32)
        checksum_block(st->lanes, p);
    memcpy(st->block, p, len);
    st->block_len = len;
}

uint64_t snapshot_checksum_final(const struct snapshot_checksum_state *st)
{
    uint64_t h = st->total_len * MIX_K3;
    for (int l = 0; l < 4; l++)
        h = (h ^ lane_step(0, st->lanes[l])) * MIX_K1 + MIX_K2;
    size_t i = 0;
    for (; i + 8 <= st->block_len; i += 8)
        h = rotl64(h ^ lane_step(0, read64(st->block + i)), 27) * MIX_K1 + MIX_K3;
    for (; i < st->block_len; i++)
        h = rotl64(h ^ (st->block[i] * MIX_K3), 11) * MIX_K1;
    return avalanche(h);
}

uint64_t snapshot_checksum(const void *data, size_t len)
{
    struct snapshot_checksum_state st;
    snapshot_checksum_init(&st);
    snapshot_checksum_update(&st, data, len);
    return snapshot_checksum_final(&st);
}

/* ------------------------------------------------------------------ */
/* Validation */

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err != NULL && errlen > 0)
        vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static bool str_ok(const struct snapshot *s, struct snapshot_str ref)
{
    uint64_t end = (uint64_t)ref.off + ref.len;
    return end < s->counts[SNAPSHOT_SEC_STRINGS] && s->strings[end] == '\0';
}

static bool range_ok(const struct snapshot *s, enum snapshot_section_id sec, uint32_t first,
                     uint32_t count)
{
    return (uint64_t)first + count <= s->counts[sec];
}

static bool index_ok(const struct snapshot *s, enum snapshot_section_id sec, uint32_t index)
{
    return index < s->counts[sec];
}

static int check_header(const struct snapshot_header *h, size_t size, char *err, size_t errlen)
{
    if (memcmp(h->magic, SNAPSHOT_MAGIC, SNAPSHOT_MAGIC_LEN) != 0)
        return fail(err, errlen, "not a snapshot (bad magic)");
    if (h->version != SNAPSHOT_FORMAT_VERSION)
        return fail(err, errlen, "snapshot format version %u, expected %u", h->version,
                    SNAPSHOT_FORMAT_VERSION);
    if (h->header_size != sizeof *h)
        return fail(err, errlen, "bad header size %u", h->header_size);
    if (h->total_size != size)
        return fail(err, errlen, "file is %zu bytes, header says %llu (truncated?)", size,
                    (unsigned long long)h->total_size);
    return 0;
}

static int map_sections(struct snapshot *s, char *err, size_t errlen)
{
    const struct snapshot_header *h = s->header;
    const void *at[SNAPSHOT_SEC_COUNT];
    for (int i = 0; i < SNAPSHOT_SEC_COUNT; i++) {
        const struct snapshot_section *sec = &h->sections[i];
        if (sec->offset % 8 != 0 || sec->offset < h->header_size || sec->offset > s->size ||
            sec->count > UINT32_MAX ||
            sec->count > (s->size - sec->offset) / section_record_size[i])
            return fail(err, errlen, "section %d out of bounds", i);
        s->counts[i] = (uint32_t)sec->count;
        at[i] = s->base + sec->offset;
    }
    s->strings = at[SNAPSHOT_SEC_STRINGS];
    s->envs = at[SNAPSHOT_SEC_ENVS];
    s->sdk_keys = at[SNAPSHOT_SEC_SDK_KEYS];
    s->flags = at[SNAPSHOT_SEC_FLAGS];
    s->variants = at[SNAPSHOT_SEC_VARIANTS];
    s->rules = at[SNAPSHOT_SEC_RULES];
    s->serves = at[SNAPSHOT_SEC_SERVES];
    s->items = at[SNAPSHOT_SEC_ITEMS];
    s->conds = at[SNAPSHOT_SEC_CONDS];
    s->values = at[SNAPSHOT_SEC_VALUES];
    s->paths = at[SNAPSHOT_SEC_PATHS];
    s->segments = at[SNAPSHOT_SEC_SEGMENTS];
    s->patterns = at[SNAPSHOT_SEC_PATTERNS];
    s->times = at[SNAPSHOT_SEC_TIMES];
    s->parts = at[SNAPSHOT_SEC_PARTS];
    s->chunks = at[SNAPSHOT_SEC_CHUNKS];
    return 0;
}

static int compare_str_bytes(const struct snapshot *s, struct snapshot_str a, const char *b,
                             size_t blen)
{
    size_t n = a.len < blen ? a.len : blen;
    int c = memcmp(snapshot_string(s, a), b, n);
    if (c != 0)
        return c;
    return a.len == blen ? 0 : (a.len < blen ? -1 : 1);
}

static bool env_flags_ok(const struct snapshot *s, uint32_t env_index)
{
    const struct snapshot_env *env = &s->envs[env_index];
    for (uint32_t i = 0; i < env->flag_count; i++) {
        const struct snapshot_flag *f = &s->flags[env->flag_first + i];
        if (f->env != env_index)
            return false;
        if (i > 0) {
            const struct snapshot_flag *prev = f - 1;
            if (compare_str_bytes(s, prev->key, snapshot_string(s, f->key), f->key.len) >= 0)
                return false;
        }
    }
    return true;
}

static bool envs_ok(const struct snapshot *s)
{
    for (uint32_t i = 0; i < s->counts[SNAPSHOT_SEC_ENVS]; i++) {
        const struct snapshot_env *e = &s->envs[i];
        if (!str_ok(s, e->id) || !str_ok(s, e->org) || !str_ok(s, e->key) ||
            !range_ok(s, SNAPSHOT_SEC_FLAGS, e->flag_first, e->flag_count) ||
            !range_ok(s, SNAPSHOT_SEC_TIMES, e->time_first, e->time_count) || !env_flags_ok(s, i) ||
            (e->part != SNAPSHOT_NONE && !index_ok(s, SNAPSHOT_SEC_PARTS, e->part)))
            return false;
    }
    return true;
}

static bool sdk_keys_ok(const struct snapshot *s)
{
    for (uint32_t i = 0; i < s->counts[SNAPSHOT_SEC_SDK_KEYS]; i++) {
        const struct snapshot_sdk_key *k = &s->sdk_keys[i];
        if (!index_ok(s, SNAPSHOT_SEC_ENVS, k->env))
            return false;
        if (i > 0 && memcmp(k[-1].digest, k->digest, SNAPSHOT_DIGEST_LEN) >= 0)
            return false;
    }
    return true;
}

/* A serve used by flag f: its variant indexes name variants of f. */
static bool serve_fits_flag(const struct snapshot *s, const struct snapshot_flag *f, uint32_t serve)
{
    const struct snapshot_serve *v = &s->serves[serve];
    if (v->kind == SNAPSHOT_SERVE_VARIANT)
        return v->variant < f->variant_count;
    for (uint32_t i = 0; v->kind == SNAPSHOT_SERVE_ROLLOUT && i < v->item_count; i++)
        if (s->items[v->item_first + i].variant >= f->variant_count)
            return false;
    return true;
}

static bool flag_serves_ok(const struct snapshot *s, const struct snapshot_flag *f)
{
    if (!serve_fits_flag(s, f, f->off_serve) || !serve_fits_flag(s, f, f->default_serve))
        return false;
    for (uint32_t r = 0; r < f->rule_count; r++)
        if (!serve_fits_flag(s, f, s->rules[f->rule_first + r].serve))
            return false;
    return true;
}

static bool flags_ok(const struct snapshot *s)
{
    for (uint32_t i = 0; i < s->counts[SNAPSHOT_SEC_FLAGS]; i++) {
        const struct snapshot_flag *f = &s->flags[i];
        if (!str_ok(s, f->key) || !str_ok(s, f->id) || !index_ok(s, SNAPSHOT_SEC_ENVS, f->env) ||
            !index_ok(s, SNAPSHOT_SEC_SERVES, f->off_serve) ||
            !index_ok(s, SNAPSHOT_SEC_SERVES, f->default_serve) ||
            !range_ok(s, SNAPSHOT_SEC_RULES, f->rule_first, f->rule_count) ||
            !range_ok(s, SNAPSHOT_SEC_VARIANTS, f->variant_first, f->variant_count))
            return false;
    }
    return true;
}

/* After rules and serves are known good: every flag's serves fit it. */
static bool flag_variants_ok(const struct snapshot *s)
{
    for (uint32_t i = 0; i < s->counts[SNAPSHOT_SEC_FLAGS]; i++)
        if (!flag_serves_ok(s, &s->flags[i]))
            return false;
    return true;
}

static bool variants_ok(const struct snapshot *s)
{
    for (uint32_t i = 0; i < s->counts[SNAPSHOT_SEC_VARIANTS]; i++)
        if (!str_ok(s, s->variants[i].key) || !str_ok(s, s->variants[i].value_json))
            return false;
    return true;
}

static bool rules_ok(const struct snapshot *s)
{
    for (uint32_t i = 0; i < s->counts[SNAPSHOT_SEC_RULES]; i++) {
        const struct snapshot_rule *r = &s->rules[i];
        if (!str_ok(s, r->id) || !range_ok(s, SNAPSHOT_SEC_CONDS, r->cond_first, r->cond_count) ||
            !index_ok(s, SNAPSHOT_SEC_SERVES, r->serve))
            return false;
    }
    return true;
}

static bool rollout_ok(const struct snapshot *s, const struct snapshot_serve *v)
{
    if (!range_ok(s, SNAPSHOT_SEC_ITEMS, v->item_first, v->item_count) ||
        !range_ok(s, SNAPSHOT_SEC_PATHS, v->bucket_path_first, v->bucket_path_count) ||
        !str_ok(s, v->bucket_by))
        return false;
    uint64_t total = 0;
    for (uint32_t i = 0; i < v->item_count; i++)
        total += s->items[v->item_first + i].weight;
    return total > 0 && total == v->total_weight && total <= UINT32_MAX;
}

static bool serves_ok(const struct snapshot *s)
{
    for (uint32_t i = 0; i < s->counts[SNAPSHOT_SEC_SERVES]; i++) {
        const struct snapshot_serve *v = &s->serves[i];
        /* variant indexes are checked per flag (flag_variants_ok) */
        bool ok = v->kind == SNAPSHOT_SERVE_INVALID || v->kind == SNAPSHOT_SERVE_VARIANT ||
                  (v->kind == SNAPSHOT_SERVE_ROLLOUT && rollout_ok(s, v));
        if (!ok)
            return false;
    }
    return true;
}

static bool cond_ok(const struct snapshot *s, const struct snapshot_cond *c)
{
    if (c->kind > SNAPSHOT_COND_BROKEN || c->op >= SNAPSHOT_OP_COUNT ||
        c->data_type > SNAPSHOT_DATA_BOOLEAN || !str_ok(s, c->attribute) ||
        !range_ok(s, SNAPSHOT_SEC_PATHS, c->path_first, c->path_count) ||
        !range_ok(s, SNAPSHOT_SEC_VALUES, c->value_first, c->value_count))
        return false;
    return c->kind != SNAPSHOT_COND_SEGMENT || index_ok(s, SNAPSHOT_SEC_SEGMENTS, c->segment);
}

static bool conds_ok(const struct snapshot *s)
{
    for (uint32_t i = 0; i < s->counts[SNAPSHOT_SEC_CONDS]; i++)
        if (!cond_ok(s, &s->conds[i]))
            return false;
    return true;
}

static bool values_ok(const struct snapshot *s)
{
    for (uint32_t i = 0; i < s->counts[SNAPSHOT_SEC_VALUES]; i++) {
        const struct snapshot_value *v = &s->values[i];
        if (v->type > SNAPSHOT_VALUE_BOOLEAN || !str_ok(s, v->text) ||
            (v->pattern != SNAPSHOT_NONE && !index_ok(s, SNAPSHOT_SEC_PATTERNS, v->pattern)))
            return false;
    }
    return true;
}

static bool paths_ok(const struct snapshot *s)
{
    for (uint32_t i = 0; i < s->counts[SNAPSHOT_SEC_PATHS]; i++)
        if (!str_ok(s, s->paths[i]))
            return false;
    return true;
}

/* Segments' conditions never name segments: evaluation cannot recurse. */
static bool segments_ok(const struct snapshot *s)
{
    for (uint32_t i = 0; i < s->counts[SNAPSHOT_SEC_SEGMENTS]; i++) {
        const struct snapshot_segment *g = &s->segments[i];
        if (!str_ok(s, g->org) || !str_ok(s, g->key) ||
            !range_ok(s, SNAPSHOT_SEC_CONDS, g->cond_first, g->cond_count))
            return false;
        for (uint32_t c = 0; c < g->cond_count; c++)
            if (s->conds[g->cond_first + c].kind == SNAPSHOT_COND_SEGMENT)
                return false;
    }
    return true;
}

static bool patterns_ok(const struct snapshot *s)
{
    for (uint32_t i = 0; i < s->counts[SNAPSHOT_SEC_PATTERNS]; i++)
        if (!str_ok(s, s->patterns[i].text))
            return false;
    return true;
}

/* A part's file is a plain name inside the index's directory. */
static bool part_file_ok(const struct snapshot *s, struct snapshot_str file)
{
    const char *name = snapshot_string(s, file);
    return file.len > 0 && name[0] != '.' && memchr(name, '/', file.len) == NULL;
}

static bool parts_ok(const struct snapshot *s)
{
    for (uint32_t i = 0; i < s->counts[SNAPSHOT_SEC_PARTS]; i++) {
        const struct snapshot_part *p = &s->parts[i];
        if (!str_ok(s, p->org) || !str_ok(s, p->file) || !part_file_ok(s, p->file) ||
            p->offset % 8 != 0 || p->length < sizeof(struct snapshot_header) ||
            p->offset + p->length < p->offset)
            return false;
    }
    return true;
}

/* Whether a chunk's extent can be one of a pack: a pack number, an 8-byte
 * aligned offset, room for a snapshot header, inside the largest pack
 * (whether it lies inside the file as it is now is pack_maps_open's). */
bool snapshot_chunk_extent_ok(const struct snapshot_chunk *c)
{
    return c->pack != 0 && c->offset % 8 == 0 && c->length >= sizeof(struct snapshot_header) &&
           c->offset <= SNAPSHOT_PACK_MAP_BYTES && c->length <= SNAPSHOT_PACK_MAP_BYTES - c->offset;
}

/* A header's chunks: extents of packs, first keys strictly increasing in
 * byte order from ""; a header holds no flags of its own. */
static bool chunks_ok(const struct snapshot *s)
{
    uint32_t n = s->counts[SNAPSHOT_SEC_CHUNKS];
    if (n > 0 && (s->counts[SNAPSHOT_SEC_FLAGS] > 0 || s->chunks[0].first_key.len != 0))
        return false;
    for (uint32_t i = 0; i < n; i++) {
        const struct snapshot_chunk *c = &s->chunks[i];
        if (!str_ok(s, c->first_key) || !snapshot_chunk_extent_ok(c))
            return false;
        if (i > 0 && compare_str_bytes(s, c[-1].first_key, snapshot_string(s, c->first_key),
                                       c->first_key.len) >= 0)
            return false;
    }
    return true;
}

static int check_records(const struct snapshot *s, char *err, size_t errlen)
{
    if (s->counts[SNAPSHOT_SEC_STRINGS] == 0 || s->strings[s->counts[SNAPSHOT_SEC_STRINGS] - 1])
        return fail(err, errlen, "string table not terminated");
    static const struct {
        bool (*check)(const struct snapshot *);
        const char *what;
    } checks[] = {
        /* flags before environments: envs_ok compares the flags' keys */
        {flags_ok, "flags"},       {envs_ok, "environments"}, {sdk_keys_ok, "SDK keys"},
        {variants_ok, "variants"}, {rules_ok, "rules"},       {serves_ok, "serves"},
        {conds_ok, "conditions"},  {values_ok, "values"},     {paths_ok, "paths"},
        {segments_ok, "segments"}, {patterns_ok, "patterns"}, {flag_variants_ok, "flag serves"},
        {parts_ok, "parts"},       {chunks_ok, "chunks"},
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
        if (!checks[i].check(s))
            return fail(err, errlen, "corrupt snapshot: bad %s", checks[i].what);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Patterns */

static pcre2_code *compile_pattern(const struct snapshot *s, const struct snapshot_pattern *p)
{
    int code;
    PCRE2_SIZE offset;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)snapshot_string(s, p->text), p->text.len,
                                   COND_PATTERN_OPTIONS(p->caseless), &code, &offset, NULL);
    if (re != NULL)
        (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* the interpreter otherwise */
    return re;
}

static int compile_patterns(struct snapshot *s, char *err, size_t errlen)
{
    uint32_t n = s->counts[SNAPSHOT_SEC_PATTERNS];
    s->regexes = calloc(1, sizeof *s->regexes + (size_t)n * sizeof(pcre2_code *));
    if (s->regexes == NULL)
        return fail(err, errlen, "out of memory");
    s->regexes->count = n;
    for (uint32_t i = 0; i < n; i++)
        s->regexes->codes[i] = compile_pattern(s, &s->patterns[i]);
    return 0;
}

const void *snapshot_regex(const struct snapshot *s, uint32_t pattern)
{
    if (s->regexes == NULL || pattern >= s->regexes->count)
        return NULL;
    return s->regexes->codes[pattern];
}

/* ------------------------------------------------------------------ */
/* Open and close */

static int map_file(const char *path, struct snapshot *s, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fail(err, errlen, "open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int saved = errno;
        close(fd);
        return fail(err, errlen, "stat %s: %s", path, strerror(saved));
    }
    if ((size_t)st.st_size < sizeof(struct snapshot_header)) {
        close(fd);
        return fail(err, errlen, "%s: too short for a snapshot (truncated?)", path);
    }
    void *base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int saved = errno;
    close(fd);
    if (base == MAP_FAILED)
        return fail(err, errlen, "mmap %s: %s", path, strerror(saved));
    s->base = base;
    s->size = (size_t)st.st_size;
    s->header = base;
    return 0;
}

static int validate(struct snapshot *s, char *err, size_t errlen)
{
    const struct snapshot_header *h = s->header;
    if (check_header(h, s->size, err, errlen) != 0)
        return -1;
    if (snapshot_checksum(s->base + h->header_size, s->size - h->header_size) != h->checksum)
        return fail(err, errlen, "checksum mismatch");
    if (map_sections(s, err, errlen) != 0)
        return -1;
    return check_records(s, err, errlen);
}

int snapshot_open(const char *path, struct snapshot *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (map_file(path, out, err, errlen) != 0)
        return -1;
    if (validate(out, err, errlen) != 0 || compile_patterns(out, err, errlen) != 0) {
        snapshot_close(out);
        return -1;
    }
    return 0;
}

int snapshot_open_extent(const unsigned char *base, size_t size, struct snapshot *out, char *err,
                         size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (((uintptr_t)base & 7) != 0 || size < sizeof(struct snapshot_header))
        return fail(err, errlen, "extent of %zu bytes is not a snapshot (misplaced or short)",
                    size);
    out->base = base;
    out->size = size;
    out->header = (const struct snapshot_header *)(const void *)base;
    out->borrowed = true;
    if (validate(out, err, errlen) != 0 || compile_patterns(out, err, errlen) != 0) {
        snapshot_close(out);
        return -1;
    }
    return 0;
}

int snapshot_check_extent(const unsigned char *base, size_t size, uint64_t *generation, char *err,
                          size_t errlen)
{
    struct snapshot s = {.base = base, .size = size, .borrowed = true};
    if (((uintptr_t)base & 7) != 0 || size < sizeof(struct snapshot_header))
        return fail(err, errlen, "extent of %zu bytes is not a snapshot (misplaced or short)",
                    size);
    s.header = (const struct snapshot_header *)(const void *)base;
    if (validate(&s, err, errlen) != 0)
        return -1;
    *generation = s.header->generation;
    return 0;
}

void snapshot_close(struct snapshot *s)
{
    if (s->regexes != NULL) {
        for (uint32_t i = 0; i < s->regexes->count; i++)
            pcre2_code_free(s->regexes->codes[i]);
        free(s->regexes);
    }
    if (s->base != NULL && !s->borrowed)
        munmap((void *)s->base, s->size);
    memset(s, 0, sizeof *s);
}

size_t snapshot_section_record_size(int section)
{
    return section_record_size[section];
}

uint64_t snapshot_generation(const struct snapshot *s)
{
    return s->header->generation;
}

/* ------------------------------------------------------------------ */
/* Lookups */

const struct snapshot_env *snapshot_env_by_sdk_digest(const struct snapshot *s,
                                                      const char *digest_hex)
{
    uint8_t digest[SNAPSHOT_DIGEST_LEN];
    if (!hex_decode(digest_hex, digest, SNAPSHOT_DIGEST_LEN))
        return NULL;
    size_t lo = 0, hi = s->counts[SNAPSHOT_SEC_SDK_KEYS];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = memcmp(s->sdk_keys[mid].digest, digest, SNAPSHOT_DIGEST_LEN);
        if (c == 0)
            return &s->envs[s->sdk_keys[mid].env];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const struct snapshot_env *snapshot_env_by_id(const struct snapshot *s, const char *env_id,
                                              size_t len)
{
    for (uint32_t i = 0; i < s->counts[SNAPSHOT_SEC_ENVS]; i++)
        if (compare_str_bytes(s, s->envs[i].id, env_id, len) == 0)
            return &s->envs[i];
    return NULL;
}

const struct snapshot_env *snapshot_env_by_key(const struct snapshot *s, const char *org_id,
                                               const char *env_key)
{
    for (uint32_t i = 0; i < s->counts[SNAPSHOT_SEC_ENVS]; i++) {
        const struct snapshot_env *e = &s->envs[i];
        if (strcmp(snapshot_string(s, e->org), org_id) == 0 &&
            strcmp(snapshot_string(s, e->key), env_key) == 0)
            return e;
    }
    return NULL;
}

const struct snapshot_flag *snapshot_flag_by_key(const struct snapshot *s,
                                                 const struct snapshot_env *env, const char *key,
                                                 size_t len)
{
    const struct snapshot_flag *flags = s->flags + env->flag_first;
    size_t lo = 0, hi = env->flag_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = compare_str_bytes(s, flags[mid].key, key, len);
        if (c == 0)
            return &flags[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const struct snapshot_flag *snapshot_env_flags(const struct snapshot *s,
                                               const struct snapshot_env *env, size_t *count)
{
    *count = env->flag_count;
    return s->flags + env->flag_first;
}

const char *snapshot_flag_type_name(uint32_t type)
{
    static const char *const names[] = {"boolean", "string", "number", "json"};
    return type < sizeof names / sizeof names[0] ? names[type] : "unknown";
}

uint32_t snapshot_chunk_find(const struct snapshot *s, const char *key, size_t len)
{
    uint32_t lo = 0, hi = s->counts[SNAPSHOT_SEC_CHUNKS]; /* the answer is in [lo, hi) */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (compare_str_bytes(s, s->chunks[mid].first_key, key, len) <= 0)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}
