"""Epistemic/polarity classifier: labelled-set accuracy plus the spec's explicit examples."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from memoryd.text.classify import Classification, classify

DATA = Path(__file__).parent / "data" / "classifier_labelled.jsonl"
LANGS = ("zh-Hant", "zh-Hans", "en", "mixed")


def _rows() -> list[dict[str, str]]:
    return [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_labelled_set_is_large_and_balanced() -> None:
    rows = _rows()
    assert len(rows) >= 100
    assert len({r["text"] for r in rows}) == len(rows)
    for lang in LANGS:
        assert sum(r["lang"] == lang for r in rows) >= 20, lang
    for r in rows:
        assert r["epistemic"] in {"actual", "necessary", "possible"}
        assert r["polarity"] in {"affirmative", "negative", "conditional"}


def test_labelled_accuracy() -> None:
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # n, epistemic ok, polarity ok
    misses = []
    for r in _rows():
        got = classify(r["text"])
        ep_ok, pol_ok = got.epistemic == r["epistemic"], got.polarity == r["polarity"]
        for key in (r["lang"], "all"):
            counts[key][0] += 1
            counts[key][1] += ep_ok
            counts[key][2] += pol_ok
        if not (ep_ok and pol_ok):
            want = f"{r['epistemic']}/{r['polarity']}"
            misses.append(f"  {want} -> {got.epistemic}/{got.polarity}: {r['text']}")

    print("\nlang       n   epistemic  polarity")
    for key in (*LANGS, "all"):
        n, ep, pol = counts[key]
        print(f"{key:8} {n:4}   {ep / n:8.3f}  {pol / n:8.3f}")
    print("misses:\n" + "\n".join(misses))

    n, ep, pol = counts["all"]
    assert ep / n >= 0.90
    assert pol / n >= 0.90


@pytest.mark.parametrize(
    ("text", "epistemic", "polarity"),
    [
        ("不要用 MongoDB", "necessary", "negative"),
        ("We don't use MongoDB", "actual", "negative"),
        ("Never commit .env files", "necessary", "negative"),
        ("禁止在 main 分支直接推送", "necessary", "negative"),
        ("沒有使用 Redis", "actual", "negative"),
        ("用 PostgreSQL，不用 MongoDB", "actual", "affirmative"),
        ("We use PostgreSQL, not MongoDB", "actual", "affirmative"),
        ("本專案用 PostgreSQL 16 做主資料庫，不用 MongoDB，因為需要事務和複雜查詢", "actual", "affirmative"),
        ("never push to main", "necessary", "negative"),
    ],
)
def test_spec_examples(text: str, epistemic: str, polarity: str) -> None:
    assert classify(text) == Classification(epistemic, polarity)  # type: ignore[arg-type]


def test_hedge_outranks_rule() -> None:
    assert classify("We might need to always pin numpy below 2.0").epistemic == "possible"
    assert classify("也許要一律使用 UTC").epistemic == "possible"


def test_hedge_inside_condition_or_reason_does_not_count() -> None:
    got = classify("If the build might fail, always run the tests first")
    assert got == Classification("necessary", "conditional")
    assert classify("Since Redis may be down, always keep a fallback").epistemic == "necessary"


def test_conditionals() -> None:
    for text in (
        "如果 CI 失敗，不要合併 PR",
        "若找不到設定檔就用預設值",
        "Unless asked, don't add dependencies",
        "快取失效的話，重新登入",
        "當 token 過期時，導向登入頁",
        "Deploy only if CI is green",
    ):
        assert classify(text).polarity == "conditional", text


def test_not_conditionals() -> None:
    for text in (
        "當時我們選了 MySQL",
        "當前版本只支援 Python 3.11",
        "主要是因為效能問題",
        "Check if the file exists first",
        "Not sure if staging runs Python 3.9",
        "When I ran the migration, it locked the table",
        "Even if tests pass, wait for CI",
    ):
        assert classify(text).polarity != "conditional", text


@pytest.mark.parametrize(
    "text",
    [
        "這個函式庫的文件寫得不錯",
        "資料量不斷增長",
        "不過目前還是用 SQLite",
        "不同環境用不同設定",
        "不少 endpoint 用 v1",
        "使用者資料不僅要加密，還要備份",
        "記憶體不足，需要擴容",
        "使用者的別名存在 aliases 表",
        "Not only the API but also the CLI reads it",
        "Nothing but UTF-8 is accepted",
        "Don't forget to bump the version",
        "我們不得不保留舊的雜湊函式",
    ],
)
def test_words_containing_negators_are_affirmative(text: str) -> None:
    assert classify(text).polarity == "affirmative"


def test_questions_are_possible() -> None:
    assert classify("Should we move the queue to Kafka?").epistemic == "possible"
    assert classify("是不是要改用 Redis？").epistemic == "possible"


def test_empty_and_plain_text() -> None:
    assert classify("") == Classification("actual", "affirmative")
    assert classify("The worker pool size is 8") == Classification("actual", "affirmative")
