"""test_flag_pages.py - end-to-end tests of the flag list's pages
(GET /v1/orgs/{org}/flags with limit, cursor and q; doc/api.md,
doc/choices.md "The flag list pages").

Without any of them the list answers as it did before it paged: byte for
byte on a fixed organization (flaglistgolden.py), and a larger organization
answers its first 1,000 flags and a Link. Paging through 2,500 flags with
limit 1,000 and with limit 7 gives every flag once, in key order; q finds
flags by key, name and tag; bad limits and cursors are 422 in the /v1
envelope; the cursor is bound to the organization, q and the filters.

Run by tests/e2e/run (each class has its own database and ensignd).
"""

import base64
import os
import re
import unittest
import urllib.parse

from flagfixture import FlagTestCase
from flaglistgolden import golden_path, make_golden_flags, normalize


class FlagListGoldenTest(FlagTestCase):
    """The body without parameters, against the body recorded before."""

    def test_body_without_parameters_is_the_recorded_one(self):
        make_golden_flags(self)
        for name, query in (("list", ""), ("archived", "?archived=true"),
                            ("stale", "?stale=true")):
            response = self.call("GET", "/acme/flags" + query, "viewer")
            self.assertStatus(response, 200)
            self.assertIsNone(response.headers.get("Link"))
            got = normalize(self, response.body.decode())
            path = golden_path(name)
            if os.environ.get("ENSIGN_RECORD_GOLDEN") == "1":
                with open(path, "w", encoding="utf-8") as out:
                    out.write(got)
                continue
            with open(path, encoding="utf-8") as recorded:
                self.assertEqual(got, recorded.read(), query)


LINK = re.compile(r'^<(/v1/orgs/[a-z0-9-]+/flags\?[^>]*)>; rel="next"$')


def flags_sql(org, first, count, archived=False):
    """count boolean flags of org keyed f-NNNN from first (fixed test SQL);
    every tenth tagged, every third created 60 days ago (stale: never evaluated)."""
    return ("INSERT INTO flags (org_id, key, name, type, tags, archived_at, created_at)"
            " SELECT o.id, 'f-' || lpad(i::text, 4, '0'), 'Flag number ' || i, 'boolean',"
            " CASE WHEN i % 10 = 0 THEN ARRAY['tenth', 'Group-' || (i / 100)] ELSE '{}' END,"
            f" {'now()' if archived else 'NULL'},"
            " now() - CASE WHEN i % 3 = 0 THEN interval '60 days' ELSE interval '0' END"
            f" FROM orgs o, generate_series({first}, {first + count - 1}) AS i"
            f" WHERE o.slug = '{org}'")


class FlagPagesTestCase(FlagTestCase):
    """Helpers: GET a page (a path or a Link URL), follow every Link."""

    def page(self, path, token="viewer"):
        """GET path (under /v1/orgs, or a Link URL): (flag keys, next URL or None)."""
        if path.startswith("/v1/orgs"):
            path = path[len("/v1/orgs"):]
        response = self.call("GET", path, token)
        body = self.assertStatus(response, 200)
        self.assertEqual(list(body), ["flags"])
        link = response.headers.get("Link")
        if link is None:
            return [f["key"] for f in body["flags"]], None
        match = LINK.match(link)
        self.assertIsNotNone(match, link)
        return [f["key"] for f in body["flags"]], match.group(1)

    def walk(self, path):
        """Every key of every page from path on, and the number of pages."""
        keys, pages = [], 0
        url = path
        while url is not None:
            got, url = self.page(url)
            keys += got
            pages += 1
            self.assertLess(pages, 1000, "the Link never ends")
        return keys, pages

    def keys_sql(self, where="f.archived_at IS NULL"):
        """The keys of acme's flags in the database's key order."""
        rows = self.database.query("SELECT f.key FROM flags f JOIN orgs o ON o.id = f.org_id"
                                   f" WHERE o.slug = 'acme' AND {where} ORDER BY f.key")
        return rows.split("\n") if rows else []

    def cursor_of(self, url):
        return urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["cursor"][0]


