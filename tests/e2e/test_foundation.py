"""test_foundation.py - end-to-end tests of the foundation: the process model
(supervision, SIGTERM, SIGHUP and what a reload keeps), the configuration
check, the HTTP envelopes and limits, health without a database, identity
(/v1/me and /me) and the OpenAPI document.

Each class runs its own ensignd on its own database (harness.ServerTestCase),
so classes do not depend on each other's order. Run by tests/e2e/run.
"""

import datetime
import os
import random
import signal
import socket
import string
import subprocess
import tempfile
import time
import unittest

import harness

BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
WORKER_TITLES = ("ensignd: worker 0", "ensignd: worker 1")
SERVICE_TITLES = ("ensignd: refresher", "ensignd: flusher", "ensignd: deliverer")


def random_secret(prefix):
    return prefix + "".join(random.choice(BASE62) for _ in range(43))


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


class HealthAndEnvelopeTest(harness.ServerTestCase):
    """Routes that need no credentials, and every error body."""

    settings = {"max_body_bytes": 4096, "max_header_bytes": 4096}

    def test_healthz(self):
        response = self.server.get("/v1/healthz")
        self.assertEqual(response.status, 200, response)
        self.assertJsonContentType(response)
        body = response.json
        self.assertEqual(set(body), {"status", "version", "time"}, body)
        self.assertEqual(body["status"], "ok")
        self.assertRegex(body["version"], r"^\d+\.\d+\.\d+")
        moment = datetime.datetime.fromisoformat(body["time"].replace("Z", "+00:00"))
        skew = abs(datetime.datetime.now(datetime.timezone.utc) - moment)
        self.assertLess(skew.total_seconds(), 300, body)

    def test_unknown_v1_path_answers_first_document_envelope(self):
        self.assertV1Error(self.server.get("/v1/no-such-thing"), 404)

    def test_unknown_ofrep_path_answers_evaluation_error_body(self):
        response = self.server.request("POST", "/ofrep/v1/no-such-thing", body={})
        self.assertEqual(response.status, 404, response)
        self.assertJsonContentType(response)
        body = response.json
        self.assertEqual(set(body), {"errorCode", "errorDetails", "message", "status"}, body)
        self.assertEqual(body["errorCode"], "GENERAL")
        self.assertEqual(body["status"], 404)
        self.assertIsInstance(body["errorDetails"], str)

    def test_unknown_other_path_answers_problem(self):
        response = self.server.get("/no-such-thing")
        self.assertProblem(response, 404)
        self.assertEqual(response.json["title"], "Not Found")
        self.assertEqual(response.json["type"], "about:blank")

    def test_wrong_method_answers_405_with_allow(self):
        response = self.server.request("DELETE", "/v1/healthz")
        self.assertV1Error(response, 405)
        allow = [m.strip() for m in response.headers.get("Allow", "").split(",")]
        self.assertIn("GET", allow, response.headers)

    def test_oversized_body_answers_413_json(self):
        body = b'{"email": "' + b"a" * 8192 + b'@example.com"}'
        request = (b"POST /v1/waitlist HTTP/1.1\r\nHost: localhost\r\n"
                   b"Content-Type: application/json\r\n"
                   b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        response = self.server.raw(request)
        self.assertV1Error(response, 413)

    def test_oversized_headers_answer_431_json(self):
        request = (b"GET /v1/healthz HTTP/1.1\r\nHost: localhost\r\n"
                   b"X-Padding: " + b"p" * 6000 + b"\r\n\r\n")
        response = self.server.raw(request)
        self.assertEqual(response.status, 431, response)
        self.assertJsonContentType(response)
        self.assertEqual(response.json["status"], 431)

    def test_malformed_request_line_answers_400_json(self):
        for line in (b"THIS IS NOT HTTP", b"GET /v1/healthz HTTP/1.1 extra", b"\x01\x02\x03"):
            with self.subTest(line=line):
                response = self.server.raw(line + b"\r\nHost: localhost\r\n\r\n")
                self.assertEqual(response.status, 400, response)
                self.assertJsonContentType(response)
                self.assertEqual(response.json["status"], 400)

    def test_server_keeps_serving_after_bad_requests(self):
        self.server.raw(b"NONSENSE\r\n\r\n")
        self.assertEqual(self.server.get("/v1/healthz").status, 200)

    def test_openapi_document(self):
        response = self.server.get("/openapi.json")
        self.assertEqual(response.status, 200, response)
        self.assertJsonContentType(response)
        document = response.json
        self.assertTrue(document["openapi"].startswith("3.1"), document.get("openapi"))
        for path in ("/v1/healthz", "/v1/me", "/me"):
            self.assertIn(path, document["paths"])
        health = self.server.get("/v1/healthz").json
        self.assertEqual(document["info"]["version"], health["version"])

    def test_api_reference(self):
        """GET /docs/api serves doc/api.md as generated from the route table."""
        response = self.server.get("/docs/api")
        self.assertEqual(response.status, 200, response)
        self.assertTrue(response.content_type.startswith("text/markdown"), response)
        source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "doc",
                              "api.md")
        with open(source, "rb") as f:
            self.assertEqual(response.body, f.read())
        self.assertIn(b"\n### GET /docs/api\n", response.body)
        self.assertIn("/docs/api", self.server.get("/openapi.json").json["paths"])


