"""test_revision_pages.py - end-to-end tests of the revision pages of
sql/0010 and sql/0011 (doc/choices.md, "Flag detail"): the detail reads
each flag's newest 20 revisions (REVISION_WINDOW) as one JSON text kept by a trigger, and its body must
stay byte for byte what the record forms of sql/0002 wrote. Covered: 150
API writes (the page extended and cut write by write), several revisions
in one transaction and in one statement (ties, two flags), characters that
need escaping, null summaries and user names, backdated and late
revisions (spliced in where they fall, or left out past a full page),
more than a page in one statement, two writers of one flag at once, a flag
without revisions, a deleted flag, and the migration's backfill of a
database that had revisions before 0010 (with 0011's pages of 20).

Run by tests/e2e/run (each class has its own database and ensignd).
"""

import os
import select
import subprocess
import time

import harness
from test_mgmt_bodies import ODD, REVISION_WINDOW, FormerBodiesTestCase

# A summary, a user name and a change line with what JSON escapes, as SQL
# literals, and as the API returns them.
ODD_SQL = "E'quote \" backslash \\\\ ctl \\x01 \\x1f tab \\t nl \\n é ✓'"
ODD_TEXT = 'quote " backslash \\ ctl \x01 \x1f tab \t nl \n é ✓'


def insert_revisions(flag_ids, count, when="now()", summary=ODD_SQL):
    """SQL inserting count revisions for each of flag_ids in one statement:
    every third without a summary or user name, the rest with odd text."""
    flags = ", ".join(f"'{f}'::uuid" for f in flag_ids)
    return ("INSERT INTO revisions (flag_id, action, summary, changes, user_name, created_at)"
            " SELECT f, 'flag.updated', CASE WHEN i % 3 = 0 THEN NULL ELSE"
            f" {summary} || ' ' || i END, ARRAY['name: ' || i || ' → ' || {summary}],"
            f" CASE WHEN i % 3 = 1 THEN NULL ELSE {ODD_SQL} END, {when}"
            f" FROM unnest(ARRAY[{flags}]) AS f, generate_series(1, {count}) AS i")


