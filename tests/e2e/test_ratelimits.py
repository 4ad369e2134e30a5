"""test_ratelimits.py - the waitlist and the rate limits of every surface.

Each limit is one budget per client across all workers (two workers, a new
connection per request, so the kernel spreads them); limited routes carry
RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset, and a refusal is
429 with an integer Retry-After in the surface's own body. X-Forwarded-For
names the client only when the peer is a trusted proxy.
"""

import json

import harness
from flagfixture import FlagTestCase
from test_evaluation import Fixture

LIMIT = 5
WAITLIST = "/v1/waitlist"


def submit(server, body, forwarded=None):
    headers = {"X-Forwarded-For": forwarded} if forwarded else None
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return server.request("POST", WAITLIST, body=raw,
                          headers={"Content-Type": "application/json", **(headers or {})})


class RateLimitTestCase(FlagTestCase):

    def assertLimited(self, response, body_check):
        self.assertEqual(response.status, 429, response)
        retry = response.headers.get("Retry-After")
        self.assertIsNotNone(retry)
        self.assertTrue(retry.isdigit() and int(retry) >= 1, retry)
        self.assertEqual(response.headers.get("RateLimit-Limit"), str(LIMIT))
        self.assertEqual(response.headers.get("RateLimit-Remaining"), "0")
        body_check(response)

    def assertBudgetHeaders(self, responses):
        remaining = [int(r.headers["RateLimit-Remaining"]) for r in responses]
        self.assertEqual(remaining, list(range(LIMIT - 1, -1, -1)), remaining)
        for r in responses:
            self.assertEqual(r.headers["RateLimit-Limit"], str(LIMIT))
            self.assertTrue(r.headers["RateLimit-Reset"].isdigit())


