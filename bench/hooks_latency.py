#!/usr/bin/env python3
"""Wall time of memoryd's Claude Code hooks, spawned as Claude Code spawns them.

Each hook is a fresh process (`python -m memoryd.agents.hooks <event>`, or the installed
`memoryd hook <event>` with --via cli) given the hook's JSON on stdin, timed from spawn to exit,
on a store of --size memories (default 10 000: zh and en handoffs, constraints, preferences,
decisions, facts, and some pending saves) in a git checkout with an `origin` remote:

* session-start: the brief for the checkout's scope (JSON with additionalContext);
* pre-tool-use (HMG tool): infers the scope (git) and rewrites the tool input;
* pre-tool-use (mem_* tool): rewrites `scope` without touching git or the store;
* pre-tool-use (Read): the file hook, the memories anchored to the file read (a new session each
  run, so nothing is left out as already shown); on a file with 6 anchored memories whose code has
  changed since (a drift check with the file's parsed table cached), and on a file nothing is anchored to;
* session-end: returns once the detached observation worker is started (runs are spaced so the
  workers do not compete with the next one; the worker's own run is logged to hooks.log and timed
  end to end with --worker);
* baseline: `python -c pass` with the same interpreter, the floor for any Python hook.

Besides wall time, each hook's CPU time (user + system, its git children included) is reported: on
a loaded machine it is what the wall time would be on a quiet one.

The fill uses the hash embedder (the hooks never embed, so the vectors do not matter here) and is
kept in --home between runs (delete it to refill).

    .venv/bin/python bench/hooks_latency.py                  # 10k memories, 15 runs per hook
    .venv/bin/python bench/hooks_latency.py --size 1000 --runs 5 --json
    .venv/bin/python bench/hooks_latency.py --via cli        # once `memoryd hook` is wired
    .venv/bin/python bench/hooks_latency.py --via cli --only Read   # the file hook only (and the baseline)

Bytecode: an installed memoryd has its modules compiled (pip writes the .pyc files of a wheel; an
editable install writes them on its first import). Where writing them is disabled
(PYTHONDONTWRITEBYTECODE, as on this project's shared machine), every hook process would compile
memoryd's sources again, tens of ms that no user pays; so the package is compiled once
(`compileall`) before timing. `--no-precompile` times the tree as found (compiling in every hook
only if no .pyc files exist yet). The output says which.

Each run of the file hook is a new session, and a session's first claim prunes the store's session
records (a glob and a stat per record): the records earlier bench runs left (`bench-*`) are removed
first, so every invocation starts from the same state.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TEMPLATES = {
    "constraint": [
        "生产环境禁止直接执行 `{x}`，必须先走 migrations/{n}.sql 的迁移脚本。",
        "Never call `{x}()` from request handlers; it must run in the worker queue ({n}).",
        "部署 svc_{n} 前必須先跑 `make test`，不准跳過 {x} 的整合測試。",
    ],
    "preference": [
        "团队偏好用 pnpm 管理 {x} 的依赖，不要用 npm install（服务 {n}）。",
        "Prefer `{x}` fixtures over hand-made temp dirs in tests/test_{n}.py.",
        "我們喜歡用 {x} 寫 svc_{n} 的 CLI，輸出一律用繁體中文。",
    ],
    "decision": [
        "决定把 svc_{n} 从 {x} 切到 PostgreSQL 16，理由是事务和 JSONB。",
        "We decided to switch svc_{n} from {x} to dayjs because of bundle size.",
        "決定 svc_{n} 改用 {x} 做快取，不再使用 memcached。",
    ],
    "fact": [
        "svc_{n} 的配置文件在 config/svc_{n}.toml，端口 {p}，依赖 {x}。",
        "The {x} client in src/clients/{x}_{n}.py retries 3 times with a 2 s backoff on port {p}.",
        "svc_{n} 的 {x} 連線池上限是 {p}，超過會排隊。",
    ],
    "handoff": [
        "修好了 svc_{n} 的 {x} 空指针；下一步：补并发用例，风险：端口 {p} 冲突。",
        "Fixed the {x} timeout in svc_{n}; next: load test on port {p}; risk: stale cache.",
    ],
}
WORDS = [
    "redis",
    "kafka",
    "grpc",
    "celery",
    "fastapi",
    "pydantic",
    "sqlalchemy",
    "httpx",
    "uvicorn",
    "solid",
    "react",
    "vite",
    "pytest",
    "ruff",
    "mypy",
    "nginx",
    "envoy",
    "minio",
    "clickhouse",
    "duckdb",
]


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True)


def make_repo(path: Path) -> Path:
    if (path / ".git").exists():
        return path
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "-c", "user.email=b@example.com", "-c", "user.name=b", "commit", "-q", "--allow-empty", "-m", "init")
    git(path, "remote", "add", "origin", "git@github.com:acme/widgets.git")
    return path


def fill(home: Path, repo: Path, size: int) -> dict[str, Any]:
    mark = home / f".bench-filled-{size}"
    if mark.exists():
        return json.loads(mark.read_text())
    from memoryd.engine import Engine
    from memoryd.shared.config import Settings

    rnd = random.Random(7)
    kinds = [("fact", 40), ("preference", 20), ("decision", 20), ("constraint", 15), ("handoff", 5)]
    bag = [k for k, w in kinds for _ in range(w)]
    started = time.perf_counter()
    counts: dict[str, int] = {}
    with Engine.open(Settings(home=home, embedder="hash"), cwd=repo) as engine:
        for i in range(size):
            kind = rnd.choice(bag)
            text = rnd.choice(TEMPLATES[kind]).format(x=rnd.choice(WORDS), n=i, p=3000 + i % 5000)
            if kind == "handoff":
                engine.handoff(text, source="bench")
            else:
                engine.memorize(text, source="user", gate="trusted",
                                type=None if kind == "constraint" else kind)  # fmt: skip
            counts[kind] = counts.get(kind, 0) + 1
            if i % 2000 == 1999:
                print(f"  filled {i + 1}/{size} ({time.perf_counter() - started:.0f}s)", file=sys.stderr)
        for i in range(25):
            engine.memorize(f"我现在正在看 svc_{i} 的日志", source="agent", gate="review")
        atoms = engine.stats().atoms
    info = {"size": size, "atoms": atoms, "kinds": counts, "fill_seconds": round(time.perf_counter() - started, 1)}
    mark.write_text(json.dumps(info))
    return info


ANCHORED = '''"""Sessions."""


def get_session(token):
    return STORE.get(token)


class Store:
    def put(self, key, value):
        self.data[key] = value

    def get(self, key):
        return self.data.get(key)
'''


def anchor_fill(home: Path, repo: Path) -> Path:
    """Six memories anchored to src/auth/session.py, whose code then changes (uncommitted)."""
    target = repo / "src" / "auth" / "session.py"
    mark = home / ".bench-anchored"
    if mark.exists():
        return target
    from memoryd.engine import Engine
    from memoryd.shared.config import Settings

    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(ANCHORED)
    (repo / "src" / "auth" / "plain.py").write_text("def nothing():\n    return None\n")
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=b@example.com", "-c", "user.name=b", "commit", "-q", "-m", "code")
    with Engine.open(Settings(home=home, embedder="hash"), cwd=repo) as engine:
        for _i, text in enumerate(
            [
                "Sessions come from `get_session()` in src/auth/session.py; never call it from request handlers.",
                "`Store.put` in src/auth/session.py overwrites existing keys without a warning.",
                "`Store.get` returns None for unknown keys (src/auth/session.py).",
                "src/auth/session.py must stay free of network calls: it runs inside the request lock.",
                "Token lookups go through get_session() and must stay O(1).",
                "The session store in src/auth/session.py is per process; restart clears it.",
            ]
        ):
            engine.memorize(text, source="user", gate="trusted")
    target.write_text(ANCHORED.replace("STORE.get(token)", "STORE[token]"))  # the code moves on
    mark.write_text("done")
    return target


CPU: list[float] = []  # CPU seconds (user + system) of each spawned hook and its children, load-independent


def spawn(cmd: list[str], stdin: str, env: dict[str, str], cwd: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    r = subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=env, cwd=cwd, timeout=60, check=False)
    dt = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return dt, r


def precompile(enabled: bool) -> str:
    """Compile memoryd's modules when this environment would not keep their bytecode (module docstring)."""
    import memoryd

    if not (sys.dont_write_bytecode or os.environ.get("PYTHONDONTWRITEBYTECODE")):
        return "written on first import"
    if not enabled:
        return "not written (PYTHONDONTWRITEBYTECODE), not precompiled: as found"
    import compileall

    ok = compileall.compile_dir(str(Path(memoryd.__file__).parent), quiet=1)
    return "precompiled with compileall" if ok else "precompile failed"


