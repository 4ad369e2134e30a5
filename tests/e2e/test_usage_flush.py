"""test_usage_flush.py - end-to-end test of the usage flush at scale
(src/daemon/flusher.c, sql/0023_usage_flush.sql; doc/choices.md, "The
usage flush at scale"): 20,000 flags of one environment evaluated in bulk
three times, so the flusher writes tens of thousands of counters at once;
then usage_counters, the roll-ups the statement triggers keep
(flag_usage_totals, flag_usage_hours, flag_usage_series) and the flag
list's and the usage endpoint's answers are checked exactly. And the
counts of a flag or an environment deleted between the evaluation and the
flush are left out while the flush writes the others.

Test data is written with SQL (test_evaluation.Fixture's way). Run by
tests/e2e/run.
"""

import time
import urllib.parse

import harness
import test_evaluation
from flagfixture import FlagTestCase
from test_evaluation import FLAG_PATH, Fixture, sql

FLAGS = 20000
ROUNDS = 3

# Every third flag is disabled (serves `off`), the others serve `on`; a
# flag `probe`, written in the same transaction, tells when they are served.
BULK_FLAGS_SQL = f"""
BEGIN;
INSERT INTO flags (org_id, key, name, type)
SELECT o.id, 'bulk-' || lpad(i::text, 5, '0'), 'Bulk ' || i, 'boolean'
  FROM orgs o, generate_series(1, {FLAGS}) AS i WHERE o.slug = 'acme'
UNION ALL SELECT o.id, 'probe', 'Probe', 'boolean' FROM orgs o WHERE o.slug = 'acme';
INSERT INTO variants (flag_id, org_id, key, value, sort_order)
SELECT f.id, f.org_id, v.key, v.value, v.sort_order
  FROM flags f JOIN orgs o ON o.id = f.org_id,
       (VALUES ('on', 'true'::jsonb, 0), ('off', 'false'::jsonb, 1)) AS v(key, value, sort_order)
 WHERE o.slug = 'acme' AND (f.key LIKE 'bulk-%' OR f.key = 'probe');
INSERT INTO flag_environments (flag_id, environment_id, enabled, default_serve, off_variant_key)
SELECT f.id, e.id, f.key = 'probe' OR substr(f.key, 6)::int % 3 <> 0, '{{"variant": "on"}}', 'off'
  FROM flags f JOIN orgs o ON o.id = f.org_id
  JOIN environments e ON e.org_id = o.id AND e.key = 'production'
 WHERE o.slug = 'acme' AND (f.key LIKE 'bulk-%' OR f.key = 'probe');
COMMIT;
"""

BULK = "f.key LIKE 'bulk-%'"


def expected_variant(key):
    return "off" if int(key[len("bulk-"):]) % 3 == 0 else "on"


