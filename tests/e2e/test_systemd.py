"""test_systemd.py - end-to-end test of the sd_notify protocol that
ensign.service (Type=notify) relies on: READY=1 only once the workers
answer, RELOADING=1 with MONOTONIC_USEC then READY=1 around a SIGHUP
reload, STOPPING=1 on SIGTERM. The test plays systemd: it binds the
datagram socket and passes it in NOTIFY_SOCKET.

Run by tests/e2e/run (its own database and ensignd).
"""

import os
import signal
import socket
import tempfile
import time
import unittest

import harness


class SdNotifyTest(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ensign-e2e-notify.")
        self.path = os.path.join(self.dir, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(15)
        self.server = harness.Server(harness.require_env("ENSIGN_TEST_DATABASE"), workers=2)

    def tearDown(self):
        self.server.remove()
        self.sock.close()
        harness.subprocess.run(["rm", "-rf", self.dir], check=False)

    def receive(self):
        return self.sock.recv(4096).decode()

    def test_ready_reloading_stopping(self):
        os.environ["NOTIFY_SOCKET"] = self.path
        try:
            self.server.start(wait=False)
        finally:
            del os.environ["NOTIFY_SOCKET"]
        self.assertEqual(self.receive(), "READY=1")
        # Ready means serving: the first request after READY=1 is answered.
        self.assertEqual(self.server.get("/v1/healthz", timeout=5).status, 200)

        before_us = time.clock_gettime(time.CLOCK_MONOTONIC) * 1e6
        self.server.signal(signal.SIGHUP)
        lines = dict(line.split("=", 1) for line in self.receive().splitlines())
        self.assertEqual(lines.get("RELOADING"), "1", lines)
        self.assertGreaterEqual(int(lines["MONOTONIC_USEC"]), before_us - 1)
        self.assertLess(int(lines["MONOTONIC_USEC"]), before_us + 10e6)
        self.assertEqual(self.receive(), "READY=1")
        self.assertEqual(self.server.get("/v1/healthz", timeout=5).status, 200)

        self.server.signal(signal.SIGTERM)
        self.assertEqual(self.receive(), "STOPPING=1")
        self.assertEqual(self.server.proc.wait(30), 0, self.server.stderr())
        self.assertEqual(self.server.sanitizer_reports(), [])


if __name__ == "__main__":
    unittest.main()
