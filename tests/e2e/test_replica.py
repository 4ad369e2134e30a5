"""test_replica.py - refreshers that read a streaming replica
(database_replica, ensign.conf(5)): two ensignd nodes whose refreshers
read a hot standby of the test cluster made with `contrib/pgcluster
replica` (removed again at the end of the class).

A write through the management API of node A (which goes to the primary)
is served by both nodes within a bound, found without LISTEN. With the
replica's replay paused a write is not served and nothing goes back: not
when node A is reloaded from the primary to the paused replica, nor when
it is restarted with snapshot files on disk of a newer generation than
the replica has replayed (it serves them, same answers and ETag, and
healthz says why it waits). Replay resumed, both nodes catch up and follow
the replica again. A replica that stops is retried, not replaced by the
primary: the nodes keep serving, healthz names the replica, and once it is
back the write is served.

Test data is written with SQL through test_evaluation.Fixture, changes
through the API. Run by tests/e2e/run.
"""

import signal
import subprocess
import tempfile
import time
import unittest

import harness
from test_evaluation import FLAG_PATH, OfrepTestCase

# A write served by both nodes within this bound (the replica is polled
# every 20 ms; replay on the same machine takes milliseconds).
SERVED_WITHIN_S = 1.0
PROMPT_S = 5.0
# How long a write that must not be served is watched for.
NOT_SERVED_FOR_S = 1.0
# healthz reports snapshot_stale after health_stale_limit_ms (5 s at least).
STALE_REPORTED_WITHIN_S = 12.0
# healthz reports an unreachable replica after this long.
DATABASE_TIMEOUT_MS = 1000
# A replica back is reconnected to within the refresher's backoff (5 s at most).
RECONNECTED_WITHIN_S = 10.0


def pgcluster(*args):
    result = subprocess.run(["sh", harness.PGCLUSTER, *args], capture_output=True, text=True,
                            timeout=120)
    if result.returncode != 0:
        raise AssertionError(f"pgcluster {' '.join(args)} failed: {result.stderr}")
    return result.stdout.strip()


