/*
 * worker.h - a worker process: one libevent loop serving HTTP.
 *
 * A worker runs one event loop on the listening sockets the master gave
 * it, answers every route of the route table (routes.h), and keeps its own
 * PostgreSQL connection for management routes. Its state is the struct
 * http_server of the HTTP layer (http/server.h), which worker.c fills in
 * and owns. Started by the master.
 */
#ifndef ENSIGN_WORKER_H
#define ENSIGN_WORKER_H

#include <stddef.h>

struct config;
struct shm_region;
struct ui_files;

/* Runs a worker until it drains; returns the process exit status.
 * heartbeat_slot is the master's slot for it in the heartbeat table;
 * metrics_fd is the metrics_listen socket, or -1; one byte goes to
 * ready_fd (or nowhere when -1) once the worker serves; access_log_fd is
 * the worker's copy of access_log_path's file (it closes it), or -1 for
 * stderr; ui is the dashboard the master read (or NULL: none served). */
int worker_main(int index, unsigned heartbeat_slot, const struct config *cfg,
                struct shm_region *shm, const int *fds, size_t nfds, int metrics_fd, int ready_fd,
                int access_log_fd, const struct ui_files *ui);

#endif