class FlagPagesTest(FlagPagesTestCase):
    """acme holds 2,500 active flags and 3 archived ones."""

    @classmethod
    def prepare(cls):
        super().prepare()
        cls.database.query(flags_sql("acme", 0, 2500))
        cls.database.query(flags_sql("acme", 2500, 3, archived=True))
        cls.database.query(flags_sql("globex", 0, 20))
        cls.database.query("UPDATE flags SET name = 'The Checkout Banner', tags = '{Payments}'"
                           " WHERE key = 'f-1234'")

    def test_without_parameters_the_first_1000_and_a_link(self):
        keys, url = self.page("/acme/flags")
        self.assertEqual(keys, self.keys_sql()[:1000])
        self.assertTrue(url.startswith("/v1/orgs/acme/flags?limit=1000&cursor="), url)

    def test_every_flag_once_in_order_with_limit_1000_and_7(self):
        expected = self.keys_sql()
        self.assertEqual(len(expected), 2500)
        for limit, pages in ((1000, 3), (7, 358)):
            with self.subTest(limit=limit):
                keys, walked = self.walk(f"/acme/flags?limit={limit}")
                self.assertEqual(keys, expected)
                self.assertEqual(walked, pages)

    def test_a_full_last_page_has_no_link(self):
        keys, url = self.walk("/acme/flags?limit=500")
        self.assertEqual(len(keys), 2500)
        keys, url = self.page("/acme/flags?archived=true&limit=3")
        self.assertEqual(keys, ["f-2500", "f-2501", "f-2502"])
        self.assertIsNone(url)

    def test_the_link_keeps_q_and_the_filters(self):
        keys, url = self.page("/acme/flags?archived=true&limit=2")
        self.assertEqual(keys, ["f-2500", "f-2501"])
        self.assertTrue(url.startswith("/v1/orgs/acme/flags?archived=true&limit=2&cursor="), url)
        self.assertEqual(self.page(url), (["f-2502"], None))
        keys, url = self.page("/acme/flags?q=Group%2d1&limit=4")
        self.assertTrue(url.startswith("/v1/orgs/acme/flags?q=Group-1&limit=4&cursor="), url)
        keys += self.walk(url)[0]
        # Group-1 and Group-10 .. Group-19: tags of every tenth flag from 100 to 199, 1000 to 1999
        expected = [f"f-{i:04d}" for i in range(2500) if i % 10 == 0
                    and (100 <= i < 200 or 1000 <= i < 2000)]
        self.assertEqual(keys, expected)

    def test_q_by_key_name_and_tag(self):
        cases = {
            "f-1234": ["f-1234"],              # key
            "checkout BANNER": ["f-1234"],     # name, any case
            "paym": ["f-1234"],                # tag, any case
            "ber 2499": ["f-2499"],            # name "Flag number 2499"
            "f-24": [f"f-{i}" for i in range(2400, 2500)],
            "99": [f"f-{i:04d}" for i in range(2500) if "99" in f"{i:04d}" or "99" in str(i)],
            "x": [],                          # a short q that matches nothing
            "_": [],                          # LIKE's wildcards are plain characters
            "%": [],
            "nothing-at-all": [],
        }
        order = self.keys_sql()
        for q, expected in cases.items():
            with self.subTest(q=q):
                keys, _ = self.walk("/acme/flags?limit=7&q=" + urllib.parse.quote(q))
                self.assertEqual(keys, sorted(set(expected), key=order.index))

    def test_q_spanning_key_and_name_matches_nothing(self):
        self.assertEqual(self.walk("/acme/flags?q=" + urllib.parse.quote("f-1234\nthe"))[0], [])

    def test_q_finds_archived_flags_only_with_archived(self):
        self.assertEqual(self.page("/acme/flags?q=f-2501")[0], [])
        self.assertEqual(self.page("/acme/flags?q=f-2501&archived=true")[0], ["f-2501"])

    def test_a_bad_limit_is_422(self):
        for bad in ("0", "1001", "x", "-1", "", "1.5", "99999999999999999999"):
            with self.subTest(limit=bad):
                errors = self.assertInvalid(self.call("GET", f"/acme/flags?limit={bad}", "viewer"),
                                            "limit")
                self.assertEqual(list(errors), ["limit"])
        self.assertEqual(len(self.page("/acme/flags?limit=1")[0]), 1)
        self.assertEqual(len(self.page("/acme/flags?limit=1000")[0]), 1000)

    def test_a_long_q_is_422(self):
        self.assertInvalid(self.call("GET", "/acme/flags?q=" + "x" * 201, "viewer"), "q")
        self.assertEqual(self.page("/acme/flags?q=" + "x" * 200)[0], [])

    def test_bad_forged_and_foreign_cursors_are_422(self):
        _, url = self.page("/acme/flags?limit=5")
        cursor = self.cursor_of(url)
        self.assertEqual(self.page(url)[0], ["f-0005", "f-0006", "f-0007", "f-0008", "f-0009"])
        payload, mac = cursor.split(".")
        forged = base64.urlsafe_b64encode(b'["f-2000"]').decode().rstrip("=") + "." + mac
        flipped = payload[:-1] + ("A" if payload[-1] != "A" else "B") + "." + mac
        for bad in ("garbage", forged, flipped, cursor + "x", "%00", "a.b"):
            with self.subTest(cursor=bad):
                self.assertInvalid(self.call("GET", "/acme/flags?limit=5&cursor="
                                             + urllib.parse.quote(bad), "viewer"), "cursor")
        quoted = urllib.parse.quote(cursor)
        for other in (f"q=f-&limit=5&cursor={quoted}",          # another q
                      f"archived=true&limit=5&cursor={quoted}",  # the archived list
                      f"stale=true&limit=5&cursor={quoted}"):    # the stale list
            with self.subTest(other=other):
                self.assertInvalid(self.call("GET", "/acme/flags?" + other, "viewer"), "cursor")
        # the same cursor with another limit continues (the limit is not bound)
        self.assertEqual(self.page(f"/acme/flags?limit=2&cursor={quoted}")[0],
                         ["f-0005", "f-0006"])

    def test_a_cursor_from_q_is_refused_without_it(self):
        _, url = self.page("/acme/flags?q=f-1&limit=3")
        quoted = urllib.parse.quote(self.cursor_of(url))
        self.assertInvalid(self.call("GET", f"/acme/flags?limit=3&cursor={quoted}", "viewer"),
                           "cursor")
        self.assertInvalid(self.call("GET", f"/acme/flags?q=f-2&limit=3&cursor={quoted}",
                                     "viewer"), "cursor")

    def test_another_organization_neither_sees_nor_takes_a_cursor(self):
        _, url = self.page("/acme/flags?limit=5")
        quoted = urllib.parse.quote(self.cursor_of(url))
        self.assertStatus(self.call("GET", f"/acme/flags?limit=5&cursor={quoted}", "outsider"),
                          404)
        self.assertInvalid(self.call("GET", f"/globex/flags?limit=5&cursor={quoted}",
                                     "outsider"), "cursor")
        keys, url = self.page("/globex/flags?limit=15", "outsider")
        self.assertEqual(len(keys), 15)
        self.assertEqual(self.page(url, "outsider"), ([f"f-{i:04d}" for i in range(15, 20)],
                                                      None))

    def test_credentials_and_scopes(self):
        self.assertStatus(self.call("GET", "/acme/flags?limit=5", None), 401)
        self.assertStatus(self.call("GET", "/acme/flags?limit=5", "not-a-token"), 401)
        for role in ("owner", "admin", "member", "viewer", "readonly", "org"):
            with self.subTest(role=role):
                self.assertEqual(len(self.page("/acme/flags?limit=5", role)[0]), 5)

    def test_stale_pages(self):
        keys, pages = self.walk("/acme/flags?stale=true&limit=300")
        expected = self.keys_sql("f.archived_at IS NULL AND f.created_at < now() - interval '30 days'")
        self.assertEqual(len(expected), 834)
        self.assertEqual((keys, pages), (expected, 3))
        keys, _ = self.walk("/acme/flags?stale=true&q=f-24&limit=9")
        self.assertEqual(keys, [f"f-{i}" for i in range(2400, 2500) if i % 3 == 0])


