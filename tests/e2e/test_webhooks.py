"""test_webhooks.py - end-to-end tests of webhooks (doc/choices.md
"Webhooks"): the /v1/orgs/{org}/webhooks routes (roles, scopes, other
organizations, the secret shown once, 404s, bad bodies), the outbox written
by the change's own transaction, and the deliverer: two nodes on one
database deliver each of 100 changes exactly once with a valid signature
and the flag's state before and after; a receiver failing three times then
succeeding; a hanging receiver (the 10 s timeout, then a retry); a redirect
that is not followed; a killed deliverer's claim held until its lease ends;
https verified (a self-signed receiver gets nothing); and
webhook_allow_private off refusing loopback URLs at creation and at
delivery.

The receiver is a Python HTTP server on 127.0.0.1 only: no test here sends
anything to another address. Run by tests/e2e/run (each class has its own
database and ensignd).
"""

import hashlib
import hmac
import http.server
import json
import os
import shutil
import signal
import ssl
import subprocess
import tempfile
import threading
import time
import unittest

import harness
from test_members import OrgTestCase

HOOK_FIELDS = {"id", "url", "events", "description", "active", "consecutiveFailures",
               "deactivatedAt", "createdAt", "updatedAt"}
DELIVERY_FIELDS = {"id", "eventId", "action", "status", "responseCode", "durationMs", "attempts",
                   "nextAttemptAt", "lastError", "createdAt", "deliveredAt"}
BODY_FIELDS = {"id", "action", "org", "actor", "at", "location", "summary", "before", "after"}


def self_signed_context(directory):
    """A server TLS context with a certificate for 127.0.0.1 that no CA
    signed (made with the openssl command)."""
    cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", key, "-out", cert], check=True, capture_output=True, timeout=60)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context


class Receiver:
    """An HTTP server on 127.0.0.1 that records every request. Paths:
    /ok answers 204; /flaky answers 500 to its first three requests, then
    200; /hang holds its first request past the deliverer's timeout, then
    answers 200; /redirect answers 302 to /ok."""

    def __init__(self, tls=None):
        self.tls = tls
        self.lock = threading.Lock()
        self.requests = []
        self.counts = {}
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                path = self.path
                with receiver.lock:
                    receiver.counts[path] = receiver.counts.get(path, 0) + 1
                    n = receiver.counts[path]
                    receiver.requests.append((path, dict(self.headers), body, time.monotonic()))
                if path.startswith("/flaky") and n <= 3:
                    self.answer(500)
                elif path.startswith("/hang") and n == 1:
                    time.sleep(12)
                    self.answer(200)
                elif path.startswith("/redirect"):
                    self.send_response(302)
                    self.send_header("Location", "/ok-after-redirect")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                else:
                    self.answer(204 if path.startswith("/ok") else 200)

            def answer(self, status):
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                except OSError:
                    pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path):
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}{path}"

    def received(self, prefix):
        with self.lock:
            return [r for r in self.requests if r[0].startswith(prefix)]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def signature_ok(secret, headers, body):
    """Ensign-Signature t=UNIX,v1=HEX where HEX = HMAC-SHA256(secret, t.body)."""
    value = headers.get("Ensign-Signature", "")
    parts = dict(p.split("=", 1) for p in value.split(",") if "=" in p)
    if set(parts) != {"t", "v1"}:
        return False
    mac = hmac.new(secret.encode(), parts["t"].encode() + b"." + body, hashlib.sha256)
    return hmac.compare_digest(mac.hexdigest(), parts["v1"])


class WebhookCase(OrgTestCase):
    settings = {"webhook_allow_private": "on", "webhook_retry_base_ms": 200}

    @classmethod
    def prepare(cls):
        super().prepare()
        cls.receiver = Receiver()

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            cls.receiver.close()

    def hook(self, path, events=("*",), token="admin", org="acme", **fields):
        body = {"url": self.receiver.url(path), "events": list(events), **fields}
        return self.assertStatus(self.call("POST", f"/{org}/webhooks", token, body=body),
                                 201)["webhook"]

    def deliveries(self, hook_id, token="admin", org="acme", query=""):
        return self.assertStatus(
            self.call("GET", f"/{org}/webhooks/{hook_id}/deliveries{query}", token),
            200)["deliveries"]

    def wait_deliveries(self, hook_id, predicate, timeout):
        def newest():
            return self.deliveries(hook_id, query="?limit=200")
        found = harness.wait_for(lambda: predicate(newest()) or None, timeout, interval=0.2)
        self.assertIsNotNone(found, newest())

    def make_flag(self, key):
        self.assertStatus(self.call("POST", "/acme/flags", "member", body={"slug": key}), 201)

    def toggle(self, key, enabled):
        self.assertStatus(self.call("PATCH", f"/acme/flags/{key}/environments/production",
                                    "member", body={"enabled": enabled}), 200)


