"""Recall ranking: the query and its gathered candidates in, ranked hits out. Pure functions.

`features()` turns what recall gathered into per-candidate signals in 0..1, `fuse()` combines
them under `Params`, `rank()` does both and returns the hits best first. bench/replay.py caches
the features of every benchmark query once and re-fuses them in milliseconds, so every parameter
here is chosen by leave-one-conversation-out validation on the dev sets (bench/RESULTS.md).

Signals:
- keyword: IDF-weighted share of the query's words the memory holds (1.0 = all of them); an
  identifier and its parts (`billing-exporter`, `bill`, `export`) are one word, weighted by its
  most specific form, so a compound name is not counted once per part;
- semantic: the main embedder's cosine, mapped linearly from a floor to a ceiling. The band
  depends on the languages: a Chinese query against an English memory (or back) gets a band
  `xling_shift` lower than a same-language pair, because the model places cross-lingual
  paraphrases lower; same-language pairs use the model's band shifted by `sem_shift`;
- semantic_en: a second, English-strong signal for Latin-script query and memory only. With the
  English sentence model (`embed.MiniLMEnglish`, a second stored vector per memory; `Query.english`)
  it is the sum of its cosine and `en_mix` × the main cosine past `mix_floor`, mapped by
  1 - exp(-`mix_k` × x) (no ceiling: two strong matches never tie at 1.0 and lose their order). For
  an English query the stronger of it and the main model's band counts: the two models agree on
  paraphrases more than either alone (dense-only on the coding dev set: R@5 0.89 against 0.81 and
  0.72), and the main model's band, calibrated on conversations, maps most paraphrase cosines
  (0.1-0.4) to 0. A memory the English model cannot judge (Chinese) gets its main cosine in the
  English one's place, on the same scale. Keywords then weigh `w_kw_en`. Without it (the former signal, `embed.WordLlamaTerms` over the
  memory's index terms, computed for the best `en_top` candidates) the stronger of the two counts;
- entity: share of the query's entities the memory mentions, each weighted by its rarity (the
  IDF of its name, 1.0 for a name only one memory holds), so a common entity is weak evidence.

Fusion is a noisy-OR of keyword, semantic and entity evidence: one strong signal is enough for a
good score, agreeing signals push it towards 1.0. The two semantic signals measure the same thing
with two models, so only the stronger of them counts (adding both over-counted memories that
merely resemble the query's wording).

Then query cues multiply: a memory that is a question or a guess is demoted when the query is a
question ("question echo"), a "when …" query favours memories with a relative time word, a
negated query ("which X did we decide not to use") favours negative memories or ones
holding a negation cue (stored polarity, or 不用 / not / instead … in the terms), and a query
that names a common entity and a name far rarer than it ("Prometheus stats for billing-exporter":
a service, a table, a key no lexicon knows) demotes the memories holding none of those names,
which would otherwise win on the common entity and the shared sentence shape. Decay and
the negated status multiply last. Finally a question among the best candidates passes `reply`
of its score to the memory saved right after it in its scope (a conversation answers in the
next turn; the question itself only echoes the query's words).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from .tokenize import term_groups, tokens

__all__ = [
    "DEFAULT", "Candidate", "Features", "Params", "Query", "english_floor", "features", "fuse", "fused", "idf", "rank",
    "score", "stat_terms",
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class Query:
    text: str
    terms: tuple[str, ...]  # unique query terms (stop words dropped)
    entities: tuple[str, ...]  # entity ids found in the query
    boost: tuple[str, ...]  # the caller's entity_ids
    cosine_floor: float  # the main embedder's band
    cosine_ceil: float
    english: bool = False  # the candidates' `cos_en` are the English sentence model's (see semantic_en)


@dataclass
class Candidate:
    atom_id: str
    cos: float | None  # main embedder cosine (None: no vector)
    terms: frozenset[str]  # index terms
    entities: tuple[str, ...]
    status: str
    type: str
    decay: float  # decay weight (1.0 fresh)
    epistemic: str = "actual"
    polarity: str = "affirmative"
    cos_en: float | None = None  # English term-embedder cosine, filled by `rank` when asked
    next_id: str | None = None  # the memory saved right after this one in its scope (see Store.successors)
    scope_hash: str = ""  # the memory's scope (recall checks code anchors of its own repository only)


@dataclass(frozen=True, slots=True)
class Params:
    w_kw: float = 0.80
    w_sem: float = 0.85
    w_ent: float = 0.45
    w_en: float = 0.30
    sem_shift: float = 0.20  # same-language band = model band + this
    xling_shift: float = -0.25  # cross-language band = same-language band + this
    en_floor: float = 0.20  # band of the English signal
    en_ceil: float = 0.50
    en_top: int = 40  # candidates (best by the other signals) that get the English signal
    echo: float = 0.20  # demotion of question / guess memories for a question
    temporal: float = 0.40  # promotion of memories with a relative time word for a "when" query
    negation: float = 0.20  # promotion of negative memories for a negated query
    idf_power: float = 1.0  # keyword words weigh IDF**power (1.5 helped the unique-name cases, cost bilingual)
    reply: float = 0.90  # share of a matching question's score passed to the memory saved after it
    reply_top: int = 5  # ... for the questions among this many best candidates
    name_ratio: int = 10  # a Latin query word at least this many times rarer than the query's entities is a name
    name_miss: float = 0.70  # demotion of memories holding none of the query's names (0: off)
    # the English sentence model (semantic_en); fitted on the coding dev set, bench/RESULTS.md (issue 35)
    en_mix: float = 0.75  # weight of the main cosine added to the English one
    mix_floor: float = 0.30  # that sum counts from the candidates' median (from here with fewer than `mid_min`)
    mid_min: int = 10  # English candidates needed for their median to be the floor
    mix_k: float = 2.0  # ... rising as 1 - exp(-mix_k * (sum - floor))
    w_mix: float = 0.70  # its weight in the noisy-OR
    w_kw_en: float = 0.80  # the keyword weight of an English query's recall (as w_kw: LoCoMo needs it)
    xling_lift: float = 0.20  # added to the main cosine of a cross-language pair standing in for the English one


DEFAULT = Params()
FEATURE_PARAMS = ("idf_power", "name_ratio")  # the parameters `features` depends on (bench/replay.py caches per value)


@dataclass
class Features:
    """Per-candidate signals that do not depend on `Params` (bench/replay.py caches these)."""

    kw: np.ndarray
    cos: np.ndarray  # nan where no vector
    cross: np.ndarray  # |zh share of query - zh share of memory|: 0 same script, 1 other language
    latin: np.ndarray  # both query and memory in Latin script (0..1)
    ent: np.ndarray
    possible: np.ndarray  # bool: the memory is a question or a guess
    timely: np.ndarray  # bool: holds a relative time word
    negative: np.ndarray  # bool: negative polarity or a negation cue
    nameless: np.ndarray  # bool: the query has names (see `_names`) and this memory holds none of them
    decay: np.ndarray  # decay weight × 0.8 for negated atoms
    floor: float
    ceil: float
    is_question: bool
    is_when: bool
    is_negated: bool
    cos_en: np.ndarray = field(default_factory=lambda: np.zeros(0))  # nan where not computed
    english: bool = False  # cos_en is the English sentence model's (Query.english)
    next_idx: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))  # successor's index, -1 none


def idf(total: int, df: int) -> float:
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


# A term's first character, when it is Chinese (group 1) or Latin (no group): one scan counts both sides.
_WORD_HEAD = re.compile(r"(?:^| )(?:([\u3400-\u9fff\uf900-\ufaff])|[A-Za-z])")


def _zh_share(terms: Sequence[str] | frozenset[str]) -> float:
    """Share of the worded terms that are Chinese (character bigrams); numbers count for neither side."""
    heads = _WORD_HEAD.findall(" ".join(terms))  # one C-level scan instead of a Python loop per term (recall cost)
    zh = len(heads) - heads.count("")
    return zh / len(heads) if zh else 0.0


_QUESTION = re.compile(
    r"[?？]|^\s*(?:what|when|where|which|who|whom|whose|why|how|did|does|do|is|are|was|were|can|could|would|will"
    r"|has|have|should)\b|吗|呢|什么|哪|谁|怎么|为什么|几|多少|是否",
    re.I,
)
_WHEN = re.compile(
    r"\bwhen\b|\bwhat (?:year|month|day|date|time)\b|\bhow long ago\b|\bfirst\b|\bsince\b"
    r"|什么时候|何时|哪天|哪一天|哪年|哪一年|几月|几号|几时|最早|最先|以前|之前",
    re.I,
)
_TIME_TERMS = frozenset(
    tokens(
        "yesterday today tomorrow tonight ago last next week weeks weekend month months year years recently recent "
        "earlier later soon since before after first monday tuesday wednesday thursday friday saturday sunday"
    )
) | {
    "昨天",
    "今天",
    "明天",
    "上周",
    "下周",
    "上个",
    "下个",
    "去年",
    "今年",
    "明年",
    "最近",
    "之前",
    "以前",
    "之后",
    "周末",
}
_NEG_QUERY = re.compile(
    r"\b(?:not|never|no longer|against|reject\w*|stop(?:ped)?|drop(?:ped)?|avoid\w*|bann?(?:ed)?|instead)\b|n't\b"
    r"|不|没|别|禁止|放弃|弃用|拒绝|避免",
    re.I,
)
_NEG_TERMS = frozenset(
    tokens(
        "not no never don didn won isn aren doesn wasn weren shouldn cannot rejected dropped avoid banned against instead"
    )
) | {
    "不用",
    "不要",
    "不再",
    "不能",
    "不是",
    "没有",
    "别用",
    "放弃",
    "弃用",
    "禁止",
    "拒绝",
    "避免",
    "不会",
    "不得",
    "严禁",
}


_LATIN_WORD = re.compile(r"[a-z0-9]")


def _names(q: Query, groups: list[list[tuple[str, float]]], df: Mapping[str, int], ratio: int) -> list[str]:
    """The query's names: Latin words (an identifier by its whole form) that some memory holds and at
    least `ratio` times fewer memories hold than the rarest entity the query names. Only a query naming
    an entity has them: "Prometheus stats for billing-exporter" (Prometheus in 100 memories, the
    exporter in 1), not "how should devctl output be formatted" (a word rare in a small store)."""
    if not q.entities or not ratio:
        return []
    limit = min(df.get(t, 0) for e in q.entities for t in _entity_name_terms(e)) // ratio
    return [g[0][0] for g in groups if _LATIN_WORD.match(g[0][0]) and 1 <= df.get(g[0][0], 0) <= limit]


def features(
    q: Query, cands: Sequence[Candidate], stats: tuple[int, Mapping[str, int]], p: Params = DEFAULT
) -> Features:
    idf_power = p.idf_power
    total, df = stats
    n = len(cands)
    # One unit of evidence per query word: an identifier and its parts count once, weighted by
    # the IDF of its most specific form; a memory holding only a part gets that part's IDF.
    weight = {t: idf(total, df.get(t, 0)) ** idf_power for t in q.terms}
    groups = [[(t, weight[t]) for t in g if t in weight] for g in dict.fromkeys(term_groups(q.text))]
    groups = [g for g in groups if g]
    denom = sum(max(w for _, w in g) for g in groups)
    kw = np.zeros(n)
    if denom:
        # Which candidates hold each query term: one set intersection per candidate (C-level), not one
        # Python membership test per term and candidate.
        held = {t: np.zeros(n, dtype=bool) for g in groups for t, _ in g}
        wanted = frozenset(held)
        for i, c in enumerate(cands):
            for t in c.terms & wanted:
                held[t][i] = True
        for g in groups:
            kw += np.max([w * held[t] for t, w in g], axis=0)
        kw /= denom
    nameless = np.zeros(n, dtype=bool)
    if names := _names(q, groups, df, p.name_ratio):
        named = np.fromiter((any(t in c.terms for t in names) for c in cands), dtype=bool, count=n)
        if named.any():  # a name no candidate holds says nothing about them
            nameless = ~named
    zq = _zh_share(q.terms)
    zd = np.array([_zh_share(c.terms) for c in cands])
    index = {c.atom_id: i for i, c in enumerate(cands)}
    ent = np.zeros(n)
    top_idf = idf(total, 1) or 1.0
    for group in (q.entities, q.boost):
        if group:
            rarity = {e: min(idf(total, df.get(t, 0)) for t in _entity_name_terms(e)) / top_idf for e in group}
            for i, c in enumerate(cands):
                ent[i] = max(ent[i], min(1.0, sum(r for e, r in rarity.items() if e in c.entities) / len(group)))
    return Features(
        kw=kw,
        cos=np.array([np.nan if c.cos is None else c.cos for c in cands], dtype=float),
        cross=np.abs(zd - zq),
        latin=(1.0 - zq) * (1.0 - zd),
        ent=ent,
        possible=np.array([c.epistemic == "possible" for c in cands], dtype=bool),
        timely=np.array([not c.terms.isdisjoint(_TIME_TERMS) for c in cands], dtype=bool),
        negative=np.array([c.polarity == "negative" or not c.terms.isdisjoint(_NEG_TERMS) for c in cands], dtype=bool),
        nameless=nameless,
        decay=np.array([c.decay * (0.8 if c.status == "negated" else 1.0) for c in cands], dtype=float),
        floor=q.cosine_floor,
        ceil=q.cosine_ceil,
        is_question=bool(_QUESTION.search(q.text)),
        is_when=bool(_WHEN.search(q.text)),
        is_negated=bool(_NEG_QUERY.search(q.text)),
        cos_en=np.array([np.nan if c.cos_en is None else c.cos_en for c in cands], dtype=float),
        next_idx=np.array([index.get(c.next_id, -1) if c.next_id else -1 for c in cands], dtype=int),
        english=q.english,
    )


def _band(x: np.ndarray, floor: np.ndarray | float, ceil: np.ndarray | float) -> np.ndarray:
    out: np.ndarray = np.nan_to_num(np.clip((x - floor) / (ceil - floor), 0.0, 1.0))
    return out


def _rise(x: np.ndarray, floor: float, p: Params) -> np.ndarray:
    """The English signal's map: 0 up to `floor`, then 1 - exp(-mix_k * (x - floor))."""
    out: np.ndarray = 1.0 - np.exp(-p.mix_k * np.maximum(x - floor, 0.0))
    return out


