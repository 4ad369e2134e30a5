"""harness.py - what every end-to-end test needs: databases, ensignctl,
a running ensignd, HTTP, processes. Python standard library only.

Owns the environment contract set by tests/e2e/run:

    ENSIGN_TEST_DATABASE  libpq connection string of the throwaway cluster
    ENSIGN_TEST_PGDIR     its directory (contrib/pgcluster stop/start it)
    ENSIGN_BUILD_DIR      build tree with src/ensignd and src/ensignctl
    ENSIGN_SRC_DIR        source tree (defaults to two levels above here)

Invariants: every test class gets its own database (Database), every
server its own temporary directory, port, configuration and stderr file
(Server); every wait is bounded, so a hung server fails a test instead of
hanging the suite. A server stopped through Server.stop must exit 0 and
its stderr (shared by the master and every child) must hold no
AddressSanitizer, LeakSanitizer or UndefinedBehaviorSanitizer report.

Called by the tests/e2e/test_*.py modules; `python3 harness.py discover`
(used by tests/e2e/run) runs them all (E2E_PATTERN=test_hostile.py
some only) and ends with the plain
"e2e: N passed, N failed, N skipped" line.
"""

import http.client
import itertools
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC_DIR = os.environ.get("ENSIGN_SRC_DIR") or os.path.dirname(os.path.dirname(HERE))
BUILD_DIR = os.environ.get("ENSIGN_BUILD_DIR") or SRC_DIR
PGCLUSTER = os.path.join(SRC_DIR, "contrib", "pgcluster")
ENSIGND = os.path.join(BUILD_DIR, "src", "ensignd")
ENSIGNCTL = os.path.join(BUILD_DIR, "src", "ensignctl")

READY_TIMEOUT = 10.0
STOP_TIMEOUT = 20.0
HTTP_TIMEOUT = 10.0

SANITIZER_PATTERNS = (
    "ERROR: AddressSanitizer",
    "ERROR: LeakSanitizer",
    "runtime error:",
    "ERROR: UndefinedBehaviorSanitizer",
)


def require_env(name):
    value = os.environ.get(name)
    if not value:
        raise unittest.SkipTest(f"{name} is not set: run the suite with tests/e2e/run BUILD_DIR")
    return value


def sanitizer_reports(text):
    """The lines of text that are sanitizer reports (empty when clean)."""
    return [line for line in text.splitlines() if any(p in line for p in SANITIZER_PATTERNS)]


