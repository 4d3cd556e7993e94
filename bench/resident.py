#!/usr/bin/env python3
"""The resident memoryd (issue 21): what a person waits for, daemon warm vs today's per-process path, in one run.

On a store of --size memories (default 10 000, real USE vectors; kept in --root between runs) in a git
checkout with an `origin` remote, each measure is the median of --runs runs (default 15), the two
paths interleaved run by run:

* hooks, spawned as Claude Code spawns them (`memoryd hook <event>`, the hook JSON on stdin, spawn to
  exit): UserPromptSubmit (a new session and prompt each run; the daemon with the full semantic
  recall, per-process with its model wait), SessionStart, PreToolUse on a memory tool (scope pinning,
  git) and on Read (the file hook);
* the first answered recall of a new agent session: `memoryd-mcp` spawned, `initialize`, one
  `mem_search`, spawn to answer; per-process, daemon warm, and daemon cold (stopped before each
  run: its start, engine open and model load included);
* memory: total RSS (and PSS) of 8 concurrent agent sessions (each a `memoryd-mcp` that answered a
  recall) against one session's, both paths;
* the CLI: `memoryd recall` and `memoryd memorize` answered by the running daemon vs in-process (spawn to exit;
  --cli-only: this alone; --before REV: also an older revision's CLI through its own warm daemon, interleaved);
* RSS of the daemon after --calls calls (a mix: 1 recall, 1 memorize, 1 prompt context (what
  UserPromptSubmit asks), 1 file context (PreToolUse on Read) and 6 health checks in every 10), sampled along the way.
* --startup-only [--before REV]: `memoryd-mcp --version`, spawn to exit, against `python -c pass` (and REV's, in the
  same interleaved runs; no store needed).

    nice -n 10 .venv/bin/python bench/resident.py --json bench/results/resident.json
    .venv/bin/python bench/resident.py --size 1000 --runs 5 --calls 2000      # a quick look
    .venv/bin/python bench/resident.py --startup-only --runs 30 --before main  # memoryd-mcp --version, before/after
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PY = sys.executable
BIN = Path(sys.executable).parent
MEMORYD, MCP = str(BIN / "memoryd"), str(BIN / "memoryd-mcp")
TARGETS = {"UserPromptSubmit": 0.060, "SessionStart": 0.080, "PreToolUse (memory tool)": 0.040,
           "PreToolUse (Read, file hook)": 0.040}  # fmt: skip
PROMPTS = ["which database does svc_{n} use now?", "how is the redis client configured for svc_{n}?",
           "what did we decide about the cache of svc_{n}?", "我们用什么管理 svc_{n} 的依赖？",
           "what must run before deploying svc_{n}?", "svc_{n} 的连接池上限是多少？"]  # fmt: skip


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", HERE / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def fill(home: Path, repo: Path, size: int) -> dict[str, Any]:
    """hooks_latency's store (the same kinds and texts), with real USE vectors (embedded in batches)."""
    mark = home / f".resident-filled-{size}"
    if mark.exists():
        return dict(json.loads(mark.read_text()))
    hl = _load("hooks_latency")
    lat = _load("latency")
    from memoryd.engine import Engine
    from memoryd.search.embed import UseEmbedder
    from memoryd.shared.config import Settings

    rnd = random.Random(7)
    kinds = [("fact", 40), ("preference", 20), ("decision", 20), ("constraint", 15), ("handoff", 5)]
    bag = [k for k, w in kinds for _ in range(w)]
    items = []
    for i in range(size):
        kind = rnd.choice(bag)
        items.append((kind, rnd.choice(hl.TEMPLATES[kind]).format(x=rnd.choice(hl.WORDS), n=i, p=3000 + i % 5000)))
    started = time.perf_counter()
    use = UseEmbedder()
    texts = [t for _, t in items]
    import numpy as np

    bank = np.concatenate([use.passages(texts[i : i + 64]) for i in range(0, len(texts), 64)])
    table = {t: bank[i] for i, t in enumerate(texts)}
    embedder = lat._Precomputed(use, table)
    with Engine.open(Settings(home=home), cwd=repo, embedder=embedder) as engine:
        for kind, text in items:
            if kind == "handoff":
                engine.handoff(text, source="bench")
            else:
                engine.memorize(text, source="user", gate="trusted", type=None if kind == "constraint" else kind)
        atoms = engine.stats().atoms
    info = {"size": size, "atoms": atoms, "fill_seconds": round(time.perf_counter() - started, 1)}
    hl.anchor_fill(home, repo)
    mark.write_text(json.dumps(info))
    return info


