/*
 * auditwalk.c - the link checks of an audit chain walk (see auditwalk.h).
 */
#include "db/auditwalk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { COL_SEQ = 1, COL_ID = 2, COL_PREV_HASH = 11, COL_HASH = 12, EVENT_FIELDS = 11 };

void auditwalk_init(struct auditwalk *w)
{
    memset(w, 0, sizeof *w);
    memcpy(w->hash, auditchain_genesis, sizeof w->hash);
}

static const char *value_or_null(const PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) ? NULL : PQgetvalue(res, row, col);
}

static struct auditchain_event event_of(const PGresult *res, int row)
{
    const char *v[EVENT_FIELDS];
    for (int col = 0; col < EVENT_FIELDS; col++)
        v[col] = value_or_null(res, row, col);
    return (struct auditchain_event){v[0], v[1], v[2], v[3], v[4], v[5],
                                     v[6], v[7], v[8], v[9], v[10]};
}

static bool broken(struct auditwalk *w, const char *id)
{
    w->broken = true;
    snprintf(w->broken_at, sizeof w->broken_at, "%s", id);
    return false;
}

/* Checks one event against the walk; false with the report filled when broken. */
static bool check_event(struct auditwalk *w, const PGresult *res, int row)
{
    long long seq = strtoll(PQgetvalue(res, row, COL_SEQ), NULL, 10);
    const char *id = PQgetvalue(res, row, COL_ID);
    const char *prev_hash = PQgetvalue(res, row, COL_PREV_HASH);
    if (seq != w->seq + 1) {
        snprintf(w->report, sizeof w->report,
                 "broken: event %lld is missing (the next event is %lld, id %s)", w->seq + 1, seq,
                 id);
        return broken(w, id);
    }
    if (strcmp(prev_hash, w->hash) != 0) {
        snprintf(w->report, sizeof w->report,
                 "broken: event %lld (id %s) does not link to event %lld: prev_hash %s, "
                 "expected %s",
                 seq, id, w->seq, prev_hash, w->hash);
        return broken(w, id);
    }
    struct auditchain_event e = event_of(res, row);
    char hash[AUDITCHAIN_HASH_HEX_LEN + 1];
    if (auditchain_link(w->hash, &e, hash) != 0) {
        snprintf(w->report, sizeof w->report, "broken: out of memory at event %lld", seq);
        return broken(w, id);
    }
    if (strcmp(hash, PQgetvalue(res, row, COL_HASH)) != 0) {
        snprintf(w->report, sizeof w->report,
                 "broken: event %lld (id %s, %s) was altered: stored hash %s, computed %s", seq, id,
                 e.action ? e.action : "?", PQgetvalue(res, row, COL_HASH), hash);
        return broken(w, id);
    }
    w->seq = seq;
    memcpy(w->hash, hash, sizeof w->hash);
    return true;
}

bool auditwalk_rows(struct auditwalk *w, const PGresult *res)
{
    int rows = PQntuples(res);
    for (int row = 0; row < rows; row++)
        if (!check_event(w, res, row))
            return false;
    return true;
}

bool auditwalk_head(struct auditwalk *w, long long head_seq, const char *head_hash)
{
    if (head_seq != w->seq) {
        snprintf(w->report, sizeof w->report,
                 "broken: the chain head is at event %lld but the last event is %lld "
                 "(events were deleted at the end)",
                 head_seq, w->seq);
        w->broken = true;
        return false;
    }
    if (strcmp(head_hash, w->hash) != 0) {
        snprintf(w->report, sizeof w->report,
                 "broken: the chain head's hash %s is not the last event's hash %s", head_hash,
                 w->hash);
        w->broken = true;
        return false;
    }
    snprintf(w->report, sizeof w->report, "OK: %lld events, head %s", w->seq, w->hash);
    return true;
}
