"""test_healthz.py - /v1/healthz tells the truth.

Healthz answers 200 {status: ok} while the node can serve what the
database holds, and 503 {status: degraded, checks: [...]} with an integer
Retry-After when it cannot: the snapshot cannot be written (state_dir
removed; at once), a newer generation has waited longer than the stale
limit (max(3 x refresh_interval_ms, 5 s)), or the database has been out of
reach for longer than healthz_database_timeout_ms. Each check clears itself
when its cause goes away, and healthz never touches the database. /metrics
shows the same as ensign_health_check_failing{check=...}.
"""

import os
import shutil
import time
import unittest

import harness
from test_evaluation import FLAG_PATH, OfrepTestCase

REFRESH_MS = 200
STALE_LIMIT_S = 5.0  # max(3 x REFRESH_MS, 5 s)
DATABASE_TIMEOUT_MS = 2000


class HealthzCase(OfrepTestCase):
    settings = {"refresh_interval_ms": REFRESH_MS,
                "healthz_database_timeout_ms": DATABASE_TIMEOUT_MS}

    @classmethod
    def create_flags(cls):
        cls.flag_id = cls.fixture.flag("health-flag")

    def healthz(self):
        return self.server.get("/v1/healthz")

    def failing(self, response):
        """{name: check} of a degraded answer (asserting its shape)."""
        self.assertEqual(response.status, 503, response)
        self.assertJsonContentType(response)
        body = response.json
        self.assertEqual(set(body), {"status", "version", "time", "checks"}, body)
        self.assertEqual(body["status"], "degraded")
        self.assertRegex(response.headers.get("Retry-After", ""), r"^[1-9][0-9]*$")
        checks = {}
        for check in body["checks"]:
            self.assertEqual(set(check), {"name", "failing_for_ms", "reason"}, check)
            self.assertIsInstance(check["failing_for_ms"], int)
            self.assertGreaterEqual(check["failing_for_ms"], 0)
            self.assertTrue(check["reason"], check)
            checks[check["name"]] = check
        return checks

    def assertHealthy(self, response):
        self.assertEqual(response.status, 200, response)
        self.assertEqual(set(response.json), {"status", "version", "time"}, response.json)
        self.assertEqual(response.json["status"], "ok")

    def wait_status(self, status, timeout):
        response = harness.wait_for(
            lambda: (lambda r: r if r.status == status else None)(self.healthz()), timeout, 0.1)
        self.assertIsNotNone(response, f"healthz did not answer {status} within {timeout} s:\n"
                                       f"{self.healthz()}\n{self.server.stderr()[-3000:]}")
        return response

    def gauge(self, check):
        """ensign_health_check_failing{check=...} of /metrics."""
        text = self.server.get("/metrics").body.decode()
        line = f'ensign_health_check_failing{{check="{check}"}} '
        values = [row[len(line):] for row in text.splitlines() if row.startswith(line)]
        self.assertEqual(len(values), 1, text)
        return int(values[0])

    def served_enabled(self):
        response = self.evaluate("health-flag", body={"context": {"targetingKey": "u"}})
        self.assertEqual(response.status, 200, response)
        return response.json["value"]


class SnapshotWriteTest(HealthzCase):
    """state_dir removed, a flag changed: 503 naming snapshot_write at once,
    snapshot_stale after the stale limit; state_dir back: 200, the change served."""

    def test_state_dir_removed_then_restored(self):
        self.assertHealthy(self.healthz())
        self.assertEqual(self.served_enabled(), True)
        # Every worker maps the published files before they go: one that
        # follows the publication on its heartbeat may not have yet, and
        # with state_dir gone it would have nothing to serve (one request
        # per new connection reaches both workers' sockets; the wait
        # covers heartbeats a loaded machine delays).
        for _ in range(16):
            self.assertEqual(self.served_enabled(), True)
        time.sleep(1.0)
        state_dir = self.server.state_dir
        shutil.rmtree(state_dir)
        try:
            self.fixture.set_enabled(self.flag_id, False)
            started = time.monotonic()
            checks = self.failing(self.wait_status(503, 3.0))
            self.assertIn("snapshot_write", checks)
            self.assertIn("cannot write the snapshot", checks["snapshot_write"]["reason"])
            self.assertNotIn("database", checks)
            self.assertEqual(self.gauge("snapshot_write"), 1)
            self.assertEqual(self.gauge("database"), 0)
            if time.monotonic() - started < STALE_LIMIT_S - 1:
                self.assertNotIn("snapshot_stale", checks)  # not before its limit
            stale = harness.wait_for(
                lambda: "snapshot_stale" in self.failing(self.healthz()), STALE_LIMIT_S + 3, 0.2)
            self.assertTrue(stale, "snapshot_stale did not join snapshot_write")
            self.assertGreaterEqual(time.monotonic() - started, STALE_LIMIT_S - 0.5)
            # evaluation still answers from the mapped snapshot meanwhile
            self.assertEqual(self.served_enabled(), True)
        finally:
            os.makedirs(state_dir, exist_ok=True)
        self.assertHealthy(self.wait_status(200, 5.0))
        self.assertEqual(self.gauge("snapshot_write"), 0)
        self.assertEqual(self.gauge("snapshot_stale"), 0)
        served = harness.wait_for(lambda: self.served_enabled() is False, 5.0, 0.1)
        self.assertTrue(served, "the change was not served after state_dir came back")
        self.assertTrue(os.listdir(state_dir), "no snapshot written again")
        self.assertEqual(self.server.sanitizer_reports(), [])


class DatabaseDownTest(HealthzCase):
    """PostgreSQL stopped: 200 until healthz_database_timeout_ms passed, then
    503 naming database; PostgreSQL started: 200 again."""

    def test_database_stopped_then_started(self):
        self.assertHealthy(self.healthz())
        harness.stop_postgres()
        stopped = time.monotonic()
        try:
            self.assertHealthy(self.healthz())  # within the timeout
            response = self.wait_status(503, DATABASE_TIMEOUT_MS / 1000 + 5)
            self.assertGreaterEqual(time.monotonic() - stopped, DATABASE_TIMEOUT_MS / 1000 - 0.3)
            checks = self.failing(response)
            self.assertEqual(set(checks), {"database"}, checks)
            self.assertGreaterEqual(checks["database"]["failing_for_ms"], DATABASE_TIMEOUT_MS)
            self.assertEqual(self.gauge("database"), 1)
            self.assertEqual(self.served_enabled(), True)  # evaluation keeps serving
        finally:
            harness.start_postgres()
        self.assertHealthy(self.wait_status(200, 15.0))
        self.assertEqual(self.gauge("database"), 0)


class DatabaseCheckOffTest(HealthzCase):
    """healthz_database_timeout_ms = 0 turns the database check off."""

    settings = {**HealthzCase.settings, "healthz_database_timeout_ms": 0}

    def test_no_database_check(self):
        harness.stop_postgres()
        try:
            time.sleep(DATABASE_TIMEOUT_MS / 1000 + 1)
            self.assertHealthy(self.healthz())
        finally:
            harness.start_postgres()
        harness.wait_for(lambda: self.server.get("/v1/me", token=self.identity.user_token)
                         .status == 200, 15.0, 0.2)


if __name__ == "__main__":
    unittest.main()