def wait_for(predicate, timeout, interval=0.02):
    """Polls predicate until it returns a true value (returned) or timeout (None)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            return None
        time.sleep(interval)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- PostgreSQL -------------------------------------------------------------


def parse_conninfo(conninfo):
    """'k=v k=v' (unquoted values, as pgcluster prints them) to a dict."""
    return dict(item.split("=", 1) for item in conninfo.split())


def format_conninfo(params):
    return " ".join(f"{k}={v}" for k, v in params.items())


def psql(conninfo, sql):
    """Runs sql (one statement, no parameters: names only, never data)."""
    result = subprocess.run(
        ["psql", "-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1", "-d", conninfo, "-c", sql],
        capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise RuntimeError(f"psql failed: {sql}\n{result.stderr}")
    return result.stdout.strip()


class Database:
    """A database of its own in the throwaway cluster, dropped by drop()."""

    _counter = itertools.count()

    def __init__(self, label):
        base = parse_conninfo(require_env("ENSIGN_TEST_DATABASE"))
        safe = re.sub(r"[^a-z0-9]", "_", label.lower())[:40]
        self.name = f"e2e_{safe}_{os.getpid()}_{next(self._counter)}"
        self.admin = format_conninfo({**base, "dbname": "postgres"})
        self.conninfo = format_conninfo({**base, "dbname": self.name})
        psql(self.admin, f'CREATE DATABASE "{self.name}"')

    def query(self, sql):
        return psql(self.conninfo, sql)

    def drop(self):
        psql(self.admin, f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


def cluster_dir():
    return require_env("ENSIGN_TEST_PGDIR")


def stop_postgres():
    subprocess.run(["sh", PGCLUSTER, "stop", cluster_dir()], check=True, timeout=120,
                   stdout=subprocess.DEVNULL)


def start_postgres():
    subprocess.run(["sh", PGCLUSTER, "start", cluster_dir()], check=True, timeout=120,
                   stdout=subprocess.DEVNULL)


# --- configuration and ensignctl ---------------------------------------------


def config_text(settings):
    lines = ["# written by tests/e2e/harness.py"]
    for key, value in settings.items():
        lines.append(f'{key} = "{value}"' if isinstance(value, str) else f"{key} = {value}")
    return "\n".join(lines) + "\n"


class CommandError(AssertionError):
    pass


def ensignctl(config_path, *args, stdin=None):
    """Runs ensignctl -c config_path ARGS; returns stdout stripped.

    Raises CommandError on a non-zero exit or a sanitizer report."""
    result = subprocess.run([ENSIGNCTL, "-c", config_path, *args], input=stdin,
                            capture_output=True, text=True, timeout=120)
    reports = sanitizer_reports(result.stderr)
    if result.returncode != 0 or reports:
        raise CommandError(f"ensignctl {' '.join(args)} exited {result.returncode}\n"
                           f"{result.stderr}")
    return result.stdout.strip()


class Identity:
    """A user owning an organization, with a user token and an organization token."""

    def __init__(self, config_path, email, name, org_name, org_slug):
        self.email = email
        self.name = name
        self.user_id = ensignctl(config_path, "user", "create", "--email", email, "--name", name)
        self.org_slug = ensignctl(config_path, "org", "create", "--name", org_name, "--slug",
                                  org_slug, "--owner", email)
        self.org_name = org_name
        self.user_token = ensignctl(config_path, "token", "create", "--user", email, "--name",
                                    "e2e user token", "--full")
        self.org_token = ensignctl(config_path, "token", "create", "--org", self.org_slug,
                                   "--name", "e2e org token")


# --- HTTP --------------------------------------------------------------------


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers  # http.client.HTTPMessage: case-insensitive get()
        self.body = body

    @property
    def content_type(self):
        return self.headers.get("Content-Type", "")

    @property
    def json(self):
        return json.loads(self.body.decode("utf-8"))

    def __repr__(self):
        return f"<Response {self.status} {self.content_type} {self.body[:300]!r}>"


def http_request(port, method, path, body=None, headers=None, timeout=HTTP_TIMEOUT):
    """One request on a new connection to 127.0.0.1:port."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            headers = {"Content-Type": "application/json", **(headers or {})}
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return Response(response.status, response.headers, response.read())
    finally:
        conn.close()


def parse_raw_response(data):
    """Parses 'HTTP/1.1 CODE ...' bytes into a Response (headers as a dict-like message)."""
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("iso-8859-1").split("\r\n")
    if not re.match(r"HTTP/1\.[01] \d{3}", lines[0]):
        raise AssertionError(f"not an HTTP/1.x response: {data[:300]!r}")
    status = int(lines[0].split()[1])
    message = http.client.HTTPMessage()
    for line in lines[1:]:
        name, _, value = line.partition(":")
        message[name.strip()] = value.strip()
    length = message.get("Content-Length")
    if length is not None:
        body = body[:int(length)]
    return Response(status, message, body)


def raw_request(port, data, timeout=HTTP_TIMEOUT):
    """Sends bytes as they are; returns the parsed response (the first one)."""
    received = b""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered early and closed; read what it sent
        try:
            while not raw_response_complete(received):
                chunk = s.recv(65536)
                if not chunk:
                    break
                received += chunk
        except ConnectionResetError:
            if not received:
                raise
    if not received:
        raise ConnectionError("the server closed the connection without answering")
    return parse_raw_response(received)


def raw_response_complete(data):
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return False
    match = re.search(rb"(?im)^content-length:\s*(\d+)\s*$", head)
    return match is not None and len(body) >= int(match.group(1))


class LoadLoop:
    """Background clients looping on one GET, each request on a new
    connection, counting successes (and when each came) and recording
    every failure."""

    def __init__(self, port, path="/v1/healthz", threads=2, timeout=5.0):
        self.port = port
        self.path = path
        self.timeout = timeout
        self.ok = 0
        self.answered_at = []  # time.monotonic() of each success
        self.failures = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(threads)]

    def _run(self):
        while not self._stop.is_set():
            try:
                response = http_request(self.port, "GET", self.path, timeout=self.timeout)
                failure = None if response.status == 200 else f"status {response.status}"
            except (OSError, http.client.HTTPException) as e:
                failure = f"{type(e).__name__}: {e}"
            with self._lock:
                if failure is None:
                    self.ok += 1
                    self.answered_at.append(time.monotonic())
                else:
                    self.failures.append(failure)

    def __enter__(self):
        self.started = time.monotonic()
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        for t in self._threads:
            t.join(self.timeout + 5)
        self.ended = time.monotonic()
        return False

    def longest_silence(self):
        """The longest time without a success while the loop ran (call after exit)."""
        times = [self.started] + sorted(self.answered_at) + [self.ended]
        return max(b - a for a, b in zip(times, times[1:]))

    def count(self):
        with self._lock:
            return self.ok


