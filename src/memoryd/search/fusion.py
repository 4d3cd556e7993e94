"""Scoring: calibrated per-signal scores in 0..1 and their fusion. Pure functions.

- keyword: IDF-weighted share of the query's terms found in the memory (1.0 = every
  query term present);
- semantic: the embedding cosine mapped linearly from the band where the model places
  unrelated text (≤ its `cosine_floor`) to where it places paraphrases (≥ its `cosine_ceil`);
  each embedder carries its own band (measured in bench/RESULTS.md);
- entity: share of the query's entities the memory mentions (or the `entity_ids` boost).

Fusion is a noisy-OR, so one strong signal is enough for a good score and agreeing signals
push it towards 1.0; a score of 0.5 means "one signal is moderately sure".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping

__all__ = ["WEIGHTS", "entity_score", "fuse", "idf", "keyword_score", "keyword_scorer", "semantic_score"]

WEIGHTS = {"semantic": 0.85, "keyword": 0.80, "entity": 0.45}


def idf(total: int, df: int) -> float:
    return math.log(1.0 + (total - df + 0.5) / (df + 0.5))


def keyword_score(query_terms: Iterable[str], doc_terms: Iterable[str], total: int, df: Mapping[str, int]) -> float:
    q = set(query_terms)
    if not q:
        return 0.0
    d = set(doc_terms)
    weights = {t: idf(total, df.get(t, 0)) for t in q}
    denom = sum(weights.values())
    return sum(w for t, w in weights.items() if t in d) / denom if denom else 0.0


def keyword_scorer(
    query_terms: Iterable[str], total: int, df: Mapping[str, int]
) -> Callable[[Iterable[str]], float]:
    """`keyword_score` with the query's IDF weights computed once, for scoring many documents."""
    weights = {t: idf(total, df.get(t, 0)) for t in dict.fromkeys(query_terms)}
    denom = sum(weights.values())

    def score(doc_terms: Iterable[str]) -> float:
        if not denom:
            return 0.0
        d = doc_terms if isinstance(doc_terms, (set, frozenset)) else set(doc_terms)
        return sum(w for t, w in weights.items() if t in d) / denom

    return score


def semantic_score(cosine: float | None, floor: float, ceil: float) -> float:
    if cosine is None:
        return 0.0
    return min(1.0, max(0.0, (cosine - floor) / (ceil - floor)))


def entity_score(query_entities: Iterable[str], doc_entities: Iterable[str]) -> float:
    q = set(query_entities)
    return len(q & set(doc_entities)) / len(q) if q else 0.0


def fuse(signals: Mapping[str, float]) -> float:
    miss = 1.0
    for name, value in signals.items():
        miss *= 1.0 - WEIGHTS.get(name, 0.0) * min(1.0, max(0.0, value))
    return round(1.0 - miss, 4)