class WebhookRoutesTest(WebhookCase):

    @classmethod
    def prepare(cls):
        super().prepare()
        # an inactive webhook (never sent to) with deliveries of another month
        cls.old_hook = cls.database.query(
            "INSERT INTO webhooks (org_id, url, events, secret, active)"
            " SELECT id, 'http://127.0.0.1:9/old', '{flag.created}', 'svc_whk_x', false"
            " FROM orgs WHERE slug = 'acme' RETURNING id")
        cls.database.query(
            "INSERT INTO webhook_deliveries (webhook_id, event_id, action, body, status,"
            " updated_at) SELECT '" + cls.old_hook + "', gen_random_uuid(), 'flag.created',"
            " '{}', s, now() - d * interval '1 day'"
            " FROM (VALUES ('delivered', 31), ('failed', 31), ('failed', 29),"
            " ('pending', 40)) AS v(s, d)")

    def test_finished_deliveries_are_kept_thirty_days(self):
        def kept():
            rows = self.database.query(
                "SELECT string_agg(status, ',' ORDER BY status) FROM webhook_deliveries"
                f" WHERE webhook_id = '{self.old_hook}'")
            return rows if rows == "failed,pending" else None
        self.assertIsNotNone(harness.wait_for(kept, 10, interval=0.2), self.database.query(
            "SELECT string_agg(status, ',') FROM webhook_deliveries"
            f" WHERE webhook_id = '{self.old_hook}'"))

    def test_create_shows_the_secret_once(self):
        hook = self.hook("/ok/shown-once", ["flag.*", "segment.created"], description="chat")
        self.assertEqual(set(hook), HOOK_FIELDS | {"secret"})
        self.assertRegex(hook["secret"], r"^svc_whk_[0-9A-Za-z]{43}$")
        self.assertEqual(hook["events"], ["flag.*", "segment.created"])
        self.assertEqual(hook["description"], "chat")
        self.assertTrue(hook["active"])
        self.assertEqual(hook["consecutiveFailures"], 0)
        read = self.assertStatus(self.call("GET", f"/acme/webhooks/{hook['id']}", "admin"),
                                 200)["webhook"]
        self.assertEqual(read, {k: v for k, v in hook.items() if k != "secret"})
        listed = self.assertStatus(self.call("GET", "/acme/webhooks", "admin"), 200)
        self.assertEqual(set(listed), {"webhooks"})
        self.assertTrue(all("secret" not in item for item in listed["webhooks"]), listed)
        self.assertNotIn(hook["secret"], json.dumps(listed))

    def test_patch_and_delete(self):
        hook = self.hook("/ok/patch")
        path = f"/acme/webhooks/{hook['id']}"
        patched = self.assertStatus(self.call("PATCH", path, "admin", body={
            "events": ["flag.created"], "description": None, "active": False}), 200)["webhook"]
        self.assertEqual(patched["events"], ["flag.created"])
        self.assertIsNone(patched["description"])
        self.assertFalse(patched["active"])
        self.assertNotIn("secret", patched)
        patched = self.assertStatus(self.call("PATCH", path, "admin", body={
            "url": self.receiver.url("/ok/patched"), "active": True}), 200)["webhook"]
        self.assertEqual(patched["url"], self.receiver.url("/ok/patched"))
        self.assertTrue(patched["active"])
        self.assertAck(self.call("DELETE", path, "admin"))
        self.assertV1Error(self.call("GET", path, "admin"), 404)
        self.assertV1Error(self.call("DELETE", path, "admin"), 404)
        self.assertV1Error(self.call("PATCH", path, "admin", body={"active": True}), 404)
        actions = self.database.query(
            "SELECT string_agg(action, ',' ORDER BY seq) FROM audit_events"
            f" WHERE location = 'webhooks/{hook['id']}'")
        self.assertEqual(actions, "webhook.created,webhook.updated,webhook.updated,"
                                  "webhook.deleted")

    def test_roles_and_scopes(self):
        hook = self.hook("/ok/roles")
        body = {"url": self.receiver.url("/ok/x"), "events": ["*"]}
        for token in ("member", "viewer", "readonly"):
            with self.subTest(token=token):
                self.assertV1Error(self.call("POST", "/acme/webhooks", token, body=body), 403)
                if token != "readonly":
                    self.assertV1Error(self.call("GET", "/acme/webhooks", token), 403)
        for token in ("owner", "admin", "org"):
            with self.subTest(token=token):
                self.assertStatus(self.call("GET", f"/acme/webhooks/{hook['id']}", token), 200)
        # a token without the audit scope
        made = self.server.request("POST", "/me/tokens", body={
            "name": "flags only", "scopes": {"flags": "write"}},
            headers={"Authorization": f"Bearer {self.tokens['admin']}"})
        self.assertEqual(made.status, 200, made)
        scoped = made.json["token"]
        self.assertV1Error(self.call("POST", "/acme/webhooks", scoped, body=body), 403)
        audit_read = self.server.request("POST", "/me/tokens", body={
            "name": "audit read", "scopes": {"audit": "read"}},
            headers={"Authorization": f"Bearer {self.tokens['admin']}"}).json["token"]
        self.assertStatus(self.call("GET", "/acme/webhooks", audit_read), 200)
        self.assertV1Error(self.call("POST", "/acme/webhooks", audit_read, body=body), 403)
        self.assertV1Error(self.call("GET", "/acme/webhooks", scoped), 403)
        self.assertV1Error(self.call("GET", "/acme/webhooks", None), 401)

    def test_other_organization_is_404(self):
        hook = self.hook("/ok/iso")
        for token in ("outsider", "outsider_org"):
            with self.subTest(token=token):
                self.assertV1Error(self.call("GET", f"/acme/webhooks/{hook['id']}", token), 404)
                self.assertV1Error(self.call("GET", "/acme/webhooks", token), 404)
        # globex's owner cannot reach acme's webhook through globex either
        self.assertV1Error(self.call("GET", f"/globex/webhooks/{hook['id']}", "outsider"), 404)
        self.assertV1Error(self.call("PATCH", f"/globex/webhooks/{hook['id']}", "outsider",
                                     body={"active": False}), 404)
        self.assertV1Error(self.call("DELETE", f"/globex/webhooks/{hook['id']}", "outsider"),
                           404)
        self.assertV1Error(self.call("GET", f"/globex/webhooks/{hook['id']}/deliveries",
                                     "outsider"), 404)

    def test_unknown_ids_are_404(self):
        for path in ("/acme/webhooks/not-a-uuid", "/acme/webhooks/" + "0" * 8 + "-0000-0000-"
                     "0000-" + "0" * 12):
            with self.subTest(path=path):
                self.assertV1Error(self.call("GET", path, "admin"), 404)
                self.assertV1Error(self.call("GET", path + "/deliveries", "admin"), 404)
        hook = self.hook("/ok/ids")
        self.assertV1Error(self.call("POST", f"/acme/webhooks/{hook['id']}/deliveries/nope"
                                     "/redeliver", "admin"), 404)
        self.assertV1Error(self.call(
            "POST", f"/acme/webhooks/{hook['id']}/deliveries/{hook['id']}/redeliver", "admin"),
            404)

    def test_bad_bodies(self):
        url = self.receiver.url("/ok/bad")
        cases = [
            ({"events": ["*"]}, "url"),
            ({"url": url}, "events"),
            ({"url": "ftp://127.0.0.1/", "events": ["*"]}, "url"),
            ({"url": "https://user@127.0.0.1/", "events": ["*"]}, "url"),
            ({"url": "https://127.0.0.1/#x", "events": ["*"]}, "url"),
            ({"url": url, "events": []}, "events"),
            ({"url": url, "events": ["flag"]}, "events[0]"),
            ({"url": url, "events": ["Flag.*"]}, "events[0]"),
            ({"url": url, "events": ["*.created"]}, "events[0]"),
            ({"url": url, "events": ["flag.*", "flag.*"]}, "events[1]"),
            ({"url": url, "events": [f"a.b{i}" for i in range(21)]}, "events"),
            ({"url": url, "events": ["*"], "description": "x" * 501}, "description"),
            ({"url": url, "events": ["*"], "secret": "mine"}, "secret"),
            ({"url": 5, "events": ["*"]}, "url"),
        ]
        for body, field in cases:
            with self.subTest(body=body):
                self.assertInvalid(self.call("POST", "/acme/webhooks", "admin", body=body), field)
        self.assertV1Error(self.call("POST", "/acme/webhooks", "admin", raw=b"{nope"), 400)
        self.assertInvalid(self.call("POST", "/acme/webhooks", "admin", raw=b"[1]"), "body")
        hook = self.hook("/ok/bad-patch")
        path = f"/acme/webhooks/{hook['id']}"
        self.assertInvalid(self.call("PATCH", path, "admin", body={"active": "yes"}), "active")
        self.assertInvalid(self.call("PATCH", path, "admin", body={"url": "nope"}), "url")
        self.assertInvalid(self.call("PATCH", path, "admin", body={"secret": "x"}), "secret")
        self.assertInvalid(self.call("GET", path + "/deliveries?limit=0", "admin"), "limit")
        self.assertInvalid(self.call("GET", path + "/deliveries?limit=201", "admin"), "limit")

    def test_a_rolled_back_change_has_no_delivery(self):
        hook = self.hook("/ok/rollback", ["flag.*"])
        self.make_flag("rollback-flag")
        # a second creation of the same key fails (409): no event, no delivery
        self.assertV1Error(self.call("POST", "/acme/flags", "member",
                                     body={"slug": "rollback-flag"}), 409)
        self.wait_deliveries(hook["id"], lambda ds: len(ds) == 1 and
                             ds[0]["status"] == "delivered", 10)
        time.sleep(0.5)
        self.assertEqual(len(self.deliveries(hook["id"])), 1)

    def test_patterns_select_events(self):
        hook = self.hook("/ok/patterns", ["segment.created"])
        self.make_flag("not-announced")
        self.assertStatus(self.call("POST", "/acme/segments", "member", body={
            "key": "beta", "name": "Beta"}), 201)
        self.wait_deliveries(hook["id"], lambda ds: len(ds) == 1 and
                             ds[0]["status"] == "delivered", 10)
        self.assertEqual(self.deliveries(hook["id"])[0]["action"], "segment.created")
        sent = self.receiver.received("/ok/patterns")
        self.assertEqual(len(sent), 1)
        body = json.loads(sent[0][2])
        self.assertEqual(set(body), BODY_FIELDS)
        self.assertIsNone(body["before"])
        self.assertIsNone(body["after"])
        self.assertEqual(body["org"], "acme")
        self.assertEqual(body["location"], "segments/beta")

    def test_redeliver(self):
        hook = self.hook("/ok/redeliver", ["flag.created"])
        self.make_flag("redelivered")
        self.wait_deliveries(hook["id"], lambda ds: ds and ds[0]["status"] == "delivered", 10)
        first = self.deliveries(hook["id"])[0]
        self.assertEqual(set(first), DELIVERY_FIELDS)
        again = self.assertStatus(self.call(
            "POST", f"/acme/webhooks/{hook['id']}/deliveries/{first['id']}/redeliver", "admin"),
            201)["delivery"]
        self.assertNotEqual(again["id"], first["id"])
        self.assertEqual(again["eventId"], first["eventId"])
        self.wait_deliveries(hook["id"], lambda ds: len(ds) == 2 and
                             all(d["status"] == "delivered" for d in ds), 10)
        sent = self.receiver.received("/ok/redeliver")
        self.assertEqual(len(sent), 2)
        self.assertEqual(sent[0][2], sent[1][2])  # the same body
        self.assertEqual({s[1]["Ensign-Delivery"] for s in sent}, {first["id"], again["id"]})
        # an inactive webhook: 409
        self.assertStatus(self.call("PATCH", f"/acme/webhooks/{hook['id']}", "admin",
                                    body={"active": False}), 200)
        self.assertV1Error(self.call(
            "POST", f"/acme/webhooks/{hook['id']}/deliveries/{first['id']}/redeliver", "admin"),
            409)
        self.assertV1Error(self.call(
            "POST", f"/acme/webhooks/{hook['id']}/deliveries/{first['id']}/redeliver", "member"),
            403)


