"""Recall ranking (`search/rank.py`, issue 12): pure-function behaviour, then the engine on both backends."""

from __future__ import annotations

import numpy as np
import pytest

from memoryd.engine import Engine
from memoryd.search import rank
from memoryd.search.embed import WordLlamaTerms, term_embedder
from memoryd.search.tokenize import tokens


def _q(text: str, entities: tuple[str, ...] = (), floor: float = 0.2, ceil: float = 0.6) -> rank.Query:
    return rank.Query(text=text, terms=tuple(dict.fromkeys(tokens(text, query=True))), entities=entities, boost=(),
                      cosine_floor=floor, cosine_ceil=ceil)  # fmt: skip


def _c(i: int, text: str, cos: float | None = None, **kw: object) -> rank.Candidate:
    return rank.Candidate(atom_id=f"a{i:02d}", cos=cos, terms=frozenset(tokens(text)), entities=(), status="active",
                          type="fact", decay=1.0, **kw)  # type: ignore[arg-type]  # fmt: skip


def _stats(cands: list[rank.Candidate], total: int | None = None) -> tuple[int, dict[str, int]]:
    df: dict[str, int] = {}
    for c in cands:
        for t in c.terms:
            df[t] = df.get(t, 0) + 1
    return total or len(cands), df


def _order(q: rank.Query, cands: list[rank.Candidate], p: rank.Params = rank.DEFAULT, **kw: object) -> list[str]:
    return [c.atom_id for _, c, _ in rank.rank(q, cands, _stats(cands), p, **kw)]  # type: ignore[arg-type]


def test_scores_are_in_unit_range_and_best_first() -> None:
    cands = [_c(i, f"memory {i} about redis caching", cos=0.1 * i) for i in range(8)]
    hits = rank.rank(_q("redis caching"), cands, _stats(cands))
    scores = [s for s, _, _ in hits]
    assert scores == sorted(scores, reverse=True) and all(0.0 < s <= 1.0 for s in scores)
    assert set(hits[0][2]) >= {"keyword", "semantic", "entity"}


def test_a_common_entity_is_weak_evidence_next_to_a_unique_name() -> None:
    prom = "entity:library:Prometheus"
    common = [
        rank.Candidate(
            atom_id=f"p{i:02d}",
            cos=None,
            terms=frozenset(tokens(f"svc{i} exposes Prometheus metrics")),
            entities=(prom,),
            status="active",
            type="fact",
            decay=1.0,
        )  # fmt: skip
        for i in range(30)
    ]
    target = _c(99, "billing-exporter serves its metrics on port 9464")
    cands = [*common, target]
    q = _q("where can I scrape Prometheus stats for billing-exporter", entities=(prom,))
    hits = rank.rank(q, cands, _stats(cands))
    assert hits[0][1].atom_id == "a99"
    assert hits[1][2]["entity"] < 0.5  # Prometheus is in 30 of 31 memories: far from a unique name


def _nginx_store() -> tuple[list[rank.Candidate], rank.Query]:
    """The issue's templated distractors: 30 memories name nginx in the query's own sentence shape
    (high cosine); the answer names the rare service only, in other words (low cosine)."""
    nginx = "entity:library:Nginx"
    common = [
        rank.Candidate(
            atom_id=f"n{i:02d}",
            cos=0.55,
            terms=frozenset(tokens(f"nginx caches svc{i} responses for {i} minutes")),
            entities=(nginx,),
            status="active",
            type="fact",
            decay=1.0,
        )  # fmt: skip
        for i in range(30)
    ]
    target = _c(99, "The reverse proxy in front of tilecache keeps map tiles for one hour.", cos=0.25)
    return [*common, target], _q("how long does nginx cache tilecache responses", entities=(nginx,))


def test_a_name_far_rarer_than_the_named_entity_demotes_the_memories_without_it() -> None:
    cands, q = _nginx_store()
    hits = rank.rank(q, cands, _stats(cands))
    assert hits[0][1].atom_id == "a99"
    assert hits[1][2]["cues"] == pytest.approx(1.0 - rank.DEFAULT.name_miss) and "cues" not in hits[0][2]
    off = rank.Params(name_miss=0.0)
    assert _order(q, cands, off)[0] != "a99"  # without the cue the sentence shape wins
    assert _order(q, cands, rank.Params(name_ratio=0))[0] != "a99"


