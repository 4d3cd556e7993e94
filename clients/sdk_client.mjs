// Drive memoryd-mcp with the official TypeScript SDK client: initialize, list tools, run a plan of calls.
//
// usage: node sdk_client.mjs PLAN.json
// PLAN: {"transport": "stdio", "command": "...", "args": [...], "cwd": "...", "env": {...}}
//    or {"transport": "http", "url": "http://127.0.0.1:PORT/mcp"}
//    plus "steps": [{"tool": NAME, "args": {...}, "capture": {"var": "field"}}, ...]
// A string argument "$var" is replaced by the value captured earlier (also inside lists).
// Prints one JSON object: {"server": ..., "capabilities": ..., "tools": [...], "steps": [...]}, where each
// step is {"tool", "isError", "structuredContent", "text"} or {"tool", "error": {"code", "message"}} when
// the SDK threw (a JSON-RPC error, or structured content that fails the tool's output schema).
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
const transport =
  plan.transport === "http"
    ? new StreamableHTTPClientTransport(new URL(plan.url))
    : new StdioClientTransport({
        command: plan.command, args: plan.args ?? [], cwd: plan.cwd, env: plan.env, stderr: "inherit",
      });
const client = new Client({ name: "memoryd-sdk-test", version: "1.0.0" });
await client.connect(transport);

const vars = {};
const subst = (v) =>
  typeof v === "string" && v.startsWith("$") ? vars[v.slice(1)]
    : Array.isArray(v) ? v.map(subst)
    : v && typeof v === "object" ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, subst(x)]))
    : v;

const out = {
  server: client.getServerVersion(),
  capabilities: client.getServerCapabilities(),
  instructions: client.getInstructions(),
  tools: (await client.listTools()).tools,
  steps: [],
};
for (const step of plan.steps ?? []) {
  try {
    const r = await client.callTool({ name: step.tool, arguments: subst(step.args ?? {}) });
    for (const [name, field] of Object.entries(step.capture ?? {})) vars[name] = r.structuredContent?.[field];
    out.steps.push({
      tool: step.tool, isError: r.isError ?? false, structuredContent: r.structuredContent ?? null,
      text: (r.content ?? []).map((c) => c.text ?? "").join(" "),
    });
  } catch (e) {
    out.steps.push({ tool: step.tool, error: { code: e.code ?? null, message: String(e.message ?? e) } });
  }
}
await client.close();
process.stdout.write(JSON.stringify(out));