class WebhookRetriesTest(WebhookCase):

    def test_failing_three_times_then_delivered(self):
        hook = self.hook("/flaky", ["flag.created"])
        self.make_flag("flaky-flag")
        self.wait_deliveries(hook["id"], lambda ds: ds and ds[0]["status"] == "delivered", 30)
        delivery = self.deliveries(hook["id"])[0]
        self.assertEqual(delivery["attempts"], 4)
        self.assertEqual(delivery["responseCode"], 200)
        self.assertIsNone(delivery["nextAttemptAt"])
        sent = self.receiver.received("/flaky")
        self.assertEqual(len(sent), 4)
        self.assertEqual(len({s[1]["Ensign-Delivery"] for s in sent}), 1)
        gaps = [b[3] - a[3] for a, b in zip(sent, sent[1:])]
        # backoff: 200 ms doubling, jitter 0.5x to 1.5x
        self.assertGreater(gaps[0], 0.09, gaps)
        self.assertGreater(gaps[2], 0.39, gaps)
        read = self.assertStatus(self.call("GET", f"/acme/webhooks/{hook['id']}", "admin"),
                                 200)["webhook"]
        self.assertEqual(read["consecutiveFailures"], 0)

    def test_hanging_receiver_times_out_then_retries(self):
        hook = self.hook("/hang", ["flag.created"])
        self.make_flag("hang-flag")
        self.wait_deliveries(hook["id"], lambda ds: ds and ds[0]["attempts"] >= 1 and
                             ds[0]["lastError"] is not None, 20)
        failed = self.deliveries(hook["id"])[0]
        self.assertEqual(failed["status"], "pending")
        self.assertGreaterEqual(failed["durationMs"], 9500)
        self.assertIsNone(failed["responseCode"])
        self.wait_deliveries(hook["id"], lambda ds: ds[0]["status"] == "delivered", 20)
        self.assertEqual(self.deliveries(hook["id"])[0]["attempts"], 2)

    def test_a_crashed_deliverers_row_waits_for_its_lease(self):
        hook = self.hook("/hang-crash", ["flag.created"])
        self.make_flag("crash-flag")
        # the receiver holds the first request: the deliverer dies meanwhile
        self.assertTrue(harness.wait_for(lambda: self.receiver.received("/hang-crash"), 10))
        old = self.server.child_with_title("ensignd: deliverer")
        os.kill(old, signal.SIGKILL)
        self.assertTrue(harness.wait_for(
            lambda: self.server.child_with_title("ensignd: deliverer") not in (None, old), 10))
        # the claim's lease (60 s) holds: the new deliverer does not send it
        time.sleep(3)
        self.assertEqual(len(self.receiver.received("/hang-crash")), 1)
        delivery = self.deliveries(hook["id"])[0]
        self.assertEqual((delivery["status"], delivery["attempts"]), ("pending", 1))
        self.assertIsNotNone(delivery["nextAttemptAt"])  # the lease's end
        # the lease ends (as 60 s would): claimed again, sent again, same id
        self.database.query("UPDATE webhook_deliveries SET claimed_until = now()"
                            f" WHERE webhook_id = '{hook['id']}'")
        self.wait_deliveries(hook["id"], lambda ds: ds[0]["status"] == "delivered", 10)
        sent = self.receiver.received("/hang-crash")
        self.assertEqual(len(sent), 2)
        self.assertEqual(sent[0][1]["Ensign-Delivery"], sent[1][1]["Ensign-Delivery"])
        self.assertEqual(sent[0][2], sent[1][2])
        self.assertEqual(self.deliveries(hook["id"])[0]["attempts"], 2)

    def test_redirect_is_not_followed(self):
        hook = self.hook("/redirect", ["flag.created"])
        self.make_flag("redirect-flag")
        self.wait_deliveries(hook["id"], lambda ds: ds and ds[0]["attempts"] >= 2, 20)
        delivery = self.deliveries(hook["id"])[0]
        self.assertEqual(delivery["status"], "pending")
        self.assertEqual(delivery["responseCode"], 302)
        self.assertEqual(self.receiver.received("/ok-after-redirect"), [])
        self.assertStatus(self.call("PATCH", f"/acme/webhooks/{hook['id']}", "admin",
                                    body={"active": False}), 200)

    def test_hundred_failures_deactivate_and_notify(self):
        hook = self.hook("/ok/deactivate", ["flag.created"])
        self.database.query(f"UPDATE webhooks SET consecutive_failures = 99,"
                            f" url = 'http://127.0.0.1:{self.receiver.port}/flaky-deact'"
                            f" WHERE id = '{hook['id']}'")
        self.make_flag("deactivating")
        found = harness.wait_for(lambda: not self.assertStatus(self.call(
            "GET", f"/acme/webhooks/{hook['id']}", "admin"), 200)["webhook"]["active"], 20,
            interval=0.2)
        self.assertTrue(found)
        read = self.assertStatus(self.call("GET", f"/acme/webhooks/{hook['id']}", "admin"),
                                 200)["webhook"]
        self.assertEqual(read["consecutiveFailures"], 100)
        self.assertIsNotNone(read["deactivatedAt"])
        kinds = self.database.query(
            "SELECT string_agg(u.email, ',' ORDER BY u.email) FROM notifications n"
            " JOIN users u ON u.id = n.user_id WHERE n.kind = 'webhook.deactivated'")
        self.assertEqual(kinds, "adele@example.com,alice@example.com")
        self.assertEqual(self.database.query(
            "SELECT count(*) FROM audit_events WHERE action = 'webhook.deactivated'"), "1")


