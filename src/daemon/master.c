/*
 * master.c - the master process: binds, maps, forks and supervises.
 *
 * The master never talks to the database and never serves a request. It
 * keeps every signal blocked and waits for them with sigtimedwait(2), so
 * signal handling is ordinary sequential code (no handlers at all).
 *
 *  - SIGCHLD: reap; a child of the current generation that died is
 *    restarted at once, or with backoff (100 ms doubling to 5 s) when it
 *    keeps dying within a second of starting; one that exited with
 *    EXIT_FATAL_CONFIG is not restarted.
 *  - SIGHUP: re-read the configuration; on success start a new generation
 *    of children, then ask the old generation to drain (SIGTERM). The
 *    listening sockets stay open throughout. Keys whose row in the
 *    configuration table is not reloadable keep their running values
 *    (config_keep_restart_only), with one warning naming those changed.
 *    access_log_path is opened anew (after logrotate renamed it, a new
 *    file) for the new workers; the old ones write their last lines to the
 *    file they had. A path that cannot be opened fails the reload like a
 *    bad file.
 *  - Every STALL_CHECK_MAX_MS at most: a worker whose heartbeat in shared
 *    memory (heartbeat.h) is older than worker_stall_ms is killed with
 *    SIGKILL and respawned like any dead child; its listening sockets
 *    stay open here, so connections queued on them wait for the
 *    replacement instead of being refused.
 *  - READY=1 (sd_notify) goes out once every worker of the generation
 *    serves: each writes one byte to the ready pipe when its HTTP server
 *    is set up, and the master waits for them (at most
 *    READY_WAIT_MS) after starting a generation and after a reload.
 *  - SIGTERM, SIGINT, SIGQUIT: ask every child to drain, wait (at most
 *    shutdown_timeout_ms, then SIGKILL), exit 0. The flusher is asked
 *    only once the last worker has exited, so its final flush carries
 *    every evaluation counted.
 *  - The workers pipe: every worker inherits its write end, the flusher
 *    its read end, and the master keeps both until a stop begins. When
 *    the master is SIGKILLed, the children all get SIGTERM at once
 *    (PR_SET_PDEATHSIG); the flusher then waits for end-of-file on the
 *    pipe, that is for every worker to have handed in its last batch and
 *    exited, before its final flush (flusher.h).
 */
#include "daemon/master.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "http/accept_balance.h"
#include "http/access_log.h"
#include "http/ui_files.h"
#include "base/config.h"
#include "daemon/deliverer.h"
#include "daemon/flusher.h"
#include "eval/heartbeat.h"
#include "daemon/listener.h"
#include "base/log.h"
#include "daemon/proctitle.h"
#include "daemon/refresher.h"
#include "daemon/scheduler.h"
#include "daemon/sdnotify.h"
#include "eval/shm.h"
#include "daemon/worker.h"

#define MAX_CHILDREN 256
#define QUICK_DEATH_MS 1000
#define BACKOFF_FIRST_MS 100
#define BACKOFF_MAX_MS 5000
#define STALL_CHECK_MAX_MS 100
#define READY_WAIT_MS 5000

enum child_role { ROLE_WORKER, ROLE_REFRESHER, ROLE_FLUSHER, ROLE_DELIVERER, ROLE_SCHEDULER };

struct child {
    bool used;
    pid_t pid; /* 0 while waiting to be respawned */
    enum child_role role;
    int slot;
    unsigned generation;
    long long started_ms;
    long long respawn_at_ms;
    unsigned quick_deaths;
    bool stall_killed; /* SIGKILLed for a stale heartbeat, not yet reaped */
};

struct master {
    const char *config_path;
    struct config cfg;
    struct shm_region shm;
    struct listener_set sockets;
    int metrics_fd;      /* metrics_listen's socket, or -1 */
    int ready_pipe[2];   /* workers write a byte once they serve; -1 when absent */
    int workers_pipe[2]; /* write end held by workers, read by the flusher; -1 when absent */
    int access_log_fd;   /* access_log_path opened for this generation, or -1 */
    struct ui_files *ui; /* ui_dir as read for this generation, or NULL */
    pid_t pid;
    struct child children[MAX_CHILDREN];
    unsigned generation;
    bool stopping;
    bool flusher_stopped; /* SIGTERM sent to the flusher during a stop */
    bool fatal;
    long long kill_at_ms;
};

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *role_name(const struct child *c, char *buf, size_t len)
{
    if (c->role == ROLE_WORKER)
        snprintf(buf, len, "worker %d", c->slot);
    else
        snprintf(buf, len, "%s",
                 c->role == ROLE_REFRESHER   ? "refresher"
                 : c->role == ROLE_FLUSHER   ? "flusher"
                 : c->role == ROLE_SCHEDULER ? "scheduler"
                                             : "deliverer");
    return buf;
}