def test_names_need_a_named_entity_a_holder_and_enough_rarity() -> None:
    cands, q = _nginx_store()
    no_entity = rank.Query(text=q.text, terms=q.terms, entities=(), boost=(), cosine_floor=0.2, cosine_ceil=0.6)
    assert not rank.features(no_entity, cands, _stats(cands)).nameless.any()  # a rare word alone is no name
    unheld = [c for c in cands if c.atom_id != "a99"]
    assert not rank.features(q, unheld, _stats(unheld)).nameless.any()  # no candidate holds it: no demotion
    few = cands[:5] + cands[-1:]  # nginx in 5 memories, tilecache in 1: not 10 times rarer
    assert not rank.features(q, few, _stats(few)).nameless.any()
    assert rank.features(q, few, _stats(few), rank.Params(name_ratio=5)).nameless.sum() == 5
    f = rank.features(q, cands, _stats(cands))
    assert f.nameless.sum() == 30 and not f.nameless[-1]


def test_a_question_that_echoes_the_query_ranks_below_the_statement() -> None:
    echo = _c(1, "Where did you buy the camera?", cos=0.3, epistemic="possible")
    stmt = _c(2, "I buy every camera at the Lisbon flea market", cos=0.3)
    q = _q("Where did she buy the camera?")
    assert _order(q, [echo, stmt])[0] == "a02"
    assert _order(q, [echo, stmt], rank.Params(echo=0.0, temporal=0.0, negation=0.0))[0] == "a01"  # a tie


def test_when_questions_favour_memories_with_a_time_word_and_negated_queries_negative_memories() -> None:
    plain = _c(1, "Caroline went to the support group", cos=0.3)
    dated = _c(2, "Caroline went to the support group yesterday", cos=0.3)
    q = _q("When did Caroline go to the support group?")
    hits = rank.rank(q, [plain, dated], _stats([plain, dated]))
    assert hits[0][1].atom_id == "a02" and hits[0][2]["cues"] == pytest.approx(1.0 + rank.DEFAULT.temporal)
    yes = _c(3, "We use MongoDB for analytics events", cos=0.3)
    no = _c(4, "We use PostgreSQL, not MongoDB, for orders", cos=0.3, polarity="negative")
    assert _order(_q("which database did we decide not to use"), [yes, no])[0] == "a04"
    assert _order(_q("which database do we use for analytics"), [yes, no])[0] == "a03"


def test_a_cross_lingual_pair_gets_a_lower_cosine_band() -> None:
    zh = _c(1, "支付服务调用第三方接口失败时最多重试 5 次", cos=0.35)
    en = _c(2, "The payment page shows a button", cos=0.35)
    f = rank.features(_q("how many times does the payment service retry"), [zh, en], _stats([zh, en]))
    _, signals = rank.fuse(f)
    assert f.cross[0] == pytest.approx(1.0) and f.cross[1] == pytest.approx(0.0)
    assert signals["semantic"][0] > signals["semantic"][1]  # same cosine counts for more across languages


def test_the_english_signal_is_asked_for_the_best_candidates_only_and_for_latin_text_only() -> None:
    cands = [_c(i, f"note {i} about the deploy freeze", cos=0.5 - 0.01 * i) for i in range(50)]
    cands.append(_c(50, "部署冻结在周五下午", cos=0.2))
    asked: list[str] = []

    def english(q: rank.Query, cs: list[rank.Candidate]) -> list[float]:
        asked.extend(c.atom_id for c in cs)
        return [0.6] * len(cs)

    hits = rank.rank(_q("deploy freeze"), cands, _stats(cands), rank.Params(en_top=10), english=english)  # type: ignore[arg-type]
    assert len(asked) == 10 and asked[0] == "a00"
    by_id = {c.atom_id: sig for _, c, sig in hits}
    assert by_id["a00"]["semantic_en"] > 0 and by_id["a45"]["semantic_en"] == 0
    without = rank.rank(_q("deploy freeze"), cands, _stats(cands))
    assert "semantic_en" not in without[0][2]


