"""test_durable_index.py - end-to-end tests of "visible before durable"
(doc/choices.md "Visible before durable"): a change is served from the
visible index of its generation (state_dir/index-<generation>.bin) as soon
as it is written, and made durable after: snapshot.bin, the restart
index, names only bytes that were durable when it got its name.

The durable step is held back by ENSIGN_TEST_DURABLE_DELAY_MS (ensignd(8),
tests only) so the window between visibility and durability is wide:
- the whole node SIGKILLed inside it restarts, with the database stopped,
  from the last durable generation (one older than it served), and
  catches up once the database is back;
- SIGKILLed after it, it restarts from the new generation;
- a worker started inside the window serves the visible generation;
- two changes inside one window are made durable once, as the latest;
- SIGTERM makes the last publication durable before exit;
- stray index-* files are removed at start;
- a refresher killed alone inside the window and restarted keeps the
  generation the workers serve published, not the older restart index.

Test data is written with SQL through test_evaluation.Fixture. Run by
tests/e2e/run.
"""

import os
import re
import signal
import struct
import unittest

import harness
from test_evaluation import OfrepTestCase

DELAY_MS = 2500
PROMPT_S = 5.0


def generation_of(path):
    """The generation in the header of a snapshot file (src/eval/snapshot.h:
    magic[8], version, header_size, generation)."""
    with open(path, "rb") as f:
        return struct.unpack_from("<Q", f.read(24), 16)[0]


