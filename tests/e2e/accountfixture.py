"""accountfixture.py - what the root API's end-to-end tests share.

AccountTestCase is test_members.OrgTestCase (acme with a token per role,
the outsider organization globex) with helpers for the paths without a
prefix: call() sends a request with a token name, assertProblem()-based
assertions, and token() creates a scoped personal token through ensignctl
and the API.

Used by tests/e2e/test_accounts_*.py.
"""

import json

import harness
from test_members import OrgTestCase


class AccountTestCase(OrgTestCase):

    def call(self, method, path, token="owner", *, body=None, headers=None):
        """method path (no prefix); token is a self.tokens name, a literal
        token, or None."""
        sent = dict(headers or {})
        secret = self.tokens.get(token, token) if token is not None else None
        if secret is not None:
            sent["Authorization"] = f"Bearer {secret}"
        return self.server.request(method, path, body=body, headers=sent)

    def ok(self, response):
        self.assertEqual(response.status, 200, response)
        self.assertEqual(response.content_type.split(";")[0], "application/json", response)
        return response.json

    def ack(self, response):
        self.assertEqual(self.ok(response), {"ok": True})

    def problem(self, response, status, *fields):
        self.assertProblem(response, status)
        body = response.json
        for field in fields:
            self.assertIn(field, body.get("errors", {}), body)
        return body

    def scoped_token(self, scopes, owner="owner"):
        """A new personal token of owner's user limited to scopes."""
        body = self.ok(self.call("POST", "/me/tokens", owner,
                                 body={"name": "scoped " + json.dumps(scopes), "scopes": scopes}))
        return body["token"]

    def new_user(self, email, name, role=None, org="acme"):
        """A user (and their full token) made with ensignctl; a member of org
        with role when role is given."""
        config = self.server.config_path
        user_id = harness.ensignctl(config, "user", "create", "--email", email, "--name", name)
        if role is not None:
            self.database.query("INSERT INTO org_members (org_id, user_id, role)"
                                f" SELECT o.id, '{user_id}', '{role}' FROM orgs o"
                                f" WHERE o.slug = '{org}'")
        token = harness.ensignctl(config, "token", "create", "--user", email, "--name", "t",
                                  "--full")
        return user_id, token

    def all_pages(self, path, token="owner", member=None, limit=10, method="GET", q=None):
        """Every item of a list, following rel="next"; returns (items, pages)."""
        items, pages = [], 0
        sep = "&" if "?" in path else "?"
        url = f"{path}{sep}limit={limit}" + (f"&q={q}" if q else "")
        while url is not None:
            response = self.call("GET", url, token)
            body = self.ok(response)
            items += body[member]
            pages += 1
            url = next_link(response)
            self.assertLess(pages, 1000)
        return items, pages


def next_link(response):
    """The rel="next" URL of a response, or None."""
    link = response.headers.get("Link")
    if not link:
        return None
    target, _, params = link.partition(";")
    assert 'rel="next"' in params, link
    return target.strip()[1:-1]
