"""test_mcp.py - end-to-end tests of POST /mcp (doc/choices.md "MCP"), the
Model Context Protocol's streamable HTTP transport for coding agents.

McpSdkTest runs the official TypeScript SDK client
(@modelcontextprotocol/sdk, tests/e2e/npm/mcp-client.mjs, like
test_evaluation.py runs the OpenFeature SDKs): initialize, the tools and
their schemas, a flag created and enabled and read back, evaluated once
served, the stale flags listed (only the stale one where this build knows
staleness), a viewer's write refused as a tool error, a token of another
organization seeing nothing of acme's, a change scheduled (where the
schedules route exists) and the creation's revision restored; and what the
tool calls did, seen through the REST API and the audit log (as the
token's user).

McpProtocolTest speaks the transport by hand: version negotiation,
notifications (202), ping, JSON-RPC errors (-32700, -32600, -32601,
-32602), batches, credentials (401, no cookies), the Origin, media types
(415, 406), MCP-Protocol-Version, GET and DELETE (405), bounds (413,
nesting), and scopes (a token without the flags write scope).

Run by tests/e2e/run (each class has its own database and ensignd).
"""

import json
import shutil
import subprocess
import unittest

import harness
from test_evaluation import npm_workdir
from test_members import OrgTestCase

JSON_HEADERS = {"Content-Type": "application/json",
                "Accept": "application/json, text/event-stream"}
NEWEST = "2025-11-25"


def production_enabled(detail):
    """enabled of production in a flag detail."""
    return next(e for e in detail["environments"] if e["key"] == "production")["enabled"]


class McpCase(OrgTestCase):

    def mcp(self, message, token="member", headers=None, raw=None, method="POST"):
        """One POST /mcp; message is sent as JSON, raw as bytes."""
        h = dict(JSON_HEADERS)
        if token is not None:
            h["Authorization"] = f"Bearer {self.tokens.get(token, token)}"
        h.update(headers or {})
        body = raw if raw is not None else (json.dumps(message).encode()
                                            if message is not None else None)
        return self.server.request(method, "/mcp", body=body, headers=h)

    def rpc(self, method, params=None, id_=1, **kwargs):
        message = {"jsonrpc": "2.0", "id": id_, "method": method}
        if params is not None:
            message["params"] = params
        return self.mcp(message, **kwargs)

    def assertRpcError(self, response, status, code, id_=None):
        self.assertEqual(response.status, status, response)
        self.assertTrue(response.content_type.startswith("application/json"), response)
        body = response.json
        self.assertEqual(body["jsonrpc"], "2.0", body)
        self.assertEqual(body["id"], id_, body)
        self.assertEqual(body["error"]["code"], code, body)
        self.assertIsInstance(body["error"]["message"], str)
        self.assertNotIn("result", body)
        return body["error"]

    def result(self, response, id_=1):
        self.assertEqual(response.status, 200, response)
        self.assertEqual(response.content_type, "application/json", response)
        body = response.json
        self.assertEqual(body["jsonrpc"], "2.0")
        self.assertEqual(body["id"], id_)
        self.assertNotIn("error", body, body)
        return body["result"]

    def tool(self, name, arguments, token="member"):
        return self.result(self.rpc("tools/call", {"name": name, "arguments": arguments},
                                    token=token))

    def flag_keys(self, token="viewer"):
        flags = self.assertStatus(self.call("GET", "/acme/flags", token), 200)["flags"]
        return {f["key"] for f in flags}


