#!/usr/bin/env python3
"""Entity candidates on SQLite at the load bench's size: migration 9's cost, and the old and new statements.

Copies `bench/team_load.py`'s cached fill (SQLite, 100k by default) to a temporary folder, opens it with
this tree's store (which applies migration 9: each edge takes its atom's scope; timed), then for the
biggest scope, a small one and both together, and the fill's most mentioned entities (alone and in
threes), runs `atoms_for_entities` and the statement it replaced (before migration 9, on the same
database): the answers must be the same, and the time of each is the median of 5 runs.

    .venv/bin/python bench/entity_candidates.py                 # 100k (the load bench's cache)
    .venv/bin/python bench/entity_candidates.py --size 20000 --json out.json
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
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

LIMIT = 50  # recall's candidate pool for 10 results
# The statement before migration 9 (storage/sqlite.py at 9b95c98): each entity's mentions newest first
# through edges_dst (named: the planner could now take the new index and sort), each atom's scope and
# status looked up until 4×limit pass.
_OLD_ARM = ("SELECT src FROM (SELECT e.src FROM edges e INDEXED BY edges_dst JOIN atoms b ON b.id = e.src WHERE e.dst = ?"
            " AND e.kind = 'mentions' AND b.scope_hash IN ({scopes}) AND b.status IN ('active')"
            " ORDER BY e.rowid DESC LIMIT ?)")  # fmt: skip


def old_statement(conn: sqlite3.Connection, entities: list[str], scopes: list[str]) -> list[str]:
    arm = _OLD_ARM.format(scopes=", ".join("?" * len(scopes)))
    sql = (f"SELECT a.id, count(*) AS n FROM ({' UNION ALL '.join([arm] * len(entities))}) e JOIN atoms a"
           " ON a.id = e.src GROUP BY a.id ORDER BY n DESC, a.seq DESC LIMIT ?")  # fmt: skip
    params = [x for e in entities for x in (e, *scopes, LIMIT * 4)] + [LIMIT]
    return [r[0] for r in conn.execute(sql, params)]


def timed(fn: Any, runs: int = 5) -> tuple[Any, float]:
    out, times = None, []
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t) * 1000)
    return out, statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    team_load.fill_args(ap)
    ap.add_argument("--json", metavar="PATH", help="write everything as JSON")
    args = ap.parse_args()

    from memoryd.storage.sqlite import SqliteStore

    m = C.machine()
    C.print_machine(m)
    crew = team_load.people(args.clients, args.teams)
    with tempfile.TemporaryDirectory() as tmp:
        fill, _ = team_load.cached_fill(args, crew, Path(tmp))
        db = Path(tmp) / "memoryd.db"
        shutil.copy(fill / "memoryd.db", db)
        with sqlite3.connect(db) as conn:
            # A fill made while a since-removed migration 9 existed records that version: forget it here.
            names = dict(conn.execute("SELECT version, name FROM schema_migrations").fetchall())
            if names.get(9, "").startswith("vectors kept"):
                conn.execute("DELETE FROM schema_migrations WHERE version = 9")
            edges = conn.execute("SELECT count(*) FROM edges").fetchone()[0]
        t = time.perf_counter()
        store = SqliteStore(db)
        migrate_s = time.perf_counter() - t
        print(f"opened with migration 9 in {migrate_s:.1f} s ({edges} edges)", flush=True)
        out: dict[str, Any] = {"machine": m, "size": args.size, "edges": edges, "migrate_s": migrate_s, "cases": []}
        try:
            conn = sqlite3.connect(db)
            sizes = conn.execute(
                "SELECT scope_hash, count(*) FROM atoms GROUP BY scope_hash ORDER BY 2 DESC"
            ).fetchall()
            big, small = sizes[0], next(s for s in sizes if s[1] <= sizes[0][1] // 5)
            common = [r[0] for r in conn.execute("SELECT dst FROM edges WHERE kind = 'mentions' GROUP BY dst"
                                                  " ORDER BY count(*) DESC LIMIT 12")]  # fmt: skip
            rows = []
            for label, scopes in ((f"big ({big[1]} atoms)", [big[0]]), (f"small ({small[1]} atoms)", [small[0]]),
                                  ("both", [big[0], small[0]])):  # fmt: skip
                for entities in [[e] for e in common[:6]] + [common[i : i + 3] for i in range(0, 12, 3)]:
                    old, old_ms = timed(lambda e=entities, s=scopes: old_statement(conn, e, s))
                    new, new_ms = timed(lambda e=entities, s=scopes: store.atoms_for_entities(
                        e, scope_hashes=s, statuses=["active"], limit=LIMIT))  # fmt: skip
                    out["cases"].append({"scopes": label, "entities": len(entities), "same": old == new,
                                         "found": len(new), "old_ms": old_ms, "new_ms": new_ms})  # fmt: skip
                    rows.append([label, len(entities), len(new), "yes" if old == new else "NO",
                                 C.fmt(old_ms, 2), C.fmt(new_ms, 2)])  # fmt: skip
            print(C.table(["scopes", "entities", "found", "same answer", "old ms", "new ms"], rows))
            conn.close()
        finally:
            store.close()
    C.write_json(args.json, out)


if __name__ == "__main__":
    main()
