"""test_sessions.py - logins that stall nobody and cannot be forged (issue
21): POST /v1/session takes application/json only and the Origin check;
the login budget per account and per address (IPv6 per /64); scrypt off
the worker's loop (the loop answers while logins run, a full pool answers
503, a client that leaves mid-check harms nothing); PUT
/v1/session/password; an undelete revives no session (doc/api.md
"Credentials"; doc/choices.md "Internal operations, sessions, notifications").

Run by tests/e2e/run (each class has its own database and ensignd).
"""

import contextlib
import signal
import socket
import statistics
import threading
import time

import harness
from accountfixture import AccountTestCase

PASSWORD = "correct horse battery"


def make_user(case, email, password=PASSWORD):
    """A user with a password and a full personal token; returns the token."""
    config = case.server.config_path
    harness.ensignctl(config, "user", "create", "--email", email, "--name", email.split("@")[0],
                      "--password-stdin", stdin=password + "\n")
    return harness.ensignctl(config, "token", "create", "--user", email, "--name", "t", "--full")


class SessionCase(AccountTestCase):

    def login(self, email, password=PASSWORD, headers=None, content_type="application/json",
              forwarded=None):
        sent = dict(headers or {})
        if content_type is not None:
            sent["Content-Type"] = content_type
        if forwarded is not None:
            sent["X-Forwarded-For"] = forwarded
        body = ('{"email": "%s", "password": "%s"}' % (email, password)).encode()
        return self.server.request("POST", "/v1/session", body=body, headers=sent)

    def cookie_of(self, response):
        self.assertEqual(response.status, 200, response)
        return response.headers["Set-Cookie"].split(";")[0]

    def me(self, cookie, headers=None):
        return self.server.request("GET", "/v1/me", headers={"Cookie": cookie, **(headers or {})})

    def refused(self, response, status, *fields):
        """An error of the /v1 surface: {message, status, errors?}."""
        self.assertEqual(response.status, status, response)
        self.assertEqual(response.content_type.split(";")[0], "application/json", response)
        body = response.json
        self.assertEqual(body["status"], status, body)
        for field in fields:
            self.assertIn(field, body.get("errors", {}), body)
        return body

    def own_origin(self):
        return f"http://127.0.0.1:{self.server.port}"

    @contextlib.contextmanager
    def logins_running(self, email, clients=4):
        """clients threads that log email in again and again until the block
        ends; yields the list their answers' statuses are appended to."""
        stop = threading.Event()
        statuses = []

        def keep_logging_in():
            while not stop.is_set():
                statuses.append(self.login(email).status)

        threads = [threading.Thread(target=keep_logging_in) for _ in range(clients)]
        for t in threads:
            t.start()
        try:
            yield statuses
        finally:
            stop.set()
            for t in threads:
                t.join()


