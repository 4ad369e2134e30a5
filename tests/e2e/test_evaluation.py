"""test_evaluation.py - end-to-end tests of flag evaluation (/ofrep): the
snapshot the refresher builds from PostgreSQL, SDK-key authentication,
reasons, metadata, every error code and status, the bulk ETag and 304,
CORS, rate limits, usage counters, propagation of changes and revocations
within a second, evaluation while PostgreSQL is down (and after a restart
while it is down), and the real OpenFeature JavaScript SDKs.

Test data is written straight into the database with SQL (the Fixture
class below): flags, variants, per-environment configuration, rules and
SDK keys, the way the management API stores them (sql/0001_init.sql).
Values reach psql as variables (-v NAME=VALUE, used as :'NAME'), never
pasted into the statement text.

Each class runs its own ensignd on its own database (harness.ServerTestCase).
Run by tests/e2e/run.
"""

import hashlib
import json
import os
import random
import shutil
import string
import subprocess
import tempfile
import time
import unittest

import harness

BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
NPM_DIR = os.path.join(harness.HERE, "npm")
FLAG_PATH = "/ofrep/v1/evaluate/flags"
ORIGIN = {"Origin": "https://app.example"}  # what a browser adds
PROPAGATION_LIMIT_S = 1.0


def new_sdk_key():
    return "svc_sdk_" + "".join(random.choice(BASE62) for _ in range(43))


def sql(conninfo, statement, **variables):
    """Runs statement with psql variables (:'name' in the text); returns stdout."""
    command = ["psql", "-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1", "-d", conninfo]
    for name, value in variables.items():
        command += ["-v", f"{name}={value}"]
    result = subprocess.run(command + ["-f", "-"], input=statement, capture_output=True,
                            text=True, timeout=60)
    if result.returncode != 0:
        raise RuntimeError(f"psql failed: {statement}\n{variables}\n{result.stderr}")
    return result.stdout.strip()


class Fixture:
    """Flags and SDK keys of the organization `acme`, written with SQL."""

    def __init__(self, conninfo, org_slug="acme"):
        self.conninfo = conninfo
        self.org_slug = org_slug

    def run(self, statement, **variables):
        return sql(self.conninfo, statement, org=self.org_slug, **variables)

    def env_id(self, env_key="production"):
        return self.run("SELECT e.id FROM environments e JOIN orgs o ON o.id = e.org_id"
                        " WHERE o.slug = :'org' AND e.key = :'env'", env=env_key)

    def flag(self, key, type_="boolean", variants=None, enabled=True, default="on",
             off="off", env_key="production", archived=False):
        """Creates a flag with variants {key: value} configured in env_key.
        default is a variant key or a serve object."""
        if variants is None:
            variants = {"on": True, "off": False}
        flag_id = self.run(
            "INSERT INTO flags (org_id, key, name, type, archived_at)"
            " SELECT id, :'key', :'key', :'type', CASE WHEN :'archived' = 'yes' THEN now() END"
            " FROM orgs WHERE slug = :'org' RETURNING id",
            key=key, type=type_, archived="yes" if archived else "no")
        for order, (variant, value) in enumerate(variants.items()):
            self.run("INSERT INTO variants (flag_id, org_id, key, value, sort_order)"
                     " SELECT id, org_id, :'key', :'value'::jsonb, :'order'"
                     " FROM flags WHERE id = :'flag'",
                     flag=flag_id, key=variant, value=json.dumps(value), order=order)
        serve = default if isinstance(default, dict) else {"variant": default}
        self.run("INSERT INTO flag_environments (flag_id, environment_id, enabled, default_serve,"
                 " off_variant_key) VALUES (:'flag', :'env', :'enabled', :'serve'::jsonb,"
                 " NULLIF(:'off', ''))",
                 flag=flag_id, env=self.env_id(env_key), enabled="true" if enabled else "false",
                 serve=json.dumps(serve), off=off or "")
        return flag_id

    def rule(self, flag_id, conditions, serve, priority=0, env_key="production"):
        return self.run("INSERT INTO rules (flag_id, org_id, environment_id, priority, conditions,"
                        " serve) SELECT id, org_id, :'env', :'priority', :'conditions'::jsonb,"
                        " :'serve'::jsonb FROM flags WHERE id = :'flag' RETURNING id",
                        flag=flag_id, env=self.env_id(env_key), priority=priority,
                        conditions=json.dumps(conditions), serve=json.dumps(serve))

    def sdk_key(self, env_key="production"):
        """A new SDK key for env_key; returns (plaintext, id)."""
        plaintext = new_sdk_key()
        key_id = self.run(
            "INSERT INTO sdk_keys (org_id, environment_id, name, token_digest, prefix, last_four)"
            " SELECT o.id, e.id, 'e2e key', :'digest', :'prefix', :'last'"
            " FROM orgs o JOIN environments e ON e.org_id = o.id"
            " WHERE o.slug = :'org' AND e.key = :'env' RETURNING sdk_keys.id",
            digest=hashlib.sha256(plaintext.encode()).hexdigest(), prefix=plaintext[:12],
            last=plaintext[-4:], env=env_key)
        return plaintext, key_id

    def revoke(self, key_id):
        self.run("UPDATE sdk_keys SET revoked_at = now() WHERE id = :'id'", id=key_id)

    def set_enabled(self, flag_id, enabled, env_key="production"):
        self.run("UPDATE flag_environments SET enabled = :'enabled'"
                 " WHERE flag_id = :'flag' AND environment_id = :'env'",
                 enabled="true" if enabled else "false", flag=flag_id, env=self.env_id(env_key))

    def set_default(self, flag_id, variant, env_key="production"):
        self.run("UPDATE flag_environments SET default_serve = :'serve'::jsonb"
                 " WHERE flag_id = :'flag' AND environment_id = :'env'",
                 serve=json.dumps({"variant": variant}), flag=flag_id, env=self.env_id(env_key))

    def delete_flag(self, flag_id):
        self.run("DELETE FROM flags WHERE id = :'flag'", flag=flag_id)

    def usage(self, flag_id):
        """{variant: count} of usage_counters for a flag."""
        rows = self.run("SELECT variant_key, sum(count) FROM usage_counters"
                        " WHERE flag_id = :'flag' GROUP BY variant_key", flag=flag_id)
        return {line.split("|")[0]: int(line.split("|")[1]) for line in rows.splitlines() if line}


