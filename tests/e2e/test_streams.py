"""test_streams.py - end-to-end tests of the OFREP change-notification
streams (doc/choices.md "Change notifications"): the eventStreams entry of a bulk answer
and its ETag, GET /ofrep/v1/events/{environment}?token=T as
text/event-stream, an event within a second of a change made through the
API, Last-Event-ID, the heartbeat comment, 401 for a bad token, the caps
(503 with Retry-After), the end of a revoked key's streams, a clean end of
every stream on SIGHUP with reconnection to the new workers, no flag value
ever in a stream, and the real @openfeature/web-sdk with
@openfeature/ofrep-web-provider in SSE change detection (the `eventsource`
npm package as EventSource under Node) before and after a restart.

The heartbeat is shortened to 300 ms for these servers with the
ENSIGN_STREAM_HEARTBEAT_MS environment variable (ensignd(8)).
Run by tests/e2e/run.
"""

import hashlib
import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import unittest

import harness
from test_evaluation import FLAG_PATH, Fixture, npm_workdir

HEARTBEAT_MS = 300
SECRET_VALUE = "value-that-must-never-stream"


class Stream:
    """One event stream read from a raw socket (chunked or not)."""

    def __init__(self, port, path, headers=None, timeout=5.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        lines = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Accept: text/event-stream"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.raw = b""
        self.text = ""
        self.ended = False   # the zero-length chunk arrived (a clean end)
        self.closed = False  # the connection is closed
        deadline = time.monotonic() + timeout
        while b"\r\n\r\n" not in self.raw:
            if not self._recv(deadline):
                raise AssertionError(f"no response head: {self.raw!r}")
        head, self.raw = self.raw.split(b"\r\n\r\n", 1)
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        self.status = int(status_line.split()[1])
        self.headers = {}
        for line in header_lines:
            name, _, value = line.partition(":")
            self.headers[name.strip().lower()] = value.strip()
        self.chunked = "chunked" in self.headers.get("transfer-encoding", "")
        self._decode()

    def _recv(self, deadline):
        remaining = deadline - time.monotonic()
        if remaining <= 0 or self.closed:
            return False
        self.sock.settimeout(remaining)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return False
        except ConnectionResetError:
            data = b""
        if not data:
            self.closed = True
            return False
        self.raw += data
        return True

    def _decode(self):
        if not self.chunked:
            self.text += self.raw.decode()
            self.raw = b""
            return
        while True:
            size_end = self.raw.find(b"\r\n")
            if size_end < 0:
                return
            size = int(self.raw[:size_end].split(b";")[0], 16)
            if len(self.raw) < size_end + 2 + size + 2:
                return
            self.text += self.raw[size_end + 2:size_end + 2 + size].decode()
            self.raw = self.raw[size_end + 2 + size + 2:]
            if size == 0:
                self.ended = True
                return

    def wait(self, predicate, timeout):
        """Reads until predicate(self) holds (True) or timeout/close (False)."""
        deadline = time.monotonic() + timeout
        while not predicate(self):
            if not self._recv(deadline):
                self._decode()
                return predicate(self)
            self._decode()
        return True

    def events(self):
        """The complete events so far: dicts of field -> value (data parsed)."""
        found = []
        for block in self.text.split("\n\n")[:-1]:
            fields = {}
            for line in block.split("\n"):
                if line.startswith(":") or not line:
                    continue
                name, _, value = line.partition(":")
                fields[name] = value[1:] if value.startswith(" ") else value
            if "data" in fields:
                fields["data"] = json.loads(fields["data"])
                found.append(fields)
        return found

    def refetches(self):
        return [e for e in self.events() if e["data"].get("type") == "refetchEvaluation"]

    def wait_refetches(self, count, timeout):
        return self.wait(lambda s: len(s.refetches()) >= count, timeout)

    def close(self):
        self.sock.close()


class StreamTestCase(harness.ServerTestCase):
    """A server with the short heartbeat, a fixture, an SDK key and a flag."""

    @classmethod
    def setUpClass(cls):
        os.environ["ENSIGN_STREAM_HEARTBEAT_MS"] = str(HEARTBEAT_MS)
        try:
            super().setUpClass()
        finally:
            del os.environ["ENSIGN_STREAM_HEARTBEAT_MS"]
        served = harness.wait_for(lambda: cls.bulk_of(cls.sdk_key).status == 200, 10)
        if not served:
            cls.tearDownClass()
            raise AssertionError("the first snapshot was not served within 10 s")

    @classmethod
    def prepare(cls):
        super().prepare()
        cls.fixture = Fixture(cls.database.conninfo)
        cls.sdk_key, cls.sdk_key_id = cls.fixture.sdk_key()
        cls.fixture.flag("watched", "string", {"a": SECRET_VALUE, "b": SECRET_VALUE + "-b"},
                         default="a", off="b")

    @classmethod
    def bulk_of(cls, sdk_key, headers=None):
        return cls.server.request("POST", FLAG_PATH, body={"context": {}},
                                  headers={"Authorization": f"Bearer {sdk_key}", **(headers or {})})

    def stream_path(self, sdk_key=None):
        url = self.bulk_of(sdk_key or self.sdk_key).json["eventStreams"][0]["url"]
        return url[url.index("/ofrep/"):]

    def open_stream(self, sdk_key=None, headers=None):
        stream = Stream(self.server.port, self.stream_path(sdk_key), headers)
        self.addCleanup(stream.close)
        return stream

    def toggle(self, key="watched", enabled=None):
        """Flips the flag in production through the management API."""
        if enabled is None:
            self._enabled = not getattr(self, "_enabled", True)
            enabled = self._enabled
        response = self.server.request(
            "PATCH", f"/v1/orgs/acme/flags/{key}/environments/production",
            body={"enabled": enabled},
            headers={"Authorization": f"Bearer {self.identity.user_token}"})
        self.assertEqual(response.status, 200, response)

    def generation(self, stream):
        """The id of the stream's latest event."""
        return int([e for e in stream.events() if "id" in e][-1]["id"])


class StreamTest(StreamTestCase):
    def test_bulk_advertises_a_stream(self):
        response = self.bulk_of(self.sdk_key)
        self.assertEqual(response.status, 200, response)
        entries = response.json["eventStreams"]
        self.assertEqual(len(entries), 1, entries)
        entry = entries[0]
        self.assertEqual(entry["type"], "sse")
        self.assertIsInstance(entry["inactivityDelaySec"], int)
        env_id = self.fixture.env_id()
        digest = hashlib.sha256(self.sdk_key.encode()).hexdigest()
        self.assertEqual(entry["url"], f"http://127.0.0.1:{self.server.port}/ofrep/v1/events/"
                                       f"{env_id}?token={digest}")
        self.assertNotIn(self.sdk_key, response.body.decode())
        proxied = self.bulk_of(self.sdk_key, {"Host": "flags.example:443",
                                              "X-Forwarded-Proto": "https"})
        self.assertTrue(proxied.json["eventStreams"][0]["url"].startswith(
            "https://flags.example:443/ofrep/v1/events/"), proxied.json)

    def test_etag_covers_the_stream_url(self):
        etag = self.bulk_of(self.sdk_key).headers["ETag"]
        self.assertEqual(self.bulk_of(self.sdk_key, {"If-None-Match": etag}).status, 304)
        other_host = self.bulk_of(self.sdk_key, {"Host": "other.example",
                                                 "If-None-Match": etag})
        self.assertEqual(other_host.status, 200, other_host)
        self.assertNotEqual(other_host.headers["ETag"], etag)
        other_key, _ = self.fixture.sdk_key()
        served = harness.wait_for(lambda: self.bulk_of(other_key).status == 200, 5)
        self.assertTrue(served)
        self.assertEqual(self.bulk_of(other_key, {"If-None-Match": etag}).status, 200)

    def test_stream_answers_event_stream_with_cors(self):
        stream = self.open_stream(headers={"Origin": "https://app.example"})
        self.assertEqual(stream.status, 200)
        self.assertEqual(stream.headers["content-type"], "text/event-stream")
        self.assertEqual(stream.headers.get("access-control-allow-origin"), "*")
        self.assertTrue(stream.wait(lambda s: s.events(), 2), stream.text)
        self.assertTrue(stream.text.startswith("retry: "), stream.text)
        first = stream.events()[0]
        self.assertEqual(first["data"], {"type": "connected"})
        self.assertRegex(first["id"], r"^\d+$")
        preflight = self.server.request("OPTIONS", self.stream_path(), headers={
            "Origin": "https://app.example", "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "last-event-id"})
        self.assertEqual(preflight.status, 204)
        self.assertIn("GET", preflight.headers["Access-Control-Allow-Methods"])
        self.assertIn("last-event-id", preflight.headers["Access-Control-Allow-Headers"].lower())

    def test_change_through_the_api_is_notified_within_a_second(self):
        stream = self.open_stream()
        self.assertTrue(stream.wait(lambda s: s.events(), 2))
        before = self.generation(stream)
        for round_ in (1, 2):
            started = time.monotonic()
            self.toggle()
            self.assertTrue(stream.wait_refetches(round_, 1.0), stream.text)
            self.assertLess(time.monotonic() - started, 1.0)
        events = stream.refetches()
        for event in events:
            self.assertEqual(set(event["data"]), {"type", "etag", "lastModified"}, event)
            self.assertRegex(event["data"]["etag"], r'^"[^"]+"$')
            self.assertIsInstance(event["data"]["lastModified"], int)
            self.assertLessEqual(abs(event["data"]["lastModified"] - time.time()), 60)
        ids = [int(e["id"]) for e in events]
        self.assertTrue(before < ids[0] < ids[1], (before, ids))
        self.assertNotIn(SECRET_VALUE, stream.text)
        self.assertNotIn("watched", stream.text)

    def test_heartbeat_comment(self):
        stream = self.open_stream()
        comment = re.compile(r"(^|\n):[^\n]*\n")
        self.assertTrue(stream.wait(lambda s: comment.search(s.text), HEARTBEAT_MS / 1000 * 3 + 1),
                        stream.text)
        count = len(comment.findall(stream.text))
        self.assertTrue(stream.wait(lambda s: len(comment.findall(s.text)) > count,
                                    HEARTBEAT_MS / 1000 * 3 + 1), stream.text)

    def test_last_event_id(self):
        stream = self.open_stream()
        self.assertTrue(stream.wait(lambda s: s.events(), 2))
        seen = self.generation(stream)
        current = self.open_stream(headers={"Last-Event-ID": str(seen)})
        self.assertTrue(current.wait(lambda s: s.events(), 2))
        self.assertEqual(current.refetches(), [], current.text)
        self.toggle()
        self.assertTrue(stream.wait_refetches(1, 1.0), stream.text)
        stale = self.open_stream(headers={"Last-Event-ID": str(seen)})
        # the refetch may come in a later read than "connected": wait for it
        self.assertTrue(stale.wait_refetches(1, 2), stale.text)
        self.assertEqual(len(stale.refetches()), 1, stale.text)
        self.assertGreater(int(stale.refetches()[0]["id"]), seen)
        garbage = self.open_stream(headers={"Last-Event-ID": "not-a-generation"})
        self.assertTrue(garbage.wait_refetches(1, 2), garbage.text)
        self.assertEqual(len(garbage.refetches()), 1, garbage.text)

    def test_bad_tokens_are_401(self):
        path = self.stream_path()
        env_id = self.fixture.env_id()
        digest = hashlib.sha256(self.sdk_key.encode()).hexdigest()
        staging_key, _ = self.fixture.sdk_key("staging")
        harness.wait_for(lambda: self.bulk_of(staging_key).status == 200, 5)
        staging_digest = hashlib.sha256(staging_key.encode()).hexdigest()
        bad = [
            f"/ofrep/v1/events/{env_id}",
            f"/ofrep/v1/events/{env_id}?token=",
            f"/ofrep/v1/events/{env_id}?token={'0' * 64}",
            f"/ofrep/v1/events/{env_id}?token={digest[:63]}",
            f"/ofrep/v1/events/{env_id}?token={digest}00",
            f"/ofrep/v1/events/{env_id}?token={self.sdk_key}",
            f"/ofrep/v1/events/{env_id}?token={staging_digest}",
            f"/ofrep/v1/events/not-an-environment?token={digest}",
        ]
        for target in bad:
            with self.subTest(target=target):
                response = self.server.request("GET", target, headers={"Origin": "https://a.b"})
                self.assertEqual(response.status, 401, response)
                self.assertEqual(response.json["errorCode"], "AUTHENTICATION_ERROR", response)
                self.assertEqual(response.headers.get("Access-Control-Allow-Origin"), "*")
        upper = Stream(self.server.port, path.replace(digest, digest.upper()))
        self.addCleanup(upper.close)
        self.assertEqual(upper.status, 200)

    def test_revoked_key_stream_is_closed(self):
        key, key_id = self.fixture.sdk_key()
        self.assertTrue(harness.wait_for(lambda: self.bulk_of(key).status == 200, 5))
        path = self.stream_path(key)
        stream = self.open_stream(key)
        self.assertTrue(stream.wait(lambda s: s.events(), 2))
        self.fixture.revoke(key_id)
        self.assertTrue(stream.wait(lambda s: s.ended, 2), stream.text)
        self.assertTrue(stream.wait(lambda s: s.closed, 2))
        self.assertEqual(stream.refetches(), [])
        again = self.server.request("GET", path)
        self.assertEqual(again.status, 401, again)

    def test_other_methods(self):
        response = self.server.request("POST", self.stream_path(), body={})
        self.assertEqual(response.status, 405, response)


class StreamCapTest(StreamTestCase):
    workers = 1
    settings = {"stream_max_per_worker": 3, "stream_max_per_key": 2}

    def assertRefused(self, response):
        self.assertEqual(response.status, 503, response)
        self.assertRegex(response.headers.get("Retry-After", ""), r"^[1-9]\d*$")
        self.assertEqual(response.json["errorCode"], "GENERAL", response)

    def test_caps(self):
        other_key, _ = self.fixture.sdk_key()
        self.assertTrue(harness.wait_for(lambda: self.bulk_of(other_key).status == 200, 5))
        first = [self.open_stream() for _ in range(2)]
        self.assertEqual([s.status for s in first], [200, 200])
        self.assertRefused(self.server.request("GET", self.stream_path()))  # per key
        other = self.open_stream(other_key)
        self.assertEqual(other.status, 200)
        self.assertRefused(self.server.request("GET", self.stream_path(other_key)))  # per worker
        first[0].close()
        again = harness.wait_for(self._try_open, 5, 0.1)
        self.assertIsNotNone(again, "the closed stream's place was not freed")

    def _try_open(self):
        stream = Stream(self.server.port, self.stream_path())
        if stream.status == 200:
            self.addCleanup(stream.close)
            return stream
        stream.close()
        return None


class StreamKeyCapAcrossWorkersTest(StreamTestCase):
    """stream_max_per_key counts the streams of every worker of the node."""

    workers = 2
    settings = {"stream_max_per_worker": 100, "stream_max_per_key": 3}

    def test_key_cap_is_per_node(self):
        path = self.stream_path()
        streams = [Stream(self.server.port, path) for _ in range(8)]
        for stream in streams:
            self.addCleanup(stream.close)
        self.assertEqual(sorted(s.status for s in streams), [200] * 3 + [503] * 5)
        refused = self.server.request("GET", path)
        self.assertEqual(refused.status, 503, refused)
        self.assertRegex(refused.headers.get("Retry-After", ""), r"^[1-9]\d*$")


class StreamReloadTest(StreamTestCase):
    """SIGHUP ends every stream cleanly; clients reconnect to the new workers."""

    def test_sighup_ends_streams_cleanly_and_they_reconnect(self):
        streams = [self.open_stream() for _ in range(3)]
        for stream in streams:
            self.assertTrue(stream.wait(lambda s: s.events(), 2))
        old_workers = {pid for pid, title in self.server.children().items()
                       if title.startswith("ensignd: worker")}
        self.server.signal(signal.SIGHUP)
        for stream in streams:
            self.assertTrue(stream.wait(lambda s: s.ended and s.closed, 5), stream.text)
        reopened = self.open_stream()
        self.assertEqual(reopened.status, 200)
        self.assertTrue(reopened.wait(lambda s: s.events(), 2))
        self.toggle()
        self.assertTrue(reopened.wait_refetches(1, 1.0), reopened.text)
        gone = harness.wait_for(lambda: not (old_workers & set(self.server.children())), 10)
        self.assertTrue(gone, "the old workers did not exit")


class LineReader:
    """The lines a process prints, read by a thread, as parsed JSON."""

    def __init__(self, stream):
        self.lines = queue.Queue()
        self.seen = []
        threading.Thread(target=self._run, args=(stream,), daemon=True).start()

    def _run(self, stream):
        for line in stream:
            self.lines.put(json.loads(line))
        self.lines.put(None)

    def next_phase(self, phase, timeout):
        """The next line of the phase (others are kept in seen), or None."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            try:
                line = self.lines.get(timeout=remaining)
            except queue.Empty:
                return None
            if line is None:
                return None
            self.seen.append(line)
            if line["phase"] == phase:
                return line


class WebSdkStreamTest(StreamTestCase):
    """The real web SDK and OFREP web provider in SSE change detection."""

    @classmethod
    def prepare(cls):
        super().prepare()
        cls.fixture.flag("banner")

    def test_web_provider_follows_changes_across_reload_and_restart(self):
        workdir = npm_workdir()
        self.addCleanup(shutil.rmtree, workdir, True)
        spec = {"baseUrl": f"http://127.0.0.1:{self.server.port}", "sdkKey": self.sdk_key,
                "flagKey": "banner"}
        proc = subprocess.Popen(["node", "ofrep-streams.mjs", json.dumps(spec)], cwd=workdir,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        self.addCleanup(self._end, proc)
        out = LineReader(proc.stdout)
        ready = out.next_phase("ready", 20)
        self.assertIsNotNone(ready, out.seen)
        self.assertIs(ready["value"], True)
        self.assertIsNotNone(out.next_phase("open", 5), out.seen)
        self.expect_change(out, False)
        self.server.signal(signal.SIGHUP)
        self.assertIsNotNone(out.next_phase("open", 10), out.seen)
        self.expect_change(out, True)
        self.server.stop_cleanly()
        self.server.start()
        self.assertIsNotNone(out.next_phase("open", 15), out.seen)
        self.expect_change(out, False)
        proc.stdin.write("quit\n")
        proc.stdin.flush()
        self.assertEqual(proc.wait(20), 0, proc.stderr.read())

    def expect_change(self, out, value):
        started = time.monotonic()
        self.toggle("banner", value)
        changed = out.next_phase("changed", 1.0)
        self.assertIsNotNone(changed, f"no change within a second: {out.seen}")
        self.assertLess(time.monotonic() - started, 1.0)
        self.assertIs(changed["value"], value, changed)

    @staticmethod
    def _end(proc):
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            stream.close()
