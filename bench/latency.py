#!/usr/bin/env python3
"""memoryd latency and memory: memorize / recall p50 & p95 and peak RSS per store size, cold start.

Per size (default 1000 and 10000; 100000 with --sizes 1000,10000,100000), in its own fresh
subprocess (so peak RSS is that size's own), single process, the real e5 embedder:

* fill: deterministic zh-Hans / zh-Hant / en / mixed project memories from templates (seed 7),
  written one by one through `engine.memorize(..., gate="trusted")` — the normal write path,
  model call included, for stores up to --engine-fill-max (2000). Larger stores are filled the
  same way except that the model call is served from a bank of 2000 real e5 vectors
  (batch-embedded fill texts, reused with small noise): the search cost depends on the number
  of vectors, not their values, and a 10k fill through the model would take the whole time
  budget on 2 noisy cores. Everything else in the write path still runs; fill mode is reported.
* memorize: --write-sample (100) further writes with the real model at the full size, p50/p95.
* recall: --queries (200) generated queries (zh/en/identifiers), max_results=10, after 5 warm-up
  calls, p50/p95; the query-embedding share (embedder.query alone on the same queries) and
  with --profile the top functions of recall under cProfile.
* vector search alone (the in-memory exact index, k=50) on the same query vectors;
* what-if, same process and queries: recall with the Snowball stemmer memoized (lru_cache on
  stemWord), timed between two plain passes so drift shows;
* RSS: VmHWM (peak) and VmRSS at the end, from /proc/self/status.

PostgreSQL (--db sqlite,postgresql or --with-postgres; --db postgresql://… for an existing server):
the same rows for PostgreSQL + pgvector, side by side. `postgresql` starts a throwaway server
(tests/pg.py, via bench/_pg.py). Each size's SQLite fill is copied right after filling and
bulk-loaded into a fresh database (`_pg.bulk_fill`: memoryd's `migrate_store`, HNSW indexes built
after the copy unless --pg-incremental-hnsw; --pg-compare-fill times both), then a fresh
subprocess runs the same writes and recalls through the normal Engine, and reports database
size, server memory and EXPLAIN ANALYZE of every statement of 20 recalls.

Embedder threads: query / passage latency of the e5 model with the default OpenMP settings vs
OMP_NUM_THREADS=1 vs OMP_WAIT_POLICY=passive, each in its own process, alternated.

Cold start (--cold-runs, default 11, interleaved): spawn `memoryd-mcp` over stdio with the MCP
SDK client on the 1000-memory store, time to the `initialize` answer and to the first answered
`mem_search`; the same for a minimal two-tool MCPServer (bench/_floor_server.py), to
`initialize` and its first tool call; and `memoryd-mcp` with the engine opened on first use
(bench/_server_lazy.py, an experiment) to see what the background open costs `initialize`. Medians. Plus `python -X importtime` of the server's
imports and an in-process breakdown of what the first recall waits for.

    .venv/bin/python bench/latency.py                   # 1k + 10k + cold start (~12 min)
    .venv/bin/python bench/latency.py --quick           # 500 memories, 50 queries, 5 cold runs
    .venv/bin/python bench/latency.py --sizes 1000,10000,100000 --json out.json
    .venv/bin/python bench/latency.py --sizes 10000,100000 --with-postgres --skip-cold --skip-omp --skip-what-if
    OMP_NUM_THREADS=1 .venv/bin/python bench/latency.py --skip-cold   # thread-count comparison
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

HERE = Path(__file__).resolve().parent
PY = sys.executable
SERVER = str(Path(sys.executable).with_name("memoryd-mcp"))

# --------------------------------------------------------------------------- text generation

PROJECTS = ["billing", "web-app", "mobile", "data-pipeline", "infra", "auth", "search", "ml-serving", "devctl",
            "gateway", "notifications", "payments", "checkout", "reporting", "admin-console", "scheduler"]  # fmt: skip
TECHS = ["PostgreSQL 16", "Redis", "Kafka", "ClickHouse", "OpenSearch", "Terraform", "Helm", "Vite", "Solid", "Flutter",
         "FastAPI", "gRPC", "Airflow", "dbt", "Triton", "Argo CD", "Prometheus", "Loki", "SQLite", "RabbitMQ", "Go",
         "Rust", "TypeScript", "Python 3.12", "Docker", "Kubernetes", "MySQL 8", "MongoDB", "React", "Django"]  # fmt: skip
FILES = ["auth/login.py", "internal/fx/convert.go", "src/routes.tsx", "lib/router/app_router.dart",
         "dags/orders_daily.py", "charts/api/values.yaml", "config/tax_rates.yaml", "crates/devctl/src/main.rs",
         "src/api/client.ts", "db/migrations/0042_add_index.sql", "config/settings.toml", "docker-compose.yml",
         ".github/workflows/ci.yml", "scripts/deploy.sh", "src/store/session.ts", "pkg/queue/worker.go",
         "app/models/invoice.rb", "services/notify/sender.py", "infra/modules/vpc/main.tf", "Makefile"]  # fmt: skip
FUNCS = ["get_session()", "retry_with_backoff()", "parse_config()", "build_index()", "refresh_token()", "sync_vault()",
         "render_invoice()", "load_plugins()", "flush_metrics()", "open_pool()", "verify_signature()", "schedule_job()"]  # fmt: skip
PEOPLE = ["Alice", "Bob", "Lin", "Chen", "Priya", "Mateo", "Yuki", "Omar", "Sofia", "Wei"]
CMDS = ["make test-fast", "pnpm install --frozen-lockfile", "go test ./...", "cargo clippy -- -D warnings",
        "terraform plan", "dbt run --select orders+", "helm upgrade --install api charts/api", "pytest -m 'not slow'",
        "make db-up", "docker compose up redis", "kubectl rollout restart deploy/api", "npm run lint"]  # fmt: skip
REASON_EN = ["it needs multi-row transactions", "the build got too slow", "the license changed", "the team knows it better",
             "it halves the memory use", "on-call load was too high", "the vendor ended support", "latency doubled at peak"]  # fmt: skip
REASON_HANS = [
    "需要事务支持",
    "构建太慢",
    "许可证变了",
    "团队更熟悉",
    "内存占用减半",
    "值班压力太大",
    "厂商停止维护",
    "高峰期延迟翻倍",
]
REASON_HANT = [
    "需要交易支援",
    "建置太慢",
    "授權條款改了",
    "團隊比較熟",
    "記憶體用量減半",
    "值班壓力太大",
    "廠商停止維護",
    "尖峰延遲加倍",
]

TEMPLATES = [
    "In {p}, we decided to use {t} instead of {t2} because {ren}.",
    "Never change {f} without running `{c}` first; it broke {p} in release {v}.",
    "{who} prefers small pull requests in {p}; keep them under {n} changed lines.",
    "The {p} service reads its settings from {f}; the request timeout is {k} seconds.",
    "{fn} in {f} returns None when the {p} cache entry has expired after {n} seconds.",
    "Run `{c}` before pushing changes to {p}; the CI pipeline takes about {k} minutes.",
    "Warning: keep {t} in {p} below version {v} until the deadlock in {fn} is fixed.",
    "{p} 决定从 {t2} 换成 {t}，原因是{rhans}，迁移预计 {k} 周完成。",
    "修改 {f} 之前先跑 `{c}`，否则 {p} 的集成测试会失败，上次耽误了 {k} 小时。",
    "{who} 偏好在 {p} 里用 {t}，不要引入新的依赖，版本固定在 {v}。",
    "{p} 的 {t} 连接池大小设为 {n}，超过会触发告警并通知值班。",
    "注意：{fn} 在 {f} 里处理超时，最多重试 {k} 次，间隔 {n} 毫秒。",
    "{p} 部署前一定要確認 {f} 的設定，{t} 的版本要是 {v}。",
    "我們在 {p} 改用 {t}，因為{rhant}，舊的 {t2} 保留 {k} 個月。",
    "{who} 說 {p} 的 {t} 每天凌晨 {h} 點備份，保留 {n} 天。",
    "不要在 {p} 的正式環境直接執行 `{c}`，要先在 staging 測過 {k} 次。",
    "{p} 的 retry policy 改成 exponential backoff，{fn} 最多重试 {k} 次，上限 {n} 毫秒。",
    "Code review 时 {p} 组要求 PR 附上 {t} 的 benchmark，diff 不超過 {n} 行。",
    "{p} 的 {f} 里有 feature flag，default 是 off，release {v} 之前记得打开。",
    "The {p} team uses {t} for {t2} replacement work; {who} owns the migration plan until v{v}.",
]
QUERY_TEMPLATES = [
    "which database does {p} use", "how do I run the tests for {p}", "what does {fn} return when the cache expired",
    "timeout setting in {f}", "{t} version constraint in {p}", "why did {p} switch to {t}",
    "{p} 用什么数据库", "{p} 的测试怎么跑", "{f} 的設定要注意什麼", "{t} 连接池多大", "{p} 為什麼改用 {t}",
    "{p} 的 retry 最多几次", "{f}", "{fn}", "`{c}`", "{who} 的偏好",
]  # fmt: skip


def _slots(rng: random.Random) -> dict[str, Any]:
    t, t2 = rng.sample(TECHS, 2)
    return {
        "p": rng.choice(PROJECTS), "t": t, "t2": t2, "f": rng.choice(FILES), "fn": rng.choice(FUNCS),
        "who": rng.choice(PEOPLE), "c": rng.choice(CMDS), "ren": rng.choice(REASON_EN), "rhans": rng.choice(REASON_HANS),
        "rhant": rng.choice(REASON_HANT), "n": rng.randint(2, 5000), "k": rng.randint(2, 90), "h": rng.randint(0, 23),
        "v": f"{rng.randint(1, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 20)}",
    }  # fmt: skip


def gen_texts(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        text = rng.choice(TEMPLATES).format(**_slots(rng))
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


def gen_queries(n: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(QUERY_TEMPLATES).format(**_slots(rng)) for _ in range(n)]


# --------------------------------------------------------------------------- child: one size


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return -1


class _Precomputed:
    """Serves fill-time passage vectors from a table of real e5 vectors; anything else goes to the model."""

    def __init__(self, inner: Any, table: dict[str, Any]) -> None:
        self.inner, self.table = inner, table

    def __getattr__(self, name: str) -> Any:  # name, dim, cosine band, ... as the real embedder has them
        return getattr(self.inner, name)

    def passages(self, texts: Any) -> Any:
        import numpy as np

        if all(t in self.table for t in texts):
            return np.stack([self.table[t] for t in texts])
        return self.inner.passages(texts)

    def query(self, text: str) -> Any:
        return self.inner.query(text)


def _fill_sqlite(args: argparse.Namespace, out: dict[str, Any], e5: Any, fill: list[str], settings: Any,
                 cwd: Path) -> Any:  # fmt: skip
    """Fill a SQLite store through the engine (model or vector bank); with --child-snapshot, copy it after."""
    import sqlite3

    import numpy as np

    from memoryd import Engine

    n = len(fill)
    embedder: Any = e5
    fill_mode = "engine"
    table: dict[str, Any] | None = None
    if n > args.engine_fill_max:
        fill_mode = "bank"
        # USE embeds ~1000 texts/s in batches: every fill text gets its own real vector (an HNSW
        # graph over near-copies of a small bank would measure the copies, not the index). e5 is
        # 20x slower: 2000 real vectors reused with noise, as before.
        bank_n = n if getattr(e5, "dim", 0) == 512 else min(n, args.engine_fill_max)
        fill_mode = "bank (every vector real)" if bank_n == n else f"bank ({bank_n} real vectors + noise)"
        t = time.perf_counter()
        bank = np.concatenate([e5.passages(fill[i : i + 64]) for i in range(0, bank_n, 64)])
        out["bank_embed_s"] = time.perf_counter() - t
        rng = np.random.default_rng(3)
        table = {}
        for i, text in enumerate(fill):
            v = bank[i % bank_n]
            if i >= bank_n:
                v = v + rng.normal(0, 0.02, v.shape).astype(np.float32)
                v = v / np.linalg.norm(v)
            table[text] = v.astype(np.float32)
        embedder = _Precomputed(e5, table)
    eng = Engine.open(settings, cwd=cwd, embedder=embedder)
    fill_ms = []
    t_fill = time.perf_counter()
    for text in fill:
        t = time.perf_counter()
        r = eng.memorize(text, source="agent", gate="trusted")
        fill_ms.append((time.perf_counter() - t) * 1000)
        assert r.effect == "applied", r
    out["fill"] = {"mode": fill_mode, "s": time.perf_counter() - t_fill, "p50_ms": C.med(fill_ms),
                   "p95_ms": C.pct(fill_ms, 95), "first1k_p50_ms": C.med(fill_ms[:1000]),
                   "last1k_p50_ms": C.med(fill_ms[-1000:])}  # fmt: skip
    eng.embedder = e5  # the bank is for the fill only; free it before measuring anything
    embedder = table = None  # noqa: F841
    if args.child_snapshot:
        t = time.perf_counter()
        with sqlite3.connect(settings.db_path) as src, sqlite3.connect(args.child_snapshot) as dst:
            src.backup(dst)
        out["snapshot_s"] = time.perf_counter() - t
    return eng


def child(args: argparse.Namespace) -> dict[str, Any]:
    from memoryd import Engine
    from memoryd.search.embed import MODELS
    from memoryd.shared.config import Settings

    n = args.child_size
    root = Path(args.child_home)
    home, cwd = root / "home", root / "project"
    home.mkdir(parents=True, exist_ok=True)
    cwd.mkdir(parents=True, exist_ok=True)
    texts = gen_texts(n + args.write_sample)
    fill, sample = texts[:n], texts[n:]
    queries = gen_queries(args.queries)
    t = time.perf_counter()
    e5 = MODELS[args.embedder]()  # named e5 for history; --embedder use measures memoryd's USE model
    load_s = time.perf_counter() - t
    out: dict[str, Any] = {"size": n, "model_load_s": load_s, "rss_after_model_kb": _status_kb("VmRSS")}

    if args.child_db:  # PostgreSQL: filled beforehand (bulk copy of the SQLite fill, see _pg.bulk_fill)
        eng = Engine.open(Settings(home=root / "pg-home", db=args.child_db), cwd=cwd, embedder=e5)
        out["backend"] = "postgresql"
    else:
        eng = _fill_sqlite(args, out, e5, fill, Settings(home=home, db=None), cwd)
        out["backend"] = "sqlite"
        if args.child_fill_only:
            eng.close()
            return out
        out["rss_fill_peak_kb"] = _status_kb("VmHWM")
        t = time.perf_counter()
        eng.store.warm()  # what the server does at start: load the vectors (and the HNSW graph file)
        graph = eng.store._vectors
        out["ann"] = {"ready": graph.wait_ready(600), "warm_and_build_s": time.perf_counter() - t}
    import gc

    gc.collect()
    try:  # peak RSS from here on = the serving process, not the fill's vector bank (Linux >= 4.0)
        Path("/proc/self/clear_refs").write_text("5")
        out["rss_peak_reset"] = True
    except OSError:
        out["rss_peak_reset"] = False
    write_ms = []
    for text in sample:  # real model, full-size store
        t = time.perf_counter()
        eng.memorize(text, source="agent", gate="trusted")
        write_ms.append((time.perf_counter() - t) * 1000)
    out["memorize"] = {"n": len(write_ms), "p50_ms": C.med(write_ms), "p95_ms": C.pct(write_ms, 95),
                       "max_ms": max(write_ms), "over_250ms": sum(1 for w in write_ms if w > 250)}  # fmt: skip
    embed_ms = []
    for text in sample[:50]:
        t = time.perf_counter()
        e5.passages([text])
        embed_ms.append((time.perf_counter() - t) * 1000)
    out["memorize"]["passage_embed_p50_ms"] = C.med(embed_ms)

    for q in queries[:5]:
        eng.recall(q, max_results=10)
    rec_ms, nhits = [], []
    for q in queries:
        t = time.perf_counter()
        h = eng.recall(q, max_results=10).hits
        rec_ms.append((time.perf_counter() - t) * 1000)
        nhits.append(len(h))
    q_ms, qvecs = [], []
    for q in queries:
        t = time.perf_counter()
        qvecs.append(e5.query(q))
        q_ms.append((time.perf_counter() - t) * 1000)
    scopes = eng._core.recall_scopes()  # time the vector part alone: the store's exact index, k = the engine's pool
    vs_ms = []
    for qv in qvecs:
        t = time.perf_counter()
        eng.store.vector_candidates(qv, scope_hashes=scopes, k=50)
        vs_ms.append((time.perf_counter() - t) * 1000)
    out["vector_search"] = {"p50_ms": C.med(vs_ms), "p95_ms": C.pct(vs_ms, 95)}
    if not (args.child_db or args.skip_what_if):
        from functools import lru_cache

        from memoryd.search import tokenize as tk

        plain = tk._stem  # the module's per-thread PyStemmer call
        cached = lru_cache(maxsize=100_000)(plain)

        passes = {}
        for name, stem in (("plain_a", plain), ("stem_cache", cached), ("plain_b", plain)):
            tk._stem = stem
            ms = []
            for q in queries:
                t = time.perf_counter()
                eng.recall(q, max_results=10)
                ms.append((time.perf_counter() - t) * 1000)
            passes[name] = {"p50_ms": C.med(ms), "p95_ms": C.pct(ms, 95)}
        tk._stem = plain
        out["what_if_stem_cache"] = passes
    out["recall"] = {"n": len(rec_ms), "p50_ms": C.med(rec_ms), "p95_ms": C.pct(rec_ms, 95),
                     "query_embed_p50_ms": C.med(q_ms), "query_embed_p95_ms": C.pct(q_ms, 95),
                     "mean_hits": statistics.mean(nhits)}  # fmt: skip
    if args.profile:
        import cProfile
        import io
        import pstats

        pr = cProfile.Profile()
        pr.enable()
        for q in queries[:50]:
            eng.recall(q, max_results=10)
        pr.disable()
        s = io.StringIO()
        st = pstats.Stats(pr, stream=s)
        rows = []
        for (file, line, fn), (_cc, nc, tt, ct, _) in st.stats.items():
            rows.append({"fn": f"{Path(file).name}:{line}:{fn}", "tottime_ms_per_recall": tt * 1000 / 50,
                         "cumtime_ms_per_recall": ct * 1000 / 50, "calls_per_recall": nc / 50})  # fmt: skip
        rows.sort(key=lambda r: -r["tottime_ms_per_recall"])
        out["profile_top"] = rows[:15]
    if args.child_db:
        _pg_details(eng, queries, out)
    else:
        t = time.perf_counter()
        eng.vault_sync()  # what the server does at every start (reads every vault file)
        out["vault_sync_s"] = time.perf_counter() - t
    eng.close()
    out["rss_peak_kb"] = _status_kb("VmHWM")
    out["rss_end_kb"] = _status_kb("VmRSS")
    if not args.child_db:
        out["db_mb"] = (home / "memoryd.db").stat().st_size / 1e6
    return out


def _pg_details(eng: Any, queries: list[str], out: dict[str, Any]) -> None:
    """Database size, server memory, and EXPLAIN ANALYZE of every statement of 20 recalls."""
    import _pg

    with eng.store._pool.connection() as conn:
        out["db_mb"] = _pg.db_mb(conn)
        out["server"] = _pg.server_memory(conn)
    stmts: dict[str, list[dict[str, Any]]] = {}
    for q in queries[:20]:
        for st in _pg.explain_recall(eng.store, lambda q=q: eng.recall(q, max_results=10)):
            stmts.setdefault(st["kind"], []).append(st)
    out["explain"] = {
        kind: {"n": len(v), "exec_p50_ms": C.med([s["exec_ms"] for s in v if s["exec_ms"] is not None]),
               "exec_max_ms": max((s["exec_ms"] or 0.0) for s in v),
               "plan_p50_ms": C.med([s["plan_ms"] for s in v if s["plan_ms"] is not None]),
               "hnsw": sum(s["hnsw"] for s in v), "slowest_plan": max(v, key=lambda s: s["exec_ms"] or 0.0)["plan"]}
        for kind, v in stmts.items()
    }  # fmt: skip


def run_size(n: int, home: Path, args: argparse.Namespace, *extra: str) -> dict[str, Any]:
    cmd = [PY, __file__, "--child-size", str(n), "--child-home", str(home), "--queries", str(args.queries),
           "--embedder", args.embedder,
           "--write-sample", str(args.write_sample), "--engine-fill-max", str(args.engine_fill_max), *extra]  # fmt: skip
    if args.profile:
        cmd.append("--profile")
    if args.skip_what_if:
        cmd.append("--skip-what-if")
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"size {n} failed:\n{p.stderr[-4000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


class _Postgres:
    """The PostgreSQL targets of --db: a URL (a database per size is created there) or a throwaway server."""

    def __init__(self, spec: str) -> None:
        import _pg

        self.server = None
        if spec == "postgresql":
            t = time.perf_counter()
            self.server = _pg.start_server()
            self.url = self.server.dsn()
            print(f"started a throwaway PostgreSQL (tests/pg.py) at {self.url} in {time.perf_counter() - t:.1f}s",
                  flush=True)  # fmt: skip
        else:
            self.url = spec
        with _pg.psycopg.connect(self.url, autocommit=True) as conn:
            self.version = conn.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
        self.label = "postgresql" if self.server is not None else "postgresql (" + self.url.split("@")[-1] + ")"

    def size(self, n: int, root: Path, snapshot: Path, args: argparse.Namespace) -> dict[str, Any]:
        import _pg

        name = f"memoryd_latency_{os.getpid()}_{n}"
        dsn = _pg.create_database(self.url, name)
        try:
            t = time.perf_counter()
            fill = _pg.bulk_fill(snapshot, dsn, rebuild_hnsw=not args.pg_incremental_hnsw)
            print(f"size {n} postgresql: bulk fill {time.perf_counter() - t:.0f}s (copy {fill['copy_s']:.0f}s, "
                  f"HNSW {fill['index_s']:.0f}s, analyze {fill['analyze_s']:.0f}s)", flush=True)  # fmt: skip
            r = run_size(n, root, args, "--child-db", dsn)
            r["pg_fill"] = fill
            print(C.table(SIZE_HEADERS, _size_rows([{**r, "label": self.label}])), flush=True)
        finally:
            _pg.drop_database(self.url, name)
        if args.pg_compare_fill:  # the other HNSW strategy, into a second database, for its fill time only
            try:
                other = _pg.create_database(self.url, name + "_cmp")
                fill["other"] = _pg.bulk_fill(snapshot, other, rebuild_hnsw=args.pg_incremental_hnsw)
            finally:
                _pg.drop_database(self.url, name + "_cmp")
            print(f"size {n} postgresql: bulk fill with HNSW {fill['other']['hnsw']}: {fill['other']['s']:.0f}s "
                  f"(copy {fill['other']['copy_s']:.0f}s, index {fill['other']['index_s']:.0f}s)", flush=True)  # fmt: skip
        r["server_version"] = self.version
        return r

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()


def _print_pg(results: list[dict[str, Any]]) -> None:
    pg = [r for r in results if r["backend"] != "sqlite"]
    print("\n## PostgreSQL bulk fill (migrate_store of the SQLite fill; s)")
    print(C.table(["backend", "memories", "server", "HNSW", "copy", "index build", "vacuum analyze", "total"],
                  [[r["label"], r["size"], r["server_version"], r["pg_fill"]["hnsw"], C.fmt(r["pg_fill"]["copy_s"], 1),
                    C.fmt(r["pg_fill"]["index_s"], 1), C.fmt(r["pg_fill"]["analyze_s"], 1), C.fmt(r["pg_fill"]["s"], 1)]
                   for r in pg]
                  + [[r["label"], r["size"], r["server_version"], o["hnsw"], C.fmt(o["copy_s"], 1), C.fmt(o["index_s"], 1),
                      C.fmt(o["analyze_s"], 1), C.fmt(o["s"], 1)] for r in pg if (o := r["pg_fill"].get("other"))]))  # fmt: skip
    print("\n## PostgreSQL statements of one recall (EXPLAIN ANALYZE of 20 recalls' statements; server ms)")
    rows = []
    for r in pg:
        for kind, e in r["explain"].items():
            rows.append(
                [
                    r["label"],
                    r["size"],
                    kind,
                    e["n"],
                    C.fmt(e["exec_p50_ms"], 2),
                    C.fmt(e["exec_max_ms"], 2),
                    C.fmt(e["plan_p50_ms"], 2),
                    f"{e['hnsw']}/{e['n']}" if kind == "vector_candidates" else "",
                ]
            )
    print(C.table(["backend", "memories", "statement", "n", "exec p50", "exec max", "plan p50", "HNSW used"], rows))
    for r in pg:
        server = r.get("server")
        if server:
            print(f"{r['label']} at {r['size']}: server {server['processes']} processes, PSS {server['pss_mb']:.0f} MB, "
                  f"largest process peak RSS {server['backend_hwm_mb']:.0f} MB")  # fmt: skip
    big = max(pg, key=lambda r: r["size"])
    if "vector_candidates" in big["explain"]:
        print(
            f"\nslowest vector_candidates plan at {big['size']}:\n{big['explain']['vector_candidates']['slowest_plan']}"
        )


SIZE_HEADERS = [
    "backend",
    "memories",
    "fill",
    "memorize p50",
    "p95",
    "(embed p50)",
    "recall p50",
    "p95",
    "(query embed p50)",
    "vector search p50",
    "peak RSS MB",
    "db MB",
    "server PSS MB",
    "vault_sync s",
]


def _size_rows(results: list[dict[str, Any]]) -> list[list[str]]:
    rows = []
    for r in results:
        pg = r["backend"] != "sqlite"
        if pg:
            fill = f"copy+{'index' if 'rebuilt' in r['pg_fill']['hnsw'] else 'incr.'} {r['pg_fill']['s']:.0f}s"
        else:
            fill = f"{r['fill']['mode']} {r['fill']['s']:.0f}s"
        server = r.get("server") or {}
        rows.append([r["label"], r["size"], fill, C.fmt(r["memorize"]["p50_ms"], 1), C.fmt(r["memorize"]["p95_ms"], 1),
                     C.fmt(r["memorize"]["passage_embed_p50_ms"], 1), C.fmt(r["recall"]["p50_ms"], 1),
                     C.fmt(r["recall"]["p95_ms"], 1), C.fmt(r["recall"]["query_embed_p50_ms"], 1),
                     C.fmt(r["vector_search"]["p50_ms"], 2), f"{r['rss_peak_kb'] / 1024:.0f}", f"{r['db_mb']:.0f}",
                     f"{server['pss_mb']:.0f}" if server else "-", C.fmt(r.get("vault_sync_s"), 2)])  # fmt: skip
    return rows


# --------------------------------------------------------------------------- cold start


EMBEDDER = "e5"  # set from --embedder; the servers get it as MEMORYD_EMBEDDER


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env.pop("ANTHROPIC_API_KEY", None)
    env["MEMORYD_HOME"] = str(home)
    env["MEMORYD_EMBEDDER"] = EMBEDDER
    return env


async def _one_start(
    command: str, argv: list[str], cwd: Path, env: dict[str, str], tool: str, targs: dict
) -> tuple[float, float]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=command, args=argv, cwd=str(cwd), env=env)
    t0 = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        t1 = time.perf_counter()
        r = await s.call_tool(tool, targs)
        t2 = time.perf_counter()
        if r.is_error:
            raise RuntimeError(f"{tool} failed: {r.content}")
    return t1 - t0, t2 - t0


def cold_start(store_root: Path, runs: int) -> dict[str, Any]:
    import anyio

    home, cwd = store_root / "home", store_root / "project"
    env = _env(home)
    res: dict[str, list[tuple[float, float]]] = {"memoryd": [], "memoryd-lazy-open": [], "floor": []}
    q = {"query": "why did billing switch to PostgreSQL 16"}
    lazy = [str(HERE / "_server_lazy.py")]

    async def go() -> None:
        # one untimed warm-up of each (page cache, .pyc), then interleaved timed runs
        await _one_start(SERVER, [], cwd, env, "mem_search", {"query": "why did billing switch to PostgreSQL 16"})
        await _one_start(PY, [str(HERE / "_floor_server.py")], cwd, env, "add", {"a": 1, "b": 2})
        for _ in range(runs):
            res["memoryd"].append(await _one_start(SERVER, [], cwd, env, "mem_search", q))
            res["memoryd-lazy-open"].append(await _one_start(PY, lazy, cwd, env, "mem_search", q))
            res["floor"].append(
                await _one_start(PY, [str(HERE / "_floor_server.py")], cwd, env, "add", {"a": 1, "b": 2})
            )

    anyio.run(go)
    out = {}
    for k, v in res.items():
        out[k] = {"initialize_s": C.med([a for a, _ in v]), "first_call_s": C.med([b for _, b in v]),
                  "initialize_all": [a for a, _ in v], "first_call_all": [b for _, b in v]}  # fmt: skip
    out["initialize_ratio"] = out["memoryd"]["initialize_s"] / out["floor"]["initialize_s"]
    return out


def importtime(stmt: str) -> dict[str, Any]:
    p = subprocess.run([PY, "-X", "importtime", "-c", stmt], capture_output=True, text=True)
    rows = []
    for line in p.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if m:
            rows.append((int(m.group(1)), int(m.group(2)), len(m.group(3)) // 2, m.group(4)))
    top = [r for r in rows if r[2] == 0]
    total_us = sum(r[1] for r in top)
    # biggest packages by cumulative time at depth <= 1 (depth 0 = imported directly)
    by_root: dict[str, int] = {}
    for self_us, _cum_us, _depth, name in rows:
        root = name.split(".")[0]
        by_root[root] = by_root.get(root, 0) + self_us
    biggest = sorted(by_root.items(), key=lambda kv: -kv[1])[:12]
    return {"stmt": stmt, "total_ms": total_us / 1000, "self_ms_by_top_package": {k: v / 1000 for k, v in biggest},
            "modules": {name: self_us for self_us, _, _, name in rows}}  # fmt: skip


def import_diff(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Modules `a` imports that `b` does not, with their self time (ms)."""
    extra = {k: v for k, v in a["modules"].items() if k not in b["modules"]}
    return {"n": len(extra), "self_ms": sum(extra.values()) / 1000,
            "top": sorted(((k, v / 1000) for k, v in extra.items()), key=lambda kv: -kv[1])[:8]}  # fmt: skip


