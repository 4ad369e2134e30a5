"""test_lifecycle_revisions.py - end-to-end tests of revision state and
rollback, copying targeting between environments, and the dashboard's
evaluation of an environment (sql/0013_revision_state.sql,
src/api/flagrevision.c, src/api/envcopy.c, src/api/evaluate.c,
src/eval/env_evaluate.c):

- every revision records the flag's targeting after its change (compared
  with the flag detail after each of five kinds of change), revisions
  written before have state null;
- a restore of the second change brings back what OFREP (SDK keys of all
  three environments) served right after it, as one new revision with its
  audit event; the 409s (variants gone, segments gone, no state, archived),
  the 404s (unknown, malformed, another flag's, another organization's
  revision), roles and scopes;
- a copy brings default serve, off variant and rules, not enabled, as one
  revision; its error paths;
- evaluate answers what OFREP bulk answers for 100 contexts (item for item,
  plus ruleId), limits to flags, never counts usage, has no ETag, takes a
  session cookie, and refuses what it must.

Run by tests/e2e/run (each class has its own database and ensignd).
"""

import json
import time
import urllib.parse
import uuid

import harness
from flagfixture import ENVIRONMENT_KEYS, FlagTestCase

OFREP_BULK = "/ofrep/v1/evaluate/flags"
PROPAGATION_S = 5.0


def serve(key):
    return {"variant": key}


def cond(attribute, operator, *values):
    body = {"attribute": attribute, "operator": operator}
    if values:
        body["values"] = list(values)
    return body


def contexts(n):
    """n different evaluation contexts (fixed, so a failure repeats)."""
    countries = ["NL", "DE", "US", "FR", None]
    plans = ["free", "pro", "enterprise", None]
    out = []
    for i in range(n):
        ctx = {"targetingKey": f"user-{i}"}
        if countries[i % 5] is not None:
            ctx["country"] = countries[i % 5]
        if plans[i % 4] is not None:
            ctx["plan"] = plans[i % 4]
        if i % 3 == 0:
            ctx["age"] = 10 + (i * 7) % 60
        if i % 7 == 0:
            ctx["email"] = f"p{i}@example.com" if i % 2 else f"p{i}@acme.test"
        if i % 11 == 0:
            del ctx["targetingKey"]
        out.append(ctx)
    return out


class LifecycleCase(FlagTestCase):
    """acme with SDK keys for its three environments, made through the API."""

    settings = {"usage_flush_interval_ms": 200}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.sdk_keys = {}
        for env in ENVIRONMENT_KEYS:
            response = cls.server.request(
                "POST", "/v1/orgs/acme/sdk-keys", body={"name": env, "environment": env},
                headers={"Authorization": f"Bearer {cls.tokens['admin']}"})
            assert response.status == 201, response
            cls.sdk_keys[env] = response.json["key"]["token"]
        served = harness.wait_for(lambda: all(
            cls.ofrep_raw(env, {}).status == 200 for env in ENVIRONMENT_KEYS), 10)
        if not served:
            cls.tearDownClass()
            raise AssertionError("the SDK keys were not served within 10 s")

    @classmethod
    def ofrep_raw(cls, env, context):
        return cls.server.request("POST", OFREP_BULK, body={"context": context},
                                  headers={"Authorization": f"Bearer {cls.sdk_keys[env]}"})

    def ofrep(self, env, context):
        response = self.ofrep_raw(env, context)
        self.assertEqual(response.status, 200, response)
        return response

    def served(self, env, context, keys):
        """{flag key: item} of the OFREP bulk answer, for keys."""
        items = self.ofrep(env, context).json["flags"]
        return {item["key"]: item for item in items if item["key"] in keys}

    def etag(self, env="production"):
        return self.ofrep(env, {"targetingKey": "etag"}).headers["ETag"]

    def served_generation(self):
        """The organization's configuration generation production's bulk
        ETag names (its first part, in hex)."""
        return int(self.etag().strip('"').split("-")[0], 16)

    def wait_served(self):
        """Waits until evaluation serves every change committed so far: the
        served generation reached the organization's in the database."""
        wanted = int(self.database.query(
            "SELECT g.generation FROM config_org_generation g JOIN orgs o ON o.id = g.org_id"
            " WHERE o.slug = 'acme'"))
        self.assertTrue(harness.wait_for(lambda: self.served_generation() >= wanted,
                                         PROPAGATION_S), "the change did not reach evaluation")

    def revision(self, slug, rev_id, token="viewer"):
        return self.call("GET", f"/acme/flags/{slug}/revisions/{rev_id}", token)

    def restore(self, slug, rev_id, token="member"):
        return self.call("POST", f"/acme/flags/{slug}/revisions/{rev_id}/restore", token)

    def copy(self, slug, env, body, token="member"):
        return self.call("POST", f"/acme/flags/{slug}/environments/{env}/copy", token, body=body)

    def evaluate(self, env, body, token="viewer", headers=None):
        sent = dict(headers or {})
        if token is not None:
            sent["Authorization"] = f"Bearer {self.tokens.get(token, token)}"
        return self.server.request("POST", f"/v1/orgs/acme/environments/{env}/evaluate",
                                   body=body, headers=sent)

    def newest_revision(self, slug):
        return self.revisions(slug)[0]

    def expected_state(self, slug):
        """The state a revision written now must carry, from the detail."""
        detail = self.detail(slug)
        flag = detail["flag"]
        envs = []
        for env in detail["environments"]:
            envs.append({"key": env["key"], "enabled": env["enabled"],
                         "defaultServe": env["defaultServe"],
                         "offVariantKey": env["offVariantKey"],
                         "rules": [{k: r[k] for k in ("id", "priority", "description",
                                                      "conditions", "serve")}
                                   for r in env["rules"]]})
        return {"name": flag["name"], "description": flag["description"], "tags": flag["tags"],
                "environments": envs}


