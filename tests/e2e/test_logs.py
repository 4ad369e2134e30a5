"""test_logs.py - end-to-end tests of the logs an operator reads
(access_log, access_log_path, log_level in ensign.conf(5); ensignd(8)).

JournalPriorityTest starts ensignd with JOURNAL_STREAM naming its stderr
file, as systemd does, and finds "<4>" on the unreachable database's
warning, "<3>" on a refused reload's error and "<6>" on info lines, each
matching its level= field, and "<3>" on `ensignd -t`'s refusal; with a
JOURNAL_STREAM naming another stream the lines carry no prefix. AccessLogDefaultTest checks that the default
(management) logs every request but evaluations and event streams.
AccessLogFileTest writes the access log to a file: the lines arrive within
the buffer's second, never on stderr, and logrotate's rename + SIGHUP
leaves the old workers' last lines in the renamed file and puts the new
workers' lines in a new one. AccessLogPathErrorsTest: a path that cannot
be opened is a start-up error naming it, fails `ensignd -t`, and on
SIGHUP is a logged error while the running workers keep serving and
logging to their file.

Run by tests/e2e/run.
"""

import os
import re
import signal
import stat
import subprocess
import tempfile
import unittest

import harness
from test_evaluation import FLAG_PATH, OfrepTestCase

PRIORITY = {"error": "<3>", "warn": "<4>", "info": "<6>", "debug": "<7>"}
ACCESS_LINE = re.compile(r'^ts=[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z '
                         r'level=info role="worker [0-9]+" pid=[0-9]+ event=access '
                         r'method=[A-Z]+ path=\S+ status=[0-9]{3} '
                         r'duration_ms=[0-9]+\.[0-9]{3} bytes=[0-9]+$')
FLUSH_WAIT_S = 3.0  # the buffer is written every second


def start_with_env(server, **env):
    """Starts server with env added to ensignd's environment."""
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        server.start(wait=False)
    finally:
        for name, value in saved.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value


def stream_id(path):
    st = os.stat(path)
    return f"{st.st_dev}:{st.st_ino}"


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def worker_pids(server):
    return {pid for pid, title in server.children().items() if title.startswith("ensignd: worker")}


class JournalPriorityTest(unittest.TestCase):
    """Lines carry their syslog priority only when stderr is the journal."""

    def setUp(self):
        self.server = harness.Server("host=/nonexistent dbname=nothing", workers=1)
        open(self.server.stderr_path, "ab").close()

    def tearDown(self):
        self.server.remove()

    def lines(self):
        return [line for line in self.server.stderr().splitlines()
                if line.strip() and not harness.sanitizer_reports(line)]

    def wait_for_line(self, needle):
        found = harness.wait_for(lambda: any(needle in line for line in self.lines()), 10.0)
        self.assertTrue(found, f"no line with {needle!r}:\n{self.server.stderr()}")
        return next(line for line in self.lines() if needle in line)

    def test_priorities_when_stderr_is_the_journal(self):
        start_with_env(self.server, JOURNAL_STREAM=stream_id(self.server.stderr_path))
        self.server.wait_ready()
        info = self.wait_for_line("msg=\"listening on")
        self.assertTrue(info.startswith("<6>ts="), info)
        warn = self.wait_for_line("retrying in")  # the unreachable database: a warning
        self.assertTrue(warn.startswith("<4>ts="), warn)
        self.assertIn(" level=warn ", warn)
        self.server.write_config_text(read(self.server.config_path) + "no_such_key = 1\n")
        self.server.signal(signal.SIGHUP)
        error = self.wait_for_line("reload failed")
        self.assertTrue(error.startswith("<3>ts="), error)
        self.assertIn(" level=error ", error)
        self.assertEqual(self.server.get("/v1/healthz").status, 200)
        access = self.wait_for_line("event=access")  # default: management, to stderr
        self.assertTrue(access.startswith("<6>ts="), access)
        for line in self.lines():
            level = re.search(r" level=([a-z]+) ", line)
            self.assertIsNotNone(level, line)
            self.assertTrue(line.startswith(PRIORITY[level.group(1)] + "ts="), line)
        self.assertEqual(self.server.stop(), 0, self.server.stderr())
        self.assertEqual(self.server.sanitizer_reports(), [])

    def test_check_errors_carry_the_error_priority(self):
        """ensignd -t (ExecStartPre, ExecReload) refuses a bad file at <3>."""
        self.server.write_config_text(read(self.server.config_path) + "no_such_key = 1\n")
        err_path = os.path.join(self.server.dir, "check.stderr")
        for journal, prefix in ((True, "<3>ensignd: "), (False, "ensignd: ")):
            with open(err_path, "wb") as err:
                env = dict(os.environ)
                env.pop("JOURNAL_STREAM", None)
                if journal:
                    env["JOURNAL_STREAM"] = stream_id(err_path)
                result = subprocess.run([harness.ENSIGND, "-t", "-c", self.server.config_path],
                                        stderr=err, env=env, timeout=30)
            self.assertEqual(result.returncode, 1)
            text = read(err_path)
            self.assertTrue(text.startswith(prefix), text)
            self.assertIn('unknown key "no_such_key"', text)

    def test_no_prefix_when_journal_stream_names_another_stream(self):
        dev, ino = stream_id(self.server.stderr_path).split(":")
        start_with_env(self.server, JOURNAL_STREAM=f"{dev}:{int(ino) + 1}")
        self.server.wait_ready()
        self.wait_for_line("retrying in")
        self.assertEqual(self.server.get("/v1/healthz").status, 200)
        self.wait_for_line("event=access")
        for line in self.lines():
            self.assertTrue(line.startswith("ts="), line)
        self.assertEqual(self.server.stop(), 0, self.server.stderr())