def english_floor(summed: np.ndarray, p: Params = DEFAULT) -> float:
    """Where the English view starts counting: the median of the candidates' summed cosines (a memory counts
    by how far it stands above the query's typical candidate: in a conversation most turns share its topic
    and sit around 0.5, in a project's notes around 0.16), or `mix_floor` with fewer than `mid_min` of them."""
    return float(np.median(summed)) if len(summed) >= p.mid_min else p.mix_floor


def _cues(f: Features, p: Params) -> np.ndarray:
    factor = np.ones(len(f.kw))
    if f.is_question and p.echo:
        factor[f.possible] *= 1.0 - p.echo
    if f.is_when and p.temporal:
        factor[f.timely] *= 1.0 + p.temporal
    if f.is_negated and p.negation:
        factor[f.negative] *= 1.0 + p.negation
    if p.name_miss:
        factor[f.nameless] *= 1.0 - p.name_miss
    return factor


def fused(signals: Mapping[str, float], p: Params = DEFAULT) -> float:
    """The fused score of one memory with these signal values (absent = 0), before cues and decay: e.g.
    the most a recall without a query vector can give (`{"keyword": 1.0}`)."""
    semantic = max(p.w_sem * signals.get("semantic", 0.0), p.w_en * signals.get("semantic_en", 0.0))
    miss = (
        (1.0 - p.w_kw * signals.get("keyword", 0.0)) * (1.0 - semantic) * (1.0 - p.w_ent * signals.get("entity", 0.0))
    )
    return min(1.0, 1.0 - miss)


