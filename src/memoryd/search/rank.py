"""Recall ranking: what recall gathered (query + candidates) in, ranked hits out. Pure functions.

Work in progress (issue 12): parameters are chosen by bench/replay.py.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields

import numpy as np

from .tokenize import tokens

__all__ = ["DEFAULT", "GRID", "Candidate", "Params", "Query", "describe", "rank"]


@dataclass(frozen=True, slots=True)
class Query:
    text: str
    terms: tuple[str, ...]  # unique query terms (stop words dropped)
    entities: tuple[str, ...]  # entity ids found in the query
    boost: tuple[str, ...]  # caller's entity_ids
    cosine_floor: float
    cosine_ceil: float


@dataclass(slots=True)
class Candidate:
    atom_id: str
    cos: float | None
    terms: frozenset[str]
    entities: tuple[str, ...]
    status: str
    type: str
    decay: float  # decay weight (1.0 fresh)
    cos2: float | None = None  # second embedder (what-if)
    extra: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Params:
    fusion: str = "noisy_or"
    w_kw: float = 0.80
    w_sem: float = 0.85
    w_ent: float = 0.45
    w_sem2: float = 0.0
    k1: float = 0.0  # 0 = no length normalisation (the old coverage score)
    b: float = 0.75
    rrf_k: float = 60.0
    sem2_floor: float = 0.2
    sem2_ceil: float = 0.7
    ent_rarity: bool = False


DEFAULT = Params()
GRID: dict[str, tuple[float, ...]] = {"w_kw": (0.8,), "w_sem": (0.85,), "w_ent": (0.45,)}


def describe(p: Params) -> str:
    d = DEFAULT
    diff = [f"{f.name}={getattr(p, f.name)}" for f in fields(p) if getattr(p, f.name) != getattr(d, f.name)]
    return ", ".join(diff) or "defaults"


def _idf(total: int, df: int) -> float:
    return math.log(1.0 + (total - df + 0.5) / (df + 0.5))


def _entity_name_terms(entity_id: str) -> list[str]:
    name = entity_id.split(":", 2)[-1]
    return tokens(name, query=True) or [name.lower()]


def stat_terms(q: Query) -> list[str]:
    """Every term whose document frequency the ranking needs (query terms + entity names)."""
    out = list(q.terms)
    for e in (*q.entities, *q.boost):
        out.extend(_entity_name_terms(e))
    return list(dict.fromkeys(out))


def rank(
    q: Query, cands: Sequence[Candidate], stats: tuple[int, Mapping[str, int]], p: Params = DEFAULT
) -> list[tuple[float, Candidate, dict[str, float]]]:
    total, df = stats
    n = len(cands)
    if n == 0:
        return []
    idf = {t: _idf(total, df.get(t, 0)) for t in q.terms}
    denom = sum(idf.values())
    # keyword
    kw = np.zeros(n)
    if denom:
        if p.k1 > 0:
            dl = np.array([len(c.terms) for c in cands], dtype=float)
            avgdl = float(dl.mean()) or 1.0
            norm = (p.k1 + 1.0) / (1.0 + p.k1 * (1.0 - p.b + p.b * dl / avgdl))
        else:
            norm = np.ones(n)
        for i, c in enumerate(cands):
            m = sum(w for t, w in idf.items() if t in c.terms)
            kw[i] = min(1.0, m * norm[i] / denom)
    # semantic
    cos = np.array([c.cos if c.cos is not None else np.nan for c in cands])
    sem = np.nan_to_num(np.clip((cos - q.cosine_floor) / (q.cosine_ceil - q.cosine_floor), 0, 1))
    sem2 = np.zeros(n)
    if p.w_sem2:
        cos2 = np.array([c.cos2 if c.cos2 is not None else np.nan for c in cands])
        sem2 = np.nan_to_num(np.clip((cos2 - p.sem2_floor) / (p.sem2_ceil - p.sem2_floor), 0, 1))
    # entity
    ent = np.zeros(n)
    for group in (q.entities, q.boost):
        if not group:
            continue
        if p.ent_rarity:
            wts = {e: min(_idf(total, df.get(t, 0)) for t in _entity_name_terms(e)) / math.log(1.0 + total + 0.5)
                   for e in group}  # fmt: skip
            tot = sum(wts.values()) or 1.0
            for i, c in enumerate(cands):
                ent[i] = max(ent[i], sum(w for e, w in wts.items() if e in c.entities) / len(group))
        else:
            gs = set(group)
            for i, c in enumerate(cands):
                ent[i] = max(ent[i], len(gs & set(c.entities)) / len(gs))
    if p.fusion == "noisy_or":
        fused = 1.0 - (1.0 - p.w_kw * kw) * (1.0 - p.w_sem * sem) * (1.0 - p.w_ent * ent) * (1.0 - p.w_sem2 * sem2)
    elif p.fusion == "rrf":
        fused = np.zeros(n)
        for w, s in ((p.w_kw, kw), (p.w_sem, sem), (p.w_ent, ent), (p.w_sem2, sem2)):
            if not w:
                continue
            order = np.argsort(-s, kind="stable")
            r = np.empty(n)
            r[order] = np.arange(n)
            fused += np.where(s > 0, w / (p.rrf_k + r + 1), 0.0)
    else:
        raise ValueError(p.fusion)
    out = []
    for i, c in enumerate(cands):
        score = float(fused[i]) * c.decay
        if c.status == "negated":
            score *= 0.8
        score = round(score, 4)
        if score > 0:
            out.append((score, c, {"keyword": float(kw[i]), "semantic": float(sem[i]), "entity": float(ent[i])}))
    out.sort(key=lambda s: (-s[0], s[1].atom_id))
    return out


_ = re  # placeholder for cue patterns
