/*
 * auditchain.c - canonical text and link hash of audit events (see
 * auditchain.h). The text is built in one heap buffer sized first, then
 * hashed with token.c's SHA-256.
 */
#include "base/auditchain.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/token.h"

#define CANONICAL_VERSION "ensign-audit-v1,"

const char auditchain_genesis[AUDITCHAIN_HASH_HEX_LEN + 1] =
    "0000000000000000000000000000000000000000000000000000000000000000";

/* The fields of e in canonical order. */
static void fields_of(const struct auditchain_event *e, const char *fields[11])
{
    const char *list[11] = {e->org_id,         e->seq,        e->id,     e->created_at, e->actor_id,
                            e->actor_token_id, e->actor_name, e->action, e->summary,    e->ip,
                            e->location};
    memcpy(fields, list, sizeof list);
}

/* Appends one field to out at *len (out has room: see canonical_size). */
static void append_field(char *out, size_t *len, const char *value)
{
    if (value == NULL) {
        memcpy(out + *len, "~,", 2);
        *len += 2;
        return;
    }
    size_t n = strlen(value);
    *len += (size_t)sprintf(out + *len, "%zu:", n);
    memcpy(out + *len, value, n);
    *len += n;
    out[(*len)++] = ',';
}

/* Bytes of prev_hash + canonical text, with room for each length prefix. */
static size_t canonical_size(const char *prev_hash, const char *const fields[11])
{
    size_t size = strlen(prev_hash) + sizeof CANONICAL_VERSION;
    for (int i = 0; i < 11; i++)
        size += (fields[i] ? strlen(fields[i]) : 0) + 24;
    return size;
}

int auditchain_link(const char *prev_hash, const struct auditchain_event *e,
                    char out[AUDITCHAIN_HASH_HEX_LEN + 1])
{
    const char *fields[11];
    fields_of(e, fields);
    char *text = malloc(canonical_size(prev_hash, fields));
    if (text == NULL) {
        out[0] = '\0';
        return -1;
    }
    size_t len = strlen(prev_hash);
    memcpy(text, prev_hash, len);
    memcpy(text + len, CANONICAL_VERSION, strlen(CANONICAL_VERSION));
    len += strlen(CANONICAL_VERSION);
    for (int i = 0; i < 11; i++)
        append_field(text, &len, fields[i]);
    token_digest_hex(text, len, out);
    free(text);
    return 0;
}
