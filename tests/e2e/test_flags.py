"""test_flags.py - end-to-end tests of /v1/orgs/{org}/flags: create (defaults
per doc/choices.md "Variants and keys"), list (value, names, usage),
detail, update, delete, archive and restore, usage; every limit at its
boundary, unknown fields, bad JSON; roles, scopes and isolation between
organizations; a failed write leaves nothing behind; the OpenAPI document.

Run by tests/e2e/run (each class has its own database and ensignd).
"""

import json
import re
import unittest

import harness
from flagfixture import (ENV_CONFIG_FIELDS, ENVIRONMENT_KEYS, FLAG_DETAIL_FIELDS,
                         FLAG_DETAIL_STALE_FIELDS, FLAG_LIST_FIELDS, REVISION_FIELDS,
                         VARIANT_FIELDS, FlagTestCase)


class FlagCreateTest(FlagTestCase):

    def test_boolean_flag_defaults(self):
        made = self.flag("new-checkout", description="The new checkout", tags=["checkout"])
        self.assertEqual(set(made), FLAG_DETAIL_FIELDS)
        self.assertEqual(made["key"], "new-checkout")
        self.assertEqual(made["name"], "new-checkout")
        self.assertEqual(made["type"], "boolean")
        self.assertEqual(made["description"], "The new checkout")
        self.assertEqual(made["tags"], ["checkout"])
        self.assertFalse(made["permanent"])
        self.assertIsNone(made["archivedAt"])
        self.assertIsNone(made["maintainerUserId"])
        self.assertEqual(made["createdByUserId"], self.user_ids["member"])
        self.assertEqual(made["createdByName"], "Mel Member")
        self.assertIsoMillis(made["createdAt"])
        self.assertIsoMillis(made["updatedAt"])

        detail = self.detail("new-checkout")
        self.assertEqual(set(detail), {"flag", "revisions", "variants", "environments"})
        self.assertEqual(set(detail["flag"]), FLAG_DETAIL_STALE_FIELDS)
        self.assertIsNone(detail["flag"]["stale"])  # just created
        self.assertEqual({k: v for k, v in detail["flag"].items() if k != "stale"}, made)
        self.assertEqual([(v["key"], v["value"]) for v in detail["variants"]],
                         [("on", True), ("off", False)])
        for variant in detail["variants"]:
            self.assertEqual(set(variant), VARIANT_FIELDS)
        self.assertEqual([e["key"] for e in detail["environments"]], ENVIRONMENT_KEYS)
        for env in detail["environments"]:
            self.assertEqual(set(env), ENV_CONFIG_FIELDS)
            self.assertFalse(env["enabled"])
            self.assertEqual(env["defaultServe"], {"variant": "on"})
            self.assertEqual(env["defaultVariantKey"], "on")
            self.assertEqual(env["offVariantKey"], "off")
            self.assertEqual(env["rules"], [])
        [revision] = detail["revisions"]
        self.assertEqual(set(revision), REVISION_FIELDS)
        self.assertEqual(revision["action"], "flag.created")
        self.assertEqual(revision["userName"], "Mel Member")

    def test_type_defaults_to_boolean_and_description_to_null(self):
        made = self.flag("plain")
        self.assertEqual(made["type"], "boolean")
        self.assertIsNone(made["description"])
        self.assertEqual(made["tags"], [])

    def test_string_variant_keys_and_defaults(self):
        self.flag("color", type="string", variants=[
            {"value": "Red"}, {"value": "blue", "label": "Deep Blue!"}, {"value": "red"},
            {"value": "***"}])
        detail = self.detail("color")
        self.assertEqual([(v["key"], v["value"], v["label"], v["sortOrder"])
                          for v in detail["variants"]],
                         [("red", "Red", None, 0), ("deep-blue", "blue", "Deep Blue!", 1),
                          ("red-2", "red", None, 2), ("variant-4", "***", None, 3)])
        for env in detail["environments"]:
            self.assertEqual(env["defaultServe"], {"variant": "red"})
            self.assertEqual(env["offVariantKey"], "deep-blue")

    def test_single_variant_is_default_and_off(self):
        self.flag("solo", type="string", variants=[{"value": "only"}])
        env = self.env_config("solo")
        self.assertEqual((env["defaultVariantKey"], env["offVariantKey"]), ("only", "only"))

    def test_flag_without_variants(self):
        self.flag("empty", type="json")
        detail = self.detail("empty")
        self.assertEqual(detail["variants"], [])
        env = detail["environments"][0]
        self.assertEqual(env["defaultServe"], {})
        self.assertIsNone(env["defaultVariantKey"])
        self.assertIsNone(env["offVariantKey"])

    def test_number_and_json_values(self):
        self.flag("limit", type="number", variants=[{"value": 10.0}, {"value": 2.5},
                                                   {"value": 1e3}])
        values = [v["value"] for v in self.detail("limit")["variants"]]
        self.assertEqual(values, [10, 2.5, 1000])
        self.assertEqual([v["key"] for v in self.detail("limit")["variants"]],
                         ["variant-1", "variant-2", "variant-3"])
        self.flag("layout", type="json", variants=[{"value": {"a": 1}}, {"value": [1, 2]}])

    def test_values_must_match_the_type(self):
        cases = [("string", 5), ("number", "5"), ("json", 5), ("json", "x"), ("json", None),
                 ("string", None), ("number", True)]
        for kind, value in cases:
            with self.subTest(kind=kind, value=value):
                self.assertInvalid(self.create_flag("typed", type=kind,
                                                    variants=[{"value": value}]),
                                   "variants[0].value")

    def test_variant_value_is_required(self):
        self.assertInvalid(self.create_flag("novalue", type="string",
                                            variants=[{"label": "x"}]), "variants[0].value")

    def test_boolean_flags_refuse_variants(self):
        self.assertInvalid(self.create_flag("boolvar", variants=[{"value": True}]), "variants")
        self.flag("boolempty", variants=[])

    def test_unknown_type(self):
        errors = self.assertInvalid(self.create_flag("typo", type="integer",
                                                     variants=[{"value": 1}]), "type")
        self.assertEqual(set(errors), {"type"})

    def test_slug_boundaries(self):
        self.flag("a" * 63)
        self.assertInvalid(self.create_flag("b" * 64), "slug")
        for bad in ("", "Upper", "-lead", "trail-", "under_score", "dot.ted", 5):
            with self.subTest(slug=bad):
                self.assertInvalid(self.create_flag(bad), "slug")
        self.assertInvalid(self.call("POST", "/acme/flags", "member", body={}), "slug")

    def test_description_boundaries(self):
        self.flag("desc-ok", description="d" * 2000)
        self.flag("desc-utf8", description="é" * 2000)
        self.assertInvalid(self.create_flag("desc-long", description="d" * 2001), "description")
        self.flag("desc-null", description=None)

    def test_tag_boundaries(self):
        self.flag("tags-ok", tags=[f"t{i}" for i in range(50)])
        self.assertInvalid(self.create_flag("tags-many", tags=[f"t{i}" for i in range(51)]),
                           "tags")
        self.flag("tag-long-ok", tags=["x" * 50])
        self.assertInvalid(self.create_flag("tag-long", tags=["x" * 51]), "tags[0]")
        self.assertInvalid(self.create_flag("tag-empty", tags=["ok", ""]), "tags[1]")
        self.assertInvalid(self.create_flag("tag-type", tags="x"), "tags")

    def test_variant_count_and_label_boundaries(self):
        self.flag("v64", type="string", variants=[{"value": f"v{i}"} for i in range(64)])
        self.assertInvalid(self.create_flag("v65", type="string",
                                            variants=[{"value": f"v{i}"} for i in range(65)]),
                           "variants")
        self.flag("label-ok", type="string", variants=[{"value": "x", "label": "l" * 120}])
        self.assertInvalid(self.create_flag("label-long", type="string",
                                            variants=[{"value": "x", "label": "l" * 121}]),
                           "variants[0].label")

    def test_unknown_fields_are_422(self):
        errors = self.assertInvalid(self.create_flag("extra", name="Named", color="red"),
                                    "name", "color")
        self.assertEqual(set(errors), {"name", "color"})
        self.assertInvalid(self.create_flag("extra2", type="string",
                                            variants=[{"value": "x", "weight": 1}]),
                           "variants[0].weight")

    def test_bad_json_is_400_and_non_object_422(self):
        self.assertV1Error(self.call("POST", "/acme/flags", "member", raw=b"{nope"), 400)
        self.assertV1Error(self.call("POST", "/acme/flags", "member", raw=b""), 400)
        self.assertInvalid(self.call("POST", "/acme/flags", "member", raw=b"[1]"), "body")

    def test_duplicate_slug_is_409(self):
        self.flag("twice")
        self.assertV1Error(self.create_flag("twice"), 409)
        # Another organization may use the same key.
        self.assertStatus(self.create_flag("twice", token="outsider", org="globex"), 201)

    def test_failed_create_leaves_nothing(self):
        before = self.count_rows("SELECT count(*) FROM flags")
        revisions = self.count_rows("SELECT count(*) FROM revisions")
        self.assertInvalid(self.create_flag("half", type="string",
                                            variants=[{"value": "ok"}, {"value": 1}]),
                           "variants[1].value")
        self.assertV1Error(self.call("GET", "/acme/flags/half"), 404)
        self.assertEqual(self.count_rows("SELECT count(*) FROM flags"), before)
        self.assertEqual(self.count_rows("SELECT count(*) FROM revisions"), revisions)
        self.assertEqual(self.count_rows("SELECT count(*) FROM variants v LEFT JOIN flags f"
                                         " ON f.id = v.flag_id WHERE f.id IS NULL"), 0)


