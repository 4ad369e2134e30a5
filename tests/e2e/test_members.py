"""test_members.py - end-to-end tests of GET /v1/orgs/{org}/members, and
OrgTestCase, the organization fixture the tests of segments, entities and
SDK keys share.

OrgTestCase prepares the organization acme (owner Alice, harness.Identity)
with one user per other role (admin, member, viewer), a personal token for
each, Alice's read-only token (no --full: reads everything, writes
nothing) and acme's organization token; and a second organization, globex,
owned by Bob, whose tokens must never see acme's data (404). Memberships
are written straight into org_members: the invitation flow is not what is
under test here.

Run by tests/e2e/run (each class has its own database and ensignd).
"""

import json
import unittest

import harness

ROLE_USERS = (
    ("admin", "adele@example.com", "Adele Admin"),
    ("member", "mel@example.com", "Mel Member"),
    ("viewer", "vic@example.com", "Vic Viewer"),
)


def add_member(database, org_slug, email, role):
    """Makes the existing user email a member of org_slug with role (fixed
    test values only: this is SQL text)."""
    database.query("INSERT INTO org_members (org_id, user_id, role)"
                   f" SELECT o.id, u.id, '{role}' FROM orgs o, users u"
                   f" WHERE o.slug = '{org_slug}' AND u.email = '{email}'")


class OrgTestCase(harness.ServerTestCase):
    """acme with a token per role, and the outsider organization globex.

    self.tokens: owner, admin, member, viewer, readonly (Alice without
    --full), org (acme's organization token), outsider (Bob, globex owner),
    outsider_org (globex's organization token)."""

    @classmethod
    def prepare(cls):
        super().prepare()
        config = cls.server.config_path
        cls.tokens = {"owner": cls.identity.user_token, "org": cls.identity.org_token}
        cls.user_ids = {"owner": cls.identity.user_id}
        for role, email, name in ROLE_USERS:
            cls.user_ids[role] = harness.ensignctl(config, "user", "create", "--email", email,
                                                   "--name", name)
            add_member(cls.database, "acme", email, role)
            cls.tokens[role] = harness.ensignctl(config, "token", "create", "--user", email,
                                                 "--name", f"{role} token", "--full")
        cls.tokens["readonly"] = harness.ensignctl(config, "token", "create", "--user",
                                                   "alice@example.com", "--name", "read only")
        cls.outsider = harness.Identity(config, "bob@example.com", "Bob Outsider", "Globex",
                                        "globex")
        cls.tokens["outsider"] = cls.outsider.user_token
        cls.tokens["outsider_org"] = cls.outsider.org_token

    def call(self, method, path, token="owner", body=None, raw=None):
        """method path under /v1/orgs; token is a self.tokens name, a literal
        token, or None; body a dict/list sent as JSON, raw bytes as they are."""
        headers = {}
        secret = self.tokens.get(token, token) if token is not None else None
        if secret is not None:
            headers["Authorization"] = f"Bearer {secret}"
        if raw is not None:
            headers["Content-Type"] = "application/json"
            body = raw
        return self.server.request(method, "/v1/orgs" + path, body=body, headers=headers)

    def assertStatus(self, response, status):
        self.assertEqual(response.status, status, response)
        self.assertJsonContentType(response)
        return response.json

    def assertInvalid(self, response, *fields):
        """A 422 envelope whose errors name each of fields."""
        body = self.assertStatus(response, 422)
        self.assertEqual(set(body) - {"errors"}, {"message", "status"}, body)
        self.assertEqual(body["status"], 422)
        errors = body.get("errors", {})
        for field in fields:
            self.assertIn(field, errors, body)
            self.assertTrue(all(isinstance(m, str) for m in errors[field]), body)
        return errors

    def assertAck(self, response):
        self.assertEqual(self.assertStatus(response, 200), {"ok": True})

    def assertIsoMillis(self, value):
        self.assertRegex(value, r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


class MembersListTest(OrgTestCase):

    @classmethod
    def prepare(cls):
        super().prepare()
        config = cls.server.config_path
        harness.ensignctl(config, "user", "create", "--email", "gone@example.com", "--name",
                          "Gone User", "--username", "gone-user")
        add_member(cls.database, "acme", "gone@example.com", "member")
        cls.database.query("UPDATE users SET deleted = true WHERE email = 'gone@example.com'")

    def test_every_role_reads_the_list(self):
        for role in ("owner", "admin", "member", "viewer", "readonly", "org"):
            with self.subTest(role=role):
                body = self.assertStatus(self.call("GET", "/acme/members", role), 200)
                self.assertEqual(set(body), {"members"})
                self.assertEqual(len(body["members"]), 4, body)

    def test_items_carry_user_and_role(self):
        members = self.assertStatus(self.call("GET", "/acme/members", "viewer"), 200)["members"]
        for item in members:
            self.assertEqual(set(item), {"userId", "name", "email", "username", "role"}, item)
        by_email = {m["email"]: m for m in members}
        self.assertEqual(set(by_email), {"alice@example.com", "adele@example.com",
                                         "mel@example.com", "vic@example.com"})
        alice = by_email["alice@example.com"]
        self.assertEqual(alice, {"userId": self.identity.user_id, "name": "Alice Example",
                                 "email": "alice@example.com", "username": None,
                                 "role": "owner"})
        for role, email, name in ROLE_USERS:
            self.assertEqual(by_email[email]["role"], role)
            self.assertEqual(by_email[email]["name"], name)
            self.assertEqual(by_email[email]["userId"], self.user_ids[role])

    def test_deleted_users_are_left_out(self):
        members = self.assertStatus(self.call("GET", "/acme/members"), 200)["members"]
        self.assertNotIn("gone@example.com", [m["email"] for m in members])

    def test_other_organization_is_isolated(self):
        self.assertV1Error(self.call("GET", "/acme/members", "outsider"), 404)
        self.assertV1Error(self.call("GET", "/acme/members", "outsider_org"), 404)
        members = self.assertStatus(self.call("GET", "/globex/members", "outsider"),
                                    200)["members"]
        self.assertEqual([m["email"] for m in members], ["bob@example.com"])
        self.assertV1Error(self.call("GET", "/globex/members", "viewer"), 404)

    def test_unknown_organization_is_404(self):
        self.assertV1Error(self.call("GET", "/no-such-org/members"), 404)

    def test_missing_or_bad_token_is_401(self):
        self.assertV1Error(self.call("GET", "/acme/members", None), 401)
        self.assertV1Error(self.call("GET", "/acme/members", "svc_oat_" + "x" * 43), 401)

    def test_wrong_method_is_405(self):
        response = self.call("POST", "/acme/members", body={})
        self.assertV1Error(response, 405)

    def test_openapi_documents_the_route(self):
        document = json.loads(self.server.get("/openapi.json").body)
        operation = document["paths"]["/v1/orgs/{org}/members"]["get"]
        schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
        self.assertEqual(schema["required"], ["members"])


if __name__ == "__main__":
    unittest.main()