class FlagSearchPastTheWalkTest(FlagPagesTestCase):
    """12,000 flags: a q of three characters or more walks 5,000 flags after
    the cursor, then asks the trigram index for the matches past them
    (flaglist.c); both halves, and their seam, give every match once."""

    @classmethod
    def prepare(cls):
        super().prepare()
        cls.database.query(
            "INSERT INTO flags (org_id, key, name, type, tags)"
            " SELECT o.id, 'w-' || lpad(i::text, 5, '0'), 'Walked ' || i, 'boolean',"
            " CASE WHEN i % 1000 = 0 THEN ARRAY['rare-tag'] ELSE '{}' END"
            " FROM orgs o, generate_series(0, 11999) AS i WHERE o.slug = 'acme'")
        cls.database.query(flags_sql("globex", 0, 50))
        cls.database.query("UPDATE flags SET tags = '{rare-tag}' WHERE key = 'f-0001'")

    def test_rare_matches_past_the_walk(self):
        expected = [f"w-{i:05d}" for i in range(0, 12000, 1000)]
        for limit in (7, 5, 1, 1000):
            with self.subTest(limit=limit):
                keys, pages = self.walk(f"/acme/flags?q=rare-tag&limit={limit}")
                self.assertEqual(keys, expected)
        self.assertEqual(self.page("/acme/flags?q=Walked%2011999")[0], ["w-11999"])
        self.assertEqual(self.page("/acme/flags?q=walked%205001")[0], ["w-05001"])
        self.assertEqual(self.page("/acme/flags?q=walked%2011999&archived=true")[0], [])

    def test_common_matches_fill_the_walk(self):
        keys, pages = self.walk("/acme/flags?q=walked&limit=1000")
        self.assertEqual((len(keys), pages), (12000, 12))
        self.assertEqual(keys, sorted(keys))
        keys, _ = self.walk("/acme/flags?q=" + urllib.parse.quote("walked 1") + "&limit=300")
        self.assertEqual(keys, sorted(f"w-{i:05d}" for i in range(12000) if str(i).startswith("1")))


