"""test_stale_unknown.py - end-to-end tests of stale flags and unknown flag
keys (doc/api.md; doc/choices.md "Stale and unknown flags"; sql/0015).

Stale: every flag list item and the flag detail carry stale (null or
{reason, since}); never_evaluated, unused and fully_rolled_out, each aged
by moving the database's own times back (created_at, usage last seen, the
environment's rolled_out_since), with stale_after_days = 2 in the test
configuration; the moment an environment becomes fully rolled out is
written by the writes (enable, default serve, rules), and a change of the
served variant, a rule or a second enabled environment ends it; permanent
flags are never stale; ?stale=true lists only the stale ones.

Unknown flags: single evaluations of keys that name no flag are counted per
environment and listed by GET /v1/orgs/{org}/unknown-flags, most recently
seen first, with ?environment=; a known flag, a bulk evaluation and a
hostile key (too long, NUL, not UTF-8, outside the key pattern) add
nothing; creating the flag ends the listing; at most 1,000 keys per
environment, the least recently seen dropped; roles and organizations.

Run by tests/e2e/run (each class has its own database and ensignd).
"""

import time
import urllib.parse

import harness
from flagfixture import FlagTestCase

STALE_DAYS = 2
FLUSH_MS = 200


class StaleUnknownTestCase(FlagTestCase):
    settings = {"stale_after_days": STALE_DAYS, "usage_flush_interval_ms": FLUSH_MS}

    def sql(self, text):
        return self.database.query(text)

    def flag_id(self, key, org="acme"):
        return self.sql("SELECT f.id FROM flags f JOIN orgs o ON o.id = f.org_id"
                        f" WHERE o.slug = '{org}' AND f.key = '{key}'")

    def listed(self, query="", token="viewer"):
        body = self.assertStatus(self.call("GET", "/acme/flags" + query, token), 200)
        return {f["key"]: f for f in body["flags"]}

    def stale(self, key):
        """The flag's stale as the list and the detail show it (the same)."""
        item = self.listed()[key]["stale"]
        self.assertEqual(self.detail(key)["flag"]["stale"], item)
        return item

    def iso(self, expression):
        return self.sql(f"SELECT ensign_iso({expression})")

    def assertStale(self, key, reason, since_sql):
        stale = self.stale(key)
        self.assertEqual(stale, {"reason": reason, "since": self.iso(since_sql)}, key)

    def rolled_out_since(self, key, env=None):
        """The moment as text, None for NULL."""
        if env is None:
            return self.sql(f"SELECT rolled_out_since FROM flags"
                            f" WHERE id = '{self.flag_id(key)}'") or None
        return self.sql("SELECT fe.rolled_out_since FROM flag_environments fe"
                        " JOIN environments e ON e.id = fe.environment_id"
                        f" WHERE fe.flag_id = '{self.flag_id(key)}' AND e.key = '{env}'") or None

    def age_rollout(self, key, days):
        self.sql("UPDATE flag_environments SET rolled_out_since = rolled_out_since"
                 f" - interval '{days} days' WHERE flag_id = '{self.flag_id(key)}'"
                 " AND rolled_out_since IS NOT NULL")

    def sdk_key(self, env, token="admin", org="acme"):
        body = self.assertStatus(self.call("POST", f"/{org}/sdk-keys", token,
                                           body={"name": f"sdk {env}", "environment": env}), 201)
        sdk = body["key"]["token"]
        # PROBE is no key (never counted): 404 once the SDK key is served
        self.assertTrue(harness.wait_for(lambda: self.evaluate(sdk, "PROBE").status == 404, 10),
                        "the SDK key never reached the snapshot")
        return sdk

    def evaluate(self, sdk, key):
        return self.server.request("POST", f"/ofrep/v1/evaluate/flags/{key}",
                                   body={"context": {"targetingKey": "u1"}},
                                   headers={"Authorization": f"Bearer {sdk}"})

    def unknown(self, query="", token="viewer", org="acme"):
        body = self.assertStatus(self.call("GET", f"/{org}/unknown-flags{query}", token), 200)
        self.assertEqual(set(body), {"flags"})
        for item in body["flags"]:
            self.assertEqual(set(item), {"key", "environment", "count", "lastSeenAt"})
            self.assertIsoMillis(item["lastSeenAt"])
        return body["flags"]

    def wait_unknown(self, predicate, query="", org="acme", token="viewer", timeout=10):
        found = []

        def ready():
            found[:] = self.unknown(query, token=token, org=org)
            return predicate(found)
        self.assertTrue(harness.wait_for(ready, timeout, 0.1), found)
        return found