/* ---- running a child ---- */

static unsigned child_slot(const struct master *m, const struct child *c)
{
    return (unsigned)(c - m->children);
}

/* A worker keeps every listening socket (the accept balance spreads the
 * connections, accept_balance.h); the other children close them. */
static int run_child(struct master *m, const struct child *c)
{
    for (size_t i = 0; c->role != ROLE_WORKER && i < m->sockets.count; i++)
        close(m->sockets.fds[i]);
    if (c->role != ROLE_WORKER && m->metrics_fd >= 0)
        close(m->metrics_fd);
    if (m->ready_pipe[0] >= 0)
        close(m->ready_pipe[0]);
    if (c->role != ROLE_WORKER && m->ready_pipe[1] >= 0)
        close(m->ready_pipe[1]);
    if (c->role != ROLE_FLUSHER && m->workers_pipe[0] >= 0)
        close(m->workers_pipe[0]);
    if (c->role != ROLE_WORKER && m->workers_pipe[1] >= 0)
        close(m->workers_pipe[1]);
    if (c->role != ROLE_WORKER && m->access_log_fd >= 0)
        close(m->access_log_fd);
    switch (c->role) {
    case ROLE_WORKER:
        return worker_main(c->slot, child_slot(m, c), &m->cfg, &m->shm, m->sockets.fds,
                           m->sockets.count, m->metrics_fd, m->ready_pipe[1], m->access_log_fd,
                           m->ui);
    case ROLE_REFRESHER:
        return refresher_main(&m->cfg, &m->shm);
    case ROLE_FLUSHER:
        return flusher_main(&m->cfg, &m->shm, m->workers_pipe[0], m->pid);
    case ROLE_DELIVERER:
        return deliverer_main(&m->cfg);
    case ROLE_SCHEDULER:
        return scheduler_main(&m->cfg, &m->shm);
    }
    return EXIT_FAILURE;
}

static void spawn(struct master *m, struct child *c)
{
    char name[32];
    c->stall_killed = false;
    heartbeat_beat(m->shm.heartbeat, child_slot(m, c), heartbeat_now_ms());
    accept_balance_publish(m->shm.accept_balance, child_slot(m, c), ACCEPT_BALANCE_ABSENT);
    pid_t pid = fork();
    if (pid < 0) {
        log_error("fork %s: %s", role_name(c, name, sizeof name), strerror(errno));
        c->respawn_at_ms = now_ms() + BACKOFF_MAX_MS;
        return;
    }
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        int status = run_child(m, c);
        config_free(&m->cfg);
        exit(status);
    }
    c->pid = pid;
    c->started_ms = now_ms();
    log_info("%s started (pid %ld)", role_name(c, name, sizeof name), (long)pid);
}

static void add_child(struct master *m, enum child_role role, int slot)
{
    for (size_t i = 0; i < MAX_CHILDREN; i++) {
        struct child *c = &m->children[i];
        if (c->used)
            continue;
        *c = (struct child){.used = true, .role = role, .slot = slot, .generation = m->generation};
        spawn(m, c);
        return;
    }
    log_error("too many child processes");
}

static void start_generation(struct master *m)
{
    for (int slot = 0; slot < m->cfg.workers; slot++)
        add_child(m, ROLE_WORKER, slot);
    add_child(m, ROLE_REFRESHER, 0);
    add_child(m, ROLE_FLUSHER, 0);
    add_child(m, ROLE_DELIVERER, 0);
    add_child(m, ROLE_SCHEDULER, 0);
}

/* Asks every child but the flusher to stop (the flusher waits for the workers). */
static void stop_all_but_flusher(struct master *m)
{
    for (size_t i = 0; i < MAX_CHILDREN; i++) {
        struct child *c = &m->children[i];
        if (c->used && c->pid > 0 && c->role != ROLE_FLUSHER)
            kill(c->pid, SIGTERM);
    }
}

