"""test_entities.py - end-to-end tests of /v1/orgs/{org}/entities: create,
list, read, update (attributes replace the set), delete; validation at every
limit, roles and scopes, isolation between organizations.

Run by tests/e2e/run (each class has its own database and ensignd).
"""

import unittest

from test_members import OrgTestCase

ENTITY_FIELDS = {"id", "key", "label", "attributes", "createdAt", "updatedAt"}


def attribute(key, data_type="string", labels=None):
    return {"key": key, "dataType": data_type, "labels": labels}


class EntitiesTest(OrgTestCase):

    def create(self, body, token="member", org="acme"):
        return self.call("POST", f"/{org}/entities", token, body=body)

    def created(self, body, token="member", org="acme"):
        return self.assertStatus(self.create(body, token, org), 201)["entity"]

    def patch(self, key, body, token="member"):
        return self.call("PATCH", f"/acme/entities/{key}", token, body=body)

    # ---- the happy path ----

    def test_create_read_list_update_delete(self):
        made = self.created({"key": "user", "label": "User", "attributes": [
            {"key": "plan", "labels": ["free", "pro"]},
            {"key": "age", "dataType": "number"},
            {"key": "beta", "dataType": "boolean", "labels": None}]})
        self.assertEqual(set(made), ENTITY_FIELDS)
        self.assertEqual((made["key"], made["label"]), ("user", "User"))
        self.assertEqual(made["attributes"], [attribute("plan", labels=["free", "pro"]),
                                              attribute("age", "number"),
                                              attribute("beta", "boolean")])
        self.assertIsoMillis(made["createdAt"])
        self.assertIsoMillis(made["updatedAt"])

        self.assertEqual(self.assertStatus(self.call("GET", "/acme/entities/user", "viewer"),
                                           200), {"entity": made})
        listed = self.assertStatus(self.call("GET", "/acme/entities", "viewer"), 200)
        self.assertEqual(set(listed), {"entities"})
        self.assertIn(made, listed["entities"])

        changed = self.assertStatus(self.patch("user", {"label": "Person", "attributes": [
            {"key": "age", "dataType": "string", "labels": ["adult"]},
            {"key": "country"}]}), 200)["entity"]
        self.assertEqual(changed["label"], "Person")
        self.assertEqual(changed["attributes"], [attribute("age", labels=["adult"]),
                                                 attribute("country")])
        self.assertEqual((changed["id"], changed["createdAt"]), (made["id"], made["createdAt"]))
        self.assertGreaterEqual(changed["updatedAt"], made["updatedAt"])
        self.assertEqual(self.assertStatus(self.call("GET", "/acme/entities/user"), 200),
                         {"entity": changed})

        self.assertAck(self.call("DELETE", "/acme/entities/user", "member"))
        self.assertV1Error(self.call("GET", "/acme/entities/user"), 404)
        self.assertV1Error(self.call("DELETE", "/acme/entities/user"), 404)

    def test_defaults(self):
        made = self.created({"key": "bare", "label": "Bare"})
        self.assertEqual(made["attributes"], [])
        made = self.created({"key": "typed", "label": "Typed", "attributes": [{"key": "a"}]})
        self.assertEqual(made["attributes"], [attribute("a")])

    def test_patch_changes_only_what_it_names(self):
        self.created({"key": "partial", "label": "Partial", "attributes": [{"key": "a"}]})
        changed = self.assertStatus(self.patch("partial", {"label": "Renamed"}), 200)["entity"]
        self.assertEqual(changed["attributes"], [attribute("a")])
        changed = self.assertStatus(self.patch("partial", {"attributes": []}), 200)["entity"]
        self.assertEqual((changed["label"], changed["attributes"]), ("Renamed", []))
        same = self.assertStatus(self.patch("partial", {}), 200)["entity"]
        self.assertEqual(same, changed)

    def test_attribute_order_is_the_request_order(self):
        keys = [f"attr-{i}" for i in (5, 1, 4, 2, 3)]
        made = self.created({"key": "ordered", "label": "Ordered",
                             "attributes": [{"key": k} for k in keys]})
        self.assertEqual([a["key"] for a in made["attributes"]], keys)
        keys.reverse()
        changed = self.assertStatus(self.patch("ordered", {"attributes": [
            {"key": k} for k in keys]}), 200)["entity"]
        self.assertEqual([a["key"] for a in changed["attributes"]], keys)

    def test_list_is_ordered_by_key(self):
        for key in ("ord-c", "ord-a", "ord-b"):
            self.created({"key": key, "label": key})
        keys = [e["key"] for e in self.assertStatus(self.call("GET", "/acme/entities"),
                                                    200)["entities"]]
        self.assertEqual([k for k in keys if k.startswith("ord-")], ["ord-a", "ord-b", "ord-c"])

    def test_duplicate_key_is_409(self):
        self.created({"key": "twice", "label": "Twice"})
        self.assertV1Error(self.create({"key": "twice", "label": "Again"}), 409)

    def test_unknown_entity_is_404(self):
        self.assertV1Error(self.call("GET", "/acme/entities/nope"), 404)
        self.assertV1Error(self.patch("nope", {"label": "x"}), 404)
        self.assertV1Error(self.call("DELETE", "/acme/entities/nope"), 404)

    # ---- validation ----

    def test_limits_at_their_boundaries(self):
        self.created({"key": "k" * 63, "label": "l" * 200})
        self.assertInvalid(self.create({"key": "k" * 64, "label": "x"}), "key")
        self.assertInvalid(self.create({"key": "long-label", "label": "l" * 201}), "label")
        self.assertInvalid(self.create({"key": "empty-label", "label": ""}), "label")

        many = [{"key": f"a{i}"} for i in range(100)]
        made = self.created({"key": "hundred", "label": "x", "attributes": many})
        self.assertEqual(len(made["attributes"]), 100)
        self.assertInvalid(self.create({"key": "hundred-one", "label": "x",
                                        "attributes": many + [{"key": "a100"}]}), "attributes")

        made = self.created({"key": "long-attr", "label": "x",
                             "attributes": [{"key": "a" * 120}]})
        self.assertEqual(made["attributes"][0]["key"], "a" * 120)
        self.assertInvalid(self.create({"key": "too-long-attr", "label": "x",
                                        "attributes": [{"key": "a" * 121}]}),
                           "attributes[0].key")
        self.assertInvalid(self.create({"key": "empty-attr", "label": "x",
                                        "attributes": [{"key": ""}]}), "attributes[0].key")

        labels = [f"label {i}" for i in range(200)]
        made = self.created({"key": "labels", "label": "x",
                             "attributes": [{"key": "a", "labels": labels}]})
        self.assertEqual(made["attributes"][0]["labels"], labels)
        self.assertInvalid(self.create({"key": "labels-201", "label": "x",
                                        "attributes": [{"key": "a", "labels": labels + ["x"]}]}),
                           "attributes[0].labels")
        made = self.created({"key": "label-text", "label": "x",
                             "attributes": [{"key": "a", "labels": ["t" * 120, ""]}]})
        self.assertEqual(made["attributes"][0]["labels"], ["t" * 120, ""])
        errors = self.assertInvalid(self.create({"key": "label-text-121", "label": "x",
                                                 "attributes": [{"key": "a",
                                                                 "labels": ["t" * 121]}]}))
        self.assertTrue(any(k.startswith("attributes[0].labels") for k in errors), errors)

    def test_limits_on_update(self):
        self.created({"key": "patch-limits", "label": "x"})
        self.assertStatus(self.patch("patch-limits", {"label": "l" * 200}), 200)
        self.assertInvalid(self.patch("patch-limits", {"label": "l" * 201}), "label")
        self.assertInvalid(self.patch("patch-limits", {"label": None}), "label")
        many = [{"key": f"a{i}"} for i in range(101)]
        self.assertInvalid(self.patch("patch-limits", {"attributes": many}), "attributes")
        self.assertStatus(self.patch("patch-limits", {"attributes": many[:100]}), 200)

    def test_attribute_rules(self):
        cases = [
            ([{"key": "a"}, {"key": "a"}], "attributes[1].key"),
            ([{"key": "a", "dataType": "date"}], "attributes[0].dataType"),
            ([{"key": "a", "dataType": None}], "attributes[0].dataType"),
            ([{"key": "a", "labels": "x"}], "attributes[0].labels"),
            ([{"key": "a", "labels": [1]}], None),
            ([{"key": "a", "color": "red"}], "attributes[0].color"),
            ([{"dataType": "string"}], "attributes[0].key"),
            (["a"], "attributes[0]"),
            ({"key": "a"}, "attributes"),
        ]
        for index, (attributes, field) in enumerate(cases):
            with self.subTest(attributes=attributes):
                body = {"key": f"bad-attr-{index}", "label": "x", "attributes": attributes}
                errors = self.assertInvalid(self.create(body), *([field] if field else []))
                self.assertTrue(any(k.startswith("attributes") for k in errors), errors)
                self.assertV1Error(self.call("GET", f"/acme/entities/bad-attr-{index}"), 404)

    def test_failed_replacement_changes_nothing(self):
        made = self.created({"key": "kept", "label": "Kept", "attributes": [{"key": "a"}]})
        self.assertInvalid(self.patch("kept", {"label": "New", "attributes": [
            {"key": "b"}, {"key": "b"}]}), "attributes[1].key")
        self.assertEqual(self.assertStatus(self.call("GET", "/acme/entities/kept"),
                                           200)["entity"], made)

    def test_required_fields_unknown_fields_and_key_pattern(self):
        self.assertInvalid(self.create({}), "key", "label")
        self.assertInvalid(self.create({"key": "x", "label": "x", "name": "n"}), "name")
        self.created({"key": "patch-unknown", "label": "x"})
        self.assertInvalid(self.patch("patch-unknown", {"key": "other"}), "key")
        for key in ("Upper", "-lead", "trail-", "a_b"):
            with self.subTest(key=key):
                self.assertInvalid(self.create({"key": key, "label": "x"}), "key")

    def test_bad_json_is_400(self):
        self.assertV1Error(self.call("POST", "/acme/entities", "member", raw=b"{"), 400)
        self.created({"key": "bad-json", "label": "x"})
        self.assertV1Error(self.call("PATCH", "/acme/entities/bad-json", "member",
                                     raw=b'{"label": }'), 400)
        self.assertInvalid(self.call("POST", "/acme/entities", "member", raw=b'"just a string"'))

    # ---- authorization and isolation ----

    def test_roles_and_scopes(self):
        for token in ("owner", "admin", "member", "org"):
            with self.subTest(token=token):
                self.created({"key": f"by-{token}", "label": "x"}, token=token)
        for token in ("viewer", "readonly"):
            with self.subTest(token=token):
                self.assertV1Error(self.create({"key": f"by-{token}", "label": "x"}, token), 403)
                self.assertV1Error(self.patch("by-member", {"label": "y"}, token), 403)
                self.assertV1Error(self.call("DELETE", "/acme/entities/by-member", token), 403)
                self.assertStatus(self.call("GET", "/acme/entities", token), 200)
                self.assertStatus(self.call("GET", "/acme/entities/by-member", token), 200)
        self.assertV1Error(self.call("GET", "/acme/entities", None), 401)

    def test_other_organizations_are_isolated(self):
        self.created({"key": "same", "label": "Acme's"})
        self.created({"key": "same", "label": "Globex's"}, token="outsider", org="globex")
        listed = self.assertStatus(self.call("GET", "/globex/entities", "outsider"),
                                   200)["entities"]
        self.assertEqual([(e["key"], e["label"]) for e in listed], [("same", "Globex's")])
        self.assertEqual(self.assertStatus(self.call("GET", "/acme/entities/same"),
                                           200)["entity"]["label"], "Acme's")
        for token in ("outsider", "outsider_org"):
            with self.subTest(token=token):
                self.assertV1Error(self.call("GET", "/acme/entities", token), 404)
                self.assertV1Error(self.patch("same", {"label": "stolen"}, token), 404)
                self.assertV1Error(self.call("DELETE", "/acme/entities/same", token), 404)
        self.assertV1Error(self.call("GET", "/no-such-org/entities"), 404)


if __name__ == "__main__":
    unittest.main()