def stats(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    p95 = xs[min(len(xs) - 1, max(0, round(0.95 * (len(xs) - 1))))]
    return {"min_ms": round(xs[0] * 1000, 1), "p50_ms": round(statistics.median(xs) * 1000, 1),
            "p95_ms": round(p95 * 1000, 1), "max_ms": round(xs[-1] * 1000, 1)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=10_000, help="memories in the store (default 10000)")
    ap.add_argument("--runs", type=int, default=15, help="timed runs per hook, after 2 warm-up runs")
    ap.add_argument("--home", type=Path, default=Path(tempfile.gettempdir()) / "memoryd-bench-hooks",
                    help="store kept between runs (default: $TMPDIR/memoryd-bench-hooks)")  # fmt: skip
    ap.add_argument(
        "--via",
        choices=("module", "cli"),
        default="module",
        help="module: python -m memoryd.agents.hooks; cli: the memoryd executable's `hook` command",
    )
    ap.add_argument("--worker", action="store_true", help="also time the detached session-end worker end to end")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ap.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="TEXT",
        help="time only the hooks whose name contains TEXT (repeatable; the baseline always runs)",
    )
    ap.add_argument(
        "--no-precompile",
        action="store_true",
        help="do not compile memoryd's modules first: time them as found (see the module docstring)",
    )
    args = ap.parse_args(argv)
    bytecode = precompile(not args.no_precompile)

    home = args.home / f"size-{args.size}"
    repo = make_repo(args.home / "widgets")
    info = fill(home, repo, args.size)
    anchored = anchor_fill(home, repo)
    env = {**os.environ, "MEMORYD_HOME": str(home), "MEMORYD_EMBEDDER": "hash"}
    for old in (home / "sessions").glob("bench-*"):  # earlier runs' records (see the module docstring)
        old.unlink(missing_ok=True)
    if args.via == "cli":
        exe = shutil.which("memoryd", path=str(Path(sys.executable).parent)) or "memoryd"
        base = [exe, "hook"]
    else:
        base = [sys.executable, "-m", "memoryd.agents.hooks"]
    common = {"session_id": "bench-session", "transcript_path": str(args.home / "t.jsonl"), "cwd": str(repo),
              "permission_mode": "default"}  # fmt: skip
    transcript = args.home / "t.jsonl"
    cases = [
        ("baseline: python -c pass", [sys.executable, "-c", "pass"], "", None),
        ("session-start", [*base, "session-start"],
         json.dumps({**common, "hook_event_name": "SessionStart", "source": "startup"}), "additionalContext"),
        ("pre-tool-use (mcp__hmg__memory_recall)", [*base, "pre-tool-use"],
         json.dumps({**common, "hook_event_name": "PreToolUse", "tool_name": "mcp__hmg__memory_recall",
                     "tool_input": {"query": "数据库 连接池"}, "tool_use_id": "toolu_01"}), "updatedInput"),
        ("pre-tool-use (mcp__memoryd__mem_search)", [*base, "pre-tool-use"],
         json.dumps({**common, "hook_event_name": "PreToolUse", "tool_name": "mcp__memoryd__mem_search",
                     "tool_input": {"query": "redis", "scope": "acme/other"}, "tool_use_id": "toolu_02"}),
         "updatedInput"),
        ("pre-tool-use (Read, 6 anchored memories)", [*base, "pre-tool-use"],
         json.dumps({**common, "hook_event_name": "PreToolUse", "tool_name": "Read",
                     "tool_input": {"file_path": str(anchored)}, "tool_use_id": "toolu_03"}), "additionalContext"),
        ("pre-tool-use (Read, nothing anchored)", [*base, "pre-tool-use"],
         json.dumps({**common, "hook_event_name": "PreToolUse", "tool_name": "Read",
                     "tool_input": {"file_path": str(anchored.with_name("plain.py"))}, "tool_use_id": "toolu_04"}),
         None),
        ("session-end (hand-off to the worker)", [*base, "session-end"],
         json.dumps({**common, "hook_event_name": "SessionEnd", "reason": "other"}), None),
    ]  # fmt: skip
    if args.only:
        cases = [c for c in cases if c[0].startswith("baseline") or any(t in c[0] for t in args.only)]
    rows = []
    for name, cmd, stdin, expect in cases:
        times, cpu = [], []
        for i in range(args.runs + 2):
            if name.startswith("session-end"):
                transcript.write_text("")  # nothing to observe: time the hook, not the worker
            if name.startswith("pre-tool-use (Read"):  # a new session: nothing was shown in it yet
                stdin = re.sub(r'"session_id": "[^"]*"', f'"session_id": "bench-{time.time_ns()}"', stdin)
            dt, r = spawn(cmd, stdin, env, repo)
            if r.returncode != 0 or (expect and expect not in r.stdout):
                print(f"{name}: unexpected result (exit {r.returncode}): {r.stdout[:200]!r} {r.stderr[-500:]!r}",
                      file=sys.stderr)  # fmt: skip
                return 1
            if i >= 2:
                times.append(dt)
                cpu.append(CPU[-1])
            if name.startswith("session-end"):
                time.sleep(1.5)  # let the detached worker finish, so it does not slow the next run
        rows.append({"hook": name, **stats(times), "cpu_p50_ms": round(statistics.median(cpu) * 1000, 1),
                     "runs": len(times)})  # fmt: skip
    worker = None
    if args.worker:
        worker = time_worker(base, common, env, repo, home)
    result = {"store": info, "via": args.via, "python": sys.version.split()[0], "nproc": os.cpu_count(),
              "loadavg": [round(x, 2) for x in os.getloadavg()], "bytecode": bytecode, "hooks": rows,
              "worker": worker}  # fmt: skip
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return 0
    print(f"store: {info['atoms']} atoms ({args.size} filled), via {args.via}, python {result['python']}, "
          f"{result['nproc']} cpus, load {result['loadavg']}; bytecode: {bytecode}")  # fmt: skip
    print(f"{'hook':<42} {'min':>8} {'p50':>8} {'p95':>8} {'max':>8} {'cpu p50':>8}  (ms, {args.runs} runs)")
    for r in rows:
        print(
            f"{r['hook']:<42} {r['min_ms']:>8} {r['p50_ms']:>8} {r['p95_ms']:>8} {r['max_ms']:>8} {r['cpu_p50_ms']:>8}"
        )
    if worker:
        print(f"session-end worker, end to end (English fixture, e5 model): {worker['seconds']} s — {worker['log']}")
    return 0


