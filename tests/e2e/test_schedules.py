"""test_schedules.py - end-to-end tests of scheduled changes
(POST/GET /v1/orgs/{org}/flags/{key}/schedules, DELETE .../schedules/{id},
GET /v1/orgs/{org}/schedules; doc/choices.md "Scheduled changes") and of
the scheduler process that applies them (ensignd(8)).

ScheduleApiTest: making, listing and cancelling, validation (at too soon,
too far, not ISO 8601; a bad changes body; unknown environment and flag),
roles, scopes and other organizations' ids. Nothing there comes due.

TwoNodesApplyTest: two ensignd nodes on one database. 50 schedules due in
the same second (two per flag, so both nodes also meet on one flag's
lock) are each applied exactly once (one revision and one audit event of
action flag.schedule_applied per flag and environment) and soon after
their time (the measured lateness is printed; asserted only within
LATE_BOUND_S); a schedule whose variant was deleted meanwhile ends failed,
with the reason and a notification to its creator, and so does one whose
creator was made a viewer meanwhile; an organization token's schedule is
applied in the token's name; a cancelled one is never applied; cancelling
an applied or failed one is a 409.

RestartTest: a pending schedule survives a restart of every node and is
applied once, on time, by the restarted nodes; the scheduler process is
restarted by the master when it dies; a scheduler killed inside its
transaction commits nothing, and the change is applied once by the next.

IdleSchedulerTest: with no pending schedule the scheduler sleeps until its
poll bound, not a claim every few milliseconds.

Run by tests/e2e/run.
"""

import datetime
import os
import re
import signal
import statistics
import sys
import time
import unittest

import harness
from flagfixture import FlagTestCase
from test_propagation import Session

AHEAD_S = 12  # the soonest a test schedules: the API wants at least 10 s
LATE_BOUND_S = 4.0
APPLIED_LINE = re.compile(r'^ts=(\S+) level=info role=scheduler .*msg="applied schedule ([0-9a-f-]{36})"$',
                          re.MULTILINE)  # far looser than the 1 s the scheduler aims at: a shared test machine


def iso(moment):
    return moment.astimezone(datetime.timezone.utc).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