# --- processes ----------------------------------------------------------------


SNAPSHOT_SECTIONS = 16  # src/eval/snapshot.h: enum snapshot_section_id
SNAPSHOT_SEC_PARTS = 14


def served_index(state_dir):
    """The path of the newest index in state_dir: the visible index of the
    highest generation (index-<generation>.bin, written at each
    publication), else the restart index snapshot.bin (doc/choices.md
    "Visible before durable")."""
    visible = [int(m.group(1)) for m in
               (re.fullmatch(r"index-([0-9]+)\.bin", n) for n in os.listdir(state_dir)) if m]
    if visible:
        return os.path.join(state_dir, f"index-{max(visible)}.bin")
    return os.path.join(state_dir, "snapshot.bin")


def snapshot_parts(state_dir):
    """{organization id: (pack file, offset, length, generation)} of the
    parts the newest index of state_dir names (served_index;
    src/eval/snapshot.h: the header, then per section {offset, count}; a
    part record is {org str, file str, generation, offset, length})."""
    with open(served_index(state_dir), "rb") as f:
        data = f.read()
    at = 8 + 4 + 4 + 8 * 4
    sections = [struct.unpack_from("<QQ", data, at + 16 * i) for i in range(SNAPSHOT_SECTIONS)]
    strings_at = sections[0][0]

    def text(off, length):
        return data[strings_at + off:strings_at + off + length].decode()

    parts = {}
    offset, count = sections[SNAPSHOT_SEC_PARTS]
    for i in range(count):
        org_off, org_len, file_off, file_len, generation, start, length = struct.unpack_from(
            "<IIIIQQQ", data, offset + 40 * i)
        parts[text(org_off, org_len)] = (text(file_off, file_len), start, length, generation)
    return parts


def snapshot_part_bytes(state_dir, org):
    """The bytes of the part of organization org that the index in
    state_dir names (its extent of a pack file), or None when it names
    none."""
    part = snapshot_parts(state_dir).get(org)
    if part is None:
        return None
    name, start, length, _ = part
    with open(os.path.join(state_dir, name), "rb") as f:
        f.seek(start)
        return f.read(length)


SNAPSHOT_SEC_CHUNKS = 15


def snapshot_chunks(state_dir, org):
    """[(pack file, offset, length, generation)] of the chunks the
    published header of organization org names, in key order ([] when its
    part is not a header of chunks). A chunk record is {first_key str,
    pack number, reserved, generation, offset, length} (src/eval/snapshot.h,
    format 4)."""
    data = snapshot_part_bytes(state_dir, org)
    if data is None:
        return []
    at = 8 + 4 + 4 + 8 * 4
    offset, count = struct.unpack_from("<QQ", data, at + 16 * SNAPSHOT_SEC_CHUNKS)
    chunks = []
    for i in range(count):
        _, _, pack, _, generation, start, length = struct.unpack_from(
            "<IIIIQQQ", data, offset + 40 * i)
        chunks.append((f"pack-{pack}.bin", start, length, generation))
    return chunks


def pack_files(state_dir):
    """The pack files in state_dir, sorted by number."""
    names = [n for n in os.listdir(state_dir) if re.fullmatch(r"pack-[0-9]+\.bin", n)]
    return sorted(names, key=lambda n: int(n[len("pack-"):-len(".bin")]))


def process_title(pid):
    """The process's title as ps shows it (from /proc/PID/cmdline), or None if gone."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()


def child_pids(pid):
    """Pids of pid's children (all threads), by /proc children lists or a ppid scan."""
    task_dir = f"/proc/{pid}/task"
    try:
        tasks = os.listdir(task_dir)
        children = []
        for task in tasks:
            with open(f"{task_dir}/{task}/children") as f:
                children.extend(int(p) for p in f.read().split())
        return children
    except FileNotFoundError:
        return scan_children(pid)