class ReplicaTest(harness.SecondNode, OfrepTestCase):
    replica_dir = None
    settings = {"healthz_database_timeout_ms": DATABASE_TIMEOUT_MS}

    @classmethod
    def setUpClass(cls):
        harness.require_env("ENSIGN_TEST_PGDIR")
        cls.replica_dir = tempfile.mkdtemp(prefix="ensign-e2e-replica.")
        try:
            cls.replica_cluster = pgcluster("replica", harness.cluster_dir(), cls.replica_dir)
            super().setUpClass()
        except BaseException:
            cls.destroy_replica()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            cls.destroy_replica()

    @classmethod
    def destroy_replica(cls):
        if cls.replica_dir is not None:
            pgcluster("destroy", cls.replica_dir)
            cls.replica_dir = None

    @classmethod
    def prepare(cls):
        super().prepare()
        # The test cluster commits asynchronously (synchronous_commit = off):
        # its WAL reaches the replica only when the WAL writer flushes it,
        # up to 600 ms later. The writes of this test commit as a
        # production primary does, so the bound below is the refresher's.
        harness.psql(cls.database.admin,
                     f'ALTER DATABASE "{cls.database.name}" SET synchronous_commit = on')
        params = harness.parse_conninfo(cls.replica_cluster)
        cls.replica = harness.format_conninfo({**params, "dbname": cls.database.name})
        # Both nodes read the replica (node B is made from cls.settings).
        cls.settings = {**cls.settings, "database_replica": cls.replica}
        cls.server.write_config(database_replica=cls.replica)
        primary = cls.primary_generation()
        if not harness.wait_for(lambda: cls.replica_generation() == primary, 20, 0.05):
            raise AssertionError("the replica did not replay the test database")

    @classmethod
    def create_flags(cls):
        for key in ("shared", "held", "retried"):
            cls.fixture.flag(key, "string", {"red": "red", "blue": "blue"}, default="red",
                             off="blue")

    @classmethod
    def primary_generation(cls):
        return int(cls.database.query("SELECT generation FROM config_generation"))

    @classmethod
    def replica_generation(cls):
        try:
            return int(harness.psql(cls.replica, "SELECT generation FROM config_generation"))
        except RuntimeError:  # the database is not replayed yet
            return None

    def on_replica(self, sql):
        return harness.psql(self.replica, sql)

    # ---- requests ----

    def on(self, server, key=None):
        # One Host for both nodes, as behind a load balancer (the bulk
        # answer's body, and so its ETag, names the Host).
        path = FLAG_PATH if key is None else f"{FLAG_PATH}/{key}"
        return server.request("POST", path, body={}, headers={
            "Authorization": f"Bearer {self.sdk_key}", "Host": "flags.example"})

    def variant_on(self, server, key):
        response = self.on(server, key)
        return response.json.get("variant") if response.status == 200 else None

    def etag_on(self, server):
        response = self.on(server)
        self.assertEqual(response.status, 200, response)
        return response.headers["ETag"]

    def set_default(self, key, variant):
        """The write, through node A's management API (to the primary)."""
        response = self.server.request(
            "PATCH", f"/v1/orgs/acme/flags/{key}/environments/production",
            body={"defaultVariantKey": variant},
            headers={"Authorization": f"Bearer {self.identity.user_token}"})
        self.assertEqual(response.status, 200, response)
        return time.monotonic()

    def served_within(self, server, key, variant, timeout):
        """Seconds until server serves variant (asserted within timeout)."""
        start = time.monotonic()
        found = harness.wait_for(lambda: self.variant_on(server, key) == variant, timeout, 0.005)
        self.assertIsNotNone(found, f"{variant} not served within {timeout} s")
        return time.monotonic() - start

    def assertServedBoth(self, key, variant, timeout):
        self.served_within(self.server, key, variant, timeout)
        self.served_within(self.node_b, key, variant, timeout)

    def assertStaysServed(self, key, variant, for_s, servers):
        """variant is served by every server, again and again, for for_s."""
        deadline = time.monotonic() + for_s
        while time.monotonic() < deadline:
            for server in servers:
                self.assertEqual(self.variant_on(server, key), variant)
            time.sleep(0.02)

    def healthz_checks(self, server):
        response = server.get("/v1/healthz")
        body = response.json
        return response.status, {c["name"]: c["reason"] for c in body.get("checks", [])}

    def reload_node_a(self, **changes):
        self.server.write_config(**changes)
        self.server.signal(signal.SIGHUP)

    # ---- the tests ----

    def test_a_write_is_served_on_both_nodes_without_listen(self):
        self.assertServedBoth("shared", "red", PROMPT_S)
        self.assertEqual(self.etag_on(self.server), self.etag_on(self.node_b))
        # Each node's refresher holds a connection to the replica (and
        # nothing else of ensignd does).
        connections = ("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                       " AND backend_type = 'client backend' AND pid <> pg_backend_pid()")
        self.assertIsNotNone(harness.wait_for(lambda: self.on_replica(connections) == "2",
                                              PROMPT_S, 0.05), self.on_replica(connections))
        written = self.set_default("shared", "blue")
        for server in (self.server, self.node_b):
            self.served_within(server, "shared", "blue", PROMPT_S)
            self.assertLess(time.monotonic() - written, SERVED_WITHIN_S)
        self.assertEqual(self.etag_on(self.server), self.etag_on(self.node_b))
        self.assertIn("reading the configuration from the replica", self.server.stderr())
        self.assertEqual(self.server.sanitizer_reports(), [])

    def test_a_paused_replica_never_makes_a_node_go_back(self):
        self.assertServedBoth("held", "red", PROMPT_S)
        etag_red = self.etag_on(self.node_b)
        self.on_replica("SELECT pg_wal_replay_pause()")
        try:
            self.assertIsNotNone(harness.wait_for(
                lambda: self.on_replica("SELECT pg_get_wal_replay_pause_state()") == "paused",
                10, 0.02), "replay did not pause")
            self.paused_replica_is_not_followed_back(etag_red)
        finally:
            self.on_replica("SELECT pg_wal_replay_resume()")
        # Resumed: node B serves the write, node A (which never went back)
        # the same, and both follow the replica again.
        self.served_within(self.node_b, "held", "blue", PROMPT_S)
        self.assertEqual(self.etag_on(self.node_b), self.etag_on(self.server))
        self.assertIsNotNone(harness.wait_for(
            lambda: self.healthz_checks(self.server) == (200, {}), PROMPT_S, 0.05),
            self.healthz_checks(self.server))
        self.assertRegex(self.server.stderr(), r"the replica has replayed generation [0-9]+: "
                         r"following it again")
        written = self.set_default("held", "red")
        self.assertServedBoth("held", "red", PROMPT_S)
        self.assertLess(time.monotonic() - written, SERVED_WITHIN_S + 1.0)
        self.assertEqual(self.etag_on(self.node_b), self.etag_on(self.server))
        self.assertEqual(self.server.sanitizer_reports(), [])
        self.assertEqual(self.node_b.sanitizer_reports(), [])

    def paused_replica_is_not_followed_back(self, etag_red):
        # A write the paused replica has not replayed is served by neither node.
        self.set_default("held", "blue")
        self.assertGreater(self.primary_generation(), self.replica_generation())
        self.assertStaysServed("held", "red", NOT_SERVED_FOR_S, (self.server, self.node_b))
        self.assertEqual(self.etag_on(self.node_b), etag_red)

        # Node A reloaded to read the primary serves it (database_replica is
        # applied on SIGHUP) ...
        self.reload_node_a(database_replica="")
        self.served_within(self.server, "held", "blue", PROMPT_S)
        etag_blue = self.etag_on(self.server)
        self.assertNotEqual(etag_blue, etag_red)
        # ... and reloaded back to the paused replica, it does not go back.
        self.reload_node_a(database_replica=self.replica)
        self.assertStaysServed("held", "blue", NOT_SERVED_FOR_S, (self.server,))
        self.assertIsNotNone(harness.wait_for(
            lambda: "waiting for the replica to replay it" in self.server.stderr(), PROMPT_S, 0.05),
            "node A did not say it waits for the replica")
        self.assertEqual(self.variant_on(self.node_b, "held"), "red")

        # Restarted with the files on disk of that newer generation, node A
        # serves them at once (same answer, same ETag), never the replica's
        # older one, and healthz says why it waits.
        self.server.stop_cleanly()
        self.server.start()
        first = harness.wait_for(  # the files on disk are published right after start
            lambda: (lambda r: r if r.status == 200 else None)(self.on(self.server, "held")),
            PROMPT_S, 0.01)
        self.assertIsNotNone(first, "node A served nothing after its restart")
        self.assertEqual(first.json["variant"], "blue")
        self.assertEqual(self.etag_on(self.server), etag_blue)
        started = time.monotonic()
        while True:
            self.assertEqual(self.variant_on(self.server, "held"), "blue")
            status, checks = self.healthz_checks(self.server)
            if status == 503:
                break
            self.assertLess(time.monotonic() - started, STALE_REPORTED_WITHIN_S,
                            "healthz did not report the wait")
            time.sleep(0.1)
        self.assertEqual(set(checks), {"snapshot_stale"}, checks)
        self.assertRegex(checks["snapshot_stale"],
                         r"^the replica has replayed only generation [0-9]+, [0-9]+ served: "
                         r"waiting for the replica to replay it$")
        self.assertEqual(self.etag_on(self.server), etag_blue)
        self.assertEqual(self.variant_on(self.node_b, "held"), "red")

    def test_an_unreachable_replica_is_retried_not_replaced_by_the_primary(self):
        self.assertServedBoth("retried", "red", PROMPT_S)
        pgcluster("stop", self.replica_dir)
        try:
            self.set_default("retried", "blue")
            # Both nodes keep serving what they have, and say why they
            # follow no change: the replica, not the primary, is down.
            self.assertStaysServed("retried", "red", NOT_SERVED_FOR_S, (self.server, self.node_b))
            found = harness.wait_for(
                lambda: (lambda h: h if h[0] == 503 else None)(self.healthz_checks(self.node_b)),
                PROMPT_S, 0.1)
            self.assertIsNotNone(found, "healthz did not report the replica")
            self.assertEqual(set(found[1]), {"database"}, found)
            self.assertTrue(found[1]["database"].startswith("the replica: "), found)
            self.assertEqual(self.variant_on(self.node_b, "retried"), "red")
        finally:
            pgcluster("start", self.replica_dir)
        # Back, it is connected to again (a new connection, its generation
        # query prepared again) and the write is served on both.
        for server in (self.server, self.node_b):
            self.served_within(server, "retried", "blue", RECONNECTED_WITHIN_S)
            self.assertIsNotNone(harness.wait_for(
                lambda: self.healthz_checks(server) == (200, {}), PROMPT_S, 0.05),
                self.healthz_checks(server))
        self.assertIn("database connection restored", self.node_b.stderr())
        self.assertEqual(self.etag_on(self.server), self.etag_on(self.node_b))


if __name__ == "__main__":
    unittest.main()
