"""test_segments.py - end-to-end tests of /v1/orgs/{org}/segments: create,
list, read, update, delete; validation at every limit, conditions
(doc/choices.md "Conditions", entity attribute references, no segment in a
segment), roles and scopes, isolation between organizations, the 409 on
deleting a segment a rule still uses, and the management write rate limit
(every write route of segments, entities and SDK keys).

Run by tests/e2e/run (each class has its own database and ensignd).
"""

import unittest

from test_members import OrgTestCase

SEGMENT_FIELDS = {"id", "key", "name", "description", "conditions", "createdAt", "updatedAt"}
COUNTRY_IN = {"attribute": "country", "operator": "in", "values": ["NL", "BE"]}


def segment(key, **fields):
    return {"key": key, "name": fields.pop("name", key.title()), **fields}


class SegmentsTest(OrgTestCase):

    def create(self, body, token="member", org="acme"):
        return self.call("POST", f"/{org}/segments", token, body=body)

    def created(self, body, token="member", org="acme"):
        return self.assertStatus(self.create(body, token, org), 201)["segment"]

    # ---- the happy path ----

    def test_create_read_list_update_delete(self):
        made = self.created(segment("beta-testers", name="Beta testers",
                                    description="People who opted in",
                                    conditions=[COUNTRY_IN]))
        self.assertEqual(set(made), SEGMENT_FIELDS)
        self.assertEqual(made["key"], "beta-testers")
        self.assertEqual(made["name"], "Beta testers")
        self.assertEqual(made["description"], "People who opted in")
        self.assertEqual(made["conditions"], [COUNTRY_IN])
        self.assertIsoMillis(made["createdAt"])
        self.assertIsoMillis(made["updatedAt"])

        read = self.assertStatus(self.call("GET", "/acme/segments/beta-testers", "viewer"), 200)
        self.assertEqual(read, {"segment": made})
        listed = self.assertStatus(self.call("GET", "/acme/segments", "viewer"), 200)
        self.assertEqual(set(listed), {"segments"})
        self.assertIn({**made, "usedBy": []}, listed["segments"])

        changed = self.assertStatus(self.call("PATCH", "/acme/segments/beta-testers", "member",
                                              body={"name": "Beta", "description": None,
                                                    "conditions": []}), 200)["segment"]
        self.assertEqual(changed["name"], "Beta")
        self.assertIsNone(changed["description"])
        self.assertEqual(changed["conditions"], [])
        self.assertEqual(changed["id"], made["id"])
        self.assertEqual(changed["createdAt"], made["createdAt"])
        self.assertGreaterEqual(changed["updatedAt"], made["updatedAt"])

        self.assertAck(self.call("DELETE", "/acme/segments/beta-testers", "member"))
        self.assertV1Error(self.call("GET", "/acme/segments/beta-testers"), 404)
        self.assertV1Error(self.call("DELETE", "/acme/segments/beta-testers"), 404)

    def test_defaults(self):
        made = self.created({"key": "defaults", "name": "Defaults"})
        self.assertIsNone(made["description"])
        self.assertEqual(made["conditions"], [])

    def test_list_is_ordered_by_key(self):
        for key in ("order-c", "order-a", "order-b"):
            self.created(segment(key))
        keys = [s["key"] for s in self.assertStatus(self.call("GET", "/acme/segments"),
                                                    200)["segments"]]
        ordered = [k for k in keys if k.startswith("order-")]
        self.assertEqual(ordered, ["order-a", "order-b", "order-c"])

    def test_patch_changes_only_what_it_names(self):
        self.created(segment("partial", name="Partial", description="kept",
                             conditions=[COUNTRY_IN]))
        changed = self.assertStatus(self.call("PATCH", "/acme/segments/partial",
                                              body={"name": "Renamed"}), 200)["segment"]
        self.assertEqual((changed["name"], changed["description"], changed["conditions"]),
                         ("Renamed", "kept", [COUNTRY_IN]))
        same = self.assertStatus(self.call("PATCH", "/acme/segments/partial", body={}),
                                 200)["segment"]
        self.assertEqual(same, changed)

    def test_duplicate_key_is_409(self):
        self.created(segment("twice"))
        self.assertV1Error(self.create(segment("twice")), 409)

    def test_unknown_segment_is_404(self):
        self.assertV1Error(self.call("GET", "/acme/segments/nope"), 404)
        self.assertV1Error(self.call("PATCH", "/acme/segments/nope", body={"name": "x"}), 404)
        self.assertV1Error(self.call("DELETE", "/acme/segments/nope"), 404)

    # ---- validation ----

    def test_limits_at_their_boundaries(self):
        cases = [
            ("key", "k" * 63, "k" * 64),
            ("name", "n" * 200, "n" * 201),
            ("description", "d" * 2000, "d" * 2001),
            ("conditions", [COUNTRY_IN] * 50, [COUNTRY_IN] * 51),
        ]
        for index, (field, fits, too_long) in enumerate(cases):
            with self.subTest(field=field):
                base = segment(f"limit-{index}")
                good = {**base, field: fits}
                made = self.created(good)
                self.assertEqual(made[field], fits)
                bad = {**base, "key": f"limit-bad-{index}", field: too_long}
                self.assertInvalid(self.create(bad), field)

    def test_limits_on_update(self):
        self.created(segment("patch-limits"))
        path = "/acme/segments/patch-limits"
        self.assertStatus(self.call("PATCH", path, body={"name": "n" * 200}), 200)
        self.assertInvalid(self.call("PATCH", path, body={"name": "n" * 201}), "name")
        self.assertInvalid(self.call("PATCH", path, body={"name": ""}), "name")
        self.assertStatus(self.call("PATCH", path, body={"description": "d" * 2000}), 200)
        self.assertInvalid(self.call("PATCH", path, body={"description": "d" * 2001}),
                           "description")
        self.assertStatus(self.call("PATCH", path, body={"conditions": [COUNTRY_IN] * 50}), 200)
        self.assertInvalid(self.call("PATCH", path, body={"conditions": [COUNTRY_IN] * 51}),
                           "conditions")

    def test_required_fields_and_types(self):
        self.assertInvalid(self.create({}), "key", "name")
        self.assertInvalid(self.create({"key": "no-name"}), "name")
        self.assertInvalid(self.create({"name": "No key"}), "key")
        self.assertInvalid(self.create({"key": 7, "name": "x"}), "key")
        self.assertInvalid(self.create({"key": "typed", "name": ["x"]}), "name")
        self.assertInvalid(self.create({"key": "typed", "name": ""}), "name")
        self.assertInvalid(self.create({"key": "typed", "name": "x", "description": 5}),
                           "description")
        self.assertInvalid(self.create({"key": "typed", "name": "x", "conditions": {}}),
                           "conditions")

    def test_key_pattern(self):
        for key in ("", "Upper", "-lead", "trail-", "sp ace", "under_score", "é"):
            with self.subTest(key=key):
                self.assertInvalid(self.create({"key": key, "name": "x"}), "key")
        for key in ("a", "0", "a-b", "a--b", "9lives"):
            with self.subTest(key=key):
                self.created({"key": key, "name": key})

    def test_unknown_fields_are_422(self):
        self.assertInvalid(self.create(segment("extra", color="red")), "color")
        self.created(segment("patch-extra"))
        path = "/acme/segments/patch-extra"
        self.assertInvalid(self.call("PATCH", path, body={"key": "renamed"}), "key")
        self.assertInvalid(self.call("PATCH", path, body={"id": "x", "name": "y"}), "id")

    def test_bad_json_is_400(self):
        self.assertV1Error(self.call("POST", "/acme/segments", "member", raw=b'{"key": '), 400)
        self.created(segment("bad-json"))
        self.assertV1Error(self.call("PATCH", "/acme/segments/bad-json", "member",
                                     raw=b"{nope}"), 400)

    def test_body_must_be_an_object(self):
        self.assertInvalid(self.create(["key", "name"]))

    def test_conditions_are_validated_with_their_paths(self):
        errors = self.assertInvalid(self.create(segment("bad-op", conditions=[
            COUNTRY_IN, {"attribute": "country", "operator": "almost", "values": ["NL"]}])),
            "conditions[1].operator")
        self.assertNotIn("conditions[0].operator", errors)
        self.assertInvalid(self.create(segment("bad-values", conditions=[
            {"attribute": "age", "operator": "gt", "values": [1, 2]}])))
        self.assertInvalid(self.create(segment("bad-exists", conditions=[
            {"attribute": "age", "operator": "exists", "values": [1]}])))
        self.assertInvalid(self.create(segment("bad-regex", conditions=[
            {"attribute": "email", "operator": "matches", "values": ["("]}])))
        made = self.created(segment("good-conditions", conditions=[
            {"attribute": "email", "operator": "ends_with", "values": ["@acme.test"],
             "caseInsensitive": True},
            {"attribute": "plan", "operator": "exists", "negate": True},
            {"attribute": "version", "operator": "semver_gte", "values": ["1.2"]},
            {"attribute": "$currentTime", "operator": "before",
             "values": ["2030-01-01T00:00:00Z"]}]))
        self.assertEqual(len(made["conditions"]), 4)

    def test_a_segment_cannot_reference_a_segment(self):
        self.created(segment("inner"))
        errors = self.assertInvalid(self.create(segment("outer",
                                                        conditions=[{"segment": "inner"}])))
        self.assertTrue(any(k.startswith("conditions[0]") for k in errors), errors)
        self.created(segment("patch-outer"))
        self.assertInvalid(self.call("PATCH", "/acme/segments/patch-outer",
                                     body={"conditions": [{"segment": "inner"}]}))

    def test_entity_attribute_references(self):
        self.assertStatus(self.call("POST", "/acme/entities", "member", body={
            "key": "user", "label": "User",
            "attributes": [{"key": "plan"}, {"key": "age", "dataType": "number"}]}), 201)
        made = self.created(segment("entity-ok", conditions=[
            {"attribute": "user.plan", "operator": "eq", "values": ["pro"]},
            {"attribute": "user.age", "operator": "gte", "values": [18]},
            {"attribute": "device.os", "operator": "eq", "values": ["ios"]}]))
        self.assertEqual(len(made["conditions"]), 3)
        self.assertInvalid(self.create(segment("entity-bad", conditions=[
            COUNTRY_IN, {"attribute": "user.shoe-size", "operator": "eq", "values": ["9"]}])),
            "conditions[1].attribute")
        self.assertInvalid(self.call("PATCH", "/acme/segments/entity-ok", body={"conditions": [
            {"attribute": "user.nope", "operator": "exists"}]}), "conditions[0].attribute")

    # ---- delete while referenced ----

    def add_rule_using(self, flag_key, segment_key):
        """A rule of flag_key in production with a segment condition (written
        straight into the tables: the rules API is tested elsewhere)."""
        self.database.query(
            "WITH f AS (INSERT INTO flags (org_id, key, name)"
            f" SELECT id, '{flag_key}', '{flag_key}' FROM orgs WHERE slug = 'acme' RETURNING *),"
            " fe AS (INSERT INTO flag_environments (flag_id, environment_id, default_serve)"
            "  SELECT f.id, e.id, '{\"variant\": \"on\"}' FROM f JOIN environments e"
            "  ON e.org_id = f.org_id AND e.key = 'production' RETURNING *)"
            " INSERT INTO rules (flag_id, org_id, environment_id, conditions, serve)"
            " SELECT fe.flag_id, f.org_id, fe.environment_id,"
            f" '[{{\"segment\": \"{segment_key}\", \"negate\": true}}]', '{{\"variant\": \"on\"}}'"
            " FROM fe JOIN f ON f.id = fe.flag_id")

    def test_delete_while_a_rule_uses_it_is_409(self):
        self.created(segment("in-use"))
        self.add_rule_using("uses-segment", "in-use")
        response = self.call("DELETE", "/acme/segments/in-use", "member")
        self.assertV1Error(response, 409)
        self.assertIn("uses-segment", response.json["message"])
        self.assertStatus(self.call("GET", "/acme/segments/in-use"), 200)
        self.database.query("DELETE FROM flags WHERE key = 'uses-segment'")
        self.assertAck(self.call("DELETE", "/acme/segments/in-use", "member"))

    # ---- authorization and isolation ----

    def test_roles_and_scopes(self):
        for token in ("owner", "admin", "member", "org"):
            with self.subTest(token=token):
                self.created(segment(f"by-{token}"), token=token)
        for token in ("viewer", "readonly"):
            with self.subTest(token=token):
                self.assertV1Error(self.create(segment(f"by-{token}"), token=token), 403)
                self.assertV1Error(self.call("PATCH", "/acme/segments/by-member", token,
                                             body={"name": "x"}), 403)
                self.assertV1Error(self.call("DELETE", "/acme/segments/by-member", token), 403)
                self.assertStatus(self.call("GET", "/acme/segments/by-member", token), 200)
                self.assertStatus(self.call("GET", "/acme/segments", token), 200)

    def test_missing_token_is_401(self):
        self.assertV1Error(self.call("GET", "/acme/segments", None), 401)
        self.assertV1Error(self.create(segment("anon"), token=None), 401)

    def test_other_organizations_are_isolated(self):
        self.created(segment("shared-key", name="Acme's"))
        theirs = self.created(segment("shared-key", name="Globex's"), token="outsider",
                              org="globex")
        self.assertEqual(theirs["name"], "Globex's")
        ours = self.assertStatus(self.call("GET", "/acme/segments/shared-key"), 200)["segment"]
        self.assertEqual(ours["name"], "Acme's")
        listed = self.assertStatus(self.call("GET", "/globex/segments", "outsider"),
                                   200)["segments"]
        self.assertEqual([(s["key"], s["name"]) for s in listed], [("shared-key", "Globex's")])
        for token in ("outsider", "outsider_org"):
            with self.subTest(token=token):
                self.assertV1Error(self.call("GET", "/acme/segments", token), 404)
                self.assertV1Error(self.call("GET", "/acme/segments/shared-key", token), 404)
                self.assertV1Error(self.create(segment("intruder"), token=token), 404)
                self.assertV1Error(self.call("DELETE", "/acme/segments/shared-key", token), 404)
        self.assertV1Error(self.call("GET", "/no-such-org/segments"), 404)