def scan_children(pid):
    children = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid:
            children.append(int(entry))
    return children


def pid_alive(pid):
    """True while pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


class Server:
    """One ensignd with its own directory, port, configuration and stderr."""

    def __init__(self, database, workers=2, **settings):
        self.dir = tempfile.mkdtemp(prefix="ensign-e2e-srv.")
        self.state_dir = os.path.join(self.dir, "state")
        os.mkdir(self.state_dir)
        self.config_path = os.path.join(self.dir, "ensign.conf")
        self.stderr_path = os.path.join(self.dir, "ensignd.stderr")
        self.port = free_port()
        self.settings = {
            "listen": f"127.0.0.1:{self.port}",
            "database": database,
            "workers": workers,
            "state_dir": self.state_dir,
            "log_level": "info",
            **settings,
        }
        self.proc = None
        self.write_config()

    def write_config(self, **changes):
        self.settings.update(changes)
        self.write_config_text(config_text(self.settings))

    def write_config_text(self, text):
        with open(self.config_path, "w") as f:
            f.write(text)

    def start(self, wait=True):
        with open(self.stderr_path, "ab") as err:
            self.proc = subprocess.Popen([ENSIGND, "-c", self.config_path],
                                         stdin=subprocess.DEVNULL, stdout=err, stderr=err)
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout=READY_TIMEOUT):
        def answered():
            if self.proc.poll() is not None:
                raise AssertionError(f"ensignd exited {self.proc.returncode} while starting:\n"
                                     f"{self.stderr()}")
            try:
                return self.get("/v1/healthz", timeout=1).status == 200
            except (OSError, http.client.HTTPException):
                return False

        if not wait_for(answered, timeout, interval=0.05):
            raise AssertionError(f"ensignd did not answer /v1/healthz within {timeout}s:\n"
                                 f"{self.stderr()}")

    @property
    def pid(self):
        return self.proc.pid

    def request(self, method, path, body=None, headers=None, timeout=HTTP_TIMEOUT):
        return http_request(self.port, method, path, body, headers, timeout)

    def get(self, path, token=None, timeout=HTTP_TIMEOUT):
        headers = {"Authorization": f"Bearer {token}"} if token else None
        return self.request("GET", path, headers=headers, timeout=timeout)

    def raw(self, data, timeout=HTTP_TIMEOUT):
        return raw_request(self.port, data, timeout)

    def children(self):
        """{pid: title} of the master's living children."""
        found = {}
        for pid in child_pids(self.pid):
            title = process_title(pid)
            if title is not None and pid_alive(pid):
                found[pid] = title
        return found

    def child_with_title(self, title):
        """The pid of the living child whose title starts with title, or None."""
        for pid, t in self.children().items():
            if t == title or t.startswith(title + " "):
                return pid
        return None

    def signal(self, signum):
        self.proc.send_signal(signum)

    def stop(self, timeout=STOP_TIMEOUT):
        """SIGTERM, wait; returns the exit status (kills and raises on timeout)."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"ensignd did not stop within {timeout}s after SIGTERM:\n"
                                 f"{self.stderr()}")

    def kill(self):
        """SIGKILL the master and every child (test clean-up only)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        for pid in child_pids(self.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.kill()
        self.proc.wait(10)

    def stderr(self):
        try:
            with open(self.stderr_path, encoding="utf-8", errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def sanitizer_reports(self):
        return sanitizer_reports(self.stderr())

    def stop_cleanly(self):
        """Stops and raises unless the exit was 0 with no sanitizer report."""
        status = self.stop()
        reports = self.sanitizer_reports()
        if status != 0 or reports:
            raise AssertionError(f"ensignd exited {status}; sanitizer reports: {reports}\n"
                                 f"{self.stderr()}")

    def remove(self):
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


class SecondNode:
    """A mixin before a ServerTestCase: a second ensignd, cls.node_b, on the
    same database with the class's settings (or second_node_settings) and
    second_node_workers workers (else the class's), for tests of what happens once across nodes. It
    stops cleanly and is removed before the first node."""

    second_node_workers = None
    second_node_settings = None  # else the class's settings

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        settings = cls.settings if cls.second_node_settings is None else cls.second_node_settings
        node_b = Server(cls.database.conninfo, cls.second_node_workers or cls.workers, **settings)
        try:
            node_b.start()
        except BaseException:
            node_b.remove()
            cls.node_b = None
            cls.tearDownClass()
            raise
        cls.node_b = node_b

    @classmethod
    def tearDownClass(cls):
        node_b, cls.node_b = getattr(cls, "node_b", None), None
        try:
            if node_b is not None:
                node_b.stop_cleanly()
        finally:
            if node_b is not None:
                node_b.remove()
            super().tearDownClass()


class ServerTestCase(unittest.TestCase):
    """A test class with its own database (migrated), an ensignd serving it,
    and an Identity. Subclasses may set workers and settings, and override
    prepare(cls) to add data before the server starts. tearDownClass fails
    when the server does not stop cleanly."""

    workers = 2
    settings = {}
    server = None
    database = None

    @classmethod
    def setUpClass(cls):
        require_env("ENSIGN_TEST_DATABASE")
        cls.database = Database(cls.__name__)
        try:
            cls.server = Server(cls.database.conninfo, cls.workers, **cls.settings)
            ensignctl(cls.server.config_path, "migrate")
            cls.prepare()
            cls.server.start()
        except BaseException:
            cls._release()
            raise

    @classmethod
    def prepare(cls):
        cls.identity = Identity(cls.server.config_path, "alice@example.com", "Alice Example",
                                "Acme Inc", "acme")

    @classmethod
    def tearDownClass(cls):
        try:
            if cls.server is not None and cls.server.proc is not None:
                cls.server.stop_cleanly()
        finally:
            cls._release()

    @classmethod
    def _release(cls):
        if cls.server is not None:
            cls.server.remove()
            cls.server = None
        if cls.database is not None:
            cls.database.drop()
            cls.database = None

    # Assertions shared by the test modules.

    def assertJsonContentType(self, response):
        media = response.content_type.split(";")[0].strip().lower()
        self.assertIn(media, ("application/json", "application/problem+json"), response)

    def assertV1Error(self, response, status):
        """The /v1 error envelope: exactly {message, status}."""
        self.assertEqual(response.status, status, response)
        self.assertJsonContentType(response)
        body = response.json
        self.assertEqual(set(body), {"message", "status"}, body)
        self.assertIsInstance(body["message"], str)
        self.assertEqual(body["status"], status)

    def assertProblem(self, response, status):
        """The root API's RFC 9457 Problem body."""
        self.assertEqual(response.status, status, response)
        self.assertEqual(response.content_type.split(";")[0].strip(), "application/problem+json",
                         response)
        body = response.json
        self.assertTrue({"type", "title", "status", "detail"} <= set(body), body)
        self.assertEqual(body["status"], status)
        self.assertIsInstance(body["title"], str)
        self.assertIsInstance(body["detail"], str)
        self.assertIsInstance(body["type"], str)


# --- the runner ----------------------------------------------------------------


def summary_counts(result):
    """(passed, failed, skipped) counted per test method: a method with
    failing subtests counts once; fixture errors (setUpClass...) count as
    failed too."""
    def method_id(test):
        return getattr(test, "test_case", test).id()  # a _SubTest names its method

    fixture_errors = [t for t, _ in result.errors if isinstance(t, unittest.suite._ErrorHolder)]
    failed = {method_id(t) for t, _ in itertools.chain(result.failures, result.errors)
              if not isinstance(t, unittest.suite._ErrorHolder)}
    failed |= {method_id(t) for t in result.unexpectedSuccesses}
    skipped = {method_id(t) for t, _ in result.skipped} - failed
    passed = max(result.testsRun - len(failed) - len(skipped), 0)
    return passed, len(failed) + len(fixture_errors), len(skipped)


def main(argv):
    if argv[1:] != ["discover"]:
        print("usage: harness.py discover", file=sys.stderr)
        return 2
    # E2E_PATTERN (default test_*.py) runs some modules only, for work on one area.
    pattern = os.environ.get("E2E_PATTERN") or "test_*.py"
    suite = unittest.defaultTestLoader.discover(HERE, pattern=pattern, top_level_dir=HERE)
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
    passed, failed, skipped = summary_counts(result)
    print(f"e2e: {passed} passed, {failed} failed, {skipped} skipped", flush=True)
    return 0 if result.wasSuccessful() and result.testsRun > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
