"""The prompt hook's relevance decision (`memoryd.search.relevance`, issue 35): a pure function over a
recall's hits, and the hook using it end to end with the real models."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from memoryd.agents.hooks import run_hook
from memoryd.engine import Engine, relevant
from memoryd.search import relevance
from memoryd.shared.config import Settings


def hit(score: float, *, keyword: float = 0.0, semantic_en: float = 0.0, entity: float = 0.0, english: float = 0.0,
        status: str = "active", atom_id: str = "a") -> Any:  # fmt: skip
    signals = {"keyword": keyword, "semantic_en": semantic_en, "entity": entity, "english": english}
    return SimpleNamespace(score=score, signals=signals, atom=SimpleNamespace(status=status, id=atom_id))


def test_the_model_has_one_weight_per_feature() -> None:
    assert len(relevance.WEIGHTS) == len(relevance.FEATURES) == len(relevance.features([hit(0.5)])[0])
    assert 0.0 < relevance.FOLLOW < relevance.THRESHOLD < 1.0 and relevance.MAX_INJECT >= 1


def test_a_clear_best_match_is_injected_and_a_flat_weak_list_is_not() -> None:
    clear = [hit(0.85, keyword=0.6, semantic_en=0.8, english=0.7, atom_id="best"),
             hit(0.2, semantic_en=0.1, english=0.1, atom_id="b"), hit(0.15, english=0.05, atom_id="c")]  # fmt: skip
    assert [h.atom.id for h in relevance.inject(clear)] == ["best"]
    flat = [hit(0.32, keyword=0.1, semantic_en=0.3, english=0.3, atom_id=str(i)) for i in range(5)]
    assert relevance.inject(flat) == []
    assert relevance.inject([]) == []


def test_runners_up_come_along_only_with_a_hit_that_stands_out() -> None:
    # a task prompt: the best hit stands out, the helpful memory is second; the third is too weak to come along
    hits = [hit(0.8, keyword=0.5, semantic_en=0.7, english=0.6, atom_id="best"),
            hit(0.55, keyword=0.3, semantic_en=0.4, english=0.45, atom_id="second"),
            hit(0.1, english=0.0, atom_id="weak")]  # fmt: skip
    p = relevance.probabilities(hits)
    assert p[0] >= relevance.THRESHOLD > p[1] >= relevance.FOLLOW > p[2]
    assert [h.atom.id for h in relevance.inject(hits)] == ["best", "second"]
    # two such runners-up with nothing standing out above them: nothing at all
    alike = [hits[1], hit(0.53, keyword=0.3, semantic_en=0.4, english=0.45, atom_id="alike"), hits[2]]
    assert max(relevance.probabilities(alike)) < relevance.THRESHOLD and relevance.inject(alike) == []
    # each hit on its own bar (follow = threshold): the runner-up stays out
    assert [h.atom.id for h in relevance.inject(hits, follow=relevance.THRESHOLD)] == ["best"]


def test_the_english_models_own_cosine_is_evidence() -> None:
    low = [hit(0.6, keyword=0.2, semantic_en=0.5, english=0.2), hit(0.4, semantic_en=0.3, atom_id="b")]
    high = [hit(0.6, keyword=0.2, semantic_en=0.5, english=0.7), hit(0.4, semantic_en=0.3, atom_id="b")]
    assert relevance.probabilities(high)[0] > relevance.probabilities(low)[0]


def test_a_language_named_by_the_prompt_is_weak_evidence() -> None:
    # "convert this Java class to Kotlin" against "we're on Kotlin 2.1": the entity alone does not carry it
    named = [hit(0.62, keyword=0.2, semantic_en=0.45, entity=1.0), hit(0.5, semantic_en=0.4, atom_id="b")]
    plain = [hit(0.62, keyword=0.2, semantic_en=0.45, entity=0.0), hit(0.5, semantic_en=0.4, atom_id="b")]
    assert relevance.probabilities(named)[0] < relevance.probabilities(plain)[0]


def test_a_memory_that_is_not_active_is_never_injected() -> None:
    hits = [hit(0.95, keyword=1.0, semantic_en=0.9, status="superseded", atom_id="old"),
            hit(0.9, keyword=0.9, semantic_en=0.9, atom_id="new")]  # fmt: skip
    assert [h.atom.id for h in relevance.inject(hits)] == ["new"]
    assert relevance.inject([hit(0.95, keyword=1.0, semantic_en=0.9, status=s) for s in ("negated", "pending")]) == []


def test_at_most_the_limit_is_injected() -> None:
    hits = [hit(0.95, keyword=1.0, semantic_en=0.95, atom_id=str(i)) for i in range(6)]
    assert len(relevance.inject(hits)) == relevance.MAX_INJECT
    assert len(relevance.inject(hits, limit=1)) == 1
    # the engine's one decision (every host's prompt hook, OpenClaw's auto-recall) is this function's
    assert relevant(hits) == relevance.inject(hits) and relevant(hits, floor=0.99) == []


# -- the hook with the real models ------------------------------------------------------------------------


def ask(repo: Path, prompt: str, settings: Settings, embedder: Any, session_id: str) -> str:
    body = {"session_id": session_id, "transcript_path": "/nonexistent.jsonl", "cwd": str(repo),
            "hook_event_name": "UserPromptSubmit", "prompt": prompt}  # fmt: skip
    out = run_hook("user-prompt-submit", json.dumps(body), settings=settings, embedder=embedder)
    assert out.exit_code == 0
    return json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"] if out.stdout else ""


@pytest.fixture
def project(settings: Settings, repo: Path, embedder: Any) -> dict[str, str]:
    with Engine.open(settings, cwd=repo, embedder=embedder) as e:
        ids = {
            "proto": e.memorize(
                "After editing any .proto file run `buf generate` and commit the generated stubs in "
                "`crates/api/src/gen/`.",
                source="user",
            ).atom_id,  # fmt: skip
            "money": e.memorize(
                "Amounts are i64 minor units plus an ISO-4217 code; never f64 for money.", source="user"
            ).atom_id,  # fmt: skip
            "owner": e.memorize(
                "`crates/ledger` is owned by Priya Raman; posting rule changes need her approval.", source="user"
            ).atom_id,  # fmt: skip
            "kaniko": e.memorize("Container images are built with Kaniko in CI.", source="user").atom_id,
        }
        ids["buildkit"] = e.correct(ids["kaniko"], "replace", "moved to BuildKit",
                                    new_content="Image builds moved from Kaniko to BuildKit in CI.").new_atom_id or ""  # fmt: skip
    return ids


def test_the_hook_injects_a_paraphrase_answer_and_stays_quiet_on_an_unrelated_prompt(
    project: dict[str, str], settings: Settings, repo: Path, embedder: Any
) -> None:
    # in other words than the memory's ("approve edits" ↔ "changes need her approval"; the crate named)
    ctx = ask(repo, "Who needs to approve edits to the ledger crate?", settings, embedder, "s-para")
    assert project["owner"] in ctx and "Priya Raman" in ctx and project["money"] not in ctx
    assert ask(repo, "Write a haiku about autumn leaves falling in the park.", settings, embedder, "s-none") == ""


def test_the_hook_never_injects_a_superseded_memory(project: dict[str, str], settings: Settings, repo: Path,
                                                    embedder: Any) -> None:  # fmt: skip
    ctx = ask(repo, "Are container images built with Kaniko in CI?", settings, embedder, "s-old")
    assert project["kaniko"] not in ctx
    assert project["buildkit"] in ctx
