/*
 * schedule_apply.h - applying due scheduled changes, one per transaction,
 * on a blocking connection (the scheduler process: src/daemon/scheduler.c).
 *
 * schedule_apply_due claims the soonest due pending schedules
 * (FOR UPDATE SKIP LOCKED, so nodes never take the same one) and, in the
 * SAME transaction, applies each: the change validated again with the
 * environment PATCH's own code, written by the PATCH's own statement as
 * a revision and audit event of action flag.schedule_applied in the name
 * of the user who scheduled it (the configuration trigger NOTIFYs the
 * refreshers), and the row marked applied; or, when the change no longer
 * validates (a variant deleted since, the flag archived, the scheduler
 * no longer allowed to change flags), marked failed with the reason, an
 * audit event schedule.failed and a notification to its creator. The
 * claim and the outcome commit together: a crash before COMMIT leaves the
 * schedule pending for the next claim, so each is applied exactly once.
 */
#ifndef ENSIGN_SCHEDULE_APPLY_H
#define ENSIGN_SCHEDULE_APPLY_H

#include <libpq-fe.h>
#include <stddef.h>

/* The channel every new schedule NOTIFYs (sql/0014). */
#define SCHEDULE_CHANNEL "ensign_schedules"

enum schedule_outcome {
    SCHEDULE_NONE,    /* nothing due that another node does not hold */
    SCHEDULE_APPLIED, /* one or more applied or failed, committed */
    SCHEDULE_FAILED,  /* (one schedule's outcome, inside a batch) */
    SCHEDULE_BUSY,    /* some are due but their flags are being written: try again shortly */
    SCHEDULE_ERROR    /* the database failed (err says why); nothing committed */
};

/* Most schedules claimed (and committed) together: fewer commits when many
 * are due at once, yet a short hold of the organization's audit chain
 * head, which every audited write of the organization waits for
 * (audit_record.h) from a batch's first event to its COMMIT. */
#define SCHEDULE_BATCH 4
#define SCHEDULE_LINE_MAX 512

/* What one call did: counts, and a log line per schedule applied or failed
 * ("applied schedule ID", "failed schedule ID: reason"). */
struct schedule_batch {
    int applied, failed, busy;
    int lines;
    char line[SCHEDULE_BATCH][SCHEDULE_LINE_MAX];
};

/*
 * Claims up to SCHEDULE_BATCH due schedules, soonest first, and finishes
 * each (under a savepoint of its own) in the claim's one transaction.
 * Returns SCHEDULE_APPLIED when it committed at least one outcome (b says
 * which), SCHEDULE_BUSY when every claimed one had a busy flag (rolled
 * back), SCHEDULE_NONE, or SCHEDULE_ERROR with err (errlen bytes) saying
 * why (rolled back).
 */
enum schedule_outcome schedule_apply_due(PGconn *conn, struct schedule_batch *b, char *err,
                                         size_t errlen);

/*
 * Milliseconds until the soonest pending schedule is due (0 when one is
 * due now), -1 when none is pending, -2 when the database failed.
 */
long long schedule_next_due_ms(PGconn *conn);

#endif