STAGES = r"""
import json, sys, time
t0 = time.perf_counter(); r = {}
import memoryd.mcp.app; r["import memoryd.mcp.app"] = time.perf_counter() - t0
t = time.perf_counter(); from memoryd.mcp.app import build_server; s = build_server(); r["build_server (starts engine thread)"] = time.perf_counter() - t
t = time.perf_counter(); import memoryd.engine; r["import memoryd.engine (in main thread, may overlap)"] = time.perf_counter() - t
from memoryd.search.embed import MODELS
t = time.perf_counter(); e = MODELS[sys.argv[3]](); r["embedder load (" + sys.argv[3] + ")"] = time.perf_counter() - t
t = time.perf_counter(); e.query("warm up"); r["first query embedding"] = time.perf_counter() - t
from memoryd import Engine
from memoryd.shared.config import Settings
t = time.perf_counter(); eng = Engine.open(Settings(home=sys.argv[1]), cwd=sys.argv[2], embedder=e); r["Engine.open"] = time.perf_counter() - t
t = time.perf_counter(); eng.vault_sync(); r["vault_sync (1k files)"] = time.perf_counter() - t
t = time.perf_counter(); eng.recall("why did billing switch to PostgreSQL 16"); r["first recall (index load + query)"] = time.perf_counter() - t
t = time.perf_counter(); eng.recall("which database does billing use"); r["second recall"] = time.perf_counter() - t
r["total"] = time.perf_counter() - t0
print(json.dumps(r))
"""