static void signal_children(struct master *m, int sig, bool only_old)
{
    for (size_t i = 0; i < MAX_CHILDREN; i++) {
        struct child *c = &m->children[i];
        if (!c->used || c->pid <= 0 || (only_old && c->generation == m->generation))
            continue;
        kill(c->pid, sig);
    }
}

/* ---- readiness ---- */

static void open_ready_pipe(struct master *m)
{
    if (pipe2(m->ready_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        log_warn("no ready pipe (%s); READY=1 will not wait for the workers", strerror(errno));
        m->ready_pipe[0] = m->ready_pipe[1] = -1;
    }
}

static void open_workers_pipe(struct master *m)
{
    if (pipe2(m->workers_pipe, O_CLOEXEC) != 0) {
        log_warn("no workers pipe (%s); if the master is killed, the last counts may be lost",
                 strerror(errno));
        m->workers_pipe[0] = m->workers_pipe[1] = -1;
    }
}

/* Forgets bytes of earlier generations (a respawned worker also writes one). */
static void drain_ready_pipe(struct master *m)
{
    char buf[256];
    while (m->ready_pipe[0] >= 0 && read(m->ready_pipe[0], buf, sizeof buf) > 0)
        continue;
}

/* Waits until `workers` workers said they serve (or READY_WAIT_MS), then READY=1. */
static void notify_ready_when_serving(struct master *m, int workers)
{
    long long deadline = now_ms() + READY_WAIT_MS;
    int serving = 0;
    while (m->ready_pipe[0] >= 0 && serving < workers && now_ms() < deadline) {
        struct pollfd p = {.fd = m->ready_pipe[0], .events = POLLIN};
        if (poll(&p, 1, (int)(deadline - now_ms())) <= 0)
            continue;
        char buf[64];
        ssize_t n = read(m->ready_pipe[0], buf, sizeof buf);
        serving += n > 0 ? (int)n : 0;
    }
    if (serving < workers && m->ready_pipe[0] >= 0)
        log_warn("%d of %d workers serving after %d ms", serving, workers, READY_WAIT_MS);
    sdnotify_send("READY=1");
}

/* ---- reaping and respawning ---- */

static void describe_exit(const struct child *c, int status)
{
    char name[32];
    role_name(c, name, sizeof name);
    if (WIFEXITED(status))
        log_msg(WEXITSTATUS(status) == 0 ? LOG_LEVEL_INFO : LOG_LEVEL_WARN,
                "%s (pid %ld) exited with status %d", name, (long)c->pid, WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        log_warn("%s (pid %ld) killed by signal %d", name, (long)c->pid, WTERMSIG(status));
}

static void schedule_respawn(struct master *m, struct child *c, int status)
{
    char name[32];
    if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_FATAL_CONFIG) {
        log_error("%s hit a fatal configuration error; not restarting it",
                  role_name(c, name, sizeof name));
        c->used = false;
        m->fatal = true;
        return;
    }
    long long now = now_ms();
    if (now - c->started_ms < QUICK_DEATH_MS)
        c->quick_deaths++;
    else
        c->quick_deaths = 0;
    long long delay = 0;
    if (c->quick_deaths > 0) {
        delay = (long long)BACKOFF_FIRST_MS << (c->quick_deaths > 6 ? 6 : c->quick_deaths - 1);
        delay = delay > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : delay;
    }
    c->pid = 0;
    c->respawn_at_ms = now + delay;
    if (m->shm.header != NULL)
        atomic_fetch_add(&m->shm.header->worker_restarts, 1);
    log_info("restarting %s in %lld ms", role_name(c, name, sizeof name), delay);
}

static void reap(struct master *m)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (size_t i = 0; i < MAX_CHILDREN; i++) {
            struct child *c = &m->children[i];
            if (!c->used || c->pid != pid)
                continue;
            describe_exit(c, status);
            accept_balance_publish(m->shm.accept_balance, child_slot(m, c), ACCEPT_BALANCE_ABSENT);
            if (m->stopping || c->generation != m->generation)
                c->used = false;
            else
                schedule_respawn(m, c, status);
            break;
        }
    }
}