class PsqlSession:
    """One psql session kept open, so a test can hold a transaction while
    another session writes. Every wait is bounded."""

    def __init__(self, conninfo):
        self.proc = subprocess.Popen(
            ["psql", "-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1", "-d", conninfo],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def run(self, sql):
        """Sends sql (statements ending with ";") and returns once psql has
        run it (it must not block)."""
        self.proc.stdin.write(sql + "\n\\echo ran\n")
        self.proc.stdin.flush()
        deadline, output = time.monotonic() + 20, b""
        while b"ran\n" not in output:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                self.proc.kill()
                break
            chunk = os.read(self.proc.stdout.fileno(), 4096)  # not through the text buffer
            if not chunk:
                break
            output += chunk
        else:
            return
        _, err = self.proc.communicate(timeout=10)
        raise AssertionError(f"psql did not run: {sql}\n{err}")

    def finish(self, sql):
        """Sends sql, ends the session and asserts it succeeded."""
        _, err = self.proc.communicate(sql + "\n", timeout=30)
        if self.proc.returncode != 0:
            raise AssertionError(f"psql failed: {sql}\n{err}")


class RevisionPageTest(FormerBodiesTestCase):

    def page_rows(self, key):
        return int(self.sql("SELECT count(*) FROM flag_revision_pages p JOIN flags f"
                            f" ON f.id = p.flag_id WHERE f.key = '{key}'"))

    def test_page_follows_every_api_write(self):
        self.flag("busy")
        enabled = False
        tokens = ("member", "admin", "org")
        for i in range(1, 151):
            token = tokens[i % 3]
            if i % 2:
                response = self.call("PATCH", "/acme/flags/busy", token,
                                     body={"description": f"step {i} {ODD}"})
            else:
                enabled = not enabled
                response = self.configure("busy", {"enabled": enabled}, token=token)
            self.assertStatus(response, 200)
            w = REVISION_WINDOW
            if i in (1, w - 2, w - 1, w, w + 1, 150):
                detail = self.assertDetailIsFormer("busy")
                self.assertEqual(len(detail["revisions"]), min(i + 1, w), i)
        newest = detail["revisions"][0]
        self.assertEqual((newest["action"], newest["changes"]),
                         ("environment.updated", [f"enabled: {str(not enabled).lower()} → "
                                                  f"{str(enabled).lower()}"]))
        self.assertEqual(detail["revisions"][1]["changes"],
                         [f"description: step 147 {ODD} → step 149 {ODD}"])
        self.assertEqual({r["userName"] for r in detail["revisions"]},
                         {"Mel Member", "Adele Admin", "e2e org token"})
        self.assertNotIn("flag.created", [r["action"] for r in detail["revisions"]])
        self.assertEqual(self.page_rows("busy"), 1)

    def test_revisions_of_one_transaction_and_one_statement(self):
        self.flag("together-a")
        self.flag("together-b")
        a, b = self.flag_id("together-a"), self.flag_id("together-b")
        # one transaction (one now()): three revisions of a, then two of a
        # and two of b in one statement; ties are broken by id
        self.sql(insert_revisions([a], 3) + "; " + insert_revisions([a, b], 2))
        for key, count in (("together-a", 6), ("together-b", 3)):
            revisions = self.assertDetailIsFormer(key)["revisions"]
            self.assertEqual(len(revisions), count)
            self.assertEqual(len({r["createdAt"] for r in revisions[:count - 1]}), 1)
            self.assertEqual(revisions[-1]["action"], "flag.created")
        revisions = self.detail("together-a")["revisions"]
        summaries = [r["summary"] for r in revisions]
        self.assertIn(None, summaries)
        self.assertIn(f"{ODD_TEXT} 1", summaries)
        self.assertIn(f"{ODD_TEXT} 2", summaries)
        self.assertIn(None, [r["userName"] for r in revisions])
        self.assertIn(ODD_TEXT, [r["userName"] for r in revisions])
        self.assertIn([f"name: 2 → {ODD_TEXT}"], [r["changes"] for r in revisions])

    def test_backdated_and_bulk_revisions_land_in_order(self):
        self.flag("history")
        flag = self.flag_id("history")
        # 150 at once (more than a page) in 50 instants, then two older
        # than the page's newest (spliced in), one tied with it, one older
        # than all of the page (left out), then the usual newest one
        self.sql(insert_revisions([flag], 150, "'2030-01-01 00:00:00+00'::timestamptz"
                                  " + (i / 3) * interval '1 second'"))
        self.assertDetailIsFormer("history")
        self.sql(insert_revisions([flag], 2, "'2030-01-01 00:00:48+00'"))
        self.sql(insert_revisions([flag], 1, "'2030-01-01 00:00:50+00'"))
        self.sql(insert_revisions([flag], 1, "'2020-01-01 00:00:00+00'"))
        revisions = self.assertDetailIsFormer("history")["revisions"]
        self.assertEqual(len(revisions), REVISION_WINDOW)
        self.assertEqual(revisions[0]["createdAt"], "2030-01-01T00:00:50.000Z")
        self.assertNotIn("2020-01-01T00:00:00.000Z", [r["createdAt"] for r in revisions])
        self.sql(insert_revisions([flag], 1, "'2031-01-01 00:00:00+00'"))
        revisions = self.assertDetailIsFormer("history")["revisions"]
        self.assertEqual(revisions[0]["createdAt"], "2031-01-01T00:00:00.000Z")

    def test_two_writers_of_one_flag(self):
        self.flag("contended")
        flag = self.flag_id("contended")
        # The first holds the page row until it commits; the second, newer
        # (its statement comes later), waits for it and keeps both.
        first = PsqlSession(self.database.conninfo)
        first.run("BEGIN; " + insert_revisions([flag], 1, summary="'first'") + ";")
        second = subprocess.Popen(
            ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", self.database.conninfo,
             "-c", insert_revisions([flag], 1, summary="'second'")],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        self.assertIsNone(second.poll(), "the second writer did not wait for the page row")
        first.finish("COMMIT;")
        self.assertEqual(second.wait(timeout=30), 0, second.stderr.read())
        second.stderr.close()
        summaries = [r["summary"] for r in self.assertDetailIsFormer("contended")["revisions"]]
        self.assertEqual(summaries[:2], ["second 1", "first 1"])
        # An older transaction that commits after a newer one: its revision
        # goes below the newer one's, not in front of the page.
        older = PsqlSession(self.database.conninfo)
        older.run("BEGIN; SELECT 1;")
        time.sleep(0.05)
        self.sql(insert_revisions([flag], 1, summary="'newer'"))
        older.finish(insert_revisions([flag], 1, summary="'older'") + "; COMMIT;")
        summaries = [r["summary"] for r in self.assertDetailIsFormer("contended")["revisions"]]
        self.assertEqual(summaries[:4], ["newer 1", "older 1", "second 1", "first 1"])

    def test_new_flag_and_flag_without_revisions(self):
        self.flag("fresh")
        revisions = self.assertDetailIsFormer("fresh")["revisions"]
        self.assertEqual([r["action"] for r in revisions], ["flag.created"])
        self.assertEqual(self.page_rows("fresh"), 1)
        # a flag written straight into the table has no revision and no page
        self.sql("INSERT INTO flags (org_id, key, name, type)"
                 " SELECT o.id, 'bare', 'bare', 'boolean' FROM orgs o WHERE o.slug = 'acme'")
        self.assertEqual(self.assertDetailIsFormer("bare")["revisions"], [])
        self.assertEqual(self.page_rows("bare"), 0)

    def test_deleted_flag_leaves_no_page(self):
        self.flag("doomed")
        flag = self.flag_id("doomed")
        self.sql(insert_revisions([flag], 120))
        self.assertEqual(self.page_rows("doomed"), 1)
        self.assertStatus(self.call("DELETE", "/acme/flags/doomed", "member"), 200)
        self.assertEqual(self.sql("SELECT count(*) FROM flag_revision_pages"
                                  f" WHERE flag_id = '{flag}'"), "0")


class RevisionPageMigrationTest(FormerBodiesTestCase):
    """A database as 0009 left it, with revisions, then `ensignctl migrate`."""

    def test_migration_fills_the_pages_of_existing_flags(self):
        for key in ("old-long", "old-short", "old-none"):
            self.flag(key)
        self.sql("DROP TRIGGER revisions_page ON revisions;"
                 " DROP TABLE flag_revision_pages;"
                 " DROP FUNCTION ensign_revision_pages_refresh();"
                 " DELETE FROM schema_migrations"
                 " WHERE name IN ('0010_revision_page', '0011_revision_window')")
        long_id, short_id = self.flag_id("old-long"), self.flag_id("old-short")
        # revisions written under 0009: ties, odd text, more than a page
        self.sql(insert_revisions([long_id], 130, "'2030-01-01 00:00:00+00'::timestamptz"
                                  " + (i / 2) * interval '1 ms'"))
        self.sql(insert_revisions([short_id], 2))
        self.sql("DELETE FROM revisions r USING flags f"
                 " WHERE f.id = r.flag_id AND f.key = 'old-none'")
        applied = harness.ensignctl(self.server.config_path, "migrate")
        self.assertIn("0010_revision_page", applied)
        self.assertIn("0011_revision_window", applied)
        for key, count in (("old-long", REVISION_WINDOW), ("old-short", 3), ("old-none", 0)):
            self.assertEqual(len(self.assertDetailIsFormer(key)["revisions"]), count, key)
        self.assertEqual(self.sql("SELECT count(*) FROM flag_revision_pages"), "2")
        # and the backfilled pages go on from there
        self.assertStatus(self.call("PATCH", "/acme/flags/old-long", "member",
                                    body={"description": "after the migration"}), 200)
        revisions = self.assertDetailIsFormer("old-long")["revisions"]
        self.assertEqual(revisions[0]["action"], "flag.updated")
        self.assertEqual(len(revisions), REVISION_WINDOW)
