/*
 * auditchain.h - the audit log's hash chain, computed in C: the canonical
 * text of an event and the link hash (sql/0004_audit.sql computes the same
 * in PostgreSQL when an event is inserted; `ensignctl audit verify`
 * recomputes it here, so the two must agree byte for byte).
 *
 *   hash = lower hex SHA-256( prev_hash || canonical(event) )
 *   canonical(event) = "ensign-audit-v1," then, for each field in the
 *       order of struct auditchain_event, "~," for NULL or
 *       "<length in bytes>:<bytes>,"
 *
 * prev_hash is the previous event's hash in hex (64 "0" for an
 * organization's first event). Pure functions; SHA-256 through token.c.
 * Called by src/ctl/auditverify.c and the unit tests.
 */
#ifndef ENSIGN_AUDITCHAIN_H
#define ENSIGN_AUDITCHAIN_H

#include <stddef.h>

#define AUDITCHAIN_HASH_HEX_LEN 64

/* One event's hashed fields as PostgreSQL renders them to text; NULL for
 * SQL NULL. created_at is ensign_audit_time() (UTC, microseconds); ip is
 * host(ip). */
struct auditchain_event {
    const char *org_id;
    const char *seq;
    const char *id;
    const char *created_at;
    const char *actor_id;
    const char *actor_token_id;
    const char *actor_name;
    const char *action;
    const char *summary;
    const char *ip;
    const char *location;
};

/* The hash of the organization's chain before its first event. */
extern const char auditchain_genesis[AUDITCHAIN_HASH_HEX_LEN + 1];

/*
 * Writes the link hash of e after prev_hash (hex) into out. Returns 0, or
 * -1 when memory runs out (out is then "").
 */
int auditchain_link(const char *prev_hash, const struct auditchain_event *e,
                    char out[AUDITCHAIN_HASH_HEX_LEN + 1]);

#endif
