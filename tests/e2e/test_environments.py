"""test_environments.py - end-to-end tests of GET /v1/orgs/{org}/environments
and PATCH /v1/orgs/{org}/flags/{key}/environments/{envKey}: enabled, the
default serve (by key or as a serve object), the off variant, validation,
the archived 409, revisions, and the configuration generation that a
write moves (read with psql) so the refresher rebuilds the snapshot.

Run by tests/e2e/run (each class has its own database and ensignd).
"""

import unittest

from flagfixture import ENVIRONMENT_KEYS, FlagTestCase


class EnvironmentListTest(FlagTestCase):

    def test_defaults_listed_in_order(self):
        body = self.assertStatus(self.call("GET", "/acme/environments", "viewer"), 200)
        self.assertEqual(set(body), {"environments"})
        envs = body["environments"]
        self.assertEqual([e["key"] for e in envs], ENVIRONMENT_KEYS)
        self.assertEqual([e["name"] for e in envs], ["Production", "Preview", "Development"])
        for env in envs:
            self.assertEqual(set(env), {"id", "key", "name", "createdAt"})
            self.assertIsoMillis(env["createdAt"])

    def test_organization_without_environments_gets_the_defaults(self):
        self.database.query("DELETE FROM environments WHERE org_id ="
                            " (SELECT id FROM orgs WHERE slug = 'globex')")
        envs = self.assertStatus(self.call("GET", "/globex/environments", "outsider"),
                                 200)["environments"]
        self.assertEqual([e["key"] for e in envs], ENVIRONMENT_KEYS)

    def test_new_environment_configures_existing_flags(self):
        self.string_flag("pre-existing", "a", "b")
        self.database.query("INSERT INTO environments (org_id, key, name, sort_order)"
                            " SELECT id, 'staging', 'Staging', 5 FROM orgs WHERE slug = 'acme'")
        staging = self.env_config("pre-existing", "staging")
        self.assertEqual((staging["enabled"], staging["defaultServe"], staging["offVariantKey"]),
                         (False, {"variant": "a"}, "b"))
        # a new environment's rows leave the list's value (sql/0012) as it was
        self.assertEqual(self.database.query(
            "SELECT production_value = ensign_production_value(id) AND production_value = '\"a\"'"
            " FROM flags WHERE key = 'pre-existing'"), "t")

    def test_isolation_and_auth(self):
        self.assertV1Error(self.call("GET", "/acme/environments", "outsider"), 404)
        self.assertV1Error(self.call("GET", "/acme/environments", None), 401)


class ConfigureTest(FlagTestCase):

    def test_turn_on_and_off(self):
        self.flag("toggle")
        generation = self.generation()
        self.assertAck(self.configure("toggle", {"enabled": True}))
        self.assertGreater(self.generation(), generation)
        env = self.env_config("toggle")
        self.assertTrue(env["enabled"])
        others = [e for e in self.detail("toggle")["environments"] if e["key"] != "production"]
        self.assertTrue(all(not e["enabled"] for e in others))
        revision = self.revisions("toggle")[0]
        self.assertEqual(revision["action"], "environment.updated")
        self.assertEqual(revision["summary"], "Turned on in Production")
        self.assertEqual(revision["changes"], ["enabled: false → true"])
        self.assertAck(self.configure("toggle", {"enabled": False}))
        self.assertEqual(self.revisions("toggle")[0]["summary"], "Turned off in Production")

    def test_noop_write_does_not_move_the_generation(self):
        self.flag("steady")
        self.assertAck(self.configure("steady", {"enabled": False}))
        generation = self.generation()
        revisions = len(self.revisions("steady"))
        self.assertAck(self.configure("steady", {"enabled": False, "offVariantKey": "off"}))
        self.assertAck(self.configure("steady", {}))
        self.assertEqual(self.generation(), generation)
        self.assertEqual(len(self.revisions("steady")), revisions)

    def test_default_and_off_variants(self):
        self.string_flag("servings", "a", "b", "c")
        self.assertAck(self.configure("servings", {"defaultVariantKey": "c",
                                                   "offVariantKey": "a"}, env="preview"))
        env = self.env_config("servings", "preview")
        self.assertEqual((env["defaultVariantKey"], env["defaultServe"], env["offVariantKey"]),
                         ("c", {"variant": "c"}, "a"))
        split = {"rollout": [{"variant": "a", "weight": 3}, {"variant": "b", "weight": 1}],
                 "bucketBy": "orgId"}
        self.assertAck(self.configure("servings", {"defaultServe": split}, env="preview"))
        env = self.env_config("servings", "preview")
        self.assertIsNone(env["defaultVariantKey"])
        self.assertEqual(env["defaultServe"], split)
        self.assertAck(self.configure("servings", {"defaultServe": {"variant": "b"}},
                                      env="preview"))
        self.assertEqual(self.env_config("servings", "preview")["defaultVariantKey"], "b")
        self.assertEqual(self.env_config("servings")["defaultVariantKey"], "a")

    def test_validation(self):
        self.string_flag("checked", "a", "b")
        cases = {"defaultVariantKey": {"defaultVariantKey": "zz"},
                 "offVariantKey": {"offVariantKey": "zz"},
                 "enabled": {"enabled": "yes"},
                 "defaultServe": {"defaultServe": {}},
                 "defaultServe.variant": {"defaultServe": {"variant": "zz"}},
                 "defaultServe.rollout": {"defaultServe": {"rollout": [
                     {"variant": "a", "weight": 0}]}},
                 "color": {"color": "red"}}
        for field, body in cases.items():
            with self.subTest(field=field):
                self.assertInvalid(self.configure("checked", body), field)
        self.assertInvalid(self.configure("checked", {"defaultVariantKey": "a",
                                                      "defaultServe": {"variant": "b"}}),
                           "defaultServe")
        self.assertInvalid(self.configure("checked", {"offVariantKey": None}), "offVariantKey")
        self.assertV1Error(self.call("PATCH", "/acme/flags/checked/environments/production",
                                     "member", raw=b"{x"), 400)
        env = self.env_config("checked")
        self.assertEqual((env["enabled"], env["defaultVariantKey"], env["offVariantKey"]),
                         (False, "a", "b"))

    def test_archived_flag_is_409_and_missing_is_404(self):
        self.flag("parked")
        self.archive("parked")
        self.assertV1Error(self.configure("parked", {"enabled": True}), 409)
        self.assertFalse(self.env_config("parked")["enabled"])
        self.assertV1Error(self.configure("nope", {"enabled": True}), 404)
        self.assertV1Error(self.configure("parked", {"enabled": True}, env="staging"), 404)

    def test_roles(self):
        self.flag("guarded")
        self.assertV1Error(self.configure("guarded", {"enabled": True}, token="viewer"), 403)
        self.assertV1Error(self.configure("guarded", {"enabled": True}, token="readonly"), 403)
        self.assertV1Error(self.configure("guarded", {"enabled": True}, token="outsider"), 404)
        self.assertAck(self.configure("guarded", {"enabled": True}, token="org"))


if __name__ == "__main__":
    unittest.main()
