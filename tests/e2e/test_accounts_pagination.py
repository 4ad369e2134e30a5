"""test_accounts_pagination.py - keyset pagination, cursors, search and the
QUERY method on the root API's lists (doc/api.md "Surfaces and error
bodies").

Run by tests/e2e/run (each class has its own database and ensignd).
"""

import urllib.parse

from accountfixture import AccountTestCase, next_link


class PaginationTest(AccountTestCase):

    @classmethod
    def prepare(cls):
        super().prepare()
        # 40 projects in acme, 3 in globex; names searchable by "blue".
        cls.database.query(
            "INSERT INTO projects (org_id, name, slug, created_at)"
            " SELECT o.id, CASE WHEN i % 4 = 0 THEN 'Blue Project ' ELSE 'Red Project ' END || i,"
            "        'p-' || i, now() - (100 - i) * interval '1 second'"
            "   FROM orgs o, generate_series(1, 40) AS i WHERE o.slug = 'acme'")
        cls.database.query(
            "INSERT INTO projects (org_id, name, slug)"
            " SELECT o.id, 'Globex ' || i, 'g-' || i FROM orgs o, generate_series(1, 3) AS i"
            "  WHERE o.slug = 'globex'")

    def test_pages_of_ten_with_inserts_and_deletes_between_them(self):
        seen, url, pages = [], "/orgs/acme/projects?limit=10", 0
        created = []
        deleted = None
        while url is not None:
            response = self.call("GET", url)
            body = self.ok(response)
            self.assertLessEqual(len(body["projects"]), 10)
            seen += [p["slug"] for p in body["projects"]]
            pages += 1
            url = next_link(response)
            if url is not None:
                self.assertTrue(url.startswith("/orgs/acme/projects?"), url)
                self.assertIn("limit=10", url)
                self.assertIn("cursor=", url)
            if pages == 1:
                # A project on a later page goes away, a new one arrives.
                deleted = "p-35"
                self.ok(self.call("DELETE", "/orgs/acme/projects/p-35"))
                created.append(self.ok(self.call("POST", "/orgs/acme/projects",
                                                 body={"name": "Late One"}))["slug"])
            if pages == 2:
                created.append(self.ok(self.call("POST", "/orgs/acme/projects",
                                                 body={"name": "Later Two"}))["slug"])
        self.assertEqual(len(seen), len(set(seen)), "a row was repeated")
        expected = {f"p-{i}" for i in range(1, 41)} - {deleted} | set(created)
        self.assertEqual(set(seen), expected, "a row was skipped")
        self.assertGreaterEqual(pages, 4)
        self.ok(self.call("POST", "/orgs/acme/projects/p-35/restore"))
        for slug in created:
            self.ok(self.call("DELETE", f"/orgs/acme/projects/{slug}"))

    def test_limit_default_clamp_and_bad_values(self):
        self.assertEqual(len(self.ok(self.call("GET", "/orgs/acme/projects"))["projects"]), 30)
        self.assertEqual(len(self.ok(self.call("GET", "/orgs/acme/projects?limit=1000"))
                             ["projects"]), 40)
        response = self.call("GET", "/orgs/acme/projects?limit=0")
        self.assertEqual(len(self.ok(response)["projects"]), 1)
        self.assertIn("limit=1&", response.headers["Link"])
        for bad in ("abc", "1.5", ""):
            with self.subTest(limit=bad):
                self.problem(self.call("GET", f"/orgs/acme/projects?limit={bad}"), 422, "limit")

    def test_last_page_has_no_link(self):
        response = self.call("GET", "/orgs/acme/projects?limit=100")
        self.ok(response)
        self.assertIsNone(response.headers.get("Link"))

    def first_cursor(self, path):
        response = self.call("GET", path)
        self.ok(response)
        url = next_link(response)
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
        return query["cursor"][0]

    def test_tampered_and_malformed_cursors_are_422(self):
        cursor = self.first_cursor("/orgs/acme/projects?limit=5")
        payload, mac = cursor.split(".")
        flipped = payload[:-1] + ("A" if payload[-1] != "A" else "B")
        for bad in (flipped + "." + mac, payload + "." + mac[:-1] + ("x" if mac[-1] != "x" else "y"),
                    "garbage", "a.b", cursor + "x", "%00"):
            with self.subTest(cursor=bad):
                self.problem(self.call("GET", "/orgs/acme/projects?limit=5&cursor="
                                       + urllib.parse.quote(bad)), 422, "cursor")

    def test_cursor_reused_on_another_route_org_or_q_is_422(self):
        cursor = self.first_cursor("/orgs/acme/projects?limit=5")
        self.ok(self.call("GET", f"/orgs/acme/projects?limit=5&cursor={cursor}"))
        self.problem(self.call("GET", f"/orgs/acme/deleted-projects?limit=5&cursor={cursor}"),
                     422, "cursor")
        self.problem(self.call("GET", f"/orgs/acme/members?limit=5&cursor={cursor}"), 422,
                     "cursor")
        self.problem(self.call("GET", f"/orgs/globex/projects?limit=5&cursor={cursor}",
                               "outsider"), 422, "cursor")
        self.problem(self.call("GET", f"/orgs/acme/projects?limit=5&q=blue&cursor={cursor}"),
                     422, "cursor")
        searched = self.first_cursor("/orgs/acme/projects?limit=2&q=blue")
        self.problem(self.call("GET", f"/orgs/acme/projects?limit=2&q=red&cursor={searched}"),
                     422, "cursor")
        self.ok(self.call("GET", f"/orgs/acme/projects?limit=2&q=blue&cursor={searched}"))

    def test_search_is_case_insensitive_and_paged(self):
        items, pages = self.all_pages("/orgs/acme/projects", member="projects", limit=3, q="BLUE")
        self.assertEqual(sorted(p["slug"] for p in items),
                         sorted(f"p-{i}" for i in range(4, 41, 4)))
        self.assertEqual(pages, 4)
        self.assertEqual(self.ok(self.call("GET", "/orgs/acme/projects?q=p-1"))["projects"][0]
                         ["slug"], "p-1")
        self.assertEqual(self.ok(self.call("GET", "/orgs/acme/projects?q=%25"))["projects"], [])
        self.assertEqual(self.ok(self.call("GET", "/orgs/acme/projects?q=nothing"))["projects"],
                         [])
        self.problem(self.call("GET", "/orgs/acme/projects?q=" + "x" * 201), 422, "q")

    def test_query_method_equals_get(self):
        for path, body in (("/orgs/acme/projects?limit=7&q=red", {"limit": 7, "q": "red"}),
                           ("/orgs/acme/members?limit=2", {"limit": 2}),
                           ("/orgs?limit=1", {"limit": 1}),
                           ("/orgs/acme/projects", None)):
            with self.subTest(path=path):
                get = self.call("GET", path)
                query = self.call("QUERY", path.split("?")[0], body=body)
                self.assertEqual(query.status, 200, query)
                self.assertEqual(query.json, get.json)
                self.assertEqual(query.headers.get("Link"), get.headers.get("Link"))
        cursor = self.first_cursor("/orgs/acme/projects?limit=5")
        get = self.call("GET", f"/orgs/acme/projects?limit=5&cursor={cursor}")
        query = self.call("QUERY", "/orgs/acme/projects", body={"limit": 5, "cursor": cursor})
        self.assertEqual(query.json, get.json)
        self.assertEqual(query.headers.get("Link"), get.headers.get("Link"))

    def test_query_method_errors_and_scope(self):
        self.problem(self.call("QUERY", "/orgs/acme/projects", body={"limit": "x"}), 422, "limit")
        self.problem(self.call("QUERY", "/orgs/acme/projects", body={"cursor": "bad.bad"}), 422,
                     "cursor")
        self.assertProblem(self.call("QUERY", "/orgs/acme/projects", body=b"{not json",
                                     headers={"Content-Type": "application/json"}), 400)
        self.assertProblem(self.call("QUERY", "/orgs/acme/projects", token=None, body={}), 401)
        self.assertProblem(self.call("QUERY", "/orgs/acme/projects", "outsider", body={}), 404)
        no_projects = self.scoped_token({"orgs": "read"})
        self.assertProblem(self.call("QUERY", "/orgs/acme/projects", no_projects, body={}), 403)
        self.assertProblem(self.call("GET", "/orgs/acme/projects", no_projects), 403)
        # The method-override header QUERY rides on is honoured as QUERY only.
        over = self.call("POST", "/orgs/acme/projects", body={"limit": 1},
                         headers={"X-HTTP-Method-Override": "QUERY"})
        self.assertEqual(len(self.ok(over)["projects"]), 1)

    def test_query_method_keeps_the_connection_usable(self):
        token = self.tokens["owner"]
        body = b'{"limit": 1}'
        raw = (b"QUERY /orgs/acme/projects HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer "
               + token.encode() + b"\r\nContent-Type: application/json\r\nContent-Length: "
               + str(len(body)).encode() + b"\r\n\r\n" + body)
        response = self.server.raw(raw)
        self.assertEqual(response.status, 200, response)
        self.assertEqual(len(response.json["projects"]), 1)
