"""test_accounts_tokens.py - personal access tokens, scopes, expiry and
revocation; browser sessions; internal operations (doc/api.md
"Credentials", "Roles and scopes").

Run by tests/e2e/run (each class has its own database and ensignd).
"""

import datetime

import harness
from accountfixture import AccountTestCase


def iso(delta):
    moment = datetime.datetime.now(datetime.timezone.utc) + delta
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class TokensTest(AccountTestCase):

    def create(self, body, token="member"):
        return self.call("POST", "/me/tokens", token, body=body)

    def test_create_list_revoke(self):
        made = self.ok(self.create({"name": "ci", "full": True, "expires_in_days": 0}))
        self.assertEqual(set(made), {"id", "prefix", "token"})
        self.assertTrue(made["token"].startswith(made["prefix"]))
        listed = self.ok(self.call("GET", "/me/tokens?q=CI", "member"))["tokens"]
        self.assertEqual([t["id"] for t in listed], [made["id"]])
        item = listed[0]
        self.assertEqual(set(item), {"id", "name", "prefix", "scopes", "full", "expires_at",
                                     "last_used_at", "created_at"})
        self.assertIsNone(item["expires_at"])
        self.assertNotIn(made["token"], str(listed))
        self.ok(self.call("GET", "/me", made["token"]))
        self.problem(self.call("DELETE", f"/me/tokens/{made['id']}", "owner"), 404)
        self.ack(self.call("DELETE", f"/me/tokens/{made['id']}", "member"))
        self.problem(self.call("GET", "/me", made["token"]), 401)
        self.problem(self.call("DELETE", f"/me/tokens/{made['id']}", "member"), 404)
        self.problem(self.call("DELETE", "/me/tokens/nope", "member"), 404)

    def test_expiry(self):
        later = iso(datetime.timedelta(days=2))
        made = self.ok(self.create({"name": "a", "full": True, "expires_at": later,
                                    "expires_in_days": 400}))
        listed = {t["id"]: t for t in self.ok(self.call("GET", "/me/tokens", "member"))["tokens"]}
        self.assertTrue(listed[made["id"]]["expires_at"].startswith(later[:10]))
        made = self.ok(self.create({"name": "b", "full": True, "expires_in_days": 3}))
        listed = {t["id"]: t for t in self.ok(self.call("GET", "/me/tokens", "member"))["tokens"]}
        self.assertTrue(listed[made["id"]]["expires_at"].startswith(
            iso(datetime.timedelta(days=3))[:10]))
        self.problem(self.create({"name": "c", "full": True,
                                  "expires_at": iso(-datetime.timedelta(minutes=1))}), 422,
                     "expires_at")
        self.problem(self.create({"name": "c", "full": True, "expires_in_days": -1}), 422,
                     "expires_in_days")
        self.database.query("UPDATE access_tokens SET expires_at = now() - interval '1 second'"
                            f" WHERE id = '{made['id']}'")
        self.problem(self.call("GET", "/me", made["token"]), 401)

    def test_validation(self):
        self.problem(self.create({"full": True}), 422, "name")
        self.problem(self.create({"name": "x"}), 422, "scopes")
        self.problem(self.create({"name": "x", "scopes": {"flags": "admin"}}), 422)
        self.problem(self.create({"name": "x", "scopes": {"nope": "read"}}), 422)
        self.problem(self.create({"name": "x", "scopes": []}), 422, "scopes")
        self.problem(self.create({"name": "x", "full": True}, "org"), 403)
        self.problem(self.create({"name": "x", "full": True}, None), 401)

    def test_scopes_are_enforced_and_never_grow(self):
        scoped = self.scoped_token({"projects": "write", "members": "read"}, "admin")
        self.ok(self.call("GET", "/orgs/acme/members", scoped))
        self.ok(self.call("POST", "/orgs/acme/projects", scoped, body={"name": "Scoped"}))
        self.problem(self.call("POST", "/orgs/acme/members", scoped,
                               body={"login": "bob@example.com"}), 403)
        self.problem(self.call("GET", "/me/tokens", scoped), 403)
        self.problem(self.call("GET", "/orgs", scoped), 403)
        self.assertEqual(self.call("GET", "/v1/orgs/acme/flags", scoped).status, 403)
        tokens_writer = self.scoped_token({"tokens": "write"}, "admin")
        self.problem(self.create({"name": "more", "full": True}, tokens_writer), 403)
        self.problem(self.create({"name": "more", "scopes": {"orgs": "read"}}, tokens_writer),
                     403)
        self.ok(self.create({"name": "same", "scopes": {"tokens": "read"}}, tokens_writer))
        # A token never grants more than its user's role.
        viewer_full = self.scoped_token({"projects": "write"}, "viewer")
        self.problem(self.call("POST", "/orgs/acme/projects", viewer_full,
                               body={"name": "Nope"}), 403)