class IdentityTest(harness.ServerTestCase):
    """/v1/me for both token kinds, its 401s, and the root API's /me."""

    def test_me_with_user_token(self):
        response = self.server.get("/v1/me", token=self.identity.user_token)
        self.assertEqual(response.status, 200, response)
        self.assertJsonContentType(response)
        body = response.json
        self.assertEqual(set(body), {"kind", "via", "user"}, body)
        self.assertEqual(body["kind"], "user")
        self.assertEqual(body["via"], "token")
        self.assertEqual(set(body["user"]), {"id", "name", "email", "username"}, body)
        self.assertEqual(body["user"]["id"], self.identity.user_id)
        self.assertEqual(body["user"]["email"], self.identity.email)
        self.assertEqual(body["user"]["name"], self.identity.name)
        self.assertIsNone(body["user"]["username"])

    def test_me_with_organization_token(self):
        response = self.server.get("/v1/me", token=self.identity.org_token)
        self.assertEqual(response.status, 200, response)
        body = response.json
        self.assertEqual(set(body), {"kind", "via", "organization"}, body)
        self.assertEqual(body["kind"], "organization")
        self.assertEqual(body["via"], "token")
        organization = body["organization"]
        self.assertEqual(set(organization), {"id", "name", "slug", "plan"}, body)
        self.assertEqual(organization["slug"], self.identity.org_slug)
        self.assertEqual(organization["name"], self.identity.org_name)

    def test_bearer_scheme_is_case_insensitive(self):
        response = self.server.request(
            "GET", "/v1/me", headers={"Authorization": f"bearer {self.identity.user_token}"})
        self.assertEqual(response.status, 200, response)

    def test_me_without_valid_token_is_401(self):
        cases = {
            "no header": None,
            "garbage": bearer("garbage"),
            "empty bearer": {"Authorization": "Bearer "},
            "other scheme": {"Authorization": f"Basic {self.identity.user_token}"},
            "well-formed unknown token": bearer(random_secret("svc_oat_")),
            "sdk key": bearer(random_secret("svc_sdk_")),
        }
        for name, headers in cases.items():
            with self.subTest(name):
                self.assertV1Error(self.server.request("GET", "/v1/me", headers=headers), 401)

    def test_second_document_me_with_user_token(self):
        response = self.server.get("/me", token=self.identity.user_token)
        self.assertEqual(response.status, 200, response)
        self.assertJsonContentType(response)
        body = response.json
        self.assertTrue({"orgs", "user"} <= set(body), body)
        self.assertTrue({"created_at", "email", "id"} <= set(body["user"]), body)
        self.assertEqual(body["user"]["email"], self.identity.email)
        self.assertEqual(body["user"]["id"], self.identity.user_id)
        datetime.datetime.fromisoformat(body["user"]["created_at"].replace("Z", "+00:00"))
        slugs = {org["slug"]: org for org in body["orgs"]}
        self.assertIn(self.identity.org_slug, slugs, body)
        org = slugs[self.identity.org_slug]
        self.assertTrue({"created_at", "enforce_two_factor", "id", "name", "require_sso", "role",
                         "slug"} <= set(org), org)
        self.assertEqual(org["role"], "owner")

    def test_second_document_me_without_token_is_problem_401(self):
        self.assertProblem(self.server.get("/me"), 401)
        self.assertProblem(self.server.get("/me", token=random_secret("svc_oat_")), 401)