/* Respawns due children; returns ms until the next one is due (or -1). */
static long long respawn_due(struct master *m)
{
    long long now = now_ms(), next = -1;
    for (size_t i = 0; i < MAX_CHILDREN && !m->stopping; i++) {
        struct child *c = &m->children[i];
        if (!c->used || c->pid != 0)
            continue;
        if (c->respawn_at_ms <= now)
            spawn(m, c);
        long long wait = c->pid == 0 ? c->respawn_at_ms - now : -1;
        if (wait >= 0 && (next < 0 || wait < next))
            next = wait;
    }
    return next;
}

static size_t live_children(const struct master *m, bool workers_only)
{
    size_t n = 0;
    for (size_t i = 0; i < MAX_CHILDREN; i++) {
        const struct child *c = &m->children[i];
        if (c->used && (!workers_only || c->role == ROLE_WORKER))
            n++;
    }
    return n;
}

/* Kills each worker whose heartbeat is older than worker_stall_ms; reap()
 * then respawns it. */
static void kill_stalled_workers(struct master *m)
{
    int64_t now = heartbeat_now_ms();
    for (size_t i = 0; i < MAX_CHILDREN; i++) {
        struct child *c = &m->children[i];
        if (!c->used || c->pid <= 0 || c->role != ROLE_WORKER || c->stall_killed ||
            !heartbeat_stale(m->shm.heartbeat, child_slot(m, c), now, m->cfg.worker_stall_ms))
            continue;
        char name[32];
        log_error("%s (pid %ld) has not run its event loop for %lld ms; killing it",
                  role_name(c, name, sizeof name), (long)c->pid,
                  (long long)(now - heartbeat_last(m->shm.heartbeat, child_slot(m, c))));
        if (kill(c->pid, SIGKILL) == 0)
            c->stall_killed = true;
    }
}

/* How long the master may sleep before the next stall check. */
static long long stall_check_ms(const struct master *m)
{
    if (m->cfg.worker_stall_ms <= 0)
        return 1000;
    long long every = m->cfg.worker_stall_ms / 4;
    return every < 10 ? 10 : every > STALL_CHECK_MAX_MS ? STALL_CHECK_MAX_MS : every;
}

/* ---- reload and stop ---- */

/* Keys whose row in the configuration table is not reloadable (they size
 * shared memory, or were applied before the first fork) keep their running
 * values; one warning names those the file changed. -1: out of memory. */
static int keep_restart_only_settings(struct config *fresh, const struct config *running)
{
    char changed[512];
    int count = config_keep_restart_only(fresh, running, changed, sizeof changed);
    if (count > 0)
        log_warn("reload: %s change only on restart; keeping the running values", changed);
    return count < 0 ? -1 : 0;
}

static int rebind_if_needed(struct master *m, struct config *fresh)
{
    char err[256];
    if (strcmp(fresh->listen, m->cfg.listen) == 0)
        return listener_grow(&m->sockets, fresh, (size_t)fresh->workers, err, sizeof err) == 0
                   ? 0
                   : (log_error("reload: %s", err), -1);
    struct listener_set fresh_sockets = {.count = 0};
    if (listener_check_free(fresh, err, sizeof err) != 0 ||
        listener_grow(&fresh_sockets, fresh, (size_t)fresh->workers, err, sizeof err) != 0) {
        listener_close_all(&fresh_sockets);
        log_error("reload: %s", err);
        return -1;
    }
    /* Old workers hold their own copies until they have drained. */
    listener_close_all(&m->sockets);
    m->sockets = fresh_sockets;
    return 0;
}

/* access_log_path's file for the next generation: *fd is -1 for stderr. */
static int open_access_log(const struct config *cfg, int *fd, char *err, size_t errlen)
{
    *fd = -1;
    if (cfg->access_log == CONFIG_ACCESS_LOG_OFF || cfg->access_log_path[0] == '\0')
        return 0;
    *fd = access_log_open_file(cfg->access_log_path, err, errlen);
    return *fd >= 0 ? 0 : -1;
}

static void replace_access_log(struct master *m, int fd)
{
    if (m->access_log_fd >= 0)
        close(m->access_log_fd); /* old workers keep their own copies */
    m->access_log_fd = fd;
}

/* Reads the file again and opens what the next generation needs. On
 * failure logs why and returns -1, with nothing left open or allocated. */
