/*
 * router.c - matching a method and path against the route table.
 *
 * Owns the matching rules: a path is split on '/', a run of leading
 * slashes counts as one, a trailing slash is a segment of its own (so
 * "/v1/healthz/" is not "/v1/healthz"). Literal segments compare exactly;
 * a {name} segment takes one non-empty segment, percent-decoded into the
 * caller's route_match buffer (a decoded NUL, or a value that does not fit,
 * makes the route not match). Matching is pure: no allocation, no globals.
 *
 * The route index (struct route_index) narrows the table by a path's first
 * segment: routes whose patterns begin with a different literal cannot
 * match, so only the rows of the path's bucket (its literal's rows and the
 * rows that begin with a parameter, in table order) are tried. The answer
 * is router_match's over the whole table, row for row (the first matching
 * row wins; allowed methods are those of every matching row), at the cost of
 * the bucket: the dashboard's rows, last of about 170, were walked through
 * every row before (two strcspn each), more than a file answer's headers.
 * Called by http.c for every request; routes.c owns the table.
 */
#include "http/router.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hex.h"

/* Method bits in the order the Allow header lists them, with their names. */
static const struct {
    unsigned bit;
    const char *name;
} method_names[] = {
    {METHOD_GET, "GET"},         {METHOD_HEAD, "HEAD"},   {METHOD_POST, "POST"},
    {METHOD_PUT, "PUT"},         {METHOD_PATCH, "PATCH"}, {METHOD_DELETE, "DELETE"},
    {METHOD_OPTIONS, "OPTIONS"}, {METHOD_QUERY, "QUERY"},
};

#define METHOD_COUNT (sizeof method_names / sizeof method_names[0])

/* The text after a run of leading slashes, or NULL when text is not absolute. */
static const char *skip_leading_slashes(const char *text)
{
    if (text == NULL || text[0] != '/')
        return NULL;
    while (*text == '/')
        text++;
    return text;
}

/*
 * Decodes in[0..len) into out (room bytes, NUL included). A '%' not
 * followed by two hex digits stays as it is. Returns the decoded length,
 * or -1 when it does not fit or decodes to a NUL byte.
 */
static long percent_decode(const char *in, size_t len, char *out, size_t room)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++, n++) {
        if (n + 1 >= room)
            return -1;
        char c = in[i];
        int hi = c == '%' && i + 2 < len ? hex_value(in[i + 1]) : -1;
        int lo = hi >= 0 ? hex_value(in[i + 2]) : -1;
        if (lo >= 0) {
            c = (char)(hi * 16 + lo);
            i += 2;
            if (c == '\0')
                return -1;
        }
        out[n] = c;
    }
    out[n] = '\0';
    return (long)n;
}

/* Records the decoded segment as the value of parameter name. */
static bool capture_param(const char *name, size_t name_len, const char *seg, size_t seg_len,
                          struct route_match *out, size_t *used)
{
    if (seg_len == 0 || out->nparams >= ROUTE_MAX_PARAMS || *used >= ROUTE_PARAM_BYTES)
        return false;
    char *value = out->buf + *used;
    long n = percent_decode(seg, seg_len, value, ROUTE_PARAM_BYTES - *used);
    if (n < 0)
        return false;
    struct route_param *param = &out->params[out->nparams++];
    param->name = name;
    param->name_len = name_len;
    param->value = value;
    *used += (size_t)n + 1;
    return true;
}

static bool match_segment(const char *pat, size_t pat_len, const char *seg, size_t seg_len,
                          struct route_match *out, size_t *used)
{
    if (pat_len >= 2 && pat[0] == '{' && pat[pat_len - 1] == '}')
        return capture_param(pat + 1, pat_len - 2, seg, seg_len, out, used);
    return pat_len == seg_len && memcmp(pat, seg, pat_len) == 0;
}

/* Matches pattern against path (already past its leading slashes). */
static bool match_pattern(const char *pattern, const char *path, struct route_match *out)
{
    const char *pat = skip_leading_slashes(pattern);
    size_t used = 0;
    out->nparams = 0;
    if (pat == NULL)
        return false;
    for (;;) {
        size_t pat_len = strcspn(pat, "/");
        size_t seg_len = strcspn(path, "/");
        if (!match_segment(pat, pat_len, path, seg_len, out, &used))
            return false;
        pat += pat_len;
        path += seg_len;
        if (*pat == '\0' || *path == '\0')
            return *pat == *path;
        pat++;
        path++;
    }
}

static bool method_accepts(unsigned route_method, unsigned method)
{
    if (method == METHOD_OTHER || method == 0)
        return false;
    return route_method == method || (method == METHOD_HEAD && route_method == METHOD_GET);
}

/* Tries the rows rows[order[k]] (or rows[k] when order is NULL), k < n, in
 * that order: the first that matches path and takes method wins. */
static enum route_result match_rows(const struct route *routes, const size_t *order, size_t n,
                                    unsigned method, const char *rest, struct route_match *out)
{
    unsigned allowed = 0;
    out->route = NULL;
    out->nparams = 0;
    out->allowed = 0;
    for (size_t k = 0; rest != NULL && k < n; k++) {
        const struct route *row = &routes[order != NULL ? order[k] : k];
        if (!match_pattern(row->pattern, rest, out))
            continue;
        if (method_accepts(row->method, method)) {
            out->route = row;
            return ROUTE_FOUND;
        }
        allowed |= row->method;
    }
    out->nparams = 0;
    if (allowed == 0)
        return ROUTE_NOT_FOUND;
    if (allowed & METHOD_GET)
        allowed |= METHOD_HEAD;
    out->allowed = allowed;
    return ROUTE_METHOD_NOT_ALLOWED;
}

