#!/usr/bin/env python3
"""The ranking's fusion on all three dev sets at once, offline (issue 35, round 2).

The English sentence signal helps the coding set's paraphrases and can cost LoCoMo's chat turns and the
bilingual set's English → Chinese queries; a setting is only worth keeping when it is measured on all
three. Each set's candidates are gathered once by the engine (`Reader.gather`, recall's first half, with
both models' cosines) and the ranking (`memoryd.search.rank`, a pure function of them) is re-run per
setting in seconds:

- LoCoMo (bench/locomo.py's seven conversations) and the bilingual set: bench/replay.py's caches
  (`bench/replay.py build --only bilingual,locomo`);
- the coding dev set: `build` here (bench/coding_fit.py's gathering, pickled beside them).

`eval` prints, per setting, coding paraphrase / keyword / task / apart R@1 (R@5), LoCoMo cat 1-4 R@1 / R@5 /
R@10 / MRR and adversarial R@5, bilingual overall R@1 / R@5 and English → Chinese R@1 / R@5; the
coding figures also leave-one-repository-out when `--loro` picks among the settings.

    .venv/bin/python bench/replay.py build --only bilingual,locomo     # once (~15 min)
    .venv/bin/python bench/fusion_fit.py build                         # once (~2 min)
    .venv/bin/python bench/fusion_fit.py eval [--set NAME=k:v,k:v ...] [--json PATH]
    .venv/bin/python bench/fusion_fit.py cost --before REV     # the ranking + decision's cost, paired

`cost` times `rank.rank` and `relevance.inject` of this tree and of REV (their two files from git, loaded
beside these) on every cached LoCoMo query's candidates (~100-150 each, as many as a 10k store gives), the
two alternating query by query: per-query medians and their ratio.
"""

from __future__ import annotations

import argparse
import importlib.util
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _common as C  # noqa: E402
import replay as R  # noqa: E402

CODING = R.OUT / "coding.pkl"
CODING_CATS = ("paraphrase", "keyword", "update", "task", "apart")


def cmd_build(args: argparse.Namespace) -> None:
    import coding_fit as F
    import coding_recall as CR

    mems, qs = CR.load(CR.DATA, CR.EXTRA)
    cache, held = F.gather(mems, qs)
    R.OUT.mkdir(parents=True, exist_ok=True)
    CODING.write_bytes(pickle.dumps({"cache": cache, "held": held}))
    print(f"coding: {len(cache)} prompts cached in {CODING}")


def load() -> dict[str, Any]:
    d = R.prepare(R._load())
    if CODING.exists():
        raw = pickle.loads(CODING.read_bytes())
        held = raw["held"]
        d["coding"] = [(R.Prepared((qq, cands, stats)), q, held) for q, qq, cands, stats in raw["cache"]]
    return d


def coding_metrics(rows: list[tuple[Any, dict[str, Any], dict[str, str]]], p: Any,
                   repo: str | None = None) -> dict[str, dict[str, float]]:  # fmt: skip
    per: dict[str, list[tuple[float, float]]] = {}
    for prep, q, held in rows:
        if q["cat"] == "none" or (repo is not None and q["repo"] != repo):
            continue
        top = [held.get(i, i) for i in prep.top(p)]
        g = set(q["gold"])
        per.setdefault(q["cat"], []).append((float(bool(top) and top[0] in g), float(bool(g & set(top[:5])))))
    return {c: {"r1": float(np.mean([x[0] for x in v])), "r5": float(np.mean([x[1] for x in v]))}
            for c, v in per.items()}  # fmt: skip


def evaluate(d: dict[str, Any], p: Any) -> dict[str, Any]:
    res: dict[str, Any] = {}
    if "coding" in d:
        res["coding"] = coding_metrics(d["coding"], p)
    if "locomo" in d:
        allq = [x for rows in d["locomo"].values() for x in R.locomo_items(rows)]
        res["locomo"] = R.score_set(allq, p)
        res["locomo_adv"] = R.score_set([x for rows in d["locomo"].values() for x in R.locomo_items(rows, (5,))], p)
    if "bilingual" in d:
        res["bilingual"] = R.score_set(R.jsonl_items(d["bilingual"]), p)
        res["en2zh"] = R.score_set(R.jsonl_items(d["bilingual"], ("xling_en2zh",)), p)
        res["para_en"] = R.score_set(R.jsonl_items(d["bilingual"], ("paraphrase_en",)), p)
    return res