class StaleFlagsTest(StaleUnknownTestCase):

    def test_a_new_flag_is_not_stale(self):
        made = self.flag("fresh-flag")
        self.assertIsNone(self.stale("fresh-flag"))
        self.assertNotIn("fresh-flag", self.listed("?stale=true"))
        self.assertNotIn("stale", made)  # the {flag} answers of writes keep their form

    def test_never_evaluated_counts_from_creation(self):
        self.flag("never-used")
        fid = self.flag_id("never-used")
        self.sql(f"UPDATE flags SET created_at = now() - interval '{STALE_DAYS} days 1 hour'"
                 f" WHERE id = '{fid}'")
        self.assertStale("never-used", "never_evaluated",
                         f"(SELECT created_at FROM flags WHERE id = '{fid}')"
                         f" + interval '{STALE_DAYS} days'")
        self.sql(f"UPDATE flags SET created_at = now() - interval '{STALE_DAYS} days'"
                 f" + interval '1 hour' WHERE id = '{fid}'")
        self.assertIsNone(self.stale("never-used"))

    def count_usage(self, key, seen_sql):
        self.sql("INSERT INTO usage_counters (flag_id, environment_id, variant_key, hour, count,"
                 " last_seen_at)"
                 f" SELECT '{self.flag_id(key)}', e.id, 'on', date_trunc('hour', {seen_sql}), 5,"
                 f" {seen_sql} FROM environments e JOIN orgs o ON o.id = e.org_id"
                 " WHERE o.slug = 'acme' AND e.key = 'production'")

    def test_unused_counts_from_the_last_evaluation(self):
        self.flag("once-used")
        fid = self.flag_id("once-used")
        self.sql(f"UPDATE flags SET created_at = now() - interval '90 days' WHERE id = '{fid}'")
        self.count_usage("once-used", f"now() - interval '{STALE_DAYS} days 3 hours'")
        self.assertStale("once-used", "unused",
                         f"(SELECT last_seen_at FROM flag_usage_totals WHERE flag_id = '{fid}')"
                         f" + interval '{STALE_DAYS} days'")
        # evaluated again lately: old, but not stale
        self.count_usage("once-used", "now() - interval '1 hour'")
        self.assertIsNone(self.stale("once-used"))

    def enable(self, key, env="production", **body):
        self.assertAck(self.configure(key, {"enabled": True, **body}, env=env))

    def test_fully_rolled_out_is_written_when_it_becomes_true(self):
        self.flag("rolled")
        self.assertIsNone(self.rolled_out_since("rolled"))  # disabled everywhere
        self.assertIsNone(self.rolled_out_since("rolled", "production"))
        before = self.sql("SELECT now()")
        self.enable("rolled")
        since = self.rolled_out_since("rolled", "production")
        self.assertIsNotNone(since)
        self.assertEqual(self.sql(f"SELECT '{since}'::timestamptz >= '{before}'::timestamptz"),
                         "t")
        self.assertEqual(self.rolled_out_since("rolled"), since)
        self.assertIsNone(self.stale("rolled"))  # not for stale_after_days yet
        self.age_rollout("rolled", STALE_DAYS + 1)
        fid = self.flag_id("rolled")
        self.assertStale("rolled", "fully_rolled_out",
                         f"(SELECT rolled_out_since FROM flags WHERE id = '{fid}')"
                         f" + interval '{STALE_DAYS} days'")
        self.assertIn("rolled", self.listed("?stale=true"))

        # a write that keeps the one variant keeps the moment
        self.assertAck(self.configure("rolled", {"defaultServe": {"variant": "on"}}))
        self.assertEqual(self.stale("rolled")["reason"], "fully_rolled_out")

        # a rule ends it; removing the rule starts it again from now
        rule = self.assertStatus(self.add_rule("rolled", {
            "conditions": [{"attribute": "country", "operator": "in", "values": ["NL"]}],
            "serve": {"variant": "off"}}), 201)["rule"]
        self.assertIsNone(self.rolled_out_since("rolled", "production"))
        self.assertIsNone(self.rolled_out_since("rolled"))
        self.assertIsNone(self.stale("rolled"))
        self.assertAck(self.call("DELETE", self.rules_path("rolled") + f"/{rule['id']}",
                                 "member"))
        self.assertIsNotNone(self.rolled_out_since("rolled", "production"))
        self.assertIsNone(self.stale("rolled"))

        # serving another variant starts the clock again
        self.age_rollout("rolled", STALE_DAYS + 1)
        self.assertEqual(self.stale("rolled")["reason"], "fully_rolled_out")
        self.assertAck(self.configure("rolled", {"defaultServe": {"variant": "off"}}))
        self.assertIsNone(self.stale("rolled"))

        # a rollout across two variants is not one variant; one with weight is
        self.age_rollout("rolled", STALE_DAYS + 1)
        self.assertAck(self.configure("rolled", {"defaultServe": {"rollout": [
            {"variant": "on", "weight": 50}, {"variant": "off", "weight": 50}]}}))
        self.assertIsNone(self.rolled_out_since("rolled", "production"))
        self.assertAck(self.configure("rolled", {"defaultServe": {"rollout": [
            {"variant": "on", "weight": 100}, {"variant": "off", "weight": 0}]}}))
        self.assertIsNotNone(self.rolled_out_since("rolled", "production"))

        # disabling the last enabled environment ends it
        self.assertAck(self.configure("rolled", {"enabled": False}))
        self.assertIsNone(self.rolled_out_since("rolled"))

    def test_every_enabled_environment_must_be_rolled_out(self):
        self.flag("two-envs")
        self.enable("two-envs")
        self.age_rollout("two-envs", STALE_DAYS + 5)
        self.assertEqual(self.stale("two-envs")["reason"], "fully_rolled_out")
        # preview enabled with a rule: not every enabled environment serves one variant
        self.assertStatus(self.add_rule("two-envs", {"serve": {"variant": "off"}},
                                        env="preview"), 201)
        self.enable("two-envs", env="preview")
        self.assertIsNone(self.rolled_out_since("two-envs", "preview"))
        self.assertIsNone(self.rolled_out_since("two-envs"))
        self.assertIsNone(self.stale("two-envs"))
        # a disabled environment does not count: the flag's moment is production's again
        self.assertAck(self.configure("two-envs", {"enabled": False}, env="preview"))
        self.assertEqual(self.rolled_out_since("two-envs"),
                         self.rolled_out_since("two-envs", "production"))
        self.assertEqual(self.stale("two-envs")["reason"], "fully_rolled_out")
        # the flag's moment is the latest of its enabled environments'
        self.enable("two-envs", env="development")
        self.assertEqual(self.rolled_out_since("two-envs"),
                         self.rolled_out_since("two-envs", "development"))
        self.assertIsNone(self.stale("two-envs"))

    def test_reasons_in_order_never_evaluated_first(self):
        self.flag("all-reasons")
        fid = self.flag_id("all-reasons")
        self.enable("all-reasons")
        self.age_rollout("all-reasons", 50)
        self.sql(f"UPDATE flags SET created_at = now() - interval '60 days' WHERE id = '{fid}'")
        self.assertEqual(self.stale("all-reasons")["reason"], "never_evaluated")
        self.count_usage("all-reasons", "now() - interval '40 days'")
        self.assertEqual(self.stale("all-reasons")["reason"], "unused")
        self.count_usage("all-reasons", "now()")
        self.assertEqual(self.stale("all-reasons")["reason"], "fully_rolled_out")

    def test_permanent_flags_are_never_stale(self):
        self.flag("kill-switch")
        self.assertStatus(self.call("PATCH", "/acme/flags/kill-switch", "member",
                                    body={"permanent": True}), 200)
        fid = self.flag_id("kill-switch")
        self.enable("kill-switch")
        self.age_rollout("kill-switch", 50)
        self.sql(f"UPDATE flags SET created_at = now() - interval '60 days' WHERE id = '{fid}'")
        self.assertIsNone(self.stale("kill-switch"))
        self.assertNotIn("kill-switch", self.listed("?stale=true"))
        self.count_usage("kill-switch", "now() - interval '40 days'")
        self.assertIsNone(self.stale("kill-switch"))
        self.assertStatus(self.call("PATCH", "/acme/flags/kill-switch", "member",
                                    body={"permanent": False}), 200)
        self.assertEqual(self.stale("kill-switch")["reason"], "unused")

    def test_stale_filter_lists_only_stale_flags(self):
        for key in ("filter-old", "filter-new", "filter-archived"):
            self.flag(key)
        for key in ("filter-old", "filter-archived"):
            self.sql("UPDATE flags SET created_at = now() - interval '30 days'"
                     f" WHERE id = '{self.flag_id(key)}'")
        self.archive("filter-archived")
        every = self.listed()
        only = self.listed("?stale=true")
        self.assertIn("filter-old", only)
        self.assertNotIn("filter-new", only)
        self.assertNotIn("filter-archived", only)
        self.assertTrue(all(f["stale"] is not None for f in only.values()), only)
        self.assertEqual({k for k, f in every.items() if f["stale"] is not None}, set(only))
        self.assertEqual(set(self.listed("?stale=false")), set(every))
        archived = self.listed("?archived=true&stale=true")
        self.assertIn("filter-archived", archived)
        self.assertNotIn("filter-old", archived)
        self.assertEqual(only["filter-old"], every["filter-old"])

    def test_roles_and_organizations(self):
        self.flag("visible")
        for role in ("owner", "admin", "member", "viewer", "readonly", "org"):
            with self.subTest(role=role):
                self.assertIn("visible", self.listed(token=role))
        self.assertV1Error(self.call("GET", "/acme/flags?stale=true", "outsider"), 404)
        self.assertV1Error(self.call("GET", "/acme/flags?stale=true", None), 401)

    def test_openapi_describes_stale(self):
        import json
        document = json.loads(self.server.get("/openapi.json").body)
        text = json.dumps(document["paths"]["/v1/orgs/{org}/flags"])
        self.assertIn("fully_rolled_out", text)
        self.assertIn("never_evaluated", text)
        self.assertIn("/v1/orgs/{org}/unknown-flags", document["paths"])


