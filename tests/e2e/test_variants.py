"""test_variants.py - end-to-end tests of /v1/orgs/{org}/flags/{key}/variants:
create (keys from label, string value or variant-N; never reused), update,
delete (409 while referenced), the fixed variants of boolean flags (422),
values per flag type, limits, the archived 409s, revisions, 404s.

Run by tests/e2e/run (each class has its own database and ensignd).
"""

import unittest

from flagfixture import VARIANT_FIELDS, FlagTestCase


class VariantsTest(FlagTestCase):

    def variants_path(self, slug, key=None):
        return f"/acme/flags/{slug}/variants" + (f"/{key}" if key else "")

    def add(self, slug, body, token="member"):
        return self.call("POST", self.variants_path(slug), token, body=body)

    def added(self, slug, body):
        return self.assertStatus(self.add(slug, body), 201)["variant"]

    def test_create_update_delete(self):
        self.string_flag("palette", "red", "blue")
        made = self.added("palette", {"value": "green", "label": "Leaf Green"})
        self.assertEqual(set(made), VARIANT_FIELDS)
        self.assertEqual((made["key"], made["value"], made["label"], made["sortOrder"]),
                         ("leaf-green", "green", "Leaf Green", 2))
        changed = self.assertStatus(self.call("PATCH", self.variants_path("palette", "leaf-green"),
                                              "member", body={"value": "lime", "label": None}),
                                    200)["variant"]
        self.assertEqual((changed["key"], changed["value"], changed["label"]),
                         ("leaf-green", "lime", None))
        self.assertEqual(changed["id"], made["id"])
        label_only = self.assertStatus(self.call("PATCH", self.variants_path("palette", "leaf-green"),
                                                 "member", body={"label": "Lime"}), 200)["variant"]
        self.assertEqual((label_only["value"], label_only["label"]), ("lime", "Lime"))
        self.assertAck(self.call("DELETE", self.variants_path("palette", "leaf-green"), "member"))
        keys = [v["key"] for v in self.detail("palette")["variants"]]
        self.assertEqual(keys, ["red", "blue"])
        actions = [r["action"] for r in self.revisions("palette")]
        self.assertEqual(actions[:4], ["variant.deleted", "variant.updated", "variant.updated",
                                       "variant.created"])

    def test_keys_are_derived_and_never_reused(self):
        self.string_flag("keys", "one")
        self.assertEqual(self.added("keys", {"value": "Two Words"})["key"], "two-words")
        self.assertEqual(self.added("keys", {"value": "!!!"})["key"], "variant-3")
        self.assertEqual(self.added("keys", {"value": "x", "label": "One"})["key"], "one-2")
        self.assertAck(self.call("DELETE", self.variants_path("keys", "two-words"), "member"))
        self.assertEqual(self.added("keys", {"value": "two words"})["key"], "two-words-2")
        self.assertEqual(self.added("keys", {"value": "?"})["key"], "variant-6")

    def test_long_label_key_is_cut_and_suffixed(self):
        self.string_flag("long-keys", "x")
        label = "a" * 120
        first = self.added("long-keys", {"value": "1", "label": label})["key"]
        second = self.added("long-keys", {"value": "2", "label": label})["key"]
        self.assertEqual(first, "a" * 63)
        self.assertEqual(second, "a" * 61 + "-2")

    def test_number_values_are_canonical(self):
        self.flag("numbers", type="number", variants=[{"value": 1}])
        self.assertEqual(self.added("numbers", {"value": 2.0})["value"], 2)
        self.assertEqual(self.added("numbers", {"value": 2.5})["value"], 2.5)
        self.assertInvalid(self.add("numbers", {"value": "3"}), "value")

    def test_values_must_match_type(self):
        self.flag("json-values", type="json", variants=[{"value": {"a": 1}}])
        self.added("json-values", {"value": [1, 2]})
        for bad in (1, "x", True, None):
            with self.subTest(value=bad):
                self.assertInvalid(self.add("json-values", {"value": bad}), "value")
        self.assertInvalid(self.call("PATCH", self.variants_path("json-values", "variant-1"),
                                     "member", body={"value": "x"}), "value")

    def test_boundaries_and_unknown_fields(self):
        self.string_flag("bounds", "x")
        self.added("bounds", {"value": "a", "label": "l" * 120})
        self.assertInvalid(self.add("bounds", {"value": "b", "label": "l" * 121}), "label")
        self.assertInvalid(self.add("bounds", {"label": "no value"}), "value")
        self.assertInvalid(self.add("bounds", {"value": "c", "key": "mine"}), "key")
        self.assertInvalid(self.call("PATCH", self.variants_path("bounds", "x"), "member",
                                     body={"key": "y"}), "key")
        self.assertV1Error(self.call("POST", self.variants_path("bounds"), "member",
                                     raw=b"{"), 400)

    def test_boolean_variants_are_fixed(self):
        self.flag("switch")
        self.assertInvalid(self.add("switch", {"value": True}), "variants")
        self.assertInvalid(self.call("PATCH", self.variants_path("switch", "on"), "member",
                                     body={"label": "On"}), "variants")
        self.assertInvalid(self.call("DELETE", self.variants_path("switch", "off"), "member"),
                           "variants")
        self.assertEqual(len(self.detail("switch")["variants"]), 2)

    def test_delete_refused_while_referenced(self):
        self.string_flag("refs", "a", "b", "c", "d")
        # a: default serve; b: off variant; c: in a rule's rollout; d: free.
        self.assertStatus(self.add_rule("refs", {"serve": {"rollout": [
            {"variant": "c", "weight": 1}, {"variant": "a", "weight": 0}]}}, env="preview"), 201)
        for key in ("a", "b", "c"):
            with self.subTest(key=key):
                self.assertV1Error(self.call("DELETE", self.variants_path("refs", key), "member"),
                                   409)
        self.assertAck(self.call("DELETE", self.variants_path("refs", "d"), "member"))
        for env in ("production", "preview", "development"):
            self.assertAck(self.configure("refs", {"offVariantKey": "a"}, env=env))
        self.assertAck(self.call("DELETE", self.variants_path("refs", "b"), "member"))
        self.assertStatus(self.call("PUT", self.rules_path("refs", "preview"), "member",
                                    body={"rules": []}), 200)
        self.assertAck(self.call("DELETE", self.variants_path("refs", "c"), "member"))
        self.assertEqual([v["key"] for v in self.detail("refs")["variants"]], ["a"])

    def test_first_variant_of_an_empty_flag_becomes_default_and_off(self):
        self.flag("later", type="string")
        self.added("later", {"value": "first"})
        self.added("later", {"value": "second"})
        for env in self.detail("later")["environments"]:
            self.assertEqual(env["defaultServe"], {"variant": "first"})
            self.assertEqual(env["offVariantKey"], "first")

    def test_archived_flag_refuses_variant_writes(self):
        self.string_flag("frozen", "a", "b")
        self.archive("frozen")
        self.assertV1Error(self.add("frozen", {"value": "c"}), 409)
        self.assertV1Error(self.call("PATCH", self.variants_path("frozen", "a"), "member",
                                     body={"label": "A"}), 409)
        self.assertV1Error(self.call("DELETE", self.variants_path("frozen", "b"), "member"), 409)
        self.assertEqual(len(self.detail("frozen")["variants"]), 2)

    def test_missing_flag_or_variant_is_404(self):
        self.string_flag("present", "a")
        self.assertV1Error(self.add("absent", {"value": "x"}), 404)
        self.assertV1Error(self.call("PATCH", self.variants_path("present", "zz"), "member",
                                     body={"label": "x"}), 404)
        self.assertV1Error(self.call("DELETE", self.variants_path("present", "zz"), "member"),
                           404)
        self.assertV1Error(self.call("DELETE", self.variants_path("absent", "a"), "member"), 404)

    def test_other_organization_is_404(self):
        self.string_flag("mine", "a")
        self.assertV1Error(self.add("mine", {"value": "x"}, token="outsider"), 404)


if __name__ == "__main__":
    unittest.main()
