#!/usr/bin/env python3
"""Redaction cost and coverage: microseconds per ~200-character sentence, and the corpus figures.

    .venv/bin/python bench/redaction.py [--rounds 200] [--json PATH]

Sentences: every text of tests/data/redaction_corpus.json (secrets and benign look-alikes), cut or
padded to 200 characters, plus plain project prose without any secret word (the common case on
the memorize path, whose budget is 25 ms p50). Each sentence is redacted --rounds times after a
warm-up; the table gives p50 / p95 / max of the per-sentence mean. Also: secrets redacted N/N over
how many families, benign texts altered; the agent corpus (tests/data/redaction_benign.json, built by
bench/redaction_corpus.py) altered N/N; secrets with no vendor rule (tests/data/redaction_structure.json)
redacted N/N by structure class.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from memoryd.text.redact import redact  # noqa: E402

PROSE = [
    "We decided the deploy runs nightly from the main branch; the staging database listens on port 5432 behind "
    "the VPN, see docs/ops.md for the runbook and ask in #infra before changing it.",
    "前端从 React 切到 Solid，理由是性能和包体积；登录页的 get_session() 返回 None 时要先刷新缓存再重试一次，"
    "相关讨论在 issue 412 里，负责人是 abble，下周一之前补上集成测试。",
    "The CI cache key includes the lockfile hash, so bumping any dependency rebuilds every layer; keep the "
    "base image pinned to python:3.11-slim and run pytest -q -x before pushing to the release branch.",
]


def _sentence(text: str) -> str:
    return (text * (200 // max(len(text), 1) + 1))[:200] if len(text) < 200 else text[:200]


def _time(text: str, rounds: int) -> float:
    redact(text)
    start = time.perf_counter()
    for _ in range(rounds):
        redact(text)
    return (time.perf_counter() - start) / rounds * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--json")
    args = ap.parse_args()
    corpus = json.loads((ROOT / "tests" / "data" / "redaction_corpus.json").read_text(encoding="utf-8"))
    groups = {
        "plain prose (no secret word)": [_sentence(t) for t in PROSE],
        "benign look-alikes": [_sentence(c["text"]) for c in corpus["benign"]],
        "sentences with a secret": [_sentence(c["text"]) for c in corpus["secrets"] if len(c["text"]) <= 200],
    }
    rows = {}
    print("| sentences (200 chars) | n | p50 µs | p95 µs | max µs |\n|---|---|---|---|---|")
    for name, texts in groups.items():
        cost = sorted(_time(t, args.rounds) for t in texts)
        p95 = cost[min(len(cost) - 1, int(len(cost) * 0.95))]
        rows[name] = {"n": len(cost), "p50_us": statistics.median(cost), "p95_us": p95, "max_us": cost[-1]}
        print(f"| {name} | {len(cost)} | {rows[name]['p50_us']:.0f} | {p95:.0f} | {cost[-1]:.0f} |")
    secrets = corpus["secrets"]
    redacted = sum(c["secret"] not in redact(c["text"]).text for c in secrets)
    families = {c.get("family") or c["kind"] for c in secrets}
    altered = sum(redact(c["text"]).text != c["text"] for c in corpus["benign"])
    print(
        f"\nsecrets redacted {redacted}/{len(secrets)} over {len(families)} families; "
        f"benign altered {altered}/{len(corpus['benign'])}"
    )
    # issue 23: sentences agents save (bench/redaction_corpus.py) and secrets with no vendor rule, by class
    agent = json.loads((ROOT / "tests" / "data" / "redaction_benign.json").read_text(encoding="utf-8"))["texts"]
    agent_altered = sum(redact(t).text != t for t in agent)
    structure = json.loads((ROOT / "tests" / "data" / "redaction_structure.json").read_text(encoding="utf-8"))["cases"]
    by_class: dict[str, list[int]] = {}
    for c in structure:
        hit = by_class.setdefault(c["class"], [0, 0])
        hit[0] += c["secret"] not in redact(c["text"]).text
        hit[1] += 1
    print(f"agent sentences altered {agent_altered}/{len(agent)}")
    print(
        "secrets without a vendor rule: "
        + ", ".join(f"{k} {a}/{n}" for k, (a, n) in by_class.items())
        + f"; total {sum(a for a, _ in by_class.values())}/{len(structure)}"
    )
    if args.json:
        Path(args.json).write_text(json.dumps({"cost": rows, "secrets": len(secrets), "redacted": redacted,
                                               "families": len(families), "benign": len(corpus["benign"]),
                                               "benign_altered": altered, "agent_sentences": len(agent),
                                               "agent_altered": agent_altered, "structure": by_class},
                                              indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
