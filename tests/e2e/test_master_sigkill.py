"""test_master_sigkill.py - no count lost when the master is SIGKILLed.

Ten times: a fresh ensignd (two workers, a flush interval far longer than
the test, so only the final flush can write), 500 evaluations from four
threads, SIGKILL of the master alone, then wait until every child has
exited: usage_counters must hold every evaluation answered 200. The
children learn of the master's death together (PR_SET_PDEATHSIG); the
flusher's final flush must wait for the workers' last batches.
Also: a worker stopped with SIGTERM hands in its batch before it exits.
"""

import os
import signal
import threading
import time
import unittest

import harness
from test_evaluation import FLAG_PATH, Fixture

RUNS = 10
EVALUATIONS = 500
THREADS = 4


class MasterSigkillTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        harness.require_env("ENSIGN_TEST_DATABASE")
        cls.database = harness.Database(cls.__name__)
        cls.server = None
        try:
            config = harness.Server(cls.database.conninfo, 2)
            harness.ensignctl(config.config_path, "migrate")
            harness.Identity(config.config_path, "alice@example.com", "Alice Example",
                             "Acme Inc", "acme")
            config.remove()
            cls.fixture = Fixture(cls.database.conninfo)
            cls.flag_id = cls.fixture.flag("counted")
            cls.sdk_key = cls.fixture.sdk_key()[0]
        except BaseException:
            cls.database.drop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.database.drop()

    def start_server(self, **settings):
        """A started server that answered one bulk evaluation (counted too)."""
        settings = {"usage_flush_interval_ms": 3600000, **settings}
        server = harness.Server(self.database.conninfo, 2, **settings)
        server.start()
        self.addCleanup(server.remove)
        headers = {"Authorization": f"Bearer {self.sdk_key}"}
        served = harness.wait_for(lambda: server.request(
            "POST", FLAG_PATH, body={}, headers=headers).status == 200, 10, 0.02)
        self.assertTrue(served, "the first snapshot was not served")
        return server

    def evaluate(self, server, count):
        """count evaluations of `counted` over THREADS threads; returns the 200s."""
        answered = [0] * THREADS

        def run(slot):
            for n in range(slot, count, THREADS):
                response = server.request(
                    "POST", f"{FLAG_PATH}/counted",
                    body={"context": {"targetingKey": f"user-{n}"}},
                    headers={"Authorization": f"Bearer {self.sdk_key}"})
                if response.status == 200:
                    answered[slot] += 1

        threads = [threading.Thread(target=run, args=(slot,)) for slot in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return sum(answered)

    def counted(self):
        return sum(self.fixture.usage(self.flag_id).values())

    def test_no_count_lost_when_the_master_is_killed(self):
        losses = []
        for run in range(RUNS):
            before = self.counted() + 1  # start_server's bulk evaluation
            server = self.start_server()
            children = list(server.children())
            self.assertGreaterEqual(len(children), 4, server.children())
            answered = self.evaluate(server, EVALUATIONS)
            self.assertEqual(answered, EVALUATIONS)
            os.kill(server.pid, signal.SIGKILL)
            server.proc.wait(10)
            gone = harness.wait_for(
                lambda: not any(harness.pid_alive(pid) for pid in children), 20.0, 0.05)
            self.assertTrue(gone, f"children outlived the master: {server.children()}")
            losses.append(before + answered - self.counted())
            self.assertEqual(server.sanitizer_reports(), [])
        print(f"\nmaster SIGKILL: counts lost per run {losses}", flush=True)
        self.assertEqual(losses, [0] * RUNS)

    def test_a_stopped_worker_hands_in_its_batch(self):
        before = self.counted() + 1  # start_server's bulk evaluation
        server = self.start_server(usage_flush_interval_ms=200)
        worker = server.child_with_title("ensignd: worker 0")
        self.assertIsNotNone(worker, server.children())
        answered = self.evaluate(server, 200)
        os.kill(worker, signal.SIGTERM)
        self.assertTrue(harness.wait_for(lambda: not harness.pid_alive(worker), 10.0, 0.05))
        counted = harness.wait_for(lambda: self.counted() >= before + answered, 5.0, 0.1)
        self.assertTrue(counted, f"{before + answered - self.counted()} counts lost")
        time.sleep(0.5)
        self.assertEqual(self.counted(), before + answered)
        server.stop_cleanly()


if __name__ == "__main__":
    unittest.main()
