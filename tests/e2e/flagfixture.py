"""flagfixture.py - what the end-to-end tests of flags, variants, rules and
environment configuration share: FlagTestCase, an OrgTestCase (acme with a
token per role, and the outsider globex; see test_members.py) with helpers
to create flags and read their detail, and the record field sets of
the /v1 flag operations in doc/api.md.

Not a test module itself (no test_ prefix); imported by test_flags.py,
test_variants.py, test_rules.py, test_environments.py.
"""

from test_members import OrgTestCase

FLAG_FIELDS = {"id", "key", "name", "description", "type", "permanent", "tags",
               "maintainerUserId", "createdByUserId", "archivedAt", "createdAt", "updatedAt"}
FLAG_DETAIL_FIELDS = FLAG_FIELDS | {"createdByName", "maintainerName"}
FLAG_LIST_FIELDS = FLAG_DETAIL_FIELDS | {"value", "usage", "stale", "enabledIn"}
# GET /flags/{key}'s flag: the detail form and stale (sql/0015).
FLAG_DETAIL_STALE_FIELDS = FLAG_DETAIL_FIELDS | {"stale"}
VARIANT_FIELDS = {"id", "key", "value", "label", "sortOrder"}
RULE_FIELDS = {"id", "priority", "description", "conditions", "serve", "createdAt", "updatedAt"}
REVISION_FIELDS = {"id", "action", "summary", "changes", "userName", "createdAt"}
ENV_CONFIG_FIELDS = {"key", "name", "enabled", "defaultVariantKey", "defaultServe",
                     "offVariantKey", "rules"}
ENVIRONMENT_KEYS = ["production", "preview", "development"]

COUNTRY_NL = {"attribute": "country", "operator": "in", "values": ["NL"]}


class FlagTestCase(OrgTestCase):

    def create_flag(self, slug, token="member", org="acme", **fields):
        return self.call("POST", f"/{org}/flags", token, body={"slug": slug, **fields})

    def flag(self, slug, **fields):
        """Creates flag slug (201) and returns its {flag} record."""
        return self.assertStatus(self.create_flag(slug, **fields), 201)["flag"]

    def string_flag(self, slug, *values):
        """A string flag whose variants are values (keys derived from them)."""
        return self.flag(slug, type="string", variants=[{"value": v} for v in values])

    def detail(self, slug, token="viewer"):
        return self.assertStatus(self.call("GET", f"/acme/flags/{slug}", token), 200)

    def env_config(self, slug, env="production"):
        envs = {e["key"]: e for e in self.detail(slug)["environments"]}
        return envs[env]

    def configure(self, slug, body, env="production", token="member"):
        return self.call("PATCH", f"/acme/flags/{slug}/environments/{env}", token, body=body)

    def rules_path(self, slug, env="production"):
        return f"/acme/flags/{slug}/environments/{env}/rules"

    def add_rule(self, slug, body, env="production", token="member"):
        return self.call("POST", self.rules_path(slug, env), token, body=body)

    def revisions(self, slug):
        return self.detail(slug)["revisions"]

    def archive(self, slug):
        self.assertStatus(self.call("POST", f"/acme/flags/{slug}/archive", "member"), 200)

    def generation(self):
        return int(self.database.query("SELECT generation FROM config_generation"))

    def count_rows(self, sql):
        """SELECT count(*) text for fixed test SQL (no user data)."""
        return int(self.database.query(sql))