def stages(store_root: Path, runs: int = 3, embedder: str = "e5") -> dict[str, float]:
    acc: dict[str, list[float]] = {}
    for _ in range(runs):
        p = subprocess.run([PY, "-c", STAGES, str(store_root / "home"), str(store_root / "project"), embedder],
                           capture_output=True, text=True, env=_env(store_root / "home"))  # fmt: skip
        if p.returncode != 0:
            raise SystemExit(p.stderr[-3000:])
        for k, v in json.loads(p.stdout.strip().splitlines()[-1]).items():
            acc.setdefault(k, []).append(v)
    return {k: C.med(v) for k, v in acc.items()}


OMP_PROBE = r"""
import json, statistics, sys, time
from memoryd.search.embed import E5Embedder
e = E5Embedder()
qs = ["why did billing switch to PostgreSQL 16", "前端为什么要换掉 React？", "帳單服務的本地整合測試怎麼跑？", "auth/login.py get_session()"]
p = "In billing, we decided to use PostgreSQL 16 instead of MySQL 8 because it needs multi-row transactions."
for _ in range(3):
    e.query(qs[0])
tq, tp = [], []
for i in range(int(sys.argv[1])):
    t = time.perf_counter(); e.query(qs[i % 4]); tq.append((time.perf_counter() - t) * 1000)
    t = time.perf_counter(); e.passages([p]); tp.append((time.perf_counter() - t) * 1000)
print(json.dumps({"q": tq, "p": tp}))
"""