class FlagReadTest(FlagTestCase):

    def list_item(self, key):
        """The item of flag key in GET /flags."""
        flags = self.assertStatus(self.call("GET", "/acme/flags"), 200)["flags"]
        return next(f for f in flags if f["key"] == key)

    def test_list_items(self):
        self.flag("list-bool", description="b")
        self.string_flag("list-string", "alpha", "beta")
        self.flag("list-empty", type="number")
        flags = self.assertStatus(self.call("GET", "/acme/flags", "viewer"), 200)
        self.assertEqual(set(flags), {"flags"})
        by_key = {f["key"]: f for f in flags["flags"]}
        for item in by_key.values():
            self.assertEqual(set(item), FLAG_LIST_FIELDS)
        self.assertIs(by_key["list-bool"]["value"], True)
        self.assertEqual(by_key["list-string"]["value"], "alpha")
        self.assertIsNone(by_key["list-empty"]["value"])
        self.assertEqual(by_key["list-bool"]["enabledIn"], [])
        self.assertEqual(by_key["list-bool"]["createdByName"], "Mel Member")
        self.assertIsNone(by_key["list-bool"]["maintainerName"])
        self.assertIsNone(by_key["list-bool"]["usage"])
        keys = [f["key"] for f in flags["flags"]]
        self.assertEqual(keys, sorted(keys))

    def test_list_value_is_null_for_a_rollout(self):
        self.string_flag("list-rollout", "a", "b")
        self.assertAck(self.configure("list-rollout", {"defaultServe": {"rollout": [
            {"variant": "a", "weight": 1}, {"variant": "b", "weight": 1}]}}))
        self.assertIsNone(self.list_item("list-rollout")["value"])
        # back to a single variant: the stored default_variant_key follows
        self.assertAck(self.configure("list-rollout", {"defaultVariantKey": "b"}))
        self.assertEqual(self.list_item("list-rollout")["value"], "b")

    def test_list_value_follows_every_write(self):
        # the list reads the production default's value kept on the flag
        # by triggers on variants and flag_environments (sql/0012)
        self.string_flag("list-value", "a", "b")
        def listed():
            return self.list_item("list-value")["value"]
        variant = "/acme/flags/list-value/variants/"
        self.assertEqual(listed(), "a")
        self.assertStatus(self.call("PATCH", variant + "a", "member", body={"value": "a2"}), 200)
        self.assertEqual(listed(), "a2")
        self.assertStatus(self.call("PATCH", variant + "b", "member", body={"value": "b2"}), 200)
        self.assertEqual(listed(), "a2")
        self.assertAck(self.configure("list-value", {"defaultVariantKey": "b"}))
        self.assertEqual(listed(), "b2")
        self.assertAck(self.configure("list-value", {"defaultVariantKey": "a"}, env="preview"))
        self.assertEqual(listed(), "b2")
        self.assertStatus(self.call("POST", variant[:-1], "member", body={"value": "c"}), 201)
        self.assertAck(self.call("DELETE", variant + "c", "member"))
        self.assertEqual(listed(), "b2")
        self.assertAck(self.configure("list-value", {"defaultServe": {"rollout": [
            {"variant": "a", "weight": 1}, {"variant": "b", "weight": 3}]}}))
        self.assertIsNone(listed())
        self.assertAck(self.configure("list-value", {"defaultVariantKey": "a"}))
        self.assertEqual(listed(), "a2")
        self.assertEqual(self.count_rows(
            "SELECT count(*) FROM flags"
            " WHERE production_value IS DISTINCT FROM ensign_production_value(id)"), 0)

    def test_list_tags_follow_every_write(self):
        # the list reads the tags' JSON text kept by a trigger (sql/0009)
        self.flag("list-tags", tags=["a", "quote\"d", "sp ace"])
        def listed():
            return self.list_item("list-tags")["tags"]
        self.assertEqual(listed(), ["a", "quote\"d", "sp ace"])
        self.assertStatus(self.call("PATCH", "/acme/flags/list-tags", "member",
                                    body={"tags": ["b"]}), 200)
        self.assertEqual(listed(), ["b"])
        self.assertStatus(self.call("PATCH", "/acme/flags/list-tags", "member",
                                    body={"name": "Renamed"}), 200)
        self.assertEqual(listed(), ["b"])
        self.assertStatus(self.call("PATCH", "/acme/flags/list-tags", "member",
                                    body={"tags": []}), 200)
        self.assertEqual(listed(), [])

    def test_usage_in_list_and_usage_endpoint(self):
        self.flag("counted")
        self.database.query(
            "INSERT INTO usage_counters (flag_id, environment_id, variant_key, hour, count,"
            " last_seen_at)"
            " SELECT f.id, e.id, x.k, date_trunc('hour', now()) - x.h * interval '1 hour', x.c,"
            "        now()"
            "   FROM flags f JOIN environments e ON e.org_id = f.org_id AND e.key = 'production',"
            "        (VALUES ('on', 0, 30), ('off', 0, 6), ('on', 2, 12), ('on', 100, 1000))"
            "        AS x(k, h, c)"
            "  WHERE f.key = 'counted'")
        flags = self.assertStatus(self.call("GET", "/acme/flags"), 200)["flags"]
        usage = next(f for f in flags if f["key"] == "counted")["usage"]
        self.assertEqual(set(usage), {"total", "checksPerHour", "lastSeenAt", "series"})
        self.assertEqual(usage["total"], 1048)
        self.assertEqual(len(usage["series"]), 24)
        self.assertEqual(usage["series"][-1], 36)
        self.assertEqual(usage["series"][-3], 12)
        self.assertAlmostEqual(usage["checksPerHour"], 48 / 24, places=2)
        self.assertIsoMillis(usage["lastSeenAt"])

        body = self.assertStatus(self.call("GET", "/acme/flags/counted/usage", "viewer"), 200)
        self.assertEqual(set(body), {"usage"})
        usage = body["usage"]
        self.assertEqual(set(usage), {"total", "lastSeenAt", "environments"})
        self.assertEqual(usage["total"], 1048)
        self.assertEqual([e["key"] for e in usage["environments"]], ENVIRONMENT_KEYS)
        production = usage["environments"][0]
        self.assertEqual(set(production), {"key", "name", "total", "lastSeenAt", "variants",
                                           "series"})
        self.assertEqual(production["total"], 1048)
        self.assertEqual(production["variants"], [{"key": "on", "count": 1042},
                                                  {"key": "off", "count": 6}])
        self.assertEqual(len(production["series"]), 30)
        self.assertRegex(production["series"][-1]["day"], r"^\d{4}-\d\d-\d\d$")
        self.assertEqual(sum(d["count"] for d in production["series"]), 1048)
        preview = usage["environments"][1]
        self.assertEqual((preview["total"], preview["lastSeenAt"], preview["variants"]),
                         (0, None, []))


    def list_usage(self, key):
        return self.list_item(key)["usage"]

    def count_usage(self, key, environment, hours_ago, count):
        self.database.query(
            "INSERT INTO usage_counters (flag_id, environment_id, variant_key, hour, count,"
            " last_seen_at)"
            " SELECT f.id, e.id, 'on', date_trunc('hour', now()) - %d * interval '1 hour', %d,"
            "        now()"
            "   FROM flags f JOIN environments e ON e.org_id = f.org_id AND e.key = '%s'"
            "  WHERE f.key = '%s'" % (hours_ago, count, environment, key))

    def test_list_usage_follows_every_change_of_the_counters(self):
        # The list reads a per-flag roll-up (sql/0008) kept by a trigger:
        # inserts, updates and deletes of counters, hours outside the last
        # 24, and a clock ahead (an hour after the current one) all show.
        self.flag("rolled")
        self.count_usage("rolled", "production", 1, 2)
        self.count_usage("rolled", "development", 1, 1)
        self.count_usage("rolled", "production", 30, 500)
        usage = self.list_usage("rolled")
        self.assertEqual(usage["total"], 503)
        self.assertEqual(usage["series"], [0] * 22 + [3, 0])
        self.assertEqual(usage["checksPerHour"], 0.13)  # round(3 / 24.0, 2), half up
        self.database.query(
            "UPDATE usage_counters SET count = count + 4 FROM flags f"
            " WHERE f.id = usage_counters.flag_id AND f.key = 'rolled' AND count = 1")
        self.assertEqual(self.list_usage("rolled")["series"], [0] * 22 + [7, 0])
        self.count_usage("rolled", "production", -2, 5)
        usage = self.list_usage("rolled")
        self.assertEqual(usage["series"], [0] * 22 + [7, 0])
        self.assertEqual(usage["total"], 512)
        self.database.query(
            "DELETE FROM usage_counters USING flags f"
            " WHERE f.id = usage_counters.flag_id AND f.key = 'rolled'"
            "   AND usage_counters.hour <> date_trunc('hour', now()) - interval '30 hours'")
        usage = self.list_usage("rolled")
        self.assertEqual(usage["series"], [0] * 24)
        self.assertEqual(usage["checksPerHour"], 0)
        self.assertEqual(usage["total"], 500)
    def test_list_usage_follows_the_flushers_additive_upserts(self):
        self.flag("upserted")
        upsert = ("INSERT INTO usage_counters (flag_id, environment_id, variant_key, hour, count,"
                  " last_seen_at)"
                  " SELECT f.id, e.id, 'on', date_trunc('hour', now()), {n}, now()"
                  "   FROM flags f JOIN environments e ON e.org_id = f.org_id"
                  "  WHERE f.key = 'upserted' AND e.key = '{env}'"
                  " ON CONFLICT (flag_id, environment_id, variant_key, hour) DO UPDATE"
                  " SET count = usage_counters.count + EXCLUDED.count,"
                  "     last_seen_at = greatest(usage_counters.last_seen_at,"
                  "                             EXCLUDED.last_seen_at)")

        def usage():
            flags = self.assertStatus(self.call("GET", "/acme/flags"), 200)["flags"]
            return next(f for f in flags if f["key"] == "upserted")["usage"]

        self.database.query(upsert.format(n=5, env="production"))
        self.database.query(upsert.format(n=7, env="production"))
        self.database.query(upsert.format(n=1, env="preview"))
        self.assertEqual((usage()["total"], usage()["series"][-1]), (13, 13))
        # Removing an environment takes its counts out of the list's summary.
        self.database.query("DELETE FROM environments WHERE key = 'preview' AND org_id ="
                            " (SELECT id FROM orgs WHERE slug = 'acme')")
        self.assertEqual((usage()["total"], usage()["series"][-1]), (12, 12))
        self.database.query("INSERT INTO environments (org_id, key, name, sort_order)"
                            " SELECT id, 'preview', 'Preview', 1 FROM orgs WHERE slug = 'acme'")

    def test_usage_of_unused_flag_and_missing_flag(self):
        self.flag("unused")
        usage = self.assertStatus(self.call("GET", "/acme/flags/unused/usage"), 200)["usage"]
        self.assertEqual((usage["total"], usage["lastSeenAt"]), (0, None))
        self.assertV1Error(self.call("GET", "/acme/flags/nope/usage"), 404)

    def test_missing_flag_is_404(self):
        self.assertV1Error(self.call("GET", "/acme/flags/nope"), 404)
        self.assertV1Error(self.call("GET", "/acme/flags/Not%20A%20Key"), 404)


