/*
 * stream-client.c - many event-stream clients in one epoll loop, for
 * contrib/bench.d/streams.py (built by contrib/bench with cc).
 *
 *   stream-client PORT PATH N
 *
 * Opens N connections to 127.0.0.1:PORT, each sending GET PATH, and reads
 * them all. Prints "OPEN <answered 200> <refused>" once every connection
 * has its status line (60 s at most), then keeps reading until standard
 * input closes, recording for each connection when its k-th
 * refetchEvaluation event arrived (CLOCK_MONOTONIC, the clock of Python's
 * time.monotonic()). Then prints, per event index k from 1, a line
 * "EV k t t t ..." (seconds) of the connections that received it, and
 * exits. Not a test: a load generator bounded by its caller.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_EVENTS 64
#define BATCH 500

static const char mark[] = "\"refetchEvaluation\"";

struct conn {
    int fd;
    int status; /* 0 until the status line, -1 closed before */
    int seen;
    char tail[sizeof mark];
    size_t tail_len;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int count_marks(const char *buf, size_t len)
{
    int n = 0;
    for (const char *p = buf; (p = memmem(p, len - (size_t)(p - buf), mark, sizeof mark - 1));
         p++)
        n++;
    return n;
}

/* Reads what c has; records new events in times[seen][index]. */
static void drain(struct conn *c, size_t index, double *times, size_t n)
{
    char buf[sizeof mark + 16384];
    for (;;) {
        memcpy(buf, c->tail, c->tail_len);
        ssize_t got = read(c->fd, buf + c->tail_len, sizeof buf - c->tail_len);
        if (got < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (got <= 0) {
            if (c->status == 0)
                c->status = -1;
            close(c->fd);
            c->fd = -1;
            return;
        }
        size_t len = c->tail_len + (size_t)got;
        if (c->status == 0 && len > 12 && memcmp(buf, "HTTP/1.", 7) == 0)
            c->status = atoi(buf + 9);
        int fresh = count_marks(buf, len) - count_marks(c->tail, c->tail_len);
        double t = now_s();
        for (int i = 0; i < fresh && c->seen < 32; i++)
            times[(size_t)c->seen++ * n + index] = t;
        c->tail_len = len < sizeof mark - 1 ? len : sizeof mark - 1;
        memcpy(c->tail, buf + len - c->tail_len, c->tail_len);
    }
}

static int connect_one(int port, const char *request)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        write(fd, request, strlen(request)) != (ssize_t)strlen(request)) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, O_NONBLOCK);
    return fd;
}

int main(int argc, char **argv)
{
    if (argc != 4)
        return 2;
    int port = atoi(argv[1]);
    size_t n = (size_t)atol(argv[3]);
    struct rlimit lim;
    getrlimit(RLIMIT_NOFILE, &lim);
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
    char request[2048];
    snprintf(request, sizeof request,
             "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: text/event-stream\r\n\r\n", argv[2],
             port);
    struct conn *conns = calloc(n, sizeof *conns);
    double *times = calloc(32 * n, sizeof *times);
    int ep = epoll_create1(0);
    if (conns == NULL || times == NULL || ep < 0)
        return 1;
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = n};
    epoll_ctl(ep, EPOLL_CTL_ADD, 0, &ev);
    struct epoll_event ready[MAX_EVENTS];
    double deadline = now_s() + 60;
    size_t opened = 0, answered = 0;
    while (answered < n && now_s() < deadline) {
        for (; opened < n && opened < answered + BATCH; opened++) {
            conns[opened].fd = connect_one(port, request);
            if (conns[opened].fd < 0) {
                conns[opened].status = -1;
                continue;
            }
            ev = (struct epoll_event){.events = EPOLLIN, .data.u64 = opened};
            epoll_ctl(ep, EPOLL_CTL_ADD, conns[opened].fd, &ev);
        }
        int k = epoll_wait(ep, ready, MAX_EVENTS, 100);
        for (int i = 0; i < k; i++)
            if (ready[i].data.u64 < n && conns[ready[i].data.u64].fd >= 0)
                drain(&conns[ready[i].data.u64], ready[i].data.u64, times, n);
        answered = 0;
        for (size_t i = 0; i < opened; i++)
            answered += conns[i].status != 0;
    }
    size_t ok = 0;
    for (size_t i = 0; i < n; i++)
        ok += conns[i].status == 200;
    printf("OPEN %zu %zu\n", ok, n - ok);
    fflush(stdout);
    for (;;) {
        int k = epoll_wait(ep, ready, MAX_EVENTS, 1000);
        for (int i = 0; i < k; i++) {
            size_t idx = ready[i].data.u64;
            if (idx == n) {
                char buf[256];
                if (read(0, buf, sizeof buf) <= 0)
                    goto report;
            } else if (conns[idx].fd >= 0) {
                drain(&conns[idx], idx, times, n);
            }
        }
    }
report:
    for (size_t e = 0; e < 32; e++) {
        size_t got = 0;
        for (size_t i = 0; i < n; i++)
            got += conns[i].seen > (int)e;
        if (got == 0)
            break;
        printf("EV %zu", e + 1);
        for (size_t i = 0; i < n; i++)
            if (conns[i].seen > (int)e)
                printf(" %.6f", times[e * n + i]);
        printf("\n");
    }
    return 0;
}