class RevisionStateTest(LifecycleCase):

    def five_changes(self, slug):
        """Changes slug five ways; returns [(revision id, expected state, {env: served})] per
        change, served for two contexts after the change reached evaluation."""
        self.string_flag(slug, "red", "green", "blue")
        keys = [v["key"] for v in self.detail(slug)["variants"]]
        red, green, blue = keys
        probes = [{"targetingKey": "a", "country": "NL"}, {"targetingKey": "b", "country": "US"}]
        path = f"/acme/flags/{slug}"
        rules = self.rules_path(slug)
        changes = [
            lambda: self.call("PATCH", path, "member",
                              body={"name": "Checkout colour", "tags": ["ui", "q4"]}),
            lambda: self.configure(slug, {"enabled": True, "defaultVariantKey": green,
                                          "offVariantKey": red}),
            lambda: self.call("POST", rules, "member",
                              body={"serve": serve(blue),
                                    "conditions": [cond("country", "in", "NL")]}),
            lambda: self.configure(slug, {"enabled": True, "defaultVariantKey": blue},
                                   env="preview"),
            lambda: self.call("PUT", rules, "member", body={"rules": [
                {"serve": serve(red), "conditions": [cond("country", "in", "US")]},
                {"serve": {"rollout": [{"variant": red, "weight": 1},
                                       {"variant": green, "weight": 1}]}}]}),
        ]
        history = []
        for change in changes:
            self.assertIn(change().status, (200, 201))
            self.wait_served()
            served = {env: [self.served(env, p, {slug}) for p in probes]
                      for env in ENVIRONMENT_KEYS}
            history.append((self.newest_revision(slug)["id"], self.expected_state(slug), served))
        return history, probes

    def test_states_then_restore_of_the_second_change(self):
        slug = "rollback"
        history, probes = self.five_changes(slug)
        for rev_id, state, _ in history:
            body = self.assertStatus(self.revision(slug, rev_id), 200)
            self.assertEqual(set(body), {"revision"})
            self.assertEqual(body["revision"]["id"], rev_id)
            self.assertEqual(body["revision"]["state"], state)
        # the revision forms of the list and the detail carry no state
        self.assertNotIn("state", self.revisions(slug)[0])
        second_id, second_state, second_served = history[1]
        self.assertNotEqual(history[-1][2], second_served)  # the restore has work to do
        count = len(self.revisions(slug))
        body = self.assertStatus(self.restore(slug, second_id), 200)
        restored = body["revision"]
        self.assertEqual(restored["action"], "flag.revision_restored")
        self.assertIn(second_id, restored["summary"])
        self.assertEqual(restored["userName"], "Mel Member")
        self.assertEqual(restored["state"], second_state)
        self.assertEqual(len(self.revisions(slug)), count + 1)  # one revision
        self.assertEqual(self.newest_revision(slug)["id"], restored["id"])
        self.assertEqual(self.expected_state(slug), second_state)
        self.wait_served()
        for env in ENVIRONMENT_KEYS:
            now = [self.served(env, p, {slug}) for p in probes]
            self.assertEqual(now, second_served[env], env)
        events = self.database.query(
            "SELECT count(*) FROM audit_events WHERE action = 'flag.revision_restored'"
            f" AND location = 'flags/{slug}' AND summary LIKE '%{second_id}%'")
        self.assertEqual(events, "1")
        # restoring the state the flag already has is still one revision
        self.assertStatus(self.restore(slug, restored["id"]), 200)
        self.assertEqual(len(self.revisions(slug)), count + 2)
        self.assertEqual(self.expected_state(slug), second_state)
        # the second revision counted from the oldest (the first change, after
        # flag.created): disabled everywhere again, with the new name and tags
        first_id, first_state, first_served = history[0]
        self.assertEqual(self.revisions(slug)[-2]["id"], first_id)
        self.assertEqual(self.assertStatus(self.restore(slug, first_id), 200)["revision"]["state"],
                         first_state)
        self.wait_served()
        for env in ENVIRONMENT_KEYS:
            now = [self.served(env, p, {slug}) for p in probes]
            self.assertEqual(now, first_served[env], env)

    def test_revisions_written_before_have_no_state(self):
        slug = "stateless"
        self.flag(slug)
        rev_id = self.newest_revision(slug)["id"]
        self.database.query(f"UPDATE revisions SET state = NULL WHERE id = '{rev_id}'")
        body = self.assertStatus(self.revision(slug, rev_id), 200)
        self.assertIsNone(body["revision"]["state"])
        response = self.restore(slug, rev_id)
        self.assertV1Error(response, 409)
        self.assertIn("no recorded state", response.json["message"])

    def test_missing_variants_409_names_them(self):
        slug = "gone-variants"
        self.string_flag(slug, "red", "green", "blue", "pink")
        red, green, blue, pink = [v["key"] for v in self.detail(slug)["variants"]]
        self.configure(slug, {"defaultVariantKey": blue, "offVariantKey": pink})
        self.add_rule(slug, {"serve": {"rollout": [{"variant": red, "weight": 1},
                                                   {"variant": pink, "weight": 1}]}})
        wanted = self.newest_revision(slug)["id"]
        self.configure(slug, {"defaultVariantKey": green, "offVariantKey": green})
        self.assertStatus(self.call("PUT", self.rules_path(slug), "member",
                                    body={"rules": []}), 200)
        for key in (blue, pink):
            self.assertAck(self.call("DELETE", f"/acme/flags/{slug}/variants/{key}", "member"))
        count = len(self.revisions(slug))
        state = self.expected_state(slug)
        response = self.restore(slug, wanted)
        self.assertV1Error(response, 409)
        self.assertIn(f"{blue}, {pink}", response.json["message"])
        self.assertNotIn(red, response.json["message"].split(":")[-1])
        self.assertEqual(len(self.revisions(slug)), count)  # nothing written
        self.assertEqual(self.expected_state(slug), state)

    def test_missing_segment_409(self):
        slug = "gone-segment"
        self.flag(slug)
        self.assertStatus(self.call("POST", "/acme/segments", "member", body={
            "key": "beta", "name": "Beta", "conditions": [cond("country", "in", "NL")]}), 201)
        self.add_rule(slug, {"serve": serve("on"), "conditions": [{"segment": "beta"}]})
        wanted = self.newest_revision(slug)["id"]
        self.assertStatus(self.call("PUT", self.rules_path(slug), "member",
                                    body={"rules": []}), 200)
        self.assertStatus(self.call("DELETE", "/acme/segments/beta", "member"), 200)
        response = self.restore(slug, wanted)
        self.assertV1Error(response, 409)
        self.assertIn("beta", response.json["message"])

    def test_archived_flag_409(self):
        slug = "archived-restore"
        self.flag(slug)
        rev_id = self.newest_revision(slug)["id"]
        self.archive(slug)
        self.assertV1Error(self.restore(slug, rev_id), 409)

    def test_not_found(self):
        self.flag("nf-one")
        self.flag("nf-two")
        other = self.newest_revision("nf-two")["id"]
        for rev_id in (str(uuid.uuid4()), "not-a-uuid", other,
                       urllib.parse.quote("'; DROP TABLE revisions; --", safe="")):
            with self.subTest(rev_id=rev_id):
                self.assertV1Error(self.revision("nf-one", rev_id), 404)
                self.assertV1Error(self.restore("nf-one", rev_id), 404)
        self.assertV1Error(self.revision("no-such-flag", other), 404)
        self.assertV1Error(self.restore("no-such-flag", other), 404)

    def test_cross_organization(self):
        self.flag("shared-key")
        acme_rev = self.newest_revision("shared-key")["id"]
        created = self.call("POST", "/globex/flags", "outsider", body={"slug": "shared-key"})
        self.assertStatus(created, 201)
        globex_rev = self.assertStatus(self.call("GET", "/globex/flags/shared-key", "outsider"),
                                       200)["revisions"][0]["id"]
        # another organization's revision through our own flag: 404
        self.assertV1Error(self.revision("shared-key", globex_rev), 404)
        self.assertV1Error(self.restore("shared-key", globex_rev), 404)
        # our revision with another organization's credentials: 404
        for token in ("outsider", "outsider_org"):
            self.assertV1Error(self.revision("shared-key", acme_rev, token), 404)
            self.assertV1Error(self.restore("shared-key", acme_rev, token), 404)
            path = f"/globex/flags/shared-key/revisions/{acme_rev}"
            self.assertV1Error(self.call("GET", path, token), 404)
            self.assertV1Error(self.call("POST", path + "/restore", token), 404)

    def test_roles_and_scopes(self):
        self.flag("roles")
        rev_id = self.newest_revision("roles")["id"]
        for token in ("viewer", "readonly", "member", "org"):
            self.assertStatus(self.revision("roles", rev_id, token), 200)
        self.assertV1Error(self.restore("roles", rev_id, "viewer"), 403)
        self.assertV1Error(self.restore("roles", rev_id, "readonly"), 403)
        self.assertV1Error(self.restore("roles", rev_id, None), 401)
        self.assertV1Error(self.revision("roles", rev_id, None), 401)
        for token in ("member", "admin", "owner", "org"):
            self.assertStatus(self.restore("roles", rev_id, token), 200)

    def test_several_revisions_of_one_statement_share_the_state(self):
        self.flag("bulk-state")
        flag_id = self.database.query("SELECT id FROM flags WHERE key = 'bulk-state'")
        self.database.query(
            "INSERT INTO revisions (flag_id, action, summary)"
            f" SELECT '{flag_id}', 'test.bulk', 'x' FROM generate_series(1, 3)")
        states = self.database.query(
            "SELECT count(DISTINCT state::text), count(*), bool_and(state IS NOT NULL)"
            f" FROM revisions WHERE flag_id = '{flag_id}' AND action = 'test.bulk'")
        self.assertEqual(states, "1|3|t")


    def test_environment_created_later_keeps_its_targeting(self):
        slug = "later-env"
        self.flag(slug)
        wanted = self.newest_revision(slug)["id"]
        self.database.query("INSERT INTO environments (org_id, key, name, sort_order)"
                            " SELECT id, 'staging', 'Staging', 3 FROM orgs WHERE slug = 'acme'")
        try:
            self.configure(slug, {"enabled": True, "defaultVariantKey": "off"}, env="staging")
            self.configure(slug, {"enabled": True})
            self.assertStatus(self.restore(slug, wanted), 200)
            self.assertFalse(self.env_config(slug)["enabled"])  # restored
            staging = self.env_config(slug, "staging")
            self.assertTrue(staging["enabled"])  # not in the state: as it was
            self.assertEqual(staging["defaultVariantKey"], "off")
        finally:
            self.database.query("DELETE FROM environments WHERE key = 'staging'")

    def test_the_agents_restore_revision_runs_this_route(self):
        slug = "agent-rollback"
        self.flag(slug)
        wanted = self.newest_revision(slug)["id"]
        self.configure(slug, {"enabled": True})
        auth = {"Authorization": f"Bearer {self.tokens['member']}"}
        asked = self.server.request("POST", "/ai/messages", headers=auth, body={
            "org_id": "acme",
            "messages": [{"role": "user", "content": f"restore {slug} to revision {wanted}"}]})
        self.assertEqual(asked.status, 200, asked)
        action = asked.json["proposals"]["actions"][0]
        self.assertEqual((action["tool"], action["input"]),
                         ("restore_revision", {"flag": slug, "revision": wanted}))
        done = self.server.request("POST", "/ai/actions/execute", headers=auth, body={
            "org_id": "acme", "tool": action["tool"], "input": action["input"]})
        self.assertEqual(done.status, 200, done)
        self.assertEqual(done.json["result"]["revision"]["action"], "flag.revision_restored")
        self.assertFalse(self.env_config(slug)["enabled"])

    # the pure SQL functions of sql/0013, called directly

    def test_state_variant_and_segment_keys(self):
        state = json.dumps({"environments": [
            {"key": "p", "offVariantKey": "x", "enabled": True,
             "defaultServe": {"rollout": [{"variant": "a", "weight": 1},
                                          {"variant": "b", "weight": 1}]},
             "rules": [{"serve": {"variant": "c"},
                        "conditions": [{"segment": "s1"}, cond("country", "in", "NL")]},
                       {"serve": {"variant": "a"}, "conditions": [{"segment": "s2",
                                                                   "negate": True}]}]},
            {"key": "q", "offVariantKey": None, "defaultServe": {}, "rules": []}]})
        self.assertEqual(self.database.query(
            "SELECT string_agg(k, ',' ORDER BY k)"
            f" FROM ensign_state_variant_keys('{state}'::jsonb) k"), "a,b,c,x")
        self.assertEqual(self.database.query(
            "SELECT string_agg(k, ',' ORDER BY k)"
            f" FROM ensign_state_segment_keys('{state}'::jsonb) k"), "s1,s2")
        self.assertEqual(self.database.query(
            "SELECT count(*) FROM ensign_state_variant_keys('{\"environments\": []}')"), "0")

    def test_env_changes_lines(self):
        old = '{"enabled": false, "defaultServe": {"variant": "a"}, "offVariantKey": null}'
        new = '{"enabled": true, "defaultServe": {"variant": "a"}, "offVariantKey": "b"}'
        self.assertEqual(self.database.query(
            f"SELECT array_to_string(ensign_env_changes('production', '{old}', '{new}',"
            " 'rules: 1 → 2'), '|')"),
            "production enabled: false → true|production offVariantKey: null → b"
            "|production rules: 1 → 2")
        self.assertEqual(self.database.query(
            f"SELECT cardinality(ensign_env_changes('production', '{old}', '{old}', NULL))"), "0")