class SupervisionTest(harness.ServerTestCase):
    """The master restarts killed children and reloads on SIGHUP without
    refusing a single connection."""

    def wait_for_titles(self, titles, timeout=5.0):
        def present():
            found = self.server.children()
            return found if all(t in found.values() for t in titles) else None

        found = harness.wait_for(present, timeout)
        self.assertIsNotNone(found, f"children {self.server.children()} lack some of {titles}")
        return found

    def worker_pids(self):
        return {pid for pid, title in self.server.children().items()
                if title.startswith("ensignd: worker")}

    def test_process_titles(self):
        self.assertTrue(harness.process_title(self.server.pid).startswith("ensignd: master"),
                        harness.process_title(self.server.pid))
        self.wait_for_titles(WORKER_TITLES + SERVICE_TITLES)

    def test_killed_child_is_restarted_within_a_second(self):
        for title in ("ensignd: worker 0",) + SERVICE_TITLES:
            with self.subTest(title):
                self.kill_and_watch_restart(title)

    def kill_and_watch_restart(self, title):
        children = self.wait_for_titles(WORKER_TITLES + SERVICE_TITLES)
        victim = next(pid for pid, t in children.items() if t == title)
        others = set(children) - {victim}
        with harness.LoadLoop(self.server.port) as load:
            time.sleep(0.2)
            os.kill(victim, signal.SIGKILL)
            killed_at = time.monotonic()
            served_before = load.count()
            replacement = harness.wait_for(
                lambda: (self.server.child_with_title(title) or victim) != victim or None, 3.0,
                interval=0.01)
            elapsed = time.monotonic() - killed_at
            time.sleep(0.3)
        self.assertTrue(replacement, f"{title} was not restarted:\n{self.server.stderr()}")
        self.assertLess(elapsed, 1.0, f"{title} restarted after {elapsed:.2f}s")
        self.assertTrue(all(harness.pid_alive(pid) for pid in others), "another child died")
        self.assertIsNone(self.server.proc.poll(), "the master died")
        self.assertGreater(load.count(), served_before, "requests stopped being served")
        # Only requests in flight on the killed worker may fail (one per client).
        allowed = 2 if title.startswith("ensignd: worker") else 0
        self.assertLessEqual(len(load.failures), allowed, load.failures)

    def reload_under_load(self, workers):
        old = self.worker_pids()
        self.server.write_config(workers=workers)
        with harness.LoadLoop(self.server.port, threads=3) as load:
            time.sleep(0.3)
            self.server.signal(signal.SIGHUP)
            replaced = harness.wait_for(
                lambda: (len(self.worker_pids()) == workers and not (self.worker_pids() & old)),
                10.0)
            time.sleep(0.5)
        self.assertTrue(replaced, f"workers not replaced: {self.server.children()}\n"
                                  f"{self.server.stderr()}")
        self.assertEqual(load.failures, [], "requests failed during the reload")
        self.assertGreater(load.count(), 0)
        self.wait_for_titles(tuple(f"ensignd: worker {i}" for i in range(workers)))

    def test_sighup_rereads_config_and_replaces_workers_without_refusing(self):
        self.wait_for_titles(WORKER_TITLES + SERVICE_TITLES)
        self.reload_under_load(3)
        self.reload_under_load(2)
        self.assertIsNone(self.server.proc.poll(), "the master died")

    def test_sighup_with_bad_config_keeps_serving(self):
        self.wait_for_titles(WORKER_TITLES)
        before = self.worker_pids()
        self.server.write_config_text(harness.config_text(self.server.settings) +
                                      "workers = many\n")
        bad_line = len(harness.config_text(self.server.settings).splitlines()) + 1
        try:
            self.server.signal(signal.SIGHUP)
            where = f"{self.server.config_path}:{bad_line}"
            self.assertTrue(harness.wait_for(lambda: where in self.server.stderr(), 5.0),
                            f"no error naming {where}:\n{self.server.stderr()}")
            self.assertEqual(self.server.get("/v1/healthz").status, 200)
            self.assertEqual(self.worker_pids(), before)
        finally:
            self.server.write_config()


