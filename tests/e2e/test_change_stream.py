"""test_change_stream.py - end-to-end tests of the organization change
stream, GET /v1/orgs/{org}/events (doc/choices.md "The organization change
stream"), and of GET /orgs/{slug}/audit/verify.

The stream: a "connected" event naming the chain position, each audit
event as it is committed (id: its seq, data: {id, action, actor, location,
summary, at}) within a bound (the measured delay is printed), replay of
exactly what a client missed with Last-Event-ID (10 changes; 1,000 is the
most, 1,001 gets one "reset"), no secret (a token and an SDK key created
while streaming) and no flag value in the data, the heartbeat comment,
refusals (401, 404 for another organization, 403 for a token without
scope audit), the session cookie (and the end of its stream after a
logout), the end of a removed member's stream, the caps (503 with
Retry-After), 200 streams of one organization served by one read per
worker (counted from the debug log), ten organizations touched by one
statement on a worker that runs four reads at once, a clean end on SIGHUP with catch-up,
and a lost database session (the workers LISTEN again). Verify: ok, then broken after a row
of the test database is edited (brokenAt names it), a deleted tail,
admin only (viewer and member 403, another organization 404).

The heartbeat is shortened with ENSIGN_STREAM_HEARTBEAT_MS (ensignd(8)).
Run by tests/e2e/run.
"""

import json
import os
import signal
import time

import harness
from test_members import OrgTestCase
from test_sessions import PASSWORD, make_user
from test_streams import Stream

HEARTBEAT_MS = 300
DATA_FIELDS = {"id", "action", "actor", "location", "summary", "at"}
SECRET_VALUE = "value-that-must-never-stream"
LIVE_BOUND_S = 5.0


class ChangeStreamCase(OrgTestCase):

    @classmethod
    def setUpClass(cls):
        os.environ["ENSIGN_STREAM_HEARTBEAT_MS"] = str(HEARTBEAT_MS)
        try:
            super().setUpClass()
        finally:
            del os.environ["ENSIGN_STREAM_HEARTBEAT_MS"]

    def open_stream(self, token="viewer", org="acme", headers=None, expect=200):
        sent = dict(headers or {})
        secret = self.tokens.get(token, token) if token is not None else None
        if secret is not None:
            sent["Authorization"] = f"Bearer {secret}"
        stream = Stream(self.server.port, f"/v1/orgs/{org}/events", sent)
        self.addCleanup(stream.close)
        self.assertEqual(stream.status, expect, stream.text)
        if expect == 200:
            self.assertTrue(stream.headers["content-type"].startswith("text/event-stream"))
        return stream

    def connected(self, stream):
        """Waits for the first event (connected); returns its id (the position)."""
        self.assertTrue(stream.wait(lambda s: s.events(), 5), stream.text)
        first = stream.events()[0]
        self.assertEqual(first.get("event"), "connected", first)
        self.assertEqual(first["data"], {"id": int(first["id"])})
        return int(first["id"])

    def audit_events(self, stream):
        return [e for e in stream.events() if "event" not in e]

    def head(self, org="acme"):
        return int(self.database.query(
            "SELECT COALESCE(max(e.seq), 0) FROM audit_events e JOIN orgs o ON o.id = e.org_id"
            f" WHERE o.slug = '{org}'"))

    def make_segment(self, key, token="member"):
        self.assertStatus(self.call("POST", "/acme/segments", token,
                                    {"key": key, "name": "Stream " + key}), 201)

    def add_events(self, n, org="acme"):
        """n audit events straight into the test database (each one links
        itself to the chain: the insert trigger)."""
        self.database.query(
            "INSERT INTO audit_events (org_id, actor_name, action, summary, location)"
            f" SELECT o.id, 'bulk', 'test.bulk', 'Bulk event ' || i, 'bulk/' || i"
            f"   FROM orgs o, generate_series(1, {n}) i WHERE o.slug = '{org}'")


