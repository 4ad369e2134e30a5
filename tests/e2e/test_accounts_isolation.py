"""test_accounts_isolation.py - a user of one organization can neither read
nor change anything of another (doc/api.md "Roles and scopes"): one test per
resource of both documents. Every request is made with globex's owner
token and with globex's organization token against acme, and must be 404
(never 403, which would reveal that acme exists); writes must change
nothing.

Run by tests/e2e/run (each class has its own database and ensignd).
"""

from accountfixture import AccountTestCase

FLAG = "/v1/orgs/acme/flags/iso-flag"
RULES = FLAG + "/environments/production/rules"

# resource -> requests (method, path, body)
RESOURCES = {
    "flags": [("GET", "/v1/orgs/acme/flags", None), ("GET", FLAG, None),
              ("POST", "/v1/orgs/acme/flags", {"slug": "stolen"}),
              ("PATCH", FLAG, {"name": "x"}), ("DELETE", FLAG, None),
              ("POST", FLAG + "/archive", None), ("GET", FLAG + "/usage", None)],
    "variants": [("POST", FLAG + "/variants", {"value": "x"}),
                 ("PATCH", FLAG + "/variants/on", {"label": "x"}),
                 ("DELETE", FLAG + "/variants/on", None)],
    "environments": [("GET", "/v1/orgs/acme/environments", None),
                     ("PATCH", FLAG + "/environments/production", {"enabled": True})],
    "rules": [("GET", RULES, None), ("POST", RULES, {"serve": {"variant": "on"}}),
              ("PUT", RULES, {"rules": []})],
    "segments": [("GET", "/v1/orgs/acme/segments", None),
                 ("GET", "/v1/orgs/acme/segments/iso-seg", None),
                 ("POST", "/v1/orgs/acme/segments", {"key": "s2", "name": "x"}),
                 ("DELETE", "/v1/orgs/acme/segments/iso-seg", None)],
    "entities": [("GET", "/v1/orgs/acme/entities", None),
                 ("POST", "/v1/orgs/acme/entities", {"key": "e2", "label": "x"})],
    "sdk_keys": [("GET", "/v1/orgs/acme/sdk-keys", None),
                 ("POST", "/v1/orgs/acme/sdk-keys", {"name": "x", "environmentKey": "production"})],
    "v1_members": [("GET", "/v1/orgs/acme/members", None)],
    "organization": [("PATCH", "/orgs/acme", {"name": "Stolen"}),
                     ("POST", "/orgs/acme/leave", None),
                     ("GET", "/orgs/acme/deleted-projects", None)],
    "members": [("GET", "/orgs/acme/members", None),
                ("QUERY", "/orgs/acme/members", {}),
                ("POST", "/orgs/acme/members", {"login": "bob@example.com"}),
                ("DELETE", "/orgs/acme/members/{viewer}", None),
                ("PUT", "/orgs/acme/members/{viewer}/role", {"role": "owner"})],
    "invitations": [("GET", "/orgs/acme/invitations", None),
                    ("POST", "/orgs/acme/invitations", {"login": "x@example.com"}),
                    ("DELETE", "/orgs/acme/invitations/{invitation}", None)],
    "projects": [("GET", "/orgs/acme/projects", None),
                 ("GET", "/orgs/acme/projects/iso", None),
                 ("POST", "/orgs/acme/projects", {"name": "Stolen"}),
                 ("PATCH", "/orgs/acme/projects/iso", {"name": "Stolen"}),
                 ("DELETE", "/orgs/acme/projects/iso", None),
                 ("POST", "/orgs/acme/projects/iso/restore", None)],
    "collaborators": [("GET", "/orgs/acme/projects/iso/members", None),
                      ("POST", "/orgs/acme/projects/iso/members",
                       {"login": "vic@example.com", "role": "admin"}),
                      ("DELETE", "/orgs/acme/projects/iso/members/{owner}", None),
                      ("PUT", "/orgs/acme/projects/iso/members/{owner}/role", {"role": "read"}),
                      ("GET", "/orgs/acme/projects/iso/owners", None)],
}

