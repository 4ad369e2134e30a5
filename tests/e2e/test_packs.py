"""Parts stored in pack files (doc/choices.md "Pack files", ensignd(8)
FILES): a worker maps each pack once whatever the number of
organizations; a pack mostly dead is reclaimed and deleted; a restart
cuts off what a crashed build appended after the last named part, and
rebuilds a state directory an older ensignd wrote (one file per
organization)."""

import os
import re
import struct

import harness
from test_evaluation import Fixture, OfrepTestCase

GIB = 1 << 30


def many_organizations(conninfo, prefix, count, flags=1):
    """count organizations (slugs prefix-1..count), each with `flags`
    boolean flags serving on in production."""
    harness.psql(conninfo, f"""
        INSERT INTO orgs (name, slug)
        SELECT 'Many ' || i, '{prefix}-' || i FROM generate_series(1, {count}) AS i;
        INSERT INTO flags (org_id, key, name, type)
        SELECT o.id, 'flag-' || n, 'Flag ' || n, 'boolean'
        FROM orgs o, generate_series(1, {flags}) AS n WHERE o.slug LIKE '{prefix}-%';
        INSERT INTO variants (flag_id, org_id, key, value, sort_order)
        SELECT f.id, f.org_id, v.key, v.value::jsonb, v.n
        FROM flags f JOIN orgs o ON o.id = f.org_id,
             (VALUES ('on', 'true', 0), ('off', 'false', 1)) AS v(key, value, n)
        WHERE o.slug LIKE '{prefix}-%';
        INSERT INTO flag_environments (flag_id, environment_id, enabled, default_serve,
                                       off_variant_key)
        SELECT f.id, e.id, true, '{{"variant": "on"}}', 'off'
        FROM flags f JOIN orgs o ON o.id = f.org_id JOIN environments e ON e.org_id = o.id
        WHERE o.slug LIKE '{prefix}-%' AND e.key = 'production'
        ON CONFLICT (flag_id, environment_id) DO UPDATE SET enabled = true""")


def state_mappings(pid, state_dir):
    """(start, end, path) of the mappings of files in state_dir by pid."""
    found = []
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and fields[5].startswith(state_dir + "/"):
                start, end = (int(x, 16) for x in fields[0].split("-"))
                found.append((start, end, os.path.basename(fields[5])))
    return found


