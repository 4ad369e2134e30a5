/*
 * flusher.c - moves usage counters to PostgreSQL (see flusher.h).
 */
#include "flusher.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>

#include "bgloop.h"
#include "config.h"
#include "log.h"
#include "proctitle.h"

int flusher_main(const struct config *cfg, struct shm_region *shm)
{
    (void)shm; /* the usage-counter table arrives with the evaluation issue */
    log_set_role("flusher");
    proctitle_set("ensignd: flusher");
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    bgloop_install_signals();
    struct bgloop loop = {.conninfo = cfg->database, .listen_channel = NULL};
    while (!bgloop_stopping()) {
        bgloop_ensure_connected(&loop);
        bgloop_wait(&loop, loop.conn != NULL ? cfg->usage_flush_interval_ms : 100);
        if (loop.conn != NULL && PQstatus(loop.conn) != CONNECTION_OK)
            bgloop_disconnect(&loop);
    }
    if (loop.conn != NULL)
        PQfinish(loop.conn);
    return EXIT_SUCCESS;
}
