"""test_chunks.py - end-to-end tests of a large organization served in
chunks (doc/choices.md "Chunks of a large organization"): node A chunks
organizations of more than 6 flags in chunks of 3 (snapshot_chunk_flags =
3), node B on the same database keeps them whole (0). Both answer every
single and bulk evaluation alike, bodies byte for byte; a one-flag change
rewrites one chunk file of A's (the others keep their inode), its header
appended to a pack by a patch of the kept index, the superseded chunk file
deleted one publication later; a flag
inserted between boundaries goes into the chunk covering it; a chunk grown
past twice the size is split; an emptied chunk is dropped; a segment change
rewrites every chunk; a restart keeps the chunk files and goes on changing
one chunk; a damaged chunk file is refused at start and its organization
built again.

Test data is written with SQL through test_evaluation.Fixture (the
generation trigger records the flag keys, sql/0021). The steps build on
each other, in the order of their names. Run by tests/e2e/run.
"""

import os
import re
import unittest

import harness
from test_evaluation import FLAG_PATH, Fixture, OfrepTestCase

SERVED_S = 10.0
CONTEXT = {"targetingKey": "user-1", "country": "NL"}


def node_view(response):
    """A bulk answer without what names the node: the eventStreams entry
    (its URL has the node's port) and the ETag's hash of that entry."""
    etag = response.headers.get("ETag", "")
    return (response.status, response.body.split(b',"eventStreams"')[0],
            etag.rsplit("-", 1)[0] if etag.count("-") == 3 else etag)


