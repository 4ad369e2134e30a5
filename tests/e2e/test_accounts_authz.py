"""test_accounts_authz.py - roles and token scopes on every organization
operation of the root API, exactly as doc/api.md "Roles and scopes" says
(and doc/choices.md fixes where it is silent): a role below the
operation's is 403, a token without the operation's scope (or with it at
read level for a write) is 403, and neither changes anything.

Run by tests/e2e/run (each class has its own database and ensignd).
"""

from accountfixture import AccountTestCase
from test_accounts_isolation import SNAPSHOT_SQL

ROLES = ["viewer", "member", "admin", "owner"]
SCOPES = ["flags", "orgs", "projects", "members", "audit", "tokens", "notifications"]

# (method, path, body, lowest role allowed, scope, write)
OPERATIONS = [
    ("GET", "/orgs/acme/members", None, "viewer", "members", False),
    ("POST", "/orgs/acme/members", {"login": "bob@example.com"}, "admin", "members", True),
    ("DELETE", "/orgs/acme/members/{viewer}", None, "admin", "members", True),
    ("PUT", "/orgs/acme/members/{viewer}/role", {"role": "member"}, "admin", "members", True),
    ("GET", "/orgs/acme/invitations", None, "admin", "members", False),
    ("POST", "/orgs/acme/invitations", {"login": "z@example.com"}, "admin", "members", True),
    ("PATCH", "/orgs/acme", {"name": "Renamed"}, "owner", "orgs", True),
    ("POST", "/orgs/acme/leave", None, "viewer", "orgs", True),
    ("GET", "/orgs/acme/deleted-projects", None, "viewer", "projects", False),
    ("GET", "/orgs/acme/projects", None, "viewer", "projects", False),
    ("POST", "/orgs/acme/projects", {"name": "New"}, "admin", "projects", True),
    ("GET", "/orgs/acme/projects/web", None, "viewer", "projects", False),
    ("PATCH", "/orgs/acme/projects/web", {"name": "W"}, "admin", "projects", True),
    ("DELETE", "/orgs/acme/projects/web", None, "admin", "projects", True),
    ("POST", "/orgs/acme/projects/web/restore", None, "admin", "projects", True),
    ("GET", "/orgs/acme/projects/web/members", None, "viewer", "projects", False),
    ("POST", "/orgs/acme/projects/web/members", {"login": "vic@example.com", "role": "read"},
     "admin", "projects", True),
    ("GET", "/orgs/acme/projects/web/owners", None, "viewer", "projects", False),
]


class AuthorizationTest(AccountTestCase):

    @classmethod
    def prepare(cls):
        super().prepare()
        cls.database.query("INSERT INTO projects (org_id, name, slug)"
                           " SELECT id, 'Web', 'web' FROM orgs WHERE slug = 'acme'")

    def path(self, template):
        return template.format(viewer=self.user_ids["viewer"])

    def test_roles_below_the_operation_are_403(self):
        before = self.database.query(SNAPSHOT_SQL)
        for method, path, body, lowest, _scope, _write in OPERATIONS:
            for role in ROLES[:ROLES.index(lowest)]:
                with self.subTest(method=method, path=path, role=role):
                    self.problem(self.call(method, self.path(path), role, body=body), 403)
        self.assertEqual(self.database.query(SNAPSHOT_SQL), before)

    def test_tokens_without_the_scope_are_403(self):
        before = self.database.query(SNAPSHOT_SQL)
        for method, path, body, _lowest, scope, write in OPERATIONS:
            others = {s: "write" for s in SCOPES if s != scope}
            missing = self.scoped_token(others)
            with self.subTest(method=method, path=path, token="without " + scope):
                self.problem(self.call(method, self.path(path), missing, body=body), 403)
            if write:
                read_only = self.scoped_token({**others, scope: "read"})
                with self.subTest(method=method, path=path, token=scope + " read only"):
                    self.problem(self.call(method, self.path(path), read_only, body=body), 403)
        self.assertEqual(self.database.query(SNAPSHOT_SQL), before)

    def test_reads_need_only_the_read_scope(self):
        for method, path, body, lowest, scope, write in OPERATIONS:
            if write:
                continue
            token = self.scoped_token({scope: "read"}, "owner" if lowest != "admin" else "admin")
            with self.subTest(path=path):
                self.ok(self.call(method, self.path(path), token, body=body))

    def test_no_token_is_401_everywhere(self):
        for method, path, body, *_ in OPERATIONS:
            with self.subTest(method=method, path=path):
                self.problem(self.call(method, self.path(path), None, body=body), 401)
                self.problem(self.call(method, self.path(path), "svc_oat_" + "x" * 43, body=body),
                             401)
