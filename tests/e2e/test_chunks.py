"""test_chunks.py - end-to-end tests of a large organization served in
chunks (doc/choices.md "Chunks of a large organization"): node A chunks
organizations of more than 6 flags in chunks of 3 (snapshot_chunk_flags =
3), node B on the same database keeps them whole (0). Both answer every
single and bulk evaluation alike, bodies byte for byte. A's chunks are
extents of its pack files (doc/choices.md "Chunks stored in packs"): a
one-flag change appends one chunk (the others keep their extent) and its
header, named by a patch of the kept index; no chunk file is ever written
and a worker maps pack files only; a flag inserted between boundaries goes
into the chunk covering it; a chunk grown past twice the size is split; an
emptied chunk is dropped; a segment change rewrites every chunk; a restart
keeps the chunks, serves at once and goes on changing one chunk; a chunk
file of an older ensignd is deleted at start; a damaged chunk is refused at
start and its organization built again.

Test data is written with SQL through test_evaluation.Fixture (the
generation trigger records the flag keys, sql/0021). The steps build on
each other, in the order of their names. Run by tests/e2e/run.
"""

import os
import re
import unittest

import harness
from test_evaluation import FLAG_PATH, Fixture, OfrepTestCase
from test_packs import state_mappings

SERVED_S = 10.0
CONTEXT = {"targetingKey": "user-1", "country": "NL"}


def node_view(response):
    """A bulk answer without what names the node: the eventStreams entry
    (its URL has the node's port) and the ETag's hash of that entry."""
    etag = response.headers.get("ETag", "")
    return (response.status, response.body.split(b',"eventStreams"')[0],
            etag.rsplit("-", 1)[0] if etag.count("-") == 3 else etag)


class ChunksTest(harness.SecondNode, OfrepTestCase):
    settings = {"snapshot_chunk_flags": 3}
    second_node_workers = 1
    second_node_settings = {"snapshot_chunk_flags": 0}  # node B: every organization whole

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
        # healthz answers before the first build: wait until B serves.
        headers = {"Authorization": f"Bearer {cls.sdk_key}"}
        if not harness.wait_for(lambda: cls.node_b.request(
                "POST", FLAG_PATH, body={}, headers=headers).status == 200, SERVED_S):
            cls.tearDownClass()
            raise AssertionError("node B did not serve its first snapshot")

    # ---- helpers ----

    def org_id(self):
        return self.database.query("SELECT id FROM orgs WHERE slug = 'acme'")

    def chunk_files(self, server=None):
        """[(pack file, offset, length, generation)] of the chunks of acme
        on server (A by default), in the order its published header (its
        part, an extent of a pack file) names them."""
        return harness.snapshot_chunks((server or self.server).state_dir, self.org_id())

    def assertPacksOnly(self):
        """No chunk file in A's state directory, and every file A's workers
        map there is the index or a pack."""
        state = self.server.state_dir
        self.assertEqual([n for n in os.listdir(state) if n.startswith("chunk-")], [])
        workers = [pid for pid, title in self.server.children().items()
                   if title.startswith("ensignd: worker")]
        self.assertTrue(workers, self.server.children())
        for pid in workers:
            names = {name for _, _, name in state_mappings(pid, state)}
            self.assertTrue(names, pid)
            # besides packs, only the index (a visible one, index-<generation>.bin,
            # or snapshot.bin: doc/choices.md "Visible before durable")
            self.assertEqual({n for n in names if not re.fullmatch(r"pack-\d+\.bin", n)
                              and not re.fullmatch(r"index-\d+\.bin", n)},
                             {"snapshot.bin"} & names, names)

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
        self.assertNotEqual(after[1], before[1])
        self.assertGreater(after[1][3], before[1][3])  # at the new generation
        # the header was appended to a pack and named by a patch of the
        # kept index (doc/choices.md "Chunks and packs together")
        self.assertRegex(self.server.stderr(), r"published \(\d+ flag configurations in 1 of"
                         r" \d+ organizations.*the index patched\)")
        self.assertSameAnswers(self.keys())
        self.assertPacksOnly()

    def test_3_insert_between_boundaries(self):
        before = self.chunk_files()
        self.ids["f035"] = self.fixture.flag("f035", "string", {"a": "A", "b": "B"}, default="b")
        self.wait_variant("f035", "b")
        after = self.chunk_files()
        self.assertEqual(after[0], before[0])  # f035 sorts between f03 and f04: chunk 1
        self.assertEqual(after[2], before[2])
        self.assertNotEqual(after[1], before[1])
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
        self.assertFalse(set(after) & set(before))
        self.assertSameAnswers(self.keys())
        self.assertPacksOnly()

    def test_7_restart_keeps_the_chunks(self):
        before = self.chunk_files()
        self.server.stop_cleanly()
        # a chunk file an older ensignd left (and its temporary) is swept
        state = self.server.state_dir
        leftovers = [f"chunk-{self.org_id()}-1-0.bin", f"chunk-{self.org_id()}-1-1.bin.tmp"]
        for name in leftovers:
            with open(os.path.join(state, name), "wb") as f:
                f.write(b"ENSIGNSS")
        self.server.start()
        # served at once, from the files on disk (the same answers as B)
        self.assertEqual(self.request(self.server, "f09", {"context": CONTEXT}).json["variant"],
                         "b")
        self.assertEqual(self.chunk_files(), before)
        self.assertIn("snapshot parts on disk are kept", self.server.stderr())
        self.assertIsNotNone(harness.wait_for(
            lambda: not set(leftovers) & set(os.listdir(state)), SERVED_S, 0.05),
            os.listdir(state))
        self.assertEqual(self.request(self.server, "f06").json["variant"], "a")
        self.fixture.set_default(self.ids["f06"], "b")
        self.wait_variant("f06", "b")
        after = self.chunk_files()
        self.assertEqual(len(after), len(before))
        self.assertEqual(sum(a != b for a, b in zip(after, before)), 1, (before, after))
        self.assertSameAnswers(self.keys())
        self.assertPacksOnly()

    def test_8_a_damaged_chunk_is_built_again(self):
        self.server.stop_cleanly()
        before = self.chunk_files()
        name, start, length, _ = before[1]
        path = os.path.join(self.server.state_dir, name)
        with open(path, "r+b") as f:
            f.seek(start + length - 5)
            f.write(b"#")
        self.server.start()
        self.assertIsNotNone(harness.wait_for(
            lambda: "is not usable, its organization is built again" in self.server.stderr(),
            SERVED_S, 0.05))
        # read whole again: every chunk appended anew
        self.wait_chunks(lambda files: files and not set(files) & set(before))
        self.assertSameAnswers(self.keys())
        self.assertEqual(self.server.sanitizer_reports(), [])


