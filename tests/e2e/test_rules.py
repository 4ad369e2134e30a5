"""test_rules.py - end-to-end tests of the targeting rules of a flag in one
environment: append, list, replace (atomic, one revision), update, delete,
reorder; conditions (doc/choices.md "Conditions") with their error paths, serve
objects, every limit at its boundary, references to variants, segments and
entity attributes, the archived 409s, the 404s, and a failed write that
leaves nothing behind.

Run by tests/e2e/run (each class has its own database and ensignd).
"""

import unittest
import uuid

from flagfixture import COUNTRY_NL, RULE_FIELDS, FlagTestCase

MAX_PRIORITY = 9007199254740991


def serve(key):
    return {"variant": key}


def rollout(*pairs, **extra):
    return {"rollout": [{"variant": k, "weight": w} for k, w in pairs], **extra}


def condition(operator, *values, attribute="country", **extra):
    body = {"attribute": attribute, "operator": operator, **extra}
    if values:
        body["values"] = list(values)
    return body


class RulesTest(FlagTestCase):

    @classmethod
    def prepare(cls):
        super().prepare()

    def setUp(self):
        self.slug = f"f-{uuid.uuid4().hex[:12]}"
        self.string_flag(self.slug, "red", "blue")

    def path(self, suffix=""):
        return self.rules_path(self.slug) + suffix

    def rules(self):
        return self.assertStatus(self.call("GET", self.path(), "viewer"), 200)["rules"]

    def add(self, body, token="member"):
        return self.add_rule(self.slug, body, token=token)

    def added(self, body):
        return self.assertStatus(self.add(body), 201)["rule"]

    def replace(self, rules, token="member"):
        return self.call("PUT", self.path(), token, body={"rules": rules})

    # ---- the happy path ----

    def test_append_list_update_delete(self):
        first = self.added({"serve": serve("red"), "conditions": [COUNTRY_NL],
                            "description": "Dutch"})
        self.assertEqual(set(first), RULE_FIELDS)
        self.assertEqual((first["priority"], first["description"]), (0, "Dutch"))
        self.assertEqual(first["conditions"], [COUNTRY_NL])
        self.assertEqual(first["serve"], serve("red"))
        self.assertIsoMillis(first["createdAt"])
        second = self.added({"serve": rollout(("red", 1), ("blue", 3), bucketBy="user.id")})
        self.assertEqual(second["priority"], 1)
        self.assertEqual(second["conditions"], [])
        self.assertIsNone(second["description"])
        third = self.added({"serve": serve("blue"), "priority": 0})
        self.assertEqual(third["priority"], 0)
        self.assertEqual([r["id"] for r in self.rules()], [first["id"], third["id"], second["id"]])

        changed = self.assertStatus(self.call("PATCH", self.path("/" + second["id"]), "member",
                                              body={"description": "split", "priority": 5}),
                                    200)["rule"]
        self.assertEqual((changed["description"], changed["priority"]), ("split", 5))
        self.assertEqual(changed["serve"], second["serve"])
        self.assertAck(self.call("DELETE", self.path("/" + first["id"]), "member"))
        self.assertEqual([r["id"] for r in self.rules()], [third["id"], second["id"]])
        env = self.env_config(self.slug)
        self.assertEqual([r["id"] for r in env["rules"]], [third["id"], second["id"]])
        actions = [r["action"] for r in self.revisions(self.slug)][:5]
        self.assertEqual(actions, ["rule.deleted", "rule.updated", "rule.created",
                                   "rule.created", "rule.created"])

    def test_replace_is_one_revision(self):
        self.added({"serve": serve("red")})
        before = len(self.revisions(self.slug))
        rules = [{"serve": serve("blue"), "conditions": [COUNTRY_NL], "description": "one"},
                 {"serve": rollout(("red", 1), ("blue", 1))},
                 {"serve": serve("red")}]
        body = self.assertStatus(self.replace(rules), 200)
        self.assertEqual(set(body), {"rules"})
        self.assertEqual([r["priority"] for r in body["rules"]], [0, 1, 2])
        self.assertEqual([r["serve"] for r in body["rules"]], [r["serve"] for r in rules])
        self.assertEqual(self.rules(), body["rules"])
        revisions = self.revisions(self.slug)
        self.assertEqual(len(revisions), before + 1)
        self.assertEqual(revisions[0]["action"], "rules.replaced")
        self.assertEqual(revisions[0]["summary"], "Replaced the rules in Production")
        self.assertEqual(revisions[0]["userName"], "Mel Member")
        self.assertEqual(self.assertStatus(self.replace([]), 200), {"rules": []})
        self.assertEqual(self.rules(), [])

    def test_reorder(self):
        ids = [self.added({"serve": serve("red")})["id"] for _ in range(3)]
        reordered = [ids[2], ids[0], ids[1]]
        self.assertAck(self.call("POST", self.path("/reorder"), "member",
                                 body={"ruleIds": reordered}))
        self.assertEqual([r["id"] for r in self.rules()], reordered)
        self.assertEqual([r["priority"] for r in self.rules()], [0, 1, 2])
        self.assertEqual(self.revisions(self.slug)[0]["action"], "rules.reordered")
        stranger = str(uuid.uuid4())
        bad = [([ids[0], ids[1]], "ruleIds"),
               (ids + [stranger], "ruleIds"),
               ([ids[0], ids[1], stranger], "ruleIds"),
               ([ids[0], ids[0], ids[1]], "ruleIds[1]"),
               (ids + ["not-a-uuid"], "ruleIds[3]")]
        for rule_ids, field in bad:
            with self.subTest(ruleIds=rule_ids):
                self.assertInvalid(self.call("POST", self.path("/reorder"), "member",
                                             body={"ruleIds": rule_ids}), field)
        self.assertInvalid(self.call("POST", self.path("/reorder"), "member", body={}),
                           "ruleIds")
        self.assertEqual([r["id"] for r in self.rules()], reordered)

    def test_reorder_of_empty_set(self):
        self.assertAck(self.call("POST", self.path("/reorder"), "member", body={"ruleIds": []}))

    # ---- limits ----

    def test_condition_count_boundary(self):
        self.added({"serve": serve("red"), "conditions": [COUNTRY_NL] * 50})
        self.assertInvalid(self.add({"serve": serve("red"), "conditions": [COUNTRY_NL] * 51}),
                           "conditions")

    def test_rollout_boundaries(self):
        self.added({"serve": rollout(*[("red", 1)] * 64)})
        self.assertInvalid(self.add({"serve": rollout(*[("red", 1)] * 65)}), "serve.rollout")
        self.assertInvalid(self.add({"serve": rollout()}), "serve.rollout")
        self.added({"serve": rollout(("red", 1000000), ("blue", 0))})
        self.assertInvalid(self.add({"serve": rollout(("red", 1000001))}),
                           "serve.rollout[0].weight")
        self.assertInvalid(self.add({"serve": rollout(("red", -1), ("blue", 1))}),
                           "serve.rollout[0].weight")
        self.assertInvalid(self.add({"serve": rollout(("red", 0.5), ("blue", 1))}),
                           "serve.rollout[0].weight")
        self.assertInvalid(self.add({"serve": rollout(("red", 0), ("blue", 0))}),
                           "serve.rollout")
        self.added({"serve": rollout(("red", 1), bucketBy="b" * 200)})
        self.assertInvalid(self.add({"serve": rollout(("red", 1), bucketBy="b" * 201)}),
                           "serve.bucketBy")
        self.assertInvalid(self.add({"serve": rollout(("red", 1), bucketBy="")}),
                           "serve.bucketBy")

    def test_rollout_weights_are_stored_as_integers(self):
        rule = self.added({"serve": rollout(("red", 2.0), ("blue", 1e2))})
        self.assertEqual(rule["serve"], rollout(("red", 2), ("blue", 100)))

    def test_serve_shapes(self):
        self.assertInvalid(self.add({}), "serve")
        self.assertInvalid(self.add({"serve": {}}), "serve")
        self.assertInvalid(self.add({"serve": "red"}), "serve")
        self.assertInvalid(self.add({"serve": {"variant": "red", "rollout": []}}), "serve")
        self.assertInvalid(self.add({"serve": {"variant": ""}}), "serve.variant")
        self.assertInvalid(self.add({"serve": {"variant": "red", "extra": 1}}), "serve.extra")
        self.assertInvalid(self.add({"serve": serve("green")}), "serve.variant")
        self.assertInvalid(self.add({"serve": rollout(("red", 1), ("green", 1))}),
                           "serve.rollout[1].variant")

    def test_description_and_priority_boundaries(self):
        self.added({"serve": serve("red"), "description": "d" * 500})
        self.assertInvalid(self.add({"serve": serve("red"), "description": "d" * 501}),
                           "description")
        self.added({"serve": serve("red"), "priority": MAX_PRIORITY})
        self.assertInvalid(self.add({"serve": serve("red"), "priority": MAX_PRIORITY + 1}),
                           "priority")
        self.assertInvalid(self.add({"serve": serve("red"), "priority": -1}), "priority")
        self.assertInvalid(self.add({"serve": serve("red"), "priority": 1.5}), "priority")
        self.assertInvalid(self.add({"serve": serve("red"), "priority": "1"}), "priority")

    def test_replace_boundaries(self):
        self.assertStatus(self.replace([{"serve": serve("red")}] * 200), 200)
        self.assertEqual(len(self.rules()), 200)
        self.assertInvalid(self.replace([{"serve": serve("red")}] * 201), "rules")
        self.assertEqual(len(self.rules()), 200)
        self.assertInvalid(self.call("PUT", self.path(), "member", body={}), "rules")
        self.assertInvalid(self.replace([{"serve": serve("red"), "priority": 3}]),
                           "rules[0].priority")
        # Appending beyond 200 rules is refused too.
        self.assertInvalid(self.add({"serve": serve("red")}), "rules")

    def test_error_paths_name_the_field(self):
        rules = [{"serve": serve("red")}] * 3 + [{"serve": serve("red"), "conditions": [
            {"attribute": "country", "operator": "like", "values": ["NL"]}]}]
        errors = self.assertInvalid(self.replace(rules), "rules[3].conditions[0].operator")
        self.assertEqual(set(errors), {"rules[3].conditions[0].operator"})
        # the row's schema refuses the shape before the handler looks the
        # variants up (src/mgmt/jsonschema.h); then the handler names them
        errors = self.assertInvalid(self.replace([{"serve": rollout(("red", 1), ("nope", 2))},
                                                  {"color": 1, "serve": serve("red")}]),
                                    "rules[1].color")
        self.assertEqual(set(errors), {"rules[1].color"})
        self.assertInvalid(self.replace([{"serve": serve("red")},
                                         {"serve": rollout(("red", 1), ("nope", 2))}]),
                           "rules[1].serve.rollout[1].variant")

    # ---- conditions ----

    def test_condition_shapes(self):
        good = [condition("in", "NL", 1, True), condition("eq", "x", caseInsensitive=True),
                condition("matches", "^N.$"), condition("gte", 3.5),
                condition("semver_gte", "v1.2"), condition("before", "2030-01-01T00:00:00Z"),
                condition("exists", negate=True), condition("not_exists"),
                condition("after", "2020-01-01", attribute="$currentTime")]
        rule = self.added({"serve": serve("red"), "conditions": good})
        self.assertEqual(rule["conditions"], good)
        bad = {"conditions[0].operator": condition("like", "x"),
               "conditions[0].values": condition("eq", "a", "b"),
               "conditions[0].values[0]": condition("gt", "5"),
               "conditions[0].attribute": {"operator": "exists"},
               "conditions[0]": {"attribute": "a", "segment": "s", "operator": "exists"},
               "conditions[0].negate": condition("exists", negate="yes"),
               "conditions[0].color": condition("exists", color="red")}
        for path, cond in bad.items():
            with self.subTest(path=path):
                self.assertInvalid(self.add({"serve": serve("red"), "conditions": [cond]}), path)
        self.assertInvalid(self.add({"serve": serve("red"),
                                     "conditions": [condition("exists", "x")]}),
                           "conditions[0].values")
        self.assertInvalid(self.add({"serve": serve("red"),
                                     "conditions": [condition("matches", "(open")]}),
                           "conditions[0].values[0]")
        self.assertInvalid(self.add({"serve": serve("red"),
                                     "conditions": [condition("before", 1700000000)]}),
                           "conditions[0].values[0]")
        self.assertInvalid(self.add({"serve": serve("red"),
                                     "conditions": [condition("in", *range(101))]}),
                           "conditions[0].values")
        self.added({"serve": serve("red"), "conditions": [condition("in", *range(100))]})

    def test_segment_references(self):
        self.assertStatus(self.call("POST", "/acme/segments", "member", body={
            "key": f"seg-{self.slug}", "name": "Beta", "conditions": [COUNTRY_NL]}), 201)
        self.added({"serve": serve("red"), "conditions": [{"segment": f"seg-{self.slug}"}]})
        self.assertInvalid(self.add({"serve": serve("red"),
                                     "conditions": [{"segment": "no-such-segment"}]}),
                           "conditions[0].segment")
        self.assertInvalid(self.replace([{"serve": serve("red"),
                                          "conditions": [{"segment": "no-such-segment"}]}]),
                           "rules[0].conditions[0].segment")

    def test_entity_attribute_references(self):
        entity = f"user{self.slug[2:8]}"
        self.assertStatus(self.call("POST", "/acme/entities", "member", body={
            "key": entity, "label": "User", "attributes": [{"key": "plan"}]}), 201)
        self.added({"serve": serve("red"),
                    "conditions": [condition("eq", "pro", attribute=f"{entity}.plan")]})
        self.assertInvalid(self.add({"serve": serve("red"), "conditions": [
            condition("eq", "x", attribute=f"{entity}.color")]}), "conditions[0].attribute")
        # A path whose first element is no entity is free.
        self.added({"serve": serve("red"),
                    "conditions": [condition("eq", "x", attribute="account.color")]})

    # ---- state and existence ----

    def test_archived_flag_refuses_rule_writes(self):
        rule = self.added({"serve": serve("red")})
        self.archive(self.slug)
        self.assertV1Error(self.add({"serve": serve("red")}), 409)
        self.assertV1Error(self.replace([]), 409)
        self.assertV1Error(self.call("PATCH", self.path("/" + rule["id"]), "member",
                                     body={"description": "x"}), 409)
        self.assertV1Error(self.call("DELETE", self.path("/" + rule["id"]), "member"), 409)
        self.assertV1Error(self.call("POST", self.path("/reorder"), "member",
                                     body={"ruleIds": [rule["id"]]}), 409)
        self.assertEqual([r["id"] for r in self.rules()], [rule["id"]])

    def test_missing_things_are_404(self):
        rule_id = str(uuid.uuid4())
        self.assertV1Error(self.call("GET", self.rules_path("nope")), 404)
        self.assertV1Error(self.call("GET", self.rules_path(self.slug, "staging")), 404)
        self.assertV1Error(self.add_rule("nope", {"serve": serve("red")}), 404)
        self.assertV1Error(self.add_rule(self.slug, {"serve": serve("red")}, env="staging"), 404)
        self.assertV1Error(self.call("PATCH", self.path("/" + rule_id), "member",
                                     body={"description": "x"}), 404)
        self.assertV1Error(self.call("DELETE", self.path("/" + rule_id), "member"), 404)
        self.assertV1Error(self.call("DELETE", self.path("/not-a-uuid"), "member"), 404)
        other = self.string_flag(f"o-{self.slug}", "red")
        rule = self.assertStatus(self.add_rule(other["key"], {"serve": serve("red")}), 201)
        self.assertV1Error(self.call("DELETE", self.path("/" + rule["rule"]["id"]), "member"),
                           404)

    def test_unknown_fields_and_bad_json(self):
        self.assertInvalid(self.add({"serve": serve("red"), "enabled": True}), "enabled")
        rule = self.added({"serve": serve("red")})
        self.assertInvalid(self.call("PATCH", self.path("/" + rule["id"]), "member",
                                     body={"id": "x"}), "id")
        self.assertInvalid(self.call("PUT", self.path(), "member",
                                     body={"rules": [], "extra": 1}), "extra")
        self.assertV1Error(self.call("POST", self.path(), "member", raw=b"{"), 400)
        self.assertV1Error(self.call("PUT", self.path(), "member", raw=b"nope"), 400)

    def test_failed_write_leaves_nothing(self):
        self.added({"serve": serve("red"), "priority": MAX_PRIORITY})
        rules = self.rules()
        revisions = len(self.revisions(self.slug))
        generation = self.generation()
        # The next priority would exceed the bound: the insert fails in the
        # database, and nothing of the statement remains.
        self.assertInvalid(self.add({"serve": serve("blue")}), "priority")
        self.assertEqual(self.rules(), rules)
        self.assertEqual(len(self.revisions(self.slug)), revisions)
        self.assertEqual(self.generation(), generation)

    def test_roles(self):
        self.assertV1Error(self.add({"serve": serve("red")}, token="viewer"), 403)
        self.assertV1Error(self.add({"serve": serve("red")}, token="readonly"), 403)
        self.assertStatus(self.add({"serve": serve("red")}, token="org"), 201)
        self.assertV1Error(self.add({"serve": serve("red")}, token="outsider"), 404)
        self.assertV1Error(self.call("GET", self.path(), "outsider"), 404)


if __name__ == "__main__":
    unittest.main()