class OfrepTestCase(harness.ServerTestCase):
    """A server with a fixture, an SDK key and request helpers."""

    @classmethod
    def prepare(cls):
        super().prepare()
        cls.fixture = Fixture(cls.database.conninfo)
        cls.sdk_key, cls.sdk_key_id = cls.fixture.sdk_key()
        cls.create_flags()

    @classmethod
    def create_flags(cls):
        pass

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # The first snapshot is built right after start: wait until it is served.
        headers = {"Authorization": f"Bearer {cls.sdk_key}"}
        served = harness.wait_for(lambda: cls.server.request(
            "POST", FLAG_PATH, body={}, headers=headers).status == 200, 10, 0.02)
        if not served:
            cls.tearDownClass()
            raise AssertionError("the first snapshot was not served within 10 s")

    def evaluate(self, key, body=None, headers=None, sdk_key=None, raw=None):
        headers = dict(headers or {})
        if "Authorization" not in headers and "X-API-Key" not in headers:
            headers["Authorization"] = f"Bearer {sdk_key or self.sdk_key}"
        path = FLAG_PATH if key is None else f"{FLAG_PATH}/{key}"
        if raw is not None:
            return self.server.request("POST", path, body=raw, headers=headers)
        return self.server.request("POST", path, body=body if body is not None else {},
                                   headers=headers)

    def bulk(self, body=None, headers=None, sdk_key=None):
        return self.evaluate(None, body, headers, sdk_key)

    def assertResult(self, response, key, value, reason, variant):
        self.assertEqual(response.status, 200, response)
        self.assertJsonContentType(response)
        body = response.json
        self.assertEqual(body["key"], key, body)
        self.assertEqual(body["value"], value, body)
        self.assertEqual(body["reason"], reason, body)
        self.assertEqual(body["variant"], variant, body)
        self.assertEqual(body["metadata"]["environment"], "production", body)
        return body

    def assertEvalError(self, response, status, code, key=None):
        self.assertEqual(response.status, status, response)
        self.assertJsonContentType(response)
        body = response.json
        expected = {"errorCode", "errorDetails", "message", "status"} | ({"key"} if key else set())
        self.assertEqual(set(body), expected, body)
        self.assertEqual(body["errorCode"], code, body)
        self.assertEqual(body["status"], status, body)
        self.assertEqual(body["message"], body["errorDetails"], body)
        if key:
            self.assertEqual(body["key"], key, body)
        self.assertCors(response, origin=False)
        return body

    def assertCors(self, response, origin=True):
        """doc/api.md "Browsers": Vary: Origin on every /ofrep answer, the
        Access-Control-* headers only when the request carried Origin."""
        headers = response.headers
        self.assertIn("origin", headers.get("Vary", "").lower(), response.headers)
        if not origin:
            cors = [name for name in headers if name.lower().startswith("access-control-")]
            self.assertEqual(cors, [], response.headers)
            return
        self.assertEqual(headers.get("Access-Control-Allow-Origin"), "*", response)
        allowed = {h.strip().lower() for h in headers.get("Access-Control-Allow-Headers", "")
                   .split(",")}
        self.assertTrue({"authorization", "content-type", "if-none-match", "x-api-key"} <= allowed)
        exposed = {h.strip().lower() for h in headers.get("Access-Control-Expose-Headers", "")
                   .split(",")}
        self.assertTrue({"etag", "retry-after"} <= exposed, response.headers)

    def wait_served(self, predicate, timeout=5.0):
        """Seconds until predicate(response of a fresh call) holds, or fails."""
        start = time.monotonic()
        elapsed = harness.wait_for(lambda: predicate() and time.monotonic() - start, timeout,
                                   interval=0.01)
        self.assertIsNotNone(elapsed, "the change was not served in time")
        return elapsed


