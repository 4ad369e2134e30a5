"""test_slowclients.py - slow clients, the per-worker connection cap and
running out of file descriptors.

A request's head and body must arrive within request_timeout_ms of its
first byte (a client trickling one header line at a time is dropped); at
max_connections_per_worker open connections a worker stops accepting while
its open connections keep being served; accept() failing with EMFILE is
logged once per interval, costs no CPU loop, and the worker recovers.
"""

import os
import resource
import socket
import subprocess
import time

import harness

TIMEOUT_MS = 1000


def connect(port):
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def closed_within(sock, seconds, trickle=None):
    """Feeds trickle() every 0.25 s until the peer closes; returns the
    seconds it took, or None when it stayed open for `seconds`."""
    started = time.monotonic()
    sock.settimeout(0.25)
    while time.monotonic() - started < seconds:
        try:
            data = sock.recv(4096)
            if not data:
                return time.monotonic() - started
        except socket.timeout:
            pass
        except ConnectionResetError:
            return time.monotonic() - started
        if trickle is not None:
            try:
                sock.sendall(trickle())
            except (BrokenPipeError, ConnectionResetError):
                return time.monotonic() - started
    return None


def get_on(sock, path="/v1/healthz"):
    sock.settimeout(10)
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    data = b""
    while not harness.raw_response_complete(data):
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return harness.parse_raw_response(data)


class SlowClientTest(harness.ServerTestCase):
    settings = {"request_timeout_ms": TIMEOUT_MS}

    def test_trickled_head_is_dropped_at_the_deadline(self):
        lines = iter([b"X-Slow-%d: 1\r\n" % i for i in range(100)])
        with connect(self.server.port) as s:
            s.sendall(b"GET /v1/healthz HTTP/1.1\r\nHost: x\r\n")
            took = closed_within(s, 5.0, trickle=lambda: next(lines))
        self.assertIsNotNone(took, "a trickling client was never dropped")
        self.assertLess(took, TIMEOUT_MS / 1000 + 0.8)
        self.assertEqual(self.server.get("/v1/healthz").status, 200)

    def test_trickled_body_is_dropped_at_the_deadline(self):
        with connect(self.server.port) as s:
            s.sendall(b"POST /ofrep/v1/evaluate/flags HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Length: 100\r\n\r\n")
            took = closed_within(s, 5.0, trickle=lambda: b" ")
        self.assertIsNotNone(took, "a trickling body was never dropped")
        self.assertLess(took, TIMEOUT_MS / 1000 + 0.8)

    def test_the_deadline_counts_from_the_first_byte(self):
        with connect(self.server.port) as s:
            self.assertIsNone(closed_within(s, TIMEOUT_MS / 1000 + 0.5),
                              "an idle connection was dropped by the request deadline")
            self.assertEqual(get_on(s).status, 200)
            time.sleep(TIMEOUT_MS / 1000 + 0.3)  # idle between requests: no deadline
            self.assertEqual(get_on(s).status, 200)


class ConnectionCapTest(harness.ServerTestCase):
    workers = 1
    settings = {"max_connections_per_worker": 16}

    def test_at_the_cap_new_clients_wait_and_open_ones_are_served(self):
        held = [connect(self.server.port) for _ in range(16)]
        try:
            time.sleep(0.3)
            waiting = connect(self.server.port)  # queued by the kernel
            waiting.sendall(b"GET /v1/healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            waiting.settimeout(0.8)
            with self.assertRaises(socket.timeout):
                waiting.recv(1)
            self.assertEqual(get_on(held[0]).status, 200)  # open ones are not starved
            held.pop().close()
            waiting.settimeout(5)
            self.assertTrue(waiting.recv(64).startswith(b"HTTP/1.1 200"))
            waiting.close()
        finally:
            for s in held:
                s.close()
        self.assertEqual(self.server.get("/v1/healthz").status, 200)


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class DescriptorExhaustionTest(harness.ServerTestCase):
    workers = 1
    settings = {"max_connections_per_worker": 10000}
    NOFILE = 96

    @classmethod
    def setUpClass(cls):
        original = harness.Server.start

        def start_with_low_limit(server, wait=True):
            limit = cls.NOFILE
            with open(server.stderr_path, "ab") as err:
                server.proc = subprocess.Popen(
                    [harness.ENSIGND, "-c", server.config_path], stdin=subprocess.DEVNULL,
                    stdout=err, stderr=err,
                    preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit)))
            if wait:
                server.wait_ready()
            return server

        harness.Server.start = start_with_low_limit
        try:
            super().setUpClass()
        finally:
            harness.Server.start = original

    def test_out_of_descriptors_is_logged_once_and_survived(self):
        worker = harness.wait_for(lambda: self.server.child_with_title("ensignd: worker 0"), 5)
        first = connect(self.server.port)
        self.assertEqual(get_on(first).status, 200)
        log_before = len(self.server.stderr())
        cpu_before = cpu_seconds(worker)
        flood = []
        try:
            for _ in range(self.NOFILE + 60):
                flood.append(connect(self.server.port))
            time.sleep(2.0)
            cpu = cpu_seconds(worker) - cpu_before
            log = self.server.stderr()[log_before:]
            self.assertIn("Too many open files", log)
            self.assertLessEqual(log.count("accept:"), 2, log[:2000])
            self.assertLess(len(log), 4000)
            self.assertLess(cpu, 0.6, f"the worker spun: {cpu:.2f} s of CPU in 2 s")
            self.assertEqual(get_on(first).status, 200)  # open connections still served
        finally:
            for s in flood:
                s.close()
        recovered = harness.wait_for(
            lambda: self.server.get("/v1/healthz", timeout=2).status == 200, 5.0, interval=0.2)
        self.assertTrue(recovered, "the worker did not recover")
        first.close()