class FlagUpdateTest(FlagTestCase):

    def test_patch_fields(self):
        self.flag("patched", description="old", tags=["a"])
        changed = self.assertStatus(self.call("PATCH", "/acme/flags/patched", "member", body={
            "name": "Patched Flag", "description": None, "permanent": True,
            "tags": ["b", "c"], "maintainerUserId": self.user_ids["viewer"]}), 200)["flag"]
        self.assertEqual(set(changed), FLAG_DETAIL_FIELDS)
        self.assertEqual(changed["name"], "Patched Flag")
        self.assertIsNone(changed["description"])
        self.assertTrue(changed["permanent"])
        self.assertEqual(changed["tags"], ["b", "c"])
        self.assertEqual(changed["maintainerUserId"], self.user_ids["viewer"])
        self.assertEqual(changed["maintainerName"], "Vic Viewer")
        self.assertEqual(changed["key"], "patched")
        revision = self.revisions("patched")[0]
        self.assertEqual(revision["action"], "flag.updated")
        self.assertIn("name: patched → Patched Flag", revision["changes"])
        cleared = self.assertStatus(self.call("PATCH", "/acme/flags/patched", "member",
                                              body={"maintainerUserId": None}), 200)["flag"]
        self.assertIsNone(cleared["maintainerUserId"])
        self.assertEqual(cleared["name"], "Patched Flag")

    def test_patch_boundaries(self):
        self.flag("bounds")
        path = "/acme/flags/bounds"
        self.assertStatus(self.call("PATCH", path, "member", body={"name": "n" * 200}), 200)
        self.assertInvalid(self.call("PATCH", path, "member", body={"name": "n" * 201}), "name")
        self.assertInvalid(self.call("PATCH", path, "member", body={"name": ""}), "name")
        self.assertInvalid(self.call("PATCH", path, "member", body={"name": None}), "name")
        self.assertInvalid(self.call("PATCH", path, "member",
                                     body={"description": "d" * 2001}), "description")
        self.assertInvalid(self.call("PATCH", path, "member",
                                     body={"tags": ["t"] * 51}), "tags")
        self.assertInvalid(self.call("PATCH", path, "member", body={"permanent": "yes"}),
                           "permanent")
        self.assertInvalid(self.call("PATCH", path, "member",
                                     body={"maintainerUserId": "not-a-uuid"}),
                           "maintainerUserId")
        self.assertInvalid(self.call("PATCH", path, "member",
                                     body={"maintainerUserId": self.outsider.user_id}),
                           "maintainerUserId")
        self.assertInvalid(self.call("PATCH", path, "member", body={"key": "other"}), "key")
        self.assertInvalid(self.call("PATCH", path, "member", body={"type": "string"}), "type")
        self.assertV1Error(self.call("PATCH", path, "member", raw=b"nope"), 400)
        self.assertEqual(self.detail("bounds")["flag"]["name"], "n" * 200)

    def test_patch_missing_flag_is_404(self):
        self.assertV1Error(self.call("PATCH", "/acme/flags/nope", "member", body={"name": "x"}),
                           404)

    def test_patch_allowed_while_archived(self):
        self.flag("archived-patch")
        self.archive("archived-patch")
        changed = self.assertStatus(self.call("PATCH", "/acme/flags/archived-patch", "member",
                                              body={"name": "Still editable"}), 200)["flag"]
        self.assertEqual(changed["name"], "Still editable")
        self.assertIsNotNone(changed["archivedAt"])