class EvaluationTest(OfrepTestCase):
    """Reasons, values, metadata and every error of the two routes."""

    @classmethod
    def create_flags(cls):
        f = cls.fixture
        cls.ids = {}
        cls.ids["static-on"] = f.flag("static-on")
        cls.ids["disabled"] = f.flag("disabled", enabled=False)
        flag = cls.ids["targeted"] = f.flag("targeted", "string",
                                            {"blue": "blue", "green": "green"}, default="blue",
                                            off="green")
        cls.rule_id = f.rule(flag, [{"attribute": "country", "operator": "in",
                                     "values": ["NL", "BE"]}], {"variant": "green"})
        cls.ids["split"] = f.flag("split", "string", {"a": "A", "b": "B"},
                                  default={"rollout": [{"variant": "a", "weight": 1},
                                                       {"variant": "b", "weight": 1}]},
                                  off="a")
        cls.ids["price"] = f.flag("price", "number", {"low": 9.5, "high": 100}, default="high",
                                  off="low")
        cls.ids["layout"] = f.flag("layout", "json", {"grid": {"columns": 3, "dense": True},
                                                      "list": ["a", "b"]},
                                   default="grid", off="list")
        cls.ids["old"] = f.flag("old", archived=True)
        cls.ids["empty"] = f.flag("empty", "string", {}, default="nothing", off="")
        flag = cls.ids["clock"] = f.flag("clock", "string", {"past": "past", "future": "future"},
                                         default="future", off="future")
        f.rule(flag, [{"attribute": "$currentTime", "operator": "after",
                       "values": ["2001-01-01T00:00:00Z"]}], {"variant": "past"})
        cls.ids["dev-only"] = f.flag("dev-only", env_key="development")
        flag = cls.ids["ordered"] = f.flag("ordered", "string", {"x": "x", "y": "y", "z": "z"},
                                           default="x", off="x")
        f.rule(flag, [], {"variant": "z"}, priority=7)
        cls.first_rule = f.rule(flag, [{"attribute": "plan", "operator": "exists"}],
                                {"variant": "y"}, priority=2)
        f.rule(flag, [], {"variant": "x"}, priority=2)

    def test_static_boolean(self):
        body = self.assertResult(self.evaluate("static-on", {"context": {"targetingKey": "u"}}),
                                 "static-on", True, "STATIC", "on")
        self.assertEqual(body["metadata"], {"environment": "production"})
        self.assertCors(self.evaluate("static-on", headers=ORIGIN))
        self.assertCors(self.evaluate("static-on"), origin=False)

    def test_cors_headers_only_with_origin(self):
        answers = {
            "200": lambda h: self.evaluate("static-on", headers=h),
            "bulk 200": lambda h: self.bulk(headers=h),
            "401": lambda h: self.evaluate("static-on", headers={**h, "Authorization": "Bearer x"}),
            "404": lambda h: self.evaluate("no-such-flag", headers=h),
            "400": lambda h: self.evaluate("static-on", headers=h, raw=b"{"),
        }
        for name, request in answers.items():
            with self.subTest(answer=name):
                self.assertCors(request(ORIGIN))
                self.assertCors(request({}), origin=False)

    def test_disabled_serves_the_off_variant(self):
        self.assertResult(self.evaluate("disabled"), "disabled", False, "DISABLED", "off")

    def test_rule_match_and_default(self):
        body = self.assertResult(
            self.evaluate("targeted", {"context": {"targetingKey": "u", "country": "NL"}}),
            "targeted", "green", "TARGETING_MATCH", "green")
        self.assertEqual(body["metadata"], {"environment": "production", "ruleId": self.rule_id})
        body = self.assertResult(
            self.evaluate("targeted", {"context": {"targetingKey": "u", "country": "FR"}}),
            "targeted", "blue", "DEFAULT", "blue")
        self.assertNotIn("ruleId", body["metadata"])

    def test_rollout_is_split_and_sticky(self):
        seen = set()
        for user in ("user-1", "user-2", "user-3", "user-4", "user-5", "user-6"):
            first = self.evaluate("split", {"context": {"targetingKey": user}}).json
            again = self.evaluate("split", {"context": {"targetingKey": user, "x": 1}}).json
            self.assertEqual(first["reason"], "SPLIT", first)
            self.assertEqual(first["variant"], again["variant"])
            self.assertEqual(first["value"], first["variant"].upper())
            seen.add(first["variant"])
        self.assertEqual(seen, {"a", "b"})

    def test_rules_run_by_priority_then_creation(self):
        body = self.evaluate("ordered", {"context": {"plan": "pro"}}).json
        self.assertEqual((body["variant"], body["metadata"].get("ruleId")),
                         ("y", self.first_rule), body)
        body = self.evaluate("ordered", {"context": {}}).json
        self.assertEqual((body["variant"], body["reason"]), ("x", "TARGETING_MATCH"), body)

    def test_number_and_object_values(self):
        self.assertResult(self.evaluate("price"), "price", 100, "STATIC", "high")
        self.assertResult(self.evaluate("layout"), "layout", {"columns": 3, "dense": True},
                          "STATIC", "grid")

    def test_archived_flags_evaluate(self):
        self.assertResult(self.evaluate("old"), "old", True, "STATIC", "on")

    def test_current_time_is_the_server_clock(self):
        for context in ({}, {"$currentTime": "1990-01-01T00:00:00Z"}):
            body = self.evaluate("clock", {"context": context}).json
            self.assertEqual(body["variant"], "past", body)
            self.assertEqual(body["reason"], "TARGETING_MATCH", body)

    def test_unknown_flag_is_404(self):
        bodies = {}
        for key in ("no-such-flag", "dev-only", "Bad_Key", "-x", "a" * 64):
            with self.subTest(key=key):
                bodies[key] = self.assertEvalError(self.evaluate(key), 404, "FLAG_NOT_FOUND",
                                                   key=key)
        # a key of the key pattern is answered from an answer block, any other
        # through the error envelope: the two answers are the same but for the key
        fast, slow = dict(bodies["no-such-flag"]), dict(bodies["Bad_Key"])
        fast.pop("key")
        slow.pop("key")
        self.assertEqual(fast, slow)

    def test_flag_that_cannot_resolve_is_general(self):
        self.assertEvalError(self.evaluate("empty"), 400, "GENERAL", key="empty")

    def test_rollout_without_targeting_key(self):
        for context in ({}, {"targetingKey": ""}):
            self.assertEvalError(self.evaluate("split", {"context": context}), 400,
                                 "TARGETING_KEY_MISSING", key="split")

    def test_parse_errors(self):
        for raw in (b"{not json", b"[1, 2]", b'"context"', b"{} {}"):
            with self.subTest(raw=raw):
                self.assertEvalError(self.evaluate("static-on", raw=raw), 400, "PARSE_ERROR",
                                     key="static-on")
                self.assertEvalError(self.server.request(
                    "POST", FLAG_PATH, body=raw,
                    headers={"Authorization": f"Bearer {self.sdk_key}"}), 400, "PARSE_ERROR")

    def test_invalid_context(self):
        for body in ({"context": "user-1"}, {"context": [1]}, {"context": {"targetingKey": 5}},
                     {"context": {"targetingKey": None}}):
            with self.subTest(body=body):
                self.assertEvalError(self.evaluate("static-on", body), 400, "INVALID_CONTEXT",
                                     key="static-on")
                self.assertEvalError(self.bulk(body), 400, "INVALID_CONTEXT")

    def test_lenient_bodies(self):
        auth = {"Authorization": f"Bearer {self.sdk_key}"}
        cases = {
            "empty body": (b"", {}),
            "null context": (b'{"context": null}', {}),
            "unknown fields": (b'{"other": 1}', {}),
            "no content type": (b'{"context": {}}', {}),
            "text/plain": (b"{}", {"Content-Type": "text/plain"}),
            "charset": (b"{}", {"Content-Type": "application/json; charset=utf-8"}),
        }
        for name, (raw, headers) in cases.items():
            with self.subTest(name):
                response = self.server.request("POST", f"{FLAG_PATH}/static-on?x=1", body=raw,
                                               headers={**auth, **headers})
                self.assertResult(response, "static-on", True, "STATIC", "on")
        response = self.server.request("POST", f"/{FLAG_PATH}/static-on", body=b"{}",
                                       headers=auth)
        self.assertResult(response, "static-on", True, "STATIC", "on")

    def test_authentication(self):
        cases = {
            "no credential": {"Authorization": ""},
            "malformed": {"Authorization": "Bearer svc_sdk_short"},
            "unknown key": {"Authorization": f"Bearer {new_sdk_key()}"},
            "access token": {"Authorization": f"Bearer {self.identity.user_token}"},
            "organization token": {"X-API-Key": self.identity.org_token},
            "other scheme": {"Authorization": f"Basic {self.sdk_key}"},
        }
        for name, headers in cases.items():
            with self.subTest(name):
                response = self.evaluate("static-on", headers=headers)
                self.assertEvalError(response, 401, "AUTHENTICATION_ERROR", key="static-on")
                self.assertEvalError(self.bulk(headers=headers), 401, "AUTHENTICATION_ERROR")
        for headers in ({"X-API-Key": self.sdk_key}, {"Authorization": f"bearer {self.sdk_key}"},
                        {"Authorization": f"BEARER {self.sdk_key}"}):
            with self.subTest(headers=list(headers)):
                self.assertResult(self.evaluate("static-on", headers=headers), "static-on", True,
                                  "STATIC", "on")

    def test_key_of_another_environment_sees_its_flags(self):
        dev_key, _ = self.fixture.sdk_key("development")
        self.wait_served(lambda: self.evaluate("dev-only", sdk_key=dev_key).status == 200)
        self.assertEvalError(self.evaluate("static-on", sdk_key=dev_key), 404, "FLAG_NOT_FOUND",
                             key="static-on")
        body = self.bulk(sdk_key=dev_key).json
        self.assertEqual([entry["key"] for entry in body["flags"]], ["dev-only"])
        self.assertEqual(body["flags"][0]["metadata"], {"environment": "development"})

    def test_bulk_answers_every_flag_sorted(self):
        response = self.bulk({"context": {"targetingKey": "user-1", "country": "BE"}},
                             headers=ORIGIN)
        self.assertEqual(response.status, 200, response)
        self.assertJsonContentType(response)
        self.assertCors(response)
        body = response.json
        self.assertEqual(body["metadata"], {"environment": "production"})
        keys = [entry["key"] for entry in body["flags"]]
        self.assertEqual(keys, sorted(keys))
        expected = {"clock", "disabled", "empty", "layout", "old", "ordered", "price", "split",
                    "static-on", "targeted"}
        self.assertTrue(expected <= set(keys), keys)
        entries = {entry["key"]: entry for entry in body["flags"]}
        self.assertEqual(entries["empty"]["errorCode"], "GENERAL")
        self.assertEqual(set(entries["empty"]), {"key", "errorCode", "errorDetails"})
        self.assertEqual(entries["targeted"]["reason"], "TARGETING_MATCH")
        self.assertEqual(entries["targeted"]["metadata"]["ruleId"], self.rule_id)
        self.assertEqual(entries["disabled"]["reason"], "DISABLED")
        self.assertEqual(entries["old"]["value"], True)
        self.assertIn(entries["split"]["variant"], ("a", "b"))
        anonymous = {e["key"]: e for e in self.bulk({}).json["flags"]}
        self.assertEqual(anonymous["split"]["errorCode"], "TARGETING_KEY_MISSING")
        self.assertEqual(anonymous["static-on"]["value"], True)

    def test_etag_and_304(self):
        body = {"context": {"targetingKey": "user-1", "country": "NL"}}
        first = self.bulk(body)
        etag = first.headers.get("ETag")
        self.assertRegex(etag or "", r'^"[^"]+"$', first.headers)
        self.assertEqual(self.bulk(body).headers.get("ETag"), etag)
        for header in (etag, f"W/{etag}", f'"other", {etag}', f'W/"x" , W/{etag}'):
            with self.subTest(if_none_match=header):
                response = self.bulk(body, headers={**ORIGIN, "If-None-Match": header})
                self.assertEqual(response.status, 304, response)
                self.assertEqual(response.body, b"")
                self.assertEqual(response.headers.get("ETag"), etag)
                self.assertCors(response)
                self.assertCors(self.bulk(body, headers={"If-None-Match": header}), origin=False)
        for header in ("*", '"other"', ""):
            with self.subTest(if_none_match=header):
                self.assertEqual(self.bulk(body, headers={"If-None-Match": header}).status, 200)
        changed = {"context": {"targetingKey": "user-1", "country": "FR"}}
        self.assertNotEqual(self.bulk(changed).headers.get("ETag"), etag)
        self.assertEqual(self.bulk(changed, headers={"If-None-Match": etag}).status, 200)
        reordered = {"context": {"country": "NL", "targetingKey": "user-1"}}
        self.assertEqual(self.bulk(reordered, headers={"If-None-Match": etag}).status, 304)

    def test_etag_changes_with_configuration(self):
        flag = self.fixture.flag("etag-watch")
        self.wait_served(lambda: self.evaluate("etag-watch").status == 200)
        etag = self.bulk().headers.get("ETag")
        self.assertEqual(self.bulk(headers={"If-None-Match": etag}).status, 304)
        self.fixture.set_enabled(flag, False)
        self.wait_served(lambda: self.evaluate("etag-watch").json.get("reason") == "DISABLED")
        response = self.bulk(headers={"If-None-Match": etag})
        self.assertEqual(response.status, 200, response)
        self.assertNotEqual(response.headers.get("ETag"), etag)
        entries = {e["key"]: e for e in response.json["flags"]}
        self.assertEqual(entries["etag-watch"]["reason"], "DISABLED")

    def test_cors_preflight(self):
        for path in (f"{FLAG_PATH}/static-on", FLAG_PATH):
            with self.subTest(path=path):
                response = self.server.request("OPTIONS", path, headers={
                    "Origin": "https://app.example", "Access-Control-Request-Method": "POST",
                    "Access-Control-Request-Headers": "authorization, content-type"})
                self.assertEqual(response.status, 204, response)
                self.assertEqual(response.body, b"")
                self.assertCors(response)
                methods = response.headers.get("Access-Control-Allow-Methods", "")
                self.assertIn("POST", methods)
                self.assertTrue(response.headers.get("Access-Control-Max-Age"))

    def test_other_methods_are_not_allowed(self):
        response = self.server.request("GET", f"{FLAG_PATH}/static-on",
                                       headers={**ORIGIN, "Authorization": f"Bearer {self.sdk_key}"})
        self.assertEqual(response.status, 405, response)
        self.assertCors(response)