def time_worker(base: list[str], common: dict[str, Any], env: dict[str, str], repo: Path, home: Path) -> dict[str, Any]:
    """Spawn session-end on the English fixture with the real model; wait for the worker's log line."""
    fixture = Path(__file__).resolve().parents[1] / "tests" / "data" / "transcripts" / "claude_en_session.jsonl"
    sid = f"bench-{time.time_ns()}"
    path = home / f"{sid}.jsonl"
    shutil.copyfile(fixture, path)
    log = home / "hooks.log"
    seen = log.read_text().count("\n") if log.exists() else 0
    env = {**env, "MEMORYD_EMBEDDER": "e5"}
    t = time.perf_counter()
    spawn([*base, "session-end"], json.dumps({**common, "session_id": sid, "transcript_path": str(path),
                                              "hook_event_name": "SessionEnd"}), env, repo)  # fmt: skip
    while time.perf_counter() - t < 120:
        lines = log.read_text().splitlines()[seen:] if log.exists() else []
        done = [ln for ln in lines if sid in ln]
        if done:
            return {"seconds": round(time.perf_counter() - t, 2), "log": done[-1].split(": ", 1)[-1]}
        time.sleep(0.1)
    return {"seconds": None, "log": "worker did not finish within 120 s"}


if __name__ == "__main__":
    sys.exit(main())