OMP_CONFIGS = {"default": {}, "OMP_NUM_THREADS=1": {"OMP_NUM_THREADS": "1"},
               "OMP_WAIT_POLICY=passive": {"OMP_WAIT_POLICY": "passive"}}  # fmt: skip


def omp_study(rounds: int = 3, calls: int = 40) -> dict[str, Any]:
    acc: dict[str, dict[str, list[float]]] = {k: {"q": [], "p": []} for k in OMP_CONFIGS}
    for _ in range(rounds):
        for name, extra in OMP_CONFIGS.items():
            env = {k: v for k, v in os.environ.items() if not k.startswith("OMP_")}
            env.update(extra)
            p = subprocess.run([PY, "-c", OMP_PROBE, str(calls)], capture_output=True, text=True, env=env)
            r = json.loads(p.stdout.strip().splitlines()[-1])
            acc[name]["q"] += r["q"]
            acc[name]["p"] += r["p"]
    return {k: {"query_p50_ms": C.med(v["q"]), "query_p95_ms": C.pct(v["q"], 95),
                "passage_p50_ms": C.med(v["p"]), "passage_p95_ms": C.pct(v["p"], 95)} for k, v in acc.items()}  # fmt: skip


def vector_micro(sizes: tuple[int, ...] = (10_000, 100_000), calls: int = 30) -> dict[str, Any]:
    """memoryd's VectorIndex.search vs a contiguous matrix-vector product with the mask applied afterwards.

    Random unit vectors, 2% of rows in a second (global) scope, both scopes searched, k=50, same process.
    """
    import numpy as np

    from memoryd.search.vector import VectorIndex

    rng = np.random.default_rng(0)
    out = {}
    for n in sizes:
        index = VectorIndex(384)
        m = rng.normal(size=(n, 384)).astype(np.float32)
        m /= np.linalg.norm(m, axis=1, keepdims=True)
        index.add((f"id{i}", "scope" if i % 50 else "global", m[i]) for i in range(n))
        codes = np.array([index._codes["scope"], index._codes["global"]])
        q = m[7]
        a, b = [], []
        for _ in range(calls):
            t = time.perf_counter()
            index.search(q, scope_hashes=["scope", "global"], k=50)
            a.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            sims = index._matrix[:n] @ q
            sims[~(index._alive[:n] & np.isin(index._scope_codes[:n], codes))] = -2.0
            top = np.argpartition(-sims, 49)[:50]
            top = top[np.argsort(-sims[top])]
            b.append((time.perf_counter() - t) * 1000)
        out[n] = {"VectorIndex.search_p50_ms": C.med(a), "contiguous_masked_p50_ms": C.med(b)}
    return out