class PropagationTest(OfrepTestCase):
    """Configuration changes and revocations are served within a second."""

    @classmethod
    def create_flags(cls):
        cls.flag_id = cls.fixture.flag("moving", "string", {"one": "1", "two": "2"},
                                       default="one", off="two")

    def test_change_is_served_within_a_second(self):
        for variant in ("two", "one", "two"):
            self.fixture.set_default(self.flag_id, variant)
            elapsed = self.wait_served(
                lambda v=variant: self.evaluate("moving").json.get("variant") == v)
            self.assertLess(elapsed, PROPAGATION_LIMIT_S)

    def test_new_flag_and_deleted_flag(self):
        flag = self.fixture.flag("brief")
        elapsed = self.wait_served(lambda: self.evaluate("brief").status == 200)
        self.assertLess(elapsed, PROPAGATION_LIMIT_S)
        self.fixture.delete_flag(flag)
        elapsed = self.wait_served(lambda: self.evaluate("brief").status == 404)
        self.assertLess(elapsed, PROPAGATION_LIMIT_S)
        self.assertEvalError(self.evaluate("brief"), 404, "FLAG_NOT_FOUND", key="brief")

    def test_revoked_key_fails_within_a_second(self):
        key, key_id = self.fixture.sdk_key()
        elapsed = self.wait_served(lambda: self.evaluate("moving", sdk_key=key).status == 200)
        self.assertLess(elapsed, PROPAGATION_LIMIT_S)
        self.fixture.revoke(key_id)
        elapsed = self.wait_served(lambda: self.evaluate("moving", sdk_key=key).status == 401)
        self.assertLess(elapsed, PROPAGATION_LIMIT_S)
        self.assertEvalError(self.evaluate("moving", sdk_key=key), 401, "AUTHENTICATION_ERROR",
                             key="moving")
        self.assertEqual(self.evaluate("moving").status, 200)

    def test_snapshot_file_is_written(self):
        path = os.path.join(self.server.state_dir, "snapshot.bin")
        self.assertTrue(os.path.getsize(path) > 0)
        self.assertEqual([name for name in os.listdir(self.server.state_dir)
                          if name.startswith("snapshot") and name != "snapshot.bin"], [])