class RateLimitTest(RateLimitTestCase):
    settings = {"ratelimit_waitlist": LIMIT, "ratelimit_management": LIMIT,
                "ratelimit_evaluation": LIMIT, "trusted_proxies": "192.0.2.1 127.0.0.1"}

    @classmethod
    def prepare(cls):
        super().prepare()
        fixture = Fixture(cls.database.conninfo)
        fixture.flag("limited-flag")
        cls.sdk_key, _ = fixture.sdk_key()
        cls.probe_key, _ = fixture.sdk_key()  # its own budget: waits for the snapshot

    def test_waitlist_rules(self):
        client = "198.51.100.1"
        ok = submit(self.server, {"email": "Jane.Doe@Example.com"}, client)
        self.assertEqual((ok.status, ok.json), (200, {"accepted": True}), ok)
        again = submit(self.server, {"email": "jane.doe@example.COM"}, client)
        self.assertEqual((again.status, again.json), (200, {"accepted": True}), again)
        self.assertEqual(self.database.query(
            "SELECT count(*) FROM waitlist WHERE lower(email) = 'jane.doe@example.com'"), "1")
        for name, body in {"not an email": {"email": "not-an-email"},
                           "too long": {"email": "a" * 64 + "@" + "b" * 63 + "." + "c" * 200},
                           }.items():
            with self.subTest(name):
                response = submit(self.server, body, "198.51.100.2")
                self.assertEqual(response.status, 422, response)
                self.assertIn("email", response.json["errors"])
        for name, body in {"missing": {}, "unknown field": {"email": "x@y.zz", "name": "x"},
                           "wrong type": {"email": 42},
                           "sql": {"email": "x'; DROP TABLE waitlist; --@example.com"}}.items():
            with self.subTest(name):
                response = submit(self.server, body, "198.51.100.3")
                self.assertEqual(response.status, 422, response)
        self.assertEqual(submit(self.server, b'{"email": "a\\u0000@b.co"}', "198.51.100.4")
                         .status, 422)
        self.assertEqual(submit(self.server, b'{"email": ', "198.51.100.4").status, 400)

    def test_waitlist_counts_every_submission_across_workers(self):
        client = "203.0.113.7"
        bodies = [{"email": "bad"}, {"email": f"w{0}@example.org"}, {"email": "bad"},
                  {"email": "w1@example.org"}, {"email": "bad"}]
        responses = [submit(self.server, b, client) for b in bodies]
        self.assertEqual([r.status for r in responses], [422, 200, 422, 200, 422])
        self.assertBudgetHeaders(responses)
        refused = submit(self.server, {"email": "w2@example.org"}, client)
        self.assertLimited(refused, lambda r: self.assertV1Error(r, 429))
        self.assertEqual(self.database.query(
            "SELECT count(*) FROM waitlist WHERE email = 'w2@example.org'"), "0")
        # Another client has its own budget.
        self.assertEqual(submit(self.server, {"email": "w3@example.org"}, "203.0.113.8").status,
                         200)

    def test_forwarded_for_is_read_from_the_right(self):
        # The peer (127.0.0.1) and 192.0.2.1 are trusted proxies: the client is
        # the rightmost untrusted entry; what it wrote further left is ignored.
        client = "203.0.113.50"
        for i in range(LIMIT):
            spoof = f"10.9.9.{i}, {client}, 192.0.2.1"
            self.assertEqual(submit(self.server, {"email": "bad"}, spoof).status, 422)
        refused = submit(self.server, {"email": "bad"}, f"10.1.1.1,{client}")
        self.assertEqual(refused.status, 429, refused)

    def test_management_writes_per_token(self):
        token = self.tokens["member"]
        responses = [self.create_flag(f"limited-{i}") for i in range(LIMIT)]
        self.assertEqual([r.status for r in responses], [201] * LIMIT)
        self.assertBudgetHeaders(responses)
        self.assertLimited(self.create_flag("one-too-many"), lambda r: self.assertV1Error(r, 429))
        self.assertEqual(self.server.get("/v1/orgs/acme/flags", token=token).status, 200)
        self.assertEqual(self.create_flag("other-token", token="admin").status, 201)

    def test_evaluation_per_sdk_key(self):
        headers = {"Authorization": f"Bearer {self.sdk_key}", "Content-Type": "application/json"}
        path = "/ofrep/v1/evaluate/flags/limited-flag"
        probe = {"Authorization": f"Bearer {self.probe_key}", "Content-Type": "application/json"}
        self.assertTrue(harness.wait_for(
            lambda: self.server.request("POST", path, body=b"{}", headers=probe).status == 200,
            10.0, interval=0.1), "no snapshot was served")
        responses = [self.server.request("POST", path, body=b"{}", headers=headers)
                     for _ in range(LIMIT)]
        self.assertEqual([r.status for r in responses], [200] * LIMIT)
        self.assertBudgetHeaders(responses)

        def ofrep_body(r):
            self.assertEqual(r.json["errorCode"], "GENERAL")
            self.assertEqual(r.json["status"], 429)

        self.assertLimited(self.server.request("POST", path, body=b"{}", headers=headers),
                           ofrep_body)


class ClosedWaitlistTest(RateLimitTestCase):
    workers = 2
    settings = {"waitlist": "closed", "ratelimit_waitlist": LIMIT}

    def test_closed_waitlist_accepts_nothing_and_untrusted_forwarding_is_ignored(self):
        responses = [submit(self.server, {"email": f"c{i}@example.org"}, f"10.0.0.{i}")
                     for i in range(LIMIT)]
        self.assertEqual([(r.status, r.json) for r in responses],
                         [(200, {"accepted": False})] * LIMIT)
        self.assertBudgetHeaders(responses)  # one budget: X-Forwarded-For is not trusted
        self.assertLimited(submit(self.server, {"email": "c9@example.org"}, "10.0.0.99"),
                           lambda r: self.assertV1Error(r, 429))
        self.assertEqual(self.database.query("SELECT count(*) FROM waitlist"), "0")