class ListValueMigrationTest(FlagTestCase):
    """A database as 0011 left it, with flags, then `ensignctl migrate`."""

    def test_migration_fills_the_value_of_existing_flags(self):
        self.flag("old-bool")
        self.string_flag("old-string", "a", "b")
        self.assertAck(self.configure("old-string", {"defaultVariantKey": "b"}))
        self.string_flag("old-rollout", "a", "b")
        self.assertAck(self.configure("old-rollout", {"defaultServe": {"rollout": [
            {"variant": "a", "weight": 1}, {"variant": "b", "weight": 1}]}}))
        self.database.query(
            "DROP TRIGGER variants_production_value ON variants;"
            " DROP TRIGGER flag_environments_production_value ON flag_environments;"
            " DROP FUNCTION ensign_flags_production_value();"
            " ALTER TABLE flags DROP COLUMN production_value;"
            " DROP FUNCTION ensign_production_value(uuid);"
            " DELETE FROM schema_migrations WHERE name = '0012_list_value'")
        self.assertIn("0012_list_value", harness.ensignctl(self.server.config_path, "migrate"))
        flags = self.assertStatus(self.call("GET", "/acme/flags"), 200)["flags"]
        values = {f["key"]: f["value"] for f in flags}
        self.assertEqual(values, {"old-bool": True, "old-string": "b", "old-rollout": None})


