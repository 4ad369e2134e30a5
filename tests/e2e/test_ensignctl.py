"""test_ensignctl.py - ensignctl against a real PostgreSQL: migrations, the
bootstrap commands, their output and exit statuses (ensignctl(1)), and the schema invariants other processes rely on (the
configuration generation, default environments, stored digests).

Each test class works in a database of its own (harness.Database), with
its own configuration file; no ensignd is started. Run by tests/e2e/run.
"""

import hashlib
import os
import re
import subprocess
import tempfile
import unittest

import harness

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
TOKEN_RE = re.compile(r"^svc_oat_[0-9A-Za-z]{43}$")


def ctl(config_path, *args, stdin=None):
    """Runs ensignctl; returns (exit status, stdout, stderr)."""
    result = subprocess.run([harness.ENSIGNCTL, "-c", config_path, *args], input=stdin,
                            capture_output=True, text=True, timeout=120)
    reports = harness.sanitizer_reports(result.stderr)
    if reports:
        raise AssertionError("sanitizer report:\n" + "\n".join(reports))
    return result.returncode, result.stdout, result.stderr


class EnsignctlTestCase(unittest.TestCase):
    """A fresh database and a configuration file naming it, per class."""

    migrate = True

    @classmethod
    def setUpClass(cls):
        harness.require_env("ENSIGN_TEST_DATABASE")
        cls.db = harness.Database(cls.__name__)
        cls.tmp = tempfile.TemporaryDirectory(prefix="ensignctl-test.")
        cls.config = cls.write_config(cls.db)
        if cls.migrate:
            harness.ensignctl(cls.config, "migrate")

    @classmethod
    def write_config(cls, db):
        path = os.path.join(cls.tmp.name, f"{db.name}.conf")
        with open(path, "w") as f:
            f.write(harness.config_text({"database": db.conninfo}))
        return path

    @classmethod
    def tearDownClass(cls):
        cls.db.drop()
        cls.tmp.cleanup()

    def ok(self, *args, stdin=None):
        status, out, err = ctl(self.config, *args, stdin=stdin)
        self.assertEqual(status, 0, f"ensignctl {' '.join(args)}: {err}")
        self.assertEqual(err, "")
        return out.strip()

    def fails(self, expected_status, *args, stdin=None, message=None):
        status, out, err = ctl(self.config, *args, stdin=stdin)
        self.assertEqual(status, expected_status, f"ensignctl {' '.join(args)}: {out} {err}")
        self.assertEqual(out, "")
        self.assertTrue(err.startswith("ensignctl: "), err)
        if message:
            self.assertIn(message, err)
        return err

    def query(self, sql):
        return self.db.query(sql)


def shipped_migrations():
    """The names of sql/NNNN_*.sql, in order: what a fresh migrate applies."""
    sql_dir = os.path.join(harness.SRC_DIR, "sql")
    return sorted(name[:-4] for name in os.listdir(sql_dir)
                  if name.endswith(".sql") and name[:4].isdigit())