def fuse(f: Features, p: Params = DEFAULT, *, english: bool = True) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(final scores, the named signals) for every candidate; `english=False` leaves semantic_en out."""
    floor = f.floor + p.sem_shift + p.xling_shift * f.cross
    ceil = f.ceil + p.sem_shift + p.xling_shift * f.cross
    signals = {"keyword": f.kw, "semantic": _band(f.cos, floor, ceil), "entity": f.ent}
    semantic = p.w_sem * signals["semantic"]
    w_kw = p.w_kw
    if f.english and len(f.cos_en) == len(f.kw):
        # An English query: for a memory in Latin script only with an English vector, the two models' cosines
        # summed, counting from the candidates' median (`english_floor`); for the others (a Chinese or mixed
        # memory: the English model cannot read its Chinese), the main cosine stands in for the English one,
        # lifted by `xling_lift` across languages (the main model places cross-lingual paraphrases lower), from
        # `mix_floor`. So a Chinese answer still competes with English look-alikes.
        share = (f.latin >= 1.0) & ~np.isnan(f.cos_en)
        cos = np.nan_to_num(f.cos)
        summed = np.nan_to_num(f.cos_en) + p.en_mix * cos
        mixed = _rise(summed, english_floor(summed[share], p), p)
        stand_in = _rise((1.0 + p.en_mix) * (cos + p.xling_lift * f.cross), p.mix_floor, p)
        signals["semantic_en"] = share * mixed
        signals["english"] = np.where(share, np.nan_to_num(f.cos_en), 0.0)  # the English model's own cosine
        # the stronger of this and the main model's band counts (replacing the band cost LoCoMo's chat turns
        # 0.09 of R@1, bench/RESULTS.md)
        semantic = np.maximum(semantic, p.w_mix * (share * mixed + (1.0 - share) * stand_in * ~np.isnan(f.cos)))
        w_kw = p.w_kw_en
    elif english and p.w_en and len(f.cos_en) == len(f.kw):
        signals["semantic_en"] = f.latin * _band(f.cos_en, p.en_floor, p.en_ceil)
        semantic = np.maximum(semantic, p.w_en * signals["semantic_en"])  # two views of one thing: the stronger
    miss = (1.0 - w_kw * f.kw) * (1.0 - semantic) * (1.0 - p.w_ent * f.ent)
    score = np.minimum(1.0, (1.0 - miss) * _cues(f, p)) * f.decay
    return score, signals


def score(
    f: Features, p: Params = DEFAULT, english: Callable[[list[int]], Sequence[float | None]] | None = None
) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray]:
    """(scores, signals, cue multipliers) of every candidate.

    `english(indices)` gives the English signal's cosines of the candidates at those indices; it
    is asked about the `en_top` best by the other signals only. Without it the signal is left out.
    """
    if english is not None and p.w_en and not f.english:
        first, _ = fuse(f, p, english=False)
        top = [int(i) for i in np.argsort(-first, kind="stable")[: p.en_top] if first[i] > 0]
        f.cos_en = np.full(len(f.kw), np.nan)
        if top:
            f.cos_en[top] = [np.nan if v is None else v for v in english(top)]
    scores, signals = fuse(f, p, english=english is not None and bool(p.w_en))
    if p.reply and len(f.next_idx) == len(scores):
        passed = np.zeros(len(scores))
        for i in np.argsort(-scores, kind="stable")[: p.reply_top]:
            j = f.next_idx[i]
            if scores[i] > 0 and f.possible[i] and j >= 0:
                passed[j] = max(passed[j], p.reply * scores[i])
        if passed.any():
            signals["reply"] = passed
            scores = np.maximum(scores, passed)
    return scores, signals, _cues(f, p)


def rank(
    q: Query,
    cands: Sequence[Candidate],
    stats: tuple[int, Mapping[str, int]],
    p: Params = DEFAULT,
    english: Callable[[Query, Sequence[Candidate]], Sequence[float | None]] | None = None,
    *,
    keep_zero: bool = False,
) -> list[tuple[float, Candidate, dict[str, float]]]:
    """Hits best first: (score, candidate, signals); candidates scoring 0 are left out unless `keep_zero`
    (the caller already chose them, e.g. recall's path/symbol filter).

    `english(q, cands)` computes the English signal's cosines for the candidates it is given.
    """
    if not cands:
        return []
    f = features(q, cands, stats, p)
    ask = None if english is None else (lambda idx: english(q, [cands[i] for i in idx]))
    scores, signals, cue = score(f, p, ask)
    out = []
    # Python floats once per signal (`tolist`), not a numpy scalar per candidate and signal.
    rows = {k: v.tolist() for k, v in signals.items()}
    cues = cue.tolist()
    for i, (c, value) in enumerate(zip(cands, scores.tolist(), strict=True)):
        s = round(value, 4)
        if s > 0 or keep_zero:
            sig = {k: v[i] for k, v in rows.items() if k != "reply" or v[i] > 0}
            if cues[i] != 1.0:
                sig["cues"] = cues[i]  # echo / temporal / negation multiplier applied
            out.append((s, c, sig))
    out.sort(key=lambda s: (-s[0], s[1].atom_id))
    return out
