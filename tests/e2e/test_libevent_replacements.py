"""test_libevent_replacements.py - ensignd refuses to start when its libevent
replacements are not in effect (src/http/libevent_replacements.c).

A libevent whose internal calls are bound to itself at link time (as
Ubuntu's -Bsymbolic-functions packaging does) never reaches the functions
ensignd defines in its executable, so the framing defences would vanish.
This test builds such a libevent from the static archive that libevent-dev
ships (its objects are -fPIE, which cannot be linked -Bsymbolic-functions:
their data references need -Bsymbolic, which binds the functions the same
way; glibc's stderr, which they reach PC-relative, is renamed to a local
copy), runs ensignd against it with LD_LIBRARY_PATH, and expects exit 1
with one log line naming the replacement. The same binary against the
system libevent starts (the positive control). Skipped, with the reason,
only where the archive or the tools are missing.
"""

import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import harness

SHIM = """#include <stdio.h>
__attribute__((visibility("hidden"))) FILE *ensign_libevent_stderr;
__attribute__((constructor)) static void shim(void) { ensign_libevent_stderr = stderr; }
"""


def libevent_libdir():
    try:
        out = subprocess.run(["pkg-config", "--variable=libdir", "libevent"],
                             capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def run(args, cwd):
    result = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise unittest.SkipTest(f"cannot build a symbolic libevent: {' '.join(args[:3])} "
                                f"failed: {result.stderr.strip()[-300:]}")


def build_symbolic_libevent(workdir):
    """libevent-2.1.so.7 linked -Bsymbolic in workdir (SkipTest when it cannot be)."""
    libdir = libevent_libdir()
    archive = os.path.join(libdir, "libevent.a") if libdir else None
    if archive is None or not os.path.exists(archive):
        raise unittest.SkipTest(f"no static libevent archive (libevent.a) in {libdir}")
    tools = {t: shutil.which(t) for t in ("ar", "objcopy", "cc")}
    missing = [t for t, path in tools.items() if path is None]
    if missing:
        raise unittest.SkipTest(f"cannot build a symbolic libevent: no {', '.join(missing)}")
    objects = os.path.join(workdir, "o")
    os.mkdir(objects)
    run(["ar", "x", archive], objects)
    log_o = os.path.join(objects, "log.o")
    if os.path.exists(log_o):
        run(["objcopy", "--redefine-sym", "stderr=ensign_libevent_stderr", log_o], objects)
    with open(os.path.join(workdir, "shim.c"), "w") as f:
        f.write(SHIM)
    run(["cc", "-fPIC", "-c", "shim.c", "-o", "shim.o"], workdir)
    members = sorted(os.path.join(objects, n) for n in os.listdir(objects) if n.endswith(".o"))
    run(["cc", "-shared", "-Wl,-Bsymbolic", "-Wl,-soname,libevent-2.1.so.7", "-o",
         "libevent-2.1.so.7", "shim.o", *members], workdir)
    return workdir


class LibeventReplacementsTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="ensign-e2e-symbolic.")
        cls.libdir = build_symbolic_libevent(os.path.join(cls.dir))
        cls.state = os.path.join(cls.dir, "state")
        os.mkdir(cls.state)
        cls.config = os.path.join(cls.dir, "ensign.conf")
        with open(cls.config, "w") as f:
            f.write(harness.config_text({
                "listen": f"127.0.0.1:{harness.free_port()}",
                "database": "host=/nonexistent dbname=none connect_timeout=1",
                "workers": 1,
                "state_dir": cls.state,
                "log_level": "info",
            }))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_a_symbolic_libevent_is_refused_at_start(self):
        env = dict(os.environ, LD_LIBRARY_PATH=self.libdir)
        started = time.monotonic()
        result = subprocess.run([harness.ENSIGND, "-c", self.config], env=env,
                                stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                timeout=30)
        elapsed = time.monotonic() - started
        self.assertEqual(result.returncode, 1, result.stderr)
        lines = [line for line in result.stderr.splitlines() if "level=error" in line]
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertIn("libevent replacement evhttp_request_new", lines[0])
        self.assertIn("is not in effect", lines[0])
        self.assertIn("-Bsymbolic", lines[0])
        self.assertNotIn("worker 0 started", result.stderr)
        self.assertEqual(harness.sanitizer_reports(result.stderr), [])
        self.assertLess(elapsed, 10.0)

    def test_the_system_libevent_passes_the_proof(self):
        with tempfile.TemporaryFile() as err:
            proc = subprocess.Popen([harness.ENSIGND, "-c", self.config],
                                    stdin=subprocess.DEVNULL, stdout=err, stderr=err)
            try:
                started = harness.wait_for(lambda: self.log_has(err, "worker 0 started"), 15.0)
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=30)
            text = self.log_text(err)
        self.assertTrue(started, text)
        self.assertNotIn("is not in effect", text)

    @staticmethod
    def log_text(f):
        f.seek(0)
        return f.read().decode("utf-8", "replace")

    def log_has(self, f, needle):
        return needle in self.log_text(f)


if __name__ == "__main__":
    unittest.main()