class CopyTest(LifecycleCase):

    def test_copy_brings_targeting_not_enabled(self):
        slug = "copied"
        self.string_flag(slug, "red", "green", "blue")
        red, green, blue = [v["key"] for v in self.detail(slug)["variants"]]
        self.configure(slug, {"enabled": True, "defaultVariantKey": green, "offVariantKey": blue})
        self.assertStatus(self.call("PUT", self.rules_path(slug), "member", body={"rules": [
            {"serve": serve(blue), "conditions": [cond("country", "in", "NL")],
             "description": "Dutch"},
            {"serve": {"rollout": [{"variant": red, "weight": 1},
                                   {"variant": green, "weight": 2}], "bucketBy": "plan"}}]}),
            200)
        self.configure(slug, {"enabled": True}, env="development")
        self.add_rule(slug, {"serve": serve(red)}, env="development")
        before_count = len(self.revisions(slug))
        body = self.assertStatus(self.copy(slug, "development", {"from": "production"}), 200)
        prod = self.env_config(slug)
        dev = self.env_config(slug, "development")
        self.assertEqual(body["environment"], dev)
        self.assertTrue(dev["enabled"])  # as it was
        for field in ("defaultServe", "offVariantKey", "defaultVariantKey"):
            self.assertEqual(dev[field], prod[field], field)
        strip = [{k: r[k] for k in ("priority", "description", "conditions", "serve")}
                 for r in prod["rules"]]
        self.assertEqual([{k: r[k] for k in ("priority", "description", "conditions", "serve")}
                          for r in dev["rules"]], strip)
        self.assertFalse({r["id"] for r in dev["rules"]} & {r["id"] for r in prod["rules"]})
        revisions = self.revisions(slug)
        self.assertEqual(len(revisions), before_count + 1)
        self.assertEqual(revisions[0]["action"], "environment.copied")
        self.assertEqual(revisions[0]["summary"],
                         "Copied the targeting of Production to Development")
        # the copy reaches evaluation: development now serves what production serves
        self.wait_served()
        for ctx in contexts(30):
            with self.subTest(ctx=ctx):
                p = self.served("production", ctx, {slug})[slug]
                d = self.served("development", ctx, {slug})[slug]
                p.pop("metadata", None)  # environment and rule ids differ
                d.pop("metadata", None)
                self.assertEqual(d, p)
        # copying an environment whose flag is disabled leaves the target enabled as it was
        self.assertStatus(self.copy(slug, "production", {"from": "preview"}), 200)
        self.assertTrue(self.env_config(slug)["enabled"])
        self.assertEqual(self.env_config(slug)["rules"], [])

    def test_copy_errors(self):
        slug = "copy-errors"
        self.flag(slug)
        count = len(self.revisions(slug))
        self.assertInvalid(self.copy(slug, "production", {}), "from")
        self.assertInvalid(self.copy(slug, "production", {"from": "nowhere"}), "from")
        self.assertInvalid(self.copy(slug, "production", {"from": "production"}), "from")
        self.assertInvalid(self.copy(slug, "production", {"from": "Not A Key"}), "from")
        self.assertInvalid(self.copy(slug, "production", {"from": "preview", "x": 1}), "x")
        self.assertV1Error(self.call("POST", f"/acme/flags/{slug}/environments/production/copy",
                                     "member", raw=b'{"from":'), 400)
        self.assertV1Error(self.copy("no-such-flag", "production", {"from": "preview"}), 404)
        self.assertV1Error(self.copy(slug, "nowhere", {"from": "preview"}), 404)
        self.assertV1Error(self.copy(slug, "production", {"from": "preview"}, "viewer"), 403)
        self.assertV1Error(self.copy(slug, "production", {"from": "preview"}, "readonly"), 403)
        self.assertV1Error(self.copy(slug, "production", {"from": "preview"}, "outsider"), 404)
        self.assertEqual(len(self.revisions(slug)), count)
        self.archive(slug)
        self.assertV1Error(self.copy(slug, "production", {"from": "preview"}), 409)