class FlagLifecycleTest(FlagTestCase):

    def test_archive_and_restore(self):
        self.flag("cycle")
        archived = self.assertStatus(self.call("POST", "/acme/flags/cycle/archive", "member"),
                                     200)["flag"]
        self.assertIsoMillis(archived["archivedAt"])
        again = self.assertStatus(self.call("POST", "/acme/flags/cycle/archive", "member"),
                                  200)["flag"]
        self.assertEqual(again["archivedAt"], archived["archivedAt"])

        active = [f["key"] for f in self.assertStatus(self.call("GET", "/acme/flags"),
                                                      200)["flags"]]
        archived_list = self.assertStatus(self.call("GET", "/acme/flags?archived=true"),
                                          200)["flags"]
        self.assertNotIn("cycle", active)
        self.assertIn("cycle", [f["key"] for f in archived_list])
        self.assertIsNotNone(self.detail("cycle")["flag"]["archivedAt"])

        restored = self.assertStatus(self.call("POST", "/acme/flags/cycle/restore", "member"),
                                     200)["flag"]
        self.assertIsNone(restored["archivedAt"])
        noop = self.assertStatus(self.call("POST", "/acme/flags/cycle/restore", "member"),
                                 200)["flag"]
        self.assertIsNone(noop["archivedAt"])
        actions = [r["action"] for r in self.revisions("cycle")]
        self.assertEqual(actions, ["flag.restored", "flag.archived", "flag.created"])

    def test_archive_restore_missing_is_404(self):
        self.assertV1Error(self.call("POST", "/acme/flags/nope/archive", "member"), 404)
        self.assertV1Error(self.call("POST", "/acme/flags/nope/restore", "member"), 404)

    def test_delete(self):
        self.string_flag("doomed", "a", "b")
        self.assertStatus(self.add_rule("doomed", {"serve": {"variant": "a"}}), 201)
        self.assertAck(self.call("DELETE", "/acme/flags/doomed", "member"))
        self.assertV1Error(self.call("GET", "/acme/flags/doomed"), 404)
        self.assertV1Error(self.call("DELETE", "/acme/flags/doomed", "member"), 404)
        self.assertEqual(self.count_rows("SELECT count(*) FROM flags WHERE key = 'doomed'"), 0)
        # The key is free again.
        self.flag("doomed")

    def test_delete_archived_flag(self):
        self.flag("old-archived")
        self.archive("old-archived")
        self.assertAck(self.call("DELETE", "/acme/flags/old-archived", "member"))