class McpSdkTest(McpCase):
    """The official MCP TypeScript SDK client over HTTP."""

    settings = {"refresh_interval_ms": 200}

    def run_client(self):
        workdir = npm_workdir()
        try:
            spec = {
                "url": f"http://127.0.0.1:{self.server.port}/mcp",
                "org": "acme",
                "outsiderOrg": "globex",
                "flag": "agent-made",
                "tokens": {k: self.tokens[k] for k in ("member", "viewer", "outsider")},
            }
            proc = subprocess.run(["node", "mcp-client.mjs", json.dumps(spec)], cwd=workdir,
                                  capture_output=True, text=True, timeout=120)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            return json.loads(proc.stdout.strip().splitlines()[-1])
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def assertToolOk(self, result):
        self.assertNotIn("thrown", result, result)
        self.assertFalse(result.get("isError"), result)
        self.assertEqual(result["content"][0]["type"], "text")
        self.assertEqual(json.loads(result["content"][0]["text"]), result["structuredContent"])
        return result["structuredContent"]

    def assertToolError(self, result, text=None):
        self.assertNotIn("thrown", result, result)
        self.assertTrue(result["isError"], result)
        message = result["content"][0]["text"]
        if text is not None:
            self.assertIn(text, message, result)
        return result["structuredContent"]["error"]

    def make_old_flag(self):
        """old-flag, created 40 days ago and never evaluated: stale where
        this build knows staleness (stale_after_days 30)."""
        self.assertStatus(self.call("POST", "/acme/flags", "member",
                                    body={"slug": "old-flag"}), 201)
        self.database.query("UPDATE flags SET created_at = now() - interval '40 days'"
                            " WHERE key = 'old-flag'")

    def test_sdk_client(self):
        self.make_old_flag()
        out = self.run_client()
        # initialize: the newest version both speak; tools; no session.
        self.assertEqual(out["protocolVersion"], NEWEST)
        self.assertEqual(out["serverVersion"]["name"], "ensign")
        self.assertIn("tools", out["capabilities"])
        self.assertIsNone(out["sessionId"])
        self.assertEqual(out["ping"], {})
        tools = {t["name"]: t for t in out["tools"]}
        for name in ("create_flag", "update_flag_environment", "add_rule", "archive_flag",
                     "restore_flag", "create_segment", "list_flags", "get_flag", "flag_usage",
                     "list_stale_flags", "list_segments", "list_environments", "evaluate_flag",
                     "restore_revision"):
            self.assertIn(name, tools)
        for tool in tools.values():
            schema = tool["inputSchema"]
            self.assertEqual(schema["type"], "object", tool)
            self.assertIn("org", schema["properties"], tool)
            self.assertIn("org", schema["required"], tool)
        # create_flag's schema is the REST row's request schema (slug, type, variants).
        create = tools["create_flag"]["inputSchema"]
        for member in ("slug", "type", "variants", "tags"):
            self.assertIn(member, create["properties"])
        self.assertIn("changes", tools["update_flag_environment"]["inputSchema"]["required"])

        # Created and enabled through the REST operations, as the member.
        flag = self.assertToolOk(out["create"])
        self.assertEqual(flag["flag"]["key"], "agent-made", flag)
        self.assertToolOk(out["enable"])
        detail = self.assertToolOk(out["get"])  # read right after
        self.assertEqual(detail["flag"]["key"], "agent-made")
        self.assertEqual(production_enabled(detail), True, detail)
        actors = self.database.query(
            "SELECT string_agg(DISTINCT u.email, ',') FROM audit_events a"
            " JOIN users u ON u.id = a.actor_id WHERE a.summary LIKE '%agent-made%'")
        self.assertEqual(actors, "mel@example.com")
        listed = self.assertToolOk(out["listFlags"])
        self.assertIn("agent-made", {f["key"] for f in listed["flags"]})
        stale = self.assertToolOk(out["stale"])
        if "stale" in listed["flags"][0]:  # this build knows staleness
            self.assertEqual([f["key"] for f in stale["flags"]], ["old-flag"], stale)
            self.assertEqual(stale["flags"][0]["stale"]["reason"], "never_evaluated", stale)
        else:
            self.assertIn("flags", stale)
        # Evaluated as OFREP serves production (the client waits for the snapshot).
        evaluated = self.assertToolOk(out["evaluate"])["flags"]
        self.assertEqual(len(evaluated), 1, evaluated)
        self.assertEqual(evaluated[0]["key"], "agent-made", evaluated)
        self.assertEqual((evaluated[0]["value"], evaluated[0]["variant"]), (True, "on"),
                         evaluated)

        # Errors of the REST operation are tool errors with its message.
        invalid = self.assertToolError(out["invalid"])
        self.assertEqual(invalid["status"], 422, invalid)
        self.assertIn("slug", invalid["errors"], invalid)
        self.assertEqual(self.assertToolError(out["missing"])["status"], 404)
        # Protocol errors are JSON-RPC errors (the SDK throws them).
        self.assertEqual(out["unknownTool"]["code"], -32602, out["unknownTool"])
        self.assertEqual(out["missingOrg"]["code"], -32602, out["missingOrg"])

        # A viewer reads but may not write; nothing changed.
        self.assertEqual(self.assertToolError(out["viewerWrite"])["status"], 403)
        self.assertEqual(self.assertToolOk(out["viewerRead"])["flag"]["key"], "agent-made")
        after = self.assertToolOk(out["afterOthers"])
        self.assertEqual(production_enabled(after), True, after)

        # Another organization's token sees nothing of acme's, and changes nothing.
        for step in ("outsiderList", "outsiderGet", "outsiderWrite"):
            error = self.assertToolError(out[step])
            self.assertEqual(error["status"], 404, (step, error))
            self.assertNotIn("agent-made", json.dumps(out[step]))
        self.assertNotIn("agent-made", {f["key"] for f in self.assertToolOk(out["outsiderOwn"])
                                        ["flags"]})
        self.assertIsNone(after["flag"]["archivedAt"], after)
        self.assertEqual(len(after["revisions"]), 2, after)  # created, enabled: no more

        if "schedule_change" in tools:
            schedule = self.assertToolOk(out["schedule"])["schedule"]
            self.assertEqual(schedule["status"], "pending", schedule)
            self.assertEqual(schedule["changes"], {"enabled": False}, schedule)
        self.assertToolOk(out["restore"])
        detail = self.assertStatus(self.call("GET", "/acme/flags/agent-made", "viewer"), 200)
        self.assertEqual(production_enabled(detail), False, detail)  # as created
        self.assertEqual(detail["revisions"][0]["action"], "flag.revision_restored", detail)
        self.assertEqual(self.server.sanitizer_reports(), [])


