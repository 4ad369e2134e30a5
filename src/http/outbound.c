/*
 * outbound.c - libcurl's multi interface on a libevent base (see
 * outbound.h).
 */
#include "http/outbound.h"

#include <event2/event.h>
#include <event2/event_struct.h>
#include <stdlib.h>

struct outbound {
    struct event_base *base;
    CURLM *multi;
    struct event *timer;
};

/* What the driver keeps per transfer (the easy handle's CURLOPT_PRIVATE). */
struct job {
    outbound_done_cb done;
    void *arg;
};

/* The event of one socket curl watches. */
struct watched {
    struct event ev;
    curl_socket_t fd;
};

static struct job *job_of(CURL *easy)
{
    struct job *job = NULL;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&job);
    return job;
}

static void reap_finished(struct outbound *o)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(o->multi, &left)) != NULL) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        CURL *easy = msg->easy_handle;
        CURLcode result = msg->data.result;
        struct job *job = job_of(easy);
        curl_multi_remove_handle(o->multi, easy);
        curl_easy_setopt(easy, CURLOPT_PRIVATE, NULL);
        if (job != NULL) {
            struct job copy = *job;
            free(job);
            copy.done(copy.arg, easy, result);
        }
    }
}

static void on_socket(evutil_socket_t fd, short what, void *arg)
{
    struct outbound *o = arg;
    int flags = (what & EV_READ ? CURL_CSELECT_IN : 0) | (what & EV_WRITE ? CURL_CSELECT_OUT : 0);
    int running;
    curl_multi_socket_action(o->multi, fd, flags, &running);
    reap_finished(o);
}

static int watch_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
    (void)easy;
    struct outbound *o = userp;
    struct watched *w = socketp;
    if (what == CURL_POLL_REMOVE) {
        if (w != NULL) {
            event_del(&w->ev);
            free(w);
            curl_multi_assign(o->multi, fd, NULL);
        }
        return 0;
    }
    short events =
        EV_PERSIST | (what & CURL_POLL_IN ? EV_READ : 0) | (what & CURL_POLL_OUT ? EV_WRITE : 0);
    if (w == NULL) {
        w = calloc(1, sizeof *w);
        if (w == NULL)
            return -1;
        w->fd = fd;
        curl_multi_assign(o->multi, fd, w);
    } else {
        event_del(&w->ev);
    }
    event_assign(&w->ev, o->base, fd, events, on_socket, o);
    event_add(&w->ev, NULL);
    return 0;
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct outbound *o = arg;
    int running;
    curl_multi_socket_action(o->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    reap_finished(o);
}

static int set_timer(CURLM *multi, long timeout_ms, void *userp)
{
    (void)multi;
    struct outbound *o = userp;
    if (timeout_ms < 0) {
        evtimer_del(o->timer);
        return 0;
    }
    struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    evtimer_add(o->timer, &tv);
    return 0;
}

bool outbound_global_init(void)
{
    static bool done;
    if (!done)
        done = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
    return done;
}

struct outbound *outbound_new(struct event_base *base)
{
    struct outbound *o = calloc(1, sizeof *o);
    if (o == NULL)
        return NULL;
    o->base = base;
    o->multi = curl_multi_init();
    o->timer = evtimer_new(base, on_timer, o);
    if (o->multi == NULL || o->timer == NULL) {
        outbound_free(o);
        return NULL;
    }
    curl_multi_setopt(o->multi, CURLMOPT_SOCKETFUNCTION, watch_socket);
    curl_multi_setopt(o->multi, CURLMOPT_SOCKETDATA, o);
    curl_multi_setopt(o->multi, CURLMOPT_TIMERFUNCTION, set_timer);
    curl_multi_setopt(o->multi, CURLMOPT_TIMERDATA, o);
    return o;
}

void outbound_free(struct outbound *o)
{
    if (o == NULL)
        return;
    if (o->multi != NULL)
        curl_multi_cleanup(o->multi);
    if (o->timer != NULL)
        event_free(o->timer);
    free(o);
}

int outbound_add(struct outbound *o, CURL *easy, outbound_done_cb done, void *arg)
{
    struct job *job = malloc(sizeof *job);
    if (job == NULL)
        return -1;
    *job = (struct job){.done = done, .arg = arg};
    if (curl_easy_setopt(easy, CURLOPT_PRIVATE, job) != CURLE_OK ||
        curl_multi_add_handle(o->multi, easy) != CURLM_OK) {
        curl_easy_setopt(easy, CURLOPT_PRIVATE, NULL);
        free(job);
        return -1;
    }
    return 0;
}

void outbound_remove(struct outbound *o, CURL *easy)
{
    free(job_of(easy));
    curl_easy_setopt(easy, CURLOPT_PRIVATE, NULL);
    curl_multi_remove_handle(o->multi, easy);
}