class UsageTest(OfrepTestCase):
    """Each successful evaluation counts once, under its variant."""

    settings = {"usage_flush_interval_ms": 200}

    @classmethod
    def create_flags(cls):
        cls.preview_key, _ = cls.fixture.sdk_key("preview")
        cls.counted = cls.fixture.flag("counted", "string", {"x": "x", "y": "y"}, default="x",
                                       off="y", env_key="preview")
        cls.broken = cls.fixture.flag("broken", "string", {}, default="gone", off="",
                                      env_key="preview")

    def wait_usage(self, flag_id, expected):
        found = harness.wait_for(lambda: self.fixture.usage(flag_id) == expected, 10, 0.1)
        self.assertIsNotNone(found, f"usage {self.fixture.usage(flag_id)} != {expected}")

    def test_single_and_bulk_evaluations_are_counted(self):
        key = self.preview_key
        for _ in range(5):
            self.assertEqual(self.evaluate("counted", sdk_key=key).status, 200)
        for _ in range(3):
            self.assertEqual(self.bulk(sdk_key=key).status, 200)
        self.assertEqual(self.evaluate("broken", sdk_key=key).status, 400)
        self.wait_usage(self.counted, {"x": 8})
        self.fixture.set_enabled(self.counted, False, env_key="preview")
        tally = {"x": 8}

        def served_y():
            variant = self.evaluate("counted", sdk_key=key).json.get("variant")
            tally[variant] = tally.get(variant, 0) + 1
            return variant == "y"

        self.wait_served(served_y)
        self.wait_usage(self.counted, tally)
        self.assertEqual(self.fixture.usage(self.broken), {})
        hours = self.fixture.run("SELECT count(*) FROM usage_counters WHERE flag_id = :'flag'"
                                 " AND hour = date_trunc('hour', hour)"
                                 " AND last_seen_at >= hour", flag=self.counted)
        self.assertEqual(hours, "2")

    def test_not_modified_is_not_counted(self):
        flag = self.fixture.flag("quiet")
        self.wait_served(lambda: self.evaluate("quiet").status == 200)
        self.wait_usage(flag, {"on": 1})
        etag = self.bulk().headers["ETag"]
        self.wait_usage(flag, {"on": 2})
        for _ in range(3):
            self.assertEqual(self.bulk(headers={"If-None-Match": etag}).status, 304)
        time.sleep(0.6)
        self.assertEqual(self.fixture.usage(flag), {"on": 2})


