"""test_kept_index.py - end-to-end tests of the index kept between builds
(doc/choices.md "The index kept between builds"): a change that moves only
organizations' generations is published by patching the refresher's copy
of the index (logged "the index patched"), and what the workers serve from
a patched index is what a whole one would give; a change of SDK keys or
environments makes the index whole again and patching resumes after it; a
restart loads a patched index from disk and patches it on.

Test data is written with SQL through test_evaluation.Fixture. Run by
tests/e2e/run.
"""

import unittest

import harness
from test_evaluation import Fixture, OfrepTestCase

PROMPT_S = 5.0


class KeptIndexTest(OfrepTestCase):
    """One organization's changes through the kept index, with a second
    organization whose part must stay what it was."""

    @classmethod
    def create_flags(cls):
        cls.flag_id = cls.fixture.flag("moving", enabled=True, default="off")
        harness.psql(cls.database.conninfo,
                     "INSERT INTO orgs (name, slug) VALUES ('Other', 'other')")
        cls.other = Fixture(cls.database.conninfo, org_slug="other")
        cls.other_flag = cls.other.flag("still", enabled=True, default="on")
        cls.other_key, _ = cls.other.sdk_key()

    def served(self, key, variant, sdk_key=None):
        return harness.wait_for(
            lambda: self.evaluate(key, sdk_key=sdk_key).json.get("variant") == variant,
            PROMPT_S)

    def patched_builds(self):
        return self.server.stderr().count("the index patched")

    def test_changes_patch_the_index_and_keys_make_it_whole(self):
        # Changes of a flag only move the organization's generation: patched.
        before = self.patched_builds()
        for variant in ("on", "off", "on"):
            self.fixture.set_default(self.flag_id, variant)
            self.assertTrue(self.served("moving", variant), f"{variant} not served")
        self.assertTrue(harness.wait_for(lambda: self.patched_builds() >= before + 3, PROMPT_S),
                        self.server.stderr()[-3000:])
        # The other organization is served as before, through its own key.
        self.assertEqual(self.evaluate("still", sdk_key=self.other_key).json.get("variant"), "on")

        # A new SDK key is not a patch: the index is made whole, with it.
        patched = self.patched_builds()
        new_key, _ = self.fixture.sdk_key()
        self.assertTrue(self.served("moving", "on", sdk_key=new_key), "the new key is refused")
        # Revoking the first key: refused from then on.
        self.fixture.revoke(self.sdk_key_id)
        self.assertTrue(harness.wait_for(
            lambda: self.evaluate("moving").status == 401, PROMPT_S), "a revoked key still served")
        self.assertEqual(self.patched_builds(), patched, "a change of keys was patched")
        # And patching resumes after it.
        self.fixture.set_default(self.flag_id, "off")
        self.assertTrue(self.served("moving", "off", sdk_key=new_key))
        self.assertTrue(harness.wait_for(lambda: self.patched_builds() > patched, PROMPT_S))
        self.assertEqual(self.evaluate("still", sdk_key=self.other_key).json.get("variant"), "on")

        # A restart loads the patched index on disk, serves it at once and
        # patches it on.
        self.server.stop()
        self.server.start()
        # healthz answers before the refresher has published the index on
        # disk (a moment under load): the first evaluations may be 503.
        self.assertTrue(self.served("moving", "off", sdk_key=new_key), self.server.stderr()[-3000:])
        self.assertIn("snapshot parts on disk are kept", self.server.stderr())
        patched = self.patched_builds()
        self.fixture.set_default(self.flag_id, "on")
        self.assertTrue(self.served("moving", "on", sdk_key=new_key))
        self.assertTrue(harness.wait_for(lambda: self.patched_builds() > patched, PROMPT_S),
                        self.server.stderr()[-3000:])
        self.assertEqual(self.evaluate("still", sdk_key=self.other_key).json.get("variant"), "on")
        self.assertEqual(self.server.sanitizer_reports(), [])


if __name__ == "__main__":
    unittest.main()
