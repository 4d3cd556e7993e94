#!/usr/bin/env python3
"""The vector statements before and after migration 12 (issue 27), on one database: time, same answers, and
what the migration costs a store of this size.

Over `bench/team_load.py`'s fill (its cache, or made now), copied into a throwaway PostgreSQL
(`_pg.bulk_fill`, this tree's schema). Migration 12 is then run again on the full table, timed (its column
dropped first, with the indexes on it): what an upgrade costs at this size. The 32-bit indexes migration 12
dropped are built again beside the 16-bit ones. For a team member (a shared repository: 25% of the table at
the default layout, HNSW) and a person alone (a private one: 3%, exact), the vector calls of --queries recalls
are recorded (`vector_candidates`, and the candidates `candidate_facts` reads cosines for, replayed through
`cosines`), then each is run --rounds times both ways, alternately:
`before` is the statement as it was (32-bit `embedding`, through `atoms_embedding_N` / `atoms_scope_vectors_N`),
`after` the store's own (the 16-bit copy). Prints ms per statement (wall, client side), how many candidate
lists are identical in order, how many top 10s hold the same memories, the largest cosine difference, and
each side's recall@10 of the search against the true nearest neighbours (every 32-bit vector of the scopes).

    .venv/bin/python bench/vector_half.py                       # 100k, 60 recalls, 3 rounds
    .venv/bin/python bench/vector_half.py --size 20000 --json out.json
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
import _common as C  # noqa: E402
import team_load  # noqa: E402
from latency import gen_queries  # noqa: E402

# The 32-bit indexes as migrations 3 and 10 made them (of the query model's size only: the fill has no other).
OLD_INDEXES = (
    "CREATE INDEX atoms_scope_vectors_{n} ON atoms (scope_hash, id) INCLUDE (embedding)"
    " WHERE vector_dims(embedding) = {n} AND seq > 0",
    "CREATE INDEX atoms_embedding_{n} ON atoms USING hnsw ((embedding::vector({n})) vector_cosine_ops)"
    " WITH (m = 16, ef_construction = 64) WHERE vector_dims(embedding) = {n}",
)


def before_candidates(store: Any, query: Any, *, scope_hashes: Sequence[str], k: int) -> list[tuple[str, float]]:
    """`vector_candidates` as migration 11 left it (storage/pg_index.py at cf55f96): the same plan choice."""
    import numpy as np

    from memoryd.storage import pg_index

    q, n = store.dialect.vector(query), int(np.asarray(query).size)
    if store._scope_vectors(scope_hashes, n) <= pg_index.EXACT_MAX_ROWS:
        return [(r[0], pg_index._cos(r[1])) for r in store._rows(
            f"WITH s AS MATERIALIZED (SELECT id, embedding::vector({n}) <=> ?::vector({n}) AS d FROM atoms"
            f" WHERE scope_hash = ANY(?::text[]) AND vector_dims(embedding) = {n} AND seq > 0)"
            " SELECT id, 1 - d FROM s ORDER BY d, id LIMIT ?", (q, list(scope_hashes), k))]  # fmt: skip
    return [(r[0], pg_index._cos(r[1])) for r in store._rows(
        f"SELECT id, 1 - (embedding::vector({n}) <=> ?::vector({n})) FROM atoms"
        f" WHERE vector_dims(embedding) = {n} AND scope_hash = ANY(?::text[])"
        f" ORDER BY embedding::vector({n}) <=> ?::vector({n}) LIMIT ?", (q, list(scope_hashes), q, k))]  # fmt: skip


def before_cosines(store: Any, query: Any, atom_ids: Sequence[str]) -> dict[str, float]:
    """`cosines` as migration 11 left it: the 32-bit vectors, read from the table (kept out of line)."""
    import numpy as np

    from memoryd.storage import pg_index

    q, n = store.dialect.vector(query), int(np.asarray(query).size)
    rows = store._rows(f"SELECT id, 1 - (embedding::vector({n}) <=> ?::vector({n})) FROM atoms"
                       f" WHERE id = ANY(?::text[]) AND vector_dims(embedding) = {n}", (q, list(atom_ids)))  # fmt: skip
    return {r[0]: pg_index._cos(r[1]) for r in rows}


@contextmanager
def _exact_plan() -> Iterator[None]:
    """Every scope searched exactly, whatever its size (the plan's bound lifted meanwhile)."""
    from memoryd.storage import pg_index

    bound = pg_index.EXACT_MAX_ROWS
    pg_index.EXACT_MAX_ROWS = 10**12
    try:
        yield
    finally:
        pg_index.EXACT_MAX_ROWS = bound


def _vector_calls(view: Any, queries: Sequence[str]) -> list[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    """The arguments of every vector call these recalls make (the store's methods, wrapped meanwhile)."""
    from memoryd.storage.postgres import PostgresStore

    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
    originals = {name: getattr(PostgresStore, name) for name in ("vector_candidates", "candidate_facts")}
    assert not any(name in vars(PostgresStore) for name in originals)  # both inherited: shadowed, then unshadowed

    def recording(name: str) -> Callable[..., Any]:
        def wrapped(self: Any, *args: Any, **kw: Any) -> Any:
            if name == "vector_candidates":
                calls.append((name, args, kw))
            elif kw.get("query") is not None:  # the candidates' cosines are read with their facts (no own statement)
                calls.append(("cosines", (kw["query"], args[0]), {}))
            return originals[name](self, *args, **kw)

        return wrapped

    for name in originals:
        setattr(PostgresStore, name, recording(name))
    try:
        for q in queries:
            view.recall(q, max_results=10)
    finally:
        for name in originals:
            delattr(PostgresStore, name)
    return calls


def _as_list(result: Any) -> list[tuple[str, float]]:
    return list(result.items()) if isinstance(result, dict) else list(result)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    team_load.fill_args(ap)
    team_load.replay_args(ap, "vector", shared_buffers="2GB")
    args = ap.parse_args()

    import psycopg

    from memoryd.shared.config import Settings
    from memoryd.storage.migrations import INDEXED_DIMS, MIGRATIONS
    from memoryd.storage.pg_index import PgIndex

    m = C.machine()
    C.print_machine(m)
    crew = team_load.people(args.clients, args.teams)
    out: dict[str, Any] = {"machine": m, "size": args.size, "shared_buffers": args.shared_buffers, "calls": {}}
    (v12,) = [mig for mig in MIGRATIONS if mig.version == 12]
    with tempfile.TemporaryDirectory() as tmp:
        with team_load.postgres_copy(args, crew, Path(tmp), shared_buffers=args.shared_buffers) as (_, dsn):
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("SET maintenance_work_mem = '1GB'")

                def old_indexes() -> None:
                    for ddl in OLD_INDEXES:
                        for n in INDEXED_DIMS:
                            conn.execute(ddl.format(n=n))  # type: ignore[arg-type]

                # the table as migration 11 left it: no 16-bit copy (its indexes go with it), the 32-bit indexes
                conn.execute("ALTER TABLE atoms DROP COLUMN embedding_half")
                old_indexes()
                conn.execute("VACUUM ANALYZE atoms")
                t = time.perf_counter()
                with conn.transaction():
                    conn.execute(v12.script("postgres"))  # type: ignore[arg-type]
                out["migration_s"] = migration_s = time.perf_counter() - t
                old_indexes()  # beside the new ones, for the statements as they were
                conn.execute("VACUUM ANALYZE atoms")
                out["sizes_mb"] = sizes = {r[0]: round(r[1] / 2**20) for r in conn.execute(
                    "SELECT c.relname, pg_relation_size(c.oid) FROM pg_class c WHERE c.relname LIKE 'atoms_%%vec%%'"
                    " OR c.relname LIKE 'atoms_embedding_%%' OR c.relname LIKE 'atoms_%%half%%'"
                    " UNION ALL SELECT 'atoms', pg_relation_size('atoms')"
                    " UNION ALL SELECT 'atoms (TOAST)', pg_relation_size(reltoastrelid) FROM pg_class"
                    " WHERE relname = 'atoms'")}  # fmt: skip
            print(f"migration 12 on {args.size} memories: {migration_s:.1f} s (the table rewritten, its indexes built)")
            print(C.table(["relation", "MB"], sorted(sizes.items())))
            settings = Settings(home=Path(tmp) / "home", db=dsn)
            queries = gen_queries(args.queries)
            rows = []
            befores = {"vector_candidates": before_candidates, "cosines": before_cosines}
            with team_load.person_views(settings, crew, tmp) as views:
                for kind, view in views:
                    store = view.store
                    calls = _vector_calls(view, queries)
                    for name, before in befores.items():
                        mine = [(a, kw) for n, a, kw in calls if n == name]
                        after = getattr(PgIndex, name)
                        ms: dict[str, list[float]] = {"before": [], "after": []}
                        same = same10 = 0
                        diff = 0.0
                        found: dict[str, list[float]] = {"before": [], "after": []}  # recall@10 against exact
                        exact: list[list[str]] = []
                        if name == "vector_candidates":  # every vector of the scopes, 32-bit: the true neighbours
                            with _exact_plan():
                                exact = [[i for i, _ in before(store, *a, **kw)][:10] for a, kw in mine]
                        for _ in range(args.rounds):
                            for a, kw in mine:
                                t = time.perf_counter()
                                old = _as_list(before(store, *a, **kw))
                                ms["before"].append((time.perf_counter() - t) * 1000)
                                t = time.perf_counter()
                                new = _as_list(after(store, *a, **kw))
                                ms["after"].append((time.perf_counter() - t) * 1000)
                                old_ids, new_ids = [i for i, _ in old], [i for i, _ in new]
                                if name == "cosines":
                                    old_ids, new_ids = sorted(old_ids), sorted(new_ids)
                                same += old_ids == new_ids
                                same10 += set(old_ids[:10]) == set(new_ids[:10])
                                cos = dict(old)
                                diff = max([diff, *(abs(c - cos[i]) for i, c in new if i in cos)])
                                if exact:
                                    truth = exact[len(found["after"]) % len(mine)]
                                    for side, ids in (("before", old_ids), ("after", new_ids)):
                                        found[side].append(len(set(truth) & set(ids[:10])) / max(1, len(truth)))
                        runs = len(ms["after"])
                        b, a_ = statistics.median(ms["before"]), statistics.median(ms["after"])
                        out["calls"][f"{kind}/{name}"] = {
                            "scope": view.scope.name, "calls": len(mine), "runs": runs, "identical": same,
                            "same_top10": same10, "max_cosine_diff": diff,
                            **{f"{side}_recall10": statistics.mean(v) for side, v in found.items() if v},
                            **{f"{side}_{stat}_ms": fn(v) for side, v in ms.items()
                               for stat, fn in (("p50", statistics.median), ("mean", statistics.mean))},
                        }  # fmt: skip
                        recall = " / ".join(C.fmt(statistics.mean(v), 3) for v in found.values() if v) or "-"
                        rows.append([kind, name, len(mine), C.fmt(b, 2), C.fmt(a_, 2), C.fmt(b / a_, 2),
                                     f"{same}/{runs}", f"{same10}/{runs}", f"{diff:.1e}", recall])  # fmt: skip
            print(C.table(["scope", "call", "calls", "before p50 ms", "after p50 ms", "before/after", "identical",
                           "same top 10", "max cosine diff", "recall@10 before / after"], rows))  # fmt: skip
            C.write_json(args.json, out)


if __name__ == "__main__":
    main()