class ReloadRestartOnlyKeysTest(unittest.TestCase):
    """A reload keeps the running value of every key whose row in the
    configuration table is not reloadable, and says so in one warning;
    reloadable keys change. A reload that fails leaves the running
    configuration whole, restart-only keys included."""

    WARNING = "change only on restart; keeping the running values"

    def setUp(self):
        self.server = harness.Server(harness.require_env("ENSIGN_TEST_DATABASE"), workers=1)
        self.metrics_port = harness.free_port()
        self.server.start()

    def tearDown(self):
        try:
            self.assertEqual(self.server.stop(), 0, self.server.stderr())
            self.assertEqual(self.server.sanitizer_reports(), [])
        finally:
            self.server.remove()

    def worker(self):
        return self.server.child_with_title("ensignd: worker 0")

    def wait_new_worker(self, old):
        replaced = harness.wait_for(lambda: (self.worker() or old) != old or None, 10.0)
        self.assertTrue(replaced, f"worker {old} not replaced:\n{self.server.stderr()}")
        self.server.wait_ready()

    def assert_metrics_on_listen(self):
        self.assertEqual(self.server.get("/metrics").status, 200, self.server.stderr())
        with self.assertRaises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", self.metrics_port), timeout=2).close()

    def waitlist(self):
        return self.server.request("POST", "/v1/waitlist", body=b'{"email":"r@example.org"}',
                                   headers={"Content-Type": "application/json"})

    def test_restart_only_keys_keep_their_values_with_one_warning(self):
        old = self.worker()
        self.server.write_config(metrics_listen=f"127.0.0.1:{self.metrics_port}",
                                 usage_slots=2048, waitlist="off")
        self.server.signal(signal.SIGHUP)
        self.wait_new_worker(old)
        self.assertTrue(harness.wait_for(lambda: self.WARNING in self.server.stderr(), 5.0),
                        self.server.stderr())
        warnings = [line for line in self.server.stderr().splitlines() if self.WARNING in line]
        self.assertEqual(len(warnings), 1, warnings)
        self.assertIn(" level=warn ", warnings[0])
        self.assertIn("reload: usage_slots, metrics_listen " + self.WARNING, warnings[0])
        self.assert_metrics_on_listen()  # metrics_listen kept: still served on listen
        response = self.waitlist()  # waitlist is reloadable: off, the new spelling, applies
        self.assertEqual((response.status, response.json), (200, {"accepted": False}))
        # The same file again: nothing new to warn of, the kept values stay.
        old = self.worker()
        self.server.signal(signal.SIGHUP)
        self.wait_new_worker(old)
        self.assertEqual(
            sum(self.WARNING in line for line in self.server.stderr().splitlines()), 2,
            "the second reload of the changed file warns again, once")
        self.assert_metrics_on_listen()

    def test_failed_reload_keeps_the_running_restart_only_values(self):
        bad_log = os.path.join(self.server.dir, "no-such-dir", "access.log")
        self.server.write_config(metrics_listen=f"127.0.0.1:{self.metrics_port}",
                                 access_log_path=bad_log)
        self.server.signal(signal.SIGHUP)
        self.assertTrue(harness.wait_for(lambda: "reload failed" in self.server.stderr(), 10.0),
                        self.server.stderr())
        # A worker respawned after the refused reload runs the running configuration.
        old = self.worker()
        os.kill(old, signal.SIGKILL)
        self.wait_new_worker(old)
        self.assert_metrics_on_listen()


