"""PostgreSQL's recall candidates: keyword, vector and entity candidates, and the scope sizes that pick the plan.

The read path of a recall on PostgreSQL (`PostgresStore` mixes this in): each statement is one round
trip, measured per statement by `bench/team_explain.py`.
"""

from __future__ import annotations

import math
import struct
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import psycopg
from psycopg.adapt import Dumper
from psycopg.pq import Format

from .base import TermStats, Vector
from .migrations import HALF_MAX
from .sql import SqlCore

__all__ = ["EXACT_MAX_ROWS", "MAX_DIM", "SCOPE_SIZE_TTL", "PgIndex", "VectorParam", "lexemes"]

# The vector plan: scopes holding at most this many vectors of the query's size are searched exactly (every
# vector of the scope, from the scope's vector index, migration 10); bigger ones through HNSW with iterative
# scan. At 100k memories (512 floats) the exact search costs ~1 ms per 1 000 vectors: 3 ms for a person's
# 3 000, where the filtered HNSW walk took 7-30 ms; HNSW wins from ~6 000 on (a team's 25 000: 2-6 ms).
EXACT_MAX_ROWS = 5_000
# How long a scope's size is trusted for choosing the plan (it picks the plan, never the answer).
SCOPE_SIZE_TTL = 30.0
MAX_DIM = 16000  # pgvector's limit for the `vector` and `halfvec` types
_MAX_LEXEME = 2046  # tsvector lexemes are at most 2046 bytes and may not be empty


def lexemes(terms: Sequence[str]) -> list[str]:
    """Terms a tsvector can hold: non-empty, at most 2046 bytes (longer ones are left unindexed)."""
    return [t for t in dict.fromkeys(terms) if t and len(t.encode()) <= _MAX_LEXEME]