def _english_q(text: str) -> rank.Query:
    q = _q(text)
    return rank.Query(text=q.text, terms=q.terms, entities=(), boost=(), cosine_floor=q.cosine_floor,
                      cosine_ceil=q.cosine_ceil, english=True)  # fmt: skip


def test_the_english_view_counts_from_the_candidates_median() -> None:
    # The same memory (English cosine 0.55, main 0.30) among a conversation's turns that all share its topic
    # counts for less than among a project's unrelated notes: the view measures how far it stands above the rest.
    q = _english_q("what did she paint last summer")

    def view(others: float) -> float:
        cands = [_c(0, "a note", cos=0.30, cos_en=0.55)]
        cands += [_c(i, f"note {i}", cos=others, cos_en=others) for i in range(1, 30)]
        _, signals = rank.fuse(rank.features(q, cands, _stats(cands)))
        return float(signals["semantic_en"][0])

    crowded, alone = view(0.30), view(0.05)
    assert 0.0 < crowded < alone
    # fewer candidates than `mid_min`: the fixed floor (a tiny store has no typical candidate to stand above)
    few = [_c(0, "a note", cos=0.30, cos_en=0.55), _c(1, "another", cos=0.30, cos_en=0.30)]
    _, signals = rank.fuse(rank.features(q, few, _stats(few)))
    assert signals["semantic_en"][0] == pytest.approx(1.0 - np.exp(-rank.DEFAULT.mix_k * (0.55 + 0.75 * 0.30 - 0.30)))
    assert rank.english_floor(np.array([0.1, 0.2, 0.9])) == rank.DEFAULT.mix_floor
    assert rank.english_floor(np.linspace(0.0, 1.0, 11)) == pytest.approx(0.5)


def test_a_mixed_memory_gets_the_main_models_stand_in_not_its_english_cosine() -> None:
    # The English model cannot read the Chinese half of "特征存储选用 Feast, 在线特征放在 Redis": its English cosine
    # (high here on purpose) is not used; the main model's cross-language cosine stands in for it.
    q = _english_q("where is the feature store's online data kept")
    mixed = _c(0, "特征存储选用 Feast，在线特征放在 Redis，离线特征放在 Iceberg。", cos=0.37, cos_en=0.9)
    english = _c(1, "The payment page shows a button", cos=0.37, cos_en=0.9)
    f = rank.features(q, [mixed, english], _stats([mixed, english]))
    assert 0.0 < f.cross[0] < 1.0 and f.latin[1] == 1.0
    _, signals = rank.fuse(f)
    assert signals["semantic_en"][0] == 0.0 and signals["english"][0] == 0.0
    assert signals["semantic_en"][1] > 0.0 and signals["english"][1] == pytest.approx(0.9)