static int prepare_reload(struct master *m, struct config *fresh, int *access_fd)
{
    char err[512];
    if (config_load(m->config_path, fresh, err, sizeof err) != 0) {
        log_error("reload failed, keeping the running configuration: %s", err);
        return -1;
    }
    if (keep_restart_only_settings(fresh, &m->cfg) != 0) {
        log_error("reload failed, keeping the running configuration: out of memory");
        config_free(fresh);
        return -1;
    }
    if (open_access_log(fresh, access_fd, err, sizeof err) != 0) {
        log_error("reload failed, keeping the running configuration: %s", err);
        config_free(fresh);
        return -1;
    }
    if (rebind_if_needed(m, fresh) != 0) {
        if (*access_fd >= 0)
            close(*access_fd);
        config_free(fresh);
        return -1;
    }
    return 0;
}

/*
 * Reads ui_dir for the next generation (doc/ensign.conf.5 ui_dir): the
 * workers forked from now on serve it; those running keep their own copy.
 * A directory that cannot be read serves no dashboard, said once here.
 */
static void load_ui(struct master *m)
{
    char err[512];
    ui_files_free(m->ui);
    m->ui = ui_files_load(m->cfg.ui_dir, err, sizeof err);
    if (m->ui == NULL)
        log_warn("the dashboard is not served: %s", err);
    else
        log_info("dashboard: %zu files from %s (%zu bytes, %zu gzipped)", m->ui->count,
                 m->cfg.ui_dir, m->ui->bytes, m->ui->gz_bytes);
}

static void reload(struct master *m)
{
    struct config fresh;
    int access_fd;
    sdnotify_reloading();
    log_info("reloading %s", m->config_path);
    if (prepare_reload(m, &fresh, &access_fd) != 0) {
        sdnotify_send("READY=1");
        return;
    }
    replace_access_log(m, access_fd);
    config_free(&m->cfg);
    m->cfg = fresh;
    log_set_level((enum log_level)m->cfg.log_level);
    load_ui(m);
    m->generation++;
    drain_ready_pipe(m);
    start_generation(m);
    notify_ready_when_serving(m, m->cfg.workers);
    signal_children(m, SIGTERM, true);
}

static void begin_stop(struct master *m, int sig)
{
    if (m->stopping)
        return;
    log_info("received signal %d, stopping", sig);
    sdnotify_send("STOPPING=1");
    m->stopping = true;
    m->kill_at_ms = now_ms() + m->cfg.shutdown_timeout_ms + 1000;
    for (size_t i = 0; i < MAX_CHILDREN; i++)
        if (m->children[i].used && m->children[i].pid == 0)
            m->children[i].used = false; /* never respawned */
    stop_all_but_flusher(m);
    if (m->workers_pipe[1] >= 0) /* no worker starts from now on */
        close(m->workers_pipe[1]);
    m->workers_pipe[1] = -1;
    listener_close_all(&m->sockets);
    if (m->metrics_fd >= 0)
        close(m->metrics_fd);
    m->metrics_fd = -1;
}

/* During a stop, once no worker is left, asks the flusher for its last flush. */
static void stop_flusher_after_workers(struct master *m)
{
    if (!m->stopping || m->flusher_stopped || live_children(m, true) > 0)
        return;
    for (size_t i = 0; i < MAX_CHILDREN; i++) {
        struct child *c = &m->children[i];
        if (c->used && c->pid > 0 && c->role == ROLE_FLUSHER)
            kill(c->pid, SIGTERM);
    }
    m->flusher_stopped = true;
}

/* ---- start-up ---- */

static int prepare_state_dir(const struct config *cfg)
{
    if (mkdir(cfg->state_dir, 0750) != 0 && errno != EEXIST) {
        log_error("cannot create state_dir %s: %s", cfg->state_dir, strerror(errno));
        return -1;
    }
    if (access(cfg->state_dir, W_OK | X_OK) != 0) {
        log_error("state_dir %s is not writable: %s", cfg->state_dir, strerror(errno));
        return -1;
    }
    return 0;
}

static int drop_privileges(const struct config *cfg)
{
    if (geteuid() != 0)
        return 0;
    if (cfg->user == NULL || cfg->user[0] == '\0') {
        log_warn("running as root; set `user` in the configuration to drop privileges");
        return 0;
    }
    struct passwd *pw = getpwnam(cfg->user);
    if (pw == NULL) {
        log_error("user %s does not exist", cfg->user);
        return -1;
    }
    if (chown(cfg->state_dir, pw->pw_uid, pw->pw_gid) != 0 ||
        initgroups(pw->pw_name, pw->pw_gid) != 0 || setgid(pw->pw_gid) != 0 ||
        setuid(pw->pw_uid) != 0) {
        log_error("cannot switch to user %s: %s", cfg->user, strerror(errno));
        return -1;
    }
    return 0;
}

