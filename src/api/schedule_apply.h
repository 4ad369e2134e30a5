/*
 * schedule_apply.h - applying due scheduled changes, one per transaction,
 * on a blocking connection (the scheduler process: src/daemon/scheduler.c).
 *
 * schedule_apply_next claims the soonest due pending schedule
 * (FOR UPDATE SKIP LOCKED, so nodes never take the same one) and, in the
 * SAME transaction, applies it: the change validated again with the
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
    SCHEDULE_APPLIED, /* one applied */
    SCHEDULE_FAILED,  /* one ended failed */
    SCHEDULE_BUSY,    /* one is due but its flag is being written: try again shortly */
    SCHEDULE_ERROR    /* the database failed (err says why); nothing changed */
};

/* Claims and finishes one due schedule. err (errlen bytes) says what
 * happened: "schedule ID" (applied), "schedule ID: reason" (failed), the
 * database's error (SCHEDULE_ERROR). */
enum schedule_outcome schedule_apply_next(PGconn *conn, char *err, size_t errlen);

/*
 * Milliseconds until the soonest pending schedule is due (0 when one is
 * due now), -1 when none is pending, -2 when the database failed.
 */
long long schedule_next_due_ms(PGconn *conn);

#endif