class ManyOrganizationsTest(OfrepTestCase):
    """800 organizations: each worker maps the index and one pack, not one
    file per organization."""

    MANY = 800

    @classmethod
    def create_flags(cls):
        many_organizations(cls.database.conninfo, "many", cls.MANY)
        cls.keys = [Fixture(cls.database.conninfo, org_slug=f"many-{i}").sdk_key()[0]
                    for i in (1, cls.MANY // 2, cls.MANY)]

    def test_a_worker_maps_a_few_packs_not_one_file_per_organization(self):
        for key in self.keys:
            self.wait_served(lambda: self.evaluate("flag-1", sdk_key=key).status == 200)
        state_dir = self.server.state_dir
        self.assertEqual(len(harness.snapshot_parts(state_dir)), self.MANY + 1)
        self.assertEqual(harness.pack_files(state_dir), ["pack-1.bin"])
        workers = [pid for pid, title in self.server.children().items()
                   if title.startswith("ensignd: worker")]
        self.assertEqual(len(workers), 2, self.server.children())
        mapped = 0
        for pid in workers:
            maps = state_mappings(pid, state_dir)
            self.assertLessEqual(len(maps), 3, maps)  # the index and the pack (and a new index)
            packs = [m for m in maps if m[2].startswith("pack-")]
            for start, end, _ in packs:  # one mapping of the reserved length
                self.assertEqual(end - start, GIB)
            mapped += len(packs)
        self.assertGreaterEqual(mapped, 1)  # a worker that served maps the pack
        self.assertFalse([n for n in os.listdir(state_dir) if n.startswith("org-")])
        self.assertEqual(self.server.sanitizer_reports(), [])


class PackLifecycleTest(OfrepTestCase):
    """With 1 MiB packs, a large organization that keeps changing fills
    packs: a sealed pack left mostly dead has its remaining parts moved out
    (their generation unchanged) and is deleted; a restart cuts off bytes
    a crashed build appended; an older ensignd's state directory is rebuilt
    from the database and its part files removed."""

    settings = {"snapshot_pack_mb": 1, "snapshot_chunk_flags": 0}  # big-1 a part of its own

    @classmethod
    def create_flags(cls):
        many_organizations(cls.database.conninfo, "big", 1, flags=1500)
        cls.big = Fixture(cls.database.conninfo, org_slug="big-1")
        cls.big_key, _ = cls.big.sdk_key()
        cls.big_flag = cls.big.run("SELECT id FROM flags WHERE key = 'flag-1' AND org_id ="
                                   " (SELECT id FROM orgs WHERE slug = 'big-1')")
        cls.steady = cls.fixture.flag("steady")

    def org_id(self, slug):
        return self.database.query(f"SELECT id FROM orgs WHERE slug = '{slug}'")

    def parts(self):
        return harness.snapshot_parts(self.server.state_dir)

    def toggle_big(self):
        """Turns big-1's flag-1 over and waits until it is served."""
        on = self.evaluate("flag-1", sdk_key=self.big_key).json.get("variant") == "on"
        self.big.set_enabled(self.big_flag, not on)
        want = "off" if on else "on"
        self.wait_served(
            lambda: self.evaluate("flag-1", sdk_key=self.big_key).json.get("variant") == want)

    def log_since(self, line):
        return "\n".join(self.server.stderr().splitlines()[line:])

    def test_1_a_mostly_dead_pack_is_reclaimed_and_deleted(self):
        acme, big = self.org_id("acme"), self.org_id("big-1")
        before = self.parts()
        self.assertGreater(before[big][2], 100_000, before[big])  # a large part
        first_pack = before[acme][0]
        for _ in range(40):
            self.toggle_big()
            now = self.parts()
            if now[acme][0] != first_pack and first_pack not in harness.pack_files(
                    self.server.state_dir):
                break
        else:
            self.fail(f"{first_pack} was not reclaimed: {self.parts()},"
                      f" {harness.pack_files(self.server.state_dir)}")
        self.assertRegex(self.server.stderr(), r"snapshot pack [0-9]+ is less than half live")
        # the changes were patches of the kept index: a patch moves parts too
        self.assertRegex(self.server.stderr(), r"parts \([0-9]+ bytes\) moved to the open pack\"\n"
                         r".*published .*the index patched\)")
        now = self.parts()
        self.assertEqual(now[acme][3], before[acme][3])  # moved, not rebuilt
        self.assertEqual(self.evaluate("steady").json.get("variant"), "on")
        self.assertLessEqual(len(harness.pack_files(self.server.state_dir)), 3)
        self.assertEqual(self.server.sanitizer_reports(), [])

    def test_2_a_crashed_build_tail_is_cut_off_at_start(self):
        state_dir = self.server.state_dir
        parts = self.parts()
        last = harness.pack_files(state_dir)[-1]
        named_end = max(offset + length for pack, offset, length, _ in parts.values()
                        if pack == last)
        self.server.stop_cleanly()
        with open(os.path.join(state_dir, last), "ab") as f:  # appended, never named
            f.write(b"\xAB" * 5000)
        line = len(self.server.stderr().splitlines())
        self.server.start()
        self.assertTrue(harness.wait_for(lambda: "cut off" in self.log_since(line), 5),
                        self.log_since(line))
        self.assertLess(os.stat(os.path.join(state_dir, last)).st_size, named_end + 64)
        self.assertEqual(self.evaluate("steady").json.get("variant"), "on")
        self.toggle_big()  # appending goes on after the cut
        self.assertEqual(self.parts()[self.org_id("big-1")][0], last)
        self.assertEqual(self.server.sanitizer_reports(), [])

    def restart_with_older_state(self, version, files):
        """Stops the node, marks snapshot.bin as of format version and
        plants files (each a snapshot's magic and zeros) beside it, starts
        the node and waits for its first publication, which must say the
        index was refused. Returns the log line the start began at."""
        state_dir = self.server.state_dir
        self.server.stop_cleanly()
        with open(os.path.join(state_dir, "snapshot.bin"), "r+b") as f:
            f.seek(8)  # the version field, after the magic
            f.write(struct.pack("<I", version))
        for name in files:
            with open(os.path.join(state_dir, name), "wb") as f:
                f.write(b"ENSIGNSS" + b"\0" * 300)
        line = len(self.server.stderr().splitlines())
        self.server.start()
        self.assertTrue(harness.wait_for(lambda: "published" in self.log_since(line), 10),
                        self.log_since(line))
        self.assertRegex(self.log_since(line), rf"format version {version}, expected 4")
        return line

    def test_3_an_older_state_dir_is_rebuilt_and_its_files_removed(self):
        """snapshot.bin of format version 2 and org-<id>-<generation>.bin
        files: the index is refused, the first build reads everything from
        the database, and the old files are deleted within two
        publications."""
        state_dir = self.server.state_dir
        line = self.restart_with_older_state(
            2, [f"org-{self.org_id(slug)}-1.bin" for slug in ("acme", "big-1")])
        self.assertRegex(self.log_since(line), r"published \([0-9]+ flag configurations in 2 of 2")
        self.assertEqual(self.evaluate("steady").json.get("variant"), "on")
        self.toggle_big()  # the second publication (deletes a moment after it is served)
        self.assertTrue(harness.wait_for(lambda: not [
            n for n in os.listdir(state_dir) if re.fullmatch(r"org-.*\.bin", n)], 5),
            os.listdir(state_dir))
        self.assertEqual(self.server.sanitizer_reports(), [])

    def test_4_a_state_dir_of_chunk_files_is_rebuilt_and_they_are_removed(self):
        """snapshot.bin of format version 3 (chunks as files of their own,
        before "Chunks stored in packs") and its chunk-*.bin files: the
        index is refused, the first build reads everything from the
        database, and its sweep deletes the chunk files at once."""
        state_dir = self.server.state_dir
        self.restart_with_older_state(
            3, [f"chunk-{self.org_id('acme')}-3-{n}.bin" for n in range(3)])
        self.assertEqual(self.evaluate("steady").json.get("variant"), "on")
        self.assertTrue(harness.wait_for(lambda: not [
            n for n in os.listdir(state_dir) if n.startswith("chunk-")], 5),
            os.listdir(state_dir))
        self.assertEqual(self.server.sanitizer_reports(), [])
