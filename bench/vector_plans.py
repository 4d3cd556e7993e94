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
form: wall ms per statement (client side, one connection, prepared; an HNSW form's settings are set
before its statement, outside the time taken) p50 / mean / p90, and recall@10 and
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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
import _common as C  # noqa: E402
import team_load  # noqa: E402
import vector_half  # noqa: E402
from latency import gen_queries  # noqa: E402

_EXACT_ROWS = ("SELECT id, embedding_half::halfvec({n}) <=> %(q)s::halfvec({n}) AS d FROM atoms"
               " WHERE scope_hash = ANY(%(scopes)s::text[]) AND vector_dims(embedding_half) = {n} AND seq > 0")  # fmt: skip
EXACT = {
    "materialized": f"WITH s AS MATERIALIZED ({_EXACT_ROWS}) SELECT id, 1 - d FROM s ORDER BY d, id LIMIT %(k)s",
    "fenced": f"SELECT id, 1 - d FROM ({_EXACT_ROWS} OFFSET 0) s ORDER BY d, id LIMIT %(k)s",
}
_HNSW_ROWS = ("SELECT id, embedding_half::halfvec({n}) <=> %(q)s::halfvec({n}) AS d FROM atoms"
              " WHERE vector_dims(embedding_half) = {n} AND scope_hash = ANY(%(scopes)s::text[])"
              " ORDER BY embedding_half::halfvec({n}) <=> %(q)s::halfvec({n}) LIMIT %(k)s")  # fmt: skip
HNSW = {
    "strict": f"SELECT id, 1 - d FROM ({_HNSW_ROWS}) s",  # strict order: as the index returns them
    "relaxed": f"WITH s AS MATERIALIZED ({_HNSW_ROWS}) SELECT id, 1 - d FROM s ORDER BY d + 0, id",
}


def forms(efs: Sequence[int]) -> dict[str, tuple[str, str]]:
    """Each form: the settings it runs under (a statement, or "") and its statement."""
    out = {f"exact, {name}": ("", sql) for name, sql in EXACT.items()}
    for ef in efs:
        for order, sql in HNSW.items():
            out[f"hnsw {ef} {order}"] = (
                f"SET hnsw.ef_search = {int(ef)}; SET hnsw.iterative_scan = {order}_order",
                sql,
            )
    return out


def ids(conn: Any, sql: str, query: Any, scopes: Sequence[str], k: int) -> list[str]:
    """A form's statement for one recorded call: the ids it returns, in order."""
    from memoryd.storage.pg_index import _half

    params = {"q": _half(query), "scopes": list(scopes), "k": k}
    return [r[0] for r in conn.execute(sql.format(n=len(query)), params, prepare=True)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    team_load.fill_args(ap)
    team_load.replay_args(ap, "vector", shared_buffers="2GB")
    ap.add_argument("--ef", default="40,100,200", help="hnsw.ef_search values, comma-separated (default 40,100,200)")
    args = ap.parse_args()
    efs = [int(x) for x in args.ef.split(",") if x]

    import psycopg

    from memoryd.shared.config import Settings

    m = C.machine()
    C.print_machine(m)
    crew = team_load.people(args.clients, args.teams)
    out: dict[str, Any] = {"machine": m, "size": args.size, "shared_buffers": args.shared_buffers, "forms": {}}
    with tempfile.TemporaryDirectory() as tmp:
        with team_load.postgres_copy(args, crew, Path(tmp), shared_buffers=args.shared_buffers) as (_, dsn):
            settings = Settings(home=Path(tmp) / "home", db=dsn)
            queries = gen_queries(args.queries)
            rows = []
            with psycopg.connect(dsn, autocommit=True) as conn, team_load.person_views(settings, crew, tmp) as views:
                run = forms(efs)
                for kind, view in views:
                    calls = [(a[0], kw["scope_hashes"], kw["k"])
                             for name, a, kw in vector_half._vector_calls(view, queries) if name == "vector_candidates"]  # fmt: skip
                    truth = [ids(conn, EXACT["materialized"], *c) for c in calls]
                    ms: dict[str, list[float]] = {name: [] for name in run}
                    found10: dict[str, list[float]] = {name: [] for name in run}
                    found_k: dict[str, list[float]] = {name: [] for name in run}
                    for setup, sql in run.values():  # warm: each form's statements prepared, its pages read once
                        for c in calls[:5]:
                            if setup:
                                conn.execute(setup)
                            ids(conn, sql, *c)
                    for _ in range(args.rounds):
                        for c, true in zip(calls, truth, strict=True):
                            for name, (setup, sql) in run.items():
                                if setup:  # the form's settings, outside the time taken
                                    conn.execute(setup)
                                t = time.perf_counter()
                                got = ids(conn, sql, *c)
                                ms[name].append((time.perf_counter() - t) * 1000)
                                found10[name].append(len(set(true[:10]) & set(got[:10])) / max(1, len(true[:10])))
                                found_k[name].append(len(set(true) & set(got)) / max(1, len(true)))
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


if __name__ == "__main__":
    main()
