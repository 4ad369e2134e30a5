"""test_metrics.py - end-to-end tests of GET /metrics (doc/choices.md
"Metrics") and of the log lines (one key=value line per event, the access log).

MetricsTest reads /metrics before and after evaluations, a rate-limited
burst (ratelimit_evaluation is low here) and a worker killed with
SIGKILL, and checks that each counter moved by what was done, whichever
worker answered the scrape. MetricsListenTest checks that with
metrics_listen set, /metrics answers there only. DatabaseErrorsTest runs a
server against a database that does not exist. AccessLogTest checks the
access log (method, path without its query, status, duration, bytes), that
no credential reaches the log, and access_log = off.

Run by tests/e2e/run.
"""

import os
import re
import signal
import time
import unittest

import harness
from test_evaluation import FLAG_PATH, OfrepTestCase

SAMPLE = re.compile(r'^(ensign_[a-z_]+)(\{[a-z]+="[a-z0-9_]+"(,[a-z]+="[a-z0-9_]+")*\})? '
                    r'(-?[0-9]+(\.[0-9]+)?)$')
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def parse_metrics(testcase, text):
    """{'name{labels}': value} of a Prometheus text body; checks every line."""
    samples, typed = {}, set()
    for line in text.splitlines():
        if line.startswith("# HELP "):
            continue
        if line.startswith("# TYPE "):
            name, kind = line.split()[2:4]
            testcase.assertIn(kind, ("counter", "gauge"), line)
            if kind == "counter":
                testcase.assertTrue(name.endswith("_total"), line)
            typed.add(name)
            continue
        match = SAMPLE.match(line)
        testcase.assertIsNotNone(match, f"not a sample line: {line!r}")
        testcase.assertIn(match.group(1), typed, f"sample before its TYPE: {line}")
        samples[line.rsplit(" ", 1)[0]] = float(match.group(4))
    return samples


def scrape(testcase, port):
    response = harness.http_request(port, "GET", "/metrics")
    testcase.assertEqual(response.status, 200, response.body)
    testcase.assertEqual(response.content_type, CONTENT_TYPE)
    return parse_metrics(testcase, response.body.decode())


def requests_key(cls, code):
    return f'ensign_http_requests_total{{class="{cls}",code="{code}"}}'


class MetricsTest(OfrepTestCase):
    """Counters move with evaluations, rate limits and a killed worker."""

    settings = {"ratelimit_evaluation": 20}

    @classmethod
    def create_flags(cls):
        cls.fixture.flag("counted")
        cls.fixture.flag("other")

    def metrics(self):
        return scrape(self, self.server.port)

    def assertMoved(self, before, after, key, at_least):
        self.assertGreaterEqual(after.get(key, 0) - before.get(key, 0), at_least,
                                f"{key}: {before.get(key)} -> {after.get(key)}")

    def test_no_label_has_unbounded_values(self):
        for key in self.metrics():
            self.assertNotIn("counted", key)
            self.assertNotIn("acme", key)
            self.assertNotIn("svc_", key)

    def test_snapshot_gauges(self):
        after = self.metrics()
        self.assertGreater(after["ensign_snapshot_generation"], 0)
        self.assertGreaterEqual(after["ensign_snapshot_builds_total"], 1)
        self.assertGreaterEqual(after["ensign_snapshot_age_seconds"], 0)
        self.assertLess(after["ensign_snapshot_age_seconds"], 600)
        self.assertGreater(after["ensign_snapshot_build_seconds"], 0)
        built = after["ensign_snapshot_builds_total"]
        self.fixture.flag("new-one")
        self.assertTrue(harness.wait_for(
            lambda: self.metrics()["ensign_snapshot_builds_total"] > built, 5.0),
            "a configuration change built no snapshot")

    def test_evaluations_and_requests(self):
        before = self.metrics()
        for _ in range(3):
            self.assertEqual(self.evaluate("counted").status, 200)
        self.assertEqual(self.bulk().status, 200)
        self.assertEqual(self.evaluate("no-such-flag").status, 404)
        after = self.metrics()
        # Three single evaluations, a bulk of at least the two flags, the 404 lookup.
        self.assertMoved(before, after, "ensign_flag_evaluations_total", 5)
        self.assertMoved(before, after, requests_key("evaluation", 200), 4)
        self.assertMoved(before, after, requests_key("evaluation", 404), 1)
        self.assertMoved(before, after, requests_key("meta", 200), 1)  # the first scrape
        self.assertMoved(before, after, "ensign_http_response_bytes_total", 100)

    def test_rate_limited_burst(self):
        key, _ = self.fixture.sdk_key()
        self.wait_served(lambda: self.evaluate("counted", sdk_key=key).status == 200)
        before = self.metrics()
        statuses = [self.evaluate("counted", sdk_key=key).status for _ in range(30)]
        refused = statuses.count(429)
        self.assertGreaterEqual(refused, 5, statuses)
        after = self.metrics()
        self.assertMoved(before, after, 'ensign_ratelimit_rejections_total{limit="evaluation"}',
                         refused)
        self.assertMoved(before, after, requests_key("evaluation", 429), refused)
        self.assertEqual(after['ensign_ratelimit_rejections_total{limit="management"}'],
                         before['ensign_ratelimit_rejections_total{limit="management"}'])

    def test_killed_worker_is_counted(self):
        # A child is titled "ensignd: master" until it has set its own title;
        # on a loaded machine worker 1 may still be starting.
        victim = harness.wait_for(lambda: self.server.child_with_title("ensignd: worker 1"), 10.0)
        self.assertIsNotNone(victim, self.server.children())
        before = self.metrics()
        os.kill(victim, signal.SIGKILL)
        replaced = harness.wait_for(
            lambda: (self.server.child_with_title("ensignd: worker 1") or victim) != victim, 10.0,
            interval=0.02)
        self.assertTrue(replaced, self.server.stderr())
        after = self.metrics()
        self.assertMoved(before, after, "ensign_worker_restarts_total", 1)
        # The counters of the killed worker live in shared memory: nothing is lost.
        for name, value in before.items():
            if name.endswith("_total"):
                self.assertGreaterEqual(after[name], value, name)