# --------------------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--write-sample", type=int, default=100)
    ap.add_argument("--engine-fill-max", type=int, default=2000)
    ap.add_argument("--cold-runs", type=int, default=11)
    ap.add_argument("--skip-cold", action="store_true")
    ap.add_argument("--skip-omp", action="store_true", help="skip the embedder thread-settings study")
    ap.add_argument("--skip-sizes", action="store_true")
    ap.add_argument("--profile", action="store_true", help="cProfile 50 recalls per size")
    ap.add_argument(
        "--vector-micro",
        action="store_true",
        help="only: VectorIndex.search vs a contiguous masked product at 10k and 100k random vectors",
    )
    ap.add_argument("--quick", action="store_true", help="500 memories, 50 queries, 5 cold runs")
    ap.add_argument(
        "--embedder",
        choices=("e5", "use"),
        default="use",
        help="model for the sizes, the stage timer and the servers (MEMORYD_EMBEDDER); default use, memoryd's default",
    )
    ap.add_argument("--db", action="append", metavar="sqlite|postgresql|postgresql://…",
                    help="backend(s) for the sizes, repeatable or comma-separated (default sqlite); `postgresql` "
                         "starts a throwaway server (tests/pg.py), a URL names a server where the role may CREATE "
                         "DATABASE (one database per size, dropped after)")  # fmt: skip
    ap.add_argument("--with-postgres", action="store_true", help="same as --db sqlite,postgresql")
    ap.add_argument(
        "--pg-incremental-hnsw",
        action="store_true",
        help="PostgreSQL fill: keep the HNSW indexes during the bulk copy instead of building them after",
    )
    ap.add_argument(
        "--pg-compare-fill",
        action="store_true",
        help="also time the PostgreSQL bulk fill with the other HNSW strategy (into a second database)",
    )
    ap.add_argument("--skip-what-if", action="store_true", help="skip the stemWord-memoized what-if (3 recall passes)")
    ap.add_argument("--json")
    ap.add_argument("--child-size", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--child-home", help=argparse.SUPPRESS)
    ap.add_argument("--child-db", help=argparse.SUPPRESS)
    ap.add_argument("--child-snapshot", help=argparse.SUPPRESS)
    ap.add_argument("--child-fill-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    global EMBEDDER
    EMBEDDER = args.embedder
    if args.child_size:
        print(json.dumps(child(args)))
        return
    if args.quick:
        args.sizes, args.queries, args.cold_runs, args.write_sample = "500", 50, 5, 30

    m = C.machine()
    C.print_machine(m)
    if args.vector_micro:
        vm = vector_micro()
        print(C.table(["vectors", "VectorIndex.search p50 ms", "matrix[:n] @ q + mask p50 ms"],
                      [[n, C.fmt(v["VectorIndex.search_p50_ms"], 2), C.fmt(v["contiguous_masked_p50_ms"], 2)]
                       for n, v in vm.items()]))  # fmt: skip
        C.write_json(args.json, {"machine": m, "vector_micro": vm})
        return
    t0 = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="memoryd-latency-"))
    sizes = [int(s) for s in args.sizes.split(",")]
    out: dict[str, Any] = {"machine": m, "embedder": args.embedder, "sizes": {}}
    print(f"embedder: {args.embedder} (sizes, stage timer, and MEMORYD_EMBEDDER for the servers)")
    dbs = [d.strip() for spec in (args.db or ["sqlite"]) for d in spec.split(",") if d.strip()]
    if args.with_postgres:
        dbs += [d for d in ("sqlite", "postgresql") if d not in dbs]
    for d in dbs:
        if d not in ("sqlite", "postgresql") and not d.startswith(("postgresql://", "postgres://")):
            raise SystemExit(f"--db {d}: expected sqlite, postgresql or a postgresql:// URL")
    pgs: list[_Postgres] = []
    try:
        pgs = [_Postgres(d) for d in dbs if d != "sqlite"] if not args.skip_sizes else []
        store_for_cold = None
        results: list[dict[str, Any]] = []
        if not args.skip_sizes:
            for n in sizes:
                t = time.perf_counter()
                root = tmp / f"s{n}"
                snapshot = root / "fill.db"
                extra = ["--child-snapshot", str(snapshot)] if pgs else []
                if "sqlite" in dbs:
                    r = run_size(n, root, args, *extra)
                    r["label"] = "sqlite"
                    out["sizes"][n] = r
                    results.append(r)
                    print(f"size {n} sqlite: done in {time.perf_counter() - t:.0f}s", flush=True)
                    print(C.table(SIZE_HEADERS, _size_rows([r])), flush=True)
                else:  # the PostgreSQL fill copies a store filled through the engine on SQLite
                    f = run_size(n, root, args, *extra, "--child-fill-only")
                    out.setdefault("sqlite_fill_for_postgresql", {})[n] = f["fill"]
                    print(f"size {n}: SQLite fill for the copy {f['fill']['s']:.0f}s", flush=True)
                for pg in pgs:
                    r = pg.size(n, root, snapshot, args)
                    r["label"] = pg.label
                    out.setdefault("postgresql", {}).setdefault(pg.label, {})[n] = r
                    results.append(r)
                snapshot.unlink(missing_ok=True)
                if store_for_cold is None and "sqlite" in dbs:
                    store_for_cold = root
                else:
                    shutil.rmtree(root, ignore_errors=True)
                print(f"size {n}: done in {time.perf_counter() - t:.0f}s", flush=True)
            print(f"\n## per store size (single process, real {args.embedder} model)")
            print(C.table(SIZE_HEADERS, _size_rows(results)))
            if pgs:
                _print_pg(results)
            if out["sizes"] and not args.skip_what_if:
                print("\n## SQLite recall parts and what-if (ms, p50 / p95)")
                print(C.table(["memories", "vector search k=50", "recall pass A", "stemWord memoized", "recall pass B"],
                              [[n, f"{C.fmt(r['vector_search']['p50_ms'], 2)} / {C.fmt(r['vector_search']['p95_ms'], 2)}",
                                *(f"{C.fmt(r['what_if_stem_cache'][k]['p50_ms'], 1)} / {C.fmt(r['what_if_stem_cache'][k]['p95_ms'], 1)}"
                                  for k in ("plain_a", "stem_cache", "plain_b"))] for n, r in out["sizes"].items()]))  # fmt: skip
            if args.profile:
                for r in results:
                    print(f"\n### recall profile, {r['label']} at {r['size']} (ms per recall, by own time)")
                    print(C.table(["function", "own", "cumulative", "calls"],
                                  [[p["fn"], C.fmt(p["tottime_ms_per_recall"], 2), C.fmt(p["cumtime_ms_per_recall"], 2),
                                    C.fmt(p["calls_per_recall"], 1)] for p in r["profile_top"][:12]]))  # fmt: skip
        if not args.skip_cold:
            if store_for_cold is None:
                store_for_cold = tmp / "s1000"
                run_size(1000, store_for_cold, args)
            cs = cold_start(store_for_cold, args.cold_runs)
            out["cold_start"] = cs
            out["stages"] = stages(store_for_cold, embedder=args.embedder)
            out["importtime"] = [importtime("import memoryd.mcp.app"), importtime("import memoryd.engine"),
                                 importtime("import mcp.server.mcpserver")]  # fmt: skip
            print(
                f"\n## cold start over stdio (median of {args.cold_runs}, store of {sizes[0] if not args.skip_sizes else 1000} memories)"
            )
            print(C.table(["server", "initialize s", "first tool call s"],
                          [["memoryd-mcp (mem_search)", C.fmt(cs["memoryd"]["initialize_s"]), C.fmt(cs["memoryd"]["first_call_s"])],
                           ["experiment: engine opened on first use", C.fmt(cs["memoryd-lazy-open"]["initialize_s"]),
                            C.fmt(cs["memoryd-lazy-open"]["first_call_s"])],
                           ["floor: 2-tool MCPServer", C.fmt(cs["floor"]["initialize_s"]), C.fmt(cs["floor"]["first_call_s"])]]))  # fmt: skip
            print(
                f"initialize ratio memoryd/floor = {cs['initialize_ratio']:.2f} (target <= 1.15); "
                f"first mem_search {cs['memoryd']['first_call_s']:.2f} s (target <= 2.5)"
            )
            print("\n## where the first recall's time goes (in-process, median of 3)")
            print(C.table(["stage", "s"], [[k, C.fmt(v)] for k, v in out["stages"].items()]))
            print("\n## python -X importtime (self time by top-level package, ms)")
            for it in out["importtime"]:
                print(f"{it['stmt']}: total {it['total_ms']:.0f} ms; "
                      + ", ".join(f"{k} {v:.0f}" for k, v in it["self_ms_by_top_package"].items()))  # fmt: skip
            d = import_diff(out["importtime"][0], out["importtime"][2])
            out["import_diff_server_vs_floor"] = d
            print(
                f"memoryd.mcp.app imports {d['n']} modules the floor does not, {d['self_ms']:.0f} ms self time: "
                + ", ".join(f"{k} {v:.1f}" for k, v in d["top"])
            )
            for it in out["importtime"]:
                it.pop("modules")
        if not args.skip_omp:
            out["omp"] = omp_study(rounds=2 if args.quick else 3)
            print("\n## e5 embedder thread settings (ms; each in its own process, alternated)")
            print(C.table(["setting", "query p50", "query p95", "passage p50", "passage p95"],
                          [[k, C.fmt(v["query_p50_ms"], 1), C.fmt(v["query_p95_ms"], 1), C.fmt(v["passage_p50_ms"], 1),
                            C.fmt(v["passage_p95_ms"], 1)] for k, v in out["omp"].items()]))  # fmt: skip
    finally:
        for pg in pgs:
            pg.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    out["wall_s"] = time.perf_counter() - t0
    print(f"\nwall time {out['wall_s']:.0f}s")
    C.write_json(args.json, out)


if __name__ == "__main__":
    main()
