"""A recall reads its candidates' facts and the cosines the keyword and entity candidates lack in one call
(`candidate_facts(query=...)`; on PostgreSQL one statement, issue 27), on both backends: a real SQLite file and
a real PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from memoryd.shared.models import Atom, Scope

SCOPE = Scope(tenant_id="ann", workspace="acme", repository="r", branch="main", root="/r")


def _atom(i: int) -> Atom:
    now = datetime.now(UTC)
    return Atom(
        id=f"01K{i:023d}", content=f"memory {i}", type="fact", source="t", scope=SCOPE, scope_hash=SCOPE.scope_hash,
        epistemic="actual", polarity="affirmative", status="active", created_at=now, updated_at=now,
    )  # fmt: skip


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.normal(size=n).astype(np.float32)
    return v / np.linalg.norm(v)


def test_facts_carry_the_query_cosine_of_each_candidate(store: Any) -> None:
    rng = np.random.default_rng(11)
    vectors: dict[str, np.ndarray | None] = {}
    with store.transaction() as tx:
        for i in range(12):  # 384-float vectors, an older one of another model's size, one with no vector at all
            atom = _atom(i)
            vectors[atom.id] = _unit(rng, 512 if i == 0 else 384) if i != 11 else None
            tx.insert_atom(atom, norm_hash=f"h{i}", terms=["word"], vector=vectors[atom.id])
    query = _unit(rng, 384)
    ids = [*vectors, "01KNOPE"]
    facts = store.candidate_facts(ids, query=query)
    assert set(facts) == set(vectors)  # an unknown id has no facts
    for atom_id, v in vectors.items():
        if v is None or v.shape != query.shape:
            assert facts[atom_id].cos is None, atom_id  # no vector of the query's size: no cosine
        else:  # PostgreSQL reads the 16-bit copy (migration 12)
            assert facts[atom_id].cos == pytest.approx(float(v @ query), abs=1e-3), atom_id
    # without a query: the same facts and no cosines
    plain = store.candidate_facts(ids)
    assert {i: (f.status, f.scope_hash, f.terms) for i, f in plain.items()} == {
        i: (f.status, f.scope_hash, f.terms) for i, f in facts.items()
    }
    assert all(f.cos is None for f in plain.values())
    assert store.candidate_facts([], query=query) == {}
