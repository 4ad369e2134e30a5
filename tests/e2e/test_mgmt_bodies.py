"""test_mgmt_bodies.py - end-to-end tests of what the management speed work
must not change: the flag list's timestamps are written in C
from plain timestamptz (src/mgmt/pgtime.c) and must equal ensign_iso()
(zero milliseconds, truncated microseconds, a year past 9999, archived and
usage timestamps); odd characters in names, descriptions and revision
summaries are escaped as PostgreSQL escapes them; the detail shows the
newest 20 revisions (REVISION_WINDOW, sql/0011) in (createdAt, id) order, ties included, null user
names kept; the detail's body (src/api/flagdetail.c) is byte for byte
what the SQL record forms of sql/0002 write; statements prepared per
session (src/db/db.c) are prepared again after the database restarts.

Run by tests/e2e/run (each class has its own database and ensignd).
"""

import json

import harness
from flagfixture import FlagTestCase

# The revisions the flag detail shows (sql/0011).
REVISION_WINDOW = 20

ODD = 'quote " backslash \\ tab \t newline \n bell \x07 unit \x1f del \x7f é ✓ </script>'


class FormerBodiesTestCase(FlagTestCase):
    """Helpers of the tests that compare bodies with what PostgreSQL's
    record forms of sql/0002 wrote (no tests of its own)."""

    def sql(self, text):
        return self.database.query(text)

    def flag_id(self, key):
        return self.sql("SELECT f.id FROM flags f JOIN orgs o ON o.id = f.org_id"
                        f" WHERE o.slug = 'acme' AND f.key = '{key}'")

    def former_detail(self, key):
        """The detail of flag key as json_build_object of the record forms
        wrote it (the newest REVISION_WINDOW revisions; '[]' without any)."""
        flag = self.flag_id(key)
        parts = {
            "flag": "SELECT (ensign_flag_detail_json(f) || jsonb_build_object('stale',"
                    " ensign_flag_stale_json(f, interval '2592000 seconds',"
                    " now() - interval '30 days')))::text"
                    f" FROM flags f WHERE f.id = '{flag}'",
            "revisions": "SELECT COALESCE(json_agg(ensign_revision_json(r)"
                         " ORDER BY r.created_at DESC, r.id DESC)::text, '[]')"
                         " FROM (SELECT * FROM revisions r"
                         f" WHERE r.flag_id = '{flag}' ORDER BY r.created_at DESC, r.id DESC"
                         f" LIMIT {REVISION_WINDOW}) AS r",
            "variants": "SELECT COALESCE(json_agg(ensign_variant_json(v)"
                        " ORDER BY v.sort_order, v.created_at, v.id)::text, '[]') FROM variants v"
                        f" WHERE v.flag_id = '{flag}'",
            "environments": "SELECT COALESCE(json_agg(ensign_flag_environment_json(fe, e)"
                            " ORDER BY e.sort_order, e.key)::text, '[]') FROM flag_environments fe"
                            " JOIN environments e ON e.id = fe.environment_id"
                            f" WHERE fe.flag_id = '{flag}'",
        }
        return "{" + ", ".join(f'"{name}" : {self.sql(sql)}' for name, sql in parts.items()) + "}"

    def assertDetailIsFormer(self, key):
        """The detail's body equals former_detail byte for byte; returns it parsed."""
        response = self.call("GET", f"/acme/flags/{key}", "viewer")
        self.assertStatus(response, 200)
        self.assertEqual(response.body.decode(), self.former_detail(key), key)
        return response.json