class RateLimitTest(OfrepTestCase):
    """ratelimit_evaluation per SDK key, with its headers."""

    settings = {"ratelimit_evaluation": 5}

    @classmethod
    def create_flags(cls):
        cls.fixture.flag("limited")

    def test_sixth_request_in_a_minute_is_429(self):
        key, _ = self.fixture.sdk_key()
        self.wait_served(lambda: self.evaluate("limited", sdk_key=key).status == 200)
        for _ in range(4):
            response = self.bulk(sdk_key=key)
            self.assertEqual(response.status, 200, response)
            self.assertEqual(response.headers.get("RateLimit-Limit"), "5")
        self.assertEqual(response.headers.get("RateLimit-Remaining"), "0")
        for request in (lambda: self.evaluate("limited", sdk_key=key),
                        lambda: self.bulk(sdk_key=key)):
            response = request()
            self.assertEqual(response.status, 429, response)
            body = response.json
            self.assertEqual(body["errorCode"], "GENERAL", body)
            self.assertEqual(body["status"], 429)
            self.assertRegex(response.headers.get("Retry-After", ""), r"^[1-9][0-9]*$")
            self.assertEqual(response.headers.get("RateLimit-Remaining"), "0")
            self.assertRegex(response.headers.get("RateLimit-Reset", ""), r"^[0-9]+$")
            self.assertCors(response, origin=False)
        self.assertEqual(self.evaluate("limited").status, 200)  # other keys are not limited