def parse_iso(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def now():
    return datetime.datetime.now(datetime.timezone.utc)


def whole_second_ahead(seconds):
    """A whole second at least seconds from now."""
    moment = now() + datetime.timedelta(seconds=seconds + 1)
    return moment.replace(microsecond=0)


class ScheduleTestCase(FlagTestCase):

    def schedules_path(self, slug, org="acme"):
        return f"/{org}/flags/{slug}/schedules"

    def schedule(self, slug, changes, at=None, env="production", token="member", org="acme"):
        body = {"at": iso(at or whole_second_ahead(60)), "environment": env, "changes": changes}
        return self.call("POST", self.schedules_path(slug, org), token, body=body)

    def made(self, slug, changes, **kwargs):
        return self.assertStatus(self.schedule(slug, changes, **kwargs), 201)["schedule"]

    def listed(self, slug, token="viewer", query=""):
        return self.assertStatus(self.call("GET", self.schedules_path(slug) + query, token),
                                 200)["schedules"]

    def cancel(self, slug, schedule_id, token="member", org="acme"):
        return self.call("DELETE", f"{self.schedules_path(slug, org)}/{schedule_id}", token)

    def audit_count(self, action, location_like):
        return self.count_rows("SELECT count(*) FROM audit_events"
                               f" WHERE action = '{action}' AND location LIKE '{location_like}'")


SCHEDULE_FIELDS = {"id", "flag", "at", "environment", "changes", "status", "createdByUserId",
                   "createdAt", "appliedAt", "error"}


class ScheduleApiTest(ScheduleTestCase):

    def test_create_answers_the_schedule(self):
        self.flag("launch")
        at = whole_second_ahead(3600)
        response = self.schedule("launch", {"enabled": True}, at=at)
        schedule = self.assertStatus(response, 201)["schedule"]
        self.assertEqual(set(schedule), SCHEDULE_FIELDS)
        self.assertEqual(schedule["flag"], "launch")
        self.assertEqual(parse_iso(schedule["at"]), at)
        self.assertIsoMillis(schedule["at"])
        self.assertIsoMillis(schedule["createdAt"])
        self.assertEqual(schedule["environment"], "production")
        self.assertEqual(schedule["changes"], {"enabled": True})
        self.assertEqual(schedule["status"], "pending")
        self.assertEqual(schedule["createdByUserId"], self.user_ids["member"])
        self.assertIsNone(schedule["appliedAt"])
        self.assertIsNone(schedule["error"])
        self.assertEqual(self.listed("launch"), [schedule])
        pending = self.assertStatus(self.call("GET", "/acme/schedules?status=pending", "viewer"),
                                    200)["schedules"]
        self.assertIn(schedule, pending)
        self.assertEqual(self.audit_count("schedule.created",
                                          f"flags/launch/schedules/{schedule['id']}"), 1)
        # making a schedule changes nothing yet
        self.assertFalse(self.env_config("launch")["enabled"])
        self.assertEqual([r["action"] for r in self.revisions("launch")], ["flag.created"])

    def test_lists_are_soonest_first_and_filter_by_status(self):
        self.flag("ordered")
        later = self.made("ordered", {"enabled": True}, at=whole_second_ahead(7200))
        sooner = self.made("ordered", {"enabled": False}, at=whole_second_ahead(600), env="preview")
        middle = self.made("ordered", {"enabled": True}, at=whole_second_ahead(3600))
        self.assertAck(self.cancel("ordered", middle["id"]))
        self.assertEqual([s["id"] for s in self.listed("ordered")],
                         [sooner["id"], middle["id"], later["id"]])
        self.assertEqual([s["id"] for s in self.listed("ordered", query="?status=pending")],
                         [sooner["id"], later["id"]])
        self.assertEqual([s["id"] for s in self.listed("ordered", query="?status=cancelled")],
                         [middle["id"]])
        org = self.assertStatus(self.call("GET", "/acme/schedules?status=pending", "viewer"),
                                200)["schedules"]
        ours = [s["id"] for s in org if s["flag"] == "ordered"]
        self.assertEqual(ours, [sooner["id"], later["id"]])
        self.assertInvalid(self.call("GET", "/acme/schedules?status=done", "viewer"), "status")
        self.assertInvalid(self.call("GET", self.schedules_path("ordered") + "?status=x",
                                     "viewer"), "status")
        self.assertV1Error(self.call("GET", self.schedules_path("nosuch"), "viewer"), 404)

    def test_at_must_be_iso_and_within_bounds(self):
        self.flag("timed")
        for at in ("tomorrow", "2026-13-01T00:00:00Z", "", "12:00"):
            with self.subTest(at=at):
                body = {"at": at, "environment": "production", "changes": {"enabled": True}}
                self.assertInvalid(self.call("POST", self.schedules_path("timed"), "member",
                                             body=body), "at")
        too_soon = now() + datetime.timedelta(seconds=3)
        too_far = now() + datetime.timedelta(days=367)
        past = now() - datetime.timedelta(hours=1)
        for at in (too_soon, too_far, past):
            with self.subTest(at=at):
                self.assertInvalid(self.schedule("timed", {"enabled": True}, at=at), "at")
        # the bounds themselves, with a margin for the request's own time
        self.made("timed", {"enabled": True}, at=now() + datetime.timedelta(seconds=15))
        self.made("timed", {"enabled": True}, at=now() + datetime.timedelta(days=365, hours=23))
        self.assertInvalid(self.call("POST", self.schedules_path("timed"), "member",
                                     body={"at": 5, "environment": "production",
                                           "changes": {"enabled": True}}), "at")
        self.assertEqual(len(self.listed("timed")), 2)

    def test_changes_are_validated_as_the_environment_patch(self):
        self.string_flag("shaped", "a", "b")
        cases = {
            "changes.defaultVariantKey": {"defaultVariantKey": "zz"},
            "changes.offVariantKey": {"offVariantKey": "zz"},
            "changes.enabled": {"enabled": "yes"},
            "changes.defaultServe": {"defaultServe": {}},
            "changes.color": {"color": "red"},
        }
        for field, changes in cases.items():
            with self.subTest(field=field):
                self.assertInvalid(self.schedule("shaped", changes), field)
        for changes in ({}, [], "on", None):
            with self.subTest(changes=changes):
                self.assertInvalid(self.schedule("shaped", changes), "changes")
        base = {"at": iso(whole_second_ahead(60)), "environment": "production",
                "changes": {"enabled": True}}
        self.assertInvalid(self.call("POST", self.schedules_path("shaped"), "member",
                                     body={**base, "when": "now"}), "when")
        for missing in ("at", "environment", "changes"):
            with self.subTest(missing=missing):
                body = {k: v for k, v in base.items() if k != missing}
                self.assertInvalid(self.call("POST", self.schedules_path("shaped"), "member",
                                             body=body), missing)
        self.assertInvalid(self.call("POST", self.schedules_path("shaped"), "member",
                                     body={**base, "environment": "Not A Key"}), "environment")
        self.assertV1Error(self.schedule("shaped", {"enabled": True}, env="staging"), 404)
        self.assertV1Error(self.schedule("nosuch", {"enabled": True}), 404)
        self.assertV1Error(self.call("POST", self.schedules_path("shaped"), "member",
                                     raw=b"{x"), 400)
        self.assertInvalid(self.call("POST", self.schedules_path("shaped"), "member",
                                     raw=b"[1]"), "body")
        self.made("shaped", {"defaultServe": {"rollout": [{"variant": "a", "weight": 1},
                                                          {"variant": "b", "weight": 1}]}})
        self.assertEqual(len(self.listed("shaped")), 1)

    def test_archived_flag_is_409(self):
        self.flag("shelved")
        self.archive("shelved")
        self.assertV1Error(self.schedule("shelved", {"enabled": True}), 409)

    def test_roles_and_scopes(self):
        self.flag("guarded")
        for token in ("viewer", "readonly"):
            with self.subTest(token=token):
                self.assertV1Error(self.schedule("guarded", {"enabled": True}, token=token), 403)
        self.assertV1Error(self.schedule("guarded", {"enabled": True}, token=None), 401)
        self.assertV1Error(self.schedule("guarded", {"enabled": True}, token="not-a-token"), 401)
        mine = self.made("guarded", {"enabled": True})
        for token in ("owner", "admin", "member", "viewer", "readonly", "org"):
            with self.subTest(token=token):
                self.assertEqual(len(self.listed("guarded", token=token)), 1)
                self.assertStatus(self.call("GET", "/acme/schedules", token), 200)
        for token in ("viewer", "readonly"):
            with self.subTest(token=token):
                self.assertV1Error(self.cancel("guarded", mine["id"], token=token), 403)
        self.assertV1Error(self.cancel("guarded", mine["id"], token=None), 401)
        # an organization token schedules with no user (doc/choices.md)
        by_org = self.made("guarded", {"enabled": False}, token="org")
        self.assertIsNone(by_org["createdByUserId"])
        self.assertAck(self.cancel("guarded", by_org["id"], token="admin"))

    def test_other_organizations_never_see_or_touch(self):
        self.flag("private")
        mine = self.made("private", {"enabled": True})
        for token in ("outsider", "outsider_org"):
            with self.subTest(token=token):
                self.assertV1Error(self.call("GET", self.schedules_path("private"), token), 404)
                self.assertV1Error(self.schedule("private", {"enabled": True}, token=token), 404)
                self.assertV1Error(self.cancel("private", mine["id"], token=token), 404)
                self.assertV1Error(self.call("GET", "/acme/schedules", token), 404)
        # globex's own flag of the same key: acme's schedule id is not found there
        self.assertStatus(self.create_flag("private", token="outsider", org="globex"), 201)
        theirs = self.made("private", {"enabled": True}, token="outsider", org="globex")
        self.assertV1Error(self.cancel("private", mine["id"], token="outsider", org="globex"),
                           404)
        self.assertV1Error(self.cancel("private", theirs["id"]), 404)
        globex = self.assertStatus(self.call("GET", "/globex/schedules", "outsider"),
                                   200)["schedules"]
        self.assertEqual([s["id"] for s in globex], [theirs["id"]])
        acme = self.assertStatus(self.call("GET", "/acme/schedules", "viewer"), 200)["schedules"]
        self.assertNotIn(theirs["id"], [s["id"] for s in acme])
        # another flag's schedule, a malformed id
        self.flag("public")
        self.assertV1Error(self.cancel("public", mine["id"]), 404)
        self.assertV1Error(self.cancel("private", "not-a-uuid"), 404)
        self.assertV1Error(self.cancel("private", "00000000-0000-0000-0000-000000000000"), 404)
        self.assertEqual(self.listed("private")[0]["status"], "pending")

    def test_cancel_once(self):
        self.flag("maybe")
        schedule = self.made("maybe", {"enabled": True})
        self.assertAck(self.cancel("maybe", schedule["id"]))
        cancelled = self.listed("maybe")[0]
        self.assertEqual((cancelled["status"], cancelled["appliedAt"]), ("cancelled", None))
        self.assertV1Error(self.cancel("maybe", schedule["id"]), 409)
        self.assertEqual(self.audit_count("schedule.cancelled",
                                          f"flags/maybe/schedules/{schedule['id']}"), 1)

    def test_the_agents_schedule_change_runs_this_route(self):
        self.flag("agent-made")
        at = iso(whole_second_ahead(3600))
        action = {"org_id": "acme", "tool": "schedule_change",
                  "input": {"flag": "agent-made", "environment": "preview", "at": at,
                            "changes": {"enabled": True}}}
        headers = {"Authorization": f"Bearer {self.tokens['member']}"}
        response = self.server.request("POST", "/ai/actions/execute", body=action,
                                       headers=headers)
        self.assertEqual(response.status, 200, response)
        schedule = response.json["result"]["schedule"]
        self.assertEqual((schedule["environment"], schedule["status"], schedule["at"]),
                         ("preview", "pending", at))
        self.assertEqual(self.listed("agent-made"), [schedule])
        viewer = {"Authorization": f"Bearer {self.tokens['viewer']}"}
        response = self.server.request("POST", "/ai/actions/execute", body=action,
                                       headers=viewer)
        self.assertEqual(response.status, 403, response)

    def test_deleting_an_organization_or_environment_takes_its_schedules(self):
        """The cascades and the flag trigger of sql/0014 work together."""
        # (the organization's environments come from its insert trigger: a statement of their own)
        self.database.query("INSERT INTO orgs (name, slug) VALUES ('Initech', 'initech')")
        self.database.query(
            "WITH f AS (INSERT INTO flags (org_id, key, name)"
            "           SELECT id, 'gone', 'gone' FROM orgs WHERE slug = 'initech'"
            "           RETURNING id, org_id)"
            " INSERT INTO flag_schedules (org_id, flag_id, flag_key, environment_id, at, changes)"
            " SELECT f.org_id, f.id, 'gone', e.id, now() + interval '1 hour', '{\"enabled\": true}'"
            "   FROM f JOIN environments e ON e.org_id = f.org_id")
        self.assertEqual(self.count_rows(
            "SELECT count(*) FROM flag_schedules WHERE flag_key = 'gone'"), 3)
        self.database.query("DELETE FROM environments WHERE key = 'preview'"
                            " AND org_id = (SELECT id FROM orgs WHERE slug = 'initech')")
        self.assertEqual(self.count_rows(
            "SELECT count(*) FROM flag_schedules WHERE flag_key = 'gone'"), 2)
        self.database.query("DELETE FROM orgs WHERE slug = 'initech'")
        self.assertEqual(self.count_rows(
            "SELECT count(*) FROM flag_schedules WHERE flag_key = 'gone'"), 0)

    def test_deleting_the_flag_cancels_its_schedules(self):
        self.flag("doomed")
        schedule = self.made("doomed", {"enabled": True})
        self.assertAck(self.call("DELETE", "/acme/flags/doomed", "member"))
        found = [s for s in self.assertStatus(self.call("GET", "/acme/schedules", "viewer"),
                                              200)["schedules"] if s["id"] == schedule["id"]]
        self.assertEqual(len(found), 1)
        self.assertEqual(found[0]["status"], "cancelled")
        self.assertEqual(found[0]["error"], "the flag was deleted")
        # a new flag of the same key starts with no schedules
        self.flag("doomed")
        self.assertEqual(self.listed("doomed"), [])


class TwoNodesApplyTest(harness.SecondNode, ScheduleTestCase):
    """Two nodes on one database; everything comes due in the same second."""

    FLAGS = 25
    ENVS = ("production", "preview")

    def made_on(self, node, slug, changes, at, env):
        body = {"at": iso(at), "environment": env, "changes": changes}
        response = node.request("POST", "/v1/orgs" + self.schedules_path(slug), body=body,
                                headers={"Authorization": f"Bearer {self.tokens['member']}"})
        return self.assertStatus(response, 201)["schedule"]

    def wait_finished(self, ids, timeout):
        def finished():
            rows = self.database.query(
                "SELECT count(*) FROM flag_schedules WHERE status <> 'pending' AND id IN ("
                + ",".join(f"'{i}'" for i in ids) + ")")
            return int(rows) == len(ids)
        return harness.wait_for(finished, timeout, interval=0.1)

    def test_due_schedules_apply_exactly_once_on_time(self):
        keys = [f"batch-{i:02d}" for i in range(self.FLAGS)]
        for key in keys:
            self.flag(key)
        self.string_flag("fragile", "a", "b", "c")
        self.flag("kept-off")
        self.flag("early")
        at = whole_second_ahead(AHEAD_S)
        # half made through node B: either node may apply any of them
        made = [self.made_on(self.node_b if i % 2 else self.server, key, {"enabled": True}, at,
                             env) for i, key in enumerate(keys) for env in self.ENVS]
        fragile = self.made("fragile", {"defaultVariantKey": "c"}, at=at)
        kept_off = self.made("kept-off", {"enabled": True}, at=at)
        self.assertAck(self.cancel("kept-off", kept_off["id"]))
        self.assertAck(self.call("DELETE", "/acme/flags/fragile/variants/c", "member"))
        early = self.made("early", {"enabled": True}, at=at)
        # an organization token's schedule; one whose maker is a viewer by then
        self.flag("by-token")
        by_token = self.made("by-token", {"enabled": True}, at=at, token="org")
        self.flag("demoted")
        demoted = self.made("demoted", {"enabled": True}, at=at, token="admin")
        self.database.query("UPDATE org_members SET role = 'viewer' WHERE user_id ="
                            " (SELECT id FROM users WHERE email = 'adele@example.com')")
        self.assertGreater((at - now()).total_seconds(), 1.0, "the set-up took too long")
        ids = [s["id"] for s in made] + [fragile["id"], early["id"], by_token["id"],
                                         demoted["id"]]
        self.assertTrue(self.wait_finished(ids, AHEAD_S + LATE_BOUND_S + 10),
                        self.server.stderr()[-3000:] + self.node_b.stderr()[-3000:])

        # every one applied, once, in the name of its creator
        lateness = []
        for key in keys:
            schedules = self.listed(key)
            self.assertEqual([s["status"] for s in schedules], ["applied", "applied"], schedules)
            for s in schedules:
                self.assertIsNone(s["error"])
                lateness.append((parse_iso(s["appliedAt"]) - at).total_seconds())
            for env in self.ENVS:
                self.assertTrue(self.env_config(key, env)["enabled"])
        counts = self.database.query(
            "SELECT string_agg(n::text, ',') FROM (SELECT count(*) AS n FROM revisions r"
            " JOIN flags f ON f.id = r.flag_id WHERE f.key LIKE 'batch-%'"
            " AND r.action = 'flag.schedule_applied' GROUP BY r.flag_id, r.environment_id) x")
        self.assertEqual(counts, ",".join(["1"] * len(made)))
        self.assertEqual(self.count_rows(
            "SELECT count(*) FROM revisions WHERE action = 'flag.schedule_applied'"
            " AND summary = 'Scheduled change: Turned on in Production'"
            " AND user_id = (SELECT id FROM users WHERE email = 'mel@example.com')"), self.FLAGS + 1)
        audit = self.database.query(
            "SELECT string_agg(n::text, ',') FROM (SELECT count(*) AS n FROM audit_events"
            " WHERE action = 'flag.schedule_applied' AND location LIKE 'flags/batch-%'"
            " GROUP BY location) x")
        self.assertEqual(audit, ",".join(["1"] * len(made)))
        self.assertEqual(self.count_rows(
            "SELECT count(*) FROM audit_events WHERE action = 'flag.schedule_applied'"
            " AND actor_name = 'Mel Member'"), len(made) + 1)
        self.assertEqual(self.listed("early")[0]["status"], "applied")

        # the deleted variant: failed, the reason, a notification to its creator
        failed = self.listed("fragile")[0]
        self.assertEqual(failed["status"], "failed")
        self.assertIsNone(failed["appliedAt"])
        self.assertIn("changes.defaultVariantKey", failed["error"])
        self.assertIn("no variant c", failed["error"])
        self.assertEqual(self.env_config("fragile")["defaultVariantKey"], "a")
        notes = self.server.request("GET", "/notifications", headers={
            "Authorization": f"Bearer {self.tokens['member']}"}).json["notifications"]
        kinds = [n["kind"] for n in notes]
        self.assertEqual(kinds.count("flag.schedule_failed"), 1, notes)
        note = notes[kinds.index("flag.schedule_failed")]
        self.assertIn("fragile", note["title"])
        self.assertIn("no variant c", note["body"])
        self.assertEqual(self.audit_count("schedule.failed",
                                          f"flags/fragile/schedules/{fragile['id']}"), 1)
        # the organization token's: applied in the token's name, no user
        self.assertEqual(self.listed("by-token")[0]["status"], "applied")
        revision = self.revisions("by-token")[0]
        self.assertEqual((revision["action"], revision["userName"]),
                         ("flag.schedule_applied", self.database.query(
                             "SELECT name FROM access_tokens WHERE kind = 'organization'"
                             " AND org_id = (SELECT id FROM orgs WHERE slug = 'acme')")))
        # a maker who may no longer change flags: failed, told so
        failed = self.listed("demoted")[0]
        self.assertEqual(failed["status"], "failed")
        self.assertIn("may no longer change flags", failed["error"])
        self.assertFalse(self.env_config("demoted")["enabled"])
        notes = self.server.request("GET", "/notifications", headers={
            "Authorization": f"Bearer {self.tokens['admin']}"}).json["notifications"]
        self.assertEqual([n["kind"] for n in notes], ["flag.schedule_failed"], notes)
        # the cancelled one never ran; cancelling an applied or failed one is 409
        self.assertEqual(self.listed("kept-off")[0]["status"], "cancelled")
        self.assertFalse(self.env_config("kept-off")["enabled"])
        self.assertV1Error(self.cancel(keys[0], made[0]["id"]), 409)
        self.assertV1Error(self.cancel("fragile", fragile["id"]), 409)

        # each node logs "applied schedule ID" once the claim's transaction
        # committed: that line's time is when the change took effect
        committed = {}
        by_node = []
        for node in (self.server, self.node_b):
            lines = APPLIED_LINE.findall(node.stderr())
            by_node.append(len(lines))
            for ts, schedule_id in lines:
                self.assertNotIn(schedule_id, committed, "applied twice")
                committed[schedule_id] = parse_iso(ts)
        self.assertEqual(set(committed), {s["id"] for s in made} | {early["id"], by_token["id"]})
        seen = sorted((committed[s["id"]] - at).total_seconds() for s in made)
        lateness.sort()
        print(f"\n  {len(made)} schedules due at one second, applied by nodes A/B: "
              f"{by_node[0]}/{by_node[1]}; committed after at: min {seen[0]:.3f} s, "
              f"median {statistics.median(seen):.3f} s, max {seen[-1]:.3f} s "
              f"(appliedAt after at: median {statistics.median(lateness):.3f} s, "
              f"max {lateness[-1]:.3f} s)", file=sys.stderr)
        self.assertGreaterEqual(lateness[0], 0.0)
        self.assertLess(seen[-1], LATE_BOUND_S, seen)


class RestartTest(ScheduleTestCase):
    """A pending schedule outlives a restart of every node."""

    def test_scheduler_is_a_supervised_child(self):
        pid = self.server.child_with_title("ensignd: scheduler")
        self.assertIsNotNone(pid, self.server.children())
        os.kill(pid, signal.SIGKILL)

        def respawned():
            new = self.server.child_with_title("ensignd: scheduler")
            return new is not None and new != pid
        self.assertTrue(harness.wait_for(respawned, 10), self.server.children())

    def test_a_scheduler_killed_in_the_middle_leaves_it_for_the_next_claim(self):
        """The scheduler's transaction is held inside its write (the
        organization's audit chain head locked by a psql session), the
        scheduler is SIGKILLed there, the lock released: its transaction
        never commits, and the restarted scheduler applies the change once."""
        self.flag("crashy")
        at = whole_second_ahead(AHEAD_S)
        schedule = self.made("crashy", {"enabled": True}, at=at)
        lock = Session(self.database.conninfo)
        try:
            lock.send("BEGIN;")
            lock.send("SELECT 1 FROM audit_chain_heads WHERE org_id ="
                      " (SELECT id FROM orgs WHERE slug = 'acme') FOR UPDATE;")

            def scheduler_waits():
                return self.database.query(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                    " AND query LIKE '%flag_environments%'") != "0"
            self.assertTrue(harness.wait_for(scheduler_waits, AHEAD_S + 10, interval=0.05))
            victim = self.server.child_with_title("ensignd: scheduler")
            os.kill(victim, signal.SIGKILL)
            self.assertTrue(harness.wait_for(
                lambda: self.server.child_with_title("ensignd: scheduler") not in (None, victim),
                10))
            self.assertEqual(self.database.query(
                f"SELECT status FROM flag_schedules WHERE id = '{schedule['id']}'"), "pending")
        finally:
            lock.close()  # rolled back: the killed scheduler's write goes on, then fails

        def applied():
            return self.listed("crashy")[0]["status"] == "applied"
        self.assertTrue(harness.wait_for(applied, 15, interval=0.1), self.server.stderr()[-3000:])
        self.assertEqual(self.count_rows(
            "SELECT count(*) FROM revisions r JOIN flags f ON f.id = r.flag_id"
            " WHERE f.key = 'crashy' AND r.action = 'flag.schedule_applied'"), 1)
        self.assertEqual(self.audit_count("flag.schedule_applied", "flags/crashy/%"), 1)
        self.assertTrue(self.env_config("crashy")["enabled"])

    def test_schedule_survives_a_restart_of_every_node(self):
        self.flag("durable")
        node_b = harness.Server(self.database.conninfo, self.workers, **self.settings)
        try:
            node_b.start()
            at = whole_second_ahead(AHEAD_S)
            schedule = self.made("durable", {"enabled": True}, at=at)
            self.server.stop_cleanly()
            node_b.stop_cleanly()
            self.assertEqual(self.database.query(
                f"SELECT status FROM flag_schedules WHERE id = '{schedule['id']}'"), "pending")
            self.server.start()
            node_b.start()
            self.assertGreater((at - now()).total_seconds(), 0.5, "the restart took too long")

            def applied():
                return self.listed("durable")[0]["status"] == "applied"
            self.assertTrue(harness.wait_for(applied, AHEAD_S + LATE_BOUND_S + 5, interval=0.1))
            done = self.listed("durable")[0]
            late = (parse_iso(done["appliedAt"]) - at).total_seconds()
            print(f"\n  applied {late:.3f} s after at, after a restart of both nodes",
                  file=sys.stderr)
            self.assertLess(late, LATE_BOUND_S)
            self.assertGreaterEqual(late, 0.0)
            self.assertEqual(self.count_rows(
                "SELECT count(*) FROM revisions r JOIN flags f ON f.id = r.flag_id"
                " WHERE f.key = 'durable' AND r.action = 'flag.schedule_applied'"), 1)
            self.assertTrue(self.env_config("durable")["enabled"])
            # the revision records the targeting after the change, as every revision does
            newest = self.revisions("durable")[0]
            self.assertEqual((newest["action"], newest["summary"], newest["userName"]),
                             ("flag.schedule_applied", "Scheduled change: Turned on in Production",
                              "Mel Member"))
            state = self.assertStatus(self.call(
                "GET", f"/acme/flags/durable/revisions/{newest['id']}", "viewer"),
                200)["revision"]["state"]
            production = [e for e in state["environments"] if e["key"] == "production"]
            self.assertEqual([e["enabled"] for e in production], [True], state)
            node_b.stop_cleanly()
        finally:
            node_b.remove()


class IdleSchedulerTest(harness.ServerTestCase):
    """With no pending schedule the scheduler sleeps (up to its poll bound)
    instead of claiming every few milliseconds: over two seconds of an idle
    node the database sees a few transactions, not a hundred."""

    def test_an_idle_node_leaves_the_database_alone(self):
        count = ("SELECT xact_commit + xact_rollback FROM pg_stat_database"
                 " WHERE datname = current_database()")
        time.sleep(1.5)  # the first build and its reads are over
        harness.psql(self.database.conninfo, "SELECT pg_stat_clear_snapshot()")
        before = int(self.database.query(count))
        time.sleep(2.0)
        after = int(self.database.query(count))
        # Each query above is a transaction too, and statistics are flushed
        # about once a second: a spinning scheduler made ~90 a second.
        self.assertLess(after - before, 40, f"{after - before} transactions in 2 s of idle")


if __name__ == "__main__":
    unittest.main()
