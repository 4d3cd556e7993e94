// The memoryd local API (docs/LOCAL_API.md, api 1): HTTP/1.1 over the daemon's Unix socket.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { request } from "node:http";
import { homedir } from "node:os";
import { join } from "node:path";

export const PLUGIN_VERSION = "0.1.0";
const USER_AGENT = `openclaw-memoryd/${PLUGIN_VERSION}; api=1`;
const MAX_ANSWER = 4 * 1024 * 1024;

/** Why a call did not give an answer: the daemon is absent, slow, or said no. */
export class MemorydError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status = 0,
  ) {
    super(message);
  }
}

export type Scope = { cwd: string } | { workspace: string; repository: string };
/** Memoryd-Client: who is asking (recorded with every write). */
export type ClientInfo = { host: "openclaw"; agent?: string; session?: string; channel?: string; sender?: string };

export type RecallItem = { id: string; type: string; title?: string | null; content: string; scope?: string; score?: number };
export type MemorizeAnswer = { id: string | null; effect: string; status?: string; reason?: string };

export type ClientOptions = { home?: string; socket?: string; command?: string };

/** memoryd's data dir: the configured one, $MEMORYD_HOME, or memoryd's Linux/macOS default. */
export function memorydHome(configured?: string): string {
  if (configured) return configured;
  const env = process.env.MEMORYD_HOME?.trim();
  if (env) return env;
  if (process.platform === "darwin") return join(homedir(), "Library", "Application Support", "memoryd");
  const xdg = process.env.XDG_DATA_HOME?.trim();
  return join(xdg || join(homedir(), ".local", "share"), "memoryd");
}

/** The socket daemon.json names (it differs from <home>/memoryd.sock when that path is too long). */
export function socketPath(opts: ClientOptions): string {
  if (opts.socket) return opts.socket;
  const home = memorydHome(opts.home);
  try {
    const info = JSON.parse(readFileSync(join(home, "daemon.json"), "utf8")) as { socket?: unknown };
    if (typeof info.socket === "string" && info.socket) return info.socket;
  } catch {
    // no daemon.json: not running (yet); the default path answers or fails with ENOENT
  }
  return join(home, "memoryd.sock");
}

// Memoryd-Client values: 1-128 printable characters without @ # / (the daemon refuses others).
function clean(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const v = value.replace(/[@#/\s\u0000-\u001f\u007f]+/g, "_").slice(0, 128);
  return v.replace(/^_+|_+$/g, "") ? v : undefined;
}

export function clientHeader(info: ClientInfo): string {
  const out: Record<string, string> = { host: "openclaw" };
  for (const key of ["agent", "session", "channel", "sender"] as const) {
    const v = clean(info[key]);
    if (v) out[key] = v;
  }
  return JSON.stringify(out);
}

let startAttempted = false;

export class MemorydClient {
  constructor(readonly opts: ClientOptions) {}

  /** One request; rejects with MemorydError (code "unreachable", "timeout", or the daemon's error code). */
  call<T>(method: "GET" | "POST", path: string, body: unknown, scope: Scope | null, client: ClientInfo, timeoutMs: number): Promise<T> {
    const socket = socketPath(this.opts);
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const headers: Record<string, string> = {
      Host: "localhost",
      "Memoryd-Client": clientHeader(client),
      "Memoryd-Version": USER_AGENT,
      "User-Agent": USER_AGENT,
    };
    if (scope) headers["Memoryd-Scope"] = JSON.stringify(scope);
    if (payload) {
      headers["Content-Type"] = "application/json";
      headers["Content-Length"] = String(payload.length);
    }
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const done = (err: MemorydError | null, value?: T) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err) reject(err);
        else resolve(value as T);
      };
      const req = request({ socketPath: socket, path, method, headers }, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (c: Buffer) => {
          size += c.length;
          if (size > MAX_ANSWER) {
            req.destroy();
            done(new MemorydError("invalid_answer", `memoryd's answer is over ${MAX_ANSWER} bytes`));
          } else chunks.push(c);
        });
        res.on("end", () => {
          let data: unknown;
          try {
            data = JSON.parse(Buffer.concat(chunks).toString("utf8"));
          } catch {
            return done(new MemorydError("invalid_answer", `memoryd answered ${res.statusCode} with a body that is not JSON`, res.statusCode ?? 0));
          }
          const status = res.statusCode ?? 0;
          if (status >= 400) {
            const e = (data as { error?: { code?: string; message?: string } }).error ?? {};
            return done(new MemorydError(e.code ?? "http_" + status, e.message ?? `HTTP ${status}`, status));
          }
          done(null, data as T);
        });
        res.on("error", (err) => done(new MemorydError("unreachable", `memoryd's answer broke off: ${err.message}`)));
      });
      const timer = setTimeout(() => {
        req.destroy();
        done(new MemorydError("timeout", `memoryd did not answer within ${timeoutMs} ms`));
      }, timeoutMs);
      req.on("error", (err: NodeJS.ErrnoException) => {
        const why = err.code === "ENOENT" || err.code === "ECONNREFUSED" ? `memoryd is not running (no daemon at ${socket})` : `memoryd is unreachable at ${socket}: ${err.message}`;
        if (err.code === "ENOENT" || err.code === "ECONNREFUSED") this.startDaemon();
        done(new MemorydError("unreachable", why));
      });
      if (payload) req.write(payload);
      req.end();
    });
  }

  /** Start the daemon in the background (once per process) when a `command` is configured; never waits. */
  startDaemon(): void {
    if (startAttempted || !this.opts.command) return;
    startAttempted = true;
    try {
      const env = { ...process.env, ...(this.opts.home ? { MEMORYD_HOME: this.opts.home } : {}) };
      const child = spawn(this.opts.command, ["daemon", "start"], { detached: true, stdio: "ignore", env });
      child.on("error", () => undefined);
      child.unref();
    } catch {
      // fail open: the next call reports the daemon as unreachable again
    }
  }

  health(timeoutMs: number) {
    return this.call<{ ok: boolean; version: string; api: number }>("GET", "/v1/health", undefined, null, { host: "openclaw" }, timeoutMs);
  }
  recall(scope: Scope, client: ClientInfo, query: string, limit: number, timeoutMs: number) {
    return this.call<{ items: RecallItem[] }>("POST", "/v1/recall", { query, limit }, scope, client, timeoutMs);
  }
  /** What a prompt is given: the engine's relevance decision within its token budget (the Claude Code hook's too). */
  prompt(scope: Scope, client: ClientInfo, prompt: string, limit: number, timeoutMs: number) {
    return this.call<{ items: RecallItem[]; text: string }>("POST", "/v1/prompt", { prompt, limit, within_ms: timeoutMs }, scope, client, timeoutMs);
  }
  memorize(scope: Scope, client: ClientInfo, body: { content: string; type?: string; title?: string; tags?: string[]; source?: string }, timeoutMs: number) {
    return this.call<MemorizeAnswer>("POST", "/v1/memorize", body, scope, client, timeoutMs);
  }
  forget(scope: Scope, client: ClientInfo, id: string, reason: string | undefined, timeoutMs: number) {
    return this.call<{ id: string; effect: string; reason?: string }>("POST", "/v1/forget", reason ? { id, reason } : { id }, scope, client, timeoutMs);
  }
}
