"""test_accounts_projects.py - projects, collaborators and owners
(doc/api.md; doc/choices.md "Internal operations, sessions, notifications").

Run by tests/e2e/run (each class has its own database and ensignd).
"""

from accountfixture import AccountTestCase

PROJECT_FIELDS = {"id", "org_id", "name", "slug", "description", "readme", "repository_url",
                  "created_by", "created_at", "updated_at", "deleted_at"}


class ProjectsTest(AccountTestCase):

    def test_create_read_update_rename(self):
        p = self.ok(self.call("POST", "/orgs/acme/projects", "admin",
                              body={"name": "Mobile App", "description": "iOS",
                                    "repository_url": "https://example.com/r.git"}))
        self.assertEqual(set(p), PROJECT_FIELDS)
        self.assertEqual((p["slug"], p["description"], p["readme"], p["deleted_at"]),
                         ("mobile-app", "iOS", "", None))
        self.assertEqual(p["created_by"], self.user_ids["admin"])
        by_id = self.ok(self.call("GET", f"/orgs/acme/projects/{p['id']}", "viewer"))
        self.assertEqual(by_id["slug"], "mobile-app")
        expanded = self.ok(self.call("GET", "/orgs/acme/projects/mobile-app?expand[]=organization",
                                     "viewer"))
        self.assertEqual(expanded["organization"]["slug"], "acme")
        self.assertEqual(expanded["organization"]["role"], "viewer")
        self.assertNotIn("organization", by_id)
        renamed = self.ok(self.call("PATCH", "/orgs/acme/projects/mobile-app", "admin",
                                    body={"slug": "ios", "readme": "# Hi"}))
        self.assertEqual((renamed["slug"], renamed["readme"], renamed["name"]),
                         ("ios", "# Hi", "Mobile App"))
        self.problem(self.call("GET", "/orgs/acme/projects/mobile-app"), 404)
        self.ok(self.call("GET", "/orgs/acme/projects/ios"))
        members = self.ok(self.call("GET", "/orgs/acme/projects/ios/members"))["members"]
        self.assertEqual([(m["user_id"], m["role"]) for m in members],
                         [(self.user_ids["admin"], "admin")])

    def test_write_failures(self):
        self.ok(self.call("POST", "/orgs/acme/projects", body={"name": "Dup"}))
        self.problem(self.call("POST", "/orgs/acme/projects", body={"name": "Dup"}), 409)
        self.ok(self.call("POST", "/orgs/acme/projects", body={"name": "Other"}))
        self.problem(self.call("PATCH", "/orgs/acme/projects/other", body={"slug": "dup"}), 409)
        self.problem(self.call("POST", "/orgs/acme/projects", body={}), 422, "name")
        self.problem(self.call("POST", "/orgs/acme/projects", body={"name": "x", "slug": "X Y"}),
                     422, "slug")
        self.problem(self.call("POST", "/orgs/acme/projects", body={"name": "x", "bogus": 1}),
                     422, "bogus")
        self.problem(self.call("PATCH", "/orgs/acme/projects/nope", body={"name": "y"}), 404)
        for token in ("member", "viewer"):
            with self.subTest(token=token):
                self.problem(self.call("POST", "/orgs/acme/projects", token, body={"name": "z"}),
                             403)
                self.problem(self.call("PATCH", "/orgs/acme/projects/dup", token,
                                       body={"name": "z"}), 403)
                self.problem(self.call("DELETE", "/orgs/acme/projects/dup", token), 403)
        self.problem(self.call("POST", "/orgs/acme/projects",
                               self.scoped_token({"projects": "read"}), body={"name": "z"}), 403)
        self.problem(self.call("GET", "/orgs/acme/projects",
                               self.scoped_token({"members": "read"})), 403)

    def test_soft_delete_and_restore(self):
        self.ok(self.call("POST", "/orgs/acme/projects", body={"name": "Old"}))
        gone = self.ok(self.call("DELETE", "/orgs/acme/projects/old?expand[]=organization"))
        self.assertIsNotNone(gone["deleted_at"])
        self.assertEqual(gone["organization"]["slug"], "acme")
        self.problem(self.call("GET", "/orgs/acme/projects/old"), 404)
        self.problem(self.call("DELETE", "/orgs/acme/projects/old"), 404)
        deleted = self.ok(self.call("GET", "/orgs/acme/deleted-projects"))["projects"]
        self.assertEqual([p["slug"] for p in deleted], ["old"])
        self.assertNotIn("old", [p["slug"] for p in self.ok(self.call(
            "GET", "/orgs/acme/projects"))["projects"]])
        restored = self.ok(self.call("POST", "/orgs/acme/projects/old/restore"))
        self.assertIsNone(restored["deleted_at"])
        self.ok(self.call("POST", "/orgs/acme/projects/old/restore"))
        self.ok(self.call("GET", "/orgs/acme/projects/old"))
        self.assertEqual(self.ok(self.call("GET", "/orgs/acme/deleted-projects"))["projects"], [])
        self.problem(self.call("POST", "/orgs/acme/projects/never/restore"), 404)
        self.problem(self.call("POST", "/orgs/acme/projects/old/restore", "member"), 403)

    def test_restore_is_in_openapi(self):
        doc = self.server.request("GET", "/openapi.json").json
        self.assertIn("post", doc["paths"]["/orgs/{slug}/projects/{project}/restore"])