def env_for(home: Path, daemon: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env.pop("ANTHROPIC_API_KEY", None)
    return {**env, "MEMORYD_HOME": str(home), "MEMORYD_DAEMON": "on" if daemon else "off",
            "MEMORYD_DAEMON_IDLE": "0"}  # fmt: skip


def spawn(cmd: list[str], stdin: str, env: dict[str, str], cwd: Path) -> tuple[float, str]:
    dt, out, _ = spawn_cpu(cmd, stdin, env, cwd)
    return dt, out


def spawn_cpu(cmd: list[str], stdin: str, env: dict[str, str], cwd: Path) -> tuple[float, str, float]:
    """(wall seconds, stdout, CPU seconds of the process: user + system, what a busy machine does not inflate)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    r = subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=env, cwd=cwd, timeout=120, check=False)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, r.stdout, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


# -- hooks -------------------------------------------------------------------------------------------------------


def hook_payloads(repo: Path, k: int) -> dict[str, tuple[str, dict[str, Any]]]:
    session = f"bench-resident-{os.getpid()}-{k}"
    base = {"session_id": session, "transcript_path": "", "cwd": str(repo)}
    return {
        "UserPromptSubmit": ("user-prompt-submit", {**base, "hook_event_name": "UserPromptSubmit",
                                                    "prompt": PROMPTS[k % len(PROMPTS)].format(n=k * 37 % 9000)}),
        "SessionStart": ("session-start", {**base, "hook_event_name": "SessionStart", "source": "startup"}),
        "PreToolUse (memory tool)": ("pre-tool-use", {**base, "hook_event_name": "PreToolUse",
                                                      "tool_name": "mcp__hmg__memory_recall",
                                                      "tool_input": {"query": "cache", "scope": {"repository": "x"}}}),
        "PreToolUse (Read, file hook)": ("pre-tool-use", {**base, "hook_event_name": "PreToolUse", "tool_name": "Read",
                                                          "tool_input": {"file_path": str(repo / "src/auth/session.py")}}),
    }  # fmt: skip


def bench_hooks(home: Path, repo: Path, runs: int) -> dict[str, Any]:
    envs = {"per-process": env_for(home, False), "daemon": env_for(home, True)}
    times: dict[str, dict[str, list[float]]] = {p: {h: [] for h in TARGETS} for p in envs}
    filled: dict[str, dict[str, int]] = {p: {h: 0 for h in TARGETS} for p in envs}
    for k in range(-1, runs):  # run -1: warm-up, not counted
        for name, (event, payload) in hook_payloads(repo, k + 1000).items():
            for path, env in envs.items():
                payload = {**payload, "session_id": f"{payload['session_id']}-{path}"}
                dt, out = spawn([MEMORYD, "hook", event], json.dumps(payload), env, repo)
                if k >= 0:
                    times[path][name].append(dt)
                    filled[path][name] += bool(out.strip())
    out: dict[str, Any] = {}
    for name in TARGETS:
        out[name] = {p: {"p50_ms": round(med(times[p][name]) * 1000, 1), "with_output": filled[p][name],
                         "runs": len(times[p][name]), "all_ms": [round(x * 1000, 1) for x in times[p][name]]}
                     for p in envs}  # fmt: skip
        out[name]["target_ms"] = TARGETS[name] * 1000
    return out


# -- a new agent session's first recall ----------------------------------------------------------------------------

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}  # fmt: skip


class Session:
    """A `memoryd-mcp` over stdio, as an agent host starts it."""

    def __init__(self, env: dict[str, str], repo: Path) -> None:
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen([MCP], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env, cwd=repo)  # fmt: skip
        self.next_id = 2

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        self.send(message)
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("memoryd-mcp closed its output")
            answer = json.loads(line)
            if answer.get("id") == message["id"]:
                return dict(answer)

    def first_recall(self, query: str) -> float:
        self.ask(INIT)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        r = self.ask({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "mem_search", "arguments": {"query": query}}})  # fmt: skip
        if "error" in r or r["result"].get("isError"):
            raise RuntimeError(f"mem_search failed: {r}")
        return time.perf_counter() - self.t0

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


def stop_daemon(home: Path) -> None:
    from memoryd.daemon.client import Client

    Client(home, autostart=False).stop(timeout=30)


def start_daemon(home: Path, repo: Path) -> None:
    env = env_for(home, True)
    subprocess.run([MEMORYD, "daemon", "start"], env=env, check=True, capture_output=True, timeout=60)
    s = Session(env, repo)  # warm: engine open, model and index loaded
    s.first_recall("warm up the model")
    s.close()


def bench_first_recall(home: Path, repo: Path, runs: int) -> dict[str, Any]:
    res: dict[str, list[float]] = {"per-process": [], "daemon warm": [], "daemon cold": []}
    for k in range(-1, runs):
        q = PROMPTS[k % len(PROMPTS)].format(n=k * 53 % 9000)
        for name in res:
            if name == "daemon cold":
                stop_daemon(home)
            elif name == "daemon warm":
                from memoryd.daemon.client import Client

                if Client(home, autostart=False).health() is None:
                    start_daemon(home, repo)
            s = Session(env_for(home, name != "per-process"), repo)
            dt = s.first_recall(q)
            s.close()
            if k >= 0:
                res[name].append(dt)
    return {name: {"p50_s": round(med(xs), 3), "runs": len(xs), "all_s": [round(x, 3) for x in xs]}
            for name, xs in res.items()}  # fmt: skip


# -- the CLI -------------------------------------------------------------------------------------------------------


CLI_COMMANDS = {"recall": lambda q, k: ["recall", q, "-n", "5"],
                "memorize": lambda q, k: ["memorize", f"Bench CLI note {os.getpid()}-{k}: svc_{k % 9000} drains its "
                                                      f"queue every {k % 50 + 10} seconds."]}  # fmt: skip


def checkout(rev: str) -> Path:
    """`rev` of this repository in a temporary git worktree (under /tmp); its src/ goes first on PYTHONPATH."""
    import tempfile

    where = Path(tempfile.mkdtemp(prefix="memoryd-before-"))
    subprocess.run(["git", "-C", str(HERE.parent), "worktree", "add", "--detach", "-f", str(where / "tree"), rev],
                   check=True, capture_output=True)  # fmt: skip
    return where / "tree"


def drop_checkout(tree: Path) -> None:
    subprocess.run(["git", "-C", str(HERE.parent), "worktree", "remove", "--force", str(tree)], capture_output=True)
    shutil.rmtree(tree.parent, ignore_errors=True)


def bench_cli(home: Path, repo: Path, runs: int, before: Path | None = None) -> dict[str, Any]:
    """`memoryd recall` and `memoryd memorize` spawned as a person runs them: answered by the running daemon, and
    in-process (daemon off); with `before` (a checkout of an older revision), its CLI through its own warm daemon
    on a copy of the store, run by run interleaved with this one's."""
    envs = {"per-process": env_for(home, False), "daemon": env_for(home, True)}
    if before is not None:
        old_home = home.with_name(home.name + "-before")
        shutil.rmtree(old_home, ignore_errors=True)
        shutil.copytree(home, old_home, ignore=shutil.ignore_patterns("memoryd.sock", "daemon.*", "sessions"))
        envs["daemon, before"] = {**env_for(old_home, True), "PYTHONPATH": str(before / "src")}
        subprocess.run([PY, "-m", "compileall", "-q", str(before / "src")], check=False, capture_output=True)
        subprocess.run([MEMORYD, "daemon", "start"], env=envs["daemon, before"], check=True, capture_output=True,
                       timeout=120)  # fmt: skip
    out: dict[str, Any] = {}
    try:
        for command, argv in CLI_COMMANDS.items():
            times: dict[str, list[float]] = {p: [] for p in envs}
            cpu: dict[str, list[float]] = {p: [] for p in envs}
            answered: dict[str, int] = {p: 0 for p in envs}
            for k in range(-1, runs):  # run -1: warm-up, not counted
                q = PROMPTS[k % len(PROMPTS)].format(n=k * 71 % 9000)
                for path, env in envs.items():
                    dt, text, used = spawn_cpu([MEMORYD, *argv(q, k + 10_000 * len(path))], "", env, repo)
                    if k >= 0:
                        times[path].append(dt)
                        cpu[path].append(used)
                        answered[path] += bool(text.strip()) and text.strip() != "no matching memories"
            out[command] = {p: {"p50_s": round(med(xs), 3), "cpu_p50_s": round(med(cpu[p]), 3), "runs": len(xs),
                                "answered": answered[p], "all_s": [round(x, 3) for x in xs],
                                "all_cpu_s": [round(x, 3) for x in cpu[p]]} for p, xs in times.items()}  # fmt: skip
            if before is not None:  # paired: this checkout's run over the older one's, run by run
                pairs = [a / b for a, b in zip(times["daemon"], times["daemon, before"], strict=True)]
                out[command]["paired_ratio_p50"] = round(med(pairs), 3)
    finally:
        if before is not None:
            stop_daemon(home.with_name(home.name + "-before"))
    return out


# -- start-up of memoryd-mcp -------------------------------------------------------------------------------------

# The console script's own code (pip's launcher), run as `python -c` so that another tree (--before) runs the same way.
_MCP_LAUNCHER = ("import sys; from memoryd.daemon.mcp_entry import main; sys.argv[0] = 'memoryd-mcp'; "
                 "sys.exit(main())")  # fmt: skip


def bench_startup(runs: int, before: str | None) -> dict[str, Any]:
    """`memoryd-mcp --version`, spawn to exit, against Python doing nothing: this checkout's installed command, its
    sources through the launcher's code, and (--before REV) REV's sources the same way in a temporary worktree, every
    path in each run (interleaved), bytecode precompiled for both trees."""
    import compileall
    import tempfile

    root = HERE.parent
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_") and k != "PYTHONPATH"}
    paths: dict[str, tuple[list[str], dict[str, str]]] = {
        "python -c pass": ([PY, "-c", "pass"], env),
        "memoryd-mcp --version (installed)": ([MCP, "--version"], env),
        "memoryd-mcp --version (this tree)": ([PY, "-c", _MCP_LAUNCHER, "--version"],
                                              {**env, "PYTHONPATH": str(root / "src")}),
    }  # fmt: skip
    trees = [root / "src"]
    with tempfile.TemporaryDirectory(prefix="memoryd-before-") as tmp:
        if before:
            subprocess.run(["git", "-C", str(root), "worktree", "add", "--detach", "--quiet", tmp, before], check=True)
            paths[f"memoryd-mcp --version ({before})"] = ([PY, "-c", _MCP_LAUNCHER, "--version"],
                                                         {**env, "PYTHONPATH": f"{tmp}/src"})  # fmt: skip
            trees.append(Path(tmp) / "src")
        try:
            for tree in trees:
                compileall.compile_dir(str(tree / "memoryd"), quiet=1)
            times: dict[str, list[float]] = {name: [] for name in paths}
            outs: dict[str, set[str]] = {name: set() for name in paths}
            for k in range(-1, runs):  # run -1: warm-up, not counted
                for name, (cmd, e) in paths.items():
                    dt, out = spawn(cmd, "", e, root)
                    if k >= 0:
                        times[name].append(dt)
                        outs[name].add(out.strip())
        finally:
            if before:
                subprocess.run(["git", "-C", str(root), "worktree", "remove", "--force", tmp], check=False)
    return {name: {"p50_ms": round(med(xs) * 1000, 1), "runs": len(xs), "printed": sorted(outs[name])}
            for name, xs in times.items()}  # fmt: skip


def startup_rows(startup: dict[str, Any]) -> list[str]:
    """The start-up rows: each path's p50 beside Python's own start, against the 150 ms target."""
    base = startup["python -c pass"]["p50_ms"]
    rows = ["| `memoryd-mcp --version` (spawn to exit) | p50 | over `python -c pass` | target | met |",
            "|---|---|---|---|---|"]  # fmt: skip
    for name, r in startup.items():
        target = name.startswith("memoryd-mcp")
        rows.append(f"| {name} ({r['runs']} runs) | {r['p50_ms']:.0f} ms | {r['p50_ms'] - base:+.0f} ms | "
                    f"{'≤ 150 ms' if target else ''} | {('yes' if r['p50_ms'] <= 150 else 'no') if target else ''} |")  # fmt: skip
    return rows


# -- memory --------------------------------------------------------------------------------------------------------


def _mem_kb(pid: int) -> tuple[int, int]:
    """(VmRSS, Pss) of a process in kB."""
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/status") as f:
            rss = next(int(x.split()[1]) for x in f if x.startswith("VmRSS"))
        with open(f"/proc/{pid}/smaps_rollup") as f:
            pss = next(int(x.split()[1]) for x in f if x.startswith("Pss:"))
    except (OSError, StopIteration):
        pass
    return rss, pss


def sessions_memory(home: Path, repo: Path, n: int, daemon: bool) -> dict[str, float]:
    from memoryd.daemon.client import Client

    env = env_for(home, daemon)
    sessions = [Session(env, repo) for _ in range(n)]
    for i, s in enumerate(sessions):
        s.first_recall(PROMPTS[i % len(PROMPTS)].format(n=i))
    pids = [s.proc.pid for s in sessions]
    if daemon:
        info = Client(home, autostart=False).health()
        assert info is not None
        pids.append(int(info["pid"]))
    mem = [_mem_kb(p) for p in pids]
    for s in sessions:
        s.close()
    return {"rss_mb": round(sum(r for r, _ in mem) / 1024, 1), "pss_mb": round(sum(p for _, p in mem) / 1024, 1),
            "processes": len(pids)}  # fmt: skip


def bench_memory(home: Path, repo: Path) -> dict[str, Any]:
    start_daemon(home, repo)
    out: dict[str, Any] = {}
    for path, daemon in (("per-process", False), ("daemon", True)):
        one = sessions_memory(home, repo, 1, daemon)
        eight = sessions_memory(home, repo, 8, daemon)
        out[path] = {"one": one, "eight": eight, "ratio_rss": round(eight["rss_mb"] / one["rss_mb"], 2),
                     "ratio_pss": round(eight["pss_mb"] / one["pss_mb"], 2)}  # fmt: skip
    return out


def bench_long_run(home: Path, repo: Path, calls: int) -> dict[str, Any]:
    """The daemon's RSS along `calls` calls of a mix (see the module docstring), from 4 client threads."""
    from memoryd.daemon.client import Client

    stop_daemon(home)
    start_daemon(home, repo)
    info = Client(home, autostart=False).health()
    assert info is not None
    pid = int(info["pid"])
    env_scope = {"cwd": str(repo)}
    done = [0]
    lock = threading.Lock()
    samples: list[tuple[int, float]] = [(0, _mem_kb(pid)[0] / 1024)]
    errors: list[str] = []

    def worker(w: int, count: int) -> None:
        c = Client(home, client={"host": "bench", "session": f"long-{w}"})
        for i in range(count):
            k = i % 10
            try:
                if k == 0:
                    c.call("/v1/recall", {"query": PROMPTS[i % len(PROMPTS)].format(n=i % 9000)}, scope=env_scope)
                elif k == 1:
                    c.call("/v1/memorize", {"content": f"Bench note {w}-{i}: svc_{i % 9000} keeps its queue depth "
                                                       f"under {i % 97 + 3} jobs."}, scope=env_scope)  # fmt: skip
                elif k == 2:
                    c.call("/v1/prompt", {"prompt": PROMPTS[i % len(PROMPTS)].format(n=i % 9000)}, scope=env_scope)
                elif k == 3:
                    c.call("/v1/context", {"path": str(repo / "src/auth/session.py"), "session": f"long-{w}-{i}",
                                           "record": False}, scope=env_scope)  # fmt: skip
                else:
                    c.call("/v1/health", method="GET")
            except Exception as exc:  # counted, not fatal
                errors.append(f"{type(exc).__name__}: {exc}"[:200])
            with lock:
                done[0] += 1
                if done[0] % max(1, calls // 20) == 0:
                    samples.append((done[0], _mem_kb(pid)[0] / 1024))

    started = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(w, calls // 4)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.perf_counter() - started
    final = _mem_kb(pid)[0] / 1024
    return {"calls": done[0], "seconds": round(took, 1), "errors": len(errors), "error_examples": errors[:3],
            "rss_mb_start": round(samples[0][1], 1), "rss_mb_end": round(final, 1),
            "rss_mb_max": round(max(s for _, s in samples + [(0, final)]), 1),
            "samples": [(n, round(m, 1)) for n, m in samples]}  # fmt: skip


# -- report --------------------------------------------------------------------------------------------------------


def table(res: dict[str, Any]) -> str:
    rows = [
        "| where a person waits | per-process (today's path) | daemon warm | target | met |",
        "|---|---|---|---|---|",
    ]
    if "hooks" not in res:
        return "\n".join([*rows, _cli_row(res["cli"])])
    for name, r in res["hooks"].items():
        pp, dd = r["per-process"], r["daemon"]
        rows.append(f"| {name} (p50, {dd['runs']} runs) | {pp['p50_ms']:.0f} ms | {dd['p50_ms']:.0f} ms | "
                    f"≤ {r['target_ms']:.0f} ms | {'yes' if dd['p50_ms'] <= r['target_ms'] else 'no'} |")  # fmt: skip
    fr = res["first_recall"]
    rows.append(f"| first answered recall of a new session (p50, {fr['daemon warm']['runs']} runs) | "
                f"{fr['per-process']['p50_s']:.2f} s | {fr['daemon warm']['p50_s'] * 1000:.0f} ms | ≤ 300 ms | "
                f"{'yes' if fr['daemon warm']['p50_s'] <= 0.3 else 'no'} |")  # fmt: skip
    rows.append(f"| … with the daemon cold (its start included) | | {fr['daemon cold']['p50_s']:.2f} s | ≤ 2.5 s | "
                f"{'yes' if fr['daemon cold']['p50_s'] <= 2.5 else 'no'} |")  # fmt: skip
    m = res["memory"]
    rows.append(f"| RSS of 8 concurrent sessions / one session's | {m['per-process']['ratio_rss']:.2f}× "
                f"({m['per-process']['eight']['rss_mb']:.0f} / {m['per-process']['one']['rss_mb']:.0f} MB) | "
                f"{m['daemon']['ratio_rss']:.2f}× ({m['daemon']['eight']['rss_mb']:.0f} / {m['daemon']['one']['rss_mb']:.0f} MB) | "
                f"≤ 1.3× | {'yes' if m['daemon']['ratio_rss'] <= 1.3 else 'no'} |")  # fmt: skip
    rows.append(f"| … the same in PSS (shared pages split) | {m['per-process']['ratio_pss']:.2f}× | "
                f"{m['daemon']['ratio_pss']:.2f}× | | |")  # fmt: skip
    if res.get("cli"):
        rows.append(_cli_row(res["cli"]))
    if res.get("long_run"):
        lr = res["long_run"]
        rows.append(f"| daemon RSS after {lr['calls']} calls (start → end, max) | | {lr['rss_mb_start']:.0f} → "
                    f"{lr['rss_mb_end']:.0f} MB (max {lr['rss_mb_max']:.0f}), {lr['errors']} errors | bounded | |")  # fmt: skip
    return "\n".join(rows)


def _cli_row(cli: dict[str, Any]) -> str:
    rows = []
    for command, r in cli.items():
        pp, dd, old = r["per-process"], r["daemon"], r.get("daemon, before")
        ratio = (f"; before {old['p50_s'] * 1000:.0f} ms, CPU {old.get('cpu_p50_s', 0) * 1000:.0f} ms; paired "
                 f"{r['paired_ratio_p50']:.2f}×" if old else "")  # fmt: skip
        rows.append(f"| CLI `memoryd {command}` (p50, {dd['runs']} runs; answered {dd['answered']} / {pp['answered']}"
                    f"{ratio}) | {pp['p50_s']:.2f} s | {dd['p50_s'] * 1000:.0f} ms (CPU {dd.get('cpu_p50_s', 0) * 1000:.0f}"
                    f" ms) | ≤ 300 ms | {'yes' if dd['p50_s'] <= 0.3 else 'no'} |")  # fmt: skip
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--calls", type=int, default=100_000, help="calls of the long run (0: skip it)")
    ap.add_argument("--root", type=Path, default=Path("/tmp/memoryd-resident-bench"))
    ap.add_argument("--json", type=Path, help="also write the results here")
    ap.add_argument("--long-run-only", action="store_true", help="only the daemon's RSS along --calls calls")
    ap.add_argument(
        "--cli-only", action="store_true", help="only the CLI rows (recall, memorize; daemon vs in-process)"
    )
    ap.add_argument(
        "--before",
        metavar="REV",
        help="also git revision REV's rows (a temporary worktree), interleaved with this checkout's: the "
        "CLI through its own warm daemon, or with --startup-only its memoryd-mcp --version",
    )
    ap.add_argument("--startup-only", action="store_true", help="only `memoryd-mcp --version` (no store needed)")
    args = ap.parse_args(argv)
    if args.startup_only:
        startup = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": f"{os.cpu_count()} cores, "
                   f"{platform.machine()}, Python {platform.python_version()}", "runs": args.runs,
                   "startup": bench_startup(args.runs, args.before)}  # fmt: skip
        print("\n".join(startup_rows(startup["startup"])))
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(startup, indent=1, ensure_ascii=False))
        return 0
    hl = _load("hooks_latency")
    home, repo = args.root / "home", hl.make_repo(args.root / "widgets")
    home.mkdir(parents=True, exist_ok=True)
    res: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                           "machine": f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}",
                           "bytecode": hl.precompile(True), "store": fill(home, repo, args.size), "runs": args.runs}  # fmt: skip
    print(f"store: {res['store']}", file=sys.stderr)
    before = checkout(args.before) if args.before else None
    try:
        stop_daemon(home)
        start_daemon(home, repo)
        if before is not None:
            res["before"] = args.before
        if args.cli_only:
            res["cli"] = bench_cli(home, repo, args.runs, before)
        elif not args.long_run_only:
            res["hooks"] = bench_hooks(home, repo, args.runs)
            print("hooks done", file=sys.stderr)
            res["first_recall"] = bench_first_recall(home, repo, args.runs)
            print("first recall done", file=sys.stderr)
            res["memory"] = bench_memory(home, repo)
            print("memory done", file=sys.stderr)
            res["cli"] = bench_cli(home, repo, args.runs, before)
            print("cli done", file=sys.stderr)
        if args.calls and not args.cli_only:
            res["long_run"] = bench_long_run(home, repo, args.calls)
    finally:
        stop_daemon(home)
        if before is not None:
            drop_checkout(before)
    if args.long_run_only:
        print(json.dumps(res["long_run"], indent=1))
    else:
        print(table(res))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(res, indent=1, ensure_ascii=False))
    shutil.rmtree(home / "sessions", ignore_errors=True)  # the bench sessions' injected records
    return 0


if __name__ == "__main__":
    sys.exit(main())
