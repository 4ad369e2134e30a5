"""test_stall.py - a stopped worker is killed and replaced.

A worker under SIGSTOP stops beating its heartbeat in shared memory; the
master kills it once the beat is older than worker_stall_ms and respawns
it on the same listening socket, so connections queued there are served
by the replacement.
"""

import concurrent.futures
import os
import signal
import time

import harness

STALL_MS = 800


class StuckWorkerTest(harness.ServerTestCase):
    settings = {"worker_stall_ms": STALL_MS}

    def worker_pid(self, slot):
        return harness.wait_for(lambda: self.server.child_with_title(f"ensignd: worker {slot}"),
                                5.0)

    def test_stopped_worker_is_killed_and_replaced(self):
        victim = self.worker_pid(0)
        self.assertIsNotNone(victim)
        os.kill(victim, signal.SIGSTOP)
        stopped_at = time.monotonic()
        try:
            # New connections: the kernel hashes some onto the stopped
            # worker's socket, where they wait for the replacement.
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                answers = list(pool.map(
                    lambda _: self.server.get("/v1/healthz", timeout=STALL_MS / 1000 + 4).status,
                    range(16)))
            replacement = harness.wait_for(
                lambda: (self.server.child_with_title("ensignd: worker 0") or victim) != victim
                or None, STALL_MS / 1000 + 1.0, interval=0.01)
            elapsed = time.monotonic() - stopped_at
        finally:
            try:
                os.kill(victim, signal.SIGCONT)
            except ProcessLookupError:
                pass
        self.assertEqual(answers, [200] * 16)
        self.assertTrue(replacement, f"worker 0 not replaced:\n{self.server.stderr()}")
        self.assertLess(elapsed, STALL_MS / 1000 + 1.0 + 0.5)
        self.assertFalse(harness.pid_alive(victim))
        self.assertIn("has not run its event loop", self.server.stderr())
        self.assertEqual(self.server.get("/v1/healthz").status, 200)

    def test_busy_but_running_workers_are_left_alone(self):
        before = {p for p, t in self.server.children().items() if "worker" in t}
        with harness.LoadLoop(self.server.port, threads=2) as load:
            time.sleep(STALL_MS / 1000 * 2)
        after = {p for p, t in self.server.children().items() if "worker" in t}
        self.assertGreater(load.count(), 0)
        self.assertEqual(load.failures, [])
        self.assertTrue(before <= after, f"a running worker was replaced: {before} -> {after}")
