#!/usr/bin/env python3
"""Redaction cost and coverage: microseconds per ~200-character sentence, and the corpus figures.

    .venv/bin/python bench/redaction.py [--rounds 200] [--json PATH] [--src DIR] [--before DIR [--pairs 5]]

Sentences: every text of tests/data/redaction_corpus.json (secrets and benign look-alikes), cut or
padded to 200 characters, plus plain project prose without any secret word (the common case on
the memorize path, whose budget is 25 ms p50). Each sentence is redacted --rounds times after a
warm-up; the table gives p50 / p95 / max of the per-sentence mean. Also: secrets redacted N/N over
how many families, benign texts altered; the agent corpus (tests/data/redaction_benign.json, built by
bench/redaction_corpus.py) altered N/N; secrets with no vendor rule (tests/data/redaction_structure.json)
redacted N/N by structure class; and per structure family (tests/data/redaction_families.json, issue 37:
command lines, credential labels in other languages, markup and config, cookies and session headers, prose
look-alikes) the secrets caught, the look-alikes altered and the cost per text.

`--src DIR` measures another checkout's `src` (the corpora stay this tree's). `--before DIR` measures cost
only, this tree and DIR's alternately in fresh processes `--pairs` times, and prints each group's median
p50 for both and the median of the paired ratios (after / before).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
if "--src" in sys.argv:
    sys.path.insert(0, str(Path(sys.argv[sys.argv.index("--src") + 1]).resolve() / "src"))
else:
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


def _load(name: str) -> Any:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def _groups() -> dict[str, list[str]]:
    corpus, families = _load("redaction_corpus.json"), _load("redaction_families.json")["cases"]
    return {
        "plain prose (no secret word)": [_sentence(t) for t in PROSE],
        "benign look-alikes": [_sentence(c["text"]) for c in corpus["benign"]],
        "sentences with a secret": [_sentence(c["text"]) for c in corpus["secrets"] if len(c["text"]) <= 200],
        "structure families (issue 37)": [_sentence(c["text"]) for c in families],
    }


def _cost(texts: list[str], rounds: int) -> dict[str, float]:
    cost = sorted(_time(t, rounds) for t in texts)
    p95 = cost[min(len(cost) - 1, int(len(cost) * 0.95))]
    return {"n": len(cost), "p50_us": statistics.median(cost), "p95_us": p95, "max_us": cost[-1]}


def _families(rounds: int) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for c in _load("redaction_families.json")["cases"]:
        row = rows.setdefault(c["family"], {"caught": {}, "secrets": {}, "altered": {}, "lookalikes": {}, "texts": []})
        out = redact(c["text"]).text
        if "secret" in c:
            row["secrets"][c["set"]] = row["secrets"].get(c["set"], 0) + 1
            row["caught"][c["set"]] = row["caught"].get(c["set"], 0) + (c["secret"] not in out)
        else:
            row["lookalikes"][c["set"]] = row["lookalikes"].get(c["set"], 0) + 1
            row["altered"][c["set"]] = row["altered"].get(c["set"], 0) + (out != c["text"])
        row["texts"].append(c["text"])
    for row in rows.values():
        row["cost"] = _cost(row.pop("texts"), rounds)
    return rows


def _by_set(done: dict[str, int], total: dict[str, int]) -> str:
    if not total:
        return "-"
    sets = " + ".join(f"{done.get(s, 0)}/{n}" for s, n in total.items())
    return f"{sum(done.values())}/{sum(total.values())} ({sets})"


def _compare(before: str, pairs: int, rounds: int) -> None:
    """Cost of this tree and of `before`, alternately in fresh processes; medians and paired ratios."""
    runs: dict[str, list[dict[str, Any]]] = {"after": [], "before": []}
    for _ in range(pairs):
        for side, src in (("after", str(ROOT)), ("before", before)):
            out = subprocess.run([sys.executable, __file__, "--worker", "--src", src, "--rounds", str(rounds)],
                                 capture_output=True, text=True, check=True, env={**os.environ, "PYTHONHASHSEED": "0"})  # fmt: skip
            runs[side].append(json.loads(out.stdout))
    print("| sentences (200 chars) | before p50 µs | after p50 µs | after / before (median of pairs) |")
    print("|---|---|---|---|")
    for group in runs["after"][0]:
        b = [r[group]["p50_us"] for r in runs["before"]]
        a = [r[group]["p50_us"] for r in runs["after"]]
        ratio = statistics.median(x / y for x, y in zip(a, b, strict=True))
        print(f"| {group} | {statistics.median(b):.0f} | {statistics.median(a):.0f} | {ratio:.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--json")
    ap.add_argument("--src", help="measure this checkout's src/ (a 'before' tree); the corpora stay this tree's")
    ap.add_argument("--before", help="compare cost with this checkout (alternating fresh processes)")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps({name: _cost(texts, args.rounds) for name, texts in _groups().items()}))
        return
    if args.before:
        _compare(args.before, args.pairs, args.rounds)
        return
    rows = {}
    print("| sentences (200 chars) | n | p50 µs | p95 µs | max µs |\n|---|---|---|---|---|")
    for name, texts in _groups().items():
        rows[name] = _cost(texts, args.rounds)
        print(f"| {name} | {rows[name]['n']} | {rows[name]['p50_us']:.0f} | {rows[name]['p95_us']:.0f} | "
              f"{rows[name]['max_us']:.0f} |")  # fmt: skip
    corpus = _load("redaction_corpus.json")
    secrets = corpus["secrets"]
    redacted = sum(c["secret"] not in redact(c["text"]).text for c in secrets)
    families = {c.get("family") or c["kind"] for c in secrets}
    altered = sum(redact(c["text"]).text != c["text"] for c in corpus["benign"])
    print(
        f"\nsecrets redacted {redacted}/{len(secrets)} over {len(families)} families; "
        f"benign altered {altered}/{len(corpus['benign'])}"
    )
    # issue 23: sentences agents save (bench/redaction_corpus.py) and secrets with no vendor rule, by class
    agent = _load("redaction_benign.json")["texts"]
    agent_altered = sum(redact(t).text != t for t in agent)
    structure = _load("redaction_structure.json")["cases"]
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
    # issue 37: families by structure (development + check sets)
    fams = _families(args.rounds)
    print(
        "\n| family (issue 37) | secrets caught (by set: development + check + check2) | look-alikes altered (by set) | p50 µs | p95 µs |"
    )
    print("|---|---|---|---|---|")
    for name, row in fams.items():
        print(f"| {name} | {_by_set(row['caught'], row['secrets'])} | {_by_set(row['altered'], row['lookalikes'])} | "
              f"{row['cost']['p50_us']:.0f} | {row['cost']['p95_us']:.0f} |")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps({"cost": rows, "secrets": len(secrets), "redacted": redacted,
                                               "families": len(families), "benign": len(corpus["benign"]),
                                               "benign_altered": altered, "agent_sentences": len(agent),
                                               "agent_altered": agent_altered, "structure": by_class,
                                               "structure_families": fams}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