class MgmtBodiesTest(FormerBodiesTestCase):

    def iso(self, key, column):
        return self.sql(f"SELECT ensign_iso({column}) FROM flags WHERE id = '{self.flag_id(key)}'")

    def listed(self, archived=False):
        path = "/acme/flags" + ("?archived=true" if archived else "")
        response = self.call("GET", path, "viewer")
        self.assertStatus(response, 200)
        return response, {f["key"]: f for f in response.json["flags"]}

    def test_list_timestamps_equal_ensign_iso(self):
        cases = {
            "ts-zero-ms": ("2026-01-01 00:00:00+00", "2026-01-01 00:00:00.1+00"),
            "ts-truncated": ("2026-01-01 00:00:00.0005+00", "2026-01-01 00:00:00.999999+00"),
            "ts-far-future": ("2026-03-04 05:06:07.89+00", "12026-03-04 05:06:07.89+00"),
        }
        for key, (created, updated) in cases.items():
            self.flag(key)
            self.sql(f"UPDATE flags SET created_at = '{created}', updated_at = '{updated}'"
                     f" WHERE id = '{self.flag_id(key)}'")
        self.flag("ts-archived")
        self.archive("ts-archived")
        self.sql("UPDATE flags SET archived_at = '2031-02-03 04:05:06+00'"
                 f" WHERE id = '{self.flag_id('ts-archived')}'")
        self.sql("INSERT INTO usage_counters (flag_id, environment_id, variant_key, hour, count,"
                 " last_seen_at) SELECT f.id, e.id, 'on', date_trunc('hour', now()), 3,"
                 " '2030-05-06 07:08:09+00' FROM flags f JOIN environments e"
                 " ON e.org_id = f.org_id AND e.key = 'production'"
                 f" WHERE f.id = '{self.flag_id('ts-zero-ms')}'")

        _, active = self.listed()
        for key in cases:
            self.assertEqual(active[key]["createdAt"], self.iso(key, "created_at"), key)
            self.assertEqual(active[key]["updatedAt"], self.iso(key, "updated_at"), key)
            self.assertIsNone(active[key]["archivedAt"], key)
        self.assertEqual(active["ts-zero-ms"]["createdAt"], "2026-01-01T00:00:00.000Z")
        self.assertEqual(active["ts-zero-ms"]["updatedAt"], "2026-01-01T00:00:00.100Z")
        self.assertEqual(active["ts-truncated"]["createdAt"], "2026-01-01T00:00:00.000Z")
        self.assertEqual(active["ts-truncated"]["updatedAt"], "2026-01-01T00:00:00.999Z")
        self.assertEqual(active["ts-far-future"]["updatedAt"], "12026-03-04T05:06:07.890Z")
        self.assertEqual(active["ts-zero-ms"]["usage"]["lastSeenAt"], "2030-05-06T07:08:09.000Z")
        self.assertNotIn("ts-archived", active)

        _, archived = self.listed(archived=True)
        self.assertEqual(archived["ts-archived"]["archivedAt"], "2031-02-03T04:05:06.000Z")
        self.assertEqual(archived["ts-archived"]["archivedAt"],
                         self.iso("ts-archived", "archived_at"))
        # the detail (still written by PostgreSQL) agrees with the list
        self.assertEqual(self.detail("ts-far-future")["flag"]["updatedAt"],
                         active["ts-far-future"]["updatedAt"])

    def test_list_escapes_odd_characters_as_postgresql_does(self):
        self.flag("odd-chars", description=ODD)
        self.assertStatus(self.call("PATCH", "/acme/flags/odd-chars", "member",
                                    body={"name": ODD[:200]}), 200)
        response, flags = self.listed()
        self.assertEqual(flags["odd-chars"]["description"], ODD)
        self.assertEqual(flags["odd-chars"]["name"], ODD[:200])
        flag = self.flag_id("odd-chars")
        for column in ("name", "description"):
            escaped = self.sql(f"SELECT to_json({column})::text FROM flags WHERE id = '{flag}'")
            self.assertIn(escaped.encode(), response.body, column)
        self.assertEqual(self.detail("odd-chars")["flag"]["description"], ODD)

    def test_detail_shows_the_newest_window_of_revisions_in_order(self):
        self.flag("many-revisions")
        flag = self.flag_id("many-revisions")
        # 150 revisions in 50 distinct instants (ties broken by id), every
        # third without a user name, summaries with odd characters
        self.sql("INSERT INTO revisions (flag_id, action, summary, changes, user_name, created_at)"
                 f" SELECT '{flag}', 'flag.updated', 'step ' || i || ' \"\\ \t',"
                 " ARRAY['name: a → b'], CASE WHEN i % 3 = 0 THEN NULL ELSE 'Bench' END,"
                 " '2030-01-01 00:00:00+00'::timestamptz + (i / 3) * interval '1 second'"
                 " FROM generate_series(1, 150) AS i")
        revisions = self.detail("many-revisions")["revisions"]
        expected = self.sql("SELECT id || '|' || ensign_iso(created_at) || '|'"
                            " || COALESCE(user_name, '-') FROM revisions"
                            f" WHERE flag_id = '{flag}' ORDER BY created_at DESC, id DESC"
                            f" LIMIT {REVISION_WINDOW}").split("\n")
        self.assertEqual(len(revisions), REVISION_WINDOW)
        self.assertEqual([f"{r['id']}|{r['createdAt']}|{r['userName'] or '-'}" for r in revisions],
                         expected)
        self.assertIn(None, [r["userName"] for r in revisions])
        self.assertTrue(all(r["summary"].endswith(' "\\ \t') for r in revisions), revisions[0])
        self.assertEqual(revisions[0]["changes"], ["name: a → b"])

    def test_detail_equals_the_sql_record_forms_byte_for_byte(self):
        self.string_flag("byte-exact", "a", "b")
        flag = self.flag_id("byte-exact")
        # rules in two environments: equal priorities and equal creation
        # times (ties broken by id), null and odd descriptions, rollouts
        self.sql("INSERT INTO rules (flag_id, org_id, environment_id, priority, description,"
                 " conditions, serve, created_at)"
                 f" SELECT '{flag}', e.org_id, e.id, i % 2, CASE WHEN i % 3 = 0 THEN NULL"
                 " ELSE 'rule \"' || i || '\" \\ é' END,"
                 " '[{\"attribute\": \"country\", \"operator\": \"in\", \"values\": [\"NL\"]}]',"
                 " CASE WHEN i % 2 = 0 THEN '{\"variant\": \"a\"}'::jsonb ELSE"
                 " '{\"rollout\": [{\"variant\": \"a\", \"weight\": 1},"
                 " {\"variant\": \"b\", \"weight\": 2}]}'::jsonb END,"
                 " '2030-01-01 00:00:00+00'::timestamptz + (i / 4) * interval '1 ms'"
                 " FROM environments e JOIN orgs o ON o.id = e.org_id, generate_series(1, 8) AS i"
                 " WHERE o.slug = 'acme' AND e.key IN ('production', 'development')")
        self.sql("INSERT INTO revisions (flag_id, action, summary, user_name, created_at)"
                 f" SELECT '{flag}', 'flag.updated', NULL, NULL, '2030-01-01 00:00:00+00'"
                 " FROM generate_series(1, 3)")
        body = self.assertDetailIsFormer("byte-exact")
        rules = body["environments"][0]["rules"]
        self.assertEqual([r["priority"] for r in rules], [0, 0, 0, 0, 1, 1, 1, 1])
        self.assertEqual([e["key"] for e in body["environments"]],
                         ["production", "preview", "development"])
        self.assertEqual(body["environments"][1]["rules"], [])
        self.assertEqual(len(body["revisions"]), 4)

    def test_prepared_statements_survive_a_database_restart(self):
        self.flag("restart-proof")
        for _ in range(3):  # every worker's session prepares the statements
            self.listed()
            self.assertEqual(self.detail("restart-proof")["flag"]["key"], "restart-proof")
        harness.stop_postgres()
        try:
            self.assertEqual(self.call("GET", "/acme/flags", "viewer").status, 503)
        finally:
            harness.start_postgres()

        def answers():
            statuses = {self.call("GET", "/acme/flags/restart-proof", "viewer").status
                        for _ in range(4)}
            return statuses == {200}

        self.assertIsNotNone(harness.wait_for(answers, 20, 0.2))
        for _ in range(4):
            _, flags = self.listed()
            self.assertIn("restart-proof", flags)
        self.assertEqual(json.loads(self.server.request("GET", "/v1/healthz").body)["status"],
                         "ok")


class PrepareFallbackTest(FlagTestCase):
    """A statement PostgreSQL refuses to prepare (here: a function it calls
    is missing for a moment) answers as the unprepared statement would, and
    the session goes on serving it as text once it can run again."""

    def test_a_statement_refused_at_prepare_is_sent_as_text(self):
        self.flag("usage-flag")
        self.database.query("ALTER FUNCTION ensign_iso(timestamptz) RENAME TO ensign_iso_away")
        try:
            for _ in range(4):  # both workers' sessions
                response = self.call("GET", "/acme/flags/usage-flag/usage", "viewer")
                self.assertEqual(response.status, 500, response)
        finally:
            self.database.query("ALTER FUNCTION ensign_iso_away(timestamptz) RENAME TO ensign_iso")
        for _ in range(6):
            response = self.call("GET", "/acme/flags/usage-flag/usage", "viewer")
            self.assertStatus(response, 200)
            self.assertEqual(response.json["usage"]["total"], 0)
        self.assertEqual(self.server.sanitizer_reports(), [])
