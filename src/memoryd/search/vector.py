"""In-memory exact vector index over the store's embeddings, refreshed incrementally.

The database is the truth: the index only proposes candidates, and the engine drops any
whose status or scope no longer fits. The store feeds it every vector change in order
(`vec_seq`), so several processes sharing one database each catch up before a search.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["VectorIndex"]


class VectorIndex:
    def __init__(self, dim: int | None = None) -> None:
        self.dim = dim  # taken from the first vector when not given
        self._matrix = np.zeros((1024, dim or 0), dtype=np.float32)
        self._ids: list[str] = []
        self._scopes: list[str] = []
        self._scope_codes = np.zeros(1024, dtype=np.int32)
        self._codes: dict[str, int] = {}
        self._alive = np.zeros(1024, dtype=bool)
        self._row_of: dict[str, int] = {}

    def __len__(self) -> int:
        return int(self._alive[: len(self._ids)].sum())

    def _grow(self, need: int) -> None:
        cap = self._matrix.shape[0]
        if need <= cap:
            return
        new_cap = max(need, cap * 2)
        self._matrix = np.resize(self._matrix, (new_cap, self.dim))
        self._scope_codes = np.resize(self._scope_codes, new_cap)
        alive = np.zeros(new_cap, dtype=bool)
        alive[:cap] = self._alive
        self._alive = alive

    def add(self, rows: Iterable[tuple[str, str, np.ndarray]]) -> None:
        """Insert or overwrite (atom_id, scope_hash, vector) rows."""
        for atom_id, scope_hash, vector in rows:
            if self.dim is None:
                self.dim = int(vector.shape[0])
                self._matrix = np.zeros((self._matrix.shape[0], self.dim), dtype=np.float32)
            if vector.shape[0] != self.dim:
                continue  # written by another model; re-embedding is a migration, not a search concern
            i = self._row_of.get(atom_id)
            if i is None:
                i = len(self._ids)
                self._grow(i + 1)
                self._ids.append(atom_id)
                self._scopes.append(scope_hash)
                self._row_of[atom_id] = i
            self._matrix[i] = vector
            self._scope_codes[i] = self._codes.setdefault(scope_hash, len(self._codes))
            self._alive[i] = True

    def remove(self, atom_id: str) -> None:
        i = self._row_of.get(atom_id)
        if i is not None:
            self._alive[i] = False
            self._matrix[i] = 0.0

    def vector(self, atom_id: str) -> np.ndarray | None:
        i = self._row_of.get(atom_id)
        return self._matrix[i] if i is not None and self._alive[i] else None

    def search(self, query: np.ndarray, *, scope_hashes: Sequence[str], k: int) -> list[tuple[str, float]]:
        n = len(self._ids)
        if n == 0 or query.shape[0] != self.dim:
            return []
        codes = [self._codes[s] for s in scope_hashes if s in self._codes]
        if not codes:
            return []
        mask = self._alive[:n] & np.isin(self._scope_codes[:n], codes)
        idx = np.flatnonzero(mask)
        if idx.size == 0:
            return []
        sims = self._matrix[idx] @ query.astype(np.float32)
        take = min(k, idx.size)
        top = np.argpartition(-sims, take - 1)[:take]
        top = top[np.argsort(-sims[top])]
        return [(self._ids[idx[j]], float(sims[j])) for j in top]