class AccessLogDefaultTest(OfrepTestCase):
    """access_log = management (the default): no evaluation or stream lines."""

    @classmethod
    def create_flags(cls):
        cls.fixture.flag("quiet")

    def access_lines(self):
        return [line for line in self.server.stderr().splitlines() if "event=access" in line]

    def test_management_leaves_out_evaluations_and_streams(self):
        for _ in range(3):
            self.assertEqual(self.evaluate("quiet").status, 200)
        self.server.request("POST", FLAG_PATH, body={},
                            headers={"Authorization": f"Bearer {self.sdk_key}"})
        self.server.get("/ofrep/v1/events/production")  # no token: refused, still a stream path
        self.assertEqual(self.server.get("/v1/healthz").status, 200)
        self.assertEqual(self.server.get("/no/such/default/path").status, 404)
        self.assertTrue(harness.wait_for(
            lambda: any("path=/no/such/default/path " in line for line in self.access_lines()),
            2.0), self.server.stderr())
        lines = self.access_lines()
        self.assertTrue(any("path=/v1/healthz " in line for line in lines), lines)
        self.assertFalse([line for line in lines if "path=/ofrep" in line])


class AccessLogFileTest(OfrepTestCase):
    """access_log = all to a file: buffered, off stderr, rotated on SIGHUP."""

    @classmethod
    def setUpClass(cls):
        cls.log_dir = tempfile.mkdtemp(prefix="ensign-e2e-alog.")
        cls.log_path = os.path.join(cls.log_dir, "access.log")
        cls.settings = {"access_log": "all", "access_log_path": cls.log_path}
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            subprocess.run(["rm", "-rf", cls.log_dir], check=False)

    @classmethod
    def create_flags(cls):
        cls.fixture.flag("filed")

    def wait_in(self, path, needles):
        found = harness.wait_for(lambda: all(n in read(path) for n in needles), FLUSH_WAIT_S)
        self.assertTrue(found, f"{path} lacks some of {needles}:\n{read(path)}")

    def test_lines_reach_the_file_not_stderr(self):
        self.assertEqual(self.evaluate("filed").status, 200)
        self.assertEqual(self.server.get("/no/such/file/path").status, 404)
        self.wait_in(self.log_path, [f"path={FLAG_PATH}/filed ", "path=/no/such/file/path "])
        for line in read(self.log_path).splitlines():
            self.assertRegex(line, ACCESS_LINE)
        self.assertNotIn("event=access", self.server.stderr())
        umask = os.umask(0)
        os.umask(umask)
        self.assertEqual(stat.S_IMODE(os.stat(self.log_path).st_mode), 0o640 & ~umask)

    def test_rename_and_sighup_rotate(self):
        before = [f"/rotate/before/{i}" for i in range(20)]
        for path in before:
            self.assertEqual(self.server.get(path).status, 404)
        old_workers = worker_pids(self.server)
        self.assertTrue(old_workers)
        rotated = self.log_path + ".1"
        os.rename(self.log_path, rotated)
        self.server.signal(signal.SIGHUP)
        self.assertTrue(harness.wait_for(lambda: os.path.exists(self.log_path), 5.0),
                        self.server.stderr())
        self.assertTrue(harness.wait_for(
            lambda: not (old_workers & worker_pids(self.server)), 10.0), self.server.stderr())
        # The old workers wrote their buffers as they exited.
        old_text = read(rotated)
        for path in before:
            self.assertIn(f"path={path} ", old_text)
        after = [f"/rotate/after/{i}" for i in range(20)]
        for path in after:
            self.assertEqual(self.server.get(path).status, 404)
        self.wait_in(self.log_path, [f"path={path} " for path in after])
        new_text, old_text = read(self.log_path), read(rotated)
        for path in before:
            self.assertNotIn(f"path={path} ", new_text)
        for path in after:
            self.assertNotIn(f"path={path} ", old_text)
        self.assertEqual(old_text.count("path=/rotate/before/"), len(before))
        self.assertEqual(new_text.count("path=/rotate/after/"), len(after))