class ChangeStreamTest(ChangeStreamCase):

    def test_live_events_arrive_with_their_chain_position(self):
        stream = self.open_stream()
        position = self.connected(stream)
        self.assertEqual(position, self.head())
        started = time.monotonic()
        self.make_segment("live-1")
        self.assertTrue(stream.wait(lambda s: self.audit_events(s), LIVE_BOUND_S), stream.text)
        delay = time.monotonic() - started
        print(f"\n  change stream: event arrived {delay * 1000:.0f} ms after the write was sent")
        event = self.audit_events(stream)[0]
        self.assertEqual(int(event["id"]), position + 1)
        data = event["data"]
        self.assertEqual(set(data), DATA_FIELDS, data)
        self.assertEqual(data["action"], "segment.created")
        self.assertEqual(data["location"], "segments/live-1")
        self.assertEqual(data["summary"], "Created segment live-1")
        self.assertEqual(data["actor"], {"id": self.user_ids["member"], "name": "Mel Member"})
        self.assertRegex(data["at"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        stored = self.database.query(
            f"SELECT id FROM audit_events WHERE location = 'segments/live-1'")
        self.assertEqual(data["id"], stored)

    def test_a_reconnect_replays_the_ten_missed_events_in_order(self):
        stream = self.open_stream()
        position = self.connected(stream)
        stream.close()
        for i in range(10):
            self.make_segment(f"missed-{i}")
        again = self.open_stream(headers={"Last-Event-ID": str(position)})
        self.assertTrue(again.wait(lambda s: len(self.audit_events(s)) >= 10, 5), again.text)
        time.sleep(0.3)
        again.wait(lambda s: False, 0.2)
        events = self.audit_events(again)
        self.assertEqual([int(e["id"]) for e in events], list(range(position + 1, position + 11)))
        self.assertEqual([e["data"]["location"] for e in events],
                         [f"segments/missed-{i}" for i in range(10)])
        self.assertNotIn("connected", [e.get("event") for e in again.events()])
        # And it goes on live from there.
        self.make_segment("after-replay")
        self.assertTrue(again.wait(lambda s: len(self.audit_events(s)) == 11, 5), again.text)
        self.assertEqual(int(self.audit_events(again)[-1]["id"]), position + 11)

    def test_up_to_date_reconnect_gets_nothing_old(self):
        position = self.head()
        stream = self.open_stream(headers={"Last-Event-ID": str(position)})
        stream.wait(lambda s: False, 0.5)
        self.assertEqual(stream.events(), [])
        self.make_segment("fresh")
        self.assertTrue(stream.wait(lambda s: self.audit_events(s), 5), stream.text)
        self.assertEqual(int(self.audit_events(stream)[0]["id"]), position + 1)

    def test_one_thousand_missed_replay_and_more_get_reset(self):
        position = self.head()
        self.add_events(1000)
        stream = self.open_stream(headers={"Last-Event-ID": str(position)})
        self.assertTrue(stream.wait(lambda s: len(self.audit_events(s)) >= 1000, 10),
                        len(stream.events()))
        events = self.audit_events(stream)
        self.assertEqual([int(e["id"]) for e in events],
                         list(range(position + 1, position + 1001)))
        self.assertNotIn("reset", [e.get("event") for e in stream.events()])
        stream.close()

        self.add_events(1001)
        head = self.head()
        self.assertEqual(head, position + 2001)
        late = self.open_stream(headers={"Last-Event-ID": str(position + 1000)})
        self.assertTrue(late.wait(lambda s: s.events(), 5), late.text)
        late.wait(lambda s: False, 0.3)
        self.assertEqual(len(late.events()), 1, late.text[:500])
        reset = late.events()[0]
        self.assertEqual(reset["event"], "reset")
        self.assertEqual(int(reset["id"]), head)
        self.assertEqual(reset["data"]["id"], head)
        self.assertIn("reload", reset["data"]["reason"])
        # After the reset it follows from the head.
        self.make_segment("after-reset")
        self.assertTrue(late.wait(lambda s: self.audit_events(s), 5), late.text[-500:])
        self.assertEqual(int(self.audit_events(late)[0]["id"]), head + 1)

    def test_an_id_that_is_not_a_position_gets_reset(self):
        for last in ("abc", "-1", str(self.head() + 50)):
            with self.subTest(last=last):
                stream = self.open_stream(headers={"Last-Event-ID": last})
                self.assertTrue(stream.wait(lambda s: s.events(), 5), stream.text)
                self.assertEqual(stream.events()[0]["event"], "reset")
                self.assertEqual(int(stream.events()[0]["id"]), self.head())

    def test_no_secret_and_no_flag_value_in_the_data(self):
        stream = self.open_stream()
        self.connected(stream)
        self.assertStatus(self.call("POST", "/acme/flags", "member",
                                    {"slug": "secretive", "type": "string",
                                     "variants": [{"value": "x1"}, {"value": "x2"}]}), 201)
        self.assertStatus(self.call("PATCH", "/acme/flags/secretive/variants/x2", "member",
                                    {"value": SECRET_VALUE}), 200)
        key = self.assertStatus(self.call("POST", "/acme/sdk-keys", "admin",
                                          {"name": "stream key", "environment": "production"}),
                                201)["key"]
        created = self.server.request("POST", "/me/tokens", body={"name": "stream tok", "full": True},
                                      headers={"Authorization":
                                               f"Bearer {self.tokens['owner']}"})
        self.assertEqual(created.status, 200, created)
        token = created.json["token"]
        # An invitation: its token is a secret too.
        invited = self.server.request(
            "POST", "/orgs/acme/invitations", body={"login": "sid@example.com", "role": "viewer"},
            headers={"Authorization": f"Bearer {self.tokens['admin']}"})
        self.assertEqual(invited.status, 200, invited)
        self.assertTrue(stream.wait(
            lambda s: {"variant.updated", "sdk_key.created", "invitation.created"} <= {
                e["data"]["action"] for e in self.audit_events(s)}, 5), stream.text)
        text = stream.text
        self.assertNotIn(key["token"], text)
        self.assertNotIn(token, text)
        self.assertNotIn(invited.json["token"], text)
        self.assertNotIn(SECRET_VALUE, text)
        self.assertNotIn("127.0.0.1", text)  # nor the actor's address
        for event in self.audit_events(stream):
            self.assertEqual(set(event["data"]), DATA_FIELDS, event)

    def test_heartbeat_comment(self):
        stream = self.open_stream()
        self.assertTrue(stream.wait(lambda s: ": keep-alive\n\n" in s.text,
                                    HEARTBEAT_MS / 1000 * 3 + 1), stream.text)

    def test_refusals(self):
        self.open_stream(token=None, expect=401)
        self.open_stream(token="not-a-token", expect=401)
        # Another organization's token, user or organization: 404.
        self.open_stream(token="outsider", expect=404)
        self.open_stream(token="outsider_org", expect=404)
        self.open_stream(token="viewer", org="globex", expect=404)
        self.open_stream(token="viewer", org="no-such-org", expect=404)
        # A token without scope audit: 403; with audit read: 200.
        for scopes, status in (({"flags": "write"}, 403), ({"audit": "read"}, 200)):
            with self.subTest(scopes=scopes):
                created = self.server.request(
                    "POST", "/me/tokens", body={"name": "scoped", "scopes": scopes},
                    headers={"Authorization": f"Bearer {self.tokens['viewer']}"})
                self.assertEqual(created.status, 200, created)
                stream = self.open_stream(token=created.json["token"], expect=status)
                if status != 200:
                    self.assertEqual(json.loads(stream.text.strip() or "{}")
                                     .get("status", status), status)
        # The organization token streams too.
        self.connected(self.open_stream(token="org"))
        # Other methods are not the stream.
        response = self.call("POST", "/acme/events", "viewer", {})
        self.assertEqual(response.status, 405, response)

    def test_a_removed_member_stream_ends(self):
        config = self.server.config_path
        harness.ensignctl(config, "user", "create", "--email", "leaver@example.com", "--name",
                          "Leaver")
        user_id = self.database.query("SELECT id FROM users WHERE email = 'leaver@example.com'")
        self.database.query("INSERT INTO org_members (org_id, user_id, role)"
                            f" SELECT id, '{user_id}', 'viewer' FROM orgs WHERE slug = 'acme'")
        token = harness.ensignctl(config, "token", "create", "--user", "leaver@example.com",
                                  "--name", "t", "--full")
        stream = self.open_stream(token=token)
        self.connected(stream)
        response = self.server.request("DELETE", f"/orgs/acme/members/{user_id}",
                                       headers={"Authorization":
                                                f"Bearer {self.tokens['owner']}"})
        self.assertEqual(response.status, 200, response)
        self.assertTrue(stream.wait(lambda s: s.ended or s.closed, 5), stream.text)
        # Its removal was not sent to it (it may no longer read the log).
        self.assertEqual(self.audit_events(stream), [])


class ChangeStreamTamperedLogTest(ChangeStreamCase):
    """Events deleted from the log (tampering) are skipped, never waited for."""
    settings = {"log_level": "debug"}

    def test_deleted_events_are_skipped_without_reading_again_and_again(self):
        position = self.head()
        self.add_events(3)
        self.database.query("DELETE FROM audit_events WHERE action = 'test.bulk'")
        stream = self.open_stream(headers={"Last-Event-ID": str(position)})
        before = self.server.stderr().count("org events: read ")
        time.sleep(1.0)
        reads = self.server.stderr().count("org events: read ") - before
        self.assertLessEqual(reads, 2, "the stream keeps reading the log")
        self.assertEqual(stream.events(), [])
        self.make_segment("after-tamper")
        self.assertTrue(stream.wait(lambda s: self.audit_events(s), 5), stream.text)
        self.assertEqual(int(self.audit_events(stream)[0]["id"]), position + 4)


class ChangeStreamLifeTest(ChangeStreamCase):
    """Streams across a reload and a lost database session."""

    def retry_until_ready(self, attempt):
        """attempt() until it is not a 503 (a worker reconnecting), at most 10 s."""
        deadline = time.monotonic() + 10
        while True:
            result = attempt()
            if result.status != 503 or time.monotonic() > deadline:
                self.assertIn(result.status, (200, 201), getattr(result, "text", result))
                return result
            if hasattr(result, "close"):
                result.close()
            time.sleep(0.1)

    def test_sighup_ends_streams_cleanly_and_they_catch_up(self):
        stream = self.open_stream()
        position = self.connected(stream)
        self.server.signal(signal.SIGHUP)
        self.assertTrue(stream.wait(lambda s: s.ended and s.closed, 5), stream.text)
        self.retry_until_ready(lambda: self.call("POST", "/acme/segments", "member",
                                                 {"key": "during-reload", "name": "Reload"}))
        # The new workers may still be connecting to the database (503).
        again = self.retry_until_ready(lambda: Stream(
            self.server.port, "/v1/orgs/acme/events",
            {"Authorization": f"Bearer {self.tokens['viewer']}",
             "Last-Event-ID": str(position)}))
        self.addCleanup(again.close)
        self.assertTrue(again.wait(lambda s: self.audit_events(s), 5), again.text)
        self.assertEqual([e["data"]["location"] for e in self.audit_events(again)],
                         ["segments/during-reload"])

    def test_a_lost_database_session_listens_again(self):
        streams = [self.open_stream() for _ in range(4)]  # on both workers, most likely
        for stream in streams:
            self.connected(stream)
        # End every session of ensignd (the workers' LISTENs with them): a
        # new session must LISTEN again, or no notification would wake the
        # streams before the 30 s sweep.
        self.database.query(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            "   AND backend_type = 'client backend'")
        self.retry_until_ready(lambda: self.call("POST", "/acme/segments", "member",
                                                 {"key": "after-reconnect", "name": "Again"}))
        for stream in streams:
            self.assertTrue(stream.wait(lambda s: self.audit_events(s), 10), stream.text)
            self.assertEqual(self.audit_events(stream)[0]["data"]["location"],
                             "segments/after-reconnect")


class ChangeStreamFanOutTest(ChangeStreamCase):
    """Many streams of one organization cost one read per worker per
    wake-up, not one per stream (counted from the debug line of each read)."""
    settings = {"log_level": "debug"}
    STREAMS = 200

    def reads(self):
        return self.server.stderr().count("org events: read ")

    def test_one_read_per_worker_for_many_streams(self):
        streams = [self.open_stream() for _ in range(self.STREAMS)]
        for stream in streams:
            self.connected(stream)
        time.sleep(0.5)  # the connect reads are done
        before = self.reads()
        started = time.monotonic()
        self.make_segment("fan-out")
        for stream in streams:
            self.assertTrue(stream.wait(lambda s: self.audit_events(s), LIVE_BOUND_S),
                            stream.text)
        delay = time.monotonic() - started
        time.sleep(0.3)
        reads = self.reads() - before
        print(f"\n  change stream: {self.STREAMS} streams on {self.workers} workers got the event"
              f" {delay * 1000:.0f} ms after the write was sent; {reads} reads of the log")
        self.assertGreaterEqual(reads, 1)
        self.assertLessEqual(reads, 2 * self.workers)


class ChangeStreamManyOrganizationsTest(ChangeStreamCase):
    """More organizations with streams on one worker than reads it runs at
    once (4): the marked ones wait their turn, none is forgotten."""
    workers = 1
    ORGS = 10

    def test_one_statement_touching_ten_organizations(self):
        slugs = [f"many-{i}" for i in range(self.ORGS)]
        for slug in slugs:
            harness.ensignctl(self.server.config_path, "org", "create", "--name", slug, "--slug",
                              slug, "--owner", "alice@example.com")
        streams = {slug: self.open_stream(token="owner", org=slug) for slug in slugs}
        for stream in streams.values():
            self.connected(stream)
        self.database.query(
            "INSERT INTO audit_events (org_id, actor_name, action, summary, location)"
            " SELECT o.id, 'bulk', 'test.bulk', 'Touched ' || o.slug, 'bulk/' || o.slug"
            "   FROM orgs o WHERE o.slug LIKE 'many-%'")
        for slug, stream in streams.items():
            self.assertTrue(stream.wait(lambda s: self.audit_events(s), 5), (slug, stream.text))
            self.assertEqual([e["data"]["location"] for e in self.audit_events(stream)],
                             [f"bulk/{slug}"])


class ChangeStreamCookieTest(ChangeStreamCase):

    def login(self, email):
        response = self.server.request(
            "POST", "/v1/session", headers={"Content-Type": "application/json"},
            body=json.dumps({"email": email, "password": PASSWORD}).encode())
        self.assertEqual(response.status, 200, response)
        return response.headers["Set-Cookie"].split(";")[0]

    def test_a_session_cookie_streams(self):
        make_user(self, "vera@example.com")
        self.database.query("INSERT INTO org_members (org_id, user_id, role)"
                            " SELECT o.id, u.id, 'viewer' FROM orgs o, users u"
                            " WHERE o.slug = 'acme' AND u.email = 'vera@example.com'")
        cookie = self.login("vera@example.com")
        # EventSource sends the cookie, no Authorization and a foreign or no Origin.
        stream = self.open_stream(token=None, headers={"Cookie": cookie,
                                                       "Origin": "http://elsewhere.example"})
        self.connected(stream)
        self.make_segment("by-cookie")
        self.assertTrue(stream.wait(lambda s: self.audit_events(s), 5), stream.text)
        self.assertEqual(self.audit_events(stream)[0]["data"]["location"], "segments/by-cookie")
        # A logout ends the session; the next read of the organization ends the stream.
        response = self.server.request("DELETE", "/v1/session",
                                       headers={"Cookie": cookie,
                                                "Origin": f"http://127.0.0.1:{self.server.port}"})
        self.assertIn(response.status, (200, 204), response)
        self.make_segment("after-logout")
        self.assertTrue(stream.wait(lambda s: s.ended or s.closed, 5), stream.text)
        self.assertEqual(len(self.audit_events(stream)), 1)

    def test_a_cookie_of_someone_outside_is_404(self):
        make_user(self, "olga@example.com")
        cookie = self.login("olga@example.com")
        self.open_stream(token=None, headers={"Cookie": cookie}, expect=404)


class ChangeStreamCapsTest(ChangeStreamCase):
    workers = 1
    settings = {"stream_max_per_worker": 3, "stream_max_per_key": 2}

    def assertRefused(self, stream):
        self.assertEqual(stream.status, 503, stream.text)
        self.assertIn("retry-after", stream.headers)

    def test_caps(self):
        first = self.open_stream(token="viewer")
        self.open_stream(token="viewer")
        self.connected(first)
        # A third stream of the same credential: over stream_max_per_key.
        self.assertRefused(self.open_stream(token="viewer", expect=503))
        # Another credential: the worker's last place, then the worker is full.
        self.connected(self.open_stream(token="member"))
        self.assertRefused(self.open_stream(token="admin", expect=503))
        # A stream that ends gives its place back.
        first.close()
        deadline = time.monotonic() + 5
        while True:
            stream = Stream(self.server.port, "/v1/orgs/acme/events",
                            {"Authorization": f"Bearer {self.tokens['admin']}"})
            self.addCleanup(stream.close)
            if stream.status == 200 or time.monotonic() > deadline:
                break
            stream.close()
            time.sleep(0.1)
        self.assertEqual(stream.status, 200, stream.text)


class AuditVerifyTest(ChangeStreamCase):

    def verify(self, token="admin", org="acme"):
        return self.server.request("GET", f"/orgs/{org}/audit/verify",
                                   headers={"Authorization":
                                            f"Bearer {self.tokens.get(token, token)}"})

    def test_ok_then_broken_after_tampering(self):
        for i in range(3):
            self.make_segment(f"verify-{i}")
        response = self.verify()
        self.assertEqual(response.status, 200, response)
        body = response.json
        self.assertEqual({k: body[k] for k in ("ok", "events", "brokenAt")},
                         {"ok": True, "events": self.head(), "brokenAt": None})
        self.assertTrue(body["detail"].startswith("OK: "), body)
        target = self.database.query(
            "SELECT id FROM audit_events WHERE location = 'segments/verify-1'")
        seq = int(self.database.query(f"SELECT seq FROM audit_events WHERE id = '{target}'"))
        self.database.query("UPDATE audit_events SET summary = 'Nothing happened'"
                            f" WHERE id = '{target}'")
        try:
            body = self.verify().json
            self.assertEqual((body["ok"], body["events"], body["brokenAt"]),
                             (False, seq - 1, target), body)
            self.assertIn("was altered", body["detail"])
        finally:
            self.database.query("UPDATE audit_events SET summary = 'Created segment verify-1'"
                                f" WHERE id = '{target}'")
        self.assertTrue(self.verify().json["ok"])

    def test_a_long_chain_is_walked_in_pages(self):
        self.add_events(2500, org="globex")
        body = self.verify(token="outsider_org", org="globex").json
        self.assertEqual((body["ok"], body["events"], body["brokenAt"]),
                         (True, self.head("globex"), None), body)

    def test_a_deleted_tail_is_broken_without_an_event(self):
        harness.ensignctl(self.server.config_path, "org", "create", "--name", "Tail", "--slug",
                          "tail", "--owner", "alice@example.com")
        self.add_events(3, org="tail")
        self.database.query("DELETE FROM audit_events WHERE location = 'bulk/3'"
                            " AND org_id = (SELECT id FROM orgs WHERE slug = 'tail')")
        body = self.verify(token="owner", org="tail").json
        self.assertEqual((body["ok"], body["brokenAt"]), (False, None), body)
        self.assertIn("deleted at the end", body["detail"])

    def test_admin_only(self):
        for token, status in (("viewer", 403), ("member", 403), ("admin", 200), ("owner", 200),
                              ("org", 200), ("outsider", 404), ("outsider_org", 404)):
            with self.subTest(token=token):
                response = self.verify(token)
                self.assertEqual(response.status, status, response)
                if status != 200:
                    self.assertProblem(response, status)
        response = self.server.request("GET", "/orgs/acme/audit/verify")
        self.assertEqual(response.status, 401, response)
