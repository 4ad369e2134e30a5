/*
 * refresher.c - follows the configuration generation (see refresher.h).
 */
#include "refresher.h"

#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/prctl.h>

#include "bgloop.h"
#include "config.h"
#include "dbsync.h"
#include "log.h"
#include "proctitle.h"
#include "shm.h"

static const char generation_sql[] = "SELECT generation FROM config_generation WHERE id = 1";

/* Reads the generation; returns 0 and sets *out, or -1 after a failure. */
static int read_generation(struct bgloop *loop, uint64_t *out)
{
    struct dbsync_error error;
    PGresult *res = dbsync_exec(loop->conn, generation_sql, 0, NULL, &error);
    if (res == NULL) {
        log_warn("cannot read the configuration generation: %s", error.message);
        if (PQstatus(loop->conn) != CONNECTION_OK)
            bgloop_disconnect(loop);
        return -1;
    }
    int rc = -1;
    if (PQntuples(res) == 1) {
        *out = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
        rc = 0;
    }
    PQclear(res);
    return rc;
}

static void publish(struct shm_region *shm, uint64_t generation)
{
    uint64_t current = atomic_load(&shm->header->snapshot_generation);
    if (generation == current)
        return;
    atomic_store(&shm->header->snapshot_generation, generation);
    log_info("configuration generation %" PRIu64 " published", generation);
}

int refresher_main(const struct config *cfg, struct shm_region *shm)
{
    log_set_role("refresher");
    proctitle_set("ensignd: refresher");
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    bgloop_install_signals();
    struct bgloop loop = {.conninfo = cfg->database, .listen_channel = REFRESHER_CHANNEL};
    while (!bgloop_stopping()) {
        uint64_t generation;
        if (bgloop_ensure_connected(&loop) && read_generation(&loop, &generation) == 0)
            publish(shm, generation);
        int changes = bgloop_wait(&loop, loop.conn != NULL ? cfg->refresh_interval_ms : 100);
        if (changes > 0)
            log_debug("%d configuration change notifications", changes);
    }
    if (loop.conn != NULL)
        PQfinish(loop.conn);
    return EXIT_SUCCESS;
}
