"""test_walkthrough.py - keeps doc/walkthrough.md true: runs its ```sh
blocks, in order, in one bash shell against a fresh ensignd, after the
export line that contrib/quickstart prints (contrib/quickstart --print-env,
with the server address, token and organization of the test), exactly as a
reader pastes it, and checks what the steps print.

The last block evaluates the flag; a configuration change reaches
evaluation within a few seconds (the refresher), so that block is retried
for a bounded time until it answers as the document says.

Run by tests/e2e/run (its own database and ensignd).
"""

import json
import os
import re
import shutil
import subprocess
import unittest

import harness

DOC = os.path.join(harness.SRC_DIR, "doc", "walkthrough.md")
EXPORTS = re.compile(r"^export ENSIGN_URL=\S+ ENSIGN_TOKEN=\S+ ORG=\S+$", re.MULTILINE)
QUICKSTART = os.path.join(harness.SRC_DIR, "contrib", "quickstart")
MARK = "@@block"


def sh_blocks(text):
    return re.findall(r"^```sh\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)


def quickstart_exports(url, token, org):
    """The line contrib/quickstart prints for a server, as printed."""
    result = subprocess.run(["sh", QUICKSTART, "--print-env", url, token, org],
                            capture_output=True, text=True, timeout=30, check=True)
    return result.stdout.strip()


def script(blocks, exports):
    lines = ["set -euo pipefail", exports]
    for i, block in enumerate(blocks[:-1]):
        lines += [f"echo; echo '{MARK} {i}'", block]
    lines += [f"echo; echo '{MARK} {len(blocks) - 1}'",
              "evaluate() {", blocks[-1], "}",
              "for attempt in $(seq 50); do",
              "    if out=$(evaluate) && [ \"$(printf '%s' \"$out\" | jq -s -c 'map(.value)')\""
              " = '[true,false]' ]; then break; fi",
              "    sleep 0.2",
              "done",
              "printf '%s\\n' \"$out\""]
    return "\n".join(lines) + "\n"


def outputs(stdout):
    """{block index: its output text}."""
    parts = re.split(rf"^{MARK} (\d+)$", stdout, flags=re.MULTILINE)
    return {int(parts[i]): parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}


def json_values(text):
    return [json.loads(doc) for doc in re.findall(r"^\{.*?^\}$", text, re.MULTILINE | re.DOTALL)]


@unittest.skipUnless(shutil.which("jq") and shutil.which("curl"), "needs jq and curl")
class WalkthroughTest(harness.ServerTestCase):

    def test_walkthrough_runs_as_printed(self):
        with open(DOC, encoding="utf-8") as f:
            blocks = sh_blocks(f.read())
        self.assertGreaterEqual(len(blocks), 11)
        with open(DOC, encoding="utf-8") as f:
            shown = [line.strip() for line in f if EXPORTS.match(line.strip())]
        self.assertEqual(len(shown), 1, "the document shows the quick start's export line once")
        exports = quickstart_exports(f"http://127.0.0.1:{self.server.port}",
                                     self.identity.user_token, self.identity.org_slug)
        self.assertRegex(exports, EXPORTS, "the quick start prints another line than the document")
        self.assertEqual(exports.split("=")[0], shown[0].split("=")[0])
        for block in blocks:
            self.assertNotIn("export ENSIGN_", block, "a block overrides the pasted line")
        text = script(blocks, exports)
        result = subprocess.run(["bash", "-c", text], capture_output=True, text=True,
                                timeout=120)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        out = outputs(result.stdout)
        self.assertEqual(out[1].split(), ["production", "preview", "development"])
        self.assertEqual(json_values(out[2]), [{"key": "new-checkout", "type": "boolean",
                                                "archivedAt": None}])
        self.assertEqual(json_values(out[3]), [{"key": "beta-testers", "name": "Beta testers"}])
        self.assertEqual(json_values(out[4]), [{"priority": 0, "serve": {"variant": "on"}}])
        self.assertEqual(json.loads(out[5]), {"ok": True})
        detail = json_values(out[6])[0]
        self.assertEqual(detail["production"], {"enabled": True, "defaultVariantKey": "off",
                                                "rules": 1})
        self.assertEqual(detail["history"][0], "Turned on in Production")
        history = json.loads(out[7])
        self.assertEqual(len(history), 2, out[7])
        self.assertEqual(history[0]["summary"], "Turned on in Production")
        self.assertEqual(history[0]["action"], "environment.updated")
        self.assertEqual(json.loads(out[8]), {"ok": True})  # the mistake
        self.assertEqual(json_values(out[9]), [{
            "summary": "Turned on in Production",
            "production": {"enabled": True, "defaultServe": {"variant": "off"}, "rules": 1}}])
        restored = json_values(out[10])[0]
        self.assertEqual(restored["action"], "flag.revision_restored")
        self.assertEqual(restored["changes"], ["production enabled: false → true"])
        evaluations = json_values(out[len(blocks) - 1])
        self.assertEqual([e["value"] for e in evaluations], [True, False], result.stdout)
        self.assertEqual([e["variant"] for e in evaluations], ["on", "off"])
        self.assertEqual(evaluations[0]["reason"], "TARGETING_MATCH")


if __name__ == "__main__":
    unittest.main()