def _tsquery(terms: Sequence[str]) -> str:
    """An OR of exact lexemes, quoted so no term is parsed (quotes and backslashes doubled)."""
    return " | ".join("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms)


class VectorParam:
    """A vector parameter in pgvector's binary form: no text to format here or to parse on the server (formatting
    512 floats as text was ~9% of a recall's sampled CPU, py-spy by hand). Sent with no type: the server takes it
    from the statement (the column written, or the cast the statement puts on it)."""

    __slots__ = ("data",)

    def __init__(self, values: np.ndarray, *, half: bool) -> None:
        # vector_recv / halfvec_recv: dimensions and a zero as 16-bit integers, then each value big-endian
        self.data = struct.pack(">HH", values.shape[0], 0) + values.astype(">f2" if half else ">f4").tobytes()


class _VectorDumper(Dumper):
    format = Format.BINARY

    def dump(self, obj: VectorParam) -> bytes:
        return obj.data


psycopg.adapters.register_dumper(VectorParam, _VectorDumper)


def _half(query: Vector) -> VectorParam | None:
    """The query as a halfvec (the vector indexes are of the 16-bit copy, migration 12); None when it has no such
    form: empty, too long, or a value not finite or past a 16-bit float's range (NaN fails the comparison)."""
    v = np.asarray(query, dtype=np.float32).ravel()
    ok = 0 < v.shape[0] <= MAX_DIM and bool((np.abs(v) <= HALF_MAX).all())
    return VectorParam(v, half=True) if ok else None


def _cos(value: float | None) -> float:
    return 0.0 if value is None or math.isnan(value) else float(value)  # pgvector: NaN for a zero vector


class PgIndex(SqlCore[psycopg.Connection[Any]]):
    """Keyword, vector and entity candidates of a recall, and the scope sizes that choose the vector plan."""

    _sizes: dict[tuple[str, int], tuple[float, int]]  # (scope, dims) → (when counted, vectors up to the bound)

    def term_stats(self, terms: Sequence[str], *, scope_hashes: Sequence[str]) -> TermStats:
        unique, scopes = list(dict.fromkeys(terms)), list(dict.fromkeys(scope_hashes))
        row = self._one("SELECT (SELECT coalesce(sum(docs), 0) FROM scope_docs WHERE scope_hash = ANY(?::text[])),"
                        " (SELECT coalesce(jsonb_object_agg(term, df), '{}') FROM (SELECT term, sum(df) AS df"
                        " FROM scope_terms WHERE scope_hash = ANY(?::text[]) AND term = ANY(?::text[]) GROUP BY term) s)",
                        (scopes, scopes, unique))  # fmt: skip
        return int(row[0]), {t: 0 for t in unique} | {k: int(v) for k, v in row[1].items()}

    def keyword_candidates(self, terms: Sequence[str], *, scope_hashes: Sequence[str], statuses: Sequence[str],
                           limit: int, stats: TermStats | None = None) -> list[str]:  # fmt: skip
        # Match the query's most selective terms (all of them on small stores, `selective_terms`) within
        # these scopes only, through `atoms_scope_kw` (migration 11: each term indexed as `<scope>:<term>`);
        # rank by the IDF mass of those terms each atom holds (the engine's own keyword score, before
        # calibration), newest first among equals. The scope and status are checked again on the rows
        # found, outside the OFFSET 0 fence: inside it the planner ANDed the scope index's bitmap in
        # (25 000 rows for a team scope, 2.3 ms of a 6.6 ms statement in one EXPLAIN ANALYZE by hand), which
        # narrows nothing here.
        lex, _, weight = (
            self._selective(lexemes(terms), stats, scope_hashes) if scope_hashes and statuses else ([], False, {})
        )
        scopes = list(dict.fromkeys(scope_hashes))
        scoped = lexemes([f"{h}:{t}" for t in lex for h in scopes])  # a term too long for a scope is not indexed
        if not scoped:
            return []
        score = " + ".join("CASE WHEN a.kw @@ ?::tsquery THEN ?::float8 ELSE 0 END" for _ in lex)
        return [r[0] for r in self._rows(
            "SELECT a.id FROM (SELECT id, seq, kw, scope_hash, status FROM atoms"
            " WHERE memoryd_scope_kw(scope_hash, kw) @@ ?::tsquery OFFSET 0) a"
            f" WHERE a.scope_hash = ANY(?::text[]) AND a.status = ANY(?::text[]) ORDER BY {score} DESC, a.seq DESC"
            " LIMIT ?",
            [_tsquery(scoped), scopes, list(statuses), *[x for t in lex for x in (_tsquery([t]), weight[t])],
             limit])]  # fmt: skip

    def atoms_for_entities(self, entity_ids: Sequence[str], *, scope_hashes: Sequence[str], statuses: Sequence[str],
                           limit: int) -> list[str]:  # fmt: skip
        if not entity_ids:
            return []
        # The newest 4×limit mentions of each entity within these scopes (ULIDs sort by time), so a common
        # entity costs about the same on a big store as on a small one, and mentions elsewhere (another
        # tenant's) never crowd these scopes' out. Each (entity, scope) pair is one backward range of
        # `edges_dst_scope` (the edge carries its atom's scope, migration 9): only the rows kept are read,
        # then merged newest first per entity. The atom's own scope is checked again (it is read anyway,
        # for its status and its `seq`, which orders ties): an edge could never widen what a recall sees.
        # Each atom is read once: carrying `seq` out of that read halved the atoms visited (the statement
        # joined `atoms` again for it).
        return [r[0] for r in self._rows(
            "SELECT m.src, count(*) AS n, m.seq FROM unnest(?::text[]) AS q(dst)"
            " CROSS JOIN LATERAL (SELECT s.src, s.seq FROM unnest(?::text[]) AS h(scope_hash) CROSS JOIN LATERAL"
            " (SELECT e.src, b.seq FROM edges e JOIN atoms b ON b.id = e.src WHERE e.dst = q.dst"
            " AND e.kind = 'mentions' AND e.scope_hash = h.scope_hash AND b.scope_hash = h.scope_hash"
            " AND b.status = ANY(?::text[]) ORDER BY e.src DESC LIMIT ?) s ORDER BY s.src DESC LIMIT ?) m"
            " GROUP BY m.src, m.seq ORDER BY n DESC, m.seq DESC LIMIT ?",
            (list(entity_ids), list(dict.fromkeys(scope_hashes)), list(statuses), limit * 4, limit * 4, limit))]  # fmt: skip

    def _scope_vectors(self, scope_hashes: Sequence[str], n: int) -> int:
        """Vectors of size `n` in these scopes, counted at most every SCOPE_SIZE_TTL seconds per scope and only up
        to EXACT_MAX_ROWS + 1 each (all the plan needs to know), from `atoms_scope_vectors_N` alone."""
        now = time.monotonic()
        scopes = list(dict.fromkeys(scope_hashes))
        stale = [h for h in scopes if now - self._sizes.get((h, n), (-1e9, 0))[0] > SCOPE_SIZE_TTL]
        if stale:
            counted = {r[0]: int(r[1]) for r in self._rows(
                "SELECT h, (SELECT count(*) FROM (SELECT 1 FROM atoms WHERE scope_hash = h AND"
                f" vector_dims(embedding_half) = {n} AND seq > 0 LIMIT ?) c) FROM unnest(?::text[]) AS h",
                (EXACT_MAX_ROWS + 1, stale))}  # fmt: skip
            for h in stale:
                self._sizes[(h, n)] = (now, counted.get(h, 0))
        return sum(self._sizes[(h, n)][1] for h in scopes)

    def vector_candidates(self, query: Vector, *, scope_hashes: Sequence[str], k: int) -> list[tuple[str, float]]:
        q = _half(query)
        if q is None or not scope_hashes or k <= 0:
            return []
        n = int(np.asarray(query).size)
        if self._scope_vectors(scope_hashes, n) <= EXACT_MAX_ROWS:
            # A small scope (a person's repository is a few thousand rows): every one of its vectors, read in
            # order from `atoms_scope_halfvec_N` (migrations 10, 12: `seq > 0` is that index's mark) without
            # visiting the table. Exact, and cheaper than a filtered HNSW walk that must skip the other scopes'
            # rows; the subquery's OFFSET 0 keeps the planner off the HNSW index (which only answers an ORDER BY)
            # without storing every row's distance first, as a MATERIALIZED CTE did (a person's 3 125: 2.67 ms
            # mean against 3.45, bench/vector_plans.py at 100k). A size without that index is read from the table, still
            # exactly. All vector reads are of the 16-bit copy (migration 12).
            return [(r[0], _cos(r[1])) for r in self._rows(
                f"SELECT id, 1 - d FROM (SELECT id, embedding_half::halfvec({n}) <=> ?::halfvec({n}) AS d FROM atoms"
                f" WHERE scope_hash = ANY(?::text[]) AND vector_dims(embedding_half) = {n} AND seq > 0 OFFSET 0) s"
                " ORDER BY d, id LIMIT ?", (q, list(scope_hashes), k))]  # fmt: skip
        # A big scope: HNSW, written exactly as the partial index of this size is defined so the planner
        # uses it, with iterative scan (`_configure`: relaxed order) so the scope filter still yields k rows,
        # then put in order here: by `d + 0`, since PostgreSQL 17+ takes a CTE's rows as sorted by `d` (the
        # index's order, which relaxed order does not keep). Vectors of another model's size never match.
        return [(r[0], _cos(r[1])) for r in self._rows(
            f"WITH s AS MATERIALIZED (SELECT id, embedding_half::halfvec({n}) <=> ?::halfvec({n}) AS d FROM atoms"
            f" WHERE vector_dims(embedding_half) = {n} AND scope_hash = ANY(?::text[])"
            f" ORDER BY embedding_half::halfvec({n}) <=> ?::halfvec({n}) LIMIT ?) SELECT id, 1 - d FROM s"
            " ORDER BY d + 0, id", (q, list(scope_hashes), q, k))]  # fmt: skip

    def _cosine_column(self, query: Vector) -> tuple[str | None, list[Any]]:
        """`candidate_facts(query=...)` reads the cosines with the facts, as `cosines` would (16-bit copies;
        NULL for another size or no copy): one statement per recall fewer."""
        q = _half(query)
        if q is None:
            return "NULL", []
        n = int(np.asarray(query).size)
        return f"CASE WHEN vector_dims(a.embedding_half) = {n} THEN 1 - (a.embedding_half <=> ?::halfvec({n})) END", [q]

    def _read_cosine(self, value: Any) -> float | None:
        return None if value is None else _cos(value)

    def cosines(self, query: Vector, atom_ids: Sequence[str]) -> dict[str, float]:
        """The cosines `candidate_facts(query=...)` reads with the facts, on their own (atoms without a copy of the
        query's size are left out): the same expression, `_cosine_column`."""
        cos_sql, params = self._cosine_column(query)
        if not atom_ids or not params:  # no halfvec form of the query: no cosine
            return {}
        rows = self._rows(f"SELECT a.id, {cos_sql} FROM atoms a WHERE a.id = ANY(?::text[])", [*params, list(atom_ids)])
        return {r[0]: _cos(r[1]) for r in rows if r[1] is not None}