class ChunkHeaderReclaimTest(OfrepTestCase):
    """A chunked organization whose header and chunks are in a pack being
    reclaimed is moved (doc/choices.md "Chunks stored in packs"): its
    chunks there are copied to the open pack and its header rewritten at
    the same generation, naming the new extents; it answers as before, the
    old pack is removed, and the next change of the organization keeps the
    moved chunks and rewrites one. big-1 (6 flags: whole) has large
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
        return harness.snapshot_chunks(self.server.state_dir, self.org_id("acme"))

    def toggle_big(self):
        on = self.evaluate("flag-1", sdk_key=self.big_key).json.get("variant") == "on"
        self.big.set_enabled(self.big_flag, not on)
        want = "off" if on else "on"
        served = harness.wait_for(
            lambda: self.evaluate("flag-1", sdk_key=self.big_key).json.get("variant") == want,
            SERVED_S, 0.02)
        self.assertIsNotNone(served, (self.evaluate("flag-1", sdk_key=self.big_key).body,
                                      self.server.stderr()[-3000:]))

    def test_a_moved_header_moves_its_chunks(self):
        acme = self.org_id("acme")
        before = harness.snapshot_parts(self.server.state_dir)
        self.assertGreater(before[self.org_id("big-1")][2], 100_000)
        chunks = self.chunk_files()
        self.assertEqual(len(chunks), 2, chunks)  # 8 flags: 3 and 5
        self.assertEqual({c[0] for c in chunks}, {before[acme][0]})  # in the header's pack
        for _ in range(40):
            self.toggle_big()
            if harness.snapshot_parts(self.server.state_dir)[acme][0] != before[acme][0]:
                break
        else:
            self.fail(f"acme's header was not moved: {harness.snapshot_parts(self.server.state_dir)}")
        now = harness.snapshot_parts(self.server.state_dir)
        self.assertEqual(now[acme][3], before[acme][3])  # moved, not rebuilt
        self.assertEqual(now[acme][2], before[acme][2])  # the same length: its records patched
        self.assertRegex(self.server.stderr(), r"parts \([0-9]+ bytes\) moved to the open pack")
        moved = self.chunk_files()
        self.assertEqual([(c[2], c[3]) for c in moved], [(c[2], c[3]) for c in chunks])
        self.assertFalse({c[0] for c in moved} & {before[acme][0]}, (moved, now[acme]))
        for n in range(8):
            self.assertEqual(self.evaluate(f"f{n}").json.get("variant"), "a")
        # the old pack goes once nothing names it
        self.assertIsNotNone(harness.wait_for(
            lambda: (self.toggle_big() or
                     before[acme][0] not in harness.pack_files(self.server.state_dir)),
            SERVED_S * 3, 0.05), harness.pack_files(self.server.state_dir))
        # the next change keeps the chunk it did not touch (at its
        # generation; it may move again on the way) and rewrites the other
        moved = self.chunk_files()
        self.fixture.set_default(self.ids["f6"], "b")
        self.wait_served(lambda: self.evaluate("f6").json.get("variant") == "b")
        after = self.chunk_files()
        self.assertEqual(after[0][2:], moved[0][2:])
        self.assertGreater(after[1][3], moved[1][3])
        self.assertEqual(self.evaluate("f1").json.get("variant"), "a")
        self.assertEqual(self.server.sanitizer_reports(), [])


if __name__ == "__main__":
    unittest.main()
