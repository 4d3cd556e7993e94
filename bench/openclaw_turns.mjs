// Drives the built OpenClaw plugin (integrations/openclaw/dist) the way OpenClaw's hook runner does, against a
// running memoryd daemon: per turn, before_prompt_build (recall) then agent_end (capture). Prints JSON timings.
// usage: node bench/openclaw_turns.mjs <plugin dist/index.js> <turns> <MEMORYD_HOME>
const [, , entry, turnsArg, home] = process.argv;
const plugin = (await import(entry)).default;
const hooks = {};
const api = {
  pluginConfig: { home, recallTimeoutMs: 200 },
  registrationMode: "full",
  logger: { info() {}, warn(m) { process.stderr.write(m + "\n"); } },
  registerTool() {}, registerMemoryCapability() {}, registerCli() {},
  on(name, fn) { hooks[name] = fn; },
};
plugin.register(api);
const turns = Number(turnsArg);
const topics = ["billing ledger", "staging deploy", "invoice renderer", "pager rotation", "nightly export",
  "search index", "auth tokens", "release train", "feature flags", "cache eviction"];
const recall = [], capture = [], injected = [];
for (let i = 0; i < turns; i++) {
  const topic = topics[i % topics.length];
  const said = i % 2
    ? `Which settings did we choose for the ${topic} in turn ${i}?`
    : `We decided the ${topic} keeps its data for ${30 + i} days and runs on PostgreSQL 16.`;
  const ctx = { agentId: "main", sessionKey: `agent:main:bench:${i}`, sessionId: `bench${i}`, trigger: "user", channel: "cli" };
  let t = performance.now();
  const r = await hooks.before_prompt_build({ prompt: said, currentUserMessage: said, messages: [] }, ctx);
  recall.push(performance.now() - t);
  injected.push(r ? 1 : 0);
  const messages = [{ role: "user", content: [{ type: "text", text: said }] }, { role: "assistant", content: [{ type: "text", text: "ok" }] }];
  t = performance.now();
  await hooks.agent_end({ messages, success: true }, ctx);
  capture.push(performance.now() - t);
}
const q = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return +s[Math.min(s.length - 1, Math.floor(p * s.length))].toFixed(1); };
console.log(JSON.stringify({ turns, recall_ms: { first: +recall[0].toFixed(1), p50: q(recall, 0.5), p95: q(recall, 0.95), max: q(recall, 1) },
  capture_ms: { first: +capture[0].toFixed(1), p50: q(capture, 0.5), p95: q(capture, 0.95), max: q(capture, 1) },
  turns_with_memories: injected.reduce((a, b) => a + b, 0) }));
