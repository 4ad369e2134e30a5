/*
 * audit_record.c - the actor parameter of audit-recording writes (see
 * audit_record.h). Pure formatting: no database access here.
 */
#include "mgmt/audit_record.h"

#include <json-c/json.h>
#include <stdio.h>

#include "http/http.h"

/* Adds name: value, or null when value is NULL or empty. */
static void add_text(struct json_object *o, const char *name, const char *value)
{
    json_object_object_add(o, name, value && value[0] ? json_object_new_string(value) : NULL);
}

static int write_json(char *out, struct json_object *o)
{
    const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
    return snprintf(out, AUDIT_ACTOR_JSON_MAX, "%s", text);
}

void audit_actor_init(char *out, const struct http_request *r, const char *org_id,
                      const struct identity *who, const char *actor_name)
{
    char ip[64] = "";
    if (r)
        http_client_address(r, ip, sizeof ip);
    struct json_object *o = json_object_new_object();
    add_text(o, "org_id", org_id);
    add_text(o, "user_id", who ? who->user_id : NULL);
    add_text(o, "token_id", who ? who->token_id : NULL);
    add_text(o, "ip", ip);
    add_text(o, "name", actor_name);
    if (write_json(out, o) >= AUDIT_ACTOR_JSON_MAX) {
        json_object_object_del(o, "name");
        write_json(out, o);
    }
    json_object_put(o);
}