class UnknownFlagsTest(StaleUnknownTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.sdk = {}

    def sdk_of(self, env, org="acme", token="admin"):
        if (org, env) not in self.sdk:
            self.sdk[(org, env)] = self.sdk_key(env, token=token, org=org)
        return self.sdk[(org, env)]

    def ask(self, key, env="production", times=1, org="acme", token="admin"):
        sdk = self.sdk_of(env, org, token)
        for _ in range(times):
            response = self.evaluate(sdk, key)
            self.assertEqual(response.status, 404, response)
            self.assertEqual(response.json["errorCode"], "FLAG_NOT_FOUND")

    def rows(self, key_sql="true"):
        return int(self.sql(f"SELECT count(*) FROM unknown_flags WHERE {key_sql}"))

    def test_counted_per_environment_most_recent_first(self):
        self.ask("typo-older", times=2)
        self.wait_unknown(lambda f: any(i["key"] == "typo-older" for i in f))
        time.sleep(1.1)  # lastSeenAt has seconds
        self.ask("typo-newer", times=3)
        self.ask("typo-newer", env="development")
        found = self.wait_unknown(lambda f: sum(i["count"] for i in f
                                                if i["key"] == "typo-newer") == 4)
        mine = [i for i in found if i["key"] in ("typo-older", "typo-newer")]
        self.assertEqual([(i["key"], i["environment"], i["count"]) for i in mine],
                         [("typo-newer", "development", 1), ("typo-newer", "production", 3),
                          ("typo-older", "production", 2)])
        times = [i["lastSeenAt"] for i in found]
        self.assertEqual(times, sorted(times, reverse=True))
        dev = self.unknown("?environment=development")
        self.assertTrue(dev and all(i["environment"] == "development" for i in dev), dev)
        self.assertIn("typo-newer", [i["key"] for i in dev])
        self.assertNotIn("typo-older", [i["key"] for i in dev])
        # asked again: the count grows in the same row
        self.ask("typo-older")
        self.wait_unknown(lambda f: any(i["key"] == "typo-older" and i["count"] == 3
                                        for i in f))

    def test_environment_filter_errors(self):
        for query in ("?environment=nowhere", "?environment=", "?environment=Production",
                      "?environment=" + "p" * 300, "?environment=prod%00uction",
                      "?environment=%FF%FE"):
            with self.subTest(query=query):
                self.assertV1Error(self.call("GET", "/acme/unknown-flags" + query, "viewer"),
                                   404)

    def test_known_flags_and_bulk_add_nothing(self):
        self.flag("real-flag")
        sdk = self.sdk_of("production")
        self.assertTrue(harness.wait_for(lambda: self.evaluate(sdk, "real-flag").status == 200,
                                         10))
        for _ in range(3):
            self.assertEqual(self.evaluate(sdk, "real-flag").status, 200)
            bulk = self.server.request("POST", "/ofrep/v1/evaluate/flags",
                                       body={"context": {"targetingKey": "u1"}},
                                       headers={"Authorization": f"Bearer {sdk}"})
            self.assertEqual(bulk.status, 200)
        self.ask("marker-after-known")  # flushed with anything counted before it
        found = self.wait_unknown(lambda f: any(i["key"] == "marker-after-known" for i in f))
        self.assertNotIn("real-flag", [i["key"] for i in found])
        self.assertEqual(self.rows("key = 'real-flag'"), 0)

    def test_hostile_keys_are_not_stored(self):
        before = self.rows()
        hostile = ["a" * 64, "b" * 5000, "Upper-Case", "has%20space", "nul%00byte",
                   "%FF%FE%FD", "caf%C3%A9", "-leading", "trailing-", "quote%22key",
                   "back%5Cslash", "semi%3Bcolon"]
        sdk = self.sdk_of("production")
        for key in hostile:
            with self.subTest(key=key[:20]):
                response = self.evaluate(sdk, key)
                self.assertIn(response.status, (404, 400), response)
        self.ask("marker-after-hostile")
        self.wait_unknown(lambda f: any(i["key"] == "marker-after-hostile" for i in f))
        self.assertEqual(self.rows(), before + 1)
        self.assertEqual(self.rows("NOT ensign_key_ok(key)"), 0)
        self.assertEqual(self.server.request("GET", "/v1/healthz").status, 200)

    def test_a_created_flag_is_no_longer_listed(self):
        self.ask("soon-real", times=2)
        self.ask("soon-real", env="development")
        self.wait_unknown(lambda f: sum(i["key"] == "soon-real" for i in f) == 2)
        self.flag("soon-real")
        self.assertNotIn("soon-real", [i["key"] for i in self.unknown()])
        self.assertEqual(self.rows("key = 'soon-real'"), 0)
        # deleted again: the key starts afresh once asked for
        self.assertAck(self.call("DELETE", "/acme/flags/soon-real", "member"))
        sdk = self.sdk_of("production")
        self.assertTrue(harness.wait_for(lambda: self.evaluate(sdk, "soon-real").status == 404,
                                         10))
        found = self.wait_unknown(lambda f: any(i["key"] == "soon-real" for i in f))
        [item] = [i for i in found if i["key"] == "soon-real"]
        self.assertEqual(item["environment"], "production")

    def test_at_most_1000_keys_per_environment_least_recent_dropped(self):
        env = self.sql("SELECT e.id FROM environments e JOIN orgs o ON o.id = e.org_id"
                       " WHERE o.slug = 'acme' AND e.key = 'preview'")
        self.sql("INSERT INTO unknown_flags (environment_id, key, count, last_seen_at)"
                 f" SELECT '{env}', 'seeded-' || i, 1, now() - interval '1 hour' - i * interval"
                 " '1 second' FROM generate_series(1, 1000) AS i")
        self.assertEqual(self.rows(f"environment_id = '{env}'"), 1000)
        self.ask("newest-a", env="preview")
        self.ask("newest-b", env="preview")
        self.ask("newest-c", env="preview")
        self.assertTrue(harness.wait_for(
            lambda: self.rows(f"environment_id = '{env}' AND key LIKE 'newest-%'") == 3, 10, 0.1))
        self.assertEqual(self.rows(f"environment_id = '{env}'"), 1000)
        # the three least recently seen (1000, 999, 998 seconds older) went
        for i in (1000, 999, 998):
            self.assertEqual(self.rows(f"key = 'seeded-{i}'"), 0, i)
        self.assertEqual(self.rows("key = 'seeded-997'"), 1)
        listed = self.unknown("?environment=preview")
        self.assertEqual(len(listed), 1000)
        self.assertEqual({i["key"] for i in listed[:3]}, {"newest-a", "newest-b", "newest-c"})
        self.assertEqual(listed[-1]["key"], "seeded-997")
        # other environments keep their own keys
        self.ask("beside-the-full-one", env="development")
        self.wait_unknown(lambda f: any(i["key"] == "beside-the-full-one" for i in f),
                          "?environment=development")

    def test_roles_and_organizations(self):
        self.ask("acme-only")
        self.wait_unknown(lambda f: any(i["key"] == "acme-only" for i in f))
        for role in ("owner", "admin", "member", "viewer", "readonly", "org"):
            with self.subTest(role=role):
                self.assertIn("acme-only", [i["key"] for i in self.unknown(token=role)])
        for token in ("outsider", "outsider_org"):
            self.assertV1Error(self.call("GET", "/acme/unknown-flags", token), 404)
        self.assertV1Error(self.call("GET", "/acme/unknown-flags", None), 401)
        self.assertV1Error(self.call("GET", "/globex/unknown-flags", "viewer"), 404)
        self.assertV1Error(self.call("POST", "/acme/unknown-flags", "owner", body={}), 405)
        # globex's SDK asks for a key of its own: counted for globex only
        self.ask("globex-typo", org="globex", token="outsider")
        found = self.wait_unknown(lambda f: any(i["key"] == "globex-typo" for i in f),
                                  org="globex", token="outsider")
        self.assertNotIn("acme-only", [i["key"] for i in found])
        self.assertNotIn("globex-typo", [i["key"] for i in self.unknown()])


class UnknownFinalFlushTest(StaleUnknownTestCase):
    """Unknown keys still in shared memory at stop are written by the last
    flush, as the usage counts are."""

    settings = {"usage_flush_interval_ms": 3600000}

    def test_stop_flushes_the_last_unknown_keys(self):
        sdk = self.sdk_key("preview")
        for _ in range(4):
            self.assertEqual(self.evaluate(sdk, "left-at-stop").status, 404)
        self.assertEqual(self.unknown(), [])
        self.server.stop_cleanly()
        self.assertEqual(self.sql("SELECT count FROM unknown_flags WHERE key = 'left-at-stop'"),
                         "4")
        self.server.start()
        [item] = self.unknown()
        self.assertEqual((item["key"], item["environment"], item["count"]),
                         ("left-at-stop", "preview", 4))


if __name__ == "__main__":
    harness.main([])
