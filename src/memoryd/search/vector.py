"""In-memory vector index over the store's embeddings, refreshed incrementally.

The database is the truth: the index only proposes candidates, and the engine drops any
whose status or scope no longer fits. The store feeds it every vector change in order
(`vec_seq`), so several processes sharing one database each catch up before a search.

Two layers:

- an exact float32 matrix (one row per atom), which answers every search on small stores
  and every search confined to a small scope, and gives the exact cosine of every hit;
- on big stores (more than `ANN_MIN` live vectors), an HNSW graph (`usearch`, int8) that
  proposes candidates in well under a millisecond; their cosines are recomputed exactly
  from the matrix, so a score never depends on the approximation. The graph is built on a
  background thread (searches stay exact until it is ready), saved next to the database
  with the `vec_seq` it reflects, and at the next open it is loaded and brought up to date
  from the changes after that mark, then checked against the matrix (its key set must be
  exactly the live atoms); a missing, stale or damaged file is rebuilt, never trusted.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..shared.extras import hint, installed
from . import threads

__all__ = ["ANN_MIN", "EXACT_MAX", "VectorIndex"]

log = logging.getLogger(__name__)

ANN_MIN = 20_000  # live vectors before the HNSW graph is built
EXACT_MAX = 20_000  # in-scope vectors that are still searched exactly (a few ms on 2 cores)
_BUILD_CHUNK = 8192  # rows copied per step of a graph build
_ANN_PARAMS: dict[str, Any] = {
    "metric": "cos",
    "dtype": "i8",
    "connectivity": 16,
    "expansion_add": 64,
    "expansion_search": 96,
}


_ann_warned = False


def _ann_available(live: int) -> bool:
    """Whether `usearch` is installed; the first time it is not, one log line says what that costs."""
    global _ann_warned
    if installed("ann"):
        return True
    if not _ann_warned:
        _ann_warned = True
        log.warning(
            "%d vectors: the HNSW graph needs the memoryd[ann] extra (usearch is not installed), so vector "
            "search stays exact (correct, slower on large scopes); %s",
            live,
            hint("ann"),
        )
    return False


class VectorIndex:
    def __init__(self, dim: int | None = None, *, ann_path: Path | None = None, ann_min: int = ANN_MIN) -> None:
        self.dim = dim  # taken from the first vector when not given
        self.ann_path = ann_path  # where the graph is saved (<db>.ann<dim>.usearch); None = never saved
        self.ann_min = ann_min
        self._matrix = np.zeros((0, dim or 0), dtype=np.float32)
        self._ids: list[str] = []
        self._keys = np.zeros(0, dtype=np.int64)  # atoms.seq of each row: the graph's keys
        self._row_of: dict[str, int] = {}
        self._row_of_key: dict[int, int] = {}
        self._scope_codes = np.zeros(0, dtype=np.int32)
        self._codes: dict[str, int] = {}
        self._alive = np.zeros(0, dtype=bool)
        self._version = 0  # bumped on every change; keys the scope-mask cache
        self._masks: dict[tuple[int, ...], tuple[int, np.ndarray, int]] = {}
        self._lock = threading.RLock()
        self._ann: Any = None  # usearch Index, when ready
        self._ann_mark = 0  # vec_seq the graph reflects (for saving)
        self._seen = 0  # highest vec_seq applied to the matrix
        self._saved_mark = -1  # the mark of the graph on disk
        self._building: threading.Thread | None = None
        self._stop_build = threading.Event()
        self._journal: list[tuple[int, np.ndarray | None]] | None = None  # changes made during a build

    def __len__(self) -> int:
        return int(self._alive[: len(self._ids)].sum())

    @property
    def ann_ready(self) -> bool:
        return self._ann is not None

    # -- changes ------------------------------------------------------------------------------

    def reserve(self, rows: int, dim: int) -> None:
        """Make room for `rows` rows at once (a store's first catch-up knows its size)."""
        with self._lock:
            if self.dim is None:
                self.dim = dim
            if self.dim == dim:
                self._grow(rows)

    def _grow(self, need: int) -> None:
        cap = self._matrix.shape[0]
        if need <= cap:
            return
        # np.zeros pages are mapped lazily, so spare capacity costs address space, not RSS; a regrow
        # briefly holds the old and the new matrix, so it should be rare: double.
        new_cap = max(need, cap * 2, 1024)
        matrix = np.zeros((new_cap, self.dim or 0), dtype=np.float32)
        if cap:
            matrix[:cap] = self._matrix
        self._matrix = matrix
        for name, dtype in (("_scope_codes", np.int32), ("_alive", bool), ("_keys", np.int64)):
            grown = np.zeros(new_cap, dtype=dtype)
            grown[:cap] = getattr(self, name)
            setattr(self, name, grown)

    def add(self, rows: Iterable[tuple[int, int, str, str, np.ndarray]]) -> None:
        """Insert or overwrite (vec_seq, key, atom_id, scope_hash, vector) rows, in vec_seq order."""
        with self._lock:
            for seq, key, atom_id, scope_hash, vector in rows:
                if self.dim is None:
                    self.dim = int(vector.shape[0])
                if vector.shape[0] != self.dim:
                    continue  # written by another model; re-embedding is a migration, not a search concern
                i = self._row_of.get(atom_id)
                if i is None:
                    i = len(self._ids)
                    self._grow(i + 1)
                    self._ids.append(atom_id)
                    self._row_of[atom_id] = i
                self._keys[i] = key
                self._row_of_key[int(key)] = i
                self._matrix[i] = vector
                self._scope_codes[i] = self._codes.setdefault(scope_hash, len(self._codes))
                self._alive[i] = True
                self._ann_change(int(key), self._matrix[i], seq)
                self._seen = max(self._seen, seq)
            self._version += 1

    def remove(self, atom_id: str, *, key: int, seq: int) -> None:
        with self._lock:
            i = self._row_of.get(atom_id)
            if i is not None and self._alive[i]:
                self._alive[i] = False
                self._matrix[i] = 0.0
            self._ann_change(key, None, seq)  # a loaded graph may hold it even when the matrix never did
            self._seen = max(self._seen, seq)
            self._version += 1

    def _ann_change(self, key: int, vector: np.ndarray | None, seq: int) -> None:
        if self._journal is not None:  # a build is running on a snapshot: replay this afterwards
            self._journal.append((key, None if vector is None else vector.copy()))
        if self._ann is not None and seq > self._ann_mark:  # a loaded graph already has older changes
            _upsert(self._ann, key, vector)
            self._ann_mark = seq

    def maybe_build(self) -> None:
        """Start building the graph in the background once the store is big enough (and `usearch`,
        the `memoryd[ann]` extra, is installed: without it searches stay exact, said once per process)."""
        with self._lock:
            if self._ann is None and self._building is None and len(self) > self.ann_min and _ann_available(len(self)):
                self._start_build()

    def vector(self, atom_id: str) -> np.ndarray | None:
        i = self._row_of.get(atom_id)
        return self._matrix[i] if i is not None and self._alive[i] else None

    # -- search ---------------------------------------------------------------------------

    def _mask(self, codes: tuple[int, ...]) -> tuple[np.ndarray, int]:
        cached = self._masks.get(codes)
        if cached is not None and cached[0] == self._version:
            return cached[1], cached[2]
        n = len(self._ids)
        mask = self._alive[:n] & np.isin(self._scope_codes[:n], codes)
        count = int(mask.sum())
        if len(self._masks) > 64:
            self._masks.clear()
        self._masks[codes] = (self._version, mask, count)
        return mask, count

    def search(self, query: np.ndarray, *, scope_hashes: Sequence[str], k: int) -> list[tuple[str, float]]:
        with self._lock:
            n = len(self._ids)
            if n == 0 or query.shape[0] != self.dim or k <= 0:
                return []
            codes = tuple(sorted({self._codes[s] for s in scope_hashes if s in self._codes}))
            if not codes:
                return []
            mask, count = self._mask(codes)
            if count == 0:
                return []
            q = query.astype(np.float32)
            if self._ann is not None and count > EXACT_MAX:
                hits = self._search_ann(q, mask, count, k)
                if hits is not None:
                    return hits
            if count * 2 >= n:  # most rows qualify: one product over all, then mask
                sims = np.where(mask, self._matrix[:n] @ q, -np.inf)
                rows = _top(sims, min(k, count))
            else:  # a small scope: multiply only its rows
                idx = np.flatnonzero(mask)
                local = self._matrix[idx] @ q
                top = _top(local, min(k, count))
                rows, sims = idx[top], np.full(n, -np.inf, dtype=np.float32)
                sims[rows] = local[top]
            return [(self._ids[r], float(sims[r])) for r in rows]

    def _search_ann(self, q: np.ndarray, mask: np.ndarray, count: int, k: int) -> list[tuple[str, float]] | None:
        alive = len(self)
        want = min(alive, math.ceil(k * alive / count * 2) + 16)  # over-fetch for the scope filter
        found = self._ann.search(q, want)
        rows = [r for r in (self._row_of_key.get(int(key)) for key in found.keys) if r is not None and mask[r]]
        if len(rows) < min(k, count):
            return None  # the graph missed too much of this scope: answer exactly instead
        rows_a = np.asarray(rows)
        sims = self._matrix[rows_a] @ q  # exact cosines for the proposed rows
        order = np.argsort(-sims)[:k]
        return [(self._ids[rows_a[j]], float(sims[j])) for j in order]

    # -- the HNSW graph: build, save, load ------------------------------------------------

    def _start_build(self) -> None:
        self._journal = []
        self._stop_build = threading.Event()  # set at exit: usearch's C++ must not be running then (threads.py)
        self._building = threads.start(self._build, "memoryd-ann-build", stop=self._stop_build)

    def _build(self) -> None:
        """Add the live rows in chunks (never a second copy of the whole matrix), then replay
        the changes made meanwhile; a change seen twice is applied twice, which is idempotent."""
        try:
            from usearch.index import Index

            with self._lock:
                mark, n = self._seen, len(self._ids)
            ann = Index(ndim=self.dim or 0, **_ANN_PARAMS)
            threads = max(1, (os.cpu_count() or 2) - 1)
            for start in range(0, n, _BUILD_CHUNK):
                if self._stop_build.is_set():  # the process is exiting; the graph is rebuilt next time
                    with self._lock:
                        self._journal, self._building = None, None
                    return
                with self._lock:  # the matrix may be regrown by a writer between chunks
                    end = min(start + _BUILD_CHUNK, n)
                    live = start + np.flatnonzero(self._alive[start:end])
                    keys, vectors = self._keys[live].copy(), self._matrix[live].copy()
                if keys.size:
                    ann.add(keys, vectors, threads=threads)
        except Exception:
            log.exception("building the vector graph failed; searches stay exact")
            with self._lock:
                self._journal, self._building = None, None
            return
        with self._lock:
            for key, vector in self._journal or ():
                _upsert(ann, key, vector)
            for i in range(n, len(self._ids)):  # rows appended after the build started
                if self._alive[i] and not ann.contains(int(self._keys[i])):
                    ann.add(int(self._keys[i]), self._matrix[i])
            self._journal, self._building = None, None
            self._ann, self._ann_mark = ann, max(mark, self._seen)
            self.save()
        log.info("vector graph ready: %d vectors", len(ann))

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Block until a running graph build finishes (benchmarks and tests)."""
        thread = self._building
        if thread is not None:
            thread.join(timeout)
        return self._ann is not None

    def save(self) -> None:
        """Write the graph and the vec_seq it reflects (atomically, by rename), when it changed."""
        if self._ann is None or self.ann_path is None or self._saved_mark == self._ann_mark:
            return
        with self._lock:
            tmp = self.ann_path.with_name(self.ann_path.name + ".tmp")
            try:
                self._ann.save(str(tmp))
                os.replace(tmp, self.ann_path)
                meta = {"vec_seq": self._ann_mark, "count": len(self._ann), "dim": self.dim, "params": _ANN_PARAMS}
                _meta_path(self.ann_path).write_text(json.dumps(meta))
                self._saved_mark = self._ann_mark
            except OSError:
                log.exception("could not save the vector graph to %s", self.ann_path)

    def load(self) -> int | None:
        """Load a saved graph; returns the vec_seq it reflects, or None when there is none usable."""
        path = self.ann_path
        if path is None or not path.exists() or not installed("ann"):
            return None
        try:
            meta = json.loads(_meta_path(path).read_text())
            if meta.get("params") != _ANN_PARAMS or (self.dim is not None and meta.get("dim") != self.dim):
                return None
            from usearch.index import Index

            ann = Index.restore(str(path))
            if ann is None or len(ann) != meta["count"]:
                return None
        except Exception:
            log.warning("saved vector graph %s is unreadable; it will be rebuilt", path, exc_info=True)
            return None
        self._ann, self._ann_mark = ann, int(meta["vec_seq"])
        self._saved_mark = self._ann_mark
        self.dim = self.dim or int(meta["dim"])
        return self._ann_mark

    def verify(self) -> dict[str, int] | None:
        """After a load and a catch-up, make the graph hold exactly the live atoms.

        A graph that reflects changes the database lacks (another database, or a restored
        backup) is dropped and rebuilt. Otherwise keys of atoms deleted since it was saved
        (deleted rows leave no vec_seq behind) are removed and missing live atoms added.
        Returns what was reconciled, or None when there is no graph.
        """
        with self._lock:
            if self._ann is None:
                return None
            n = len(self._ids)
            live = self._keys[:n][self._alive[:n]]
            keys = np.asarray(self._ann.keys, dtype=np.int64)
            if self._ann_mark > self._seen:
                log.warning("saved vector graph is ahead of the database (vec_seq %d > %d); rebuilding",
                            self._ann_mark, self._seen)  # fmt: skip
                self._ann = None
                return {"dropped": int(keys.size)}
            extra = np.setdiff1d(keys, live, assume_unique=True)
            missing = np.setdiff1d(live, keys, assume_unique=True)
            for key in extra:
                self._ann.remove(int(key))
            for key in missing:
                self._ann.add(int(key), self._matrix[self._row_of_key[int(key)]])
            return {"removed": int(extra.size), "added": int(missing.size)}


def _top(sims: np.ndarray, take: int) -> np.ndarray:
    top = np.argpartition(-sims, take - 1)[:take]
    return top[np.argsort(-sims[top])]


def _upsert(ann: Any, key: int, vector: np.ndarray | None) -> None:
    if ann.contains(key):
        ann.remove(key)
    if vector is not None:
        ann.add(key, vector)


def _meta_path(path: Path) -> Path:
    return path.with_name(path.name + ".json")
