/*
 * sdnotify.h - readiness notification to systemd (Type=notify).
 *
 * Sends "READY=1", "RELOADING=1", "STOPPING=1" and "STATUS=..." datagrams to
 * $NOTIFY_SOCKET when it is set; a no-op otherwise. Master only.
 */
#ifndef ENSIGN_SDNOTIFY_H
#define ENSIGN_SDNOTIFY_H

/* Returns 0 when sent or when not under systemd, -1 on a send error. */
int sdnotify_send(const char *state);

/* "RELOADING=1" with MONOTONIC_USEC=now, as Type=notify-reload expects. */
int sdnotify_reloading(void);

#endif
