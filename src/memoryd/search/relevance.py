"""Which of a recall's hits a prompt hook injects: a calibrated decision, not a raw score floor. Pure.

A recall's scores rank memories well, but a score alone does not say whether anything answers the
prompt: a paraphrase's right memory and an unanswerable prompt's best guess both sit around 0.3-0.5
(bench/RESULTS.md, issue 35). What tells them apart is how a hit stands among the others. For each hit,
best first, a logistic model gives the probability that it is one the prompt needs, from:

- `score`: its fused score; `keyword`: the share of the prompt's words it holds; `semantic`: its
  semantic evidence (the stronger of the main model's band and the English sentence signal);
  `entity`: the share of the prompt's entities it mentions (a language or tool the prompt names is weak
  evidence that a memory answers it: "convert this Java class to Kotlin" ↔ "we're on Kotlin 2.1");
- `gap_next`: how far it stands above the next hit; `gap_best`: how far below the best one;
- `first`: whether it is the best hit;
- `english`: the English sentence model's own cosine of prompt and memory (0 where it has none: a Chinese
  memory or prompt), a fairly absolute measure beside the ranking's relative ones.

Whether a prompt gets anything is decided by its most probable hit: nothing unless one reaches `THRESHOLD`.
When one does, the hits whose probability reaches `FOLLOW` come along, best first, at most `MAX_INJECT`:
a task prompt's helpful memory is often second or third. Only an active memory is injected (a superseded,
negated, quarantined or pending one never is). The weights and both thresholds are fitted by
`bench/coding_fit.py` on the coding dev set, leave-one-repository-out validated (bench/RESULTS.md):
`THRESHOLD` keeps prompts that no memory answers quiet (≤ 3% of them get anything on the dev set, 5% in
leave-one-repository-out).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar

__all__ = ["FEATURES", "FOLLOW", "MAX_INJECT", "THRESHOLD", "WEIGHTS", "HitLike", "features", "inject", "probabilities"]

FEATURES = ("bias", "score", "keyword", "semantic", "entity", "gap_next", "gap_best", "first", "english")
# Fitted by bench/coding_fit.py --quiet 0.03 --follow 0.15 (all four repositories of the coding dev set);
# see bench/RESULTS.md.
WEIGHTS = (-4.26, 1.388, 0.248, 3.169, -1.63, 1.339, -3.819, 1.067, 1.254)
THRESHOLD = 0.509
FOLLOW = 0.076  # 0.15 × THRESHOLD
MAX_INJECT = 3


class _AtomLike(Protocol):
    @property
    def status(self) -> str: ...


class HitLike(Protocol):
    """What the decision reads of a hit (`memoryd.shared.models.Hit` has it)."""

    @property
    def score(self) -> float: ...
    @property
    def signals(self) -> Mapping[str, float]: ...
    @property
    def atom(self) -> _AtomLike: ...


H = TypeVar("H", bound=HitLike)


def features(hits: Sequence[HitLike]) -> list[tuple[float, ...]]:
    """One row of `FEATURES` per hit; `hits` best first, as recall returns them."""
    rows: list[tuple[float, ...]] = []
    best = hits[0].score if hits else 0.0
    for i, h in enumerate(hits):
        s = h.signals
        following = hits[i + 1].score if i + 1 < len(hits) else 0.0
        semantic = max(float(s.get("semantic", 0.0)), float(s.get("semantic_en", 0.0)))
        rows.append((1.0, h.score, float(s.get("keyword", 0.0)), semantic, float(s.get("entity", 0.0)),
                     h.score - following, best - h.score, 1.0 if i == 0 else 0.0, float(s.get("english", 0.0))))  # fmt: skip
    return rows


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x > -60 else 0.0


def probabilities(hits: Sequence[HitLike], weights: Sequence[float] = WEIGHTS) -> list[float]:
    """The probability that each hit is one the prompt needs."""
    return [_sigmoid(sum(w * x for w, x in zip(weights, row, strict=True))) for row in features(hits)]


def inject(hits: Sequence[H], *, weights: Sequence[float] = WEIGHTS, threshold: float = THRESHOLD,
           follow: float = FOLLOW, limit: int = MAX_INJECT) -> list[H]:  # fmt: skip
    """The hits to inject (`hits` as recall ranked them, best first): none unless an active one's probability
    reaches `threshold`; then the active ones whose probability reaches `follow`, at most `limit`."""
    probs = probabilities(hits, weights)
    active = [(h, p) for h, p in zip(hits, probs, strict=True) if h.atom.status == "active"]
    if not any(p >= threshold for _, p in active):
        return []
    return [h for h, p in active if p >= min(follow, threshold)][:limit]