class McpProtocolTest(McpCase):
    """The transport and JSON-RPC by hand."""

    settings = {"max_body_bytes": 65536}

    def test_initialize_negotiates_the_version(self):
        for asked, answered in (("2025-06-18", "2025-06-18"), (NEWEST, NEWEST),
                                ("2024-11-05", NEWEST), ("2099-01-01", NEWEST)):
            with self.subTest(asked=asked):
                result = self.result(self.rpc("initialize", {
                    "protocolVersion": asked, "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"}}))
                self.assertEqual(result["protocolVersion"], answered)
                self.assertEqual(result["capabilities"]["tools"], {"listChanged": False})
                self.assertEqual(result["serverInfo"]["name"], "ensign")
        self.assertRpcError(self.rpc("initialize", {}), 200, -32602, 1)
        self.assertRpcError(self.rpc("initialize"), 200, -32602, 1)

    def test_notifications_and_responses_are_accepted(self):
        for message in ({"jsonrpc": "2.0", "method": "notifications/initialized"},
                        {"jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": {"requestId": 1}},
                        {"jsonrpc": "2.0", "id": 5, "result": {}}):
            with self.subTest(message=message):
                response = self.mcp(message)
                self.assertEqual(response.status, 202, response)
                self.assertEqual(response.body, b"")

    def test_ping_and_string_ids(self):
        self.assertEqual(self.result(self.rpc("ping", id_="p-1"), "p-1"), {})
        self.assertEqual(self.result(self.rpc("ping", {}, id_=0), 0), {})

    def test_tools_list(self):
        tools = self.result(self.rpc("tools/list"))["tools"]
        names = [t["name"] for t in tools]
        self.assertEqual(len(names), len(set(names)))
        self.assertIn("list_environments", names)
        for tool in tools:
            self.assertEqual(set(tool) - {"annotations"}, {"name", "description",
                                                           "inputSchema"}, tool)
            self.assertIn("Runs ", tool["description"])
        envs = self.tool("list_environments", {"org": "acme"})
        self.assertFalse(envs["isError"], envs)
        keys = [e["key"] for e in envs["structuredContent"]["environments"]]
        self.assertEqual(keys, ["production", "preview", "development"])

    def test_parse_errors(self):
        for raw in (b"{", b"not json", b"", b"{\"jsonrpc\":\"2.0\",}", b"\xff\xfe",
                    b"[" * 70 + b"]" * 70):
            with self.subTest(raw=raw[:20]):
                self.assertRpcError(self.mcp(None, raw=raw), 400, -32700)

    def test_invalid_requests(self):
        # Not a message, or a batch (no batches since MCP 2025-06-18): no id to echo.
        for message in ([], [{"jsonrpc": "2.0", "id": 1, "method": "ping"}], "ping", {},
                        {"jsonrpc": "2.0", "id": None, "method": "ping"},
                        {"jsonrpc": "2.0", "id": {}, "method": "ping"},
                        {"jsonrpc": "2.0", "id": 1.5, "method": "ping"}):
            with self.subTest(message=message):
                self.assertRpcError(self.mcp(message), 400, -32600)
        # A message with a usable id has it echoed.
        for message in ({"id": 1, "method": "ping"},
                        {"jsonrpc": "1.0", "id": 1, "method": "ping"},
                        {"jsonrpc": "2.0", "id": 1, "method": 3},
                        {"jsonrpc": "2.0", "id": 1, "method": ""},
                        {"jsonrpc": "2.0", "id": 1}):
            with self.subTest(message=message):
                self.assertRpcError(self.mcp(message), 400, -32600, 1)
        self.assertRpcError(self.mcp({"jsonrpc": "2.0", "id": 4, "method": "ping",
                                      "params": [1]}), 400, -32600, 4)
        # A name twice in one object is refused, not silently collapsed.
        self.assertRpcError(self.mcp(None, raw=b'{"jsonrpc":"2.0","id":1,"id":2,'
                                                b'"method":"ping"}'), 400, -32600)

    def test_unknown_method_and_bad_params(self):
        self.assertRpcError(self.rpc("resources/list", id_=7), 200, -32601, 7)
        self.assertRpcError(self.rpc("tools/call", {}), 200, -32602, 1)
        self.assertRpcError(self.rpc("tools/call", {"name": 3}), 200, -32602, 1)
        self.assertRpcError(self.rpc("tools/call", {"name": "list_flags", "arguments": []}),
                            200, -32602, 1)
        error = self.assertRpcError(self.rpc("tools/call", {"name": "drop_database"}), 200,
                                    -32602, 1)
        self.assertIn("unknown tool", error["message"])
        error = self.assertRpcError(self.rpc("tools/call", {"name": "get_flag",
                                                            "arguments": {"org": "acme"}}),
                                    200, -32602, 1)
        self.assertIn("flag is required", error["message"])
        error = self.assertRpcError(self.rpc("tools/call", {
            "name": "list_environments", "arguments": {"org": "acme", "extra": 1}}), 200,
            -32602, 1)
        self.assertIn("extra", error["message"])

    def test_credentials(self):
        for token in (None, "svc_oat_nope", "not a token"):
            with self.subTest(token=token):
                response = self.rpc("ping", token=token)
                self.assertEqual(response.status, 401, response)
                self.assertIn("Bearer", response.headers.get("WWW-Authenticate", ""))
        # A browser session is no credential here (bearer tokens only).
        login = self.server.request("POST", "/v1/session", body={
            "email": self.identity.email, "password": "x"})
        self.assertIn(login.status, (200, 401), login)
        response = self.rpc("ping", token=None, headers={"Cookie": "ensign_session=abc"})
        self.assertEqual(response.status, 401, response)

    def test_foreign_origin_is_refused(self):
        response = self.rpc("ping", headers={"Origin": "https://evil.example"})
        self.assertEqual(response.status, 403, response)
        port = self.server.port
        self.result(self.rpc("ping", headers={"Origin": f"http://127.0.0.1:{port}",
                                              "Host": f"127.0.0.1:{port}"}))

    def test_media_types(self):
        self.assertRpcError(self.rpc("ping", headers={"Content-Type": "text/plain"}), 415,
                            -32600)
        self.assertRpcError(self.rpc("ping", headers={"Accept": "text/html"}), 406, -32600)
        self.assertRpcError(self.rpc("ping", headers={"Accept": "image/png, text/html;q=0.5"}),
                            406, -32600)
        self.result(self.rpc("ping", headers={"Accept": "*/*"}))
        self.result(self.rpc("ping", headers={"Content-Type": "application/json; charset=utf-8"}))

    def test_event_stream_answer(self):
        """A client that takes only an event stream gets one message event."""
        stream = {"Accept": "text/event-stream"}
        response = self.rpc("tools/call", {"name": "list_environments",
                                           "arguments": {"org": "acme"}}, id_=3, headers=stream)
        self.assertEqual(response.status, 200, response)
        self.assertEqual(response.content_type, "text/event-stream", response)
        text = response.body.decode()
        self.assertTrue(text.startswith("event: message\ndata: ") and text.endswith("\n\n"),
                        text)
        message = json.loads(text[len("event: message\ndata: "):])
        self.assertEqual(message["id"], 3)
        self.assertFalse(message["result"]["isError"], message)
        error = self.rpc("nope", id_=4, headers=stream)
        self.assertEqual(error.content_type, "text/event-stream", error)
        self.assertIn('"code":-32601', error.body.decode())
        # Errors of the message itself stay JSON with their status; 202 stays empty.
        self.assertRpcError(self.mcp(None, raw=b"{", headers=stream), 400, -32700)
        accepted = self.mcp({"jsonrpc": "2.0", "method": "notifications/initialized"},
                            headers=stream)
        self.assertEqual((accepted.status, accepted.body), (202, b""))
        # A family range takes the stream too.
        family = self.rpc("ping", headers={"Accept": "text/*"})
        self.assertEqual(family.content_type, "text/event-stream", family)
        # Both accepted: JSON.
        self.result(self.rpc("ping", headers={"Accept": "text/event-stream, application/json"}))

    def test_protocol_version_header(self):
        self.result(self.rpc("ping", headers={"MCP-Protocol-Version": "2025-06-18"}))
        self.assertRpcError(self.rpc("ping", headers={"MCP-Protocol-Version": "1999-01-01"}),
                            400, -32600, 1)
        response = self.mcp({"jsonrpc": "2.0", "method": "notifications/initialized"},
                            headers={"MCP-Protocol-Version": "bogus"})
        self.assertEqual(response.status, 400, response)

    def test_other_methods_are_405(self):
        for method in ("GET", "DELETE", "PUT"):
            with self.subTest(method=method):
                response = self.server.request(method, "/mcp", headers={
                    "Accept": "text/event-stream",
                    "Authorization": f"Bearer {self.tokens['member']}"})
                self.assertEqual(response.status, 405, response)
                self.assertIn("POST", response.headers.get("Allow", ""))

    def test_oversized_body_is_413(self):
        padding = "x" * 70000
        response = self.rpc("ping", {"pad": padding})
        self.assertEqual(response.status, 413, response)
        self.result(self.rpc("ping", {"pad": "x" * 1000}))

    def test_scopes_and_roles_are_the_routes(self):
        # alice's token without --full has no flags write scope (readonly).
        result = self.tool("create_flag", {"org": "acme", "slug": "scoped"}, token="readonly")
        self.assertTrue(result["isError"], result)
        self.assertEqual(result["structuredContent"]["error"]["status"], 403, result)
        result = self.tool("create_flag", {"org": "acme", "slug": "by-viewer"}, token="viewer")
        self.assertTrue(result["isError"], result)
        self.assertEqual(result["structuredContent"]["error"]["status"], 403, result)
        self.assertFalse({"scoped", "by-viewer"} & self.flag_keys())
        # The member's call goes through, and the organization token's too.
        result = self.tool("create_flag", {"org": "acme", "slug": "by-member"})
        self.assertFalse(result["isError"], result)
        self.assertIn("by-member", self.flag_keys())
        revisions = self.database.query(
            "SELECT count(*) FROM revisions r JOIN flags f ON f.id = r.flag_id"
            " WHERE f.key = 'by-member'")
        self.assertEqual(revisions, "1")

    def test_segments_and_rules_tools(self):
        result = self.tool("create_segment", {"org": "acme", "key": "beta", "name": "Beta",
                                              "conditions": [{"attribute": "plan",
                                                              "operator": "eq",
                                                              "values": ["beta"]}]})
        self.assertFalse(result["isError"], result)
        self.tool("create_flag", {"org": "acme", "slug": "ruled"})
        result = self.tool("add_rule", {"org": "acme", "flag": "ruled",
                                        "environment": "preview",
                                        "rule": {"serve": {"variant": "on"},
                                                 "conditions": [{"segment": "beta"}]}})
        self.assertFalse(result["isError"], result)
        segments = self.tool("list_segments", {"org": "acme"}, token="viewer")
        self.assertIn("beta", json.dumps(segments["structuredContent"]))
        for name in ("archive_flag", "restore_flag"):
            result = self.tool(name, {"org": "acme", "flag": "ruled"})
            self.assertFalse(result["isError"], (name, result))
        usage = self.tool("flag_usage", {"org": "acme", "flag": "ruled"}, token="viewer")
        self.assertFalse(usage["isError"], usage)

    def test_list_flags_pages_and_searches_on_the_server(self):
        for key in ("page-a", "page-b", "page-c", "page-d", "other-e"):
            self.assertFalse(self.tool("create_flag", {"org": "acme", "slug": key})["isError"])
        seen, cursor, calls = [], None, 0
        while True:
            arguments = {"org": "acme", "q": "page-", "limit": 3}
            if cursor is not None:
                arguments["cursor"] = cursor
            result = self.tool("list_flags", arguments, token="viewer")
            self.assertFalse(result["isError"], result)
            page = result["structuredContent"]
            self.assertEqual(json.loads(result["content"][0]["text"]), page)
            seen += [f["key"] for f in page["flags"]]
            cursor = page.get("nextCursor")
            calls += 1
            if cursor is None:
                break
        self.assertEqual((seen, calls), (["page-a", "page-b", "page-c", "page-d"], 2))
        # one page of everything: no nextCursor
        result = self.tool("list_flags", {"org": "acme", "limit": 1000}, token="viewer")
        self.assertNotIn("nextCursor", result["structuredContent"])
        self.assertIn("other-e", [f["key"] for f in result["structuredContent"]["flags"]])
        # the REST answer's 422s are tool errors: a bad limit, a cursor of another q
        first = self.tool("list_flags", {"org": "acme", "q": "page-", "limit": 1}, token="viewer")
        foreign = first["structuredContent"]["nextCursor"]
        for arguments in ({"limit": 0}, {"limit": 1001}, {"cursor": foreign},
                          {"q": "other", "cursor": foreign}):
            with self.subTest(arguments=arguments):
                result = self.tool("list_flags", {"org": "acme", **arguments}, token="viewer")
                self.assertTrue(result["isError"], result)
                self.assertEqual(result["structuredContent"]["error"]["status"], 422, result)
        self.assertRpcError(self.rpc("tools/call", {"name": "list_flags", "arguments": {
            "org": "acme", "limit": "3"}}, token="viewer"), 200, -32602, 1)


if __name__ == "__main__":
    unittest.main()
