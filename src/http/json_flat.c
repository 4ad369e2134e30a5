/*
 * json_flat.c - the flat JSON value (see json_flat.h): its room, its
 * builder, its conversion from json-c and member lookup.
 *
 * Room grows by doubling and is kept between values up to
 * JSON_FLAT_KEEP_NODES nodes; beyond that a reset gives it back. The
 * name order of a large object is sorted by a bottom-up merge sort over
 * offsets, with the second half of the reserved room as its buffer.
 */
#include "http/json_flat.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#define JSON_FLAT_FIRST_NODES 64
#define JSON_FLAT_KEEP_NODES 4096

static bool grow(void **items, size_t *cap, size_t need, size_t size, size_t first)
{
    if (need <= *cap)
        return true;
    size_t cap2 = *cap > 0 ? *cap : first;
    while (cap2 < need) {
        if (cap2 > SIZE_MAX / 2 / size)
            return false;
        cap2 *= 2;
    }
    void *grown = realloc(*items, cap2 * size);
    if (grown == NULL)
        return false;
    *items = grown;
    *cap = cap2;
    return true;
}

void json_flat_doc_reset(struct json_flat_doc *doc)
{
    if (doc->cap > JSON_FLAT_KEEP_NODES || doc->order_cap > JSON_FLAT_KEEP_NODES)
        json_flat_doc_free(doc);
    doc->used = 0;
    doc->order_used = 0;
    doc->failed = false;
}

void json_flat_doc_free(struct json_flat_doc *doc)
{
    free(doc->nodes);
    free(doc->order);
    *doc = (struct json_flat_doc){0};
}

size_t json_flat_add(struct json_flat_doc *doc, enum json_flat_type type, const char *key,
                     size_t key_len)
{
    if (doc->failed || doc->used >= UINT32_MAX || key_len > UINT32_MAX ||
        !grow((void **)&doc->nodes, &doc->cap, doc->used + 1, sizeof *doc->nodes,
              JSON_FLAT_FIRST_NODES)) {
        doc->failed = true;
        return SIZE_MAX;
    }
    doc->nodes[doc->used] = (struct json_flat){
        .key = key, .key_len = (uint32_t)key_len, .span = 1, .type = (uint8_t)type};
    return doc->used++;
}

void json_flat_close_array(struct json_flat_doc *doc, size_t at, uint32_t items)
{
    doc->nodes[at].len = items;
    doc->nodes[at].span = (uint32_t)(doc->used - at);
}

int json_flat_compare_names(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    if (c != 0)
        return c;
    return alen < blen ? -1 : (alen > blen);
}

static int compare_members(const struct json_flat *obj, uint32_t a, uint32_t b)
{
    return json_flat_compare_names(obj[a].key, obj[a].key_len, obj[b].key, obj[b].key_len);
}

static bool same_name(const struct json_flat *a, const struct json_flat *b)
{
    return a->key_len == b->key_len && memcmp(a->key, b->key, a->key_len) == 0;
}

/* A name twice among the n members of a small object. */
static bool small_has_twice(const struct json_flat *obj, uint32_t n)
{
    const struct json_flat *a = json_flat_first(obj);
    for (uint32_t i = 0; i < n; i++, a = json_flat_next(a)) {
        const struct json_flat *b = json_flat_next(a);
        for (uint32_t j = i + 1; j < n; j++, b = json_flat_next(b))
            if (same_name(a, b))
                return true;
    }
    return false;
}

/* Sorts the n offsets at o by member name (buf: room for n more). */
static void sort_offsets(const struct json_flat *obj, uint32_t *o, uint32_t *buf, uint32_t n)
{
    uint32_t *from = o, *to = buf;
    for (uint32_t width = 1; width < n; width *= 2) {
        for (uint32_t lo = 0; lo < n; lo += 2 * width) {
            uint32_t mid = lo + width < n ? lo + width : n;
            uint32_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            uint32_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                to[k++] = compare_members(obj, from[j], from[i]) < 0 ? from[j++] : from[i++];
            while (i < mid)
                to[k++] = from[i++];
            while (j < hi)
                to[k++] = from[j++];
        }
        uint32_t *t = from;
        from = to;
        to = t;
    }
    if (from != o)
        memcpy(o, from, n * sizeof *o);
}