class AccessLogPathErrorsTest(unittest.TestCase):
    """A path that cannot be opened: start-up error, -t error, refused reload."""

    def setUp(self):
        self.server = harness.Server(harness.require_env("ENSIGN_TEST_DATABASE"), workers=1)
        self.bad = os.path.join(self.server.dir, "no-such-dir", "access.log")
        self.good = os.path.join(self.server.dir, "access.log")

    def tearDown(self):
        self.server.remove()

    def check(self):
        return subprocess.run([harness.ENSIGND, "-t", "-c", self.server.config_path],
                              capture_output=True, text=True, timeout=30)

    def test_start_fails_naming_the_path(self):
        self.server.write_config(access_log_path=self.bad)
        result = self.check()
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn(f"access_log_path {self.bad}", result.stderr)
        self.server.start(wait=False)
        self.assertEqual(self.server.proc.wait(20), 1, self.server.stderr())
        self.assertRegex(self.server.stderr(),
                         rf"level=error role=master .*access_log_path {re.escape(self.bad)}: "
                         r"No such file or directory")
        self.assertEqual(self.server.sanitizer_reports(), [])

    def test_reload_with_a_bad_path_keeps_serving_and_logging(self):
        self.server.write_config(access_log_path=self.good)
        self.assertEqual(self.check().returncode, 0)
        self.server.start()
        workers = worker_pids(self.server)
        self.server.write_config(access_log_path=self.bad)
        self.assertEqual(self.check().returncode, 1)
        self.server.signal(signal.SIGHUP)
        self.assertTrue(harness.wait_for(
            lambda: "reload failed" in self.server.stderr(), 10.0), self.server.stderr())
        self.assertRegex(self.server.stderr(),
                         r"level=error role=master .*reload failed, keeping the running "
                         rf"configuration: access_log_path {re.escape(self.bad)}")
        self.assertEqual(self.server.get("/after/refused/reload").status, 404)
        self.assertTrue(harness.wait_for(
            lambda: "path=/after/refused/reload " in read(self.good), FLUSH_WAIT_S),
            read(self.good))
        self.assertEqual(worker_pids(self.server), workers)
        self.assertEqual(self.server.stop(), 0, self.server.stderr())
        self.assertEqual(self.server.sanitizer_reports(), [])


if __name__ == "__main__":
    unittest.main()
