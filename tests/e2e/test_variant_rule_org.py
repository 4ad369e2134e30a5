"""test_variant_rule_org.py - end-to-end tests of sql/0024_variant_rule_org.sql:
variants and rules carry their flag's organization (org_id), which the
snapshot source reads a batch of organizations by (doc/choices.md,
"Variants and rules by organization"):

- every write path that makes variant or rule rows fills org_id with the
  flag's organization: a flag created with variants, a variant added, a
  rule added, the rules replaced, targeting copied between environments,
  a revision restored (sql/0013's ensign_rules_put), all in acme while
  globex has flags of the same keys;
- the database refuses a row whose org_id disagrees with its flag's (an
  INSERT or UPDATE of a variant or a rule naming another organization, a
  NULL org_id), and a flag's org_id that would leave its rows behind;
- what evaluation serves comes from those rows (an OFREP answer after the
  writes);
- the migration applied to tables that have rows (undone first, in a
  transaction rolled back after): back-filled, its user triggers enabled
  again (PostgreSQL refuses to alter a table with trigger events pending,
  which the back-fill queues unless they are off).

Run by tests/e2e/run (each class has its own database and ensignd).
"""

import os
import subprocess

import harness
from flagfixture import COUNTRY_NL, FlagTestCase

PROPAGATION_S = 5.0