SNAPSHOT_SQL = (
    "SELECT md5(string_agg(t, '|' ORDER BY t)) FROM ("
    " SELECT row_to_json(f)::text AS t FROM flags f"
    " UNION ALL SELECT row_to_json(v)::text FROM variants v"
    " UNION ALL SELECT row_to_json(s)::text FROM segments s"
    " UNION ALL SELECT row_to_json(e)::text FROM entities e"
    " UNION ALL SELECT row_to_json(k)::text FROM sdk_keys k"
    " UNION ALL SELECT row_to_json(m)::text FROM org_members m"
    " UNION ALL SELECT row_to_json(i)::text FROM invitations i"
    " UNION ALL SELECT row_to_json(p)::text FROM projects p"
    " UNION ALL SELECT row_to_json(pm)::text FROM project_members pm"
    " UNION ALL SELECT row_to_json(fe)::text FROM flag_environments fe"
    " UNION ALL SELECT row_to_json(r)::text FROM rules r"
    " UNION ALL SELECT row_to_json(o)::text FROM orgs o) AS rows")


class IsolationTest(AccountTestCase):

    @classmethod
    def prepare(cls):
        super().prepare()
        db = cls.database
        db.query("INSERT INTO projects (org_id, name, slug, created_by)"
                 " SELECT o.id, 'Iso', 'iso', u.id FROM orgs o, users u"
                 " WHERE o.slug = 'acme' AND u.email = 'alice@example.com'")
        db.query("INSERT INTO project_members (project_id, user_id, role)"
                 " SELECT p.id, p.created_by, 'admin' FROM projects p WHERE p.slug = 'iso'")
        db.query("INSERT INTO invitations (org_id, email, token_digest, expires_at)"
                 " SELECT id, 'x@example.com', repeat('a', 64), now() + interval '1 day'"
                 "   FROM orgs WHERE slug = 'acme'")

    def setUp(self):
        self.ok(self.call("GET", "/me"))
        if self.call("GET", FLAG).status == 404:
            self.assertEqual(self.call("POST", "/v1/orgs/acme/flags",
                                       body={"slug": "iso-flag"}).status, 201)
            self.assertEqual(self.call("POST", "/v1/orgs/acme/segments",
                                       body={"key": "iso-seg", "name": "Iso"}).status, 201)

    def check(self, resource):
        names = {"viewer": self.user_ids["viewer"], "owner": self.identity.user_id,
                 "invitation": self.database.query("SELECT id FROM invitations LIMIT 1")}
        before = self.database.query(SNAPSHOT_SQL)
        for method, path, body in RESOURCES[resource]:
            path = path.format(**names)
            for token in ("outsider", "outsider_org"):
                with self.subTest(method=method, path=path, token=token):
                    response = self.call(method, path, token, body=body)
                    self.assertEqual(response.status, 404, response)
        self.assertEqual(self.database.query(SNAPSHOT_SQL), before, "an outsider changed data")


def make_test(resource):
    return lambda self: self.check(resource)


for _resource in RESOURCES:
    setattr(IsolationTest, f"test_{_resource}_of_another_organization", make_test(_resource))


class OwnThingsTest(AccountTestCase):
    """Tokens and notifications belong to their user: another user's are 404."""

    def test_tokens_of_another_user(self):
        made = self.ok(self.call("POST", "/me/tokens", body={"name": "mine", "full": True}))
        self.problem(self.call("DELETE", f"/me/tokens/{made['id']}", "outsider"), 404)
        ids = [t["id"] for t in self.ok(self.call("GET", "/me/tokens", "outsider"))["tokens"]]
        self.assertNotIn(made["id"], ids)
        self.ok(self.call("GET", "/me", made["token"]))

    def test_notifications_of_another_user(self):
        self.ack(self.call("POST", "/orgs/acme/members", body={"login": "bob@example.com"}))
        note = self.ok(self.call("GET", "/notifications", "outsider"))["notifications"][0]
        self.problem(self.call("POST", f"/notifications/{note['id']}/read", "owner"), 404)
        self.assertEqual(self.ok(self.call("GET", "/notifications", "owner"))["notifications"],
                         [])
        self.ack(self.call("DELETE", f"/orgs/acme/members/{self.outsider.user_id}"))