class ChunksTest(OfrepTestCase):
    settings = {"snapshot_chunk_flags": 3}
    node_b = None

    @classmethod
    def create_flags(cls):
        cls.ids = {}
        for n in range(10):
            key = f"f{n:02d}"
            cls.ids[key] = cls.fixture.flag(key, "string", {"a": "A", "b": "B"}, default="a",
                                            off="b", enabled=n % 3 != 2)
        cls.fixture.rule(cls.ids["f04"], [{"attribute": "country", "operator": "in",
                                          "values": ["NL"]}], {"variant": "b"})

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.node_b = harness.Server(cls.database.conninfo, 1, snapshot_chunk_flags=0)
        try:
            cls.node_b.start()
            # healthz answers before the first build: wait until B serves.
            headers = {"Authorization": f"Bearer {cls.sdk_key}"}
            if not harness.wait_for(lambda: cls.node_b.request(
                    "POST", FLAG_PATH, body={}, headers=headers).status == 200, SERVED_S):
                raise AssertionError("node B did not serve its first snapshot")
        except BaseException:
            cls.node_b.remove()
            cls.node_b = None
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        node_b, cls.node_b = cls.node_b, None
        try:
            if node_b is not None:
                node_b.stop_cleanly()
        finally:
            if node_b is not None:
                node_b.remove()
            super().tearDownClass()

    # ---- helpers ----

    def org_id(self):
        return self.database.query("SELECT id FROM orgs WHERE slug = 'acme'")

    def chunk_files(self, server=None):
        """[(file name, inode)] of the chunks of acme on server (A by
        default), in the order its published header (its part, an extent
        of a pack file) names them (the order of their names in its string
        table)."""
        state = (server or self.server).state_dir
        header = harness.snapshot_part_bytes(state, self.org_id())
        if header is None:
            return []
        named = re.findall(rb"chunk-[0-9a-f-]+-\d+-\d+\.bin", header)
        return [(n.decode(), os.stat(os.path.join(state, n.decode())).st_ino) for n in named]

    def request(self, server, key=None, body=None):
        path = FLAG_PATH if key is None else f"{FLAG_PATH}/{key}"
        return server.request("POST", path, body=body if body is not None else {},
                              headers={"Authorization": f"Bearer {self.sdk_key}"})

    def both(self, key=None, body=None):
        return self.request(self.server, key, body), self.request(self.node_b, key, body)

    def assertSameAnswers(self, keys):
        """Every key (and the bulk) answered alike by both nodes, once B
        serves what A serves."""
        for body in ({}, {"context": CONTEXT}):
            def alike():
                a, b = (node_view(r) for r in self.both(None, body))
                return a[0] == 200 and a == b
            self.assertIsNotNone(harness.wait_for(alike, SERVED_S, 0.05),
                                 [node_view(r) for r in self.both(None, body)])
            for key in keys:  # every worker of A (one may still retry a part)
                def same():
                    a, b = self.both(key, body)
                    return (a.status, a.body) == (b.status, b.body)
                if harness.wait_for(same, SERVED_S, 0.02) is None:
                    a, b = self.both(key, body)
                    self.assertEqual((a.status, a.body), (b.status, b.body), key)

    def wait_variant(self, key, variant, body=None):
        def served():
            response = self.request(self.server, key, body)
            return response.status == 200 and response.json.get("variant") == variant
        self.assertIsNotNone(harness.wait_for(served, SERVED_S, 0.02),
                             self.request(self.server, key, body).body)

    def wait_chunks(self, predicate):
        self.assertIsNotNone(harness.wait_for(lambda: predicate(self.chunk_files()), SERVED_S,
                                              0.05), self.chunk_files())

    def keys(self):
        return self.database.query(
            "SELECT string_agg(key, ',' ORDER BY key COLLATE \"C\") FROM flags").split(",")

    # ---- the steps ----

    def test_1_chunked_and_answered_as_whole(self):
        files = self.chunk_files()
        self.assertEqual(len(files), 3, files)  # 10 flags: 3, 3 and 4
        self.assertEqual(self.chunk_files(self.node_b), [])
        self.assertSameAnswers(self.keys() + ["nope", "f035"])
        a = self.request(self.server, None, {"context": CONTEXT}).json
        self.assertEqual([f["key"] for f in a["flags"]], self.keys())
        variants = {f["key"]: f.get("variant") for f in a["flags"]}
        self.assertEqual(variants["f04"], "b")  # its rule, in the middle chunk
        self.assertEqual(self.request(self.server, "nope").status, 404)

    def test_2_one_flag_change_rewrites_one_chunk(self):
        before = self.chunk_files()
        self.fixture.set_default(self.ids["f03"], "b")
        self.wait_variant("f03", "b")
        after = self.chunk_files()
        self.assertEqual(len(after), 3)
        self.assertEqual(after[0], before[0])
        self.assertEqual(after[2], before[2])
        self.assertNotEqual(after[1][0], before[1][0])
        # the header was appended to a pack and named by a patch of the
        # kept index (doc/choices.md "Chunks and packs together")
        self.assertRegex(self.server.stderr(), r"published \(\d+ flag configurations in 1 of"
                         r" \d+ organizations.*the index patched\)")
        self.__class__.superseded = before[1][0]
        self.assertSameAnswers(self.keys())

    def test_3_insert_between_boundaries(self):
        before = self.chunk_files()
        self.ids["f035"] = self.fixture.flag("f035", "string", {"a": "A", "b": "B"}, default="b")
        self.wait_variant("f035", "b")
        # the chunk test 2 superseded is deleted one publication later
        self.assertFalse(os.path.exists(os.path.join(self.server.state_dir, self.superseded)))
        after = self.chunk_files()
        self.assertEqual(after[0], before[0])  # f035 sorts between f03 and f04: chunk 1
        self.assertEqual(after[2], before[2])
        self.assertNotEqual(after[1][0], before[1][0])
        self.assertSameAnswers(self.keys())

    def test_4_a_chunk_grown_past_twice_the_size_is_split(self):
        before = self.chunk_files()
        for suffix in "abc":  # chunk 2 (f06 .. f09) grows to 7 > 2 * 3
            self.ids[f"f07{suffix}"] = self.fixture.flag(f"f07{suffix}", "string",
                                                         {"a": "A", "b": "B"}, default="b")
        self.wait_variant("f07c", "b")
        self.wait_chunks(lambda files: len(files) == 4)
        after = self.chunk_files()
        self.assertEqual(after[0], before[0])
        self.assertEqual(after[1], before[1])
        self.assertSameAnswers(self.keys())

    def test_5_an_emptied_chunk_is_dropped(self):
        before = self.chunk_files()
        for key in ("f00", "f01", "f02"):
            self.fixture.delete_flag(self.ids.pop(key))
        self.wait_chunks(lambda files: len(files) == 3)
        after = self.chunk_files()
        # the chunks after the dropped one keep their files
        self.assertEqual(after, before[1:])
        self.assertEqual(self.request(self.server, "f00").status, 404)
        self.assertSameAnswers(self.keys() + ["f00"])

    def test_6_a_segment_change_rewrites_every_chunk(self):
        before = self.chunk_files()
        self.fixture.run("INSERT INTO segments (org_id, key, name, conditions)"
                         " SELECT id, 'dutch', 'Dutch', :'conditions'::jsonb FROM orgs"
                         " WHERE slug = :'org'",
                         conditions='[{"attribute": "country", "operator": "eq", "values": ["NL"]}]')
        self.fixture.rule(self.ids["f09"], [{"segment": "dutch"}], {"variant": "b"})
        self.wait_variant("f09", "b", {"context": CONTEXT})
        after = self.chunk_files()
        self.assertEqual(len(after), len(before))
        self.assertFalse({n for n, _ in after} & {n for n, _ in before})
        self.assertSameAnswers(self.keys())

    def test_7_restart_keeps_the_chunks(self):
        before = self.chunk_files()
        self.server.stop_cleanly()
        self.server.start()
        self.wait_variant("f09", "b", {"context": CONTEXT})
        self.assertEqual(self.chunk_files(), before)
        self.assertIn("snapshot parts on disk are kept", self.server.stderr())
        self.assertEqual(self.request(self.server, "f06").json["variant"], "a")
        self.fixture.set_default(self.ids["f06"], "b")
        self.wait_variant("f06", "b")
        after = self.chunk_files()
        self.assertEqual(len(after), len(before))
        self.assertEqual(sum(a != b for a, b in zip(after, before)), 1, (before, after))
        self.assertSameAnswers(self.keys())

    def test_8_a_damaged_chunk_is_built_again(self):
        self.server.stop_cleanly()
        before = self.chunk_files()
        name, _ = before[1]
        path = os.path.join(self.server.state_dir, name)
        with open(path, "r+b") as f:
            f.seek(-5, os.SEEK_END)
            f.write(b"#")
        self.server.start()
        self.assertIsNotNone(harness.wait_for(
            lambda: "is not usable, its organization is built again" in self.server.stderr(),
            SERVED_S, 0.05))
        # read whole again: every chunk written anew (a name or an inode new
        # each; a freed inode number may come back under another name)
        self.wait_chunks(lambda files: files and not set(files) & set(before))
        self.assertSameAnswers(self.keys())
        self.assertEqual(self.server.sanitizer_reports(), [])


