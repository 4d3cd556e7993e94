"""Recall's candidates and their facts (the read path of a recall)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..base import (
    CandidateFacts,
    Vector,
)
from .core import C, SqlCore


class IndexSql(SqlCore[C]):
    """Recall's candidates and their facts (the read path of a recall)."""

    def candidate_facts(self, atom_ids: Sequence[str], *, query: Vector | None = None) -> dict[str, CandidateFacts]:
        ids, d = list(dict.fromkeys(atom_ids)), self.dialect
        if not ids:
            return {}
        cond, params = d.any_of("a.id", ids)
        # A backend that reads vectors in SQL gives the cosines in this same statement (one round trip fewer
        # per recall on PostgreSQL); the others compute them after (`cosines`).
        cos_sql, cos_params = self._cosine_column(query) if query is not None else (None, [])
        rows = self._rows("SELECT a.id, a.status, a.scope_hash, a.type, a.epistemic, a.updated_at, a.last_accessed_at,"
                          f" {d.terms_sql}, {d.entities_sql}, a.polarity, {cos_sql or 'NULL'} FROM atoms a"
                          f" {d.terms_join} WHERE {cond}", [*cos_params, *params])  # fmt: skip
        cosines = self.cosines(query, ids) if query is not None and cos_sql is None else {}
        return {r[0]: CandidateFacts(status=r[1], scope_hash=r[2], type=r[3], epistemic=r[4], updated_at=d.read_time(r[5]),
                                     last_accessed_at=self._time(r[6]), terms=d.read_terms(r[7]),
                                     entities=tuple(d.read_list(r[8])), polarity=r[9],
                                     cos=cosines.get(r[0]) if cos_sql is None else self._read_cosine(r[10]))
                for r in rows}  # fmt: skip

    def model_cosines(self, model: str, query: Vector, atom_ids: Sequence[str]) -> dict[str, float]:
        ids, d = list(dict.fromkeys(atom_ids)), self.dialect
        if not ids:
            return {}
        cond, params = d.any_of("a.atom_id", ids)
        # a few hundred vectors of 384 floats: read and multiplied here, the same on both backends
        rows = self._rows(f"SELECT a.atom_id, {d.vector_sql} FROM model_vectors a WHERE a.model = ? AND {cond}",
                          [model, *params])  # fmt: skip
        q = np.asarray(query, dtype=np.float32).ravel()
        out = {}
        for atom_id, value in rows:
            v = d.read_vector(value)
            if v is not None and v.shape == q.shape:
                out[atom_id] = float(v @ q)
        return out

    def missing_model_vectors(self, model: str, *, limit: int) -> list[tuple[str, str]]:
        rows = self._rows("SELECT a.id, a.content FROM atoms a WHERE a.content <> '' AND NOT EXISTS"
                          " (SELECT 1 FROM model_vectors v WHERE v.atom_id = a.id AND v.model = ?)"
                          " ORDER BY a.seq LIMIT ?", [model, int(limit)])  # fmt: skip
        return [(r[0], r[1]) for r in rows]

    def _cosine_column(self, query: Vector) -> tuple[str | None, list[Any]]:
        """An SQL expression for the cosine of `query` with `atoms a`'s vector, and its parameters; (None, [])
        where vectors are not read in SQL (then `cosines` is asked)."""
        return None, []

    def _read_cosine(self, value: Any) -> float | None:
        return None if value is None else float(value)

    if TYPE_CHECKING:  # each store's own (IndexReads.cosines)

        def cosines(self, query: Vector, atom_ids: Sequence[str]) -> dict[str, float]: ...