class WebhookTlsTest(WebhookCase):
    """https is verified against the system's CA store: a receiver on
    127.0.0.1 with a self-signed certificate is never sent a body."""

    @classmethod
    def prepare(cls):
        super().prepare()
        cls.tls_dir = tempfile.mkdtemp(prefix="ensign-e2e-tls.")
        cls.tls_receiver = Receiver(self_signed_context(cls.tls_dir))

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            cls.tls_receiver.close()
            shutil.rmtree(cls.tls_dir, ignore_errors=True)

    def test_an_unverified_certificate_is_a_failure(self):
        url = self.tls_receiver.url("/ok/tls")
        self.assertTrue(url.startswith("https://127.0.0.1:"))
        hook = self.assertStatus(self.call("POST", "/acme/webhooks", "admin", body={
            "url": url, "events": ["flag.created"]}), 201)["webhook"]
        self.make_flag("tls-flag")
        self.wait_deliveries(hook["id"], lambda ds: ds and ds[0]["lastError"] is not None, 15)
        delivery = self.deliveries(hook["id"])[0]
        self.assertEqual(delivery["status"], "pending")
        self.assertIsNone(delivery["responseCode"])
        self.assertIn("certificate", delivery["lastError"].lower(), delivery)
        self.assertEqual(self.tls_receiver.received("/"), [])
        self.assertStatus(self.call("PATCH", f"/acme/webhooks/{hook['id']}", "admin",
                                    body={"active": False}), 200)


