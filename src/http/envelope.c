/*
 * envelope.c - the three error bodies and the HTTP reason phrases.
 *
 * Owns the exact field sets of each envelope (doc/api.md "Surfaces and
 * error bodies") and the order of their keys.
 * Pure functions: each returns a new json-c object the caller owns; an
 * errors object passed in is owned by the result. A NULL message, detail or
 * code falls back to the reason phrase (or GENERAL), so a body is always
 * complete. Every string put into a body is valid UTF-8: bytes that are
 * not (a percent-decoded key such as %FF%FE) become U+FFFD, so a body is
 * always JSON text. Called by http.c (answers) and openapi.c (reason
 * phrases).
 */
#include "http/envelope.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "http/json_guard.h"

static const struct {
    int status;
    const char *phrase;
} reason_phrases[] = {
    {100, "Continue"},
    {101, "Switching Protocols"},
    {200, "OK"},
    {201, "Created"},
    {202, "Accepted"},
    {203, "Non-Authoritative Information"},
    {204, "No Content"},
    {205, "Reset Content"},
    {206, "Partial Content"},
    {300, "Multiple Choices"},
    {301, "Moved Permanently"},
    {302, "Found"},
    {303, "See Other"},
    {304, "Not Modified"},
    {305, "Use Proxy"},
    {307, "Temporary Redirect"},
    {308, "Permanent Redirect"},
    {400, "Bad Request"},
    {401, "Unauthorized"},
    {402, "Payment Required"},
    {403, "Forbidden"},
    {404, "Not Found"},
    {405, "Method Not Allowed"},
    {406, "Not Acceptable"},
    {407, "Proxy Authentication Required"},
    {408, "Request Timeout"},
    {409, "Conflict"},
    {410, "Gone"},
    {411, "Length Required"},
    {412, "Precondition Failed"},
    {413, "Content Too Large"},
    {414, "URI Too Long"},
    {415, "Unsupported Media Type"},
    {416, "Range Not Satisfiable"},
    {417, "Expectation Failed"},
    {421, "Misdirected Request"},
    {422, "Unprocessable Content"},
    {426, "Upgrade Required"},
    {428, "Precondition Required"},
    {429, "Too Many Requests"},
    {431, "Request Header Fields Too Large"},
    {451, "Unavailable For Legal Reasons"},
    {500, "Internal Server Error"},
    {501, "Not Implemented"},
    {502, "Bad Gateway"},
    {503, "Service Unavailable"},
    {504, "Gateway Timeout"},
    {505, "HTTP Version Not Supported"},
    {511, "Network Authentication Required"},
};

const char *envelope_reason_phrase(int status)
{
    for (size_t i = 0; i < sizeof reason_phrases / sizeof reason_phrases[0]; i++)
        if (reason_phrases[i].status == status)
            return reason_phrases[i].phrase;
    return "Error";
}

/* True when text is word exactly or word followed by '/'. */
static int is_first_segment(const char *text, const char *word)
{
    while (*word != '\0' && *text == *word) {
        text++;
        word++;
    }
    return *word == '\0' && (*text == '\0' || *text == '/');
}

enum http_surface envelope_surface_for_path(const char *path)
{
    if (path == NULL || path[0] != '/')
        return SURFACE_ROOT;
    while (*path == '/')
        path++;
    if (is_first_segment(path, "v1"))
        return SURFACE_V1;
    if (is_first_segment(path, "ofrep"))
        return SURFACE_OFREP;
    return SURFACE_ROOT;
}

/* value with each byte that does not start a valid UTF-8 sequence
 * replaced by U+FFFD; a new string the caller frees, or NULL. */
static char *utf8_repaired(const char *value)
{
    size_t len = strlen(value);
    char *out = malloc(len * 3 + 1);
    if (out == NULL)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        size_t step = 1;
        while (step <= 4 && i + step <= len && !json_guard_utf8_valid(value + i, step))
            step++;
        if (step <= 4 && i + step <= len) {
            memcpy(out + n, value + i, step);
            n += step;
            i += step;
        } else {
            memcpy(out + n, "\xEF\xBF\xBD", 3);
            n += 3;
            i++;
        }
    }
    out[n] = '\0';
    return out;
}

static void add_string(struct json_object *obj, const char *key, const char *value)
{
    if (json_guard_utf8_valid(value, strlen(value))) {
        json_object_object_add(obj, key, json_object_new_string(value));
        return;
    }
    char *repaired = utf8_repaired(value);
    json_object_object_add(obj, key, json_object_new_string(repaired != NULL ? repaired : "?"));
    free(repaired);
}

struct json_object *envelope_v1(int status, const char *message, struct json_object *errors)
{
    struct json_object *body = json_object_new_object();
    add_string(body, "message", message != NULL ? message : envelope_reason_phrase(status));
    json_object_object_add(body, "status", json_object_new_int(status));
    if (errors != NULL)
        json_object_object_add(body, "errors", errors);
    return body;
}

struct json_object *envelope_ofrep(int status, const char *key, const char *error_code,
                                   const char *details)
{
    struct json_object *body = json_object_new_object();
    const char *text = details != NULL ? details : envelope_reason_phrase(status);
    if (key != NULL)
        add_string(body, "key", key);
    add_string(body, "errorCode", error_code != NULL ? error_code : "GENERAL");
    add_string(body, "errorDetails", text);
    add_string(body, "message", text);
    json_object_object_add(body, "status", json_object_new_int(status));
    return body;
}

struct json_object *envelope_problem(int status, const char *detail, const char *instance,
                                     struct json_object *errors)
{
    struct json_object *body = json_object_new_object();
    const char *title = envelope_reason_phrase(status);
    add_string(body, "type", "about:blank");
    add_string(body, "title", title);
    json_object_object_add(body, "status", json_object_new_int(status));
    add_string(body, "detail", detail != NULL ? detail : title);
    if (instance != NULL)
        add_string(body, "instance", instance);
    if (errors != NULL)
        json_object_object_add(body, "errors", errors);
    return body;
}
