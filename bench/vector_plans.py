#!/usr/bin/env python3
"""The vector statement's forms and HNSW settings (issue 27), on one database: cost and the true neighbours found.

Over `bench/team_load.py`'s fill (its cache, or made now), copied into a throwaway PostgreSQL
(`_pg.bulk_fill`). For a team member (a shared repository: 25% of the table at the default layout, served
by HNSW) and a person alone (a private one: 3%, served exactly), the `vector_candidates` calls of --queries
recalls are recorded, then each is run --rounds times in every form, the forms taking turns per call:

* `exact, materialized`: every vector of the scopes, distances stored in a MATERIALIZED CTE, then sorted
  (the exact plan as it was);
* `exact, fenced`: the same rows from a subquery behind OFFSET 0, sorted as they come (the exact plan now);
* `hnsw EF strict`: HNSW with iterative scan in strict order (as it was, at ef_search 100);
* `hnsw EF relaxed`: iterative scan in relaxed order, the k rows put in order by distance after (as now).

The true neighbours of each call are every vector of its scopes (the exact form). Printed per scope kind and
form: wall ms per statement (client side, one connection, prepared) p50 / mean / p90, and recall@10 and
recall@k (k = the engine's candidate pool) against the true neighbours. The statements are the store's
own text except for the form under test (`memoryd.storage.pg_index`).

    .venv/bin/python bench/vector_plans.py                         # 100k, 60 recalls, 3 rounds, ef 40,100,200
    .venv/bin/python bench/vector_plans.py --size 20000 --ef 100 --json out.json
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
import _common as C  # noqa: E402
import _pg  # noqa: E402
import team_load  # noqa: E402
import vector_half  # noqa: E402
from latency import gen_queries  # noqa: E402

_EXACT_ROWS = ("SELECT id, embedding_half::halfvec({n}) <=> %s::halfvec({n}) AS d FROM atoms"
               " WHERE scope_hash = ANY(%s::text[]) AND vector_dims(embedding_half) = {n} AND seq > 0")  # fmt: skip
EXACT = {
    "materialized": f"WITH s AS MATERIALIZED ({_EXACT_ROWS}) SELECT id, 1 - d FROM s ORDER BY d, id LIMIT %s",
    "fenced": f"SELECT id, 1 - d FROM ({_EXACT_ROWS} OFFSET 0) s ORDER BY d, id LIMIT %s",
}
_HNSW_ROWS = ("SELECT id, embedding_half::halfvec({n}) <=> %s::halfvec({n}) AS d FROM atoms"
              " WHERE vector_dims(embedding_half) = {n} AND scope_hash = ANY(%s::text[])"
              " ORDER BY embedding_half::halfvec({n}) <=> %s::halfvec({n}) LIMIT %s")  # fmt: skip
HNSW = {
    "strict": f"SELECT id, 1 - d FROM ({_HNSW_ROWS}) s",  # strict order: as the index returns them
    "relaxed": f"WITH s AS MATERIALIZED ({_HNSW_ROWS}) SELECT id, 1 - d FROM s ORDER BY d + 0, id",
}


def forms(conn: Any, efs: Sequence[int]) -> dict[str, Callable[[Any, Sequence[str], int], list[str]]]:
    """Each form: (query, scope hashes, k) → ids, on `conn` (its HNSW settings set before each statement)."""
    from memoryd.storage.pg_index import _half

    def exact(sql: str) -> Callable[[Any, Sequence[str], int], list[str]]:
        def run(query: Any, scopes: Sequence[str], k: int) -> list[str]:
            n = len(query)
            return [r[0] for r in conn.execute(sql.format(n=n), (_half(query), list(scopes), k), prepare=True)]

        return run

    def hnsw(sql: str, ef: int, order: str) -> Callable[[Any, Sequence[str], int], list[str]]:
        def run(query: Any, scopes: Sequence[str], k: int) -> list[str]:
            conn.execute(f"SET hnsw.ef_search = {int(ef)}; SET hnsw.iterative_scan = {order}_order")
            q, n = _half(query), len(query)
            return [r[0] for r in conn.execute(sql.format(n=n), (q, list(scopes), q, k), prepare=True)]

        return run

    out = {f"exact, {name}": exact(sql) for name, sql in EXACT.items()}
    for ef in efs:
        for order, sql in HNSW.items():
            out[f"hnsw {ef} {order}"] = hnsw(sql, ef, order)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    team_load.fill_args(ap)
    team_load.replay_args(ap, "vector", shared_buffers="2GB")
    ap.add_argument("--ef", default="40,100,200", help="hnsw.ef_search values, comma-separated (default 40,100,200)")
    args = ap.parse_args()
    efs = [int(x) for x in args.ef.split(",") if x]

    import psycopg

    from memoryd.shared.config import Settings
    from tests.pg import start_server

    m = C.machine()
    C.print_machine(m)
    crew = team_load.people(args.clients, args.teams)
    out: dict[str, Any] = {"machine": m, "size": args.size, "shared_buffers": args.shared_buffers, "forms": {}}
    with tempfile.TemporaryDirectory() as tmp:
        fill, _ = team_load.cached_fill(args, crew, Path(tmp))
        server = start_server(settings={"shared_buffers": args.shared_buffers})
        try:
            dsn = server.fresh_database(template=None)
            _pg.bulk_fill(fill / "memoryd.db", dsn)
            settings = Settings(home=Path(tmp) / "home", db=dsn)
            queries = gen_queries(args.queries)
            rows = []
            with psycopg.connect(dsn, autocommit=True) as conn, team_load.person_views(settings, crew, tmp) as views:
                run = forms(conn, efs)
                for kind, view in views:
                    calls = [(a[0], kw["scope_hashes"], kw["k"])
                             for name, a, kw in vector_half._vector_calls(view, queries) if name == "vector_candidates"]  # fmt: skip
                    truth = [run["exact, materialized"](*c) for c in calls]
                    ms: dict[str, list[float]] = {name: [] for name in run}
                    found10: dict[str, list[float]] = {name: [] for name in run}
                    found_k: dict[str, list[float]] = {name: [] for name in run}
                    for name in run:  # warm: each form's statements prepared, its pages read once
                        for c in calls[:5]:
                            run[name](*c)
                    for _ in range(args.rounds):
                        for c, true in zip(calls, truth, strict=True):
                            for name, fn in run.items():
                                t = time.perf_counter()
                                ids = fn(*c)
                                ms[name].append((time.perf_counter() - t) * 1000)
                                found10[name].append(len(set(true[:10]) & set(ids[:10])) / max(1, len(true[:10])))
                                found_k[name].append(len(set(true) & set(ids)) / max(1, len(true)))
                    for name in run:
                        v = ms[name]
                        p90 = statistics.quantiles(v, n=10)[-1]
                        stats = {"calls": len(calls), "k": calls[0][2] if calls else None,
                                 "p50_ms": statistics.median(v), "mean_ms": statistics.mean(v), "p90_ms": p90,
                                 "recall10": statistics.mean(found10[name]), "recall_k": statistics.mean(found_k[name])}  # fmt: skip
                        out["forms"][f"{kind}/{name}"] = stats
                        rows.append([kind, name, C.fmt(stats["p50_ms"], 2), C.fmt(stats["mean_ms"], 2), C.fmt(p90, 2),
                                     C.fmt(stats["recall10"], 3), C.fmt(stats["recall_k"], 3)])  # fmt: skip
            print(C.table(["scope", "form", "p50 ms", "mean ms", "p90 ms", "recall@10", "recall@k"], rows))
            C.write_json(args.json, out)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
