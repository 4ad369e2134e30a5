"""test_generation_trigger.py - end-to-end tests of the configuration
generation trigger (sql/0018_change_cost.sql) on a migrated database, no
ensignd: each transaction that changes what evaluation reads moves
config_generation by exactly one and NOTIFYs it, and stamps exactly the
organizations it touched with that generation, however many and in
whatever order; a row without an organization and TRUNCATE stamp every
organization; a rolled-back savepoint leaves no trace.

Statements are fixed test SQL run with psql. Run by tests/e2e/run.
"""

import re
import subprocess
import unittest

import harness

NIL = "00000000-0000-0000-0000-000000000000"


class TriggerTestCase(unittest.TestCase):
    """A migrated database with the rows create_rows() inserts, and psql
    sessions on it; the generation trigger's tests (and the flag-level
    records' in test_flag_changes.py) build on it."""
    database = None
    server = None

    @classmethod
    def setUpClass(cls):
        harness.require_env("ENSIGN_TEST_DATABASE")
        cls.database = harness.Database(cls.__name__)
        try:
            cls.server = harness.Server(cls.database.conninfo, 1)
            harness.ensignctl(cls.server.config_path, "migrate")
            cls.create_rows()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def create_rows(cls):
        pass

    @classmethod
    def tearDownClass(cls):
        if cls.server is not None:
            cls.server.remove()
            cls.server = None
        if cls.database is not None:
            cls.database.drop()
            cls.database = None

    @classmethod
    def query(cls, sql):
        return cls.database.query(sql)

    def run_script(self, script):
        """Runs script in one psql session that LISTENs on ensign_config
        first; returns the payloads of the notifications it received."""
        result = subprocess.run(
            ["psql", "-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1", "-d", self.database.conninfo],
            input="LISTEN ensign_config;\n" + script + "\nSELECT 1;\n",
            capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        return re.findall(r'notification "ensign_config" with payload "(\d+)"', result.stdout)

    def generation(self):
        return int(self.query("SELECT generation FROM config_generation"))


class GenerationTriggerTest(TriggerTestCase):
    @classmethod
    def create_rows(cls):
        cls.query("INSERT INTO orgs (name, slug)"
                  " SELECT 'Org ' || i, 'org-' || i FROM generate_series(1, 5) i")
        cls.query("INSERT INTO flags (org_id, key, name, type)"
                  " SELECT o.id, 'f-' || i, 'F', 'boolean' FROM orgs o, generate_series(1, 3) i")

    def stamped(self, generation):
        """Slugs of the organizations stamped with generation."""
        rows = self.query("SELECT o.slug FROM config_org_generation g JOIN orgs o ON o.id = g.org_id"
                          f" WHERE g.generation = {int(generation)} ORDER BY o.slug")
        return rows.split("\n") if rows else []

    def org_update(self, slug):
        return f"UPDATE flags SET name = name || '.' WHERE org_id = (SELECT id FROM orgs WHERE slug = '{slug}');"

    def test_organizations_touched_in_one_transaction_all_get_the_generation(self):
        before = self.generation()
        notified = self.run_script("BEGIN;" + self.org_update("org-1") + self.org_update("org-2")
                                   + "COMMIT;")
        self.assertEqual(self.generation(), before + 1)
        self.assertEqual(notified, [str(before + 1)])
        self.assertEqual(self.stamped(before + 1), ["org-1", "org-2"])

    def test_interleaved_rows_of_organizations_are_each_stamped(self):
        # rows of org-3, then org-4, then org-3 again: the third is not the
        # row before it, and is still stamped once
        before = self.generation()
        script = ("BEGIN;" + self.org_update("org-3") + self.org_update("org-4")
                  + "INSERT INTO segments (org_id, key, name, conditions)"
                  + " SELECT id, 'seg', 'Seg', '[]' FROM orgs WHERE slug = 'org-3';"
                  + "DELETE FROM segments WHERE key = 'seg';"
                  + self.org_update("org-5") + "COMMIT;")
        notified = self.run_script(script)
        self.assertEqual(self.generation(), before + 1)
        self.assertEqual(notified, [str(before + 1)])
        self.assertEqual(self.stamped(before + 1), ["org-3", "org-4", "org-5"])

    def test_many_new_organizations_in_one_transaction(self):
        before = self.generation()
        notified = self.run_script(
            "BEGIN; INSERT INTO orgs (name, slug)"
            " SELECT 'Many ' || i, 'many-' || i FROM generate_series(1, 2000) i; COMMIT;")
        self.assertEqual(self.generation(), before + 1)
        self.assertEqual(notified, [str(before + 1)])
        stamped = self.stamped(before + 1)
        self.assertEqual(len(stamped), 2000)
        self.assertTrue(all(s.startswith("many-") for s in stamped), stamped[:5])
        self.query("DELETE FROM orgs WHERE slug LIKE 'many-%'")

    def test_a_rolled_back_savepoint_leaves_one_bump(self):
        # the deferred rows fired inside the savepoint fire again at commit,
        # with the settings of the rolled-back firing undone
        before = self.generation()
        notified = self.run_script(
            "BEGIN;" + self.org_update("org-1") + "SAVEPOINT s; SET CONSTRAINTS ALL IMMEDIATE;"
            + self.org_update("org-2") + "ROLLBACK TO SAVEPOINT s;" + self.org_update("org-3")
            + "COMMIT;")
        self.assertEqual(self.generation(), before + 1)
        self.assertEqual(notified, [str(before + 1)])
        self.assertEqual(self.stamped(before + 1), ["org-1", "org-3"])

    def test_a_row_without_organization_stamps_every_organization(self):
        self.query("CREATE TABLE feeding_without_org (n int)")
        self.query("CREATE CONSTRAINT TRIGGER config_generation_bump AFTER INSERT"
                   " ON feeding_without_org DEFERRABLE INITIALLY DEFERRED"
                   " FOR EACH ROW EXECUTE FUNCTION ensign_bump_config_generation()")
        try:
            before = self.generation()
            notified = self.run_script(
                "BEGIN;" + self.org_update("org-1")
                + "INSERT INTO feeding_without_org SELECT generate_series(1, 3);"
                + self.org_update("org-2") + "COMMIT;")
            self.assertEqual(self.generation(), before + 1)
            self.assertEqual(notified, [str(before + 1)])
            every = self.query("SELECT count(*) FROM orgs")
            self.assertEqual(len(self.stamped(before + 1)), int(every))
        finally:
            self.query("DROP TABLE feeding_without_org")

    def test_truncate_stamps_every_organization(self):
        before = self.generation()
        notified = self.run_script("BEGIN; TRUNCATE entity_attributes;" + self.org_update("org-4")
                                   + "COMMIT;")
        self.assertEqual(self.generation(), before + 1)
        self.assertEqual(notified, [str(before + 1)])
        every = self.query("SELECT count(*) FROM orgs")
        self.assertEqual(len(self.stamped(before + 1)), int(every))

    def test_a_transaction_that_changes_nothing_read_does_not_bump(self):
        before = self.generation()
        notified = self.run_script("BEGIN; UPDATE orgs SET name = name; COMMIT;")
        self.assertEqual(self.generation(), before)
        self.assertEqual(notified, [])


if __name__ == "__main__":
    unittest.main()
