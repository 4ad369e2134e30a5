"""test_propagation.py - end-to-end tests of how a configuration change
reaches the evaluation path: the refresher's wake-up on a NOTIFY that
arrives while it is building a snapshot, and several ensignd nodes on one
PostgreSQL (same configuration, identical ETags, a change made through one
node served by the other, usage counted on both adding up).

Test data is written with SQL through test_evaluation.Fixture. Run by
tests/e2e/run.
"""

import subprocess
import time
import unittest

import harness
from test_evaluation import FLAG_PATH, Fixture, OfrepTestCase

# Long enough that a change served after the timer instead of the NOTIFY
# would fail every bound below by far.
LONG_INTERVAL_MS = 60000
PROMPT_S = 5.0


class Session:
    """One psql session held open (for locks that must outlive a statement).
    Statements are fixed test SQL: names only, never data."""

    def __init__(self, conninfo):
        self.proc = subprocess.Popen(
            ["psql", "-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1", "-d", conninfo],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def send(self, statement):
        self.proc.stdin.write(statement + "\n")
        self.proc.stdin.flush()

    def close(self):
        """Ends the session (what it holds is rolled back); raises if psql failed."""
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        status = self.proc.wait(30)
        if status != 0:
            raise AssertionError(f"psql session failed: {self.proc.stderr.read()}")


class LostWakeupTest(OfrepTestCase):
    """A change committed while the refresher builds a snapshot is served at
    once after that build, not after refresh_interval_ms.

    PostgreSQL delivers a NOTIFY to a session that is inside a transaction
    only when that transaction ends, together with the reply that ends it.
    The test makes that happen every time: it holds a lock on `segments`,
    which every build reads inside its transaction, makes a first change
    (the refresher starts a build and waits on the lock: seen in
    pg_stat_activity), commits a second change meanwhile, and releases the
    lock. The second change's NOTIFY then reaches the refresher with the
    end of the first build, which is the wake-up that used to be lost."""

    settings = {"refresh_interval_ms": LONG_INTERVAL_MS}

    @classmethod
    def create_flags(cls):
        cls.first = cls.fixture.flag("first", enabled=False)
        cls.second = cls.fixture.flag("second", enabled=False)

    def refresher_waits_on_lock(self):
        return self.database.query(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND wait_event_type = 'Lock' AND query LIKE '%segments%'") != "0"

    def served(self, key, variant):
        return self.evaluate(key).json.get("variant") == variant

    def test_notify_during_a_build_is_acted_on_at_once(self):
        self.assertTrue(self.served("first", "off") and self.served("second", "off"))
        lock = Session(self.database.conninfo)
        try:
            lock.send("BEGIN; LOCK TABLE segments IN ACCESS EXCLUSIVE MODE;")
            # Make sure the lock is held before the first change.
            self.assertIsNotNone(harness.wait_for(lambda: self.database.query(
                "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation"
                " WHERE c.relname = 'segments' AND l.mode = 'AccessExclusiveLock'"
                " AND l.granted") != "0", 10, 0.05))
            self.fixture.set_enabled(self.first, True)
            self.assertIsNotNone(harness.wait_for(self.refresher_waits_on_lock, 10, 0.02),
                                 "the refresher did not start a build")
            self.fixture.set_enabled(self.second, True)
            time.sleep(0.3)  # the NOTIFY is queued for the refresher's session
            self.assertTrue(self.served("second", "off"))
        finally:
            lock.close()  # the build goes on and ends with the second NOTIFY
        released = time.monotonic()
        self.wait_served(lambda: self.served("first", "on"), PROMPT_S)
        self.wait_served(lambda: self.served("second", "on"), PROMPT_S)
        self.assertLess(time.monotonic() - released, PROMPT_S)
        self.assertEqual(self.server.sanitizer_reports(), [])


if __name__ == "__main__":
    unittest.main()