class EvaluateTest(LifecycleCase):

    def make_flags(self):
        """Flags of every kind of outcome in production; returns {key: [rule ids]}."""
        if getattr(type(self), "made", None):
            return type(self).made
        made = {}
        self.flag("ev-static")
        self.configure("ev-static", {"enabled": True})
        self.flag("ev-off")
        self.string_flag("ev-rules", "red", "green", "blue")
        red, green, blue = [v["key"] for v in self.detail("ev-rules")["variants"]]
        self.configure("ev-rules", {"enabled": True, "defaultServe": {
            "rollout": [{"variant": red, "weight": 1}, {"variant": green, "weight": 1}]}})
        body = self.assertStatus(self.call("PUT", self.rules_path("ev-rules"), "member", body={
            "rules": [{"serve": serve(blue), "conditions": [cond("country", "in", "NL", "DE")]},
                      {"serve": serve(green), "conditions": [cond("age", "gte", 40),
                                                             cond("plan", "neq", "free")]},
                      {"serve": {"rollout": [{"variant": red, "weight": 3},
                                             {"variant": blue, "weight": 1}],
                                 "bucketBy": "email"},
                       "conditions": [cond("email", "ends_with", "@acme.test")]}]}), 200)
        made["ev-rules"] = [r["id"] for r in body["rules"]]
        self.flag("ev-number", type="number", variants=[{"value": 1}, {"value": 2.5}])
        one, two = [v["key"] for v in self.detail("ev-number")["variants"]]
        self.configure("ev-number", {"enabled": True, "defaultVariantKey": one})
        rule = self.assertStatus(self.add_rule("ev-number", {
            "serve": serve(two), "conditions": [cond("plan", "in", "pro", "enterprise")]}),
            201)["rule"]
        made["ev-number"] = [rule["id"]]
        type(self).made = made
        self.wait_served()
        return made

    def test_same_answers_as_ofrep_bulk_for_100_contexts(self):
        made = self.make_flags()
        seen_rules = set()
        for ctx in contexts(100):
            with self.subTest(ctx=ctx):
                ofrep = self.ofrep("production", ctx).json
                mine = self.evaluate("production", {"context": ctx})
                self.assertEqual(mine.status, 200, mine)
                self.assertNotIn("ETag", mine.headers)
                body = mine.json
                self.assertEqual(body["metadata"], ofrep["metadata"])
                self.assertEqual([i["key"] for i in body["flags"]],
                                 [i["key"] for i in ofrep["flags"]])
                for item, expected in zip(body["flags"], ofrep["flags"]):
                    rule_id = item.pop("ruleId")
                    self.assertEqual(item, expected)
                    self.assertEqual(rule_id, expected.get("metadata", {}).get("ruleId"))
                    if rule_id is not None:
                        seen_rules.add(rule_id)
        # every rule of the fixture matched some context, and nothing else did
        wanted = set(made["ev-rules"]) | set(made["ev-number"])
        self.assertEqual(seen_rules & wanted, wanted)

    def test_rule_ids(self):
        made = self.make_flags()
        body = self.assertStatus(self.evaluate("production", {
            "context": {"targetingKey": "k", "country": "NL", "plan": "pro"},
            "flags": ["ev-rules", "ev-number", "ev-static", "ev-off"]}), 200)
        by_key = {i["key"]: i for i in body["flags"]}
        self.assertEqual(by_key["ev-rules"]["ruleId"], made["ev-rules"][0])
        self.assertEqual(by_key["ev-rules"]["reason"], "TARGETING_MATCH")
        self.assertEqual(by_key["ev-number"]["ruleId"], made["ev-number"][0])
        self.assertIsNone(by_key["ev-static"]["ruleId"])
        self.assertIsNone(by_key["ev-off"]["ruleId"])
        self.assertEqual(by_key["ev-off"]["reason"], "DISABLED")
        body = self.assertStatus(self.evaluate("production", {
            "context": {"targetingKey": "k", "country": "US", "age": 50, "plan": "pro"},
            "flags": ["ev-rules"]}), 200)
        self.assertEqual(body["flags"][0]["ruleId"], made["ev-rules"][1])
        body = self.assertStatus(self.evaluate("production", {
            "context": {"targetingKey": "k"}, "flags": ["ev-rules"]}), 200)
        self.assertIsNone(body["flags"][0]["ruleId"])
        self.assertEqual(body["flags"][0]["reason"], "SPLIT")

    def test_flags_limits_the_answer(self):
        self.make_flags()
        body = self.assertStatus(self.evaluate("production", {
            "context": {}, "flags": ["ev-static", "no-such-flag", "ev-off", "no-such-flag"]}),
            200)
        self.assertEqual([i["key"] for i in body["flags"]],
                         ["ev-off", "ev-static", "no-such-flag"])
        self.assertEqual(body["flags"][2], {
            "key": "no-such-flag", "errorCode": "FLAG_NOT_FOUND",
            "errorDetails": "no flag with this key in the environment", "ruleId": None})
        body = self.assertStatus(self.evaluate("production", {"flags": []}), 200)
        self.assertEqual(body["flags"], [])

    def test_other_environments(self):
        self.make_flags()
        for env in ENVIRONMENT_KEYS:
            ctx = {"targetingKey": "x", "country": "NL"}
            ofrep = self.ofrep(env, ctx).json
            body = self.assertStatus(self.evaluate(env, {"context": ctx}), 200)
            for item in body["flags"]:
                item.pop("ruleId")
            self.assertEqual(body, {"flags": ofrep["flags"], "metadata": ofrep["metadata"]})

    def usage_total(self):
        return int(self.database.query("SELECT COALESCE(sum(count), 0) FROM usage_counters"))

    def test_never_counts_usage(self):
        self.make_flags()
        time.sleep(0.5)  # earlier counts flushed (usage_flush_interval_ms 200)
        start = self.usage_total()
        for i in range(50):
            self.assertStatus(self.evaluate("production", {"context": {"targetingKey": str(i)}}),
                              200)
        time.sleep(0.8)
        self.assertEqual(self.usage_total(), start)
        self.ofrep("production", {"targetingKey": "counted"})  # while OFREP counts
        self.assertTrue(harness.wait_for(lambda: self.usage_total() > start, 5))

    def test_errors(self):
        self.make_flags()
        errors = self.assertInvalid(self.evaluate("production", {"context": {"targetingKey": 5}}),
                                    "context")
        self.assertEqual(set(errors), {"context"})
        self.assertEqual(self.ofrep_raw("production", {"targetingKey": 5}).status, 400)
        self.assertInvalid(self.evaluate("production", {"context": []}), "context")
        self.assertInvalid(self.evaluate("production", {"flags": "ev-static"}), "flags")
        self.assertInvalid(self.evaluate("production", {"flags": [1]}), "flags")
        self.assertInvalid(self.evaluate("production", {"flags": ["a"] * 1001}), "flags")
        self.assertInvalid(self.evaluate("production", {"contxt": {}}), "contxt")
        self.assertV1Error(self.server.request(
            "POST", "/v1/orgs/acme/environments/production/evaluate", body=b'{"context":',
            headers={"Authorization": f"Bearer {self.tokens['viewer']}",
                     "Content-Type": "application/json"}), 400)
        self.assertV1Error(self.evaluate("nowhere", {}), 404)
        self.assertV1Error(self.evaluate("production", {}, token=None), 401)
        self.assertV1Error(self.evaluate("production", {}, token="outsider"), 404)
        self.assertV1Error(self.evaluate("production", {}, token=self.sdk_keys["production"]),
                           401)
        for token in ("viewer", "readonly", "member", "org"):
            self.assertStatus(self.evaluate("production", {}, token=token), 200)
        # a globex token sees its own environments, never acme's flags
        response = self.server.request(
            "POST", "/v1/orgs/globex/environments/production/evaluate", body={},
            headers={"Authorization": f"Bearer {self.tokens['outsider']}"})
        self.assertEqual(self.assertStatus(response, 200)["flags"], [])

    def test_session_cookie(self):
        self.make_flags()
        config = self.server.config_path
        harness.ensignctl(config, "user", "create", "--email", "cookie@example.com", "--name",
                          "Cookie Viewer", "--password-stdin", stdin="correct horse battery\n")
        self.database.query("INSERT INTO org_members (org_id, user_id, role)"
                            " SELECT o.id, u.id, 'viewer' FROM orgs o, users u"
                            " WHERE o.slug = 'acme' AND u.email = 'cookie@example.com'")
        login = self.server.request("POST", "/v1/session", body=json.dumps(
            {"email": "cookie@example.com", "password": "correct horse battery"}).encode(),
            headers={"Content-Type": "application/json"})
        self.assertEqual(login.status, 200, login)
        cookie = login.headers["Set-Cookie"].split(";")[0]
        origin = f"http://127.0.0.1:{self.server.port}"
        body = self.assertStatus(self.evaluate("production", {"context": {}}, token=None,
                                               headers={"Cookie": cookie, "Origin": origin}), 200)
        self.assertIn("ev-static", [i["key"] for i in body["flags"]])
        self.assertV1Error(self.evaluate("production", {}, token=None, headers={
            "Cookie": cookie, "Origin": "https://evil.example"}), 403)

    def test_openapi_documents_the_routes(self):
        paths = self.server.get("/openapi.json").json["paths"]
        self.assertIn("post", paths["/v1/orgs/{org}/environments/{envKey}/evaluate"])
        self.assertIn("post", paths["/v1/orgs/{org}/flags/{key}/environments/{envKey}/copy"])
        self.assertIn("get", paths["/v1/orgs/{org}/flags/{key}/revisions/{id}"])
        self.assertIn("post", paths["/v1/orgs/{org}/flags/{key}/revisions/{id}/restore"])