class WebhookTwoNodesTest(harness.SecondNode, WebhookCase):
    """Two ensignd on one database: every change is delivered once."""

    second_node_workers = 1

    def test_hundred_changes_delivered_once_each(self):
        self.assertIsNotNone(self.server.child_with_title("ensignd: deliverer"))
        self.assertIsNotNone(self.node_b.child_with_title("ensignd: deliverer"))
        hook = self.hook("/ok/many", ["flag.*", "environment.updated"])
        secret = hook["secret"]
        self.make_flag("many")
        expected = 1
        for i in range(99):
            self.toggle("many", i % 2 == 0)
            expected += 1
        self.wait_deliveries(hook["id"], lambda ds: len(ds) == expected and
                             all(d["status"] == "delivered" for d in ds), 60)
        self.assertEqual(len(self.deliveries(hook["id"], query="?limit=200")), 100)
        self.assertEqual(len(self.deliveries(hook["id"])), 50)  # the default limit
        sent = self.receiver.received("/ok/many")
        self.assertEqual(len(sent), 100)
        ids = [s[1]["Ensign-Delivery"] for s in sent]
        self.assertEqual(len(set(ids)), 100)
        bodies = [json.loads(s[2]) for s in sent]
        for (path, headers, raw, _), body in zip(sent, bodies):
            self.assertTrue(signature_ok(secret, headers, raw), headers)
            self.assertEqual(headers["Ensign-Event"], body["action"])
            self.assertEqual(headers["Content-Type"], "application/json")
            self.assertEqual(set(body), BODY_FIELDS)
        # before/after: the production switch around each toggle
        by_event = {}
        for body in bodies:
            by_event[body["id"]] = body
        toggles = sorted((b for b in bodies if b["action"] == "environment.updated"),
                         key=lambda b: b["at"])
        self.assertEqual(len(toggles), 99)
        for i, body in enumerate(toggles):
            after = body["after"]["environments"]["production"]["enabled"]
            before = body["before"]["environments"]["production"]["enabled"]
            self.assertEqual(after, i % 2 == 0)
            self.assertEqual(before, i % 2 == 1)
            self.assertEqual(body["after"]["key"], "many")
            self.assertEqual(body["location"], "flags/many/environments/production")
        created = [b for b in bodies if b["action"] == "flag.created"]
        self.assertEqual(len(created), 1)
        self.assertIsNone(created[0]["before"])
        self.assertFalse(created[0]["after"]["environments"]["production"]["enabled"])
        # both nodes did some of the work (not required, but the claim is shared)
        logs = self.server.stderr() + self.node_b.stderr()
        self.assertEqual(harness.sanitizer_reports(logs), [])

    def test_deleted_flag_has_no_after(self):
        hook = self.hook("/ok/deleted", ["flag.deleted"])
        self.make_flag("doomed")
        self.assertAck(self.call("DELETE", "/acme/flags/doomed", "member"))
        self.wait_deliveries(hook["id"], lambda ds: ds and ds[0]["status"] == "delivered", 10)
        body = json.loads(self.receiver.received("/ok/deleted")[0][2])
        self.assertEqual(body["before"]["key"], "doomed")
        self.assertIsNone(body["after"])