class NoSnapshotTest(unittest.TestCase):
    """A fresh install that never reached its database: 503, Retry-After."""

    def test_no_snapshot_is_503(self):
        unreachable = f"host=127.0.0.1 port={harness.free_port()} dbname=none connect_timeout=1"
        server = harness.Server(unreachable)
        try:
            server.start()
            response = server.request("POST", f"{FLAG_PATH}/any",
                                      headers={"Authorization": f"Bearer {new_sdk_key()}"})
            self.assertEqual(response.status, 503, response)
            self.assertRegex(response.headers.get("Retry-After", ""), r"^[1-9][0-9]*$")
            body = response.json
            self.assertEqual(body["errorCode"], "GENERAL")
            self.assertEqual(body["key"], "any")
            self.assertEqual(server.request("POST", FLAG_PATH, body={}).status, 503)
            server.stop_cleanly()
        finally:
            server.remove()


class DatabaseDownTest(OfrepTestCase):
    """Evaluation needs no database: it keeps answering while PostgreSQL is
    stopped, after ensignd restarts while it is stopped, and the counts made
    meanwhile reach the database once it is back."""

    settings = {"usage_flush_interval_ms": 200}

    @classmethod
    def create_flags(cls):
        # In preview, with a preview key: nothing else evaluates it.
        cls.preview_key, _ = cls.fixture.sdk_key("preview")
        cls.flag_id = cls.fixture.flag("sturdy", "string", {"up": "up", "down": "down"},
                                       default="up", off="down", env_key="preview")

    def evaluate(self, key, body=None, headers=None, sdk_key=None, raw=None):
        return super().evaluate(key, body, headers, sdk_key or self.preview_key, raw)

    def assertResult(self, response, key, value, reason, variant):
        self.assertEqual(response.status, 200, response)
        body = response.json
        self.assertEqual((body["key"], body["value"], body["reason"], body["variant"]),
                         (key, value, reason, variant), body)
        self.assertEqual(body["metadata"]["environment"], "preview", body)

    def test_evaluation_survives_database_outages(self):
        self.assertEqual(self.evaluate("sturdy").status, 200)
        found = harness.wait_for(lambda: self.fixture.usage(self.flag_id) == {"up": 1}, 10, 0.1)
        self.assertIsNotNone(found, self.fixture.usage(self.flag_id))
        harness.stop_postgres()
        try:
            for _ in range(7):
                self.assertResult(self.evaluate("sturdy"), "sturdy", "up", "STATIC", "up")
            time.sleep(0.5)  # a few failed flushes
            self.assertEqual(self.bulk().status, 200)
        finally:
            harness.start_postgres()
        found = harness.wait_for(lambda: self.fixture.usage(self.flag_id) == {"up": 9}, 15, 0.2)
        self.assertIsNotNone(found, self.fixture.usage(self.flag_id))

        harness.stop_postgres()
        try:
            self.server.stop_cleanly()
            self.server.start()
            self.wait_served(lambda: self.evaluate("sturdy").status == 200)
            self.assertResult(self.evaluate("sturdy"), "sturdy", "up", "STATIC", "up")
            self.assertEqual(self.bulk().status, 200)
        finally:
            harness.start_postgres()
        self.fixture.set_default(self.flag_id, "down", env_key="preview")
        self.wait_served(lambda: self.evaluate("sturdy").json.get("variant") == "down", 15)


class FinalFlushTest(OfrepTestCase):
    """Counts still in shared memory at stop are written by the last flush,
    after every worker has exited."""

    settings = {"usage_flush_interval_ms": 3600000}

    @classmethod
    def create_flags(cls):
        cls.flag_id = cls.fixture.flag("late", env_key="preview")
        cls.preview_key, _ = cls.fixture.sdk_key("preview")

    def test_stop_flushes_the_last_counts(self):
        for _ in range(6):
            self.assertEqual(self.evaluate("late", sdk_key=self.preview_key).status, 200)
        self.assertEqual(self.fixture.usage(self.flag_id), {})
        self.server.stop_cleanly()
        self.assertEqual(self.fixture.usage(self.flag_id), {"on": 6})
        self.server.start()


