/*
 * auditwalk.h - walking an organization's audit chain in order and finding
 * its first broken link: the checks shared by `ensignctl audit verify`
 * (ctl/auditverify.c, one cursor in batches) and GET
 * /orgs/{slug}/audit/verify (accounts/audit_verify.c, keyset pages on the
 * worker's connection). The hash itself is base/auditchain.h's.
 *
 * The caller reads events in chain order (seq ascending) with the columns
 * of AUDITWALK_COLUMNS and hands each page to auditwalk_rows; after the
 * last page, auditwalk_head compares the chain head (audit_chain_heads).
 *
 * A link is broken when an event's seq is not the next number (an event
 * was deleted), its prev_hash is not the previous event's hash, or its
 * stored hash differs from the recomputed one (a hashed column was
 * edited); the head is wrong when it does not name the last event (events
 * deleted at the end). Plain data, no allocation kept; the walk is the
 * caller's (a local or part of a request's state).
 */
#ifndef ENSIGN_AUDITWALK_H
#define ENSIGN_AUDITWALK_H

#include <libpq-fe.h>
#include <stdbool.h>

#include "base/auditchain.h"

/* The columns of an event, in the order auditwalk_rows reads them: the
 * fields of struct auditchain_event, then prev_hash and hash. For a
 * SELECT ... FROM audit_events e. */
#define AUDITWALK_COLUMNS                                                                          \
    "e.org_id::text, e.seq::text, e.id::text, ensign_audit_time(e.created_at),"                    \
    " e.actor_id::text, e.actor_token_id::text, e.actor_name, e.action, e.summary, host(e.ip),"    \
    " e.location, e.prev_hash, e.hash"

#define AUDITWALK_REPORT_MAX 400
#define AUDITWALK_ID_MAX 40

struct auditwalk {
    long long seq;                          /* the last event checked (0: none yet) */
    char hash[AUDITCHAIN_HASH_HEX_LEN + 1]; /* its hash (the genesis hash at first) */
    bool broken;
    char broken_at[AUDITWALK_ID_MAX];  /* id of the first event whose link fails; "" for none
                                          (or when only the head is wrong) */
    char report[AUDITWALK_REPORT_MAX]; /* one line: "OK: N events, head H" or "broken: ..." */
};

void auditwalk_init(struct auditwalk *w);

/* Checks the rows of res in order from the walk's position; false (and
 * w->broken, report, broken_at set) at the first broken link. */
bool auditwalk_rows(struct auditwalk *w, const PGresult *res);

/* After the last event: false (broken, report) when the head does not
 * name it, else true with the "OK" report. */
bool auditwalk_head(struct auditwalk *w, long long head_seq, const char *head_hash);

#endif