class FlagAccessTest(FlagTestCase):

    @classmethod
    def prepare(cls):
        super().prepare()

    def setUp(self):
        if self.call("GET", "/acme/flags/shared").status == 404:
            self.flag("shared")

    def test_every_role_reads(self):
        for role in ("owner", "admin", "member", "viewer", "readonly", "org"):
            with self.subTest(role=role):
                self.assertStatus(self.call("GET", "/acme/flags", role), 200)
                self.assertStatus(self.call("GET", "/acme/flags/shared", role), 200)
                self.assertStatus(self.call("GET", "/acme/flags/shared/usage", role), 200)

    def test_member_and_up_write(self):
        for role in ("owner", "admin", "member", "org"):
            with self.subTest(role=role):
                made = self.assertStatus(self.create_flag(f"by-{role}", token=role), 201)
                self.assertEqual(made["flag"]["key"], f"by-{role}")
        org_made = self.detail("by-org")
        self.assertIsNone(org_made["flag"]["createdByUserId"])
        self.assertEqual(org_made["revisions"][0]["userName"], "e2e org token")

    def test_viewer_and_read_only_token_may_not_write(self):
        writes = [("POST", "/acme/flags", {"slug": "nope"}),
                  ("PATCH", "/acme/flags/shared", {"name": "x"}),
                  ("DELETE", "/acme/flags/shared", None),
                  ("POST", "/acme/flags/shared/archive", None),
                  ("POST", "/acme/flags/shared/restore", None),
                  ("POST", "/acme/flags/shared/variants", {"value": "x"}),
                  ("PATCH", "/acme/flags/shared/variants/on", {"label": "x"}),
                  ("DELETE", "/acme/flags/shared/variants/on", None),
                  ("PATCH", "/acme/flags/shared/environments/production", {"enabled": True}),
                  ("POST", "/acme/flags/shared/environments/production/rules",
                   {"serve": {"variant": "on"}}),
                  ("PUT", "/acme/flags/shared/environments/production/rules", {"rules": []}),
                  ("POST", "/acme/flags/shared/environments/production/rules/reorder",
                   {"ruleIds": []})]
        for role in ("viewer", "readonly"):
            for method, path, body in writes:
                with self.subTest(role=role, method=method, path=path):
                    self.assertV1Error(self.call(method, path, role, body=body), 403)
        self.assertStatus(self.call("GET", "/acme/flags/shared"), 200)
        self.assertFalse(self.env_config("shared")["enabled"])

    def test_other_organizations_are_invisible(self):
        for token in ("outsider", "outsider_org"):
            with self.subTest(token=token):
                self.assertV1Error(self.call("GET", "/acme/flags", token), 404)
                self.assertV1Error(self.call("GET", "/acme/flags/shared", token), 404)
                self.assertV1Error(self.call("POST", "/acme/flags", token,
                                             body={"slug": "intruder"}), 404)
                self.assertV1Error(self.call("PATCH", "/acme/flags/shared", token,
                                             body={"name": "x"}), 404)
        self.assertV1Error(self.call("GET", "/globex/flags", "member"), 404)
        self.assertV1Error(self.call("GET", "/no-such-org/flags"), 404)
        self.assertV1Error(self.call("GET", "/Not_A_Slug/flags"), 404)
        globex = self.assertStatus(self.call("GET", "/globex/flags", "outsider"), 200)["flags"]
        self.assertNotIn("shared", [f["key"] for f in globex])

    def test_missing_or_bad_token_is_401(self):
        self.assertV1Error(self.call("GET", "/acme/flags", None), 401)
        self.assertV1Error(self.call("POST", "/acme/flags", None, body={"slug": "x"}), 401)
        self.assertV1Error(self.call("GET", "/acme/flags", "svc_oat_" + "x" * 43), 401)
        self.assertV1Error(self.call("GET", "/no-such-org/flags", None), 401)

    def test_wrong_method_is_405(self):
        self.assertV1Error(self.call("PUT", "/acme/flags", "member", body={}), 405)

    def test_openapi_documents_the_routes(self):
        document = json.loads(self.server.get("/openapi.json").body)
        paths = document["paths"]
        flag = "/v1/orgs/{org}/flags/{key}"
        rules = flag + "/environments/{envKey}/rules"
        expected = {"/v1/orgs/{org}/flags": {"get", "post"},
                    flag: {"get", "patch", "delete"},
                    flag + "/usage": {"get"}, flag + "/archive": {"post"},
                    flag + "/restore": {"post"}, flag + "/variants": {"post"},
                    flag + "/variants/{variantKey}": {"patch", "delete"},
                    "/v1/orgs/{org}/environments": {"get"},
                    flag + "/environments/{envKey}": {"patch"},
                    rules: {"get", "post", "put"}, rules + "/reorder": {"post"},
                    rules + "/{ruleId}": {"patch", "delete"}}
        for path, methods in expected.items():
            with self.subTest(path=path):
                self.assertIn(path, paths)
                self.assertTrue(methods <= set(paths[path]), paths[path])
        create = paths["/v1/orgs/{org}/flags"]["post"]
        self.assertIn("201", create["responses"])
        self.assertIn("requestBody", create)


class FlagWriteRateLimitTest(FlagTestCase):

    settings = {"ratelimit_management": 3}

    def test_flag_writes_are_limited_per_token(self):
        statuses = [self.create_flag(f"limited-{i}").status for i in range(5)]
        self.assertEqual(statuses[:3], [201, 201, 201])
        self.assertEqual(statuses[3:], [429, 429])
        refused = self.create_flag("limited-x")
        self.assertV1Error(refused, 429)
        self.assertGreaterEqual(int(refused.headers.get("Retry-After")), 1)
        # Reads are not limited; another token has its own bucket.
        self.assertStatus(self.call("GET", "/acme/flags", "member"), 200)
        self.assertStatus(self.create_flag("limited-owner", token="owner"), 201)


if __name__ == "__main__":
    unittest.main()
