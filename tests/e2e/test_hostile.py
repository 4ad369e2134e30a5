"""test_hostile.py - hostile input on every surface.

Each case is answered with a clear 4xx in the surface's own body (the
error envelope on /v1, the OFREP error body with errorCode on
/ofrep, the Problem body elsewhere), the server keeps serving, and nothing
stored changes. Framing cases go over raw sockets.
"""

import json
import socket
import time

import harness
from flagfixture import FlagTestCase
from test_evaluation import Fixture

FLAGS = "/v1/orgs/acme/flags"
EVAL = "/ofrep/v1/evaluate/flags"


def exchange(port, data, timeout=5.0):
    """Sends data; returns every byte received until the server closes
    (b'...<open>' appended when it kept the connection open)."""
    received = b""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        s.settimeout(1.5)
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    return received
                received += chunk
        except socket.timeout:
            return received + b"<open>"
        except ConnectionResetError:
            return received


class HostileInputTest(FlagTestCase):

    @classmethod
    def prepare(cls):
        super().prepare()
        fixture = Fixture(cls.database.conninfo)
        fixture.flag("kept-flag")
        cls.sdk_key, _ = fixture.sdk_key()

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        headers = {"Authorization": f"Bearer {cls.sdk_key}"}
        if not harness.wait_for(lambda: cls.server.request("POST", EVAL, body=b"{}",
                                                           headers=headers).status == 200,
                                10.0, interval=0.1):
            cls.tearDownClass()
            raise AssertionError("no snapshot was served")

    def stored(self):
        return self.database.query(
            "SELECT count(*) || '/' || coalesce(max(updated_at)::text, '') FROM flags")

    def setUp(self):
        self.before = self.stored()

    def tearDown(self):
        self.assertEqual(self.server.get("/v1/healthz").status, 200, "the server stopped serving")
        self.assertEqual(self.stored(), self.before, "stored data changed")

    def post_v1(self, raw):
        return self.server.request("POST", FLAGS, body=raw, headers={
            "Authorization": f"Bearer {self.tokens['member']}",
            "Content-Type": "application/json"})

    def post_ofrep(self, raw, path=EVAL):
        return self.server.request("POST", path, body=raw, headers={
            "Authorization": f"Bearer {self.sdk_key}", "Content-Type": "application/json"})

    def assertOfrepError(self, response, status, code):
        self.assertEqual(response.status, status, response)
        body = response.json
        self.assertEqual(body["errorCode"], code, body)
        self.assertEqual(body["status"], status)
        return body

    # --- JSON bodies -------------------------------------------------------

    BODIES = {
        # name: (raw body, /v1 status, /ofrep errorCode)
        "malformed": (b'{"slug": "x",', 400, "PARSE_ERROR"),
        "deep nesting": (b"[" * 100000 + b"]" * 100000, 400, "PARSE_ERROR"),
        "invalid utf-8": (b'{"slug": "bad-\xff\xfe", "context": {"a": "\xc3("}}', 400,
                          "PARSE_ERROR"),
        "lone surrogate": (b'{"slug": "x\\ud800", "context": {"a": "\\udc00"}}', 400,
                           "PARSE_ERROR"),
        "nul in value": (b'{"slug": "nul-demo\\u0000<script>",'
                         b' "context": {"a": "x\\u0000y"}}', 422, "INVALID_CONTEXT"),
        "nul in key": (b'{"slug\\u0000x": "nul-key", "context": {"country\\u0000x": "NL"}}',
                       422, "INVALID_CONTEXT"),
        "number out of range": (b'{"slug": "big", "context": {"n": 123456789012345678901234567890}}',
                                422, "INVALID_CONTEXT"),
        "double overflow": (b'{"slug": "big", "context": {"n": 1e999}}', 422, "INVALID_CONTEXT"),
        "duplicate keys": (b'{"slug": "dup-a", "slug": "dup-b", "context": {"a": 1, "a": 2}}',
                           422, "PARSE_ERROR"),
        # json-c's lenient mode reads these; the scan knows strings only by
        # their double quotes, so a single-quoted "\u0000" once got past it
        "single quotes": (b"{'slug': 'q\\u0000', 'context': {'a': 'x\\u0000y'}}", 400,
                          "PARSE_ERROR"),
        "comment": (b'{"slug": "c", /* note */ "context": {}}', 400, "PARSE_ERROR"),
        "trailing comma": (b'{"slug": "t", "context": {"a": 1,},}', 400, "PARSE_ERROR"),
        "upper-case literal": (b'{"slug": "u", "context": {"a": TRUE}}', 400, "PARSE_ERROR"),
        # raw NUL bytes are no JSON at all: a parse error, not the 422 of a
        # "\u0000" that JSON can carry but no field may hold
        "raw bytes": (b"\x00\x01", 400, "PARSE_ERROR"),
        "raw NUL in a string": (b'{"slug": "a\x00b", "context": {"a": "x\x00y"}}', 400,
                                "PARSE_ERROR"),
        "raw NUL after the body": (b'{"slug": "z", "context": {}}\x00', 400, "PARSE_ERROR"),
    }

    def assertGuardError(self, response, status):
        """The /v1 envelope; a 422 of the JSON check names the
        body in errors (doc/api.md: errors only on a 422)."""
        self.assertEqual(response.status, status, response)
        self.assertJsonContentType(response)
        body = response.json
        self.assertEqual(body["status"], status)
        if status == 422:
            self.assertEqual(set(body), {"message", "status", "errors"}, body)
            self.assertEqual(body["errors"], {"body": [body["message"]]}, body)
        else:
            self.assertEqual(set(body), {"message", "status"}, body)
        return body

    def test_json_bodies_on_v1(self):
        for name, (raw, status, _) in self.BODIES.items():
            with self.subTest(name):
                self.assertGuardError(self.post_v1(raw), status)

    def test_json_bodies_on_the_account_routes(self):
        for name, (raw, status, _) in self.BODIES.items():
            with self.subTest(name):
                response = self.server.request("POST", "/orgs", body=raw, headers={
                    "Authorization": f"Bearer {self.tokens['member']}",
                    "Content-Type": "application/json"})
                self.assertProblem(response, status)
                if status == 422:
                    self.assertEqual(response.json["errors"],
                                     {"body": [response.json["detail"]]}, response.json)
                else:
                    self.assertNotIn("NUL character", response.json["detail"])

    def test_json_bodies_on_ofrep(self):
        for name, (raw, _, code) in self.BODIES.items():
            for path in (EVAL, EVAL + "/kept-flag"):
                with self.subTest(name, path=path):
                    self.assertOfrepError(self.post_ofrep(raw, path), 400, code)

    def test_wrong_types_and_sql_metacharacters(self):
        self.assertStatus(self.post_v1(b'{"slug": 42}'), 422)
        self.assertIn(self.post_v1(b'["slug"]').status, (400, 422))
        self.assertOfrepError(self.post_ofrep(b'{"context": "x"}'), 400, "INVALID_CONTEXT")
        self.assertOfrepError(self.post_ofrep(b'{"context": {"targetingKey": 5}}'), 400,
                              "INVALID_CONTEXT")
        self.assertOfrepError(self.post_ofrep(b'[1]'), 400, "PARSE_ERROR")
        # the SDKs' own shape, {"context": X}, is read without the body's
        # object (json_quick_parse_only_member): the same checks hold
        for raw, code in ((b'{"context": {"a": 1, "a": 2}}', "PARSE_ERROR"),
                          (b'{"context": {"n": 1e999}}', "INVALID_CONTEXT"),
                          (b'{"context": {"k": "x\\u0000y"}}', "INVALID_CONTEXT"),
                          (b'{"context": 7}', "INVALID_CONTEXT")):
            for path in (EVAL, EVAL + "/kept-flag"):
                with self.subTest(raw=raw, path=path):
                    self.assertOfrepError(self.post_ofrep(raw, path), 400, code)
        for path in (EVAL, EVAL + "/kept-flag"):
            self.assertStatus(self.post_ofrep(b'{"context": null}', path), 200)
        sql = "x'; DROP TABLE flags; --"
        response = self.post_v1(json.dumps({"slug": sql, "name": sql}).encode())
        self.assertEqual(self.assertStatus(response, 422)["status"], 422)
        ok = self.post_ofrep(json.dumps({"context": {"targetingKey": sql, sql: sql}}).encode())
        self.assertEqual(ok.status, 200, ok)
        self.assertEqual(self.post_ofrep(b"{}", EVAL + "/" + "x%27%3B%20DROP%20TABLE%20flags")
                         .status, 404)
        member = self.tokens["member"]
        for path in ("/v1/orgs/acme%27%20OR%201=1--/flags", "/v1/orgs/acme/flags/x%27--",
                     "/v1/orgs/acme/flags?archived=%27%20OR%201=1--",
                     "/v1/orgs/acme/segments/%22%3B%20SELECT%201"):
            with self.subTest(path=path):
                response = self.server.get(path, token=member)
                self.assertIn(response.status, (200, 404, 422), response)
        response = self.server.request("PATCH", "/v1/orgs/acme/flags/kept-flag", body={
            "name": sql, "description": "'); DELETE FROM flags; --"},
            headers={"Authorization": f"Bearer {self.tokens['member']}"})
        self.assertIn(response.status, (200, 422), response)
        if response.status == 200:  # stored verbatim, nothing else touched
            self.assertEqual(response.json["flag"]["name"], sql)
            self.assertEqual(self.stored().split("/")[0], self.before.split("/")[0])
            self.before = self.stored()

    def test_a_context_with_too_many_attributes_is_refused_early(self):
        context = {f"attr{i:05d}": "vv" for i in range(50000)}
        raw = json.dumps({"context": context}).encode()
        started = time.monotonic()
        body = self.assertOfrepError(self.post_ofrep(raw), 400, "INVALID_CONTEXT")
        self.assertIn("too many", body["errorDetails"])
        self.assertLess(time.monotonic() - started, 2.0)
        context = {f"attr{i:03d}": "vv" for i in range(500)}
        self.assertEqual(self.post_ofrep(json.dumps({"context": context}).encode()).status, 200)

    def test_context_arrays_are_capped(self):
        """At most 1024 array elements in a body, all arrays together
        (doc/choices.md): a 450,000-element array is refused before it is
        parsed, on the quick path (plain integers) and on json-c's path
        (doubles), single and bulk."""
        for first in ("0", "0.5"):  # a double makes the quick parse decline
            raw = ('{"context": {"targetingKey": "u", "ids": [%s,%s]}}'
                   % (first, ",".join(["0"] * 449999))).encode()
            self.assertLess(len(raw), 1048576)
            for path in (EVAL, EVAL + "/kept-flag"):
                with self.subTest(first=first, path=path):
                    started = time.monotonic()
                    body = self.assertOfrepError(self.post_ofrep(raw, path), 400,
                                                 "INVALID_CONTEXT")
                    self.assertLess(time.monotonic() - started, 1.0)
                    self.assertIn("array elements", body["errorDetails"])
        at_cap = {"targetingKey": "u", "ids": list(range(1000)), "tags": ["t"] * 24}
        self.assertEqual(self.post_ofrep(json.dumps({"context": at_cap}).encode()).status, 200)
        at_cap["tags"].append("one too many")
        self.assertOfrepError(self.post_ofrep(json.dumps({"context": at_cap}).encode()), 400,
                              "INVALID_CONTEXT")

    # --- paths ---------------------------------------------------------------

    def test_paths(self):
        key = self.post_ofrep(b"{}", EVAL + "/%FF%FE")
        body = self.assertOfrepError(key, 404, "FLAG_NOT_FOUND")
        json.dumps(body)  # parsed as UTF-8 JSON already; the key was not echoed raw
        self.assertNotIn("\udcff", body.get("key", ""))
        for path in (EVAL + "/..", EVAL + "/%2E%2E", EVAL + "/a%2Fb", EVAL + "/" + "k" * 5000):
            with self.subTest(path=path[:60]):
                response = self.post_ofrep(b"{}", path)
                self.assertIn(response.status, (400, 404), response)
                self.assertIn("errorCode", response.json)
        for path in ("/v1/orgs/acme/flags/..%2F..%2Fsdk-keys", "/v1/orgs/acme/flags/" + "f" * 5000,
                     "/v1/../v1/orgs/acme/flags/x"):
            with self.subTest(path=path[:60]):
                response = self.server.get(path, token=self.tokens["member"])
                self.assertIn(response.status, (400, 404), response)
                self.assertV1Error(response, response.status)

    def test_error_echo_is_cut_on_a_character_boundary(self):
        for prefix in ("/v1/", "/v1/x", "/zz/", "/zz/x"):
            path = prefix + "é" * 100
            raw = f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()
            response = harness.parse_raw_response(exchange(self.server.port, raw))
            self.assertEqual(response.status, 404)
            response.json  # raises on invalid UTF-8
        for path in (b"/v1/\xff\xfe", b"/ofrep/v1/\xc3", b"/zz/\xed\xa0\x80"):
            with self.subTest(path=path):
                raw = b"GET " + path + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                response = harness.parse_raw_response(exchange(self.server.port, raw))
                self.assertIn(response.status, (400, 404), response)
                self.assertIn("\ufffd", json.dumps(response.json, ensure_ascii=False))

    # --- framing over raw sockets --------------------------------------------

    def raw(self, data):
        return exchange(self.server.port, data)

    def test_conflicting_content_length_is_400_and_closed(self):
        smuggled = b"GET /v1/healthz HTTP/1.1\r\nHost: x\r\n\r\n"
        data = self.raw(b"POST /v1/orgs/acme/flags HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
                        b"Content-Length: %d\r\n\r\n" % len(smuggled) + smuggled)
        self.assertEqual(data.count(b"HTTP/1.1 "), 1, data)
        self.assertFalse(data.endswith(b"<open>"), data)
        self.assertV1Error(harness.parse_raw_response(data), 400)

    def test_transfer_codings_other_than_chunked_are_400_and_closed(self):
        smuggled = b"GET /v1/healthz HTTP/1.1\r\nHost: x\r\n\r\n"
        for coding in (b"gzip", b"gzip, chunked", b"chunked\r\nContent-Length: 3"):
            with self.subTest(coding):
                data = self.raw(b"POST /ofrep/v1/evaluate/flags HTTP/1.1\r\nHost: x\r\n"
                                b"Transfer-Encoding: " + coding + b"\r\n\r\n" + smuggled)
                self.assertEqual(data.count(b"HTTP/1.1 "), 1, data)
                self.assertFalse(data.endswith(b"<open>"), data)
                self.assertOfrepError(harness.parse_raw_response(data), 400, "GENERAL")

    def test_host_header_rules(self):
        for head in (b"GET /v1/healthz HTTP/1.1\r\n\r\n",
                     b"GET /v1/healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"):
            with self.subTest(head):
                self.assertV1Error(harness.parse_raw_response(self.raw(head)), 400)
        ok = self.raw(b"GET /v1/healthz HTTP/1.0\r\n\r\n")
        self.assertEqual(harness.parse_raw_response(ok).status, 200)

    def test_versions_and_methods(self):
        data = self.raw(b"GET /v1/healthz HTTP/1.2\r\nHost: a\r\n\r\n")
        self.assertTrue(data.startswith(b"HTTP/1.1 200"), data)
        data = self.raw(b"CONNECT example.com:443 HTTP/1.1\r\nHost: a\r\n\r\n")
        self.assertFalse(data.endswith(b"<open>"), data)
        self.assertIn(harness.parse_raw_response(data).status, (400, 405))
        data = self.raw(b"TRACE /v1/healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        response = harness.parse_raw_response(data)
        self.assertEqual(response.status, 405)
        self.assertIn("TRACE", response.json["message"])

    def test_nul_in_a_header_does_not_authenticate(self):
        data = self.raw(b"GET /v1/orgs/acme/flags HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer "
                        + self.tokens["member"].encode() + b"\0junk\r\n\r\n")
        self.assertV1Error(harness.parse_raw_response(data), 400)

    def test_libevent_failures_answer_the_surface_body(self):
        big = b"Content-Length: 99999999\r\n\r\n"
        ofrep = harness.parse_raw_response(self.raw(b"POST " + EVAL.encode() +
                                                    b" HTTP/1.1\r\nHost: a\r\n" + big))
        self.assertOfrepError(ofrep, 413, "GENERAL")
        root = harness.parse_raw_response(self.raw(b"POST /me HTTP/1.1\r\nHost: a\r\n" + big))
        self.assertProblem(root, 413)
        v1 = harness.parse_raw_response(self.raw(b"POST /v1/orgs/acme/flags HTTP/1.1\r\n"
                                                 b"Host: a\r\n" + big))
        self.assertV1Error(v1, 413)
        long_path = harness.parse_raw_response(self.raw(
            b"GET /ofrep/v1/" + b"a" * 10000 + b" HTTP/1.1\r\nHost: a\r\n\r\n"))
        self.assertOfrepError(long_path, 414, "GENERAL")
        long_root = harness.parse_raw_response(self.raw(
            b"GET /zz/" + b"a" * 10000 + b" HTTP/1.1\r\nHost: a\r\n\r\n"))
        self.assertProblem(long_root, 414)
        headers = harness.parse_raw_response(self.raw(
            b"GET /ofrep/v1/x HTTP/1.1\r\nHost: a\r\nX: " + b"a" * 20000 + b"\r\n\r\n"))
        self.assertOfrepError(headers, 431, "GENERAL")
        malformed = harness.parse_raw_response(self.raw(
            b"GET /me HTTP/1.1\r\nHost a\r\n\r\n"))
        self.assertProblem(malformed, 400)

    def chunked(self, chunks):
        return harness.parse_raw_response(self.raw(
            b"POST " + EVAL.encode() + b" HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer " +
            self.sdk_key.encode() + b"\r\nTransfer-Encoding: chunked\r\n"
            b"Connection: close\r\n\r\n" + chunks))

    def test_chunked_bodies(self):
        body = b'{"context": {"targetingKey": "u"}}'
        size = b"%x" % len(body)
        for name, line in {"plain": size, "extension": size + b";ext=1",
                           "quoted extension": size + b' ; a="b c"'}.items():
            with self.subTest(name):
                response = self.chunked(line + b"\r\n" + body + b"\r\n0;last\r\n\r\n")
                self.assertEqual(response.status, 200, response)
        for name, chunks in {"not hex": b"zz\r\nabc\r\n0\r\n\r\n",
                             "negative": b"-5\r\nabcde\r\n0\r\n\r\n",
                             "junk after the size": b"5 junk\r\nabcde\r\n0\r\n\r\n",
                             "control character": b"5;\x01\r\nabcde\r\n0\r\n\r\n"}.items():
            with self.subTest(name):
                body_ = self.assertOfrepError(self.chunked(chunks), 400, "GENERAL")
                self.assertIn("chunked", body_["errorDetails"])
        self.assertOfrepError(self.chunked(b"7fffffffffff\r\nabc\r\n0\r\n\r\n"), 413,
                              "GENERAL")

    # --- strict framing ---------------------------------------------------------

    SMUGGLED = b"GET /v1/healthz HTTP/1.1\r\nHost: x\r\n\r\n"

    def assertAnsweredOnceAndClosed(self, data):
        """One answer, a 400 in the surface's body, the connection closed:
        the bytes after the head (a second request) were never answered."""
        self.assertEqual(data.count(b"HTTP/1.1 "), 1, data)
        self.assertFalse(data.endswith(b"<open>"), data)
        self.assertEqual(harness.parse_raw_response(data).status, 400, data)
        return harness.parse_raw_response(data)

    def test_field_names_that_are_not_tokens_are_400_and_closed(self):
        n = len(self.SMUGGLED)
        heads = {
            "space before the colon": b"Content-Length : %d\r\n" % n,
            "tab before the colon": b"Content-Length\t: %d\r\n" % n,
            "space inside a name": b"X Forwarded: a\r\nContent-Length: 0\r\n",
            "separator in a name": b"X(a): 1\r\n",
            "bare CR in a value": b"X-A: a\rb\r\n",
            "TE with a space, then CL": b"Transfer-Encoding : chunked\r\nContent-Length: %d\r\n" % n,
        }
        for name, fields in heads.items():
            with self.subTest(name):
                data = self.raw(b"POST /v1/orgs/acme/flags HTTP/1.1\r\nHost: x\r\n" + fields +
                                b"\r\n" + self.SMUGGLED)
                self.assertV1Error(self.assertAnsweredOnceAndClosed(data), 400)

    def test_content_length_is_digits_only(self):
        for value in (b"+%d", b"0x%x", b"%d%%", b"%d 1", b"-%d", b"%d,%d"):
            n = len(self.SMUGGLED)
            text = value % ((n, n) if value.count(b"%d") == 2 else n)
            with self.subTest(text):
                data = self.raw(b"POST " + EVAL.encode() + b" HTTP/1.1\r\nHost: x\r\n"
                                b"Content-Length: " + text + b"\r\n\r\n" + self.SMUGGLED)
                self.assertOfrepError(self.assertAnsweredOnceAndClosed(data), 400, "GENERAL")
        body = b'{"context": {"targetingKey": "u"}}'
        data = self.raw(b"POST " + EVAL.encode() + b" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                        + self.sdk_key.encode() + b"\r\nContent-Length:\t%d \r\n"
                        b"Connection: close\r\n\r\n" % len(body) + body)
        self.assertEqual(harness.parse_raw_response(data).status, 200, data)

    def test_host_values_that_are_not_hosts(self):
        for value in (b"a b", b"a\tb", b"a/b", b"a@b", b"a\rb"):
            with self.subTest(value):
                data = self.raw(b"GET /v1/healthz HTTP/1.1\r\nHost: " + value + b"\r\n\r\n" +
                                self.SMUGGLED)
                self.assertV1Error(self.assertAnsweredOnceAndClosed(data), 400)
        for value in (b"example.com:8080", b"[::1]:80", b"127.0.0.1", b""):
            with self.subTest(value):
                data = self.raw(b"GET /v1/healthz HTTP/1.1\r\nHost: " + value +
                                b"\r\nConnection: close\r\n\r\n")
                self.assertEqual(harness.parse_raw_response(data).status, 200, data)

    def test_chunk_sizes_are_hex_digits_only(self):
        for size in (b"0x2", b"+2", b" 2", b"2\0", b"\t2", b"2\0;a=b"):
            with self.subTest(size):
                data = self.raw(b"POST " + EVAL.encode() + b" HTTP/1.1\r\nHost: a\r\n"
                                b"Authorization: Bearer " + self.sdk_key.encode() +
                                b"\r\nTransfer-Encoding: chunked\r\n\r\n" + size +
                                b"\r\n{}\r\n0\r\n\r\n" + self.SMUGGLED)
                body = self.assertOfrepError(self.assertAnsweredOnceAndClosed(data), 400,
                                             "GENERAL")
                self.assertIn("chunked", body["errorDetails"])

    def test_transfer_encoding_after_a_tab_is_chunked(self):
        body = b'{"context": {"targetingKey": "u"}}'
        for separator in (b"\t", b" \t ", b""):
            with self.subTest(separator):
                data = self.raw(b"POST " + EVAL.encode() + b" HTTP/1.1\r\nHost: a\r\n"
                                b"Authorization: Bearer " + self.sdk_key.encode() +
                                b"\r\nTransfer-Encoding:" + separator + b"chunked\r\n\r\n" +
                                b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n" + self.SMUGGLED)
                self.assertEqual(data.count(b"HTTP/1.1 200"), 2, data)