class MigrateTest(EnsignctlTestCase):
    migrate = False

    def test_first_run_applies_then_nothing(self):
        names = shipped_migrations()
        self.assertEqual(names[0], "0001_init")
        self.assertEqual(self.ok("migrate"), "\n".join("applied " + n for n in names))
        self.assertEqual(self.ok("migrate"), "")
        self.assertEqual(self.query("SELECT count(*) FROM schema_migrations"), str(len(names)))
        self.assertEqual(self.query("SELECT generation FROM config_generation"), "1")

    def test_concurrent_runs_on_a_fresh_database(self):
        fresh = harness.Database("concurrent migrate")
        try:
            config = self.write_config(fresh)
            runs = [subprocess.Popen([harness.ENSIGNCTL, "-c", config, "migrate"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                    for _ in range(4)]
            outputs = [run.communicate(timeout=120) for run in runs]
            self.assertEqual([run.returncode for run in runs], [0] * 4, outputs)
            applied = [line for out, _ in outputs for line in out.splitlines()]
            names = shipped_migrations()
            self.assertEqual(applied, ["applied " + n for n in names])
            self.assertEqual([err for _, err in outputs], [""] * 4)
            self.assertEqual(fresh.query("SELECT count(*) FROM schema_migrations"),
                             str(len(names)))
        finally:
            fresh.drop()


class UserCreateTest(EnsignctlTestCase):
    def test_prints_the_id(self):
        user_id = self.ok("user", "create", "--email", "Ada@Example.com", "--name", "Ada L",
                          "--username", "ada")
        self.assertRegex(user_id, UUID_RE)
        row = self.query(f"SELECT email, name, username, password_hash IS NULL FROM users "
                         f"WHERE id = '{user_id}'")
        self.assertEqual(row, "Ada@Example.com|Ada L|ada|t")

    def test_duplicate_email_ignores_case(self):
        self.ok("user", "create", "--email", "dup@example.com", "--name", "One")
        self.fails(1, "user", "create", "--email", "DUP@example.COM", "--name", "Two",
                   message="already exists")

    def test_duplicate_username_ignores_case(self):
        self.ok("user", "create", "--email", "u1@example.com", "--name", "U", "--username", "grace")
        self.fails(1, "user", "create", "--email", "u2@example.com", "--name", "U", "--username",
                   "Grace", message="already taken")

    def test_password_from_stdin_is_hashed(self):
        user_id = self.ok("user", "create", "--email", "pw@example.com", "--name", "Pw",
                          "--password-stdin", stdin="correct horse battery\n")
        stored = self.query(f"SELECT password_hash FROM users WHERE id = '{user_id}'")
        self.assertTrue(stored.startswith("$s1$"), stored)
        self.assertNotIn("correct horse", stored)

    def test_short_or_missing_password(self):
        self.fails(1, "user", "create", "--email", "short@example.com", "--name", "S",
                   "--password-stdin", stdin="short\n", message="8 to 1024")
        self.fails(1, "user", "create", "--email", "none@example.com", "--name", "S",
                   "--password-stdin", stdin="")
        self.assertEqual(self.query("SELECT count(*) FROM users WHERE email LIKE 's%' "
                                    "OR email LIKE 'none%'"), "0")

    def test_usage_errors(self):
        for args in (["user", "create", "--name", "No Email"],
                     ["user", "create", "--email", "x@example.com"],
                     ["user", "create", "--email", "not-an-email", "--name", "X"],
                     ["user", "create", "--email", "a b@example.com", "--name", "X"],
                     ["user", "create", "--email", "x@example", "--name", "X"],
                     ["user", "create", "--email", "x@example.com", "--name", ""],
                     ["user", "create", "--email", "x@example.com", "--name", "   "],
                     ["user", "create", "--email", "x@example.com", "--name", "tab\there"],
                     ["user", "create", "--email", "x@example.com", "--name", "x" * 201],
                     ["user", "create", "--email", "x@example.com", "--name", "X",
                      "--username", "-bad"],
                     ["user", "create", "--email", "x@example.com", "--name", "X", "--bogus"],
                     ["user", "create", "--email", "x@example.com", "--name", "X", "extra"],
                     ["user"],
                     ["user", "delete"]):
            with self.subTest(args=args):
                self.fails(2, *args)
        self.assertEqual(self.query("SELECT count(*) FROM users WHERE email LIKE 'x@%'"), "0")


class OrgCreateTest(EnsignctlTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.owner_id = harness.ensignctl(cls.config, "user", "create", "--email",
                                         "owner@example.com", "--name", "Owner")

    def test_slug_derived_from_the_name(self):
        self.assertEqual(self.ok("org", "create", "--name", "  Acme Corp!! (EU) ",
                                 "--owner", "OWNER@example.com"), "acme-corp-eu")
        row = self.query("SELECT o.name, o.plan, o.ip_disclosure, m.role, m.user_id "
                         "FROM orgs o JOIN org_members m ON m.org_id = o.id "
                         "WHERE o.slug = 'acme-corp-eu'")
        self.assertEqual(row, f"Acme Corp!! (EU)|free|f|owner|{self.owner_id}")

    def test_long_name_slug_is_cut_to_63(self):
        slug = self.ok("org", "create", "--name", "Z" * 62 + " tail", "--owner",
                       "owner@example.com")
        self.assertEqual(slug, "z" * 62)

    def test_explicit_slug_and_default_environments(self):
        self.assertEqual(self.ok("org", "create", "--name", "Beta", "--slug", "beta-2",
                                 "--owner", "owner@example.com"), "beta-2")
        envs = self.query("SELECT string_agg(e.key || ':' || e.name, ',' ORDER BY e.sort_order) "
                          "FROM environments e JOIN orgs o ON o.id = e.org_id "
                          "WHERE o.slug = 'beta-2'")
        self.assertEqual(envs, "production:Production,preview:Preview,development:Development")

    def test_duplicate_slug(self):
        self.ok("org", "create", "--name", "Gamma", "--owner", "owner@example.com")
        self.fails(1, "org", "create", "--name", "Other", "--slug", "gamma", "--owner",
                   "owner@example.com", message="already exists")

    def test_unknown_owner(self):
        self.fails(1, "org", "create", "--name", "Delta", "--owner", "nobody@example.com",
                   message="no user")
        self.assertEqual(self.query("SELECT count(*) FROM orgs WHERE slug = 'delta'"), "0")

    def test_usage_errors(self):
        for args in (["org", "create", "--name", "No Owner"],
                     ["org", "create", "--owner", "owner@example.com"],
                     ["org", "create", "--name", "X", "--slug", "Bad_Slug", "--owner",
                      "owner@example.com"],
                     ["org", "create", "--name", "X", "--slug", "trailing-", "--owner",
                      "owner@example.com"],
                     ["org", "create", "--name", "X", "--slug", "a" * 64, "--owner",
                      "owner@example.com"],
                     ["org", "create", "--name", "!!!", "--owner", "owner@example.com"]):
            with self.subTest(args=args):
                self.fails(2, *args)


class TokenCreateTest(EnsignctlTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.user_id = harness.ensignctl(cls.config, "user", "create", "--email",
                                        "tok@example.com", "--name", "Tok")
        harness.ensignctl(cls.config, "org", "create", "--name", "Tokens Inc", "--owner",
                          "tok@example.com")

    def stored(self, token):
        digest = hashlib.sha256(token.encode()).hexdigest()
        return self.query("SELECT kind, coalesce(user_id::text, ''), coalesce(org_id::text, ''),"
                          " name, prefix, last_four, full_access, scopes::text,"
                          " coalesce(round(extract(epoch FROM expires_at - created_at) / 86400),"
                          " -1)"
                          f" FROM access_tokens WHERE token_digest = '{digest}'").split("|")

    def test_personal_token_is_read_only_by_default(self):
        token = self.ok("token", "create", "--user", "TOK@example.com", "--name", "reader")
        self.assertRegex(token, TOKEN_RE)
        kind, user_id, org_id, name, prefix, last_four, full, scopes, days = self.stored(token)
        self.assertEqual((kind, user_id, org_id, name), ("personal", self.user_id, "", "reader"))
        self.assertEqual((prefix, last_four), (token[:12], token[-4:]))
        self.assertEqual(full, "f")
        for scope in ("flags", "orgs", "projects", "members", "audit", "tokens",
                      "notifications"):
            self.assertIn(f'"{scope}": "read"', scopes)
        self.assertNotIn("write", scopes)
        self.assertEqual(days, "-1")

    def test_full_token_with_expiry(self):
        token = self.ok("token", "create", "--user", "tok@example.com", "--name", "deploy",
                        "--full", "--expires-in-days", "30")
        row = self.stored(token)
        self.assertEqual(row[6], "t")
        self.assertEqual(row[8], "30")

    def test_zero_days_means_no_expiry(self):
        token = self.ok("token", "create", "--user", "tok@example.com", "--name", "forever",
                        "--expires-in-days", "0")
        self.assertEqual(self.stored(token)[8], "-1")

    def test_organization_token(self):
        token = self.ok("token", "create", "--org", "tokens-inc", "--name", "ci")
        self.assertRegex(token, TOKEN_RE)
        kind, user_id, org_id, name, _, _, full, _, _ = self.stored(token)
        self.assertEqual((kind, user_id, name, full), ("organization", "", "ci", "t"))
        self.assertRegex(org_id, UUID_RE)

    def test_tokens_are_distinct_and_never_stored_in_plaintext(self):
        first = self.ok("token", "create", "--org", "tokens-inc", "--name", "a")
        second = self.ok("token", "create", "--org", "tokens-inc", "--name", "b")
        self.assertNotEqual(first, second)
        leaked = self.query("SELECT count(*) FROM access_tokens t WHERE "
                            f"t::text LIKE '%{first[8:]}%' OR t::text LIKE '%{second[8:]}%'")
        self.assertEqual(leaked, "0")

    def test_unknown_owner(self):
        self.fails(1, "token", "create", "--user", "nobody@example.com", "--name", "x",
                   message="no user")
        self.fails(1, "token", "create", "--org", "no-such-org", "--name", "x",
                   message="no organization")

    def test_usage_errors(self):
        for args in (["token", "create", "--name", "x"],
                     ["token", "create", "--user", "tok@example.com"],
                     ["token", "create", "--user", "tok@example.com", "--org", "tokens-inc",
                      "--name", "x"],
                     ["token", "create", "--org", "tokens-inc", "--name", "x", "--full"],
                     ["token", "create", "--user", "tok@example.com", "--name", "x",
                      "--expires-in-days", "-1"],
                     ["token", "create", "--user", "tok@example.com", "--name", "x",
                      "--expires-in-days", "ten"],
                     ["token", "create", "--user", "tok@example.com", "--name", "x",
                      "--expires-in-days"]):
            with self.subTest(args=args):
                self.fails(2, *args)


class GlobalOptionsTest(EnsignctlTestCase):
    migrate = False

    def test_version_and_help(self):
        self.assertRegex(self.ok("-V"), r"^ensignctl \d+\.\d+\.\d+")
        self.assertIn("usage: ensignctl", self.ok("-h"))
        self.assertIn("token create", self.ok("--help"))

    def test_no_or_unknown_command(self):
        self.fails(2)
        self.fails(2, "frobnicate")
        self.fails(2, "-x", "migrate")

    def test_unreadable_configuration(self):
        status, out, err = ctl(os.path.join(self.tmp.name, "missing.conf"), "migrate")
        self.assertEqual((status, out), (1, ""))
        self.assertIn("missing.conf", err)

    def test_unreachable_database(self):
        path = os.path.join(self.tmp.name, "unreachable.conf")
        with open(path, "w") as f:
            f.write(harness.config_text({"database": f"host={self.tmp.name} port=1 "
                                                     "dbname=nothing connect_timeout=2"}))
        status, out, err = ctl(path, "migrate")
        self.assertEqual((status, out), (1, ""))
        self.assertIn("cannot connect", err)

    def unknown_role_config(self):
        """A configuration naming this database with a role that does not exist."""
        path = os.path.join(self.tmp.name, "unknown-role.conf")
        with open(path, "w") as f:
            params = {**harness.parse_conninfo(self.db.conninfo), "user": "ensign_no_such_role"}
            f.write(harness.config_text({"database": harness.format_conninfo(params)}))
        return path

    @unittest.skipUnless(os.geteuid() == 0, "the hint is for root")
    def test_unknown_role_as_root_hints_runuser(self):
        path = self.unknown_role_config()
        status, out, err = ctl(path, "user", "create", "--email", "a@example.com",
                               "--name", "A")
        self.assertEqual((status, out), (1, ""))
        self.assertIn('role "ensign_no_such_role" does not exist', err)
        hint = [line for line in err.splitlines() if line.startswith("ensignctl: hint: ")]
        self.assertEqual(len(hint), 1, err)
        self.assertIn("runuser -u ensign -- ensignctl", hint[0])
        self.assertIn(f"set `database` in {path}", hint[0])

    @unittest.skipUnless(os.geteuid() == 0, "drops to another user")
    def test_unknown_role_as_another_user_has_no_hint(self):
        path = self.unknown_role_config()
        os.chmod(self.tmp.name, 0o755)
        os.chmod(path, 0o644)
        result = subprocess.run([harness.ENSIGNCTL, "-c", path, "migrate"],
                                capture_output=True, text=True, timeout=60,
                                preexec_fn=lambda: (os.setgid(65534), os.setuid(65534)))
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("does not exist", result.stderr)
        self.assertNotIn("hint:", result.stderr)

    def test_unreachable_database_has_no_hint(self):
        path = os.path.join(self.tmp.name, "unreachable-nohint.conf")
        with open(path, "w") as f:
            f.write(harness.config_text({"database": f"host={self.tmp.name} port=1 "
                                                     "dbname=nothing connect_timeout=2"}))
        status, out, err = ctl(path, "migrate")
        self.assertEqual(status, 1)
        self.assertNotIn("hint:", err)


class ConfigGenerationTest(EnsignctlTestCase):
    """The schema side of snapshot refreshes: one bump per committed change
    to what evaluation reads, announced on the ensign_config channel."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        harness.ensignctl(cls.config, "user", "create", "--email", "gen@example.com", "--name",
                          "Gen")
        harness.ensignctl(cls.config, "org", "create", "--name", "Gen", "--owner",
                          "gen@example.com")

    def generation(self):
        return int(self.query("SELECT generation FROM config_generation"))

    def script(self, sql):
        result = subprocess.run(["psql", "-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1", "-d",
                                 self.db.conninfo], input=sql, capture_output=True, text=True,
                                timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        return result.stdout

    def test_one_bump_per_transaction(self):
        before = self.generation()
        self.script("BEGIN;"
                    "INSERT INTO flags (org_id, key, name) SELECT id, 'f1', 'F1' FROM orgs;"
                    "INSERT INTO flags (org_id, key, name) SELECT id, 'f2', 'F2' FROM orgs;"
                    "INSERT INTO variants (flag_id, org_id, key, value)"
                    " SELECT id, org_id, 'on', 'true' FROM flags;"
                    "COMMIT;")
        self.assertEqual(self.generation(), before + 1)
        self.script("BEGIN; UPDATE flags SET name = 'rolled back'; ROLLBACK;")
        self.assertEqual(self.generation(), before + 1)

    def test_sdk_key_usage_does_not_bump_but_revocation_does(self):
        self.script("INSERT INTO sdk_keys (org_id, environment_id, name, token_digest, prefix,"
                    " last_four) SELECT o.id, e.id, 'k', repeat('b', 64), 'svc_sdk_abcd', 'wxyz'"
                    " FROM orgs o JOIN environments e ON e.org_id = o.id"
                    " AND e.key = 'production';")
        before = self.generation()
        self.script("UPDATE sdk_keys SET last_used_at = now();")
        self.assertEqual(self.generation(), before)
        self.script("UPDATE sdk_keys SET revoked_at = now();")
        self.assertEqual(self.generation(), before + 1)

    def test_notify_carries_the_new_generation(self):
        out = self.script("LISTEN ensign_config;"
                          "INSERT INTO segments (org_id, key, name) SELECT id, 'seg', 'Seg'"
                          " FROM orgs;"
                          "SELECT 'generation=' || generation FROM config_generation;")
        generation = re.search(r"generation=(\d+)", out).group(1)
        # psql reports the notification on stdout after the next command.
        self.assertIn(f'notification "ensign_config" with payload "{generation}"', out)


if __name__ == "__main__":
    unittest.main()
