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
    code;
    status;
    notListening;
    constructor(code, message, status = 0, 
    /** Nothing listened on the socket: the request was never sent (safe to send again). */
    notListening = false) {
        super(message);
        this.code = code;
        this.status = status;
        this.notListening = notListening;
    }
}
const startedOk = Promise.resolve(null);
/** memoryd's data dir: the configured one, $MEMORYD_HOME, or memoryd's Linux/macOS default. */
export function memorydHome(configured) {
    if (configured)
        return configured;
    const env = process.env.MEMORYD_HOME?.trim();
    if (env)
        return env;
    if (process.platform === "darwin")
        return join(homedir(), "Library", "Application Support", "memoryd");
    const xdg = process.env.XDG_DATA_HOME?.trim();
    return join(xdg || join(homedir(), ".local", "share"), "memoryd");
}
/** The socket daemon.json names (it differs from <home>/memoryd.sock when that path is too long). */
export function socketPath(opts) {
    if (opts.socket)
        return opts.socket;
    const home = memorydHome(opts.home);
    try {
        const info = JSON.parse(readFileSync(join(home, "daemon.json"), "utf8"));
        if (typeof info.socket === "string" && info.socket)
            return info.socket;
    }
    catch {
        // no daemon.json: not running (yet); the default path answers or fails with ENOENT
    }
    return join(home, "memoryd.sock");
}
// Memoryd-Client values: 1-128 printable characters without @ # / (the daemon refuses others).
function clean(value) {
    if (!value)
        return undefined;
    const v = value.replace(/[@#/\s\u0000-\u001f\u007f]+/g, "_").slice(0, 128);
    return v.replace(/^_+|_+$/g, "") ? v : undefined;
}
export function clientHeader(info) {
    const out = { host: "openclaw" };
    for (const key of ["agent", "session", "channel", "sender"]) {
        const v = clean(info[key]);
        if (v)
            out[key] = v;
    }
    return JSON.stringify(out);
}
// This process's start of the daemon, shared by every caller (the recall hook starts it without waiting; a store,
// forget or capture in the same turn waits for that same start): null once it listens, else why it did not start.
let starting = null;
const START_RETRY_MS = 10_000; // a start that failed is tried again after this long, not on every call
const NOT_LISTENING = new Set(["ENOENT", "ECONNREFUSED", "ENOTDIR"]); // no daemon listens there
export class MemorydClient {
    opts;
    constructor(opts) {
        this.opts = opts;
    }
    /**
     * One request; rejects with MemorydError (code "unreachable", "timeout", or the daemon's error code). When no daemon
     * listens, it is started (`<command> daemon start`); `waitMs` > 0: the call waits up to that long for the start and
     * is then sent once more (with at least `timeoutMs` for the answer: the first one after a cold start loads the
     * models), so what the user asked to store in the first turn is stored; `waitMs` 0 (recall, within its budget):
     * the start goes on in the background for the next call.
     */
    async call(method, path, body, scope, client, timeoutMs, waitMs = 0) {
        try {
            return await this.send(method, path, body, scope, client, timeoutMs);
        }
        catch (err) {
            if (!(err instanceof MemorydError) || err.code !== "unreachable" || !err.notListening)
                throw err;
            const start = this.startDaemon();
            if (waitMs <= 0)
                throw err;
            const began = performance.now();
            const why = await Promise.race([start, new Promise((r) => setTimeout(() => r(`it did not listen within ${waitMs} ms`), waitMs).unref())]);
            if (why !== null)
                throw new MemorydError("unreachable", `memoryd is not running and could not be started: ${why}`);
            const left = waitMs - (performance.now() - began);
            return await this.send(method, path, body, scope, client, Math.max(timeoutMs, left));
        }
    }
    send(method, path, body, scope, client, timeoutMs) {
        const socket = socketPath(this.opts);
        const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
        const headers = {
            Host: "localhost",
            "Memoryd-Client": clientHeader(client),
            "Memoryd-Version": USER_AGENT,
            "User-Agent": USER_AGENT,
        };
        if (scope)
            headers["Memoryd-Scope"] = JSON.stringify(scope);
        if (payload) {
            headers["Content-Type"] = "application/json";
            headers["Content-Length"] = String(payload.length);
        }
        return new Promise((resolve, reject) => {
            let settled = false;
            const done = (err, value) => {
                if (settled)
                    return;
                settled = true;
                clearTimeout(timer);
                if (err)
                    reject(err);
                else
                    resolve(value);
            };
            const req = request({ socketPath: socket, path, method, headers }, (res) => {
                const chunks = [];
                let size = 0;
                res.on("data", (c) => {
                    size += c.length;
                    if (size > MAX_ANSWER) {
                        req.destroy();
                        done(new MemorydError("invalid_answer", `memoryd's answer is over ${MAX_ANSWER} bytes`));
                    }
                    else
                        chunks.push(c);
                });
                res.on("end", () => {
                    let data;
                    try {
                        data = JSON.parse(Buffer.concat(chunks).toString("utf8"));
                    }
                    catch {
                        return done(new MemorydError("invalid_answer", `memoryd answered ${res.statusCode} with a body that is not JSON`, res.statusCode ?? 0));
                    }
                    const status = res.statusCode ?? 0;
                    if (status >= 400) {
                        const e = data.error ?? {};
                        return done(new MemorydError(e.code ?? "http_" + status, e.message ?? `HTTP ${status}`, status));
                    }
                    done(null, data);
                });
                res.on("error", (err) => done(new MemorydError("unreachable", `memoryd's answer broke off: ${err.message}`)));
            });
            const timer = setTimeout(() => {
                req.destroy();
                done(new MemorydError("timeout", `memoryd did not answer within ${timeoutMs} ms`));
            }, timeoutMs);
            req.on("error", (err) => {
                const absent = NOT_LISTENING.has(err.code ?? "");
                const why = absent ? `memoryd is not running (no daemon at ${socket})` : `memoryd is unreachable at ${socket}: ${err.message}`;
                done(new MemorydError("unreachable", why, 0, absent));
            });
            if (payload)
                req.write(payload);
            req.end();
        });
    }
    /**
     * Start the daemon with `<command> daemon start` (which returns once the daemon listens), once per process; resolves
     * to null when it listens, or to why it could not start. Never rejects; nothing keeps OpenClaw's process alive for
     * it (a start that outlives the turn goes on by itself).
     */
    startDaemon() {
        const command = this.opts.command;
        if (!command)
            return Promise.resolve("no memoryd command is configured to start it (plugins.entries.memoryd.config.command; `memoryd install openclaw` sets it)");
        if (starting && (starting.at + START_RETRY_MS > Date.now() || starting.done === startedOk))
            return starting.done;
        const done = new Promise((resolve) => {
            let said = "";
            try {
                const env = { ...process.env, ...(this.opts.home ? { MEMORYD_HOME: this.opts.home } : {}) };
                const child = spawn(command, ["daemon", "start"], { detached: true, stdio: ["ignore", "pipe", "pipe"], env });
                for (const stream of [child.stdout, child.stderr]) {
                    stream?.on("data", (c) => (said = (said + c.toString("utf8")).slice(-2000)));
                    stream?.unref?.();
                }
                child.on("error", (err) => resolve(`${command} could not be run: ${err.message}`));
                child.on("close", (code) => {
                    const last = said.trim().split("\n").pop()?.trim();
                    resolve(code === 0 ? null : `\`${command} daemon start\` exited ${code}${last ? `: ${last}` : ""}`);
                });
                child.unref();
            }
            catch (err) {
                resolve(`${command} could not be run: ${err instanceof Error ? err.message : String(err)}`);
            }
        });
        const attempt = { at: Date.now(), done };
        const began = performance.now();
        starting = attempt;
        done.then((why) => {
            if (why === null && starting === attempt)
                starting = { at: attempt.at, done: startedOk };
            this.opts.onStart?.(Math.round(performance.now() - began), why);
        });
        return done;
    }
    health(timeoutMs) {
        return this.call("GET", "/v1/health", undefined, null, { host: "openclaw" }, timeoutMs);
    }
    recall(scope, client, query, limit, timeoutMs) {
        return this.call("POST", "/v1/recall", { query, limit }, scope, client, timeoutMs);
    }
    /** What a prompt is given: the engine's relevance decision within its token budget (the Claude Code hook's too). */
    prompt(scope, client, prompt, limit, timeoutMs) {
        return this.call("POST", "/v1/prompt", { prompt, limit, within_ms: timeoutMs }, scope, client, timeoutMs);
    }
    memorize(scope, client, body, timeoutMs, waitMs = 0) {
        return this.call("POST", "/v1/memorize", body, scope, client, timeoutMs, waitMs);
    }
    forget(scope, client, id, reason, timeoutMs, waitMs = 0) {
        return this.call("POST", "/v1/forget", reason ? { id, reason } : { id }, scope, client, timeoutMs, waitMs);
    }
}
