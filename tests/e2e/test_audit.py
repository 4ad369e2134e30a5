"""test_audit.py - end-to-end tests of the audit log: every write records
its event (actor, action, summary, location, time, client address) in the
same statement, the list (GET and QUERY /orgs/{slug}/audit) with q, action
(repeatable), actor, limit and cursor, the ip_disclosure switch, the
tamper-evident chain (`ensignctl audit verify` on an intact chain, an
edited row, a deleted row, a truncated tail), concurrent writers keeping
one unbroken chain, and authorization (404 outside the organization, role
and scope denials).

Each class has its own database and ensignd (OrgTestCase: acme with a
token per role, and the outsider organization globex).
Run by tests/e2e/run.
"""

import hashlib
import json
import secrets
import subprocess
import threading
import urllib.parse

import harness
from test_members import OrgTestCase

ITEM_FIELDS = {"id", "action", "summary", "actor", "location", "created_at"}
BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def verify(config_path, slug):
    """Runs ensignctl audit verify; returns (exit status, stdout, stderr)."""
    result = subprocess.run([harness.ENSIGNCTL, "-c", config_path, "audit", "verify", "--org",
                             slug], capture_output=True, text=True, timeout=120)
    if harness.sanitizer_reports(result.stderr):
        raise AssertionError(result.stderr)
    return result.returncode, result.stdout.strip(), result.stderr.strip()


class AuditTestCase(OrgTestCase):

    def root(self, method, path, token="owner", body=None, headers=None):
        """A second-document request (no /v1 prefix)."""
        secret = self.tokens.get(token, token) if token is not None else None
        headers = dict(headers or {})
        if secret is not None:
            headers["Authorization"] = f"Bearer {secret}"
        return self.server.request(method, path, body=body, headers=headers)

    def events(self, query="", token="owner", org="acme"):
        response = self.root("GET", f"/orgs/{org}/audit{query}", token)
        body = self.assertStatus(response, 200)
        self.assertEqual(set(body), {"events"})
        return body["events"]

    def latest(self, **kwargs):
        return self.events("?limit=1", **kwargs)[0]

    def count(self, org="acme"):
        return int(self.database.query(
            "SELECT count(*) FROM audit_events e JOIN orgs o ON o.id = e.org_id"
            f" WHERE o.slug = '{org}'"))

    def verify_ok(self, org="acme"):
        status, out, err = verify(self.server.config_path, org)
        self.assertEqual(status, 0, (out, err))
        self.assertRegex(out, r"^OK: \d+ events, head [0-9a-f]{64}$")
        return out


