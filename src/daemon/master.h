/*
 * master.h - the ensignd master process: sockets, shared memory, children.
 */
#ifndef ENSIGN_MASTER_H
#define ENSIGN_MASTER_H

struct config;

/* A child that exits with this status has a fatal configuration problem
 * and is not respawned. */
#define EXIT_FATAL_CONFIG 2

/*
 * Runs the master until a clean stop. Takes ownership of *cfg (loaded from
 * config_path, which SIGHUP re-reads). Returns the process exit status.
 */
int master_run(const char *config_path, struct config *cfg);

#endif
