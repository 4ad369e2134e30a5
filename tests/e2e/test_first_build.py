"""test_first_build.py - end-to-end tests of the first build's read (no
snapshot on disk): read a batch of organizations at a time, the next batch
read while the current one is built (src/db/batch_read.c), every batch in
the one REPEATABLE READ transaction of the build.

Test data is written with SQL. Run by tests/e2e/run.
"""

import os
import re
import unittest

import harness
from test_evaluation import FLAG_PATH, Fixture
from test_propagation import Session

SERVED_S = 20.0


class ManyOrganizations(harness.ServerTestCase):
    """MANY more organizations (two batches), the first and the last by id
    with a string flag `pair` served by an SDK key of its own; the server
    is started by the test."""

    MANY = 1100

    @classmethod
    def setUpClass(cls):
        harness.require_env("ENSIGN_TEST_DATABASE")
        cls.database = harness.Database(cls.__name__)
        try:
            cls.server = harness.Server(cls.database.conninfo, cls.workers)
            harness.ensignctl(cls.server.config_path, "migrate")
            cls.prepare()
            cls.create_data()
        except BaseException:
            cls._release()
            raise

    @classmethod
    def create_data(cls):
        conninfo = cls.database.conninfo
        harness.psql(conninfo, f"""
            INSERT INTO orgs (name, slug)
            SELECT 'Many ' || i, 'many-' || i FROM generate_series(1, {cls.MANY}) AS i""")
        ends = harness.psql(conninfo,
                            "(SELECT slug FROM orgs WHERE slug LIKE 'many-%' ORDER BY id LIMIT 1)"
                            " UNION ALL (SELECT slug FROM orgs WHERE slug LIKE 'many-%'"
                            " ORDER BY id DESC LIMIT 1)").split()
        cls.ends = []
        for name, slug in zip(("first", "last"), ends):
            fixture = Fixture(conninfo, org_slug=slug)
            flag_id = fixture.flag("pair", "string", variants={"v": f"old-{name}"}, default="v",
                                   off="")
            cls.ends.append((name, flag_id, fixture.sdk_key()[0]))

    def served_value(self, sdk_key):
        response = self.server.request("POST", f"{FLAG_PATH}/pair", body={},
                                       headers={"Authorization": f"Bearer {sdk_key}"})
        return response.json.get("value") if response.status == 200 else None

    def refresher_waits_on(self, table):
        return self.database.query(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            f" AND wait_event_type = 'Lock' AND query LIKE '%{table}%'") != "0"

    def lock_granted(self, table):
        return self.database.query(
            "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation"
            f" WHERE c.relname = '{table}' AND l.mode = 'AccessExclusiveLock'"
            " AND l.granted") != "0"

    def assertEveryOrganizationServed(self):
        log = self.server.stderr()
        self.assertGreaterEqual(len(re.findall(r"a batch of [0-9]+ organizations", log)), 2, log)
        orgs = self.MANY + 1
        self.assertRegex(log, rf"published \([0-9]+ flag configurations in {orgs} of {orgs} ")
        parts = [n for n in os.listdir(self.server.state_dir) if re.fullmatch(r"org-.*\.bin", n)]
        self.assertGreaterEqual(len(parts), orgs)
        self.assertEqual(self.server.sanitizer_reports(), [])


class MidBuildWriteTest(ManyOrganizations):
    """A write committed while the first build is between its batches is
    not in that build at all: the build reads every batch in the snapshot
    it took before its first batch, so it serves the old values of both
    organizations the write changed, the first by id (first batch) and the
    last (second batch), never one old and one new. The next build serves
    both new values.

    Made deterministic with two locks held by psql sessions: `segments`
    (every batch reads it; the first batch waits on it, after the build's
    snapshot was taken) while the write commits, then `config_org_generation`
    (queued behind the first build's own lock on it, so granted when that
    build's transaction ends: the next build, which must read it first,
    waits) while the first build's values are checked."""

    def write_both(self):
        """One transaction: the pair flag of both organizations made new."""
        statements = "".join(
            f"UPDATE variants SET value = '\"new-{name}\"'::jsonb WHERE flag_id = '{flag_id}';"
            for name, flag_id, _ in self.ends)
        harness.psql(self.database.conninfo, f"BEGIN; {statements} COMMIT;")

    def test_a_write_between_batches_is_wholly_in_the_next_build(self):
        segments = Session(self.database.conninfo)
        generations = None
        try:
            segments.send("BEGIN; LOCK TABLE segments IN ACCESS EXCLUSIVE MODE;")
            self.assertTrue(harness.wait_for(lambda: self.lock_granted("segments"), 10))
            self.server.start(wait=False)
            self.assertTrue(harness.wait_for(lambda: self.refresher_waits_on("segments"), 20),
                            self.server.stderr())
            self.write_both()
            generations = Session(self.database.conninfo)
            generations.send("BEGIN; LOCK TABLE config_org_generation IN ACCESS EXCLUSIVE MODE;")
        finally:
            segments.close()  # the first batch goes on, in the snapshot taken before the write
        try:
            self.assertTrue(harness.wait_for(lambda: "published" in self.server.stderr(),
                                             SERVED_S), self.server.stderr())
            self.assertTrue(harness.wait_for(lambda: self.lock_granted("config_org_generation"),
                                             10))
            for name, _, key in self.ends:
                self.assertTrue(harness.wait_for(lambda: self.served_value(key) is not None, 10))
                self.assertEqual(self.served_value(key), f"old-{name}", name)
        finally:
            generations.close()
        for name, _, key in self.ends:
            self.assertTrue(harness.wait_for(lambda: self.served_value(key) == f"new-{name}",
                                             SERVED_S), (name, self.served_value(key)))
        self.assertEveryOrganizationServed()


class LostConnectionMidBuildTest(ManyOrganizations):
    """The connection lost while the thread reads a batch (its backend
    terminated while it waits on a lock on `variants`): the build fails,
    is logged, and the refresher connects again and builds everything, with
    nothing leaked (the sanitizers) and every organization served."""

    def test_a_batch_read_on_a_lost_connection_fails_the_build_and_is_retried(self):
        variants = Session(self.database.conninfo)
        try:
            variants.send("BEGIN; LOCK TABLE variants IN ACCESS EXCLUSIVE MODE;")
            self.assertTrue(harness.wait_for(lambda: self.lock_granted("variants"), 10))
            self.server.start(wait=False)
            self.assertTrue(harness.wait_for(lambda: self.refresher_waits_on("variants"), 20),
                            self.server.stderr())
            self.database.query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND wait_event_type = 'Lock'"
                " AND query LIKE '%variants%'")
            failed = "cannot read the configuration: reading variants: "
            self.assertTrue(harness.wait_for(lambda: failed in self.server.stderr(), 20),
                            self.server.stderr())
            self.assertNotIn("published", self.server.stderr())
        finally:
            variants.close()
        for name, _, key in self.ends:
            self.assertTrue(harness.wait_for(lambda: self.served_value(key) == f"old-{name}",
                                             SERVED_S), (name, self.server.stderr()))
        self.assertEveryOrganizationServed()


if __name__ == "__main__":
    unittest.main()
