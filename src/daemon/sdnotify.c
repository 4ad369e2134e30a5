/*
 * sdnotify.c - the sd_notify(3) datagram protocol, without libsystemd.
 *
 * The protocol is one AF_UNIX datagram of "KEY=VALUE" lines to the socket
 * named by $NOTIFY_SOCKET ('@' prefix: abstract namespace).
 */
#include "daemon/sdnotify.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int sdnotify_send(const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    if (path == NULL || path[0] == '\0')
        return 0;
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    size_t len = strlen(path);
    if ((path[0] != '/' && path[0] != '@') || len >= sizeof addr.sun_path)
        return -1;
    memcpy(addr.sun_path, path, len);
    if (path[0] == '@')
        addr.sun_path[0] = '\0';
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    socklen_t addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
    ssize_t sent =
        sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&addr, addr_len);
    close(fd);
    return sent < 0 ? -1 : 0;
}

int sdnotify_reloading(void)
{
    struct timespec now;
    char state[64];
    clock_gettime(CLOCK_MONOTONIC, &now);
    snprintf(state, sizeof state, "RELOADING=1\nMONOTONIC_USEC=%llu",
             (unsigned long long)now.tv_sec * 1000000ull + (unsigned long long)now.tv_nsec / 1000);
    return sdnotify_send(state);
}
