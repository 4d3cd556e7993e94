#!/usr/bin/env python3
"""Where PostgreSQL's time goes in team-server recalls: EXPLAIN ANALYZE of every statement, per scope kind.

Over `bench/team_load.py`'s fill (the same size and layout, from its cache or made now): the store is
copied into a throwaway PostgreSQL (`_pg.bulk_fill`), then one process recalls as a team member (a
shared repository: 25% of the table at the default layout) and as a person alone (a private one: 3%),
through `Engine.for_request` as the server does. Per scope kind: recall wall p50 over 20 queries, then
each statement of 15 more recalls re-run under EXPLAIN ANALYZE (`_pg.explain_recall`): p50, max and
total execution ms per statement kind, and the slowest plan.

    .venv/bin/python bench/team_explain.py                       # 100k (the load bench's cache)
    .venv/bin/python bench/team_explain.py --size 10000 --json out.json
    .venv/bin/python bench/team_explain.py --keyword-budget 6000 --json a.json   # the big-scope budget as before
    .venv/bin/python bench/team_explain.py --compare a.json                      # same top-10s as that run?
    .venv/bin/python bench/team_explain.py --shared-buffers 1GB --pg-plan exact  # a server with RAM to spare

Each timed recall's top-10 ids go into the JSON; `--compare` says for how many queries they are the same
as in an earlier run's JSON (same fill and queries), and the mean overlap.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
import _common as C  # noqa: E402
import _pg  # noqa: E402
import team_load  # noqa: E402
from latency import gen_queries  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    team_load.fill_args(ap)
    ap.add_argument("--json", metavar="PATH", help="write everything as JSON")
    ap.add_argument(
        "--keyword-budget",
        type=int,
        metavar="N",
        help="the keyword postings budget of big scopes (search/keywords.py KEYWORD_BIG_SCOPE_BUDGET)",
    )
    ap.add_argument("--compare", metavar="PATH", help="an earlier run's JSON: how many top-10s are the same")
    ap.add_argument("--shared-buffers", metavar="SIZE", help="the server's shared_buffers (default: the test server's)")
    ap.add_argument("--pg-plan", default="auto", choices=("auto", "exact", "hnsw"),
                    help="the vector plan (default auto, by scope size, as served)")  # fmt: skip
    args = ap.parse_args()
    if args.keyword_budget is not None:
        import memoryd.search.keywords as kw

        kw.KEYWORD_BIG_SCOPE_BUDGET = args.keyword_budget
    earlier = json.loads(Path(args.compare).read_text()) if args.compare else None
    _pg.force_plan(args.pg_plan)

    from memoryd.shared.config import Settings
    from tests.pg import start_server

    m = C.machine()
    C.print_machine(m)
    crew = team_load.people(args.clients, args.teams)
    with tempfile.TemporaryDirectory() as tmp:
        fill, _ = team_load.cached_fill(args, crew, Path(tmp))
        server = start_server(settings={"shared_buffers": args.shared_buffers} if args.shared_buffers else None)
        try:
            dsn = server.fresh_database(template=None)
            started = time.monotonic()
            _pg.bulk_fill(fill / "memoryd.db", dsn)
            print(f"copied into PostgreSQL in {time.monotonic() - started:.0f} s", flush=True)
            home = Path(tmp) / "home"
            settings = Settings(home=home, db=dsn)
            out: dict[str, Any] = {
                "machine": m,
                "size": args.size,
                "keyword_budget": args.keyword_budget,
                "shared_buffers": args.shared_buffers,
                "pg_plan": args.pg_plan,
                "scopes": {},
            }
            queries = gen_queries(40)
            with team_load.person_views(settings, crew, tmp) as views:
                for kind, view in views:
                    for q in queries[:5]:  # warm-up
                        view.recall(q, max_results=10)
                    walls, hits = [], []
                    for q in queries[5:25]:
                        t = time.perf_counter()
                        result = view.recall(q, max_results=10)
                        walls.append((time.perf_counter() - t) * 1000)
                        hits.append([h.atom.id for h in result.hits])
                    stmts: dict[str, list[dict[str, Any]]] = {}
                    for q in queries[25:40]:
                        for st in _pg.explain_recall(view.store, lambda q=q, v=view: v.recall(q, max_results=10)):
                            stmts.setdefault(st["kind"], []).append(st)
                    rows = sorted(
                        ((k, [s["exec_ms"] or 0.0 for s in v]) for k, v in stmts.items()), key=lambda kv: -sum(kv[1])
                    )
                    slowest = max((s for v in stmts.values() for s in v), key=lambda s: s["exec_ms"] or 0.0)
                    out["scopes"][kind] = {
                        "scope": view.scope.name, "tenant": view.scope.tenant_id, "recall_wall_p50_ms": statistics.median(walls),
                        "statements": {k: {"n": len(ex), "p50_ms": statistics.median(ex), "max_ms": max(ex), "total_ms": sum(ex)}
                                       for k, ex in rows},
                        "slowest_plan": slowest["plan"], "hits": hits,
                    }  # fmt: skip
                    print(f"\n## {kind} scope {view.scope.name} ({view.scope.tenant_id}): recall wall p50 "
                          f"{statistics.median(walls):.1f} ms")  # fmt: skip
                    print(C.table(["statement", "n", "exec p50 ms", "max ms", "total ms"],
                                  [[k, len(ex), C.fmt(statistics.median(ex), 2), C.fmt(max(ex), 2), C.fmt(sum(ex), 1)]
                                   for k, ex in rows]))  # fmt: skip
                    print(f"slowest plan:\n{slowest['plan']}")
                    if earlier is not None and kind in earlier["scopes"] and "hits" in earlier["scopes"][kind]:
                        out["scopes"][kind]["compare"] = same = _compare(earlier["scopes"][kind]["hits"], hits)
                        print(f"top-10 as in {args.compare}: {same['identical']} of {same['queries']} identical,"
                              f" mean overlap {same['overlap']:.3f}")  # fmt: skip
            C.write_json(args.json, out)
        finally:
            server.stop()


def _compare(before: list[list[str]], after: list[list[str]]) -> dict[str, Any]:
    """Queries whose top-10 ids are the same (in order), and the mean share of ids in common."""
    pairs = list(zip(before, after, strict=True))
    overlap = [len(set(a) & set(b)) / max(1, len(a), len(b)) for a, b in pairs]
    return {"queries": len(pairs), "identical": sum(a == b for a, b in pairs), "overlap": statistics.mean(overlap)}


if __name__ == "__main__":
    main()
