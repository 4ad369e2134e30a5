"""test_bench_scale.py - end-to-end tests of the data set of contrib/bench
part scale (contrib/bench.d/scale.sql) at a small size: 200 organizations
of the same shape as SCALE=full (the largest of 2,000 flags, about 21,500
flags in all), loaded before ensignd starts.

The invariants the API keeps hold over every loaded row
(contrib/bench.d/scale_check.sql), and the check fails when one breaks; a
sample checked through the API (contrib/bench.d/scale.py check) evaluates
as scale.sql configured it, shows the flag detail and list, and serves a
rule PATCH. The load and first-build times are printed, never asserted.
Run by tests/e2e/run.
"""

import os
import subprocess
import sys
import time
import unittest

import harness

BENCH_DIR = os.path.join(harness.SRC_DIR, "contrib", "bench.d")
ORGS = 200
BIG = 2000


def run_psql(conninfo, *args, stdin=None):
    return subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", conninfo, *args],
                          input=stdin, capture_output=True, text=True, timeout=300)


def scale_py(*args):
    return subprocess.run([sys.executable, os.path.join(BENCH_DIR, "scale.py"), *args],
                          capture_output=True, text=True, timeout=120)


class ScaleDataSetTest(harness.ServerTestCase):

    @classmethod
    def prepare(cls):
        super().prepare()
        started = time.monotonic()
        result = run_psql(cls.database.conninfo, "-v", f"orgs={ORGS}", "-v", f"big={BIG}",
                          "-v", f"owner={cls.identity.email}",
                          "-f", os.path.join(BENCH_DIR, "scale.sql"))
        if result.returncode != 0:
            raise AssertionError(f"scale.sql failed:\n{result.stderr}")
        print(f"\nscale.sql: {ORGS} organizations in {time.monotonic() - started:.1f} s",
              file=sys.stderr)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        started = time.monotonic()
        result = scale_py("serves", str(cls.server.port), scale_py("key", str(ORGS)).stdout.strip(),
                          "120")
        print(f"first build: the last organization served {time.monotonic() - started:.1f} s"
              " after /v1/healthz answered", file=sys.stderr)
        if result.returncode != 0:
            cls.tearDownClass()
            raise AssertionError(f"the last organization is not served: {result.stderr}")

    def count(self, sql):
        return int(self.database.query(sql))

    def test_invariants_hold(self):
        result = run_psql(self.database.conninfo, "-f", os.path.join(BENCH_DIR, "scale_check.sql"))
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn(f" {ORGS} |", result.stdout)  # the counts line: orgs first

    def test_the_check_sees_a_broken_invariant(self):
        """One flag's production value wrong, one configuration missing, a
        trigger the loader does not stand in for: each fails the check (in a
        transaction that is never committed)."""
        check = os.path.join(BENCH_DIR, "scale_check.sql")
        breaks = [
            "UPDATE flags SET production_value = 'false' WHERE key = 'flag-000002'"
            " AND org_id = (SELECT id FROM orgs WHERE slug = 'scale-00009');",
            "DELETE FROM flag_environments WHERE flag_id = (SELECT f.id FROM flags f"
            " JOIN orgs o ON o.id = f.org_id WHERE o.slug = 'scale-00009' AND f.key = 'flag-000003')"
            " AND environment_id = (SELECT e.id FROM environments e JOIN orgs o ON o.id = e.org_id"
            " WHERE o.slug = 'scale-00009' AND e.key = 'preview');",
            # a trigger scale.sql does not know it must stand in for
            "CREATE FUNCTION pg_temp.noop() RETURNS trigger LANGUAGE plpgsql"
            " AS $$ BEGIN RETURN NULL; END $$;"
            " CREATE TRIGGER zz_new AFTER INSERT ON flags"
            " FOR EACH ROW EXECUTE FUNCTION pg_temp.noop();",
        ]
        for statement in breaks:
            with self.subTest(statement=statement):
                result = run_psql(self.database.conninfo,
                                  stdin=f"BEGIN;\n{statement}\n\\i {check}\nROLLBACK;\n")
                self.assertNotEqual(result.returncode, 0, result.stdout)
                self.assertIn("an invariant does not hold", result.stderr)

    def test_shape(self):
        self.assertEqual(self.count("SELECT count(*) FROM orgs WHERE slug LIKE 'scale-%'"), ORGS)
        sizes = self.database.query(
            "SELECT string_agg(o.slug || '=' || (SELECT count(*) FROM flags f"
            " WHERE f.org_id = o.id), ' ' ORDER BY o.slug) FROM orgs o"
            " WHERE o.slug BETWEEN 'scale-00001' AND 'scale-00008'").split()
        self.assertEqual(sizes, [f"scale-00001={BIG}", f"scale-00002={BIG // 4}",
                                 f"scale-00003={BIG * 3 // 10}", f"scale-00004={BIG * 4 // 10}",
                                 f"scale-00005={BIG // 2}", "scale-00006=2000",
                                 "scale-00007=350", "scale-00008=20"])
        smallest, largest = self.database.query(
            "SELECT min(c), max(c) FROM (SELECT count(*) AS c FROM flags f JOIN orgs o"
            " ON o.id = f.org_id WHERE o.slug > 'scale-00008' AND o.slug LIKE 'scale-%'"
            " GROUP BY o.id) AS s").split("|")
        self.assertGreaterEqual(int(smallest), 30)
        self.assertLessEqual(int(largest), 118)
        flags = self.count("SELECT count(*) FROM flags f JOIN orgs o ON o.id = f.org_id"
                           " WHERE o.slug LIKE 'scale-%'")
        self.assertEqual(self.count("SELECT count(*) FROM rules r JOIN flags f ON f.id = r.flag_id"
                                    " JOIN orgs o ON o.id = f.org_id WHERE o.slug LIKE 'scale-%'"),
                         flags)
        self.assertEqual(self.count("SELECT count(*) FROM sdk_keys k JOIN orgs o"
                                    " ON o.id = k.org_id WHERE o.slug LIKE 'scale-%'"), ORGS + 3)

    def test_served_through_the_api(self):
        result = scale_py("check", str(self.server.port), self.identity.user_token, str(ORGS))
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertRegex(result.stdout, r"^CHECK ok \d+")
        # Told one organization fewer, the check finds the "unknown" key valid.
        result = scale_py("check", str(self.server.port), self.identity.user_token, str(ORGS - 1))
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("an SDK key nobody has", result.stderr)

    def test_a_key_of_the_generator_is_what_token_c_stores(self):
        key = scale_py("key", "8", "prd").stdout.strip()
        self.assertRegex(key, r"^svc_sdk_[0-9A-Za-z]{43}$")
        row = self.database.query(
            "SELECT k.prefix || ' ' || k.last_four || ' ' || e.key FROM sdk_keys k"
            " JOIN environments e ON e.id = k.environment_id JOIN orgs o ON o.id = k.org_id"
            f" WHERE k.token_digest = encode(sha256('{key}'::bytea), 'hex')")
        self.assertEqual(row, f"{key[:12]} {key[-4:]} production")
        self.assertEqual(self.count("SELECT count(*) FROM sdk_keys k JOIN orgs o ON o.id = k.org_id"
                                    " WHERE o.slug = 'scale-00008'"), 2)


if __name__ == "__main__":
    unittest.main()
