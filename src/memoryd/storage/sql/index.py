"""Recall's candidates and their facts (the read path of a recall)."""

from __future__ import annotations

from collections.abc import Sequence

from ..base import (
    CandidateFacts,
)
from .core import C, SqlCore


class IndexSql(SqlCore[C]):
    """Recall's candidates and their facts (the read path of a recall)."""

    def candidate_facts(self, atom_ids: Sequence[str]) -> dict[str, CandidateFacts]:
        ids, d = list(dict.fromkeys(atom_ids)), self.dialect
        if not ids:
            return {}
        cond, params = d.any_of("a.id", ids)
        rows = self._rows("SELECT a.id, a.status, a.scope_hash, a.type, a.epistemic, a.updated_at, a.last_accessed_at,"
                          f" {d.terms_sql}, {d.entities_sql}, a.polarity FROM atoms a {d.terms_join} WHERE {cond}",
                          params)  # fmt: skip
        return {r[0]: CandidateFacts(status=r[1], scope_hash=r[2], type=r[3], epistemic=r[4], updated_at=d.read_time(r[5]),
                                     last_accessed_at=self._time(r[6]), terms=d.read_terms(r[7]),
                                     entities=tuple(d.read_list(r[8])), polarity=r[9]) for r in rows}  # fmt: skip