class MetricsListenTest(harness.ServerTestCase):
    """metrics_listen: /metrics on its own address only."""

    metrics_port = harness.free_port()
    settings = {"metrics_listen": f"127.0.0.1:{metrics_port}"}

    def test_metrics_only_on_their_address(self):
        response = self.server.get("/metrics")
        self.assertEqual(response.status, 404, response.body)
        samples = scrape(self, self.metrics_port)
        self.assertIn(requests_key("meta", 404), samples)
        other = harness.http_request(self.metrics_port, "GET", "/v1/healthz")
        self.assertEqual(other.status, 404, other.body)
        post = harness.http_request(self.metrics_port, "POST", "/metrics", body={})
        self.assertIn(post.status, (404, 405, 413), post.body)
        self.assertEqual(self.server.get("/v1/healthz").status, 200)

    def test_metrics_address_is_not_in_openapi_paths_of_listen_only(self):
        document = self.server.get("/openapi.json").json
        self.assertIn("/metrics", document["paths"])


class DatabaseErrorsTest(unittest.TestCase):
    """A database that cannot be reached counts database errors."""

    def test_unreachable_database_counts_errors(self):
        server = harness.Server("host=/nonexistent dbname=nothing", workers=1)
        try:
            server.start()
            first = scrape(self, server.port)["ensign_database_errors_total"]
            self.assertGreater(first, 0)
            self.assertTrue(harness.wait_for(
                lambda: scrape(self, server.port)["ensign_database_errors_total"] > first, 5.0))
            self.assertEqual(server.stop(), 0, server.stderr())
            self.assertEqual(server.sanitizer_reports(), [])
        finally:
            server.remove()


class AccessLogTest(OfrepTestCase):
    """The access log: one key=value line per request, never a secret."""

    settings = {"access_log": "all"}  # evaluations too (the default leaves them out)

    @classmethod
    def create_flags(cls):
        cls.fixture.flag("logged")

    def access_lines(self):
        return [line for line in self.server.stderr().splitlines() if "event=access" in line]

    def test_every_line_is_key_value(self):
        self.server.get("/v1/healthz")
        field = r'[a-z_]+=("([^"\\]|\\.)*"|[^ "]+)'
        pattern = re.compile(rf"^{field}( {field})*$")
        lines = [line for line in self.server.stderr().splitlines() if line.strip()]
        self.assertTrue(lines)
        for line in lines:
            if harness.sanitizer_reports(line):
                continue
            self.assertRegex(line, pattern)
            self.assertRegex(line, r"^ts=\S+ level=(debug|info|warn|error) role=")

    def test_access_line_fields_and_no_secrets(self):
        secret_query = "token=svc_oat_querysecret0123456789"
        cookie = "ensign_session=cookiesecret0123456789"
        response = self.server.request(
            "POST", f"{FLAG_PATH}/logged?{secret_query}", body={},
            headers={"Authorization": f"Bearer {self.sdk_key}", "Cookie": cookie})
        self.assertEqual(response.status, 200, response.body)
        self.assertEqual(self.server.get("/v1/me", token="svc_oat_notarealtoken").status, 401)
        path = f"{FLAG_PATH}/logged"
        self.assertTrue(harness.wait_for(
            lambda: any(f"path={path} " in line for line in self.access_lines()), 2.0),
            self.server.stderr())
        line = next(line for line in self.access_lines() if f"path={path} " in line)
        self.assertRegex(line, r" level=info ")
        self.assertRegex(line, rf" method=POST path={re.escape(path)} status=200 "
                               r"duration_ms=[0-9]+\.[0-9]{3} bytes=[1-9][0-9]*$")
        log = self.server.stderr()
        for secret in (self.sdk_key, "querysecret", "cookiesecret", "svc_oat_notarealtoken"):
            self.assertNotIn(secret, log)



class AccessLogOffTest(harness.ServerTestCase):
    """access_log = off: requests leave no access line, events still log."""

    settings = {"access_log": "off"}

    def test_no_access_lines(self):
        for _ in range(5):
            self.assertEqual(self.server.get("/v1/healthz").status, 200)
        self.assertEqual(self.server.get("/no/such/path").status, 404)
        time.sleep(0.2)
        log = self.server.stderr()
        self.assertNotIn("event=access", log)
        self.assertIn("level=info role=master", log)


if __name__ == "__main__":
    unittest.main()