class UsageFlushTest(FlagTestCase):
    """acme with 20,000 boolean flags configured in production."""

    settings = {"usage_flush_interval_ms": 200}

    @classmethod
    def prepare(cls):
        super().prepare()
        sql(cls.database.conninfo, BULK_FLAGS_SQL)
        cls.sdk_key, _ = Fixture(cls.database.conninfo).sdk_key()

    def evaluate(self, key=None):
        path = FLAG_PATH if key is None else f"{FLAG_PATH}/{key}"
        return self.server.request("POST", path, body={},
                                   headers={"Authorization": f"Bearer {self.sdk_key}"})

    def count(self, query):
        return int(self.database.query(query))

    def counted(self):
        return self.count("SELECT COALESCE(sum(u.count), 0) FROM usage_counters u"
                          f" JOIN flags f ON f.id = u.flag_id WHERE {BULK}")

    def list_usage(self):
        """{key: usage} of every bulk flag, from every page of GET /acme/flags."""
        usage, path, pages = {}, "/acme/flags?limit=1000", 0
        while path is not None:
            response = self.call("GET", path, "viewer")
            body = self.assertStatus(response, 200)
            usage.update((f["key"], f["usage"]) for f in body["flags"]
                         if f["key"].startswith("bulk-"))
            link = response.headers.get("Link")
            path = None
            if link is not None:
                url = link[1:link.index(">")]
                path = url[len("/v1/orgs"):]
                parsed = urllib.parse.urlsplit(path)
                path = parsed.path + "?" + parsed.query
            pages += 1
            self.assertLess(pages, 100, "the Link never ends")
        return usage

    def test_bulk_evaluations_flush_exactly(self):
        served = harness.wait_for(lambda: self.evaluate("probe").status == 200, 30, 0.1)
        self.assertTrue(served, "the bulk flags were not served within 30 s")
        for _ in range(ROUNDS):
            response = self.evaluate()
            self.assertEqual(response.status, 200, response)
            self.assertEqual(len(response.json["flags"]), FLAGS + 1)
        want = FLAGS * ROUNDS
        flushed = harness.wait_for(lambda: self.counted() == want, 120, 0.2)
        self.assertTrue(flushed, f"{self.counted()} of {want} evaluations flushed in 120 s")
        time.sleep(0.6)  # a few more flush intervals: nothing counted twice
        self.assertEqual(self.counted(), want)

        # usage_counters: every flag counted ROUNDS times under its variant.
        self.assertEqual(self.count(
            "SELECT count(*) FROM (SELECT f.key, u.variant_key, sum(u.count) AS n"
            "   FROM usage_counters u JOIN flags f ON f.id = u.flag_id"
            f"  WHERE {BULK} GROUP BY 1, 2) c"
            " WHERE c.n = 3 AND c.variant_key = CASE WHEN substr(c.key, 6)::int % 3 = 0"
            "                                        THEN 'off' ELSE 'on' END"), FLAGS)
        self.assertRollUpsExact()
        self.assertEqual(self.count(
            "SELECT count(*) FROM flags f JOIN flag_usage_series s ON s.flag_id = f.id"
            f" WHERE {BULK} AND (SELECT sum(c) FROM unnest(s.counts) AS c) = {ROUNDS}"), FLAGS)

        # The API's answers.
        usage = self.list_usage()
        self.assertEqual(len(usage), FLAGS)
        wrong = [key for key, u in usage.items()
                 if u["total"] != ROUNDS or sum(u["series"]) != ROUNDS
                 or u["series"][-1] + u["series"][-2] != ROUNDS or len(u["series"]) != 24
                 or u["lastSeenAt"] is None]
        self.assertEqual(wrong, [])
        for key in ("bulk-00001", "bulk-00003", "bulk-20000"):
            body = self.assertStatus(self.call("GET", f"/acme/flags/{key}/usage", "viewer"), 200)
            production = body["usage"]["environments"][0]
            self.assertEqual((body["usage"]["total"], production["key"], production["variants"]),
                             (ROUNDS, "production",
                              [{"key": expected_variant(key), "count": ROUNDS}]), key)
        log = self.server.stderr()
        self.assertNotIn("usage flush failed", log)
        self.assertNotIn("usage table full", log)

        # Statements of many rows that change and remove counters.
        self.database.query("UPDATE usage_counters u SET count = u.count * 2 FROM flags f"
                            " WHERE f.id = u.flag_id AND f.key BETWEEN 'bulk-00001' AND"
                            " 'bulk-10000'")
        self.database.query("DELETE FROM usage_counters u USING flags f"
                            " WHERE f.id = u.flag_id AND f.key BETWEEN 'bulk-08001' AND"
                            " 'bulk-15000'")
        self.assertRollUpsExact()
        totals = {key: u["total"] for key, u in self.list_usage().items()}
        self.assertEqual(sum(totals.values()), 8000 * 2 * ROUNDS + 5000 * ROUNDS)
        self.assertEqual((totals["bulk-08000"], totals["bulk-08001"], totals["bulk-15001"]),
                         (2 * ROUNDS, 0, ROUNDS))

    def assertRollUpsExact(self):
        """The roll-ups of the bulk flags are what they would be recomputed
        from usage_counters (a removed counter leaves zero rows behind)."""
        self.assertEqual(self.count(
            "SELECT count(*) FROM flags f"
            " LEFT JOIN (SELECT flag_id, sum(count) AS total FROM usage_counters"
            "             GROUP BY flag_id) c ON c.flag_id = f.id"
            " JOIN flag_usage_totals t ON t.flag_id = f.id"
            f" WHERE {BULK} AND t.total = COALESCE(c.total, 0)"
            "   AND t.last_seen_at >= (SELECT max(last_seen_at) FROM usage_counters u"
            "                           WHERE u.flag_id = f.id)"
            "            IS NOT FALSE"), FLAGS)
        self.assertEqual(self.count(
            "SELECT count(*) FROM (SELECT flag_id, hour, sum(count) AS n FROM usage_counters"
            "   GROUP BY 1, 2) c FULL JOIN flag_usage_hours h USING (flag_id, hour)"
            " WHERE COALESCE(c.n, 0) IS DISTINCT FROM COALESCE(h.count, 0)"), 0)
        self.assertEqual(self.count(
            "SELECT count(*) FROM flags f JOIN flag_usage_series s ON s.flag_id = f.id"
            f" WHERE {BULK}"
            "   AND s.newest_hour = (SELECT max(hour) FROM flag_usage_hours h"
            "                         WHERE h.flag_id = f.id)"
            "   AND s.counts = ensign_usage_counts(f.id, s.newest_hour)"
            "   AND s.counts_text = array_to_string(s.counts, ',')"), FLAGS)


class DeletedBeforeTheFlushTest(test_evaluation.OfrepTestCase):
    """Counts of a flag or an environment deleted after the evaluation and
    before the flush are left out; the rest of the flush is written (the
    statement looks up each counter's flag and environment, so no foreign
    key refuses it and nothing is put back for ever)."""

    settings = {"usage_flush_interval_ms": 3600000}  # only the last flush, at stop

    @classmethod
    def create_flags(cls):
        f = cls.fixture
        cls.kept = f.flag("kept", env_key="preview")
        cls.gone = f.flag("gone", env_key="preview")
        cls.elsewhere = f.flag("elsewhere", env_key="development")
        cls.preview_key, _ = f.sdk_key("preview")
        cls.development_key, _ = f.sdk_key("development")

    def test_the_flush_leaves_out_what_was_deleted(self):
        for key, sdk_key in (("kept", self.preview_key), ("gone", self.preview_key),
                             ("elsewhere", self.development_key)):
            self.wait_served(lambda k=key, s=sdk_key: self.evaluate(k, sdk_key=s).status == 200)
            for _ in range(2):  # three counted in all
                self.assertEqual(self.evaluate(key, sdk_key=sdk_key).status, 200)
        self.assertEqual(self.fixture.usage(self.kept), {})  # not flushed yet
        self.fixture.delete_flag(self.gone)
        self.fixture.run("DELETE FROM environments WHERE key = 'development' AND org_id ="
                         " (SELECT id FROM orgs WHERE slug = :'org')")
        self.server.stop_cleanly()
        try:
            self.assertEqual(self.fixture.usage(self.kept), {"on": 3})
            self.assertEqual(self.fixture.run(
                "SELECT count(*) FROM usage_counters WHERE flag_id IN (:'gone', :'elsewhere')",
                gone=self.gone, elsewhere=self.elsewhere), "0")
            self.assertNotIn("usage flush failed", self.server.stderr())
        finally:
            self.server.start()