enum route_result router_match(const struct route *routes, size_t count, unsigned method,
                               const char *path, struct route_match *out)
{
    return match_rows(routes, NULL, count, method, skip_leading_slashes(path), out);
}

/* ---- the index by first segment ---- */

/* The rows a first segment can match: those whose pattern begins with
 * literal (length len), and those that begin with a parameter. */
struct route_bucket {
    const char *literal; /* points into a pattern; not NUL-terminated */
    size_t len;
    size_t *order; /* row numbers, ascending */
    size_t n;
};

struct route_index {
    const struct route *routes;
    struct route_bucket *buckets; /* one per distinct first literal */
    size_t bucket_count;
    struct route_bucket others; /* the parameter rows alone: any other first segment */
};

/* The first segment of pattern (after its leading slashes) into *seg and
 * *len; false when the pattern is not absolute. */
static bool first_segment(const char *pattern, const char **seg, size_t *len)
{
    const char *rest = skip_leading_slashes(pattern);
    if (rest == NULL)
        return false;
    *seg = rest;
    *len = strcspn(rest, "/");
    return true;
}

static bool is_parameter(const char *seg, size_t len)
{
    return len >= 2 && seg[0] == '{' && seg[len - 1] == '}';
}

static struct route_bucket *find_bucket(const struct route_index *index, const char *seg,
                                        size_t len)
{
    for (size_t b = 0; b < index->bucket_count; b++) {
        struct route_bucket *bucket = &index->buckets[b];
        if (bucket->len == len && memcmp(bucket->literal, seg, len) == 0)
            return bucket;
    }
    return NULL;
}

/* Makes a bucket for every distinct first literal of the table. */
static bool make_buckets(struct route_index *index, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        const char *seg;
        size_t len;
        if (!first_segment(index->routes[i].pattern, &seg, &len) || is_parameter(seg, len) ||
            find_bucket(index, seg, len) != NULL)
            continue;
        struct route_bucket *bucket = &index->buckets[index->bucket_count++];
        bucket->literal = seg;
        bucket->len = len;
        bucket->order = calloc(count, sizeof *bucket->order);
        if (bucket->order == NULL)
            return false;
    }
    index->others.order = calloc(count ? count : 1, sizeof *index->others.order);
    return index->others.order != NULL;
}

/* Puts row i in its literal's bucket, or (a parameter row) in every one. */
static void place_row(struct route_index *index, size_t i)
{
    const char *seg;
    size_t len;
    if (!first_segment(index->routes[i].pattern, &seg, &len))
        return; /* not absolute: matches no path */
    if (!is_parameter(seg, len)) {
        struct route_bucket *bucket = find_bucket(index, seg, len);
        bucket->order[bucket->n++] = i;
        return;
    }
    for (size_t b = 0; b < index->bucket_count; b++)
        index->buckets[b].order[index->buckets[b].n++] = i;
    index->others.order[index->others.n++] = i;
}

struct route_index *route_index_new(const struct route *routes, size_t count)
{
    struct route_index *index = calloc(1, sizeof *index);
    if (index == NULL)
        return NULL;
    index->routes = routes;
    index->buckets = calloc(count ? count : 1, sizeof *index->buckets);
    if (index->buckets == NULL || !make_buckets(index, count)) {
        route_index_free(index);
        return NULL;
    }
    for (size_t i = 0; i < count; i++)
        place_row(index, i);
    return index;
}

enum route_result route_index_match(const struct route_index *index, unsigned method,
                                    const char *path, struct route_match *out)
{
    const char *rest = skip_leading_slashes(path);
    const struct route_bucket *bucket = &index->others;
    if (rest != NULL) {
        const struct route_bucket *found = find_bucket(index, rest, strcspn(rest, "/"));
        if (found != NULL)
            bucket = found;
    }
    return match_rows(index->routes, bucket->order, bucket->n, method, rest, out);
}

void route_index_free(struct route_index *index)
{
    if (index == NULL)
        return;
    for (size_t b = 0; b < index->bucket_count; b++)
        free(index->buckets[b].order);
    free(index->buckets);
    free(index->others.order);
    free(index);
}
const char *route_param(const struct route_match *m, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < m->nparams; i++) {
        const struct route_param *p = &m->params[i];
        if (p->name_len == len && memcmp(p->name, name, len) == 0)
            return p->value;
    }
    return NULL;
}

void router_allow_header(unsigned methods, char *out, size_t outlen)
{
    size_t used = 0;
    if (outlen == 0)
        return;
    out[0] = '\0';
    for (size_t i = 0; i < METHOD_COUNT; i++) {
        if (!(methods & method_names[i].bit))
            continue;
        const char *sep = used > 0 ? ", " : "";
        size_t need = strlen(sep) + strlen(method_names[i].name);
        if (used + need >= outlen)
            return; /* stop at a whole name: the text stays a valid list */
        snprintf(out + used, outlen - used, "%s%s", sep, method_names[i].name);
        used += need;
    }
}

const char *router_method_name(unsigned method)
{
    for (size_t i = 0; i < METHOD_COUNT; i++)
        if (method_names[i].bit == method)
            return method_names[i].name;
    return "OTHER";
}
