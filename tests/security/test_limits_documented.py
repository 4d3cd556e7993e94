"""Every limit is documented: docs/SECURITY.md's Limits table is `memoryd.shared.limits.markdown_table()` verbatim
(regenerate it with `python -m memoryd.shared.limits`), and the engine enforces each."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memoryd.engine import Engine
from memoryd.shared.errors import InvalidInput, Rejected
from memoryd.shared.limits import LIMITS, markdown_table

SECURITY = (Path(__file__).parents[2] / "docs" / "SECURITY.md").read_text(encoding="utf-8")


def test_documented_limits_table_matches_the_code() -> None:
    section = SECURITY.split("### Limits", 1)[1].split("###", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| (\d+) (\w+) \| (.+) \|$", section, re.M)
    assert {name: (int(n), unit, what) for name, n, unit, what in rows} == LIMITS
    assert markdown_table() in section, "docs/SECURITY.md's Limits table is not generated: python -m memoryd.shared.limits"
    assert "## Security model" in SECURITY and "--allowed-host" in SECURITY


@pytest.mark.parametrize("call", [
    lambda e: e.recall("q" * (LIMITS["query"][0] + 1)),
    lambda e: e.search("x", top_k=LIMITS["max_results"][0] + 1),
    lambda e: e.timeline(limit=LIMITS["limit"][0] + 1),
    lambda e: e.timeline(since="1" * LIMITS["since"][0] + "d"),
    lambda e: e.review_pending(limit=LIMITS["review_limit"][0] + 1),
    lambda e: e.context("x", neighbors=LIMITS["neighbors"][0] + 1),
    lambda e: e.recall("x", entity_ids=["e"] * (LIMITS["entity_ids"][0] + 1)),
    lambda e: e.recall("x", types=["fact"] * (LIMITS["types"][0] + 1)),
    lambda e: e.session_start(title="t" * (LIMITS["title"][0] + 1)),
    lambda e: e.session_start(source="s" * (LIMITS["source"][0] + 1)),
    lambda e: e.reject(list(range(LIMITS["ids"][0] + 1))),
    lambda e: e.save_prompt("p", "x" * (LIMITS["prompt"][0] + 1)),
    lambda e: e.request_sensitive_read("r" * (LIMITS["reason"][0] + 1)),
    lambda e: e.resolve_scope_arg("s" * (LIMITS["scope"][0] + 1)),
])  # fmt: skip
def test_each_limit_is_enforced_with_invalid_input(engine: Engine, call: object) -> None:
    with pytest.raises(InvalidInput) as exc:
        call(engine)  # type: ignore[operator]
    assert exc.value.message and "Traceback" not in exc.value.message


def test_memorize_field_limits_are_rejections_with_reasons(engine: Engine) -> None:
    text = "The deploy pipeline runs nightly from the main branch"
    for kwargs, needle in (
        ({"title": "t" * 201}, "title is 201 characters; the limit is 200"),
        ({"tags": ["x"] * 33}, "tags has 33 items; the limit is 32"),
        ({"tags": ["x" * 65]}, "tags[0] is 65 characters; the limit is 64"),
        ({"triggers": ["y"] * 33}, "triggers has 33 items; the limit is 32"),
        ({"source": "s" * 65}, "source is 65 characters; the limit is 64"),
    ):
        with pytest.raises(Rejected) as caught:
            engine.memorize(text, **kwargs)  # type: ignore[arg-type]
        assert caught.value.message == needle, (kwargs.keys(), caught.value.message)
