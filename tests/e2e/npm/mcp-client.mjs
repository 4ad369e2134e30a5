// mcp-client.mjs - the official MCP TypeScript SDK client against ensignd's
// POST /mcp (run by tests/e2e/test_mcp.py).
//
// argv[2] is a JSON spec: {url, org, tokens: {member, viewer, outsider},
// outsiderOrg, flag}. Each client speaks the streamable HTTP transport with
// the token as Authorization: Bearer. Prints one JSON line: what each step
// answered (tool results as the SDK returned them, thrown errors as
// {thrown, code, message}); the Python test asserts on it.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const spec = JSON.parse(process.argv[2]);

async function connect(token) {
  const transport = new StreamableHTTPClientTransport(new URL(spec.url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: "ensign-e2e", version: "0.0.0" });
  await client.connect(transport);
  return { client, transport };
}

async function attempt(fn) {
  try {
    return await fn();
  } catch (err) {
    return { thrown: true, code: err.code ?? null, message: String(err.message ?? err) };
  }
}

const out = {};
const member = await connect(spec.tokens.member);
out.protocolVersion = member.transport.protocolVersion;
out.serverVersion = member.client.getServerVersion();
out.capabilities = member.client.getServerCapabilities();
out.sessionId = member.transport.sessionId ?? null;
out.ping = await attempt(() => member.client.ping());
out.tools = (await member.client.listTools()).tools;
const names = new Set(out.tools.map((t) => t.name));
const call = (who, name, args) => attempt(() => who.client.callTool({ name, arguments: args }));

out.create = await call(member, "create_flag", {
  org: spec.org,
  slug: spec.flag,
  description: "made by a coding agent",
  tags: ["mcp"],
});
out.enable = await call(member, "update_flag_environment", {
  org: spec.org,
  flag: spec.flag,
  environment: "production",
  changes: { enabled: true },
});
out.get = await call(member, "get_flag", { org: spec.org, flag: spec.flag });
// Evaluated once the snapshot serves the change (bounded: 10 s).
for (const deadline = Date.now() + 10000; ; ) {
  out.evaluate = await call(member, "evaluate_flag", {
    org: spec.org,
    environment: "production",
    context: { targetingKey: "user-1" },
    flags: [spec.flag],
  });
  const item = out.evaluate.structuredContent?.flags?.[0];
  if (item?.value === true || Date.now() > deadline) break;
  await new Promise((resolve) => setTimeout(resolve, 100));
}
out.listFlags = await call(member, "list_flags", { org: spec.org });
out.stale = await call(member, "list_stale_flags", { org: spec.org });
out.invalid = await call(member, "create_flag", { org: spec.org, slug: "Not A Key!" });
out.missing = await call(member, "get_flag", { org: spec.org, flag: "no-such-flag" });
out.unknownTool = await call(member, "no_such_tool", { org: spec.org });
out.missingOrg = await call(member, "list_flags", {});

const viewer = await connect(spec.tokens.viewer);
out.viewerWrite = await call(viewer, "update_flag_environment", {
  org: spec.org,
  flag: spec.flag,
  environment: "production",
  changes: { enabled: false },
});
out.viewerRead = await call(viewer, "get_flag", { org: spec.org, flag: spec.flag });

const outsider = await connect(spec.tokens.outsider);
out.outsiderList = await call(outsider, "list_flags", { org: spec.org });
out.outsiderGet = await call(outsider, "get_flag", { org: spec.org, flag: spec.flag });
out.outsiderWrite = await call(outsider, "archive_flag", { org: spec.org, flag: spec.flag });
out.outsiderOwn = await call(outsider, "list_flags", { org: spec.outsiderOrg });

out.afterOthers = await call(member, "get_flag", { org: spec.org, flag: spec.flag });

// Last, as they change the flag: a scheduled change and a rollback to the
// creation's revision, where this build has those routes.
if (names.has("schedule_change")) {
  out.schedule = await call(member, "schedule_change", {
    org: spec.org,
    flag: spec.flag,
    at: new Date(Date.now() + 3600 * 1000).toISOString(),
    environment: "production",
    changes: { enabled: false },
  });
}
if (names.has("restore_revision")) {
  const detail = out.get.structuredContent;
  const created = detail.revisions[detail.revisions.length - 1];
  out.restore = await call(member, "restore_revision", {
    org: spec.org,
    flag: spec.flag,
    revision: String(created.id),
  });
}

for (const c of [member, viewer, outsider]) await c.client.close();
process.stdout.write(JSON.stringify(out) + "\n");