class CorruptSnapshotTest(OfrepTestCase):
    """A damaged snapshot file is refused, never served, and replaced by the
    next build."""

    def test_truncated_file_is_refused_then_rebuilt(self):
        path = os.path.join(self.server.state_dir, "snapshot.bin")
        self.server.stop_cleanly()
        harness.stop_postgres()
        try:
            with open(path, "r+b") as f:
                f.truncate(os.path.getsize(path) // 2)
            self.server.start()
            time.sleep(0.5)
            response = self.bulk()
            self.assertEqual(response.status, 503, response)
            self.assertIn("no usable snapshot on disk", self.server.stderr())
        finally:
            harness.start_postgres()
        self.wait_served(lambda: self.bulk().status == 200, 15)
        self.assertEqual(self.server.sanitizer_reports(), [])


def npm_workdir():
    """A temporary copy of tests/e2e/npm with its dependencies installed (npm ci)."""
    workdir = tempfile.mkdtemp(prefix="ensign-e2e-npm.")
    scripts = [name for name in os.listdir(NPM_DIR) if name.endswith(".mjs")]
    for name in ["package.json", "package-lock.json", *scripts]:
        shutil.copy(os.path.join(NPM_DIR, name), workdir)
    result = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                            cwd=workdir, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        shutil.rmtree(workdir, ignore_errors=True)
        raise AssertionError(f"npm ci failed:\n{result.stdout}\n{result.stderr}")
    return workdir


class OpenFeatureSdkTest(OfrepTestCase):
    """The real OpenFeature JavaScript SDKs against ensignd: the server SDK
    with the OFREP provider (single evaluations) and the web SDK with the
    OFREP web provider (bulk evaluation, ETag polling)."""

    @classmethod
    def create_flags(cls):
        f = cls.fixture
        f.flag("sdk-bool")
        cls.watched = f.flag("sdk-string", "string", {"red": "red", "blue": "blue"},
                             default="red", off="blue")
        flag = f.flag("sdk-number", "number", {"small": 1, "big": 42.5}, default="small",
                      off="small")
        f.rule(flag, [{"attribute": "plan", "operator": "eq", "values": ["pro"]}],
               {"variant": "big"})
        f.flag("sdk-object", "json", {"cfg": {"theme": "dark", "size": 3}, "none": {}},
               default="cfg", off="none")
        f.flag("sdk-off", enabled=False)

    def test_javascript_sdks(self):
        workdir = npm_workdir()
        try:
            self.run_clients(workdir)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def run_clients(self, workdir):
        context = {"targetingKey": "user-7", "plan": "pro"}
        checks = [
            {"key": "sdk-bool", "type": "boolean", "default": False},
            {"key": "sdk-string", "type": "string", "default": "none"},
            {"key": "sdk-number", "type": "number", "default": -1},
            {"key": "sdk-object", "type": "object", "default": {"fallback": True}},
            {"key": "sdk-off", "type": "boolean", "default": True},
            {"key": "sdk-missing", "type": "string", "default": "fallback"},
        ]
        spec = {
            "baseUrl": f"http://127.0.0.1:{self.server.port}",
            "sdkKey": self.sdk_key,
            "server": [{**check, "context": context} for check in checks],
            "web": {"context": context, "pollMs": 250, "checks": checks, "watchKey": "sdk-string"},
        }
        proc = subprocess.Popen(["node", "ofrep-clients.mjs", json.dumps(spec)], cwd=workdir,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            lines = {}
            for phase in ("server", "web", "polled", "waiting"):
                lines[phase] = self.read_phase(proc, phase)
            self.check_resolutions(lines["server"]["results"])
            self.check_resolutions(lines["web"]["results"])
            initial = lines["web"]["requests"]
            self.assertEqual([r["status"] for r in initial], [200], initial)
            self.assertIsNone(initial[0]["ifNoneMatch"], initial)
            self.assertTrue(initial[0]["etag"], initial)
            self.check_polling(lines["polled"]["requests"])
            self.fixture.set_default(self.watched, "blue")
            proc.stdin.write("changed\n")
            proc.stdin.flush()
            changed = self.read_phase(proc, "changed")
            self.assertTrue(changed["event"], changed)
            self.assertEqual(changed["result"]["value"], "blue", changed)
            self.assertEqual(changed["result"]["variant"], "blue", changed)
            self.assertIn(200, [r["status"] for r in changed["requests"]], changed)
            self.assertEqual(proc.wait(30), 0, proc.stderr.read())
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                stream.close()

    def read_phase(self, proc, phase):
        line = proc.stdout.readline()
        if not line:
            proc.wait(10)
            self.fail(f"node exited before phase {phase}: {proc.stderr.read()}")
        data = json.loads(line)
        self.assertEqual(data["phase"], phase, data)
        return data

    def check_resolutions(self, results):
        got = {r["key"]: r for r in results}
        expected = {
            "sdk-bool": (True, "on", "STATIC"),
            "sdk-string": ("red", "red", "STATIC"),
            "sdk-number": (42.5, "big", "TARGETING_MATCH"),
            "sdk-object": ({"theme": "dark", "size": 3}, "cfg", "STATIC"),
            "sdk-off": (False, "off", "DISABLED"),
        }
        for key, (value, variant, reason) in expected.items():
            with self.subTest(key=key):
                self.assertEqual(got[key]["value"], value, got[key])
                self.assertEqual(got[key]["variant"], variant, got[key])
                self.assertEqual(got[key]["reason"], reason, got[key])
                self.assertIsNone(got[key]["errorCode"], got[key])
                self.assertEqual(got[key]["metadata"].get("environment"), "production", got[key])
        missing = got["sdk-missing"]
        self.assertEqual(missing["value"], "fallback", missing)
        self.assertEqual(missing["reason"], "ERROR", missing)
        self.assertEqual(missing["errorCode"], "FLAG_NOT_FOUND", missing)

    def check_polling(self, requests):
        self.assertGreaterEqual(len(requests), 2, requests)
        statuses = {r["status"] for r in requests}
        self.assertEqual(statuses, {304}, requests)
        for r in requests:
            self.assertTrue(r["ifNoneMatch"], r)
            self.assertEqual(r["etag"], r["ifNoneMatch"], r)


if __name__ == "__main__":
    unittest.main()
