"""test_dispatch.py - an operation is one row, and the dispatcher enforces it
(one row per operation): the route table's credential, role and scope are checked before
the operation runs, and /openapi.json says what is enforced; the dashboard's
session cookie authenticates in that one place, with the Origin check for
unsafe methods (doc/api.md "Credentials").

Run by tests/e2e/run (each class has its own database and ensignd).
"""

import harness
from test_members import OrgTestCase, add_member

PASSWORD = "correct horse battery"
HTTP_METHODS = ("get", "post", "put", "patch", "delete")


def operations(document):
    """(method, path, operation) of every documented operation."""
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method in HTTP_METHODS:
                yield method.upper(), path, operation


def wrong_value(member):
    """A value of a type the member's schema refuses (check_routes picks the same)."""
    types = member.get("type")
    if types is None:
        return None if "not" in member else 7
    types = [types] if isinstance(types, str) else types
    if "array" not in types:
        return []
    return "text" if "object" in types else {}


def schemes(operation):
    return {name for requirement in operation.get("security", []) for name in requirement}


class DispatchTest(OrgTestCase):

    @classmethod
    def prepare(cls):
        super().prepare()
        config = cls.server.config_path
        harness.ensignctl(config, "user", "create", "--email", "dana@example.com", "--name",
                          "Dana", "--password-stdin", stdin=PASSWORD + "\n")
        add_member(cls.database, "acme", "dana@example.com", "member")

    @property
    def document(self):
        response = self.server.request("GET", "/openapi.json")
        self.assertEqual(response.status, 200, response)
        return response.json

    # ---- helpers ----

    def login(self):
        response = self.server.request("POST", "/v1/session",
                                       body={"email": "dana@example.com", "password": PASSWORD})
        self.assertEqual(response.status, 200, response)
        return response.headers["Set-Cookie"].split(";")[0]

    def own_origin(self):
        return f"http://127.0.0.1:{self.server.port}"

    def concrete(self, path):
        """A documented path with acme and made-up keys for its parameters."""
        values = {"org": "acme", "slug": "acme"}
        out = []
        for segment in path.split("/"):
            if segment.startswith("{") and segment.endswith("}"):
                segment = values.get(segment[1:-1], "no-such-thing")
            out.append(segment)
        return "/".join(out)

    def assertRefused(self, response, field, method, path):
        """A 422 (either document's envelope) whose errors name field."""
        self.assertEqual(response.status, 422, (method, path, field, response))
        self.assertIn(field, response.json.get("errors", {}), (method, path, response.json))

    def send(self, method, path, token=None, body=None, headers=None):
        sent = dict(headers or {})
        if token is not None:
            sent["Authorization"] = f"Bearer {self.tokens.get(token, token)}"
        return self.server.request(method, path, body=body, headers=sent)

    # ---- the row, as /openapi.json tells it, is what is enforced ----

    def test_no_credential_is_401_wherever_the_row_wants_one(self):
        checked = 0
        for method, path, operation in operations(self.document):
            names = schemes(operation)
            if "accessToken" not in names:
                continue
            response = self.send(method, self.concrete(path), body={} if method != "GET" else None)
            self.assertEqual(response.status, 401, (method, path, response))
            checked += 1
        self.assertGreater(checked, 60)

    def test_a_viewer_is_refused_every_org_write_before_the_operation(self):
        """Every documented write under /v1/orgs/{org} or /orgs/{slug} that a
        member or above may do: a viewer gets 403, and nothing is written."""
        before = self.database.query("SELECT count(*) FROM audit_events")
        checked = 0
        for method, path, operation in operations(self.document):
            if method == "GET" or not (path.startswith("/v1/orgs/{org}")
                                       or path.startswith("/orgs/{slug}")):
                continue
            if path == "/orgs/{slug}/leave":
                continue  # any member may leave (viewer included)
            if path == "/v1/orgs/{org}/environments/{envKey}/evaluate":
                self.assertEqual(operation.get("x-ensign-role"), "viewer")
                continue  # a read sent as POST (it carries a context), written nowhere
            response = self.send(method, self.concrete(path), "viewer", body={"bad": True})
            self.assertEqual(response.status, 403, (method, path, response))
            checked += 1
        self.assertGreater(checked, 25)
        self.assertEqual(self.database.query("SELECT count(*) FROM audit_events"), before)

    def test_a_bad_body_is_422_for_an_allowed_caller(self):
        response = self.send("POST", "/v1/orgs/acme/segments", "member", body={"key": 5})
        self.assertInvalid(response, "key")
        response = self.send("POST", "/orgs/acme/members", "admin", body={"login": 5})
        self.assertEqual(response.status, 422, response)
        self.assertIn("login", response.json.get("errors", {}), response.json)

    def test_every_rows_request_schema_is_enforced_by_the_dispatcher(self):
        """Every documented operation with a request body (organization,
        account, any-token and identity rows: the agent's and the password
        change's too): the schema /openapi.json shows refuses, with a 422
        from the dispatcher naming the member, an unknown member and each
        declared member given a value of the wrong type; nothing is written."""
        before = self.database.query("SELECT count(*) FROM audit_events")
        checked = 0
        for method, path, operation in operations(self.document):
            if "requestBody" not in operation or operation.get("x-ensign-caller") not in (
                    "organization", "account", "any", "identity"):
                continue  # internal rows also want the Ensign-Internal-Key
            schema = operation["requestBody"]["content"]["application/json"]["schema"]
            target = self.concrete(path)
            response = self.send(method, target, "owner", body={"zz-not-a-member": 1})
            self.assertRefused(response, "zz-not-a-member", method, path)
            for name, member in schema["properties"].items():
                response = self.send(method, target, "owner", body={name: wrong_value(member)})
                self.assertRefused(response, name, method, path)
            checked += 1
        self.assertGreater(checked, 25)
        self.assertEqual(self.database.query("SELECT count(*) FROM audit_events"), before)

    def test_the_body_is_parsed_after_the_checks_and_before_the_operation(self):
        """A row with a request schema: the dispatcher parses the body once
        the caller may do the operation: 403 first, then 400/422."""
        raw = {"Content-Type": "application/json"}
        for path in ("/v1/orgs/acme/flags", "/orgs/acme/members", "/orgs/acme/projects"):
            viewer = self.send("POST", path, "viewer", body=b"[1]", headers=raw)
            self.assertEqual(viewer.status, 403, (path, viewer))
            not_object = self.send("POST", path, "owner", body=b"[1]", headers=raw)
            self.assertEqual(not_object.status, 422, (path, not_object))
            broken = self.send("POST", path, "owner", body=b"{", headers=raw)
            self.assertEqual(broken.status, 400, (path, broken))

    def test_order_401_before_404_before_403(self):
        self.assertEqual(self.send("GET", "/v1/orgs/nope/flags").status, 401)
        self.assertEqual(self.send("POST", "/v1/orgs/globex/flags", "viewer", body={}).status,
                         404)
        self.assertEqual(self.send("POST", "/v1/orgs/acme/flags", "viewer", body={}).status, 403)

    def test_dispatched_rows_take_the_cookie_in_openapi(self):
        for method, path, operation in operations(self.document):
            if path.startswith("/v1/orgs/{org}") or path.startswith("/orgs/{slug}"):
                self.assertEqual(schemes(operation), {"accessToken", "sessionCookie"},
                                 (method, path))
            if path.startswith("/ofrep/v1/evaluate"):
                self.assertNotIn("sessionCookie", schemes(operation), path)

    def test_openapi_names_each_operations_role_and_scope_and_they_hold(self):
        """Every organization operation documents x-ensign-role and
        x-ensign-scope; a viewer is refused (403) every one that needs more
        than viewer, reads included, and a read needs a :read scope."""
        roles = ("viewer", "member", "admin", "owner")
        checked = 0
        for method, path, operation in operations(self.document):
            if not (path.startswith("/v1/orgs/{org}") or path.startswith("/orgs/{slug}")):
                self.assertNotIn("x-ensign-role", operation, (method, path))
                continue
            role, scope = operation.get("x-ensign-role"), operation.get("x-ensign-scope", "")
            self.assertIn(role, roles, (method, path))
            name, _, level = scope.partition(":")
            self.assertTrue(name, (method, path, scope))
            self.assertEqual(level, "read" if method == "GET" else level, (method, path, scope))
            self.assertIn(level, ("read", "write"), (method, path, scope))
            if role != "viewer":
                response = self.send(method, self.concrete(path), "viewer",
                                     body={"bad": True} if method != "GET" else None)
                self.assertEqual(response.status, 403, (method, path, response))
                checked += 1
        self.assertGreater(checked, 25)

    def test_an_organization_token_is_refused_every_account_operation(self):
        """Operations on the caller's own account (x-ensign-caller "account")
        refuse an organization token (403, before the body); "any" ones take it."""
        callers = {}
        for method, path, operation in operations(self.document):
            caller = operation.get("x-ensign-caller")
            callers.setdefault(caller, 0)
            callers[caller] += 1
            if caller == "identity" and method == "GET":
                self.assertNotIn("x-ensign-scope", operation, (method, path))
                response = self.send(method, path, "org")
                self.assertEqual(response.status, 200, (method, path, response))
            if caller == "identity" and method != "GET":  # the password change: no password
                self.assertNotIn("x-ensign-scope", operation, (method, path))
                response = self.send(method, path, "org",
                                     body={"current": "x" * 8, "new": "y" * 8})
                self.assertEqual(response.status, 403, (method, path, response))
            if caller == "internal":
                self.assertNotIn("x-ensign-scope", operation, (method, path))
                self.assertEqual(schemes(operation), {"accessToken"}, (method, path))
            if caller not in ("account", "any"):
                continue
            self.assertNotIn("x-ensign-role", operation, (method, path))
            response = self.send(method, self.concrete(path), "org",
                                 body={"bad": True} if method != "GET" else None)
            if caller == "account":
                self.assertEqual(response.status, 403, (method, path, response))
            else:
                self.assertNotIn(response.status, (401, 403), (method, path, response))
        self.assertGreaterEqual(callers.get("account", 0), 8, callers)
        self.assertGreaterEqual(callers.get("any", 0), 3, callers)  # GET /orgs, the agent's two
        self.assertEqual(callers.get("internal", 0), 4, callers)
        # /v1/me, /me, PUT /v1/session/password
        self.assertEqual(callers.get("identity", 0), 3, callers)
        self.assertGreater(callers.get("organization", 0), 40, callers)

    # ---- the session cookie ----

    def test_cookie_reads_v1_and_unprefixed(self):
        cookie = self.login()
        flags = self.send("GET", "/v1/orgs/acme/flags", headers={"Cookie": cookie})
        self.assertEqual(flags.status, 200, flags)
        members = self.send("GET", "/orgs/acme/members", headers={"Cookie": cookie})
        self.assertEqual(members.status, 200, members)
        self.assertIn("dana@example.com", [m["email"] for m in members.json["members"]])
        outside = self.send("GET", "/v1/orgs/globex/flags", headers={"Cookie": cookie})
        self.assertEqual(outside.status, 404, outside)
        bad = self.send("GET", "/v1/orgs/acme/flags",
                        headers={"Cookie": "ensign_session=svc_ses_" + "A" * 43})
        self.assertEqual(bad.status, 401, bad)

    def test_cookie_write_needs_the_own_origin(self):
        cookie = self.login()
        body = {"slug": "dash-flag"}
        foreign = self.send("POST", "/v1/orgs/acme/flags", body=body,
                            headers={"Cookie": cookie, "Origin": "https://evil.example"})
        self.assertEqual(foreign.status, 403, foreign)
        cross = self.send("POST", "/orgs/acme/projects", body={"name": "X", "slug": "x"},
                          headers={"Cookie": cookie, "Sec-Fetch-Site": "cross-site"})
        self.assertEqual(cross.status, 403, cross)
        self.assertEqual(self.database.query(
            "SELECT count(*) FROM flags WHERE key = 'dash-flag'"), "0")
        same = self.send("POST", "/v1/orgs/acme/flags", body=body,
                         headers={"Cookie": cookie, "Origin": self.own_origin()})
        self.assertEqual(same.status, 201, same)
        body["slug"] = "dash-flag-2"
        fetch = self.send("POST", "/v1/orgs/acme/flags", body=body,
                          headers={"Cookie": cookie, "Sec-Fetch-Site": "same-origin"})
        self.assertEqual(fetch.status, 201, fetch)
        rule = self.send("POST", "/v1/orgs/acme/flags/dash-flag/environments/production/rules",
                         body={"conditions": [], "serve": {"variant": "on"}},
                         headers={"Cookie": cookie, "Origin": "https://evil.example"})
        self.assertEqual(rule.status, 403, rule)

    def test_cookie_role_is_the_users(self):
        cookie = self.login()  # dana is a member: not an admin
        keys = self.send("GET", "/v1/orgs/acme/sdk-keys", headers={"Cookie": cookie})
        self.assertEqual(keys.status, 403, keys)

    def test_bearer_ignores_origin(self):
        body = {"slug": "bearer-flag"}
        response = self.send("POST", "/v1/orgs/acme/flags", "member", body=body,
                             headers={"Origin": "https://evil.example",
                                      "Sec-Fetch-Site": "cross-site"})
        self.assertEqual(response.status, 201, response)

    def test_cookie_does_not_evaluate(self):
        cookie = self.login()
        response = self.send("POST", "/ofrep/v1/evaluate/flags", body={"context": {}},
                             headers={"Cookie": cookie})
        self.assertEqual(response.status, 401, response)


if __name__ == "__main__":
    harness.main()