def row(name: str, r: dict[str, Any]) -> list[str]:
    c = r.get("coding", {})
    lo, ad, bi, ez = r.get("locomo"), r.get("locomo_adv"), r.get("bilingual"), r.get("en2zh")

    def two(m: dict[str, float] | None, a: str = "r1", b: str = "r5") -> str:
        return "–" if not m else f"{m[a]:.2f} / {m[b]:.2f}"

    return [
        name, two(c.get("paraphrase")), two(c.get("keyword")), two(c.get("task")), two(c.get("apart")),
        "–" if not lo else f"{lo['any@1']:.3f} / {lo['any@5']:.3f} / {lo['any@10']:.3f} / {lo['mrr']:.3f}",
        "–" if not ad else f"{ad['any@5']:.3f}",
        "–" if not bi else f"{bi['any@1']:.3f} / {bi['any@5']:.3f}",
        "–" if not ez else f"{ez['any@1']:.3f} / {ez['any@5']:.3f}",
    ]  # fmt: skip


HEAD = ["setting", "paraphrase R@1/5", "keyword", "task", "apart", "LoCoMo 1-4 R@1/5/10/MRR", "adv R@5",
        "bilingual R@1/5", "en→zh R@1/5"]  # fmt: skip


def parse(spec: str) -> tuple[str, dict[str, Any]]:
    name, _, body = spec.partition("=")
    kv: dict[str, Any] = {}
    for part in filter(None, body.split(",")):
        k, _, v = part.partition(":")
        kv[k] = type(getattr(R_DEFAULT(), k))(float(v)) if not isinstance(getattr(R_DEFAULT(), k), bool) else v == "1"
    return name, kv


def R_DEFAULT() -> Any:  # noqa: N802
    from memoryd.search import rank

    return rank.DEFAULT


def cmd_eval(args: argparse.Namespace) -> None:
    d = load()
    results = [("defaults", evaluate(d, R_DEFAULT()))]
    for spec in args.set or []:
        name, kv = parse(spec)
        results.append((name, evaluate(d, replace(R_DEFAULT(), **kv))))
    print(C.table(HEAD, [row(n, r) for n, r in results]))
    C.write_json(args.json, {n: r for n, r in results})


def _module_of(rev: str, name: str, folder: Path) -> Any:
    """`memoryd.search.<name>` as it is in git revision `rev`, loaded beside this tree's (relative imports
    resolve to this tree's package)."""
    path = folder / f"{name}_{rev}.py"
    path.write_text(subprocess.run(["git", "show", f"{rev}:src/memoryd/search/{name}.py"], cwd=HERE, check=True,
                                   capture_output=True, text=True).stdout)  # fmt: skip
    spec = importlib.util.spec_from_file_location(f"memoryd.search.{name}_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def cmd_cost(args: argparse.Namespace) -> None:
    from types import SimpleNamespace

    from memoryd.search import rank, relevance

    with tempfile.TemporaryDirectory() as tmp:
        old_rank, old_rel = (_module_of(args.before, n, Path(tmp)) for n in ("rank", "relevance"))
    gathered = [g for conv in R._load()["locomo"] for g in conv["gathered"]]
    sides = {"before": (old_rank, old_rel), "after": (rank, relevance)}
    times: dict[str, list[float]] = {k: [] for k in sides}
    for n, (q, cands, stats) in enumerate(gathered * args.repeat):
        for side in ("before", "after") if n % 2 else ("after", "before"):
            rk, rel = sides[side]
            t = time.perf_counter()
            hits = [SimpleNamespace(score=s, signals=sig, atom=c) for s, c, sig in rk.rank(q, cands, stats)[:20]]
            rel.inject(hits)
            times[side].append((time.perf_counter() - t) * 1000)
    med = {k: statistics.median(v) for k, v in times.items()}
    n_c = statistics.median(len(c) for _, c, _ in gathered)
    print(
        f"{len(times['after'])} rankings (candidates per query p50 {n_c:.0f}), alternating: rank + decision p50 "
        f"{med['before']:.3f} ms ({args.before}) → {med['after']:.3f} ms (this tree), ratio {med['after'] / med['before']:.2f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("build")
    e = sub.add_parser("eval")
    e.add_argument("--set", action="append", help="NAME=param:value,param:value (rank.Params fields)")
    e.add_argument("--json")
    c = sub.add_parser("cost")
    c.add_argument("--before", required=True, help="git revision to compare with")
    c.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    {"build": cmd_build, "eval": cmd_eval, "cost": cmd_cost}[args.cmd](args)


if __name__ == "__main__":
    main()