class DurableIndexTest(OfrepTestCase):
    workers = 1

    @classmethod
    def setUpClass(cls):
        os.environ["ENSIGN_TEST_DURABLE_DELAY_MS"] = str(DELAY_MS)
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        os.environ.pop("ENSIGN_TEST_DURABLE_DELAY_MS", None)
        super().tearDownClass()

    @classmethod
    def create_flags(cls):
        cls.flag_id = cls.fixture.flag("moving", enabled=True, default="off")

    def served(self, variant, timeout=PROMPT_S):
        return harness.wait_for(
            lambda: self.evaluate("moving").json.get("variant") == variant, timeout)

    def restart_index(self):
        return generation_of(os.path.join(self.server.state_dir, "snapshot.bin"))

    def published(self):
        """The generations logged published, in order."""
        return [int(g) for g in re.findall(r"snapshot generation (\d+) published",
                                           self.server.stderr())]

    def durable(self):
        return [int(g) for g in re.findall(r"snapshot generation (\d+) durable",
                                           self.server.stderr())]

    def index_files(self):
        return sorted(n for n in os.listdir(self.server.state_dir) if n.startswith("index-"))

    def settle(self, variant):
        """variant served and made durable."""
        self.assertTrue(self.served(variant), self.server.stderr()[-3000:])
        self.assertTrue(harness.wait_for(
            lambda: self.durable() and self.durable()[-1] == self.published()[-1],
            DELAY_MS / 1000 + PROMPT_S), self.server.stderr()[-3000:])

    def restart_without_database(self):
        """SIGKILL of the whole node, a start with the database stopped."""
        self.server.kill()
        harness.stop_postgres()
        try:
            self.server.start()
            return self.evaluate("moving").json.get("variant")
        finally:
            harness.start_postgres()

    def test_1_sigkill_before_the_durable_step_restarts_from_the_last_durable(self):
        self.settle("off")
        durable = self.restart_index()
        self.fixture.set_default(self.flag_id, "on")
        self.assertTrue(self.served("on"), self.server.stderr()[-3000:])
        visible = self.published()[-1]
        self.assertGreater(visible, durable)
        self.assertIn(f"index-{visible}.bin", self.index_files())
        self.assertEqual(self.restart_index(), durable, "made durable before the delay")

        # A worker started inside the window serves the visible generation.
        worker = self.server.child_with_title("ensignd: worker")
        self.assertIsNotNone(worker, self.server.children())
        os.kill(worker, signal.SIGKILL)
        self.assertTrue(harness.wait_for(
            lambda: self.server.child_with_title("ensignd: worker") not in (None, worker),
            PROMPT_S), self.server.children())
        self.assertEqual(self.evaluate("moving").json.get("variant"), "on")
        self.assertEqual(self.restart_index(), durable)

        # The whole node dies before the durable step: the restart serves
        # the last durable generation, one older than it served.
        self.assertEqual(self.restart_without_database(), "off")
        self.assertEqual(self.restart_index(), durable)
        self.assertIn(f"serving snapshot generation {durable} from", self.server.stderr())
        self.assertNotIn("not usable", self.server.stderr())
        # With the database back it catches up.
        self.assertTrue(self.served("on", 15), self.server.stderr()[-3000:])

    def test_2_sigkill_after_the_durable_step_restarts_from_it(self):
        self.settle("on")
        self.fixture.set_default(self.flag_id, "off")
        self.settle("off")
        generation = self.published()[-1]
        self.assertEqual(self.restart_index(), generation)
        self.assertEqual(self.restart_without_database(), "off")
        self.assertIn(f"serving snapshot generation {generation} from", self.server.stderr())
        self.assertNotIn("not usable", self.server.stderr())

    def test_3_two_changes_in_one_window_are_made_durable_once(self):
        self.settle(self.evaluate("moving").json.get("variant"))
        published, durable = len(self.published()), len(self.durable())
        self.fixture.set_default(self.flag_id, "on")
        self.assertTrue(self.served("on"))
        self.fixture.set_default(self.flag_id, "off")
        self.assertTrue(self.served("off"))
        self.settle("off")
        self.assertEqual(len(self.published()), published + 2, self.server.stderr()[-3000:])
        self.assertEqual(len(self.durable()), durable + 1, self.server.stderr()[-3000:])
        self.assertEqual(self.durable()[-1], self.published()[-1])
        self.assertEqual(self.restart_index(), self.published()[-1])
        # Visible indexes: the one published and the one before, no older.
        self.assertEqual(self.index_files(), sorted(
            f"index-{g}.bin" for g in self.published()[-2:]))

    def test_4_sigterm_makes_the_last_publication_durable(self):
        self.settle(self.evaluate("moving").json.get("variant"))
        self.fixture.set_default(self.flag_id, "on")
        self.assertTrue(self.served("on"))
        generation = self.published()[-1]
        self.assertNotEqual(self.restart_index(), generation)
        self.server.stop_cleanly()
        self.assertEqual(self.restart_index(), generation)
        # Stray visible indexes (and a temporary file) are removed at start.
        state = self.server.state_dir
        for name in (f"index-{generation + 100}.bin", f"index-{generation}.bin.tmp", "index-x"):
            with open(os.path.join(state, name), "wb") as f:
                f.write(b"stray")
        self.assertEqual(self.restart_without_database(), "on")
        self.assertEqual(self.index_files(), [])
        self.assertTrue(self.served("on"))
        self.assertEqual(self.server.sanitizer_reports(), [])

    def test_5_a_restarted_refresher_never_serves_the_older_restart_index(self):
        self.settle(self.evaluate("moving").json.get("variant"))
        target = "off" if self.evaluate("moving").json.get("variant") == "on" else "on"
        self.fixture.set_default(self.flag_id, target)
        self.assertTrue(self.served(target))
        visible = self.published()[-1]
        self.assertLess(self.restart_index(), visible)
        refresher = self.server.child_with_title("ensignd: refresher")
        self.assertIsNotNone(refresher, self.server.children())
        os.kill(refresher, signal.SIGKILL)
        self.assertTrue(harness.wait_for(
            lambda: self.server.child_with_title("ensignd: refresher") not in (None, refresher),
            PROMPT_S), self.server.children())
        self.assertTrue(harness.wait_for(
            lambda: f"workers serve generation {visible}, newer than" in self.server.stderr(),
            PROMPT_S), self.server.stderr()[-3000:])
        for _ in range(20):
            self.assertEqual(self.evaluate("moving").json.get("variant"), target)
        self.assertIn(f"index-{visible}.bin", self.index_files())
        self.settle(target)
        self.assertEqual(self.restart_index(), self.published()[-1])


if __name__ == "__main__":
    unittest.main()
