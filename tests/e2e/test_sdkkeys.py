"""test_sdkkeys.py - end-to-end tests of /v1/orgs/{org}/sdk-keys: creation
(the plaintext once, stored as its SHA-256 digest only), the masked list,
revocation (idempotent), validation at its limits, the admin-only rule,
and isolation between organizations.

Run by tests/e2e/run (each class has its own database and ensignd).
"""

import hashlib
import re
import unittest

from test_members import OrgTestCase

KEY_FIELDS = {"id", "name", "environmentKey", "prefix", "lastFour", "masked", "lastUsedAt",
              "revokedAt", "createdAt"}


class SdkKeysTest(OrgTestCase):

    def create(self, body, token="admin", org="acme"):
        return self.call("POST", f"/{org}/sdk-keys", token, body=body)

    def created(self, name="server", environment="production", token="admin", org="acme"):
        return self.assertStatus(self.create({"name": name, "environment": environment}, token,
                                             org), 201)["key"]

    def listed(self, token="admin", org="acme"):
        body = self.assertStatus(self.call("GET", f"/{org}/sdk-keys", token), 200)
        self.assertEqual(set(body), {"keys"})
        return body["keys"]

    def revoke(self, key_id, token="admin", org="acme"):
        return self.call("POST", f"/{org}/sdk-keys/{key_id}/revoke", token)

    # ---- creation and the secret ----

    def test_create_shows_the_token_once(self):
        key = self.created("web frontend", "preview")
        self.assertEqual(set(key), KEY_FIELDS | {"token"})
        token = key["token"]
        self.assertRegex(token, r"^svc_sdk_[0-9A-Za-z]{43}$")
        self.assertEqual(key["name"], "web frontend")
        self.assertEqual(key["environmentKey"], "preview")
        self.assertEqual(key["prefix"], token[:12])
        self.assertEqual(key["lastFour"], token[-4:])
        self.assertEqual(key["masked"], f"{token[:12]}\u2026{token[-4:]}")
        self.assertIsNone(key["lastUsedAt"])
        self.assertIsNone(key["revokedAt"])
        self.assertIsoMillis(key["createdAt"])

        listed = {k["id"]: k for k in self.listed()}
        expected = {k: v for k, v in key.items() if k != "token"}
        self.assertEqual(listed[key["id"]], expected)

    def test_only_the_digest_is_stored(self):
        key = self.created("stored")
        token = key["token"]
        digest = self.database.query(
            f"SELECT token_digest FROM sdk_keys WHERE id = '{key['id']}'")
        self.assertEqual(digest, hashlib.sha256(token.encode()).hexdigest())
        row = self.database.query(f"SELECT row_to_json(k) FROM sdk_keys k WHERE id = '{key['id']}'")
        self.assertNotIn(token, row)
        self.assertNotIn(token[12:-4], row)
        self.assertNotIn(token, self.server.stderr())

    def test_every_key_is_different(self):
        tokens = {self.created(f"k{i}")["token"] for i in range(5)}
        self.assertEqual(len(tokens), 5)

    def test_every_default_environment(self):
        for environment in ("production", "preview", "development"):
            with self.subTest(environment=environment):
                self.assertEqual(self.created(environment=environment)["environmentKey"],
                                 environment)

    def test_unknown_environment_is_404(self):
        for environment in ("staging", "Production", "x" * 64, "x" * 5000):
            with self.subTest(environment=environment[:20]):
                self.assertV1Error(self.create({"name": "n", "environment": environment}), 404)

    def test_list_is_masked_and_oldest_first(self):
        first = self.created("list-first")
        second = self.created("list-second")
        keys = self.listed()
        ids = [k["id"] for k in keys]
        self.assertLess(ids.index(first["id"]), ids.index(second["id"]))
        for key in keys:
            self.assertEqual(set(key), KEY_FIELDS)
            self.assertRegex(key["masked"], r"^svc_sdk_[0-9A-Za-z]{4}\u2026[0-9A-Za-z]{4}$")

    # ---- revocation ----

    def test_revoke_is_idempotent(self):
        key = self.created("to revoke")
        self.assertAck(self.revoke(key["id"]))
        revoked = {k["id"]: k for k in self.listed()}[key["id"]]
        self.assertIsoMillis(revoked["revokedAt"])
        self.assertAck(self.revoke(key["id"]))
        again = {k["id"]: k for k in self.listed()}[key["id"]]
        self.assertEqual(again["revokedAt"], revoked["revokedAt"])

    def test_revoke_unknown_key_is_404(self):
        self.assertV1Error(self.revoke("00000000-0000-4000-8000-000000000000"), 404)
        self.assertV1Error(self.revoke("not-a-uuid"), 404)
        self.assertV1Error(self.revoke("0" * 300), 404)

    # ---- validation ----

    def test_name_limits(self):
        self.assertEqual(self.created("n" * 120)["name"], "n" * 120)
        self.assertInvalid(self.create({"name": "n" * 121, "environment": "production"}), "name")
        self.assertInvalid(self.create({"name": "", "environment": "production"}), "name")

    def test_required_and_unknown_fields(self):
        self.assertInvalid(self.create({}), "name", "environment")
        self.assertInvalid(self.create({"name": "x"}), "environment")
        self.assertInvalid(self.create({"environment": "production"}), "name")
        self.assertInvalid(self.create({"name": "x", "environment": ""}), "environment")
        self.assertInvalid(self.create({"name": "x", "environment": 3}), "environment")
        self.assertInvalid(self.create({"name": "x", "environment": "production",
                                        "environmentKey": "production"}), "environmentKey")
        self.assertInvalid(self.create([]))

    def test_bad_json_is_400(self):
        self.assertV1Error(self.call("POST", "/acme/sdk-keys", "admin", raw=b'{"name": "x",'),
                           400)

    # ---- authorization and isolation ----

    def test_only_admins_manage_keys(self):
        key = self.created("for roles")
        for token in ("owner", "admin", "org"):
            with self.subTest(token=token):
                self.assertEqual(self.created(f"by {token}", token=token)["name"],
                                 f"by {token}")
                self.listed(token)
        self.assertAck(self.revoke(key["id"], token="org"))
        for token in ("member", "viewer"):
            with self.subTest(token=token):
                self.assertV1Error(self.create({"name": "x", "environment": "production"},
                                               token), 403)
                self.assertV1Error(self.call("GET", "/acme/sdk-keys", token), 403)
                self.assertV1Error(self.revoke(key["id"], token), 403)
        self.assertV1Error(self.create({"name": "x", "environment": "production"}, "readonly"),
                           403)
        self.assertV1Error(self.revoke(key["id"], "readonly"), 403)
        self.listed("readonly")
        self.assertV1Error(self.call("GET", "/acme/sdk-keys", None), 401)

    def test_an_sdk_key_is_not_an_access_token(self):
        token = self.created("not for v1")["token"]
        self.assertV1Error(self.call("GET", "/acme/sdk-keys", token), 401)

    def test_other_organizations_are_isolated(self):
        ours = self.created("ours")
        theirs = self.created("theirs", token="outsider", org="globex")
        self.assertEqual([k["name"] for k in self.listed("outsider", "globex")], ["theirs"])
        self.assertNotIn(theirs["id"], [k["id"] for k in self.listed()])
        self.assertV1Error(self.revoke(theirs["id"]), 404)
        self.assertV1Error(self.revoke(ours["id"], "outsider", "globex"), 404)
        for token in ("outsider", "outsider_org"):
            with self.subTest(token=token):
                self.assertV1Error(self.call("GET", "/acme/sdk-keys", token), 404)
                self.assertV1Error(self.revoke(ours["id"], token), 404)
                self.assertV1Error(self.create({"name": "x", "environment": "production"},
                                               token), 404)
        self.assertIsNone({k["id"]: k for k in self.listed()}[ours["id"]]["revokedAt"])
        self.assertIsNone({k["id"]: k for k in self.listed("outsider", "globex")}
                          [theirs["id"]]["revokedAt"])
        self.assertTrue(re.match(r"^svc_sdk_", theirs["token"]))


if __name__ == "__main__":
    unittest.main()