static int start_up(struct master *m)
{
    char err[256];
    if (listener_check_free(&m->cfg, err, sizeof err) != 0 ||
        listener_grow(&m->sockets, &m->cfg, (size_t)m->cfg.workers, err, sizeof err) != 0) {
        log_error("%s", err);
        return -1;
    }
    if (m->cfg.metrics_listen[0] != '\0' &&
        (m->metrics_fd = listener_open_metrics(&m->cfg, err, sizeof err)) < 0) {
        log_error("%s", err);
        return -1;
    }
    if (shm_create(&m->cfg, &m->shm) != 0) {
        log_error("cannot map shared memory: %s", strerror(errno));
        return -1;
    }
    if (prepare_state_dir(&m->cfg) != 0 || drop_privileges(&m->cfg) != 0)
        return -1;
    /* after dropping privileges: the file is created by, and belongs to, the user serving */
    if (open_access_log(&m->cfg, &m->access_log_fd, err, sizeof err) != 0) {
        log_error("%s", err);
        return -1;
    }
    load_ui(m);
    return 0;
}

static void wait_for_signal(struct master *m, const sigset_t *set, long long timeout_ms)
{
    struct timespec ts = {timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
    siginfo_t info;
    int sig = sigtimedwait(set, &info, &ts);
    switch (sig) {
    case SIGCHLD:
        break;
    case SIGHUP:
        if (!m->stopping)
            reload(m);
        break;
    case SIGTERM:
    case SIGINT:
    case SIGQUIT:
        begin_stop(m, sig);
        break;
    default:
        break;
    }
}

static void supervise(struct master *m, const sigset_t *set)
{
    for (;;) {
        reap(m);
        if (m->fatal && live_children(m, true) == 0 && !m->stopping) {
            log_error("no worker can run; stopping");
            begin_stop(m, SIGTERM);
        }
        kill_stalled_workers(m);
        long long next = respawn_due(m);
        stop_flusher_after_workers(m);
        if (m->stopping && live_children(m, false) == 0)
            return;
        if (m->stopping && now_ms() >= m->kill_at_ms) {
            log_warn("children did not stop in time; killing them");
            signal_children(m, SIGKILL, false);
            m->kill_at_ms = now_ms() + 1000;
        }
        long long check = stall_check_ms(m);
        wait_for_signal(m, set, next >= 0 && next < check ? next : check);
    }
}

int master_run(const char *config_path, struct config *cfg)
{
    static struct master m; /* static: children find it reachable at exit */
    m.config_path = config_path;
    m.metrics_fd = -1;
    m.pid = getpid();
    m.access_log_fd = -1;
    open_ready_pipe(&m);
    open_workers_pipe(&m);
    m.cfg = *cfg;
    memset(cfg, 0, sizeof *cfg);
    log_set_role("master");
    proctitle_set("ensignd: master");

    sigset_t set;
    sigemptyset(&set);
    int blocked[] = {SIGCHLD, SIGHUP, SIGTERM, SIGINT, SIGQUIT};
    for (size_t i = 0; i < sizeof blocked / sizeof blocked[0]; i++)
        sigaddset(&set, blocked[i]);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    int status = EXIT_FAILURE;
    if (start_up(&m) == 0) {
        log_info("listening on %s with %d workers", m.cfg.listen, m.cfg.workers);
        start_generation(&m);
        notify_ready_when_serving(&m, m.cfg.workers);
        supervise(&m, &set);
        status = m.fatal ? EXIT_FAILURE : EXIT_SUCCESS;
        log_info("stopped");
    }
    listener_close_all(&m.sockets);
    if (m.metrics_fd >= 0)
        close(m.metrics_fd);
    replace_access_log(&m, -1);
    for (int i = 0; i < 2; i++) {
        if (m.ready_pipe[i] >= 0)
            close(m.ready_pipe[i]);
        if (m.workers_pipe[i] >= 0)
            close(m.workers_pipe[i]);
    }
    shm_destroy(&m.shm);
    ui_files_free(m.ui);
    m.ui = NULL;
    config_free(&m.cfg);
    return status;
}