class ChunkHeaderReclaimTest(OfrepTestCase):
    """A chunked organization's header in a pack being reclaimed is moved
    unchanged (doc/choices.md "Chunks and packs together"): it names its
    chunk files by name, so they stay (same names, same inodes) and answer;
    the next change of the organization reads the held chunks from the
    moved header and rewrites one chunk. big-1 (6 flags: whole) has large
    variant values (not flag-1's, the one toggled), so its changes fill
    1 MiB packs fast."""

    settings = {"snapshot_pack_mb": 1, "snapshot_chunk_flags": 3}

    @classmethod
    def create_flags(cls):
        from test_packs import many_organizations
        cls.ids = {}
        for n in range(8):  # acme: 8 flags > 2 * 3, in chunks
            cls.ids[f"f{n}"] = cls.fixture.flag(f"f{n}", "string", {"a": "A", "b": "B"},
                                                default="a")
        many_organizations(cls.database.conninfo, "big", 1, flags=6)
        harness.psql(cls.database.conninfo, """
            UPDATE variants v SET value = to_jsonb(repeat(md5(v.id::text), 1500))
            FROM flags f JOIN orgs o ON o.id = f.org_id
            WHERE f.id = v.flag_id AND o.slug = 'big-1' AND f.key <> 'flag-1'""")
        cls.big = Fixture(cls.database.conninfo, org_slug="big-1")
        cls.big_key, _ = cls.big.sdk_key()
        cls.big_flag = cls.big.run("SELECT id FROM flags WHERE key = 'flag-1' AND org_id ="
                                   " (SELECT id FROM orgs WHERE slug = 'big-1')")

    def org_id(self, slug):
        return self.database.query(f"SELECT id FROM orgs WHERE slug = '{slug}'")

    def chunk_files(self):
        state = self.server.state_dir
        header = harness.snapshot_part_bytes(state, self.org_id("acme"))
        named = re.findall(rb"chunk-[0-9a-f-]+-\d+-\d+\.bin", header or b"")
        return [(n.decode(), os.stat(os.path.join(state, n.decode())).st_ino) for n in named]

    def toggle_big(self):
        on = self.evaluate("flag-1", sdk_key=self.big_key).json.get("variant") == "on"
        self.big.set_enabled(self.big_flag, not on)
        want = "off" if on else "on"
        served = harness.wait_for(
            lambda: self.evaluate("flag-1", sdk_key=self.big_key).json.get("variant") == want,
            SERVED_S, 0.02)
        self.assertIsNotNone(served, (self.evaluate("flag-1", sdk_key=self.big_key).body,
                                      self.server.stderr()[-3000:]))

    def test_a_moved_header_keeps_its_chunks(self):
        acme = self.org_id("acme")
        before = harness.snapshot_parts(self.server.state_dir)
        self.assertGreater(before[self.org_id("big-1")][2], 100_000)
        chunks = self.chunk_files()
        self.assertEqual(len(chunks), 2, chunks)  # 8 flags: 3 and 5
        for _ in range(40):
            self.toggle_big()
            if harness.snapshot_parts(self.server.state_dir)[acme][0] != before[acme][0]:
                break
        else:
            self.fail(f"acme's header was not moved: {harness.snapshot_parts(self.server.state_dir)}")
        now = harness.snapshot_parts(self.server.state_dir)
        self.assertEqual(now[acme][3], before[acme][3])  # moved, not rebuilt
        self.assertEqual(now[acme][2], before[acme][2])  # the same bytes
        self.assertRegex(self.server.stderr(), r"parts \([0-9]+ bytes\) moved to the open pack")
        self.assertEqual(self.chunk_files(), chunks)
        for n in range(8):
            self.assertEqual(self.evaluate(f"f{n}").json.get("variant"), "a")
        # the next change reads the held chunks from the moved header
        self.fixture.set_default(self.ids["f6"], "b")
        self.wait_served(lambda: self.evaluate("f6").json.get("variant") == "b")
        after = self.chunk_files()
        self.assertEqual(after[0], chunks[0])
        self.assertNotEqual(after[1][0], chunks[1][0])
        self.assertEqual(self.evaluate("f1").json.get("variant"), "a")
        self.assertEqual(self.server.sanitizer_reports(), [])


if __name__ == "__main__":
    unittest.main()