def test_wordllama_terms_match_the_model_and_load_from_the_wheel(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    def no_network(*a: object, **k: object) -> None:
        raise AssertionError("the English model must not touch the network")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    w = WordLlamaTerms()
    terms = frozenset(["deploy", "freez", "friday", "afternoon"])
    bag = w.bags([terms, frozenset()])
    assert bag.shape == (2, w.dim) and np.allclose(bag[1], 0.0)
    assert np.linalg.norm(bag[0]) == pytest.approx(1.0, abs=1e-5)
    joined = " ".join(sorted(terms))  # a bag of terms is the model's mean over their tokens
    ids = w._ids(joined)
    want = w._emb[ids].mean(axis=0)
    assert float(bag[0] @ (want / np.linalg.norm(want))) == pytest.approx(1.0, abs=1e-4)
    q = w.query("Is there a deploy freeze on Friday afternoons?")
    assert float(bag[0] @ q) > float(w.bags([frozenset(["banana", "smoothi", "recip"])])[0] @ q)


def test_a_full_bag_cache_drops_its_oldest_quarter_not_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    from memoryd.search import embed

    monkeypatch.setattr(embed, "_BAG_CACHE", 8)
    w = WordLlamaTerms()
    sets = [frozenset([f"word{i}", "deploy"]) for i in range(12)]
    first = w.bags(sets[:8])
    assert list(w._bag_cache) == sets[:8]
    w.bags(sets[8:9])  # full: the two oldest go, the rest stay
    assert list(w._bag_cache) == sets[2:9]
    again = w.bags(sets[:8])  # a dropped set is embedded again, to the same vector
    assert np.array_equal(again, first)


def test_loading_wordllama_leaves_the_process_logging_alone() -> None:
    # wordllama calls logging.basicConfig(INFO) on import; in a fresh process (pytest's own handlers
    # would hide it here) the root logger must stay unconfigured.
    import subprocess
    import sys

    code = (
        "import logging\nfrom memoryd.search.embed import WordLlamaTerms\nWordLlamaTerms()\n"
        "r = logging.getLogger()\nprint(len(r.handlers), r.level)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split() == ["0", "30"] and "INFO" not in out.stderr


def test_term_embedder_names() -> None:
    assert term_embedder("none") is None
    with pytest.raises(ValueError, match="unknown term embedder 'glove'"):
        term_embedder("glove")
    from memoryd.search.embed import english_embedder

    assert english_embedder("none") is None and english_embedder("minilm") is english_embedder("minilm")
    with pytest.raises(ValueError, match="unknown English embedder 'bert'; expected minilm or none"):
        english_embedder("bert")


# -- the engine, on both backends ------------------------------------------------------------------


def test_recall_finds_the_unique_name_among_many_memories_of_a_common_entity(engine: Engine) -> None:
    for i, svc in enumerate(["checkout", "auth", "payments", "inventory", "catalog", "shipping", "orders", "cart",
                             "pricing", "reviews", "media", "search-api", "ledger", "billing", "webhooks"]):  # fmt: skip
        engine.memorize(f"The {svc} service exposes Prometheus metrics on port {9100 + i}.", gate="trusted")
        engine.memorize(f"Prometheus scrapes {svc} every 30 seconds.", gate="trusted")
    target = engine.memorize("billing-exporter serves its metrics on port 9464 at /metrics.", gate="trusted").atom_id
    hits = engine.recall("where can I scrape Prometheus stats for billing-exporter").hits
    assert target in [h.atom.id for h in hits[:3]], [h.atom.content for h in hits[:3]]


def test_recall_prefers_the_negated_alternative_for_a_negated_query(engine: Engine) -> None:
    engine.memorize("PostgreSQL 16 is the primary database for orders and invoices.", gate="trusted")
    engine.memorize("MongoDB Atlas hosts the product analytics events.", gate="trusted")
    engine.memorize("The reporting database is refreshed every night.", gate="trusted")
    target = engine.memorize("We use PostgreSQL and not MongoDB: orders need multi-row transactions.", gate="trusted")
    hits = engine.recall("which database did we decide not to use").hits
    assert hits[0].atom.id == target.atom_id, [h.atom.content for h in hits[:3]]
    assert hits[0].signals.get("cues", 1.0) > 1.0


def test_a_matching_question_passes_part_of_its_score_to_the_turn_saved_after_it() -> None:
    ask = _c(1, "Where did you get that camera?", cos=0.5, epistemic="possible", next_id="a02")
    reply = _c(2, "Oh, a flea market in Lisbon, for 20 euros!", cos=0.1)
    other = _c(3, "My camera takes great photos of the sea", cos=0.2)
    q = _q("Where did Melanie get her camera?")
    hits = rank.rank(q, [ask, reply, other], _stats([ask, reply, other]))
    by_id = {c.atom_id: (s, sig) for s, c, sig in hits}
    assert by_id["a02"][1]["reply"] == pytest.approx(0.9 * by_id["a01"][0], abs=1e-4)
    assert [c.atom_id for _, c, _ in hits][:2] == ["a01", "a02"]
    off = rank.rank(q, [ask, reply, other], _stats([ask, reply, other]), rank.Params(reply=0.0))
    assert "a02" not in [c.atom_id for _, c, _ in off[:2]]
    statement = _c(1, "I got that camera in Lisbon", cos=0.5, next_id="a02")  # not a question: passes nothing
    assert "reply" not in {k for _, c, sig in rank.rank(q, [statement, reply], _stats([statement, reply])) for k in sig}


def test_successors_are_the_next_memory_of_the_same_scope_within_the_window(engine: Engine) -> None:
    import time

    from memoryd.shared.models import Scope

    a = engine.memorize("Melanie: where did you get that camera?", gate="trusted").atom_id
    other_scope = Scope(tenant_id=engine.scope.tenant_id, workspace="other", repository="elsewhere")
    # an agent cannot write to another repository (issue 10); the person at the CLI can
    person = Engine(engine.settings, engine.store, engine.embedder, engine.scope, authority="operator")
    person.memorize("Someone else's note in another repository", gate="trusted", scope=other_scope)
    b = engine.memorize("Caroline: at a flea market in Lisbon", gate="trusted").atom_id
    c = engine.memorize("Melanie: nice, I love Lisbon", gate="trusted").atom_id
    assert a and b and c
    assert engine.store.successors([a, b, c], statuses=["active"], within_seconds=3600) == {a: b, b: c}
    time.sleep(0.05)
    d = engine.memorize("Caroline: much later", gate="trusted").atom_id
    assert engine.store.successors([c], statuses=["active"], within_seconds=0.01) == {}
    assert engine.store.successors([c], statuses=["active"], within_seconds=3600) == {c: d}
    engine.correct(d, "negate", "not true")
    assert engine.store.successors([c], statuses=["active"], within_seconds=3600) == {}
    assert engine.store.successors([c], statuses=["active", "negated"], within_seconds=3600) == {c: d}
    assert engine.store.successors([], statuses=["active"], within_seconds=3600) == {}


def test_recall_returns_the_reply_to_a_question_that_echoes_the_query(engine: Engine) -> None:
    turns = [
        "Caroline: I finally finished the painting for the art show!",
        "Melanie: Wow, where did you get the canvas for it?",
        "Caroline: From the little shop next to the harbour, they cut it to size.",
        "Melanie: I should go there for my pottery glaze too.",
        "Caroline: The art show opens on Friday at the community centre.",
    ]
    ids = [engine.memorize(t, gate="trusted").atom_id for t in turns]
    hits = engine.recall("Where did Caroline get the canvas?").hits
    top = [h.atom.id for h in hits[:2]]
    assert ids[2] in top, [h.atom.content for h in hits[:3]]
    reply = next(h for h in hits if h.atom.id == ids[2])
    assert reply.signals.get("reply", 0) > 0


def test_fused_is_the_ranking_of_one_memory_with_those_signals() -> None:
    p = rank.DEFAULT
    assert rank.fused({"keyword": 1.0}) == pytest.approx(p.w_kw)  # the prompt hook's bar without a vector
    assert rank.fused({}) == 0.0 and rank.fused({"keyword": 1.0, "semantic": 1.0, "entity": 1.0}) <= 1.0
    both = rank.fused({"semantic": 1.0, "semantic_en": 1.0})
    assert both == pytest.approx(max(p.w_sem, p.w_en))  # two views of one thing: the stronger counts


def test_keep_zero_keeps_candidates_the_caller_chose() -> None:
    q = rank.Query(text="zebra", terms=("zebra",), entities=(), boost=(), cosine_floor=0.2, cosine_ceil=0.6)
    c = rank.Candidate(atom_id="A", cos=None, terms=frozenset({"other"}), entities=(), status="active", type="fact",
                       decay=1.0)  # fmt: skip
    assert rank.rank(q, [c], (10, {})) == []
    kept = rank.rank(q, [c], (10, {}), keep_zero=True)
    assert [(s, x.atom_id) for s, x, _ in kept] == [(0.0, "A")]
