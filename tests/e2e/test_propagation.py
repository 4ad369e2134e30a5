"""test_propagation.py - end-to-end tests of how a configuration change
reaches the evaluation path: the refresher's wake-up on a NOTIFY that
arrives while it is building a snapshot, and several ensignd nodes on one
PostgreSQL (same configuration, identical ETags, a change made through one
node served by the other, usage counted on both adding up).

Test data is written with SQL through test_evaluation.Fixture. Run by
tests/e2e/run.
"""

import os
import re
import subprocess
import time
import unittest

import harness
from test_evaluation import FLAG_PATH, Fixture, OfrepTestCase

# Long enough that a change served after the timer instead of the NOTIFY
# would fail every bound below by far.
LONG_INTERVAL_MS = 60000
PROMPT_S = 5.0


class Session:
    """One psql session held open (for locks that must outlive a statement).
    Statements are fixed test SQL: names only, never data."""

    def __init__(self, conninfo):
        self.proc = subprocess.Popen(
            ["psql", "-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1", "-d", conninfo],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def send(self, statement):
        self.proc.stdin.write(statement + "\n")
        self.proc.stdin.flush()

    def close(self):
        """Ends the session (what it holds is rolled back); raises if psql failed."""
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        status = self.proc.wait(30)
        errors = self.proc.stderr.read()
        self.proc.stderr.close()
        if status != 0:
            raise AssertionError(f"psql session failed: {errors}")


class LostWakeupTest(OfrepTestCase):
    """A change committed while the refresher builds a snapshot is served at
    once after that build, not after refresh_interval_ms.

    PostgreSQL delivers a NOTIFY to a session that is inside a transaction
    only when that transaction ends, together with the reply that ends it.
    The test makes that happen every time: it holds a lock on `segments`,
    which every build reads inside its transaction, makes a first change
    (the refresher starts a build and waits on the lock: seen in
    pg_stat_activity), commits a second change meanwhile, and releases the
    lock. The second change's NOTIFY then reaches the refresher with the
    end of the first build, which is the wake-up that used to be lost."""

    settings = {"refresh_interval_ms": LONG_INTERVAL_MS}

    @classmethod
    def create_flags(cls):
        cls.first = cls.fixture.flag("first", enabled=False)
        cls.second = cls.fixture.flag("second", enabled=False)

    def refresher_waits_on_lock(self):
        return self.database.query(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND wait_event_type = 'Lock' AND query LIKE '%segments%'") != "0"

    def served(self, key, variant):
        return self.evaluate(key).json.get("variant") == variant

    def test_notify_during_a_build_is_acted_on_at_once(self):
        self.assertTrue(self.served("first", "off") and self.served("second", "off"))
        lock = Session(self.database.conninfo)
        try:
            lock.send("BEGIN; LOCK TABLE segments IN ACCESS EXCLUSIVE MODE;")
            # Make sure the lock is held before the first change.
            self.assertIsNotNone(harness.wait_for(lambda: self.database.query(
                "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation"
                " WHERE c.relname = 'segments' AND l.mode = 'AccessExclusiveLock'"
                " AND l.granted") != "0", 10, 0.05))
            self.fixture.set_enabled(self.first, True)
            self.assertIsNotNone(harness.wait_for(self.refresher_waits_on_lock, 10, 0.02),
                                 "the refresher did not start a build")
            self.fixture.set_enabled(self.second, True)
            time.sleep(0.3)  # the NOTIFY is queued for the refresher's session
            self.assertTrue(self.served("second", "off"))
        finally:
            lock.close()  # the build goes on and ends with the second NOTIFY
        released = time.monotonic()
        self.wait_served(lambda: self.served("first", "on"), PROMPT_S)
        self.wait_served(lambda: self.served("second", "on"), PROMPT_S)
        self.assertLess(time.monotonic() - released, PROMPT_S)
        self.assertEqual(self.server.sanitizer_reports(), [])



class TwoNodesTest(harness.SecondNode, OfrepTestCase):
    """Two ensignd nodes (own port, state_dir and shared memory each) on one
    database: the same answers and identical ETags, a change made through
    node A's management API served by node B, and usage counted on both
    adding up in the database."""

    settings = {"usage_flush_interval_ms": 200}

    @classmethod
    def create_flags(cls):
        cls.shared = cls.fixture.flag("shared", "string", {"red": "red", "blue": "blue"},
                                      default="red", off="blue")
        cls.fixture.flag("other", enabled=False)

    def on(self, server, key=None, headers=None, body=None):
        # Both nodes are reached under one name, as behind a load balancer:
        # the bulk answer's eventStreams URL names the Host, so the body
        # (and its strong ETag) is the same on both only for the same Host.
        path = FLAG_PATH if key is None else f"{FLAG_PATH}/{key}"
        headers = {"Authorization": f"Bearer {self.sdk_key}", "Host": "flags.example",
                   **(headers or {})}
        return server.request("POST", path, body=body if body is not None else {},
                              headers=headers)

    def variant_on(self, server, key):
        response = self.on(server, key)
        return response.json.get("variant") if response.status == 200 else None

    def test_both_nodes_serve_the_same_answers_and_etags(self):
        self.assertIsNotNone(harness.wait_for(lambda: self.on(self.node_b).status == 200, 10))
        for context in ({}, {"context": {"targetingKey": "u-1", "country": "NL"}}):
            a, b = self.on(self.server, body=context), self.on(self.node_b, body=context)
            self.assertEqual((a.status, b.status), (200, 200))
            self.assertEqual(a.json, b.json)
            self.assertTrue(a.headers["ETag"])
            self.assertEqual(a.headers["ETag"], b.headers["ETag"])
            revalidated = self.on(self.node_b, headers={"If-None-Match": a.headers["ETag"]},
                                  body=context)
            self.assertEqual(revalidated.status, 304)

    def test_change_through_node_a_is_served_by_node_b(self):
        self.assertIsNotNone(harness.wait_for(
            lambda: self.variant_on(self.node_b, "shared") == "red", 10))
        before = self.on(self.node_b).headers["ETag"]
        token = {"Authorization": f"Bearer {self.identity.user_token}"}
        response = self.server.request("PATCH", "/v1/orgs/acme/flags/shared/environments/production",
                                       body={"defaultVariantKey": "blue"}, headers=token)
        self.assertEqual(response.status, 200, response)
        start = time.monotonic()
        self.assertIsNotNone(harness.wait_for(
            lambda: self.variant_on(self.node_b, "shared") == "blue", PROMPT_S, 0.01),
            "node B did not serve the change")
        self.assertLess(time.monotonic() - start, 1.0)
        self.assertIsNotNone(harness.wait_for(
            lambda: self.variant_on(self.server, "shared") == "blue", PROMPT_S, 0.01))
        after_a, after_b = self.on(self.server), self.on(self.node_b)
        self.assertNotEqual(after_b.headers["ETag"], before)
        self.assertEqual(after_a.headers["ETag"], after_b.headers["ETag"])

    def test_usage_on_both_nodes_adds_up(self):
        flag = self.fixture.flag("counted-twice")
        for server in (self.server, self.node_b):
            self.assertIsNotNone(harness.wait_for(
                lambda: self.variant_on(server, "counted-twice") == "on", 10, 0.02))
        for _ in range(4):
            self.assertEqual(self.on(self.server, "counted-twice").status, 200)
        for _ in range(3):
            self.assertEqual(self.on(self.node_b, "counted-twice").status, 200)
        # 1 + 1 from the waits above, 4 on node A, 3 on node B.
        found = harness.wait_for(lambda: self.fixture.usage(flag) == {"on": 9}, 10, 0.1)
        self.assertIsNotNone(found, self.fixture.usage(flag))



class IncrementalSnapshotTest(OfrepTestCase):
    """The snapshot is one index plus a part per organization, appended to
    a pack file, and a change appends only its organization's part
    (doc/choices.md, "Incremental snapshots", "Pack files"): the other part
    stays the same extent, its ETags do not move, and the parts share one
    pack file, appended to."""

    @classmethod
    def create_flags(cls):
        harness.ensignctl(cls.server.config_path, "org", "create", "--name", "Globex",
                          "--slug", "globex", "--owner", cls.identity.email)
        cls.globex = Fixture(cls.database.conninfo, org_slug="globex")
        cls.globex_key, _ = cls.globex.sdk_key()
        cls.globex.flag("steady")
        cls.changing = cls.fixture.flag("changing", enabled=False)

    def org_id(self, slug):
        return self.database.query(f"SELECT id FROM orgs WHERE slug = '{slug}'")

    def parts(self):
        """{org id: (pack, offset, length, generation)} the index names."""
        return harness.snapshot_parts(self.server.state_dir)

    def pack_inodes(self):
        return {name: os.stat(os.path.join(self.server.state_dir, name)).st_ino
                for name in harness.pack_files(self.server.state_dir)}

    def bulk_etag(self, key):
        response = self.bulk(sdk_key=key)
        self.assertEqual(response.status, 200, response)
        return response.headers["ETag"]

    def change(self, enabled):
        self.fixture.set_enabled(self.changing, enabled)
        variant = "on" if enabled else "off"
        self.wait_served(lambda: self.evaluate("changing").json.get("variant") == variant)

    def test_a_change_rewrites_only_its_organization(self):
        acme, globex = self.org_id("acme"), self.org_id("globex")
        self.assertEqual(self.evaluate("steady", sdk_key=self.globex_key).status, 200)
        self.assertEqual(self.evaluate("steady").status, 404)  # keys see their own org only
        before, packs = self.parts(), self.pack_inodes()
        self.assertLessEqual({acme, globex}, set(before), before)
        self.assertEqual(len(packs), 1, packs)  # both organizations in one pack
        self.assertEqual(before[acme][0], before[globex][0])
        globex_etag, acme_etag = self.bulk_etag(self.globex_key), self.bulk_etag(self.sdk_key)

        self.change(True)
        first = self.parts()
        self.assertEqual(first[globex], before[globex])  # the very same extent
        self.assertGreater(first[acme][3], before[acme][3])
        # appended to the same pack file, past every part it held
        self.assertEqual(first[acme][0], before[acme][0])
        self.assertGreaterEqual(first[acme][1], max(p[1] + p[2] for p in before.values()))
        self.assertEqual(self.pack_inodes(), packs)
        self.assertFalse([n for n in os.listdir(self.server.state_dir) if n.startswith("org-")])
        self.assertEqual(self.bulk_etag(self.globex_key), globex_etag)
        self.assertNotEqual(self.bulk_etag(self.sdk_key), acme_etag)
        # Only the organization that moved is asked for (sql/0020), not one
        # generation row per organization.
        self.assertRegex(self.server.stderr(),
                         r"published \([0-9]+ flag configurations in 1 of [0-9]+ organizations,"
                         r" 1 organization generations read;")

        self.change(False)
        second = self.parts()
        self.assertEqual(second[globex], before[globex])
        self.assertGreater(second[acme][1], first[acme][1])
        self.assertEqual(self.pack_inodes(), packs)
        self.assertEqual(self.server.sanitizer_reports(), [])

    def test_a_deleted_organization_stops_being_served(self):
        """Its row of config_org_generation stays and moves past the index's
        generation (0007), so the read that asks only for organizations
        past it still finds it: its key stops being served, its part leaves
        the index, the others' parts stay the same files."""
        harness.ensignctl(self.server.config_path, "org", "create", "--name", "Doomed",
                          "--slug", "doomed", "--owner", self.identity.email)
        doomed = Fixture(self.database.conninfo, org_slug="doomed")
        key, _ = doomed.sdk_key()
        doomed.flag("short-lived")
        self.wait_served(lambda: self.evaluate("short-lived", sdk_key=key).status == 200)
        doomed_id, globex = self.org_id("doomed"), self.org_id("globex")
        before = self.parts()
        self.assertIn(doomed_id, before)
        line = len(self.server.stderr().splitlines())

        self.database.query("DELETE FROM orgs WHERE slug = 'doomed'")
        self.wait_served(lambda: self.evaluate("short-lived", sdk_key=key).status == 401)
        self.assertEvalError(self.evaluate("short-lived", sdk_key=key), 401,
                             "AUTHENTICATION_ERROR", key="short-lived")
        self.assertEqual(self.database.query(
            f"SELECT count(*) FROM config_org_generation WHERE org_id = '{doomed_id}'"), "1")
        log = "\n".join(self.server.stderr().splitlines()[line:])
        self.assertRegex(log, r"published \([0-9]+ flag configurations in 0 of [0-9]+"
                              r" organizations, 1 organization generations read;")
        self.change(True)
        self.change(False)
        self.assertNotIn(doomed_id, self.parts())
        self.assertEqual(self.parts()[globex], before[globex])
        self.assertEqual(self.evaluate("steady", sdk_key=self.globex_key).status, 200)
        self.assertEqual(self.server.sanitizer_reports(), [])

    def test_a_new_organization_gets_a_part(self):
        harness.ensignctl(self.server.config_path, "org", "create", "--name", "Initech",
                          "--slug", "initech", "--owner", self.identity.email)
        initech = Fixture(self.database.conninfo, org_slug="initech")
        key, _ = initech.sdk_key()
        initech.flag("fresh")
        self.wait_served(lambda: self.evaluate("fresh", sdk_key=key).status == 200)
        self.assertIn(self.org_id("initech"), self.parts())


class RestartTest(OfrepTestCase):
    """A restart takes the parts on disk as built (doc/choices.md,
    "Incremental index and restart", "Pack files"): with nothing changed
    while the node was down no snapshot file is rewritten, a change made
    meanwhile appends only its organization's part, and a damaged extent is
    built again alone. Each test restarts the node and leaves it running."""

    @classmethod
    def create_flags(cls):
        harness.ensignctl(cls.server.config_path, "org", "create", "--name", "Globex",
                          "--slug", "globex", "--owner", cls.identity.email)
        cls.globex = Fixture(cls.database.conninfo, org_slug="globex")
        cls.globex_key, _ = cls.globex.sdk_key()
        cls.steady = cls.globex.flag("steady", enabled=False)
        cls.changing = cls.fixture.flag("changing", enabled=False)

    def org_id(self, slug):
        return self.database.query(f"SELECT id FROM orgs WHERE slug = '{slug}'")

    def files(self):
        """{name: (inode, mtime in ns, size)} of the snapshot files in state_dir."""
        found = {}
        for name in os.listdir(self.server.state_dir):
            if name == "snapshot.bin" or re.fullmatch(r"(org|pack)-.*\.bin", name):
                st = os.stat(os.path.join(self.server.state_dir, name))
                found[name] = (st.st_ino, st.st_mtime_ns, st.st_size)
        return found

    def part_of(self, slug):
        """(pack, offset, length, generation) of organization slug's part."""
        parts = harness.snapshot_parts(self.server.state_dir)
        self.assertIn(self.org_id(slug), parts)
        return parts[self.org_id(slug)]

    def served(self, key, sdk_key, variant):
        self.wait_served(
            lambda: self.evaluate(key, sdk_key=sdk_key).json.get("variant") == variant)

    def setUp(self):
        """Both flags off and served so, whatever an earlier test left (a
        flag already off is not written: a write now would still be in the
        refresher's hands when the test looks at the files)."""
        for fixture, flag, sdk_key, key in ((self.globex, self.steady, self.globex_key, "steady"),
                                            (self.fixture, self.changing, self.sdk_key,
                                             "changing")):
            on = self.database.query(
                f"SELECT enabled FROM flag_environments WHERE flag_id = '{flag}'")
            if on != "f":
                fixture.set_enabled(flag, False)
            self.served(key, sdk_key, "off")

    def restart(self, while_down=None):
        """Stops the node (cleanly), runs while_down, starts it again; the
        number of log lines before the start."""
        self.server.stop_cleanly()
        if while_down is not None:
            while_down()
        before = len(self.server.stderr().splitlines())
        self.server.start()
        return before

    def log_since(self, line):
        return "\n".join(self.server.stderr().splitlines()[line:])

    def test_a_database_gone_back_is_compared_whole(self):
        """A database whose generation is below the index's (restored from
        an older backup with state_dir kept) is not asked only for the
        organizations past the index's generation (there are none): every
        generation row is read and compared. Then the database moves past
        the index again: a restart asks for the rows past the index's
        generation only and rebuilds no organization."""
        generation = int(self.database.query("SELECT generation FROM config_generation"))

        def go_back():
            self.database.query("UPDATE config_generation SET generation = generation - 5")

        line = self.restart(go_back)
        self.assertTrue(harness.wait_for(lambda: "published" in self.log_since(line), 5),
                        self.log_since(line))
        self.assertRegex(self.log_since(line), f"generation {generation - 5} is below the index's"
                                               f" {generation}: every organization is compared")
        self.assertRegex(self.log_since(line),
                         r"published \([0-9]+ flag configurations in 0 of 2 organizations,"
                         r" 2 organization generations read;")
        self.served("changing", self.sdk_key, "off")
        self.served("steady", self.globex_key, "off")

        def go_forward():
            self.database.query("UPDATE config_generation SET generation = generation + 5")

        line = self.restart(go_forward)
        self.assertTrue(harness.wait_for(lambda: "published" in self.log_since(line), 5),
                        self.log_since(line))
        # Organizations stamped above the restored index's generation are
        # asked for and compared: none moved, none is rebuilt.
        self.assertRegex(self.log_since(line), r"published \([0-9]+ flag configurations in 0 of 2"
                                               r" organizations, [0-2] organization generations")
        self.assertNotIn("every organization is compared", self.log_since(line))
        self.served("steady", self.globex_key, "off")
        self.assertEqual(self.server.sanitizer_reports(), [])

    def test_nothing_changed_nothing_rewritten(self):
        before = self.files()
        line = self.restart()
        self.served("steady", self.globex_key, "off")
        self.served("changing", self.sdk_key, "off")
        self.assertTrue(harness.wait_for(
            lambda: "snapshot parts on disk are kept" in self.log_since(line), 5))
        self.assertRegex(self.log_since(line), r"2 of 2 snapshot parts on disk are kept")
        time.sleep(0.5)  # the refresher has connected and compared generations
        self.assertEqual(self.files(), before)
        self.assertNotIn("published", self.log_since(line))
        # The next change rewrites its organization's part only, not every one.
        globex = self.part_of("globex")
        self.fixture.set_enabled(self.changing, True)
        self.served("changing", self.sdk_key, "on")
        self.assertEqual(self.part_of("globex"), globex)
        # The catalog read from the index on disk is whole at its generation:
        # only the organization that moved is asked for.
        self.assertRegex(self.log_since(line),
                         r"published \([0-9]+ flag configurations in 1 of 2 organizations,"
                         r" 1 organization generations read;")

    def test_a_change_while_down_rewrites_its_organization_only(self):
        acme, globex = self.part_of("acme"), self.part_of("globex")
        line = self.restart(lambda: self.globex.set_enabled(self.steady, True))
        self.served("steady", self.globex_key, "on")
        self.assertEqual(self.part_of("acme"), acme)  # the very same extent
        self.assertGreater(self.part_of("globex")[3], globex[3])
        self.assertRegex(self.log_since(line),
                         r"published \([0-9]+ flag configurations in 1 of 2 organizations")

    def test_a_damaged_part_is_built_again_alone(self):
        acme, globex = self.part_of("acme"), self.part_of("globex")

        def damage():
            """A byte in the middle of acme's extent flipped: its checksum fails."""
            with open(os.path.join(self.server.state_dir, acme[0]), "r+b") as f:
                f.seek(acme[1] + acme[2] // 2)
                byte = f.read(1)
                f.seek(acme[1] + acme[2] // 2)
                f.write(bytes([byte[0] ^ 0xFF]))

        line = self.restart(damage)
        self.assertTrue(harness.wait_for(
            lambda: "snapshot parts on disk are kept" in self.log_since(line), 5))
        self.assertRegex(self.log_since(line), r"1 of 2 snapshot parts on disk are kept")
        self.assertTrue(harness.wait_for(lambda: "published" in self.log_since(line), 5),
                        self.log_since(line))
        # A part left out of the catalog: it is not whole, so every
        # organization's generation is read and compared (the damaged one
        # is found though its generation did not move).
        self.assertRegex(self.log_since(line),
                         r"published \([0-9]+ flag configurations in 1 of 2 organizations,"
                         r" 2 organization generations read;")
        self.served("changing", self.sdk_key, "off")
        self.served("steady", self.globex_key, "off")
        self.assertEqual(self.part_of("globex"), globex)
        rebuilt = self.part_of("acme")
        self.assertEqual(rebuilt[3], acme[3])  # the same generation, written again
        self.assertNotEqual(rebuilt[1:3], acme[1:3])
        self.assertRegex(self.log_since(line), r"snapshot part of organization "
                                               f"{self.org_id('acme')} on disk is not usable")
        self.assertEqual(self.server.sanitizer_reports(), [])


class BatchedFirstBuildTest(OfrepTestCase):
    """The first build reads and writes organizations a batch at a time
    (at most 1,024 organizations or 20,000 flags, src/db/snapshot_source.h),
    so the refresher holds one batch's rows: with 1,100 more organizations
    it takes two batches, and every organization is served, the first and
    the last by id alike."""

    MANY = 1100

    @classmethod
    def create_flags(cls):
        harness.psql(cls.database.conninfo, f"""
            INSERT INTO orgs (name, slug)
            SELECT 'Many ' || i, 'many-' || i FROM generate_series(1, {cls.MANY}) AS i;
            INSERT INTO flags (org_id, key, name, type)
            SELECT id, 'only', 'Only', 'boolean' FROM orgs WHERE slug LIKE 'many-%';
            INSERT INTO variants (flag_id, org_id, key, value, sort_order)
            SELECT f.id, f.org_id, v.key, v.value::jsonb, v.n
            FROM flags f JOIN orgs o ON o.id = f.org_id,
                 (VALUES ('on', 'true', 0), ('off', 'false', 1)) AS v(key, value, n)
            WHERE o.slug LIKE 'many-%';
            INSERT INTO flag_environments (flag_id, environment_id, enabled, default_serve,
                                           off_variant_key)
            SELECT f.id, e.id, true, '{{"variant": "on"}}', 'off'
            FROM flags f JOIN orgs o ON o.id = f.org_id JOIN environments e ON e.org_id = o.id
            WHERE o.slug LIKE 'many-%' AND e.key = 'production'
            ON CONFLICT (flag_id, environment_id) DO UPDATE SET enabled = true""")
        ends = harness.psql(cls.database.conninfo,
                            "(SELECT slug FROM orgs WHERE slug LIKE 'many-%' ORDER BY id LIMIT 1)"
                            " UNION ALL (SELECT slug FROM orgs WHERE slug LIKE 'many-%'"
                            " ORDER BY id DESC LIMIT 1)").split()
        cls.end_keys = [Fixture(cls.database.conninfo, org_slug=slug).sdk_key()[0]
                        for slug in ends]

    def test_every_organization_is_served_after_batches(self):
        for key in self.end_keys:
            response = self.evaluate("only", sdk_key=key)
            self.assertEqual(response.status, 200, response)
            self.assertEqual(response.json["variant"], "on", response)
        orgs = self.MANY + 1
        log = self.server.stderr()
        self.assertGreaterEqual(len(re.findall(r"a batch of [0-9]+ organizations", log)), 2, log)
        self.assertRegex(log, rf"published \([0-9]+ flag configurations in {orgs} of {orgs} ")
        self.assertEqual(len(harness.snapshot_parts(self.server.state_dir)), orgs)
        self.assertEqual(len(harness.pack_files(self.server.state_dir)), 1)


if __name__ == "__main__":
    unittest.main()