class WriteRateLimitTest(OrgTestCase):
    """Every write of segments, entities and SDK keys counts toward the
    per-token management limit (429 with Retry-After); reads do not."""

    settings = {"ratelimit_management": 3}

    def assertLimited(self, response):
        self.assertV1Error(response, 429)
        self.assertGreaterEqual(int(response.headers.get("Retry-After", "0")), 1)

    def writes(self, token, steps):
        for method, path, body, status in steps:
            with self.subTest(token=token, method=method, path=path):
                self.assertEqual(self.call(method, path, token, body=body).status, status)

    def test_writes_beyond_the_limit_are_429(self):
        self.writes("member", [
            ("POST", "/acme/segments", {"key": "one", "name": "One"}, 201),
            ("PATCH", "/acme/segments/one", {"name": "Uno"}, 200),
            ("DELETE", "/acme/segments/one", None, 200)])
        self.assertLimited(self.call("POST", "/acme/entities", "member",
                                     body={"key": "x", "label": "X"}))
        self.assertStatus(self.call("GET", "/acme/segments", "member"), 200)
        self.assertStatus(self.call("GET", "/acme/entities", "member"), 200)

        self.writes("owner", [
            ("POST", "/acme/entities", {"key": "two", "label": "Two"}, 201),
            ("PATCH", "/acme/entities/two", {"label": "Dos"}, 200),
            ("DELETE", "/acme/entities/two", None, 200)])
        self.assertLimited(self.call("PATCH", "/acme/segments/one", "owner", body={"name": "x"}))

        key = self.assertStatus(self.call("POST", "/acme/sdk-keys", "admin", body={
            "name": "k", "environment": "production"}), 201)["key"]
        self.writes("admin", [
            ("POST", f"/acme/sdk-keys/{key['id']}/revoke", None, 200),
            ("POST", "/acme/sdk-keys", {"name": "k2", "environment": "preview"}, 201)])
        self.assertLimited(self.call("POST", f"/acme/sdk-keys/{key['id']}/revoke", "admin"))
        self.assertLimited(self.call("DELETE", "/acme/entities/two", "admin"))
        self.assertStatus(self.call("GET", "/acme/sdk-keys", "admin"), 200)


if __name__ == "__main__":
    unittest.main()
