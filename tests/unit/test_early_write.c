/*
 * test_early_write.c - answers written in the turn of the loop that made
 * them (src/http/early_write.c), against a real evhttp on loopback: the
 * bytes are on the client's socket when the turn that answered ends, and
 * evhttp gets its connection back in every state (keep-alive, pipelined,
 * Connection: close, an answer larger than the socket takes at once).
 */
#include <arpa/inet.h>
#include <check.h>
#include <stdbool.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http/early_write.h"
#include "suites.h"

struct fixture {
    struct event_base *base;
    struct evhttp *http;
    struct early_write *ew;
    int client;
    int answered;
    size_t body_size; /* of each answer */
};

static void answer(struct evhttp_request *req, void *arg)
{
    struct fixture *f = arg;
    struct evbuffer *out = evhttp_request_get_output_buffer(req);
    char *body = malloc(f->body_size);
    memset(body, 'b', f->body_size);
    evbuffer_add(out, body, f->body_size);
    free(body);
    f->answered++;
    early_write_send_reply(f->ew, req, 200, "OK");
}

static void fixture_start(struct fixture *f, bool early, size_t body_size)
{
    memset(f, 0, sizeof *f);
    f->body_size = body_size;
    struct event_config *config = event_config_new();
    event_config_set_flag(config, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
    f->base = event_base_new_with_config(config);
    event_config_free(config);
    f->http = evhttp_new(f->base);
    evhttp_set_gencb(f->http, answer, f);
    struct evhttp_bound_socket *bound = evhttp_bind_socket_with_handle(f->http, "127.0.0.1", 0);
    ck_assert_ptr_nonnull(bound);
    struct sockaddr_in addr;
    socklen_t len = sizeof addr;
    ck_assert_int_eq(getsockname(evhttp_bound_socket_get_fd(bound), (struct sockaddr *)&addr, &len),
                     0);
    if (early)
        f->ew = early_write_new(f->base, 16);
    f->client = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_eq(connect(f->client, (struct sockaddr *)&addr, len), 0);
}

static void fixture_end(struct fixture *f)
{
    close(f->client);
    evhttp_free(f->http);
    early_write_free(f->ew);
    event_base_free(f->base);
}

static void send_text(struct fixture *f, const char *text)
{
    ck_assert_int_eq(send(f->client, text, strlen(text), 0), (ssize_t)strlen(text));
}

/* Runs turns of the loop until the handler has answered `count` requests. */
static void turn_until_answered(struct fixture *f, int count)
{
    for (int turn = 0; turn < 1000 && f->answered < count; turn++)
        event_base_loop(f->base, EVLOOP_ONCE);
    ck_assert_int_eq(f->answered, count);
}

/* A few turns of the loop that wait for nothing (writes due get done). */
static void turn_without_waiting(struct fixture *f)
{
    for (int turn = 0; turn < 10; turn++)
        event_base_loop(f->base, EVLOOP_NONBLOCK);
}

/* What the client can read now, without waiting. */
static size_t read_now(struct fixture *f, char *buf, size_t room)
{
    ssize_t n = recv(f->client, buf, room, MSG_DONTWAIT);
    return n > 0 ? (size_t)n : 0;
}

static const char *const GET = "GET /a HTTP/1.1\r\nHost: test\r\n\r\n";

START_TEST(answer_is_on_the_socket_when_its_turn_ends)
{
    struct fixture f;
    fixture_start(&f, true, 5);
    send_text(&f, GET);
    turn_until_answered(&f, 1);
    ck_assert_uint_eq(early_write_pending(f.ew), 0);
    char buf[4096];
    size_t n = read_now(&f, buf, sizeof buf - 1);
    buf[n] = '\0';
    ck_assert_msg(strncmp(buf, "HTTP/1.1 200 OK\r\n", 17) == 0, "read: %s", buf);
    ck_assert_msg(n > 5 && memcmp(buf + n - 5, "bbbbb", 5) == 0, "read: %s", buf);
    /* keep-alive: evhttp has the connection back and answers the next */
    send_text(&f, GET);
    turn_until_answered(&f, 2);
    ck_assert_uint_gt(read_now(&f, buf, sizeof buf), 0);
    fixture_end(&f);
}
END_TEST

START_TEST(without_early_write_the_answer_waits_a_turn)
{
    struct fixture f;
    fixture_start(&f, false, 5);
    send_text(&f, GET);
    turn_until_answered(&f, 1);
    char buf[4096];
    ck_assert_uint_eq(read_now(&f, buf, sizeof buf), 0); /* the write event has not run */
    turn_without_waiting(&f);
    ck_assert_uint_gt(read_now(&f, buf, sizeof buf), 0);
    fixture_end(&f);
}
END_TEST

START_TEST(pipelined_requests_answered_in_order)
{
    struct fixture f;
    fixture_start(&f, true, 3);
    send_text(&f, "GET /1 HTTP/1.1\r\nHost: t\r\n\r\nGET /2 HTTP/1.1\r\nHost: t\r\n\r\n");
    turn_until_answered(&f, 2);
    turn_without_waiting(&f);
    char buf[4096];
    size_t n = read_now(&f, buf, sizeof buf - 1);
    buf[n] = '\0';
    char *second = strstr(buf + 1, "HTTP/1.1 200 OK");
    ck_assert_msg(strncmp(buf, "HTTP/1.1 200 OK", 15) == 0 && second != NULL, "read: %s", buf);
    fixture_end(&f);
}
END_TEST

START_TEST(connection_close_is_closed_after_the_answer)
{
    struct fixture f;
    fixture_start(&f, true, 4);
    send_text(&f, "GET /a HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    turn_until_answered(&f, 1);
    ck_assert_uint_eq(early_write_pending(f.ew), 0);
    char buf[4096];
    size_t total = 0;
    for (;;) { /* the answer, then the end of the stream */
        ssize_t n = recv(f.client, buf + total, sizeof buf - 1 - total, 0);
        ck_assert_int_ge(n, 0);
        if (n == 0)
            break;
        total += (size_t)n;
    }
    buf[total] = '\0';
    ck_assert_msg(total > 4 && memcmp(buf + total - 4, "bbbb", 4) == 0, "read: %s", buf);
    fixture_end(&f);
}
END_TEST

/* Turns the loop and reads until the client has `want` bytes or about
 * ten seconds went by (a window update may wait for a delayed ACK). */
static size_t read_until(struct fixture *f, char *buf, size_t room, size_t want)
{
    size_t total = 0;
    for (int turn = 0; turn < 10000 && total < want; turn++) {
        event_base_loop(f->base, EVLOOP_NONBLOCK);
        size_t n = read_now(f, buf + total, room - total);
        if (n == 0)
            usleep(1000);
        total += n;
    }
    return total;
}

START_TEST(answer_larger_than_the_socket_takes_finishes_by_the_write_event)
{
    enum { BIG = 1024 * 1024 };
    struct fixture f;
    fixture_start(&f, true, BIG);
    int small = 65536;
    setsockopt(f.client, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    send_text(&f, GET);
    turn_until_answered(&f, 1);
    char *buf = malloc(BIG + 4096);
    size_t total = read_now(&f, buf, BIG + 4096); /* a part, written in the answering turn */
    ck_assert_uint_gt(total, 0);
    ck_assert_uint_lt(total, BIG);
    if (total < 4096) /* the head, at least */
        total += read_until(&f, buf + total, BIG + 4096 - total, 4096 - total);
    char *body = memmem(buf, total, "\r\n\r\n", 4);
    ck_assert_ptr_nonnull(body);
    body += 4;
    size_t head = (size_t)(body - buf);
    total += read_until(&f, buf + total, BIG + 4096 - total, head + BIG - total);
    ck_assert_uint_eq(total - head, BIG);
    /* and the connection serves the next request */
    f.body_size = 2;
    send_text(&f, GET);
    turn_until_answered(&f, 2);
    free(buf);
    fixture_end(&f);
}
END_TEST

START_TEST(a_full_list_sends_the_usual_way)
{
    struct fixture f;
    fixture_start(&f, false, 2);
    f.ew = early_write_new(f.base, 1);
    int second = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr;
    socklen_t len = sizeof addr;
    getpeername(f.client, (struct sockaddr *)&addr, &len);
    ck_assert_int_eq(connect(second, (struct sockaddr *)&addr, len), 0);
    send_text(&f, GET);
    ck_assert_int_eq(send(second, GET, strlen(GET), 0), (ssize_t)strlen(GET));
    turn_until_answered(&f, 2); /* one remembered, one the usual way */
    turn_without_waiting(&f);
    char buf[1024];
    ck_assert_uint_gt(read_now(&f, buf, sizeof buf), 0);
    ck_assert_int_gt(recv(second, buf, sizeof buf, MSG_DONTWAIT), 0);
    close(second);
    fixture_end(&f);
}
END_TEST

Suite *suite_early_write(void)
{
    Suite *s = suite_create("early_write");
    TCase *tc = tcase_create("early_write");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, answer_is_on_the_socket_when_its_turn_ends);
    tcase_add_test(tc, without_early_write_the_answer_waits_a_turn);
    tcase_add_test(tc, pipelined_requests_answered_in_order);
    tcase_add_test(tc, connection_close_is_closed_after_the_answer);
    tcase_add_test(tc, answer_larger_than_the_socket_takes_finishes_by_the_write_event);
    tcase_add_test(tc, a_full_list_sends_the_usual_way);
    suite_add_tcase(s, tc);
    return s;
}