class PasswordUserCase(AccountTestCase):
    """The fixture plus Sam, who has a password."""

    @classmethod
    def prepare(cls):
        super().prepare()
        harness.ensignctl(cls.server.config_path, "user", "create", "--email",
                          "sam@example.com", "--name", "Sam", "--password-stdin",
                          stdin="correct horse battery\n")

    def login(self, email, password):
        return self.server.request("POST", "/v1/session",
                                   body={"email": email, "password": password})


class SessionsTest(PasswordUserCase):
    settings = {"ratelimit_login": 5}

    def test_login_cookie_me_and_logout(self):
        response = self.login("SAM@example.com", "correct horse battery")
        body = self.ok(response)
        self.assertEqual(body["user"]["email"], "sam@example.com")
        cookie = response.headers["Set-Cookie"]
        self.assertRegex(cookie, r"^ensign_session=svc_ses_\w{43}; Path=/; HttpOnly; "
                                 r"SameSite=Lax")
        value = cookie.split(";")[0]
        me = self.server.request("GET", "/v1/me", headers={"Cookie": value})
        self.assertEqual(me.status, 200, me)
        self.assertEqual((me.json["via"], me.json["user"]["email"]), ("cookie", "sam@example.com"))
        root = self.server.request("GET", "/me", headers={"Cookie": "a=b; " + value})
        self.assertEqual(root.json["user"]["email"], "sam@example.com")
        # the cookie authenticates the unprefixed routes too (doc/api.md "Credentials")
        orgs = self.server.request("GET", "/orgs", headers={"Cookie": value})
        self.assertEqual(orgs.status, 200, orgs)
        digest_count = self.database.query("SELECT count(*) FROM sessions"
                                           f" WHERE cookie_digest = '{value[15:]}'")
        self.assertEqual(digest_count, "0")
        out = self.server.request("DELETE", "/v1/session", headers={"Cookie": value})
        self.assertEqual(out.status, 200, out)
        self.assertIn("Max-Age=0", out.headers["Set-Cookie"])
        again = self.server.request("GET", "/v1/me", headers={"Cookie": value})
        self.assertEqual(again.status, 401, again)

    def test_wrong_password_and_unknown_email_look_the_same(self):
        wrong = self.login("sam@example.com", "wrong password")
        unknown = self.login("nobody@example.com", "wrong password")
        self.assertEqual(wrong.status, 401)
        self.assertEqual(unknown.status, 401)
        self.assertEqual(wrong.json, unknown.json)
        self.assertEqual(self.server.request("POST", "/v1/session", body={"email": "x"}).status,
                         422)

    def test_expired_session(self):
        response = self.login("sam@example.com", "correct horse battery")
        value = response.headers["Set-Cookie"].split(";")[0]
        self.database.query("UPDATE sessions SET expires_at = now() - interval '1 second'")
        self.assertEqual(self.server.request("GET", "/v1/me", headers={"Cookie": value}).status,
                         401)

    def test_zz_login_attempts_are_rate_limited(self):
        statuses = [self.login("sam@example.com", "bad guess").status for _ in range(8)]
        self.assertIn(429, statuses)
        limited = self.login("sam@example.com", "correct horse battery")
        self.assertEqual(limited.status, 429)
        self.assertIn("Retry-After", limited.headers)


class SecureCookieTest(PasswordUserCase):
    settings = {"session_cookie_secure": 1}

    def test_secure_when_configured(self):
        response = self.login("sam@example.com", "correct horse battery")
        self.assertEqual(response.status, 200, response)
        self.assertTrue(response.headers["Set-Cookie"].endswith("; Secure"),
                        response.headers["Set-Cookie"])


