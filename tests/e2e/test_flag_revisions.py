"""test_flag_revisions.py - end-to-end tests of GET
/v1/orgs/{org}/flags/{key}/revisions (src/api/flagrevisions.c): a flag's
whole history newest first, page by page with the root API's
keyset pagination (limit, cursor, Link rel="next", q), while the detail
shows the newest REVISION_WINDOW only. Covered: every revision reached
once in the detail's order and form, the first page equal to the
detail's, writes between pages, q, the limit's default, clamp and bad
values, cursors tampered with or from another flag (also one deleted and
created again under the same key), 404s, authorization, and the server
serving on after all of it.

Run by tests/e2e/run (each class has its own database and ensignd).
"""

import urllib.parse

from accountfixture import next_link
from test_mgmt_bodies import REVISION_WINDOW, FormerBodiesTestCase
from test_revision_pages import insert_revisions


class FlagRevisionsTest(FormerBodiesTestCase):

    def page(self, path, token="viewer"):
        """GET path (under /v1, or a Link URL): (body, next URL)."""
        if not path.startswith("/v1/"):
            path = "/v1/orgs" + path
        secret = self.tokens.get(token, token)
        response = self.server.request("GET", path, headers={"Authorization": f"Bearer {secret}"})
        self.assertEqual(response.status, 200, response)
        self.assertEqual(set(response.json), {"revisions"}, response.json)
        return response.json, next_link(response)

    def all_pages(self, key, query="limit=7"):
        items, pages, url = [], 0, f"/acme/flags/{key}/revisions?{query}"
        while url is not None:
            body, url = self.page(url)
            items += body["revisions"]
            pages += 1
            self.assertLess(pages, 500)
        return items, pages

    def expected_ids(self, key, where="true"):
        return self.sql("SELECT id FROM revisions"
                        f" WHERE flag_id = '{self.flag_id(key)}' AND {where}"
                        " ORDER BY created_at DESC, id DESC").split("\n")

    def test_every_revision_once_in_the_details_order_and_form(self):
        self.flag("long-history")
        flag = self.flag_id("long-history")
        # 130 in 44 instants (ties broken by id), odd text, null users
        self.sql(insert_revisions([flag], 130, "'2030-01-01 00:00:00+00'::timestamptz"
                                  " + (i / 3) * interval '1 second'"))
        items, pages = self.all_pages("long-history")
        self.assertEqual([r["id"] for r in items], self.expected_ids("long-history"))
        self.assertEqual(len(items), 131)
        self.assertEqual(pages, 19)  # 131 / 7, rounded up
        self.assertEqual(items[-1]["action"], "flag.created")
        # the form is the detail's, byte for byte: the first window is its revisions
        detail = self.assertDetailIsFormer("long-history")
        self.assertEqual(len(detail["revisions"]), REVISION_WINDOW)
        self.assertEqual(items[:REVISION_WINDOW], detail["revisions"])
        body, _ = self.page(f"/acme/flags/long-history/revisions?limit={REVISION_WINDOW}")
        self.assertEqual(body["revisions"], detail["revisions"])

    def test_writes_between_pages_skip_and_repeat_nothing(self):
        self.flag("moving")
        for i in range(12):
            self.assertStatus(self.call("PATCH", "/acme/flags/moving", "member",
                                        body={"description": f"d{i}"}), 200)
        body, url = self.page("/acme/flags/moving/revisions?limit=5")
        seen = [r["id"] for r in body["revisions"]]
        # newer revisions arrive meanwhile: they are in front, not on later pages
        for i in range(3):
            self.assertStatus(self.call("PATCH", "/acme/flags/moving", "member",
                                        body={"description": f"late {i}"}), 200)
        while url is not None:
            body, url = self.page(url)
            seen += [r["id"] for r in body["revisions"]]
        self.assertEqual(seen, self.expected_ids("moving")[3:])
        self.assertEqual(len(seen), 13)

    def test_search(self):
        self.flag("searched")
        for word in ("Alpha", "beta", "ALPHA again", "100% sure", "under_score"):
            self.assertStatus(self.call("PATCH", "/acme/flags/searched", "member",
                                        body={"description": word}), 200)
        everything, _ = self.all_pages("searched")
        self.assertEqual(len(everything), 6)

        def matching(q):
            """The revisions whose action, summary, changes or user name
            contain q, case-insensitive, in the list's order."""
            return [r for r in everything
                    if q.lower() in " ".join([r["action"], r["summary"] or "", *r["changes"],
                                              r["userName"] or ""]).lower()]
        for q, query in (("alpha", "limit=1&q=alpha"), ("ALPHA AGAIN", "q=ALPHA%20AGAIN"),
                         ("100%", "q=100%25"), ("_", "q=_"), ("flag.created", "q=flag.created"),
                         ("Mel Member", "q=Mel%20Member"), ("nowhere", "q=nowhere")):
            with self.subTest(q=q):
                self.assertEqual(self.all_pages("searched", query)[0], matching(q))
        self.assertEqual(len(matching("alpha")), 4)
        self.assertEqual(len(matching("_")), 1)  # not a wildcard
        self.assertEqual(len(matching("Mel Member")), 6)
        self.assertEqual(matching("nowhere"), [])
        # a q changed while paging does not take the old q's cursor
        _, url = self.page("/acme/flags/searched/revisions?limit=1&q=alpha")
        changed = url.replace("q=alpha", "q=beta")
        self.assertNotEqual(changed, url)
        self.assertInvalid(self.server.request("GET", changed, headers=self.auth("viewer")),
                           "cursor")

    def auth(self, token):
        return {"Authorization": f"Bearer {self.tokens[token]}"}

    def test_limit_default_clamp_and_bad_values(self):
        self.flag("limits")
        self.sql(insert_revisions([self.flag_id("limits")], 150))
        body, url = self.page("/acme/flags/limits/revisions")
        self.assertEqual(len(body["revisions"]), 30)
        self.assertIn("limit=30", url)
        body, url = self.page("/acme/flags/limits/revisions?limit=1000")
        self.assertEqual(len(body["revisions"]), 100)
        body, url = self.page(url)
        self.assertEqual(len(body["revisions"]), 51)
        self.assertIsNone(url)
        body, url = self.page("/acme/flags/limits/revisions?limit=0")
        self.assertEqual(len(body["revisions"]), 1)
        for bad in ("abc", "1.5", "", "-"):
            with self.subTest(limit=bad):
                self.assertInvalid(self.call("GET", f"/acme/flags/limits/revisions?limit={bad}",
                                             "viewer"), "limit")
        self.assertInvalid(self.call("GET", "/acme/flags/limits/revisions?q=" + "x" * 201,
                                     "viewer"), "q")

    def first_cursor(self, key):
        _, url = self.page(f"/acme/flags/{key}/revisions?limit=1")
        return urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["cursor"][0]

    def test_foreign_and_tampered_cursors_are_422(self):
        self.flag("own")
        self.flag("other")
        self.flag("reborn")
        for key in ("own", "other", "reborn"):
            self.sql(insert_revisions([self.flag_id(key)], 3))
        cursor = self.first_cursor("own")
        self.page(f"/acme/flags/own/revisions?limit=1&cursor={urllib.parse.quote(cursor)}")
        payload, mac = cursor.split(".")
        flipped = payload[:-1] + ("A" if payload[-1] != "A" else "B")
        for bad in (flipped + "." + mac, "garbage", cursor + "x", "%00"):
            with self.subTest(cursor=bad):
                self.assertInvalid(self.call("GET", f"/acme/flags/own/revisions?limit=1&cursor="
                                             f"{urllib.parse.quote(bad)}", "viewer"), "cursor")
        quoted = urllib.parse.quote(cursor)
        # another flag's, another list's route
        self.assertInvalid(self.call("GET", f"/acme/flags/other/revisions?limit=1&cursor={quoted}",
                                     "viewer"), "cursor")
        # a flag deleted and created again under the same key
        old = urllib.parse.quote(self.first_cursor("reborn"))
        self.assertStatus(self.call("DELETE", "/acme/flags/reborn", "member"), 200)
        self.flag("reborn")
        self.assertInvalid(self.call("GET", f"/acme/flags/reborn/revisions?limit=1&cursor={old}",
                                     "viewer"), "cursor")
        self.assertEqual(len(self.page("/acme/flags/reborn/revisions")[0]["revisions"]), 1)

    def test_not_found_and_authorization(self):
        self.flag("guarded")
        for path, token in (("/acme/flags/nope/revisions", "viewer"),
                            ("/acme/flags/guarded/revisions", "outsider"),
                            ("/globex/flags/guarded/revisions", "viewer")):
            with self.subTest(path=path, token=token):
                self.assertEqual(self.call("GET", path, token).status, 404)
        self.assertEqual(self.call("GET", "/acme/flags/guarded/revisions", None).status, 401)
        self.assertEqual(self.call("GET", "/acme/flags/guarded/revisions", "bogus").status, 401)
        for token in ("owner", "admin", "member", "viewer", "readonly", "org"):
            with self.subTest(token=token):
                self.assertEqual(len(self.page("/acme/flags/guarded/revisions",
                                               token)[0]["revisions"]), 1)
        # the server serves on
        self.assertStatus(self.call("GET", "/acme/flags/guarded", "viewer"), 200)