class LoginSafetyTest(SessionCase):
    settings = {"ratelimit_login": 1000}

    @classmethod
    def prepare(cls):
        super().prepare()
        cls.sam_token = make_user(cls, "sam@example.com")
        cls.database.query("INSERT INTO org_members (org_id, user_id, role)"
                           " SELECT o.id, u.id, 'admin' FROM orgs o, users u"
                           " WHERE o.slug = 'acme' AND u.email = 'sam@example.com'")

    def test_login_takes_json_only(self):
        for refused in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data",
                        "application/jsonx", "text/json", None):
            response = self.login("sam@example.com", content_type=refused)
            self.refused(response, 415)
            self.assertNotIn("Set-Cookie", response.headers)
        for accepted in ("application/json", "application/json; charset=utf-8",
                         "Application/JSON;charset=UTF-8", "application/json ; x=y"):
            self.cookie_of(self.login("sam@example.com", content_type=accepted))

    def test_login_origin_check(self):
        refused = [{"Origin": "https://evil.example"}, {"Origin": "null"},
                   {"Origin": f"https://127.0.0.1:{self.server.port}"},
                   {"Origin": "http://127.0.0.1:1"},
                   {"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"},
                   {"Sec-Fetch-Site": "none"},
                   {"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}]
        for headers in refused:
            response = self.login("sam@example.com", headers=headers)
            self.refused(response, 403)
            self.assertNotIn("Set-Cookie", response.headers, headers)
        accepted = [{}, {"Origin": self.own_origin()}, {"Sec-Fetch-Site": "same-origin"},
                    {"Origin": self.own_origin(), "Sec-Fetch-Site": "same-origin"},
                    {"Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1:1"},
                    {"Origin": f"https://127.0.0.1:{self.server.port}",
                     "X-Forwarded-Proto": "https"}]
        for headers in accepted:
            self.cookie_of(self.login("sam@example.com", headers=headers))

    def test_cookie_unsafe_methods_need_own_origin(self):
        cookie = self.cookie_of(self.login("sam@example.com"))
        foreign = {"Cookie": cookie, "Origin": "https://evil.example"}
        self.assertEqual(self.me(cookie, {"Origin": "https://evil.example"}).status, 200)
        self.refused(self.server.request("DELETE", "/v1/session", headers=foreign), 403)
        self.refused(self.server.request("PUT", "/v1/session/password", headers=foreign,
                                               body={"current": PASSWORD, "new": "x" * 12}), 403)
        self.assertEqual(self.me(cookie).status, 200)  # neither went through
        out = self.server.request("DELETE", "/v1/session",
                                  headers={"Cookie": cookie, "Sec-Fetch-Site": "same-origin"})
        self.assertEqual(out.status, 200, out)
        self.assertEqual(self.me(cookie).status, 401)

    def test_cross_site_writes_with_the_cookie_on_every_surface(self):
        """The dashboard's writes (/v1, the unprefixed routes, /ai) with the
        cookie: a form posted from another site is a 403 and changes
        nothing; the same origin goes through; a bearer token is unaffected
        by Origin."""
        cookie = self.cookie_of(self.login("sam@example.com"))
        form = {"Cookie": cookie, "Origin": "http://evil.example",
                "Content-Type": "application/x-www-form-urlencoded"}
        for method, path, body in (
                ("POST", "/v1/orgs/acme/flags", b"slug=evil"),
                ("POST", "/ai/actions/execute", b'{"org_id":"acme","tool":"create_flag",'
                                                b'"input":{"slug":"evil"}}'),
                ("POST", "/orgs/acme/invitations", b'{"login":"x@example.com"}'),
                ("DELETE", "/orgs/acme/members/00000000-0000-0000-0000-000000000000", None)):
            response = self.server.request(method, path, headers=form, body=body)
            self.assertEqual(response.status, 403, (path, response))
        cross = {"Cookie": cookie, "Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"}
        response = self.server.request("POST", "/v1/orgs/acme/flags", headers=cross,
                                       body=b'{"slug": "evil"}')
        self.assertEqual(response.status, 403, response)
        bearer = {"Authorization": f"Bearer {self.sam_token}"}
        self.assertEqual(self.server.request("GET", "/v1/orgs/acme/flags/evil",
                                             headers=bearer).status, 404)
        same = {"Cookie": cookie, "Sec-Fetch-Site": "same-origin",
                "Content-Type": "application/json"}
        response = self.server.request("POST", "/v1/orgs/acme/flags", headers=same,
                                       body=b'{"slug": "fine"}')
        self.assertEqual(response.status, 201, response)
        response = self.server.request("POST", "/v1/orgs/acme/flags",
                                       headers={**bearer, "Origin": "http://evil.example",
                                                "Content-Type": "application/json"},
                                       body=b'{"slug": "fine-too"}')
        self.assertEqual(response.status, 201, response)

    def test_client_gone_while_scrypt_runs(self):
        body = b'{"email": "sam@example.com", "password": "correct horse battery"}'
        request = (b"POST /v1/session HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                   % (len(body), body))
        for _ in range(10):
            with socket.create_connection(("127.0.0.1", self.server.port)) as s:
                s.sendall(request)
                time.sleep(0.005)  # the check is queued or running; then the client leaves
        time.sleep(1.0)
        self.cookie_of(self.login("sam@example.com"))
        self.assertEqual(self.server.get("/v1/healthz").status, 200)
        self.assertEqual(harness.sanitizer_reports(self.server.stderr()), [])


class LoginLimitTest(SessionCase):
    """ratelimit_login = 5; the test client speaks through a trusted proxy
    (X-Forwarded-For), so one test can come from many addresses."""
    settings = {"ratelimit_login": 5, "trusted_proxies": "127.0.0.1"}

    @classmethod
    def prepare(cls):
        super().prepare()
        cls.sam_token = make_user(cls, "sam@example.com")
        cls.database.query("INSERT INTO org_members (org_id, user_id, role)"
                           " SELECT o.id, u.id, 'admin' FROM orgs o, users u"
                           " WHERE o.slug = 'acme' AND u.email = 'sam@example.com'")
        make_user(cls, "kim@example.com")

    def test_account_budget_across_addresses(self):
        for i in range(5):
            self.assertEqual(self.login("Sam@Example.com", "guess %d" % i,
                                        forwarded=f"198.51.100.{i + 1}").status, 401)
        limited = self.login("sam@example.com", forwarded="198.51.100.50")
        self.refused(limited, 429)
        self.assertGreaterEqual(int(limited.headers["Retry-After"]), 1)
        # a fresh address and another account: not limited
        self.cookie_of(self.login("kim@example.com", forwarded="198.51.100.51"))

    def test_ipv6_addresses_count_per_64(self):
        for i in range(5):
            response = self.login(f"nobody{i}@example.com", forwarded=f"2001:db8:0:1::{i + 1}")
            self.assertEqual(response.status, 401, response)
        self.refused(self.login("nobody9@example.com",
                                      forwarded="2001:db8:0:1:ffff:ffff:ffff:ffff"), 429)
        self.assertEqual(self.login("nobody8@example.com", forwarded="2001:db8:0:2::1").status,
                         401)
        # IPv4 addresses stay one by one
        for i in range(5):
            self.login(f"v4-{i}@example.com", forwarded="203.0.113.1")
        self.refused(self.login("v4-9@example.com", forwarded="203.0.113.1"), 429)
        self.assertEqual(self.login("v4-8@example.com", forwarded="203.0.113.2").status, 401)

    def test_zz_wrong_current_password_counts_against_the_account(self):
        token = make_user(self, "lee@example.com")
        for i in range(5):
            response = self.call("PUT", "/v1/session/password", token,
                                 body={"current": "guess %d" % i, "new": "new password 1"})
            self.refused(response, 403)
        self.refused(self.login("lee@example.com", forwarded="198.51.100.77"), 429)


class LoginPoolTest(SessionCase):
    """One worker: scrypt must not hold up its loop."""
    workers = 1
    settings = {"ratelimit_login": 0}

    @classmethod
    def prepare(cls):
        super().prepare()
        cls.sam_token = make_user(cls, "sam@example.com")
        cls.database.query("INSERT INTO org_members (org_id, user_id, role)"
                           " SELECT o.id, u.id, 'admin' FROM orgs o, users u"
                           " WHERE o.slug = 'acme' AND u.email = 'sam@example.com'")

    def timed(self, fn):
        started = time.monotonic()
        result = fn()
        return time.monotonic() - started, result

    def test_the_loop_answers_while_logins_run(self):
        one_login = statistics.median(
            self.timed(lambda: self.cookie_of(self.login("sam@example.com")))[0]
            for _ in range(3))
        with self.logins_running("sam@example.com") as statuses:
            time.sleep(0.2)
            waits = []
            for _ in range(20):
                waits.append(self.timed(lambda: self.server.get("/v1/healthz"))[0])
                time.sleep(0.03)
        self.assertTrue(statuses and set(statuses) <= {200}, statuses)
        # scrypt on the loop would hold each probe for up to one check
        # (four clients keep it busy); off the loop they pass at once.
        p90 = sorted(waits)[17]
        self.assertLess(p90, one_login / 2,
                        f"healthz p90 {p90 * 1000:.1f} ms, one login {one_login * 1000:.1f} ms")

    def test_a_full_pool_answers_503(self):
        results = []

        def one():
            results.append(self.login("sam@example.com"))

        threads = [threading.Thread(target=one) for _ in range(80)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        statuses = [r.status for r in results]
        self.assertIn(503, statuses)
        self.assertIn(200, statuses)
        self.assertTrue(set(statuses) <= {200, 503}, statuses)
        for r in results:
            if r.status == 503:
                self.refused(r, 503)
                self.assertGreaterEqual(int(r.headers["Retry-After"]), 1)
        time.sleep(1.5)
        self.cookie_of(self.login("sam@example.com"))


class LoginReloadTest(SessionCase):
    """Workers replaced (SIGHUP) while their helper threads check passwords:
    the old workers answer what they hold and join their threads; the
    class's clean stop fails on any sanitizer report."""
    settings = {"ratelimit_login": 0}

    @classmethod
    def prepare(cls):
        super().prepare()
        cls.sam_token = make_user(cls, "sam@example.com")
        cls.database.query("INSERT INTO org_members (org_id, user_id, role)"
                           " SELECT o.id, u.id, 'admin' FROM orgs o, users u"
                           " WHERE o.slug = 'acme' AND u.email = 'sam@example.com'")

    def worker_pids(self):
        return {pid for pid, title in self.server.children().items() if "worker" in title}

    def test_reload_with_logins_in_flight(self):
        old = self.worker_pids()
        self.assertTrue(old, self.server.children())
        with self.logins_running("sam@example.com") as statuses:
            time.sleep(0.3)
            self.server.signal(signal.SIGHUP)
            replaced = harness.wait_for(lambda: self.worker_pids() and not self.worker_pids() & old, 10.0)
            time.sleep(0.3)
        self.assertTrue(replaced, self.server.children())
        self.assertIn(200, statuses)
        self.assertTrue(set(statuses) <= {200, 503}, statuses)
        self.cookie_of(self.login("sam@example.com"))
        self.assertEqual(harness.sanitizer_reports(self.server.stderr()), [])


class PasswordChangeTest(SessionCase):
    settings = {"ratelimit_login": 1000}

    @classmethod
    def prepare(cls):
        super().prepare()
        cls.internal_key = harness.ensignctl(cls.server.config_path, "internal-key", "create",
                                             "--name", "dashboard")

    def change(self, body, token=None, cookie=None, headers=None):
        sent = dict(headers or {})
        if cookie is not None:
            sent["Cookie"] = cookie
        return self.call("PUT", "/v1/session/password", token, body=body, headers=sent)

    def test_change_with_a_cookie_keeps_it_and_ends_the_others(self):
        make_user(self, "ann@example.com")
        mine = self.cookie_of(self.login("ann@example.com"))
        other = self.cookie_of(self.login("ann@example.com"))
        self.ack(self.change({"current": PASSWORD, "new": "a new password"}, cookie=mine,
                             headers={"Origin": self.own_origin()}))
        self.assertEqual(self.me(mine).status, 200)
        self.assertEqual(self.me(other).status, 401)
        self.assertEqual(self.login("ann@example.com").status, 401)
        self.cookie_of(self.login("ann@example.com", "a new password"))

    def test_change_with_a_token_ends_every_session(self):
        token = make_user(self, "ben@example.com")
        cookie = self.cookie_of(self.login("ben@example.com"))
        self.ack(self.change({"current": PASSWORD, "new": "é" * 1024}, token))
        self.assertEqual(self.me(cookie).status, 401)
        self.cookie_of(self.login("ben@example.com", "é" * 1024))
        self.assertEqual(self.call("GET", "/me", token).status, 200)  # tokens stay

    def test_wrong_current_and_bad_new(self):
        token = make_user(self, "cat@example.com")
        self.refused(self.change({"current": "wrong one", "new": "a new password"}, token), 403)
        self.refused(self.change({"current": PASSWORD, "new": "7 chars"}, token), 422, "new")
        self.refused(self.change({"current": PASSWORD, "new": "x" * 1025}, token), 422, "new")
        self.refused(self.change({"current": PASSWORD, "new": 12345678}, token), 422, "new")
        self.refused(self.change({"current": PASSWORD}, token), 422, "new")
        self.refused(self.change({"new": "a new password"}, token), 422, "current")
        self.refused(self.change({"current": PASSWORD, "new": "a new password", "x": 1}, token),
                     422)
        self.cookie_of(self.login("cat@example.com"))  # unchanged
        self.refused(self.change({"current": PASSWORD, "new": "a new password"}, "org"), 403)
        self.refused(self.change({"current": PASSWORD, "new": "a new password"}), 401)
        self.refused(self.change({"current": PASSWORD, "new": "a new password"},
                                 cookie="ensign_session=svc_ses_" + "x" * 43), 401)

    def test_user_without_password(self):
        self.refused(self.change({"current": "anything at all", "new": "a new password"},
                                 "member"), 403)

    def test_openapi_lists_the_route(self):
        paths = self.server.get("/openapi.json").json["paths"]
        self.assertIn("put", paths["/v1/session/password"])

    def test_undelete_revives_no_session(self):
        token = make_user(self, "dee@example.com")
        cookie = self.cookie_of(self.login("dee@example.com"))
        key = {"Ensign-Internal-Key": self.internal_key}
        self.ack(self.call("PUT", "/me/deleted", token, body={"deleted": True}, headers=key))
        self.assertEqual(self.me(cookie).status, 401)
        self.ack(self.call("PUT", "/me/deleted", token, body={"deleted": False}, headers=key))
        self.assertEqual(self.me(cookie).status, 401)
        self.assertEqual(self.me(self.cookie_of(self.login("dee@example.com"))).status, 200)
