/*
 * agent_catalog.c - the organization as the agent sees it (see
 * agent_catalog.h). Pure: no database, no I/O.
 */
#include "agent/agent_catalog.h"

#include <stdlib.h>
#include <string.h>

int agent_catalog_parse(struct agent_catalog *c, const char *text)
{
    memset(c, 0, sizeof *c);
    c->root = json_tokener_parse(text);
    if (c->root == NULL || !json_object_object_get_ex(c->root, "flags", &c->flags) ||
        !json_object_object_get_ex(c->root, "environments", &c->environments) ||
        !json_object_object_get_ex(c->root, "segments", &c->segments) ||
        !json_object_is_type(c->flags, json_type_array) ||
        !json_object_is_type(c->environments, json_type_array) ||
        !json_object_is_type(c->segments, json_type_array)) {
        agent_catalog_free(c);
        return -1;
    }
    return 0;
}

void agent_catalog_free(struct agent_catalog *c)
{
    json_object_put(c->root);
    memset(c, 0, sizeof *c);
}

static const char *string_member(const struct json_object *obj, const char *name)
{
    struct json_object *value;
    if (!json_object_object_get_ex(obj, name, &value) ||
        !json_object_is_type(value, json_type_string))
        return "";
    return json_object_get_string(value);
}

const char *agent_flag_key(const struct json_object *flag)
{
    return string_member(flag, "key");
}

const char *agent_flag_type(const struct json_object *flag)
{
    return string_member(flag, "type");
}

bool agent_flag_archived(const struct json_object *flag)
{
    struct json_object *value;
    return json_object_object_get_ex(flag, "archived", &value) && json_object_get_boolean(value);
}

struct json_object *agent_flag_variants(const struct json_object *flag)
{
    struct json_object *value;
    if (!json_object_object_get_ex(flag, "variants", &value) ||
        !json_object_is_type(value, json_type_array))
        return NULL;
    return value;
}

bool agent_array_has(const struct json_object *array, const char *s)
{
    if (array == NULL || !json_object_is_type(array, json_type_array))
        return false;
    size_t n = json_object_array_length(array);
    for (size_t i = 0; i < n; i++) {
        const char *item = json_object_get_string(json_object_array_get_idx(array, i));
        if (item != NULL && strcmp(item, s) == 0)
            return true;
    }
    return false;
}

bool agent_flag_has_variant(const struct json_object *flag, const char *key)
{
    return agent_array_has(agent_flag_variants(flag), key);
}

struct json_object *agent_catalog_flag(const struct agent_catalog *c, const char *key)
{
    size_t n = json_object_array_length(c->flags);
    for (size_t i = 0; i < n; i++) {
        struct json_object *flag = json_object_array_get_idx(c->flags, i);
        if (strcmp(agent_flag_key(flag), key) == 0)
            return flag;
    }
    return NULL;
}

bool agent_catalog_has_env(const struct agent_catalog *c, const char *key)
{
    return agent_array_has(c->environments, key);
}

bool agent_catalog_has_segment(const struct agent_catalog *c, const char *key)
{
    return agent_array_has(c->segments, key);
}

int agent_edit_distance(const char *a, const char *b, int cap)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return cap + 1;
    if ((int)(la > lb ? la - lb : lb - la) > cap)
        return cap + 1;
    int row[65];
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diagonal = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int above = row[j];
            int best = diagonal + (a[i - 1] != b[j - 1]);
            if (above + 1 < best)
                best = above + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diagonal = above;
        }
    }
    return row[lb] > cap ? cap + 1 : row[lb];
}

static bool prefix_related(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t shorter = la < lb ? la : lb;
    return shorter >= 3 && strncmp(a, b, shorter) == 0;
}

const char *agent_closest(const struct json_object *candidates, const char *name)
{
    if (candidates == NULL || !json_object_is_type(candidates, json_type_array))
        return NULL;
    int cap = strlen(name) < 5 ? 1 : 2;
    const char *best = NULL;
    int best_distance = cap + 1;
    size_t n = json_object_array_length(candidates);
    for (size_t i = 0; i < n; i++) {
        struct json_object *item = json_object_array_get_idx(candidates, i);
        const char *key = json_object_is_type(item, json_type_string) ? json_object_get_string(item)
                                                                      : string_member(item, "key");
        int distance = agent_edit_distance(name, key, cap);
        if (distance > cap && prefix_related(name, key))
            distance = cap;
        if (distance < best_distance) {
            best = key;
            best_distance = distance;
        }
    }
    return best;
}
