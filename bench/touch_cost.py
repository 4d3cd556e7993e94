#!/usr/bin/env python3
"""What a recall's access-time write costs PostgreSQL (issue 27, migration 10): HOT or not.

Over `bench/team_load.py`'s fill (its cache, or made now), copied into a throwaway PostgreSQL
(`_pg.bulk_fill`, the schema of this tree): per round, --rows random memories get their access time written
three ways, each on rows of its own:

* `store.touch` — the store's own batched write, as a team server flushes it (wall time);
* `last_accessed_at` — the same UPDATE in one transaction, with the rows updated in place (HOT) counted
  from `pg_stat_xact_user_tables`;
* `updated_at` — an UPDATE of a column that an index holds, for comparison: what every touch cost while
  `atoms_decay` held `last_accessed_at` (each update a new entry in every index, HNSW and GIN included).

    .venv/bin/python bench/touch_cost.py                       # 100k, 500 rows, 3 rounds
    .venv/bin/python bench/touch_cost.py --size 20000 --json out.json
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
import _common as C  # noqa: E402
import team_load  # noqa: E402


def _update(conn: Any, assignment: str, ids: list[str]) -> tuple[float, int, int]:
    """(ms, rows updated, of them HOT) of one UPDATE on these rows, in its own transaction."""
    counts = "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables WHERE relname = 'atoms'"
    with conn.transaction():  # the view also holds this backend's counts not yet flushed: a difference
        upd0, hot0 = conn.execute(counts).fetchone()
        t = time.perf_counter()
        conn.execute(f"UPDATE atoms SET {assignment} WHERE id = ANY(%s)", (ids,))
        ms = (time.perf_counter() - t) * 1000
        upd, hot = conn.execute(counts).fetchone()
    return ms, int(upd - upd0), int(hot - hot0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    team_load.fill_args(ap)
    ap.add_argument("--rows", type=int, default=500, help="rows written per way and round (default 500)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    ap.add_argument("--json", metavar="PATH", help="write everything as JSON")
    args = ap.parse_args()

    import psycopg

    from memoryd.storage.postgres import PostgresStore

    m = C.machine()
    C.print_machine(m)
    crew = team_load.people(args.clients, args.teams)
    with tempfile.TemporaryDirectory() as tmp:
        with team_load.postgres_copy(args, crew, Path(tmp), shared_buffers=None) as (_, dsn):
            store = PostgresStore(dsn)
            rounds: dict[str, list[tuple[float, int, int]]] = {"store.touch": [], "last_accessed_at": [],
                                                                "updated_at": []}  # fmt: skip
            with psycopg.connect(dsn, autocommit=True) as conn:
                need = 3 * args.rows * args.rounds
                ids = [r[0] for r in conn.execute("SELECT id FROM atoms WHERE last_accessed_at IS NULL"
                                                  " ORDER BY random() LIMIT %s", (need,))]  # fmt: skip
                if len(ids) < need:
                    raise SystemExit(f"the store has {len(ids)} untouched memories; {need} are needed")
                for r in range(args.rounds):
                    part = [ids[(3 * r + i) * args.rows : (3 * r + i + 1) * args.rows] for i in range(3)]
                    t = time.perf_counter()
                    store.touch(part[0], now=True)
                    rounds["store.touch"].append(((time.perf_counter() - t) * 1000, len(part[0]), -1))
                    rounds["last_accessed_at"].append(_update(conn, "last_accessed_at = now()", part[1]))
                    rounds["updated_at"].append(_update(conn, "updated_at = updated_at + interval '1 second'", part[2]))
            store.close()
    rows = []
    for way, got in rounds.items():
        hot = "-" if got[0][2] < 0 else f"{sum(g[2] for g in got)} of {sum(g[1] for g in got)}"
        rows.append([way, C.fmt(statistics.median(g[0] for g in got), 1), C.fmt(max(g[0] for g in got), 1), hot])
    print(f"\n## {args.rows} random rows per write, {args.rounds} rounds, {args.size} memories")
    print(C.table(["write", "p50 ms", "max ms", "updated in place (HOT)"], rows))
    C.write_json(args.json, {"machine": m, "size": args.size, "rows": args.rows, "rounds": rounds})


if __name__ == "__main__":
    main()