class AuditTrailTest(AuditTestCase):

    def test_writes_of_the_first_document_record_their_events(self):
        before = self.count()
        self.assertStatus(self.call("POST", "/acme/flags", "member",
                                    {"slug": "trail-flag", "type": "boolean"}), 201)
        self.assertAck(self.call("PATCH", "/acme/flags/trail-flag/environments/production",
                                 "member", {"enabled": True}))
        rule = self.assertStatus(self.call(
            "POST", "/acme/flags/trail-flag/environments/production/rules", "member",
            {"conditions": [{"attribute": "country", "operator": "in", "values": ["NL"]}],
             "serve": {"variant": "on"}}), 201)["rule"]
        self.assertStatus(self.call(
            "PATCH", f"/acme/flags/trail-flag/environments/production/rules/{rule['id']}",
            "member", {"description": "Dutch visitors"}), 200)
        self.assertStatus(self.call("PUT", "/acme/flags/trail-flag/environments/preview/rules",
                                    "member", {"rules": [{"serve": {"variant": "off"}}]}), 200)
        key = self.assertStatus(self.call("POST", "/acme/sdk-keys", "admin",
                                          {"name": "trail key", "environment": "production"}),
                                201)["key"]
        self.assertAck(self.call("POST", f"/acme/sdk-keys/{key['id']}/revoke", "org"))
        self.assertStatus(self.call("POST", "/acme/segments", "member",
                                    {"key": "trail-seg", "name": "Trail"}), 201)
        self.assertStatus(self.call("POST", "/acme/entities", "member",
                                    {"key": "trail-ent", "label": "Trail"}), 201)
        self.assertAck(self.call("DELETE", "/acme/segments/trail-seg", "owner"))
        self.assertStatus(self.call("POST", "/acme/flags/trail-flag/archive", "member"), 200)

        events = self.events(f"?limit={self.count() - before}")
        self.assertEqual(len(events), self.count() - before)
        for item in events:
            self.assertEqual(set(item), ITEM_FIELDS, item)
            self.assertRegex(item["created_at"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
        got = [(e["action"], e["summary"], e["actor"]["name"], e["location"])
               for e in reversed(events)]
        expected = [
            ("flag.created", "Created boolean flag trail-flag", "Mel Member", "flags/trail-flag"),
            ("environment.updated", "Flag trail-flag: Turned on in Production", "Mel Member",
             "flags/trail-flag/environments/production"),
            ("rule.created", "Flag trail-flag: Added a rule in Production", "Mel Member",
             "flags/trail-flag/environments/production"),
            ("rule.updated", "Flag trail-flag: Updated a rule in Production", "Mel Member",
             "flags/trail-flag/environments/production"),
            ("rules.replaced", "Flag trail-flag: Replaced the rules in Preview", "Mel Member",
             "flags/trail-flag/environments/preview"),
            ("sdk_key.created",
             f"Created SDK key trail key ({key['prefix']}) for production", "Adele Admin",
             f"sdk-keys/{key['id']}"),
            ("sdk_key.revoked", f"Revoked SDK key trail key ({key['prefix']})",
             "e2e org token", f"sdk-keys/{key['id']}"),
            ("segment.created", "Created segment trail-seg", "Mel Member", "segments/trail-seg"),
            ("entity.created", "Created entity trail-ent", "Mel Member", "entities/trail-ent"),
            ("segment.deleted", "Deleted segment trail-seg", "Alice Example",
             "segments/trail-seg"),
            ("flag.archived", "Flag trail-flag: Archived the flag", "Mel Member",
             "flags/trail-flag"),
        ]
        self.assertEqual(got, expected)
        by_action = {e["action"]: e for e in events}
        self.assertEqual(by_action["flag.created"]["actor"]["id"], self.user_ids["member"])
        self.assertEqual(by_action["segment.deleted"]["actor"]["id"], self.user_ids["owner"])
        token_id = self.database.query(
            "SELECT t.id FROM access_tokens t JOIN orgs o ON o.id = t.org_id"
            " WHERE t.name = 'e2e org token' AND o.slug = 'acme'")
        self.assertEqual(by_action["sdk_key.revoked"]["actor"]["id"], token_id)
        self.verify_ok()

    def test_more_writes_of_the_first_document(self):
        before = self.count()
        env = "/acme/flags/colors/environments/production/rules"
        self.assertStatus(self.call("POST", "/acme/flags", "member", {
            "slug": "colors", "type": "string",
            "variants": [{"value": "red"}, {"value": "blue"}]}), 201)
        self.assertStatus(self.call("POST", "/acme/flags/colors/variants", "member",
                                    {"value": "green", "label": "Green"}), 201)
        self.assertStatus(self.call("PATCH", "/acme/flags/colors/variants/green", "member",
                                    {"label": "Lime"}), 200)
        self.assertAck(self.call("DELETE", "/acme/flags/colors/variants/green", "member"))
        self.assertStatus(self.call("PATCH", "/acme/flags/colors", "member",
                                    {"name": "Colours"}), 200)
        ids = [self.assertStatus(self.call("POST", env, "member",
                                           {"serve": {"variant": v}}), 201)["rule"]["id"]
               for v in ("red", "blue")]
        self.assertAck(self.call("POST", env + "/reorder", "member",
                                 {"ruleIds": list(reversed(ids))}))
        self.assertAck(self.call("DELETE", f"{env}/{ids[0]}", "member"))
        self.assertStatus(self.call("POST", "/acme/segments", "member",
                                    {"key": "more-seg", "name": "More"}), 201)
        self.assertStatus(self.call("PATCH", "/acme/segments/more-seg", "member",
                                    {"name": "More segment"}), 200)
        self.assertStatus(self.call("POST", "/acme/entities", "member",
                                    {"key": "more-ent", "label": "More"}), 201)
        self.assertStatus(self.call("PATCH", "/acme/entities/more-ent", "member",
                                    {"label": "More entity"}), 200)
        self.assertAck(self.call("DELETE", "/acme/entities/more-ent", "member"))
        self.assertStatus(self.call("POST", "/acme/flags/colors/archive", "member"), 200)
        self.assertStatus(self.call("POST", "/acme/flags/colors/restore", "member"), 200)
        self.assertAck(self.call("DELETE", "/acme/flags/colors", "member"))
        events = self.events(f"?limit={self.count() - before}")
        self.assertEqual([(e["action"], e["summary"]) for e in reversed(events)], [
            ("flag.created", "Created string flag colors"),
            ("variant.created", "Flag colors: Added variant green"),
            ("variant.updated", "Flag colors: Updated variant green"),
            ("variant.deleted", "Flag colors: Deleted variant green"),
            ("flag.updated", "Flag colors: Updated the flag settings"),
            ("rule.created", "Flag colors: Added a rule in Production"),
            ("rule.created", "Flag colors: Added a rule in Production"),
            ("rules.reordered", "Flag colors: Reordered the rules in Production"),
            ("rule.deleted", "Flag colors: Deleted a rule in Production"),
            ("segment.created", "Created segment more-seg"),
            ("segment.updated", "Updated segment more-seg"),
            ("entity.created", "Created entity more-ent"),
            ("entity.updated", "Updated entity more-ent"),
            ("entity.deleted", "Deleted entity more-ent"),
            ("flag.archived", "Flag colors: Archived the flag"),
            ("flag.restored", "Flag colors: Restored the flag"),
            ("flag.deleted", "Deleted flag colors"),
        ])
        self.assertTrue(all(e["actor"]["name"] == "Mel Member" for e in events))
        self.verify_ok()

    def test_event_rows_hold_actor_time_and_client_address(self):
        self.assertStatus(self.call("POST", "/acme/segments", "admin",
                                    {"key": "row-seg", "name": "Row"}), 201)
        row = self.database.query(
            "SELECT actor_id, host(ip), created_at > now() - interval '1 minute', seq > 0,"
            " hash ~ '^[0-9a-f]{64}$' FROM audit_events WHERE location = 'segments/row-seg'")
        self.assertEqual(row.split("|"), [self.user_ids["admin"], "127.0.0.1", "t", "t", "t"])

    def test_failed_and_no_op_writes_record_nothing(self):
        self.assertStatus(self.call("POST", "/acme/flags", "member",
                                    {"slug": "noop-flag", "type": "boolean"}), 201)
        key = self.assertStatus(self.call("POST", "/acme/sdk-keys", "admin",
                                          {"name": "noop", "environment": "preview"}), 201)["key"]
        self.assertAck(self.call("POST", f"/acme/sdk-keys/{key['id']}/revoke", "admin"))
        before = self.count()
        # A conflict, a validation error, a 404, a denied write, and no-ops.
        self.assertStatus(self.call("POST", "/acme/flags", "member",
                                    {"slug": "noop-flag", "type": "boolean"}), 409)
        self.assertStatus(self.call("POST", "/acme/segments", "member", {"key": "Bad Key"}), 422)
        self.assertStatus(self.call("DELETE", "/acme/entities/nothing-here", "member"), 404)
        self.assertStatus(self.call("POST", "/acme/segments", "viewer",
                                    {"key": "denied", "name": "Denied"}), 403)
        self.assertAck(self.call("POST", f"/acme/sdk-keys/{key['id']}/revoke", "admin"))
        self.assertAck(self.call("PATCH", "/acme/flags/noop-flag/environments/preview",
                                 "member", {"enabled": False}))
        self.assertStatus(self.call("POST", "/acme/flags/noop-flag/restore", "member"), 200)
        self.assertEqual(self.count(), before)

    def test_events_belong_to_their_organization(self):
        self.assertStatus(self.call("POST", "/globex/segments", "outsider",
                                    {"key": "globex-only", "name": "Globex"}), 201)
        self.assertNotIn("segments/globex-only", [e["location"] for e in self.events("?limit=100")])
        theirs = self.events(token="outsider", org="globex")
        self.assertEqual(theirs[0]["location"], "segments/globex-only")
        self.verify_ok("globex")


class AuditSecondDocumentTest(AuditTestCase):
    """The organization writes of the root API: organizations,
    members, invitations, projects, SSO provisioning."""

    def user(self, email, name):
        config = self.server.config_path
        user_id = harness.ensignctl(config, "user", "create", "--email", email, "--name", name)
        token = harness.ensignctl(config, "token", "create", "--user", email, "--name", "t",
                                  "--full")
        self.tokens[name] = token
        return user_id

    def ok(self, response):
        return self.assertStatus(response, 200)

    def test_trail_of_organization_writes(self):
        key = harness.ensignctl(self.server.config_path, "internal-key", "create", "--name",
                                "audit test")
        internal = {"Ensign-Internal-Key": key}
        before = self.count()
        carol = self.user("carol@example.com", "Carol Cole")
        self.ok(self.root("PATCH", "/orgs/acme", "owner", body={"name": "Acme Corp"}))
        self.ok(self.root("PATCH", "/orgs/acme", "owner", body={"name": "Acme Corp"}))  # no-op
        self.ok(self.root("POST", "/orgs/acme/members", "admin",
                          body={"login": "carol@example.com", "role": "viewer"}))
        self.ok(self.root("PUT", f"/orgs/acme/members/{carol}/role", "admin",
                          body={"role": "member"}))
        self.ok(self.root("PUT", f"/orgs/acme/members/{carol}/role", "admin",
                          body={"role": "member"}))  # no-op
        invited = self.ok(self.root("POST", "/orgs/acme/invitations", "admin",
                                    body={"login": "dave@example.com", "role": "viewer"}))
        dave = self.user("dave@example.com", "Dave Dunn")
        self.ok(self.root("POST", f"/invitations/{invited['token']}/accept", "Dave Dunn",
                          headers=internal))
        other = self.ok(self.root("POST", "/orgs/acme/invitations", "org",
                                  body={"login": "erin@example.com"}))
        self.ok(self.root("DELETE", f"/orgs/acme/invitations/{other['invitation']['id']}",
                          "admin"))
        self.ok(self.root("POST", "/orgs/acme/projects", "admin", body={"name": "Website"}))
        self.ok(self.root("PATCH", "/orgs/acme/projects/website", "admin",
                          body={"description": "The public site"}))
        self.ok(self.root("DELETE", "/orgs/acme/projects/website", "admin"))
        self.ok(self.root("POST", "/orgs/acme/projects/website/restore", "admin"))
        self.ok(self.root("POST", "/orgs/acme/projects/website/restore", "admin"))  # no-op
        self.ok(self.root("POST", "/orgs/acme/projects/website/members", "admin",
                          body={"login": "carol@example.com", "role": "read"}))
        self.ok(self.root("PUT", f"/orgs/acme/projects/website/members/{carol}/role", "admin",
                          body={"role": "write"}))
        self.ok(self.root("PUT", f"/orgs/acme/projects/website/members/{carol}/role", "admin",
                          body={"role": "write"}))  # no-op
        self.ok(self.root("DELETE", f"/orgs/acme/projects/website/members/{carol}", "admin"))
        self.ok(self.root("DELETE", f"/orgs/acme/members/{carol}", "owner"))
        self.ok(self.root("POST", "/orgs/acme/leave", "Dave Dunn"))
        self.ok(self.root("POST", "/internal/sso/provision-member", "Carol Cole",
                          body={"org_id": "acme", "role": "viewer"}, headers=internal))
        self.ok(self.root("POST", "/internal/sso/provision-member", "Carol Cole",
                          body={"org_id": "acme", "role": "viewer"}, headers=internal))  # no-op

        events = self.events(f"?limit={self.count() - before}")
        got = [(e["action"], e["summary"], e["actor"]["name"], e["location"])
               for e in reversed(events)]
        invitation = invited["invitation"]["id"]
        self.assertEqual(got, [
            ("org.renamed", "Renamed the organization from Acme Inc to Acme Corp",
             "Alice Example", "settings"),
            ("member.added", "Added Carol Cole as viewer", "Adele Admin", f"members/{carol}"),
            ("member.role_changed", "Changed the role of Carol Cole from viewer to member",
             "Adele Admin", f"members/{carol}"),
            ("invitation.created", "Invited dave@example.com as viewer", "Adele Admin",
             f"invitations/{invitation}"),
            ("invitation.accepted",
             "Accepted the invitation of dave@example.com and joined as viewer", "Dave Dunn",
             f"members/{dave}"),
            ("invitation.created", "Invited erin@example.com as member", "e2e org token",
             f"invitations/{other['invitation']['id']}"),
            ("invitation.revoked", "Revoked the invitation of erin@example.com", "Adele Admin",
             f"invitations/{other['invitation']['id']}"),
            ("project.created", "Created project website", "Adele Admin", "projects/website"),
            ("project.updated", "Updated project website", "Adele Admin", "projects/website"),
            ("project.deleted", "Deleted project website", "Adele Admin", "projects/website"),
            ("project.restored", "Restored project website", "Adele Admin", "projects/website"),
            ("project_member.added", "Added Carol Cole to project website as read",
             "Adele Admin", f"projects/website/members/{carol}"),
            ("project_member.role_changed",
             "Changed the role of Carol Cole in project website from read to write",
             "Adele Admin", f"projects/website/members/{carol}"),
            ("project_member.removed", "Removed Carol Cole from project website", "Adele Admin",
             f"projects/website/members/{carol}"),
            ("member.removed", "Removed Carol Cole from the organization", "Alice Example",
             f"members/{carol}"),
            ("org.left", "Dave Dunn left the organization", "Dave Dunn", f"members/{dave}"),
            ("member.added", "Carol Cole joined as viewer by single sign-on", "Carol Cole",
             f"members/{carol}"),
        ])
        self.assertEqual(events[0]["actor"]["id"], carol)
        self.verify_ok()

    def test_creating_an_organization_starts_its_chain(self):
        created = self.ok(self.root("POST", "/orgs", "member", body={"name": "Initech"}))
        events = self.events(token="member", org=created["slug"])
        self.assertEqual([(e["action"], e["summary"], e["actor"]["name"]) for e in events],
                         [("org.created", "Created the organization initech", "Mel Member")])
        self.assertTrue(self.verify_ok(created["slug"]).startswith("OK: 1 events"))
        # A failed creation (slug taken) records nothing anywhere.
        total = self.database.query("SELECT count(*) FROM audit_events")
        self.assertProblem(self.root("POST", "/orgs", "member",
                                     body={"name": "Again", "slug": created["slug"]}), 409)
        self.assertEqual(self.database.query("SELECT count(*) FROM audit_events"), total)


class AuditListTest(AuditTestCase):

    @classmethod
    def prepare(cls):
        super().prepare()

    def setUp(self):
        if getattr(type(self), "seeded", False):
            return
        type(self).seeded = True
        for i in range(12):
            self.assertStatus(self.call("POST", "/acme/segments", "member",
                                        {"key": f"list-seg-{i}", "name": f"List {i}"}), 201)
        for i in range(3):
            self.assertStatus(self.call("POST", "/acme/entities", "admin",
                                        {"key": f"list-ent-{i}", "label": f"Ent {i}"}), 201)
        self.assertAck(self.call("DELETE", "/acme/segments/list-seg-0", "owner"))

    def test_newest_first_and_limits(self):
        events = self.events()
        self.assertEqual(len(events), 16)
        self.assertEqual(events[0]["action"], "segment.deleted")
        self.assertEqual(events[-1]["summary"], "Created segment list-seg-0")
        self.assertEqual(len(self.events("?limit=5")), 5)
        self.assertEqual(len(self.events("?limit=1000")), 16)
        self.assertEqual(len(self.events("?limit=0")), 1)
        self.assertNotIn("Link", self.root("GET", "/orgs/acme/audit").headers)

    def test_q_searches_summary_action_actor_and_location(self):
        self.assertEqual([e["summary"] for e in self.events("?q=LIST-SEG-1")],
                         ["Created segment list-seg-11", "Created segment list-seg-10",
                          "Created segment list-seg-1"])
        self.assertEqual(len(self.events("?q=entity.created")), 3)
        self.assertEqual(len(self.events("?q=adele")), 3)
        self.assertEqual(len(self.events("?q=entities%2Flist-ent-2")), 1)
        self.assertEqual(self.events("?q=nothing-like-this"), [])
        self.assertEqual(self.events("?q=%25"), [])  # LIKE wildcards are literal

    def test_action_is_repeatable_and_actor_filters(self):
        self.assertEqual(len(self.events("?action=entity.created")), 3)
        both = self.events("?action=entity.created&action=segment.deleted")
        self.assertEqual({e["action"] for e in both}, {"entity.created", "segment.deleted"})
        self.assertEqual(len(both), 4)
        self.assertEqual(self.events("?action=flag.created"), [])
        mine = self.events(f"?actor={self.user_ids['member']}")
        self.assertEqual(len(mine), 12)
        self.assertTrue(all(e["actor"]["id"] == self.user_ids["member"] for e in mine))
        self.assertEqual(len(self.events(
            f"?actor={self.user_ids['owner']}&action=segment.deleted&q=list-seg-0")), 1)

    def test_paging_follows_link_with_filters(self):
        response = self.root("GET", "/orgs/acme/audit?action=segment.created&limit=5")
        seen = []
        pages = 0
        while True:
            body = self.assertStatus(response, 200)
            pages += 1
            seen += [e["id"] for e in body["events"]]
            link = response.headers.get("Link")
            if link is None:
                break
            self.assertRegex(link, r'^</orgs/acme/audit\?action=segment\.created&limit=5&'
                                   r'cursor=[A-Za-z0-9_.-]+>; rel="next"$')
            response = self.root("GET", link[1:link.index(">")])
        self.assertEqual(pages, 3)
        self.assertEqual(len(seen), 12)
        self.assertEqual(len(set(seen)), 12)

    def test_query_method_equals_get(self):
        get = self.root("GET", f"/orgs/acme/audit?q=list&action=segment.created&limit=4"
                               f"&actor={self.user_ids['member']}")
        query = self.root("QUERY", "/orgs/acme/audit",
                          body={"q": "list", "limit": 4, "action": ["segment.created"],
                                "actor": self.user_ids["member"]})
        self.assertEqual(self.assertStatus(query, 200), self.assertStatus(get, 200))
        self.assertEqual(query.headers.get("Link"), get.headers.get("Link"))

    def test_cursor_is_bound_to_its_filters(self):
        link = self.root("GET", "/orgs/acme/audit?limit=2").headers["Link"]
        cursor = urllib.parse.parse_qs(urllib.parse.urlparse(link[1:link.index(">")]).query)[
            "cursor"][0]
        for query in (f"?limit=2&cursor={cursor}&action=segment.created",
                      f"?limit=2&cursor={cursor}&q=list",
                      f"?limit=2&cursor={cursor}&actor={self.user_ids['member']}"):
            with self.subTest(query=query):
                self.assertProblem(self.root("GET", "/orgs/acme/audit" + query), 422)
        self.assertProblem(self.root("GET", f"/orgs/globex/audit?cursor={cursor}",
                                     "outsider"), 422)
        body, _, mac = cursor.partition(".")
        tampered = body[:-1] + ("A" if body[-1] != "A" else "B") + "." + mac
        self.assertProblem(self.root("GET", f"/orgs/acme/audit?limit=2&cursor={tampered}"), 422)
        self.assertEqual(len(self.events(f"?limit=2&cursor={cursor}")), 2)

    def test_bad_filters_are_422(self):
        for query in ("?action=Not%20A%20Key", "?action=flag", "?actor=alice",
                      "?limit=ten", "?cursor=garbage!", "?action=" + "&action=".join(
                          f"a.b{i}" for i in range(21))):
            with self.subTest(query=query):
                self.assertProblem(self.root("GET", "/orgs/acme/audit" + query), 422)
        self.assertProblem(self.root("QUERY", "/orgs/acme/audit", body={"action": 5}), 422)


class AuditPagingWhileWritingTest(AuditTestCase):

    def test_no_duplicate_and_no_gap_while_events_are_added(self):
        for i in range(36):
            self.assertStatus(self.call("POST", "/acme/segments", "member",
                                        {"key": f"page-seg-{i}", "name": f"Page {i}"}), 201)
        expected = [e["id"] for e in self.events("?limit=100")]
        self.assertEqual(len(expected), 36)
        seen = []
        path = "/orgs/acme/audit?limit=10"
        extra = 0
        while path:
            response = self.root("GET", path)
            seen += [e["id"] for e in self.assertStatus(response, 200)["events"]]
            # New events arrive between pages; they are newer than the cursor.
            self.assertStatus(self.call("POST", "/acme/entities", "member",
                                        {"key": f"between-{extra}", "label": "Between"}), 201)
            extra += 1
            link = response.headers.get("Link")
            path = link[1:link.index(">")] if link else None
        self.assertEqual(seen, expected)
        self.assertEqual(extra, 4)


class AuditIpDisclosureTest(AuditTestCase):

    def config(self, token="owner"):
        return self.root("GET", "/orgs/acme/audit/config", token)

    def set_config(self, value, token="owner"):
        return self.root("PUT", "/orgs/acme/audit/config", token, body={"ip_disclosure": value})

    def test_ip_appears_only_while_disclosure_is_on(self):
        self.assertEqual(self.assertStatus(self.config(), 200), {"ip_disclosure": False})
        self.assertStatus(self.call("POST", "/acme/segments", "member",
                                    {"key": "ip-seg", "name": "IP"}), 201)
        self.assertNotIn("ip", self.latest())
        self.assertEqual(self.assertStatus(self.set_config(True, "admin"), 200),
                         {"ip_disclosure": True})
        self.assertEqual(self.assertStatus(self.config("viewer"), 200), {"ip_disclosure": True})
        events = self.events()
        self.assertTrue(all(e["ip"] == "127.0.0.1" for e in events), events)
        self.assertEqual(set(events[0]), ITEM_FIELDS | {"ip"})
        self.assertEqual((events[0]["action"], events[0]["summary"], events[0]["location"]),
                         ("audit.config_updated", "Turned IP disclosure on", "audit/config"))
        # Setting the same value again is no event.
        before = self.count()
        self.assertStatus(self.set_config(True), 200)
        self.assertEqual(self.count(), before)
        self.assertEqual(self.assertStatus(self.set_config(False), 200), {"ip_disclosure": False})
        events = self.events()
        self.assertTrue(all("ip" not in e for e in events), events)
        self.assertEqual(events[0]["summary"], "Turned IP disclosure off")

    def test_config_validation(self):
        for body in ({}, {"ip_disclosure": "yes"}, {"ip_disclosure": True, "other": 1}, [True]):
            with self.subTest(body=body):
                self.assertProblem(self.root("PUT", "/orgs/acme/audit/config", "owner",
                                             body=body), 422)
        self.assertProblem(self.root("PUT", "/orgs/acme/audit/config", "owner", body=b"{",
                                     headers={"Content-Type": "application/json"}), 400)


class AuditAuthorizationTest(AuditTestCase):

    @classmethod
    def prepare(cls):
        super().prepare()
        # A personal token of Alice (owner) without the audit scope.
        token = "svc_oat_" + "".join(secrets.choice(BASE62) for _ in range(43))
        digest = hashlib.sha256(token.encode()).hexdigest()
        cls.database.query(
            "INSERT INTO access_tokens (kind, user_id, name, token_digest, prefix, last_four,"
            " scopes) SELECT 'personal', id, 'no audit', '" + digest + "', '" + token[:12] +
            "', '" + token[-4:] + "', '{\"flags\": \"write\", \"orgs\": \"write\"}'"
            " FROM users WHERE email = 'alice@example.com'")
        cls.tokens["noaudit"] = token

    def test_every_role_reads_the_log(self):
        for role in ("owner", "admin", "member", "viewer", "readonly", "org"):
            with self.subTest(role=role):
                self.events(token=role)
                self.assertStatus(self.root("GET", "/orgs/acme/audit/config", role), 200)

    def test_only_admins_change_the_setting(self):
        for role in ("member", "viewer"):
            with self.subTest(role=role):
                self.assertProblem(self.root("PUT", "/orgs/acme/audit/config", role,
                                             body={"ip_disclosure": True}), 403)
        self.assertStatus(self.root("PUT", "/orgs/acme/audit/config", "org",
                                    body={"ip_disclosure": False}), 200)

    def test_scope_audit_is_needed(self):
        self.assertProblem(self.root("GET", "/orgs/acme/audit", "noaudit"), 403)
        self.assertProblem(self.root("GET", "/orgs/acme/audit/config", "noaudit"), 403)
        # read-only token: audit:read but not audit:write.
        self.assertProblem(self.root("PUT", "/orgs/acme/audit/config", "readonly",
                                     body={"ip_disclosure": True}), 403)

    def test_another_organization_is_404(self):
        for method, path, body in (("GET", "/orgs/acme/audit", None),
                                   ("QUERY", "/orgs/acme/audit", {}),
                                   ("GET", "/orgs/acme/audit/config", None),
                                   ("PUT", "/orgs/acme/audit/config", {"ip_disclosure": True}),
                                   ("GET", "/orgs/no-such-org/audit", None)):
            for token in ("outsider", "outsider_org"):
                with self.subTest(method=method, path=path, token=token):
                    self.assertProblem(self.root(method, path, token, body=body), 404)

    def test_missing_token_is_401(self):
        self.assertProblem(self.root("GET", "/orgs/acme/audit", None), 401)
        self.assertProblem(self.root("GET", "/orgs/acme/audit", "svc_oat_nonsense"), 401)


class AuditChainTest(AuditTestCase):
    """Each destructive test edits the chain of an organization of its own
    (owned by Alice)."""

    ORGS = ("chain-edit", "chain-del", "chain-tail", "chain-utf8")

    @classmethod
    def prepare(cls):
        super().prepare()
        for slug in cls.ORGS:
            harness.ensignctl(cls.server.config_path, "org", "create", "--name", slug, "--slug",
                              slug, "--owner", "alice@example.com")

    def write_some(self, org, n):
        for i in range(n):
            self.assertStatus(self.call("POST", f"/{org}/segments", "owner",
                                        {"key": f"seg-{i}", "name": "Chain"}), 201)

    def event_seq(self, org, location):
        return int(self.database.query(
            "SELECT e.seq FROM audit_events e JOIN orgs o ON o.id = e.org_id"
            f" WHERE o.slug = '{org}' AND e.location = '{location}'"))

    def tamper(self, org, sql_set, location):
        self.database.query(f"UPDATE audit_events SET {sql_set} WHERE location = '{location}'"
                            f" AND org_id = (SELECT id FROM orgs WHERE slug = '{org}')")

    def test_verify_ok_then_catches_an_edited_row(self):
        org = "chain-edit"
        self.write_some(org, 5)
        self.assertTrue(self.verify_ok(org).startswith("OK: 5 events, head "))
        seq = self.event_seq(org, "segments/seg-2")
        self.tamper(org, "summary = 'Nothing happened'", "segments/seg-2")
        status, out, _ = verify(self.server.config_path, org)
        self.assertEqual(status, 1, out)
        self.assertRegex(out, rf"^broken: event {seq} \(id [0-9a-f-]+, segment\.created\)"
                              r" was altered")
        self.tamper(org, "summary = 'Created segment seg-2'", "segments/seg-2")
        self.verify_ok(org)
        # Any hashed column counts: the client address, the time, the actor.
        for change, undo in (("ip = '10.0.0.1'", "ip = '127.0.0.1'"),
                             ("created_at = created_at + interval '1 microsecond'",
                              "created_at = created_at - interval '1 microsecond'"),
                             ("actor_name = 'Mallory'", "actor_name = 'Alice Example'")):
            with self.subTest(change=change):
                self.tamper(org, change, "segments/seg-3")
                self.assertEqual(verify(self.server.config_path, org)[0], 1)
                self.tamper(org, undo, "segments/seg-3")
                self.verify_ok(org)
        # The other organizations' chains are not affected by any of this.
        self.verify_ok("acme")

    def test_verify_catches_a_deleted_row(self):
        org = "chain-del"
        self.write_some(org, 4)
        self.verify_ok(org)
        seq = self.event_seq(org, "segments/seg-1")
        self.database.query("DELETE FROM audit_events WHERE location = 'segments/seg-1'"
                            " AND org_id = (SELECT id FROM orgs WHERE slug = 'chain-del')")
        status, out, _ = verify(self.server.config_path, org)
        self.assertEqual(status, 1, out)
        self.assertRegex(out, rf"^broken: event {seq} is missing \(the next event is {seq + 1}")

    def test_verify_catches_a_deleted_last_event(self):
        org = "chain-tail"
        self.write_some(org, 3)
        self.verify_ok(org)
        self.database.query("DELETE FROM audit_events WHERE location = 'segments/seg-2'"
                            " AND org_id = (SELECT id FROM orgs WHERE slug = 'chain-tail')")
        status, out, _ = verify(self.server.config_path, org)
        self.assertEqual(status, 1, out)
        self.assertIn("events were deleted at the end", out)

    def test_verify_agrees_on_text_beyond_ascii(self):
        token = harness.ensignctl(self.server.config_path, "token", "create", "--org",
                                  "chain-utf8", "--name", "Bot Zo\u00eb \U0001f6a9")
        self.assertStatus(self.call("POST", "/chain-utf8/segments", token,
                                    {"key": "utf8", "name": "\u00c9t\u00e9"}), 201)
        self.assertEqual(self.latest(token=token, org="chain-utf8")["actor"]["name"],
                         "Bot Zo\u00eb \U0001f6a9")
        self.verify_ok("chain-utf8")

    def test_verify_of_an_organization_without_events(self):
        self.assertEqual(self.verify_ok("globex"), "OK: 0 events, head " + "0" * 64)

    def test_verify_usage_and_unknown_org(self):
        status, out, err = verify(self.server.config_path, "no-such-org")
        self.assertEqual((status, out), (1, ""))
        self.assertIn("no-such-org", err)
        for args in (["audit", "verify"], ["audit", "verify", "--org", "Bad Slug"],
                     ["audit", "verify", "--org", "acme", "extra"]):
            with self.subTest(args=args):
                result = subprocess.run([harness.ENSIGNCTL, "-c", self.server.config_path, *args],
                                        capture_output=True, text=True, timeout=60)
                self.assertEqual(result.returncode, 2, result.stderr)


class AuditConcurrencyTest(AuditTestCase):
    workers = 2

    def test_parallel_writers_keep_one_chain(self):
        failures = []

        def writer(token, prefix):
            for i in range(25):
                response = self.call("POST", "/acme/segments", token,
                                     {"key": f"{prefix}-{i}", "name": "Parallel"})
                if response.status != 201:
                    failures.append(response)

        threads = [threading.Thread(target=writer, args=("member", "par-a")),
                   threading.Thread(target=writer, args=("admin", "par-b")),
                   threading.Thread(target=writer, args=("org", "par-c"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        self.assertEqual(failures, [])
        seqs = self.database.query("SELECT string_agg(seq::text, ',' ORDER BY seq)"
                                   " FROM audit_events e JOIN orgs o ON o.id = e.org_id"
                                   " WHERE o.slug = 'acme'")
        self.assertEqual([int(s) for s in seqs.split(",")], list(range(1, 76)))
        out = self.verify_ok()
        self.assertTrue(out.startswith("OK: 75 events"), out)


if __name__ == "__main__":
    import unittest
    unittest.main()