class VariantRuleOrgTest(FlagTestCase):

    def org_id(self, slug):
        return self.database.query(f"SELECT id FROM orgs WHERE slug = '{slug}'")

    def flag_id(self, slug, org="acme"):
        return self.database.query(f"SELECT f.id FROM flags f JOIN orgs o ON o.id = f.org_id"
                                   f" WHERE o.slug = '{org}' AND f.key = '{slug}'")

    def rows_of(self, table, slug, org="acme"):
        """(rows of the flag, of them carrying the flag's org_id) in table."""
        flag = self.flag_id(slug, org)
        line = self.database.query(
            f"SELECT count(*), count(*) FILTER (WHERE t.org_id = f.org_id) FROM {table} t"
            f" JOIN flags f ON f.id = t.flag_id WHERE f.id = '{flag}'")
        return tuple(int(n) for n in line.split("|"))

    def assertFilled(self, table, slug, rows):
        self.assertEqual(self.rows_of(table, slug), (rows, rows))

    def assertNoMismatch(self):
        self.assertEqual(self.database.query(
            "SELECT (SELECT count(*) FROM variants v JOIN flags f ON f.id = v.flag_id"
            "         WHERE v.org_id IS DISTINCT FROM f.org_id)"
            "     + (SELECT count(*) FROM rules r JOIN flags f ON f.id = r.flag_id"
            "         WHERE r.org_id IS DISTINCT FROM f.org_id)"), "0")

    def refused(self, sql):
        """The text of the error PostgreSQL refused sql with."""
        with self.assertRaises(RuntimeError) as caught:
            self.database.query(sql)
        return str(caught.exception)

    def rules_path(self, slug, env="production"):
        return f"/acme/flags/{slug}/environments/{env}/rules"

    def test_every_write_path_fills_org_id(self):
        # globex has a flag of the same key: an org_id taken from the key
        # alone would be ambiguous
        self.assertStatus(self.call("POST", "/globex/flags", "outsider",
                                    body={"slug": "paths", "type": "string",
                                          "variants": [{"value": "x"}, {"value": "y"}]}), 201)
        self.string_flag("paths", "red", "blue")
        self.assertFilled("variants", "paths", 2)

        self.assertStatus(self.call("POST", "/acme/flags/paths/variants", "member",
                                    body={"value": "green"}), 201)
        self.assertFilled("variants", "paths", 3)

        self.assertStatus(self.add_rule("paths", {"conditions": [COUNTRY_NL],
                                                  "serve": {"variant": "blue"}}), 201)
        self.assertFilled("rules", "paths", 1)
        added = [r for r in self.revisions("paths") if r["action"] == "rule.created"]
        self.assertEqual(len(added), 1)

        replaced = [{"conditions": [COUNTRY_NL], "serve": {"variant": "green"}},
                    {"conditions": [], "serve": {"variant": "red"}}]
        self.assertStatus(self.call("PUT", self.rules_path("paths"), "member",
                                    body={"rules": replaced}), 200)
        self.assertFilled("rules", "paths", 2)

        self.assertStatus(self.call("POST", "/acme/flags/paths/environments/development/copy",
                                    "member", body={"from": "production"}), 200)
        self.assertFilled("rules", "paths", 4)

        restore = f"/acme/flags/paths/revisions/{added[0]['id']}/restore"
        self.assertStatus(self.call("POST", restore, "member"), 200)
        production = self.env_config("paths")["rules"]
        self.assertEqual([r["serve"] for r in production], [{"variant": "blue"}])
        # the whole state at that revision: no rule in development then
        self.assertFilled("rules", "paths", 1)
        self.assertNoMismatch()

    def test_evaluation_serves_the_rows(self):
        self.string_flag("served", "plain", "dutch")
        self.assertStatus(self.configure("served", {"enabled": True,
                                                    "defaultServe": {"variant": "plain"}}), 200)
        self.assertStatus(self.add_rule("served", {"conditions": [COUNTRY_NL],
                                                   "serve": {"variant": "dutch"}}), 201)
        sdk = self.call("POST", "/acme/sdk-keys", "admin",
                        body={"name": "org cols", "environment": "production"})
        secret = self.assertStatus(sdk, 201)["key"]["token"]

        def served(country):
            response = self.server.request(
                "POST", "/ofrep/v1/evaluate/flags/served",
                body={"context": {"targetingKey": "u", "country": country}},
                headers={"Authorization": f"Bearer {secret}"})
            return response.json.get("value") if response.status == 200 else None

        self.assertTrue(harness.wait_for(lambda: served("NL") == "dutch", PROPAGATION_S))
        self.assertEqual(served("DE"), "plain")

    def test_a_mismatched_org_id_is_refused(self):
        self.string_flag("mismatch", "a", "b")
        self.assertStatus(self.add_rule("mismatch", {"serve": {"variant": "b"}}), 201)
        flag, acme, globex = self.flag_id("mismatch"), self.org_id("acme"), self.org_id("globex")
        env = self.database.query("SELECT id FROM environments"
                                  f" WHERE org_id = '{acme}' AND key = 'production'")

        error = self.refused("INSERT INTO variants (flag_id, org_id, key, value)"
                             f" VALUES ('{flag}', '{globex}', 'c', '\"c\"')")
        self.assertIn("variants_flag_org_fkey", error)
        error = self.refused("INSERT INTO variants (flag_id, key, value)"
                             f" VALUES ('{flag}', 'c', '\"c\"')")
        self.assertIn("org_id", error)
        error = self.refused(f"UPDATE variants SET org_id = '{globex}' WHERE flag_id = '{flag}'")
        self.assertIn("variants_flag_org_fkey", error)

        error = self.refused("INSERT INTO rules (flag_id, org_id, environment_id, serve)"
                             f" VALUES ('{flag}', '{globex}', '{env}', '{{\"variant\": \"a\"}}')")
        self.assertIn("rules_flag_org_fkey", error)
        error = self.refused("INSERT INTO rules (flag_id, environment_id, serve)"
                             f" VALUES ('{flag}', '{env}', '{{\"variant\": \"a\"}}')")
        self.assertIn("org_id", error)
        error = self.refused(f"UPDATE rules SET org_id = '{globex}' WHERE flag_id = '{flag}'")
        self.assertIn("rules_flag_org_fkey", error)

        # a flag cannot move away from its rows either
        error = self.refused(f"UPDATE flags SET org_id = '{globex}' WHERE id = '{flag}'")
        self.assertIn("_flag_org_fkey", error)

        # the same rows with the flag's organization are taken
        self.database.query("INSERT INTO variants (flag_id, org_id, key, value)"
                            f" VALUES ('{flag}', '{acme}', 'c', '\"c\"')")
        self.assertFilled("variants", "mismatch", 3)
        self.assertFilled("rules", "mismatch", 1)
        self.assertNoMismatch()

    def test_the_migration_back_fills_existing_rows(self):
        self.string_flag("before", "a", "b")
        self.assertStatus(self.add_rule("before", {"serve": {"variant": "b"}}), 201)
        migration = os.path.join(harness.SRC_DIR, "sql", "0024_variant_rule_org.sql")
        script = (
            "BEGIN;\n"
            "ALTER TABLE variants DROP CONSTRAINT variants_flag_org_fkey;\n"
            "ALTER TABLE rules DROP CONSTRAINT rules_flag_org_fkey;\n"
            "ALTER TABLE flags DROP CONSTRAINT flags_id_org_key;\n"
            "ALTER TABLE variants ADD CONSTRAINT variants_flag_id_fkey FOREIGN KEY (flag_id)"
            " REFERENCES flags (id) ON DELETE CASCADE;\n"
            "ALTER TABLE variants DROP COLUMN org_id;\n"
            "ALTER TABLE rules DROP COLUMN org_id;\n"
            f"\\i {migration}\n"
            "SELECT (SELECT count(*) FROM variants v JOIN flags f ON f.id = v.flag_id"
            "         WHERE v.org_id = f.org_id),"
            "       (SELECT count(*) FROM rules r JOIN flags f ON f.id = r.flag_id"
            "         WHERE r.org_id = f.org_id),"
            "       (SELECT count(*) FROM pg_trigger WHERE tgenabled = 'D'"
            "         AND tgrelid IN ('variants'::regclass, 'rules'::regclass));\n"
            "ROLLBACK;\n")
        result = subprocess.run(
            ["psql", "-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1", "-d", self.database.conninfo],
            input=script, capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        variants = self.count_rows("SELECT count(*) FROM variants")
        rules = self.count_rows("SELECT count(*) FROM rules")
        self.assertGreaterEqual(rules, 1)
        self.assertEqual(result.stdout.strip(), f"{variants}|{rules}|0")

    def test_deleting_a_flag_deletes_its_rows(self):
        self.string_flag("gone", "a", "b")
        self.assertStatus(self.add_rule("gone", {"serve": {"variant": "b"}}), 201)
        flag = self.flag_id("gone")
        self.assertAck(self.call("DELETE", "/acme/flags/gone", "member"))
        self.assertEqual(self.database.query(
            f"SELECT (SELECT count(*) FROM variants WHERE flag_id = '{flag}')"
            f"     + (SELECT count(*) FROM rules WHERE flag_id = '{flag}')"), "0")


if __name__ == "__main__":
    import unittest
    unittest.main()