class InternalOperationsTest(AccountTestCase):

    @classmethod
    def prepare(cls):
        super().prepare()
        cls.key = harness.ensignctl(cls.server.config_path, "internal-key", "create", "--name",
                                    "dashboard")

    def internal(self, method, path, token, body=None, key=True):
        headers = {"Ensign-Internal-Key": self.key} if key is True else (
            {"Ensign-Internal-Key": key} if key else {})
        return self.call(method, path, token, body=body, headers=headers)

    def test_key_is_stored_as_digest(self):
        self.assertTrue(self.key.startswith("svc_int_"))
        stored = self.database.query("SELECT key_digest FROM internal_keys")
        self.assertNotIn(self.key, stored)
        self.assertEqual(len(stored.split()[0]), 64)

    def test_check_order_token_key_target(self):
        self.problem(self.internal("POST", "/internal/sso/provision-member", None,
                                   {"org_id": "nope"}, key=False), 401)
        self.problem(self.internal("POST", "/internal/sso/provision-member", "svc_oat_bad",
                                   {"org_id": "nope"}), 401)
        self.problem(self.internal("POST", "/internal/sso/provision-member", "outsider",
                                   {"org_id": "nope"}, key=False), 403)
        self.problem(self.internal("POST", "/internal/sso/provision-member", "outsider",
                                   {"org_id": "nope"}, key="svc_int_wrong"), 403)
        self.problem(self.internal("POST", "/internal/sso/provision-member", "outsider",
                                   {"org_id": "nope"}), 404)

    def test_provision_member(self):
        user_id, token = self.new_user("sso@example.com", "Sso User")
        self.ack(self.internal("POST", "/internal/sso/provision-member", token,
                               {"org_id": "acme", "role": "viewer"}))
        members = self.ok(self.call("GET", "/orgs/acme/members?q=sso"))["members"]
        self.assertEqual([(m["user_id"], m["role"]) for m in members], [(user_id, "viewer")])
        org_id = self.database.query("SELECT id FROM orgs WHERE slug = 'globex'")
        self.ack(self.internal("POST", "/internal/sso/provision-member", token,
                               {"org_id": org_id}))
        self.problem(self.internal("POST", "/internal/sso/provision-member", token,
                                   {"org_id": "acme", "role": "boss"}), 422, "role")

    def test_deleted_and_restored(self):
        user_id, token = self.new_user("del@example.com", "Del", "member")
        self.ack(self.internal("PUT", "/me/deleted", token, {"deleted": True}))
        self.problem(self.call("GET", "/me", token), 401)
        self.problem(self.call("GET", "/orgs/acme/projects", token), 401)
        self.problem(self.internal("PUT", "/me/deleted", token, {"deleted": False}, key=False),
                     403)
        self.ack(self.internal("PUT", "/me/deleted", token, {"deleted": False}))
        self.ok(self.call("GET", "/me", token))
        self.problem(self.internal("PUT", "/me/deleted", token, {"deleted": "yes"}), 422,
                     "deleted")

    def test_profile(self):
        user_id, token = self.new_user("prof@example.com", "Prof")
        self.ack(self.internal("PUT", "/me/profile", token,
                               {"name": "Professor", "username": "prof", "bio": "Hi",
                                "socialLinks": {"x": "@prof"}}))
        row = self.database.query("SELECT name || '|' || username || '|' || bio || '|' ||"
                                  f" social_links::text FROM users WHERE id = '{user_id}'")
        self.assertEqual(row, 'Professor|prof|Hi|{"x": "@prof"}')
        self.ack(self.internal("PUT", "/me/profile", token, {"bio": None}))
        self.assertEqual(self.database.query(
            f"SELECT bio IS NULL FROM users WHERE id = '{user_id}'"), "t")
        self.problem(self.internal("PUT", "/me/profile", "member", {"username": "PROF"}), 409)
        self.problem(self.internal("PUT", "/me/profile", token, {"username": "bad name"}), 422)
        self.problem(self.internal("PUT", "/me/profile", token, {"socialLinks": []}), 422,
                     "socialLinks")
        self.problem(self.internal("PUT", "/me/profile", token, {"name": None}), 422, "name")
