"""test_flag_changes.py - end-to-end tests of the flag-level change records
of the generation trigger (sql/0021_flag_changes.sql) on a migrated
database, no ensignd: a transaction that changes rows of flags, variants,
flag configurations or rules records each flag key it touched in
config_flag_generation with its generation and leaves the organization's
whole_generation alone; rows of segments, entities and environments,
TRUNCATE and an organization's first record mark it whole; SDK keys move
the organization's generation only; a rolled-back savepoint records
nothing; the invariants of 0018 (one bump, one NOTIFY) still hold.

Statements are fixed test SQL run with psql. Run by tests/e2e/run.
"""

import subprocess
import unittest

import harness
from test_generation_trigger import TriggerTestCase


class FlagChangesTest(TriggerTestCase):
    @classmethod
    def create_rows(cls):
        cls.query("INSERT INTO orgs (name, slug)"
                  " SELECT 'Org ' || i, 'org-' || i FROM generate_series(1, 3) i")
        cls.query("INSERT INTO flags (org_id, key, name, type)"
                  " SELECT o.id, 'f-' || i, 'F', 'boolean'"
                  " FROM orgs o, generate_series(1, 4) i")
        cls.query("INSERT INTO variants (flag_id, org_id, key, value)"
                  " SELECT f.id, f.org_id, v.key, v.value FROM flags f,"
                  " (VALUES ('on', 'true'::jsonb), ('off', 'false'::jsonb)) AS v (key, value)")
        cls.query("INSERT INTO flag_environments (flag_id, environment_id, default_serve)"
                  " SELECT f.id, e.id, '{\"variant\": \"off\"}' FROM flags f"
                  " JOIN environments e ON e.org_id = f.org_id")

    def run_sql(self, script):
        """Runs script in one psql session; its output."""
        result = subprocess.run(
            ["psql", "-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1", "-d", self.database.conninfo],
            input=script, capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        return result.stdout

    def org(self, slug):
        """(generation, whole_generation) of an organization."""
        row = self.query("SELECT g.generation || ' ' || g.whole_generation"
                         " FROM config_org_generation g JOIN orgs o ON o.id = g.org_id"
                         f" WHERE o.slug = '{slug}'")
        return tuple(int(x) for x in row.split())

    def flags_at(self, generation):
        """'slug/key' of every flag key recorded at generation."""
        rows = self.query("SELECT o.slug || '/' || c.flag_key FROM config_flag_generation c"
                          " JOIN orgs o ON o.id = c.org_id"
                          f" WHERE c.generation = {int(generation)} ORDER BY 1")
        return rows.split("\n") if rows else []

    @staticmethod
    def flag_id(slug, key):
        return (f"(SELECT f.id FROM flags f JOIN orgs o ON o.id = f.org_id"
                f" WHERE o.slug = '{slug}' AND f.key = '{key}')")

    @staticmethod
    def env_id(slug, key="production"):
        return (f"(SELECT e.id FROM environments e JOIN orgs o ON o.id = e.org_id"
                f" WHERE o.slug = '{slug}' AND e.key = '{key}')")

    def commit(self, statements):
        """Runs statements in one transaction; asserts one bump and one
        NOTIFY; returns the new generation."""
        before = self.generation()
        notified = self.run_script("BEGIN;" + statements + "COMMIT;")
        self.assertEqual(self.generation(), before + 1)
        self.assertEqual(notified, [str(before + 1)])
        return before + 1

    def test_rows_of_flags_record_their_keys_not_the_whole_organization(self):
        _, whole = self.org("org-1")
        g = self.commit(
            f"UPDATE flags SET name = 'G' WHERE id = {self.flag_id('org-1', 'f-1')};"
            f"UPDATE variants SET label = 'x' WHERE flag_id = {self.flag_id('org-1', 'f-2')};"
            f"UPDATE flag_environments SET enabled = NOT enabled"
            f" WHERE flag_id = {self.flag_id('org-1', 'f-3')};"
            f"INSERT INTO rules (flag_id, org_id, environment_id, serve) VALUES"
            f" ({self.flag_id('org-2', 'f-4')}, (SELECT id FROM orgs WHERE slug = 'org-2'),"
            f" {self.env_id('org-2')}, '{{\"variant\": \"on\"}}');")
        self.assertEqual(self.flags_at(g), ["org-1/f-1", "org-1/f-2", "org-1/f-3", "org-2/f-4"])
        self.assertEqual(self.org("org-1"), (g, whole))
        self.assertEqual(self.org("org-2")[0], g)
        self.assertLess(self.org("org-2")[1], g)
        self.assertLess(self.org("org-3")[0], g)

    def test_a_new_flag_and_a_deleted_flag_are_recorded_by_key(self):
        # the deleted flag's variants and configurations are gone at commit:
        # its own row records it
        g = self.commit(
            "INSERT INTO flags (org_id, key, name, type)"
            " SELECT id, 'between', 'B', 'boolean' FROM orgs WHERE slug = 'org-3';"
            f"DELETE FROM flags WHERE id = {self.flag_id('org-3', 'f-2')};")
        self.assertEqual(self.flags_at(g), ["org-3/between", "org-3/f-2"])
        self.assertLess(self.org("org-3")[1], g)
        g = self.commit(f"DELETE FROM flags WHERE id = {self.flag_id('org-3', 'between')};")
        self.assertEqual(self.flags_at(g), ["org-3/between"])

    def test_a_renamed_flag_records_both_keys(self):
        g = self.commit(f"UPDATE flags SET key = 'f-1-renamed' WHERE id = {self.flag_id('org-2', 'f-1')};")
        self.assertEqual(self.flags_at(g), ["org-2/f-1", "org-2/f-1-renamed"])
        self.commit(f"UPDATE flags SET key = 'f-1' WHERE id = {self.flag_id('org-2', 'f-1-renamed')};")

    def test_segments_entities_and_environments_mark_the_organization_whole(self):
        g = self.commit("INSERT INTO segments (org_id, key, name)"
                        " SELECT id, 'seg', 'Seg' FROM orgs WHERE slug = 'org-1';")
        self.assertEqual(self.org("org-1"), (g, g))
        self.assertEqual(self.flags_at(g), [])
        g = self.commit("INSERT INTO entities (org_id, key, label)"
                        " SELECT id, 'user', 'User' FROM orgs WHERE slug = 'org-2';")
        self.assertEqual(self.org("org-2"), (g, g))
        # a new environment configures every flag: whole, and no key recorded
        g = self.commit("INSERT INTO environments (org_id, key, name, sort_order)"
                        " SELECT id, 'qa', 'QA', 9 FROM orgs WHERE slug = 'org-3';")
        self.assertEqual(self.org("org-3"), (g, g))
        self.assertEqual(self.flags_at(g), [])
        self.commit(f"DELETE FROM environments WHERE id = {self.env_id('org-3', 'qa')};")

    def test_a_flag_row_after_a_whole_mark_of_its_organization_records_nothing(self):
        g = self.commit("INSERT INTO segments (org_id, key, name)"
                        " SELECT id, 'seg-then-flag', 'S' FROM orgs WHERE slug = 'org-1';"
                        f"UPDATE flags SET name = 'H' WHERE id = {self.flag_id('org-1', 'f-4')};")
        self.assertEqual(self.org("org-1"), (g, g))
        self.assertEqual(self.flags_at(g), [])

    def test_sdk_keys_move_the_generation_only(self):
        _, whole = self.org("org-2")
        g = self.commit("INSERT INTO sdk_keys (org_id, environment_id, name, token_digest, prefix,"
                        f" last_four) SELECT id, {self.env_id('org-2')}, 'k', repeat('ab', 32),"
                        " 'svc_sdk_abcd', 'abcd' FROM orgs WHERE slug = 'org-2';")
        self.assertEqual(self.org("org-2"), (g, whole))
        self.assertEqual(self.flags_at(g), [])

    def test_a_new_organization_is_whole(self):
        g = self.commit("INSERT INTO orgs (name, slug) VALUES ('New', 'new-org');")
        self.assertEqual(self.org("new-org"), (g, g))

    def test_truncate_marks_every_organization_whole(self):
        g = self.commit("TRUNCATE entity_attributes;"
                        f"UPDATE flags SET name = 'T' WHERE id = {self.flag_id('org-1', 'f-1')};")
        every = int(self.query("SELECT count(*) FROM orgs"))
        whole = self.query(f"SELECT count(*) FROM config_org_generation WHERE whole_generation = {g}")
        self.assertEqual(int(whole), every)

    def test_a_rolled_back_savepoint_records_no_flag(self):
        g = self.commit(
            f"UPDATE flags SET name = 'S' WHERE id = {self.flag_id('org-2', 'f-2')};"
            "SAVEPOINT s; SET CONSTRAINTS ALL IMMEDIATE;"
            f"UPDATE flags SET name = 'S' WHERE id = {self.flag_id('org-2', 'f-3')};"
            "ROLLBACK TO SAVEPOINT s;"
            f"UPDATE flags SET name = 'S' WHERE id = {self.flag_id('org-2', 'f-4')};")
        self.assertEqual(self.flags_at(g), ["org-2/f-2", "org-2/f-4"])

    def test_many_flags_in_one_transaction_each_recorded_once(self):
        g = self.commit("INSERT INTO flags (org_id, key, name, type)"
                        " SELECT o.id, 'bulk-' || i, 'B', 'string' FROM orgs o,"
                        " generate_series(1, 3000) i WHERE o.slug = 'org-3';")
        recorded = self.query(f"SELECT count(*) FROM config_flag_generation WHERE generation = {g}")
        self.assertEqual(int(recorded), 3000)
        self.assertLess(self.org("org-3")[1], g)
        self.commit("DELETE FROM flags WHERE key LIKE 'bulk-%';")

    def test_a_chunk_range_of_keys_is_read_through_the_byte_order_index(self):
        plan = self.run_sql(
            "SET enable_seqscan = off; EXPLAIN SELECT id FROM flags"
            " WHERE org_id = (SELECT id FROM orgs WHERE slug = 'org-1')"
            " AND key COLLATE \"C\" >= 'f-2' AND key COLLATE \"C\" < 'f-4'")
        self.assertIn("flags_org_key_bytes", plan)


if __name__ == "__main__":
    unittest.main()
