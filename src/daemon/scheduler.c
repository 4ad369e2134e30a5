/*
 * scheduler.c - the scheduler process (see scheduler.h): the claim loop
 * (claimloop.h) with the scheduled changes' claim (schedule_apply.h).
 *
 * It wakes when a schedule is made (LISTEN ensign_schedules: sql/0014's
 * trigger NOTIFYs every insert), when the soonest pending schedule is due
 * (a timer to its at, read from the database's clock), and at least every
 * SCHEDULER_POLL_BOUND_MS. Each application is logged; failed database
 * work counts in ensign_database_errors_total like the other background
 * processes'.
 */
#include "daemon/scheduler.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>

#include "api/schedule_apply.h"
#include "base/config.h"
#include "base/log.h"
#include "daemon/bgloop.h"
#include "daemon/claimloop.h"
#include "daemon/proctitle.h"
#include "eval/shm.h"
#include "http/metrics.h"

static enum claim_result claim_schedules(PGconn *conn, void *arg, char *err, size_t errlen)
{
    (void)arg;
    static struct schedule_batch batch; /* 8 KB of log lines: not on the stack */
    switch (schedule_apply_due(conn, &batch, err, errlen)) {
    case SCHEDULE_APPLIED:
    case SCHEDULE_FAILED:
        for (int i = 0; i < batch.lines; i++)
            log_info("%s", batch.line[i]);
        return CLAIM_DONE;
    case SCHEDULE_BUSY:
        return CLAIM_BUSY;
    case SCHEDULE_ERROR:
        return CLAIM_ERROR;
    case SCHEDULE_NONE:
        break;
    }
    return CLAIM_NONE;
}

static long long next_schedule_ms(PGconn *conn, void *arg)
{
    (void)arg;
    return schedule_next_due_ms(conn);
}

int scheduler_main(const struct config *cfg, struct shm_region *shm)
{
    log_set_role("scheduler");
    proctitle_set("ensignd: scheduler");
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    bgloop_install_signals();
    const struct claim_job job = {.name = "scheduler",
                                  .channel = SCHEDULE_CHANNEL,
                                  .poll_bound_ms = SCHEDULER_POLL_BOUND_MS,
                                  .claim_one = claim_schedules,
                                  .next_due_ms = next_schedule_ms,
                                  .arg = NULL};
    _Atomic uint64_t *errors =
        shm->metrics != NULL ? &METRICS_BACKGROUND_BLOCK(shm->metrics)->database_errors : NULL;
    claimloop_run(&job, cfg->database, errors);
    return EXIT_SUCCESS;
}
