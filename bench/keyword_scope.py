#!/usr/bin/env python3
"""The keyword statement before and after migration 11 (issue 27), on one database: time and same answers.

Over `bench/team_load.py`'s fill (its cache, or made now), copied into a throwaway PostgreSQL
(`_pg.bulk_fill`, this tree's schema), with the old whole-table index `atoms_kw` made again beside
`atoms_scope_kw`, whose build is timed (what migration 11 costs a store of this size). For a team member
(a shared repository: 25% of the table at the default layout) and a person alone (a private one: 3%), the
keyword calls of --queries recalls are recorded, then each is run --rounds times both ways, alternately:
`before` is the statement as it was (terms matched through `atoms_kw` over the whole table, the scope
filtered after), `after` is the store's own (`PgIndex.keyword_candidates`: each term looked up under the
recall's scopes). Prints ms per statement (wall, client side) and how many candidate lists are identical,
in order.

    .venv/bin/python bench/keyword_scope.py                       # 100k, 60 recalls, 3 rounds
    .venv/bin/python bench/keyword_scope.py --size 20000 --json out.json
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
from latency import gen_queries  # noqa: E402


def before(store: Any, terms: Sequence[str], *, scope_hashes: Sequence[str], statuses: Sequence[str], limit: int,
           stats: Any = None) -> list[str]:  # fmt: skip
    """The keyword statement as migration 10 left it (storage/pg_index.py at 509425a)."""
    from memoryd.storage.pg_index import _tsquery, lexemes

    lex, _, weight = (
        store._selective(lexemes(terms), stats, scope_hashes) if scope_hashes and statuses else ([], False, {})
    )
    if not lex:
        return []
    score = " + ".join("CASE WHEN a.kw @@ ?::tsquery THEN ?::float8 ELSE 0 END" for _ in lex)
    return [r[0] for r in store._rows(
        "SELECT a.id FROM atoms a WHERE a.kw @@ ?::tsquery AND a.scope_hash = ANY(?::text[])"
        f" AND a.status = ANY(?::text[]) ORDER BY {score} DESC, a.seq DESC LIMIT ?",
        [_tsquery(lex), list(scope_hashes), list(statuses), *[x for t in lex for x in (_tsquery([t]), weight[t])],
         limit])]  # fmt: skip


def _keyword_calls(view: Any, queries: Sequence[str]) -> list[tuple[list[str], dict[str, Any]]]:
    """The arguments of every keyword call these recalls make (the store's method, wrapped meanwhile)."""
    from memoryd.storage.pg_index import PgIndex

    calls: list[tuple[list[str], dict[str, Any]]] = []
    after = PgIndex.keyword_candidates

    def recording(self: Any, terms: Sequence[str], **kw: Any) -> list[str]:
        calls.append((list(terms), kw))
        return after(self, terms, **kw)

    PgIndex.keyword_candidates = recording  # type: ignore[method-assign]
    try:
        for q in queries:
            view.recall(q, max_results=10)
    finally:
        PgIndex.keyword_candidates = after  # type: ignore[method-assign]
    return calls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    team_load.fill_args(ap)
    team_load.replay_args(ap, "keyword", shared_buffers="1GB")
    args = ap.parse_args()

    import psycopg

    from memoryd.shared.config import Settings
    from memoryd.storage.pg_index import PgIndex

    m = C.machine()
    C.print_machine(m)
    crew = team_load.people(args.clients, args.teams)
    out: dict[str, Any] = {"machine": m, "size": args.size, "shared_buffers": args.shared_buffers, "scopes": {}}
    with tempfile.TemporaryDirectory() as tmp:
        with team_load.postgres_copy(args, crew, Path(tmp), shared_buffers=args.shared_buffers) as (_, dsn):
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("CREATE INDEX atoms_kw ON atoms USING gin (kw)")  # what migration 11 dropped
                t = time.perf_counter()  # what migration 11 costs a store of this size: its index built anew
                conn.execute("REINDEX INDEX atoms_scope_kw")
                out["build_s"] = build_s = time.perf_counter() - t
                conn.execute("ANALYZE atoms")
            print(f"atoms_scope_kw built in {build_s:.1f} s (REINDEX: migration 11's cost at this size)", flush=True)
            settings = Settings(home=Path(tmp) / "home", db=dsn)
            queries = gen_queries(args.queries)
            rows = []
            with team_load.person_views(settings, crew, tmp) as views:
                for kind, view in views:
                    store = view.store
                    calls = _keyword_calls(view, queries)
                    after = PgIndex.keyword_candidates
                    ms: dict[str, list[float]] = {"before": [], "after": []}
                    same = 0
                    for _ in range(args.rounds):
                        for terms, kw in calls:
                            t = time.perf_counter()
                            old = before(store, terms, **kw)
                            ms["before"].append((time.perf_counter() - t) * 1000)
                            t = time.perf_counter()
                            new = after(store, terms, **kw)
                            ms["after"].append((time.perf_counter() - t) * 1000)
                            same += old == new
                    runs = len(ms["after"])
                    out["scopes"][kind] = {
                        "scope": view.scope.name, "calls": len(calls), "runs": runs, "identical": same,
                        **{f"{side}_{stat}_ms": fn(v) for side, v in ms.items()
                           for stat, fn in (("p50", statistics.median), ("mean", statistics.mean))},
                    }  # fmt: skip
                    b, a = statistics.median(ms["before"]), statistics.median(ms["after"])
                    rows.append([kind, len(calls), C.fmt(b, 2), C.fmt(a, 2), C.fmt(b / a, 2), f"{same}/{runs}"])
            print(C.table(["scope", "keyword calls", "before p50 ms", "after p50 ms", "before/after", "identical"],
                          rows))  # fmt: skip
            C.write_json(args.json, out)


if __name__ == "__main__":
    main()