class WebhookPrivateOffTest(WebhookCase):
    """webhook_allow_private off (the default)."""

    settings = {"webhook_retry_base_ms": 200}

    def test_loopback_urls_are_refused_at_creation(self):
        for url in ("https://127.0.0.2/", f"http://localhost:{self.receiver.port}/",
                    "http://[::1]/", "http://10.1.2.3/", "http://[::ffff:192.168.0.1]/",
                    "http://169.254.169.254/latest", "http://100.64.0.1/", "http://0.0.0.0/"):
            with self.subTest(url=url):
                errors = self.assertInvalid(self.call("POST", "/acme/webhooks", "admin", body={
                    "url": url, "events": ["*"]}), "url")
                self.assertIn("webhook_allow_private", errors["url"][0])
        hook_count = self.database.query(
            "SELECT count(*) FROM webhooks WHERE url NOT LIKE 'http://127.0.0.1:9/%'")
        self.assertEqual(hook_count, "0")

    def test_patch_to_a_loopback_url_is_refused(self):
        # a webhook written while it was allowed (straight into the table);
        # its pattern matches nothing this test does, so nothing is sent
        hook_id = self.database.query(
            "INSERT INTO webhooks (org_id, url, events, secret)"
            " SELECT id, 'http://127.0.0.1:9/', '{segment.created}', 'svc_whk_x'"
            " FROM orgs WHERE slug = 'acme' RETURNING id")
        path = f"/acme/webhooks/{hook_id}"
        self.assertInvalid(self.call("PATCH", path, "admin",
                                     body={"url": "http://[::1]:9/"}), "url")
        # a change that leaves the url alone is not judged again
        hook = self.assertStatus(self.call("PATCH", path, "admin",
                                           body={"description": "kept"}), 200)["webhook"]
        self.assertEqual((hook["url"], hook["description"]), ("http://127.0.0.1:9/", "kept"))
        self.assertAck(self.call("DELETE", path, "admin"))

    def test_unresolvable_name_is_refused(self):
        self.assertInvalid(self.call("POST", "/acme/webhooks", "admin", body={
            "url": "https://no-such-host.invalid/", "events": ["*"]}), "url")


class WebhookPrivateOffAtDeliveryTest(WebhookCase):
    """A webhook created while allowed, then webhook_allow_private off: the
    deliverer refuses the connection."""

    def test_delivery_to_loopback_is_refused_after_the_switch(self):
        hook = self.hook("/ok/switched", ["flag.created"])
        old = self.server.child_with_title("ensignd: deliverer")
        self.server.write_config(webhook_allow_private="off")
        self.server.signal(signal.SIGHUP)
        self.assertTrue(harness.wait_for(
            lambda: self.server.child_with_title("ensignd: deliverer") not in (None, old), 10))
        self.make_flag("switched")
        self.wait_deliveries(hook["id"], lambda ds: ds and ds[0]["attempts"] >= 1 and
                             ds[0]["lastError"] is not None, 15)
        delivery = self.deliveries(hook["id"])[0]
        self.assertEqual(delivery["status"], "pending")
        self.assertIsNone(delivery["responseCode"])
        self.assertEqual(self.receiver.received("/ok/switched"), [])
        self.assertIn("refusing to connect to a loopback address", self.server.stderr())


if __name__ == "__main__":
    unittest.main()