class StopSignalTest(harness.ServerTestCase):
    """SIGTERM and SIGINT drain in-flight requests and exit 0."""

    def setUp(self):
        if self.server.proc.poll() is not None:
            self.server.start()

    def assert_graceful_stop(self, signum):
        children = set(self.server.children())
        self.assertTrue(children)
        with harness.LoadLoop(self.server.port, threads=3) as load:
            time.sleep(0.3)
            self.server.signal(signum)
            status = self.server.proc.wait(harness.STOP_TIMEOUT)
        self.assertEqual(status, 0, self.server.stderr())
        self.assertEqual(self.server.sanitizer_reports(), [])
        self.assertTrue(harness.wait_for(
            lambda: not any(harness.pid_alive(pid) for pid in children), 5.0),
            "children outlived the master")
        with self.assertRaises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", self.server.port), timeout=2).close()
        # After the stop, connections are refused (or reset while queued on a
        # closing socket); an accepted request is never left unanswered.
        unexpected = [f for f in load.failures
                      if not f.startswith(("ConnectionRefusedError", "ConnectionResetError"))]
        self.assertEqual(unexpected, [])
        self.assertGreater(load.count(), 0)

    def test_sigterm_drains_and_exits_zero(self):
        self.assert_graceful_stop(signal.SIGTERM)

    def test_sigint_drains_and_exits_zero(self):
        self.assert_graceful_stop(signal.SIGINT)


class DatabaseDownTest(harness.ServerTestCase):
    """Health and the API reference never touch the database; management recovers."""

    def test_healthz_without_database(self):
        self.assertEqual(self.server.get("/v1/me", token=self.identity.user_token).status, 200)
        harness.stop_postgres()
        try:
            for _ in range(6):
                response = self.server.get("/v1/healthz")
                self.assertEqual(response.status, 200, response)
                self.assertEqual(set(response.json), {"status", "version", "time"})
                self.assertEqual(response.json["status"], "ok")
            self.assertEqual(self.server.get("/docs/api").status, 200)
            response = self.server.get("/v1/me", token=self.identity.user_token)
            self.assertGreaterEqual(response.status, 500, response)
            self.assertV1Error(response, response.status)
        finally:
            harness.start_postgres()
        recovered = harness.wait_for(
            lambda: self.server.get("/v1/me", token=self.identity.user_token).status == 200,
            15.0, interval=0.2)
        self.assertTrue(recovered, f"/v1/me did not recover:\n{self.server.stderr()}")
        self.assertIsNone(self.server.proc.poll(), "the master died")


