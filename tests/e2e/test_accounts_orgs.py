"""test_accounts_orgs.py - organizations, members, invitations and the
notifications their events make (doc/api.md; doc/choices.md "Internal
operations, sessions, notifications").

Run by tests/e2e/run (each class has its own database and ensignd).
"""

from accountfixture import AccountTestCase


class OrganizationsTest(AccountTestCase):

    def test_create_derives_slug_and_makes_owner(self):
        org = self.ok(self.call("POST", "/orgs", "viewer", body={"name": "Vic's Shop!"}))
        self.assertEqual(org["slug"], "vic-s-shop")
        self.assertEqual(org["role"], "owner")
        self.assertEqual(set(org), {"id", "name", "slug", "role", "enforce_two_factor",
                                    "require_sso", "created_at"})
        self.assertRegex(org["created_at"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
        slugs = [o["slug"] for o in self.ok(self.call("GET", "/orgs", "viewer"))["orgs"]]
        self.assertEqual(slugs, ["acme", "vic-s-shop"])

    def test_create_failures(self):
        self.problem(self.call("POST", "/orgs", body={"name": "Acme", "slug": "acme"}), 409)
        self.problem(self.call("POST", "/orgs", body={"name": "Acme"}), 409)
        self.problem(self.call("POST", "/orgs", body={"name": "x", "slug": "Bad Slug"}), 422,
                     "slug")
        self.problem(self.call("POST", "/orgs", body={"name": "!!!"}), 422, "slug")
        self.problem(self.call("POST", "/orgs", body={}), 422, "name")
        self.problem(self.call("POST", "/orgs", body={"name": "x" * 201}), 422, "name")
        self.assertProblem(self.call("POST", "/orgs", body=b"{",
                                     headers={"Content-Type": "application/json"}), 400)
        self.assertProblem(self.call("POST", "/orgs", None, body={"name": "n"}), 401)
        self.assertProblem(self.call("POST", "/orgs", "org", body={"name": "n"}), 403)
        self.assertProblem(self.call("POST", "/orgs", self.scoped_token({"orgs": "read"}),
                                     body={"name": "n"}), 403)

    def test_org_token_lists_its_own_organization(self):
        orgs = self.ok(self.call("GET", "/orgs", "org"))["orgs"]
        self.assertEqual([(o["slug"], o["role"]) for o in orgs], [("acme", "admin")])

    def test_rename_is_for_owners(self):
        for token in ("admin", "member", "viewer", "org"):
            with self.subTest(token=token):
                self.problem(self.call("PATCH", "/orgs/acme", token, body={"name": "X"}), 403)
        self.problem(self.call("PATCH", "/orgs/acme", "outsider", body={"name": "X"}), 404)
        self.problem(self.call("PATCH", "/orgs/acme", body={}), 422, "name")
        org = self.ok(self.call("PATCH", "/orgs/acme", body={"name": "Acme Renamed"}))
        self.assertEqual((org["name"], org["slug"], org["role"]),
                         ("Acme Renamed", "acme", "owner"))
        self.ok(self.call("PATCH", "/orgs/acme", body={"name": "Acme Inc"}))

    def test_leave_and_last_owner(self):
        self.problem(self.call("POST", "/orgs/acme/leave"), 409)
        user_id, token = self.new_user("leaver@example.com", "Leaver", "member")
        self.ack(self.call("POST", "/orgs/acme/leave", token))
        self.problem(self.call("GET", "/orgs/acme/members", token), 404)
        self.problem(self.call("POST", "/orgs/acme/leave", "outsider"), 404)


class MembersTest(AccountTestCase):

    def members(self, token="owner", query=""):
        return self.ok(self.call("GET", "/orgs/acme/members" + query, token))["members"]

    def test_list_form_and_search(self):
        items = self.members("viewer")
        self.assertEqual(len(items), 4)
        self.assertEqual(set(items[0]), {"user_id", "name", "email", "username", "role",
                                         "created_at"})
        self.assertEqual([m["email"] for m in self.members(query="?q=ADELE")],
                         ["adele@example.com"])
        self.assertEqual([m["email"] for m in self.members(query="?q=example.com&limit=2")],
                         ["alice@example.com", "adele@example.com"])

    def test_add_change_remove_with_notifications(self):
        user_id, token = self.new_user("newbie@example.com", "Newbie")
        self.problem(self.call("POST", "/orgs/acme/members", "member",
                               body={"login": "newbie@example.com"}), 403)
        self.ack(self.call("POST", "/orgs/acme/members", "admin",
                           body={"login": "NEWBIE@example.com", "role": "viewer"}))
        self.problem(self.call("POST", "/orgs/acme/members", "admin",
                               body={"login": "newbie@example.com"}), 409)
        notes = self.ok(self.call("GET", "/notifications", token))["notifications"]
        self.assertEqual([n["kind"] for n in notes], ["org.member_added"])
        self.assertEqual(set(notes[0]), {"id", "kind", "title", "body", "read_at", "created_at"})
        self.ack(self.call("PUT", f"/orgs/acme/members/{user_id}/role", "admin",
                           body={"role": "member"}))
        self.ack(self.call("DELETE", f"/orgs/acme/members/{user_id}", "admin"))
        kinds = [n["kind"] for n in self.ok(self.call("GET", "/notifications", token))
                 ["notifications"]]
        self.assertEqual(kinds, ["org.member_removed", "org.role_changed", "org.member_added"])
        self.problem(self.call("DELETE", f"/orgs/acme/members/{user_id}", "admin"), 404)

    def test_member_write_failures(self):
        self.problem(self.call("POST", "/orgs/acme/members", "admin",
                               body={"login": "nobody@example.com"}), 422, "login")
        self.problem(self.call("POST", "/orgs/acme/members", "admin",
                               body={"login": "vic@example.com", "role": "boss"}), 422, "role")
        self.problem(self.call("POST", "/orgs/acme/members", "admin", body={}), 422, "login")
        self.problem(self.call("PUT", "/orgs/acme/members/not-a-uuid/role", "admin",
                               body={"role": "member"}), 404)
        self.problem(self.call("PUT", f"/orgs/acme/members/{self.user_ids['viewer']}/role",
                               "admin", body={"role": "x"}), 422, "role")
        self.problem(self.call("POST", "/orgs/acme/members", "outsider",
                               body={"login": "vic@example.com"}), 404)

    def test_only_owners_make_or_unmake_owners_and_an_owner_stays(self):
        owner_id = self.identity.user_id
        viewer_id = self.user_ids["viewer"]
        self.problem(self.call("PUT", f"/orgs/acme/members/{viewer_id}/role", "admin",
                               body={"role": "owner"}), 403)
        self.problem(self.call("PUT", f"/orgs/acme/members/{owner_id}/role", "admin",
                               body={"role": "member"}), 403)
        self.problem(self.call("DELETE", f"/orgs/acme/members/{owner_id}", "admin"), 403)
        self.problem(self.call("POST", "/orgs/acme/members", "org",
                               body={"login": "bob@example.com", "role": "owner"}), 403)
        self.problem(self.call("PUT", f"/orgs/acme/members/{owner_id}/role",
                               body={"role": "admin"}), 409)
        self.problem(self.call("DELETE", f"/orgs/acme/members/{owner_id}"), 409)
        self.ack(self.call("PUT", f"/orgs/acme/members/{viewer_id}/role",
                           body={"role": "owner"}))
        self.ack(self.call("PUT", f"/orgs/acme/members/{viewer_id}/role",
                           body={"role": "viewer"}))


class InvitationsTest(AccountTestCase):

    def test_invite_existing_user_adds_them(self):
        user_id, token = self.new_user("carol@example.com", "Carol")
        self.database.query(f"UPDATE users SET username = 'carol' WHERE id = '{user_id}'")
        body = self.ok(self.call("POST", "/orgs/acme/invitations", "admin",
                                 body={"login": "carol", "role": "viewer"}))
        self.assertEqual(body["status"], "added")
        self.assertEqual(body["user_id"], user_id)
        self.assertNotIn("token", body)
        self.assertIn("acme", [o["slug"] for o in self.ok(self.call("GET", "/orgs", token))
                               ["orgs"]])

    def test_invite_by_email_then_accept(self):
        body = self.ok(self.call("POST", "/orgs/acme/invitations", "admin",
                                 body={"login": "dave@example.com"}))
        self.assertEqual(body["status"], "invited")
        self.assertTrue(body["token"].startswith("svc_inv_"))
        invitation = body["invitation"]
        self.assertEqual(set(invitation), {"id", "email", "role", "status", "inviter",
                                           "created_at", "expires_at"})
        self.assertEqual((invitation["role"], invitation["status"]), ("member", "pending"))
        self.problem(self.call("POST", "/orgs/acme/invitations", "admin",
                               body={"login": "dave@example.com"}), 409)
        listed = self.ok(self.call("GET", "/orgs/acme/invitations?q=DAVE", "admin"))
        self.assertEqual([i["id"] for i in listed["invitations"]], [invitation["id"]])

        user_id, token = self.new_user("dave@example.com", "Dave")
        lookup = self.ok(self.call("GET", f"/invitations/{body['token']}", token))
        self.assertEqual(lookup["org_slug"], "acme")
        self.assertFalse(lookup["expired"])
        self.assertEqual(set(lookup), {"id", "email", "expired", "inviter", "org_name",
                                       "org_slug", "role", "status"})
        key = self.internal_key()
        other_id, other = self.new_user("eve@example.com", "Eve")
        self.problem(self.call("POST", f"/invitations/{body['token']}/accept", other,
                               headers={"Ensign-Internal-Key": key}), 403)
        self.problem(self.call("POST", f"/invitations/{body['token']}/accept", token), 403)
        accepted = self.ok(self.call("POST", f"/invitations/{body['token']}/accept", token,
                                     headers={"Ensign-Internal-Key": key}))
        self.assertEqual(accepted, {"org_name": "Acme Inc", "org_slug": "acme"})
        self.problem(self.call("POST", f"/invitations/{body['token']}/accept", token,
                               headers={"Ensign-Internal-Key": key}), 404)
        kinds = [n["kind"] for n in self.ok(self.call("GET", "/notifications", token))
                 ["notifications"]]
        self.assertEqual(kinds, ["org.member_added"])
        inviter = [n["kind"] for n in self.ok(self.call("GET", "/notifications", "admin"))
                   ["notifications"]]
        self.assertIn("org.invitation_accepted", inviter)

    def test_revoke_and_failures(self):
        body = self.ok(self.call("POST", "/orgs/acme/invitations", "admin",
                                 body={"login": "frank@example.com", "role": "admin"}))
        inv = body["invitation"]["id"]
        self.problem(self.call("DELETE", f"/orgs/acme/invitations/{inv}", "member"), 403)
        self.problem(self.call("DELETE", f"/orgs/acme/invitations/{inv}", "outsider"), 404)
        self.ack(self.call("DELETE", f"/orgs/acme/invitations/{inv}", "admin"))
        self.ack(self.call("DELETE", f"/orgs/acme/invitations/{inv}", "admin"))
        self.problem(self.call("DELETE", "/orgs/acme/invitations/nope", "admin"), 404)
        lookup = self.ok(self.call("GET", f"/invitations/{body['token']}", "member"))
        self.assertEqual(lookup["status"], "revoked")
        user_id, token = self.new_user("frank@example.com", "Frank")
        self.problem(self.call("POST", f"/invitations/{body['token']}/accept", token,
                               headers={"Ensign-Internal-Key": self.internal_key()}), 404)
        self.problem(self.call("GET", "/invitations/svc_inv_nope"), 404)
        self.problem(self.call("POST", "/orgs/acme/invitations", "admin",
                               body={"login": "x@example.com", "role": "owner"}), 422, "role")
        self.problem(self.call("POST", "/orgs/acme/invitations", "admin",
                               body={"login": "no-such-username"}), 422, "login")
        self.problem(self.call("GET", "/orgs/acme/invitations", "member"), 403)

    def test_expired_invitation(self):
        body = self.ok(self.call("POST", "/orgs/acme/invitations", "admin",
                                 body={"login": "gina@example.com"}))
        self.database.query("UPDATE invitations SET expires_at = now() - interval '1 hour'"
                            " WHERE email = 'gina@example.com'")
        self.assertTrue(self.ok(self.call("GET", f"/invitations/{body['token']}"))["expired"])
        user_id, token = self.new_user("gina@example.com", "Gina")
        self.problem(self.call("POST", f"/invitations/{body['token']}/accept", token,
                               headers={"Ensign-Internal-Key": self.internal_key()}), 404)

    def internal_key(self):
        import harness
        return harness.ensignctl(self.server.config_path, "internal-key", "create", "--name",
                                 "test")


class NotificationsTest(AccountTestCase):

    def test_read_one_read_all_and_count(self):
        user_id, token = self.new_user("nina@example.com", "Nina")
        for slug in ("acme",):
            self.ack(self.call("POST", f"/orgs/{slug}/members", body={"login": "nina@example.com"}))
        self.ack(self.call("PUT", f"/orgs/acme/members/{user_id}/role", body={"role": "admin"}))
        self.assertEqual(self.ok(self.call("GET", "/notifications/unread-count", token)),
                         {"count": 2})
        notes = self.ok(self.call("GET", "/notifications?limit=1", token))["notifications"]
        self.assertEqual(len(notes), 1)
        self.assertEqual(notes[0]["kind"], "org.role_changed")
        self.problem(self.call("POST", f"/notifications/{notes[0]['id']}/read", "owner"), 404)
        self.ack(self.call("POST", f"/notifications/{notes[0]['id']}/read", token))
        self.ack(self.call("POST", f"/notifications/{notes[0]['id']}/read", token))
        self.assertEqual(self.ok(self.call("GET", "/notifications/unread-count", token)),
                         {"count": 1})
        self.ack(self.call("POST", "/notifications/read-all", token))
        self.assertEqual(self.ok(self.call("GET", "/notifications/unread-count", token)),
                         {"count": 0})
        read = self.ok(self.call("GET", "/notifications", token))["notifications"]
        self.assertTrue(all(n["read_at"] for n in read))
        self.problem(self.call("POST", "/notifications/nope/read", token), 404)
        self.problem(self.call("GET", "/notifications", "org"), 403)
        self.problem(self.call("GET", "/notifications", self.scoped_token({"orgs": "read"})),
                     403)
        self.problem(self.call("POST", "/notifications/read-all",
                               self.scoped_token({"notifications": "read"})), 403)