class FlagListEnabledInTest(FlagPagesTestCase):
    """enabledIn comes from flags.enabled_in_json (sql/0022), kept by triggers
    on flag_environments: the list shows every change of a flag's enabled
    environments, and the column is what the environments say on every flag."""

    def enabled_in(self, slug):
        """The flag's enabledIn in the list (the key of acme's only flag or one of few)."""
        body = self.assertStatus(self.call("GET", "/acme/flags", "viewer"), 200)
        return {f["key"]: f["enabledIn"] for f in body["flags"]}[slug]

    def assertColumnHolds(self):
        broken = self.database.query(
            "SELECT count(*) FROM flags WHERE enabled_in_json IS DISTINCT FROM"
            " ensign_flag_enabled_in(id)")
        self.assertEqual(broken, "0")

    def test_the_list_follows_every_change_of_enabled(self):
        self.flag("toggled")
        self.flag("other")
        self.assertEqual(self.enabled_in("toggled"), [])
        self.assertStatus(self.configure("toggled", {"enabled": True}, env="production"), 200)
        self.assertStatus(self.configure("toggled", {"enabled": True}, env="development"), 200)
        self.assertEqual(self.enabled_in("toggled"), ["development", "production"])
        self.assertEqual(self.enabled_in("other"), [])
        # the same value again, and a change of the default serve only: unchanged
        self.assertStatus(self.configure("toggled", {"enabled": True}, env="production"), 200)
        self.assertStatus(self.configure("toggled", {"defaultServe": {"variant": "on"}},
                                         env="development"), 200)
        self.assertEqual(self.enabled_in("toggled"), ["development", "production"])
        self.assertStatus(self.configure("toggled", {"enabled": False}, env="production"), 200)
        self.assertEqual(self.enabled_in("toggled"), ["development"])
        self.assertColumnHolds()

    def test_environments_created_and_deleted(self):
        self.flag("spread")
        self.assertStatus(self.configure("spread", {"enabled": True}, env="preview"), 200)
        self.database.query("INSERT INTO environments (org_id, key, name, sort_order)"
                            " SELECT id, 'aaa-staging', 'Staging', 5 FROM orgs"
                            " WHERE slug = 'acme'")
        # a new environment configures every flag disabled: nothing changes
        self.assertEqual(self.enabled_in("spread"), ["preview"])
        self.assertStatus(self.configure("spread", {"enabled": True}, env="aaa-staging"), 200)
        self.assertEqual(self.enabled_in("spread"), ["aaa-staging", "preview"])
        self.database.query("DELETE FROM environments WHERE key = 'aaa-staging' AND org_id ="
                            " (SELECT id FROM orgs WHERE slug = 'acme')")
        self.assertEqual(self.enabled_in("spread"), ["preview"])
        self.assertColumnHolds()

    def test_rows_written_without_the_api(self):
        self.flag("by-sql")
        self.database.query("UPDATE flag_environments SET enabled = true WHERE flag_id ="
                            " (SELECT id FROM flags WHERE key = 'by-sql')")
        self.assertEqual(self.enabled_in("by-sql"), ["development", "preview", "production"])
        self.database.query("DELETE FROM flag_environments WHERE flag_id ="
                            " (SELECT id FROM flags WHERE key = 'by-sql')"
                            " AND environment_id IN (SELECT id FROM environments"
                            " WHERE key = 'preview')")
        self.assertEqual(self.enabled_in("by-sql"), ["development", "production"])
        self.assertAck(self.call("DELETE", "/acme/flags/by-sql", "member"))
        self.assertColumnHolds()


if __name__ == "__main__":
    unittest.main()