class CollaboratorsTest(AccountTestCase):

    @classmethod
    def prepare(cls):
        super().prepare()
        cls.database.query("INSERT INTO projects (org_id, name, slug)"
                           " SELECT id, 'Web', 'web' FROM orgs WHERE slug = 'acme'")

    def test_add_role_remove_with_notification(self):
        mel = self.user_ids["member"]
        self.ack(self.call("POST", "/orgs/acme/projects/web/members", "admin",
                           body={"login": "mel@example.com", "role": "write"}))
        self.problem(self.call("POST", "/orgs/acme/projects/web/members", "admin",
                               body={"login": "mel@example.com", "role": "write"}), 409)
        notes = self.ok(self.call("GET", "/notifications", "member"))["notifications"]
        self.assertEqual(notes[0]["kind"], "project.collaborator_added")
        self.ack(self.call("PUT", f"/orgs/acme/projects/web/members/{mel}/role", "admin",
                           body={"role": "maintain"}))
        listed = self.ok(self.call("GET", "/orgs/acme/projects/web/members?q=MEL", "viewer"))
        self.assertEqual([(m["user_id"], m["role"]) for m in listed["members"]],
                         [(mel, "maintain")])
        self.ack(self.call("DELETE", f"/orgs/acme/projects/web/members/{mel}", "admin"))
        self.problem(self.call("DELETE", f"/orgs/acme/projects/web/members/{mel}", "admin"), 404)
        self.problem(self.call("PUT", f"/orgs/acme/projects/web/members/{mel}/role", "admin",
                               body={"role": "read"}), 404)

    def test_failures(self):
        self.problem(self.call("POST", "/orgs/acme/projects/web/members", "admin",
                               body={"login": "bob@example.com", "role": "read"}), 422, "login")
        for role in ("owner", "member", "boss"):
            with self.subTest(role=role):
                self.problem(self.call("POST", "/orgs/acme/projects/web/members", "admin",
                                       body={"login": "vic@example.com", "role": role}), 422,
                             "role")
        self.problem(self.call("POST", "/orgs/acme/projects/web/members", "admin",
                               body={"login": "vic@example.com"}), 422, "role")
        self.problem(self.call("POST", "/orgs/acme/projects/nope/members", "admin",
                               body={"login": "vic@example.com", "role": "read"}), 404)
        self.problem(self.call("GET", "/orgs/acme/projects/nope/members"), 404)
        self.problem(self.call("GET", "/orgs/acme/projects/nope/owners"), 404)
        self.problem(self.call("POST", "/orgs/acme/projects/web/members", "member",
                               body={"login": "vic@example.com", "role": "read"}), 403)

    def test_owners_are_admins_and_org_owners(self):
        self.ack(self.call("POST", "/orgs/acme/projects/web/members", "admin",
                           body={"login": "vic@example.com", "role": "admin"}))
        owners = self.ok(self.call("GET", "/orgs/acme/projects/web/owners", "viewer"))["members"]
        self.assertEqual({(m["user_id"], m["role"]) for m in owners},
                         {(self.identity.user_id, "owner"), (self.user_ids["viewer"], "admin")})
        ids = [m["user_id"] for m in owners]
        self.assertEqual(ids, sorted(ids))
        one = self.call("GET", "/orgs/acme/projects/web/owners?limit=1")
        self.assertEqual(len(self.ok(one)["members"]), 1)
        self.assertIn('rel="next"', one.headers["Link"])
