/*
 * json_flat.h - a read-only JSON value laid out flat in one array: the
 * form an evaluation context takes on the hot path.
 *
 * The nodes are in document order: a container's members (or items)
 * follow it, each followed by its own subtree, so the first child of a
 * container c is c + 1 and the sibling after a child v is v + v->span.
 * Strings and member names are not copied: they point into the text they
 * were parsed from (json_quick.c) or into the json-c tree they were
 * converted from (json_flat_from_json), which must outlive the nodes.
 * A json-c tree cost one malloc per value, a hash table per object and as
 * many frees (and the glibc fast-bin consolidation those frees caused);
 * nodes live in a json_flat_doc that the worker reuses from request to
 * request, so building a context allocates nothing once it has grown.
 *
 * Invariants, once json_flat_doc_finish succeeded:
 * - an object holds no member name twice (json_flat_close_object refuses);
 * - the byte after a string's last one (text[len]) is '"' or NUL, never
 *   one that could continue a number, so number parsers read in place;
 * - an object of more than JSON_FLAT_LINEAR_MAX members has `order`, its
 *   members' offsets from the object, sorted by name bytes (the order of
 *   strcmp, as member names hold no NUL): lookups bisect it.
 * Member lookups compare whole names by bytes, as json-c's did.
 *
 * Called by json_quick.c (the builder of plain bodies), eval/ofrep.c and
 * eval/eval.c (the reader), the agent and the tests (conversion).
 */
#ifndef ENSIGN_JSON_FLAT_H
#define ENSIGN_JSON_FLAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct json_object;

enum json_flat_type {
    JSON_FLAT_NULL,
    JSON_FLAT_BOOLEAN,
    JSON_FLAT_INT,
    JSON_FLAT_DOUBLE,
    JSON_FLAT_STRING,
    JSON_FLAT_ARRAY,
    JSON_FLAT_OBJECT
};

/* Objects up to this many members are searched member by member. */
#define JSON_FLAT_LINEAR_MAX 8

struct json_flat {
    const char *key; /* the member name in an object (key_len bytes), else NULL */
    union {
        const char *text;      /* STRING: len bytes */
        int64_t integer;       /* INT */
        double number;         /* DOUBLE */
        const uint32_t *order; /* OBJECT of more than JSON_FLAT_LINEAR_MAX members */
        size_t order_at;       /* the same while building: its index in the doc's order */
    } u;
    uint32_t key_len;
    uint32_t len;  /* STRING: bytes; ARRAY, OBJECT: items or members */
    uint32_t span; /* nodes this value takes: itself and its subtree */
    uint8_t type;  /* enum json_flat_type */
    bool boolean;  /* BOOLEAN */
};

/* The nodes of one value, and the room they are built in (owned). */
struct json_flat_doc {
    struct json_flat *nodes;
    size_t used, cap;
    uint32_t *order;
    size_t order_used, order_cap;
    bool failed; /* out of memory while building */
};

/* Empties doc for the next value (the nodes of the last one become
 * invalid). Keeps its room unless that grew past what a usual context
 * needs, so one huge body does not pin memory for the worker's life. */
void json_flat_doc_reset(struct json_flat_doc *doc);

/* Frees doc's room; doc is then empty and may be reused. */
void json_flat_doc_free(struct json_flat_doc *doc);

/* Building, in document order. json_flat_add appends a node (its key as
 * given, its span 1) and answers its index, or SIZE_MAX when out of
 * memory (doc->failed set). A container is added, then its children, then
 * closed, which sets its count and span. */
size_t json_flat_add(struct json_flat_doc *doc, enum json_flat_type type, const char *key,
                     size_t key_len);
void json_flat_close_array(struct json_flat_doc *doc, size_t at, uint32_t items);
/* False when a name occurs twice among the members (or out of memory). */
bool json_flat_close_object(struct json_flat_doc *doc, size_t at, uint32_t members);

/* Ends building: the root (the first node), or NULL when the doc is empty
 * or failed. Node pointers stay valid until the next reset. */
const struct json_flat *json_flat_doc_finish(struct json_flat_doc *doc);

/* The same value as a json-c tree (NULL is JSON null), into doc (reset
 * first): its root, or NULL when out of memory. Strings and names point
 * into the tree, which must stay alive and unchanged. */
const struct json_flat *json_flat_from_json(struct json_flat_doc *doc, struct json_object *value);

/* The member named name (len bytes) of obj, an object; NULL when none. */
const struct json_flat *json_flat_member(const struct json_flat *obj, const char *name, size_t len);

/* The first child of a container (only when len > 0) and the sibling
 * after a child. */
static inline const struct json_flat *json_flat_first(const struct json_flat *container)
{
    return container + 1;
}

static inline const struct json_flat *json_flat_next(const struct json_flat *child)
{
    return child + child->span;
}

/* Name order: bytes, then the shorter first (strcmp's order). */
int json_flat_compare_names(const char *a, size_t alen, const char *b, size_t blen);

#endif