/* Records the name order of a large object; false on a name twice. */
static bool order_members(struct json_flat_doc *doc, size_t at, uint32_t n)
{
    if (!grow((void **)&doc->order, &doc->order_cap, doc->order_used + 2 * (size_t)n,
              sizeof *doc->order, JSON_FLAT_FIRST_NODES)) {
        doc->failed = true;
        return false;
    }
    const struct json_flat *obj = &doc->nodes[at];
    uint32_t *o = doc->order + doc->order_used;
    const struct json_flat *m = json_flat_first(obj);
    for (uint32_t i = 0; i < n; i++, m = json_flat_next(m))
        o[i] = (uint32_t)(m - obj);
    sort_offsets(obj, o, o + n, n);
    for (uint32_t i = 1; i < n; i++)
        if (same_name(obj + o[i - 1], obj + o[i]))
            return false;
    doc->nodes[at].u.order_at = doc->order_used;
    doc->order_used += n;
    return true;
}

bool json_flat_close_object(struct json_flat_doc *doc, size_t at, uint32_t members)
{
    json_flat_close_array(doc, at, members);
    if (members <= JSON_FLAT_LINEAR_MAX)
        return !small_has_twice(&doc->nodes[at], members);
    return order_members(doc, at, members);
}

const struct json_flat *json_flat_doc_finish(struct json_flat_doc *doc)
{
    if (doc->failed || doc->used == 0)
        return NULL;
    if (doc->order_used > 0) {
        for (size_t i = 0; i < doc->used; i++) {
            struct json_flat *v = &doc->nodes[i];
            if (v->type == JSON_FLAT_OBJECT && v->len > JSON_FLAT_LINEAR_MAX)
                v->u.order = doc->order + v->u.order_at;
        }
    }
    return doc->nodes;
}

static bool add_json(struct json_flat_doc *doc, struct json_object *v, const char *key,
                     size_t key_len);

static bool add_json_container(struct json_flat_doc *doc, struct json_object *v, size_t at)
{
    uint32_t n = 0;
    if (json_object_is_type(v, json_type_array)) {
        size_t items = json_object_array_length(v);
        for (size_t i = 0; i < items; i++, n++)
            if (!add_json(doc, json_object_array_get_idx(v, i), NULL, 0))
                return false;
        json_flat_close_array(doc, at, n);
        return true;
    }
    json_object_object_foreach(v, name, member)
    {
        if (!add_json(doc, member, name, strlen(name)))
            return false;
        n++;
    }
    return json_flat_close_object(doc, at, n);
}

static bool add_json(struct json_flat_doc *doc, struct json_object *v, const char *key,
                     size_t key_len)
{
    static const enum json_flat_type types[] = {
        [json_type_null] = JSON_FLAT_NULL,     [json_type_boolean] = JSON_FLAT_BOOLEAN,
        [json_type_double] = JSON_FLAT_DOUBLE, [json_type_int] = JSON_FLAT_INT,
        [json_type_object] = JSON_FLAT_OBJECT, [json_type_array] = JSON_FLAT_ARRAY,
        [json_type_string] = JSON_FLAT_STRING,
    };
    enum json_type type = json_object_get_type(v);
    size_t at = json_flat_add(doc, types[type], key, key_len);
    if (at == SIZE_MAX)
        return false;
    struct json_flat *node = &doc->nodes[at];
    switch (type) {
    case json_type_boolean:
        node->boolean = json_object_get_boolean(v);
        return true;
    case json_type_int:
        node->u.integer = json_object_get_int64(v);
        return true;
    case json_type_double:
        node->u.number = json_object_get_double(v);
        return true;
    case json_type_string:
        node->u.text = json_object_get_string(v);
        node->len = (uint32_t)json_object_get_string_len(v);
        return true;
    case json_type_array:
    case json_type_object:
        return add_json_container(doc, v, at);
    default:
        return true;
    }
}

const struct json_flat *json_flat_from_json(struct json_flat_doc *doc, struct json_object *value)
{
    json_flat_doc_reset(doc);
    if (!add_json(doc, value, NULL, 0))
        doc->failed = true;
    return json_flat_doc_finish(doc);
}

const struct json_flat *json_flat_member(const struct json_flat *obj, const char *name, size_t len)
{
    if (obj->len > JSON_FLAT_LINEAR_MAX) {
        size_t lo = 0, hi = obj->len;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            const struct json_flat *m = obj + obj->u.order[mid];
            int c = json_flat_compare_names(name, len, m->key, m->key_len);
            if (c == 0)
                return m;
            if (c < 0)
                hi = mid;
            else
                lo = mid + 1;
        }
        return NULL;
    }
    const struct json_flat *m = json_flat_first(obj);
    for (uint32_t i = 0; i < obj->len; i++, m = json_flat_next(m))
        if (m->key_len == len && memcmp(m->key, name, len) == 0)
            return m;
    return NULL;
}