class ConfigurationCheckTest(unittest.TestCase):
    """ensignd -t, -V and startup errors: no database or server needed."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ensign-e2e-conf.")
        self.path = os.path.join(self.dir, "ensign.conf")

    def tearDown(self):
        subprocess.run(["rm", "-rf", self.dir], check=False)

    def write(self, text):
        with open(self.path, "w") as f:
            f.write(text)

    def ensignd(self, *args, timeout=30):
        result = subprocess.run([harness.ENSIGND, *args], capture_output=True, text=True,
                                timeout=timeout, stdin=subprocess.DEVNULL)
        self.assertEqual(harness.sanitizer_reports(result.stderr), [], result.stderr)
        return result

    def test_shipped_config_is_ok(self):
        with open(os.path.join(harness.SRC_DIR, "etc", "ensign.conf")) as f:
            shipped = f.read()
        self.write(shipped + f"state_dir = {self.dir}/state\n")
        result = self.ensignd("-t", "-c", self.path)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("configuration OK", result.stdout + result.stderr)

    def test_check_needs_a_usable_state_dir(self):
        plain_file = os.path.join(self.dir, "file")
        with open(plain_file, "w") as f:
            f.write("x")
        cases = {
            "not a directory": (plain_file, "is not a directory"),
            "cannot be created": (os.path.join(self.dir, "no", "such"), "cannot be created"),
        }
        for name, (state_dir, message) in cases.items():
            with self.subTest(name):
                self.write(f"state_dir = {state_dir}\n")
                result = self.ensignd("-t", "-c", self.path)
                self.assertEqual(result.returncode, 1, result)
                self.assertIn(message, result.stderr)
                self.assertIn(state_dir, result.stderr)
                self.assertNotIn("configuration OK", result.stdout + result.stderr)
        self.write(f"state_dir = {self.dir}/new\n")
        result = self.ensignd("-t", "-c", self.path)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "new")), "-t created state_dir")

    def test_check_touches_no_database_and_binds_no_port(self):
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            self.write(f"# comment\n\nlisten = 127.0.0.1:{port}\n"
                       f'database = "host=/nonexistent dbname=nothing"\nworkers = 2\n'
                       f"state_dir = {self.dir}\n")
            result = self.ensignd("-t", "-c", self.path)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("configuration OK", result.stdout + result.stderr)

    def test_errors_name_file_and_line(self):
        cases = {
            "unknown key": "listen = 127.0.0.1:8080\n# fine\nno_such_key = 1\n",
            "bad integer": "workers = 2\n\nmax_body_bytes = lots\n",
            "out of range": "# a\n# b\nworkers = 100000\n",
            "bad listen": "log_level = info\nworkers = 1\nlisten = nowhere\n",
            "bad log level": "\n\nlog_level = loud\n",
            "unterminated quote": 'workers = 1\nlisten = 127.0.0.1:8080\ndatabase = "dbname=x\n',
        }
        for name, text in cases.items():
            with self.subTest(name):
                self.write(text)
                result = self.ensignd("-t", "-c", self.path)
                self.assertEqual(result.returncode, 1, result)
                self.assertIn(f"{self.path}:3", result.stdout + result.stderr)
                self.assertNotIn("configuration OK", result.stdout + result.stderr)

    def test_switches_read_on_off_and_the_old_spellings(self):
        accepted = ["waitlist = off", "waitlist = on", "waitlist = closed", "waitlist = open",
                    "waitlist = no", "session_cookie_secure = on", "session_cookie_secure = 1",
                    "session_cookie_secure = false", 'session_cookie_secure = "yes"']
        for line in accepted:
            with self.subTest(line):
                self.write(f"state_dir = {self.dir}\n{line}\n")
                result = self.ensignd("-t", "-c", self.path)
                self.assertEqual(result.returncode, 0, result.stderr)
        self.write(f"state_dir = {self.dir}\n\nsession_cookie_secure = open\n")
        result = self.ensignd("-t", "-c", self.path)
        self.assertEqual(result.returncode, 1, result)
        self.assertIn(f'{self.path}:3: session_cookie_secure: "open" is not one of on, off',
                      result.stderr)

    def test_missing_file_is_an_error(self):
        missing = os.path.join(self.dir, "absent.conf")
        result = self.ensignd("-t", "-c", missing)
        self.assertEqual(result.returncode, 1)
        self.assertIn(missing, result.stderr)

    def test_paths_come_from_configure(self):
        """The default configuration file and state_dir follow --sysconfdir and
        --localstatedir, and `make install` puts the annotated file there."""
        dirs = {}
        with open(os.path.join(harness.BUILD_DIR, "Makefile")) as f:
            for line in f:
                name, _, value = line.partition(" = ")
                if name in ("prefix", "sysconfdir", "localstatedir"):
                    dirs[name] = value.strip()
        sysconfdir = dirs["sysconfdir"].replace("${prefix}", dirs["prefix"])
        localstatedir = dirs["localstatedir"].replace("${prefix}", dirs["prefix"])
        result = self.ensignd("-h")
        self.assertIn(f"(default {sysconfdir}/ensign/ensign.conf)", result.stdout)
        root = os.path.join(self.dir, "root")
        install = subprocess.run(["make", "-C", harness.BUILD_DIR, "install-data-local",
                                  f"DESTDIR={root}"], capture_output=True, text=True,
                                 timeout=120, stdin=subprocess.DEVNULL)
        self.assertEqual(install.returncode, 0, install.stdout + install.stderr)
        installed = os.path.join(root + sysconfdir, "ensign", "ensign.conf")
        with open(installed) as f:
            text = f.read()
        self.assertIn(f"\n# state_dir = {localstatedir}/lib/ensign\n", text)
        self.write(text + f"state_dir = {self.dir}\n")
        result = self.ensignd("-t", "-c", self.path)
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_version(self):
        result = self.ensignd("-V")
        self.assertEqual(result.returncode, 0)
        self.assertRegex(result.stdout.strip(), r"^ensignd \d+\.\d+\.\d+")

    def test_port_in_use_is_a_startup_error(self):
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            self.write(f"listen = 127.0.0.1:{port}\nworkers = 1\nstate_dir = {self.dir}\n"
                       f'database = "host=/nonexistent dbname=nothing"\n')
            result = self.ensignd("-c", self.path)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn(str(port), result.stderr)


if __name__ == "__main__":
    unittest.main()
