#!/usr/bin/env python3
"""Fit and validate the constants issue 35 chose on the coding dev set, leave-one-repository-out (4 folds).

The memories of `../shared/data/coding-dev/` are stored as bench/coding_recall.py stores them, and every
prompt's candidates are gathered once by the engine (`Reader.gather`, recall's first half); the ranking
(`memoryd.search.rank`) and the hook's decision (`memoryd.search.relevance`) are pure functions of them, so
both are fitted offline in seconds:

1. ranking: the English sentence signal's constants (`en_mix`, `mix_k`, `w_mix`, `w_kw_en`)
   over a grid, scored by paraphrase R@1 + R@5, keyword R@1, task R@1 + R@5 and 2 × apart R@1 (the asked
   look-alike first); the defaults' row, the best on all data, and per fold the best on the other three
   repositories scored on the held-out one;
2. the decision: a logistic model over each hit's `relevance.FEATURES` (a hit is positive when it is a gold
   memory of its prompt), fitted with the ranking's defaults, and the threshold that keeps at most
   `--quiet` of the unanswerable prompts (none) injected; per fold fitted on three repositories, scored on
   the fourth: gold injected per category, anything injected on none prompts.

`--dense` first ranks each repository's memories by each model's cosine alone (USE, the English model,
e5 when installed, and English + 0.75 × USE): R@1 / R@5 / R@10 per category, and the cosine of a
paraphrase's gold, of the best other memory, and of a none prompt's best (p10 / p50 / p90).

    .venv/bin/python bench/coding_fit.py [--dense] [--no-grid] [--json PATH]
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402
import coding_recall as CR  # noqa: E402

GRID = {"en_mix": (0.5, 0.75, 1.0), "mix_k": (2.0, 3.0), "w_mix": (0.7, 0.9), "w_kw_en": (0.65, 0.8)}
ANSWERED = ("paraphrase", "keyword", "update", "task", "apart")


def gather(mems: list[dict[str, Any]], qs: list[dict[str, Any]]) -> tuple[list[tuple[Any, ...]], dict[str, str]]:
    from memoryd.search.embed import make_embedder

    emb = make_embedder("use")
    emb.wait()  # type: ignore[attr-defined]
    with tempfile.TemporaryDirectory(prefix="memoryd-coding-fit-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        st = CR.store(home, Path(tmp) / "repos", mems, emb)
        held = {a: mid for mid, a in st["atom_of"].items() if a}
        cache = []
        for q in qs:
            qq, cands, stats = st["engines"][q["repo"]]._reader.gather(q["question"], max_results=10)
            cache.append((q, qq, cands, stats))
        for e in st["engines"].values():
            e.close()
    return cache, held


def ranked(cache: list[tuple[Any, ...]], held: dict[str, str], p: Any) -> list[tuple[dict[str, Any], list[Any]]]:
    """Per prompt its top 10 as hits (score, signals, atom with id and status), as recall returns them."""
    from memoryd.search import rank

    out = []
    for q, qq, cands, stats in cache:
        hits = []
        for score, c, signals in rank.rank(qq, cands, stats, p)[:10]:
            atom = SimpleNamespace(id=held.get(c.atom_id, c.atom_id), status=c.status)
            hits.append(SimpleNamespace(score=score, signals={k: round(v, 4) for k, v in signals.items()}, atom=atom))
        out.append((q, hits))
    return out


def recall_metrics(rows: list[tuple[dict[str, Any], list[Any]]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for cat in ANSWERED:
        mine = [(q, [h.atom.id for h in hits]) for q, hits in rows if q["cat"] == cat]
        if mine:
            out[cat] = {"r1": float(np.mean([bool(r) and r[0] in q["gold"] for q, r in mine])),
                        "r5": float(np.mean([bool(set(r[:5]) & set(q["gold"])) for q, r in mine]))}  # fmt: skip
    return out


def objective(m: dict[str, dict[str, float]]) -> float:
    return (m["paraphrase"]["r1"] + m["paraphrase"]["r5"] + m["keyword"]["r1"] + m["task"]["r1"] + m["task"]["r5"]
            + 2 * m["apart"]["r1"])  # fmt: skip


def grid(cache: list[tuple[Any, ...]], held: dict[str, str], repos: list[str]) -> dict[str, Any]:
    from memoryd.search import rank

    settings = [dict(zip(GRID, v, strict=True)) for v in itertools.product(*GRID.values())]
    by_setting = []
    for s in settings:
        rows = ranked(cache, held, replace(rank.DEFAULT, **s))
        by_setting.append((s, {r: recall_metrics([x for x in rows if x[0]["repo"] == r]) for r in repos},
                           recall_metrics(rows)))  # fmt: skip
    best_all = max(by_setting, key=lambda b: objective(b[2]))
    folds = []
    for r in repos:
        others = [x for x in repos if x != r]

        def train(b: tuple[Any, ...], others: list[str] = others) -> float:
            return sum(objective(b[1][o]) for o in others)

        best = max(by_setting, key=train)
        folds.append({"held_out": r, "setting": best[0], "held_out_metrics": best[1][r]})
    default = recall_metrics(ranked(cache, held, rank.DEFAULT))
    loro = {cat: {k: float(np.mean([f["held_out_metrics"][cat][k] for f in folds])) for k in ("r1", "r5")}
            for cat in ANSWERED}  # fmt: skip
    return {"default": default, "best_all": {"setting": best_all[0], "metrics": best_all[2]}, "folds": folds,
            "loro": loro}  # fmt: skip


def dense(mems: list[dict[str, Any]], qs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each model's cosine alone, within each repository (the diagnosis of issue 35)."""
    from memoryd.search.embed import MiniLMEnglish, UseEmbedder

    texts, prompts = [m["text"] for m in mems], [q["question"] for q in qs]
    models: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, cls in (("use", UseEmbedder), ("minilm", MiniLMEnglish)):
        emb = cls()
        models[name] = (emb.passages(texts), emb.passages(prompts))
    try:
        from memoryd.search.embed import E5Embedder

        e5 = E5Embedder()
        models["e5"] = (e5.passages(texts), np.stack([e5.query(p) for p in prompts]))
    except ImportError:
        pass
    models["minilm+0.75use"] = (np.hstack([models["minilm"][0], 0.75 * models["use"][0]]),
                                np.hstack([models["minilm"][1], models["use"][1]]))  # fmt: skip
    by_repo: dict[str, list[int]] = {}
    for i, m in enumerate(mems):
        by_repo.setdefault(m["repo"], []).append(i)
    out: dict[str, Any] = {}
    for name, (p, q) in models.items():
        per: dict[str, list[tuple[float, float, float]]] = {}
        gold_cos, other_cos, none_cos = [], [], []
        for qi, qq in enumerate(qs):
            idx = by_repo[qq["repo"]]
            sims = p[idx] @ q[qi]
            order = [mems[idx[j]]["id"] for j in np.argsort(-sims)]
            g = set(qq["gold"])
            if qq["cat"] == "none":
                none_cos.append(float(sims.max()))
                continue
            per.setdefault(qq["cat"], []).append((float(order[0] in g), float(bool(g & set(order[:5]))),
                                                  float(bool(g & set(order[:10])))))  # fmt: skip
            if qq["cat"] == "paraphrase":
                is_gold = np.array([mems[i]["id"] in g for i in idx])
                gold_cos.append(float(sims[is_gold].max()))
                other_cos.append(float(sims[~is_gold].max()))
        out[name] = {"recall": {c: np.mean(v, axis=0).round(2).tolist() for c, v in per.items()},
                     "paraphrase_gold": np.percentile(gold_cos, [10, 50, 90]).round(2).tolist(),
                     "best_other": np.percentile(other_cos, [10, 50, 90]).round(2).tolist(),
                     "none_best": np.percentile(none_cos, [10, 50, 90]).round(2).tolist()}  # fmt: skip
    return out


# --------------------------------------------------------------------------- the decision


def design(rows: list[tuple[dict[str, Any], list[Any]]]) -> tuple[np.ndarray, np.ndarray]:
    from memoryd.search import relevance

    xs, ys = [], []
    for q, hits in rows:
        for h, x in zip(hits, relevance.features(hits), strict=True):
            xs.append(x)
            ys.append(1.0 if h.atom.id in q["gold"] else 0.0)
    return np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1.0) -> np.ndarray:
    """Newton's method (IRLS) with an L2 penalty (not on the bias)."""
    w = np.zeros(x.shape[1])
    reg = np.full(x.shape[1], l2)
    reg[0] = 0.0
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        grad = x.T @ (p - y) + reg * w
        hess = (x * (p * (1 - p))[:, None]).T @ x + np.diag(reg + 1e-9)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def decide(rows: list[tuple[dict[str, Any], list[Any]]], w: np.ndarray, threshold: float,
           follow: float) -> dict[str, Any]:  # fmt: skip
    from memoryd.search import relevance

    out: dict[str, Any] = {}
    for cat in (*ANSWERED, "none"):
        mine = [(q, relevance.inject(hits, weights=tuple(w), threshold=threshold, follow=follow))
                for q, hits in rows if q["cat"] == cat]  # fmt: skip
        if not mine:
            continue
        m = {"n": len(mine), "anything": float(np.mean([bool(c) for _, c in mine])),
             "injected": float(np.mean([len(c) for _, c in mine]))}  # fmt: skip
        if cat != "none":
            m["gold"] = float(np.mean([bool({h.atom.id for h in c} & set(q["gold"])) for q, c in mine]))
        out[cat] = m
    return out


def choose_threshold(rows: list[tuple[dict[str, Any], list[Any]]], w: np.ndarray, quiet: float) -> float:
    """The lowest threshold at which at most `quiet` of the none prompts get anything (and at least 0.3)."""
    from memoryd.search import relevance

    tops = sorted((max(relevance.probabilities(hits, tuple(w)), default=0.0) for q, hits in rows if q["cat"] == "none"),
                  reverse=True)  # fmt: skip
    allowed = int(quiet * len(tops))  # this many none prompts may pass
    cut = tops[allowed] if allowed < len(tops) else 0.0
    return max(0.3, math.floor(cut * 1000 + 1) / 1000)  # above the cut in three decimals (as shipped)


def decision(rows: list[tuple[dict[str, Any], list[Any]]], repos: list[str], quiet: float,
             follow: float) -> dict[str, Any]:  # fmt: skip
    """The weights, the threshold (`quiet`) and `follow` × the threshold as the followers' bar, on all data and
    per fold."""
    x, y = design(rows)
    w = fit_logistic(x, y)
    t = choose_threshold(rows, w, quiet)
    folds = []
    for r in repos:
        train = [row for row in rows if row[0]["repo"] != r]
        test = [row for row in rows if row[0]["repo"] == r]
        wf = fit_logistic(*design(train))
        tf = choose_threshold(train, wf, quiet)
        folds.append({"held_out": r, "weights": wf.round(3).tolist(), "threshold": round(tf, 3),
                      "result": decide(test, wf, tf, follow * tf)})  # fmt: skip
    loro: dict[str, dict[str, float]] = {}
    for cat in (*ANSWERED, "none"):
        parts = [f["result"][cat] for f in folds if cat in f["result"]]
        n = sum(p["n"] for p in parts)
        loro[cat] = {k: sum(p[k] * p["n"] for p in parts) / n for k in parts[0] if k != "n"} | {"n": n}
    return {"weights": w.round(3).tolist(), "threshold": round(t, 3), "follow": round(follow * t, 3),
            "all_data": decide(rows, w, t, follow * t), "folds": folds, "loro": loro}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(CR.DATA))
    ap.add_argument("--no-extra", action="store_true", help="leave out bench/data/coding_extra.jsonl")
    ap.add_argument("--no-grid", action="store_true", help="skip the ranking grid")
    ap.add_argument("--dense", action="store_true", help="also rank by each model's cosine alone")
    ap.add_argument("--quiet", type=float, default=0.03, help="share of none prompts the threshold lets through")
    ap.add_argument(
        "--follow",
        type=float,
        default=0.15,
        help="the bar of the hits that come along with a passing one, as a share of the threshold",
    )
    ap.add_argument("--json")
    args = ap.parse_args()
    C.print_machine(C.machine())
    mems, qs = CR.load(Path(args.data), None if args.no_extra else CR.EXTRA)
    repos = list(dict.fromkeys(m["repo"] for m in mems))
    res: dict[str, Any] = {}
    if args.dense:
        dn = res["dense"] = dense(mems, qs)
        print("\n## each model alone (R@1 / R@5 / R@10; cosines p10 / p50 / p90)")
        print(C.table(["model", "paraphrase", "keyword", "task", "apart", "paraphrase gold cos", "best other",
                       "none: best"], [[n, *("/".join(f"{x:.2f}" for x in d["recall"][c]) for c in
                                             ("paraphrase", "keyword", "task", "apart")),
                                        *("/".join(f"{x:.2f}" for x in d[k]) for k in
                                          ("paraphrase_gold", "best_other", "none_best"))]
                                       for n, d in dn.items()]))  # fmt: skip
    cache, held = gather(mems, qs)
    if not args.no_grid:
        g = res["ranking"] = grid(cache, held, repos)
        print("\n## ranking: R@1 / R@5 per category (defaults, best on all data, leave-one-repository-out)")
        rows = []
        for name, m in (("defaults", g["default"]), (f"best all {g['best_all']['setting']}", g["best_all"]["metrics"]),
                        ("LORO (4 folds)", g["loro"])):  # fmt: skip
            rows.append([name, *(f"{m[c]['r1']:.2f} / {m[c]['r5']:.2f}" for c in ANSWERED)])
        print(C.table(["", *ANSWERED], rows))
        for f in g["folds"]:
            print(f"  fold {f['held_out']}: {f['setting']}")
    from memoryd.search import rank

    d = res["decision"] = decision(ranked(cache, held, rank.DEFAULT), repos, args.quiet, args.follow)
    print(
        f"\n## the decision: weights {d['weights']} (features {list(_features())}), threshold {d['threshold']}, "
        f"follow {d['follow']}"
    )
    rows = []
    for name, m in (("all data", d["all_data"]), ("LORO (4 folds)", d["loro"])):
        rows.append(
            [name, *(f"{m[c].get('gold', float('nan')):.2f}" for c in ANSWERED), f"{m['none']['anything']:.2f}"]
        )
    print(C.table(["gold injected", *ANSWERED, "none: anything"], rows))
    for f in d["folds"]:
        print(f"  fold {f['held_out']}: weights {f['weights']} threshold {f['threshold']}")
    rows = []
    w = np.asarray(d["weights"])
    hits = ranked(cache, held, rank.DEFAULT)
    for t in sorted({0.3, 0.35, 0.4, 0.45, d["threshold"], 0.55, 0.6, 0.7}):
        m = decide(hits, w, t, d["follow"])
        rows.append([f"{t:.3f}", *(f"{m[c]['gold']:.2f}" for c in ANSWERED), f"{m['none']['anything']:.2f}"])
    res["sweep"] = rows
    print("\n## the trade-off: gold injected per category and none prompts injected, by threshold (all-data weights)")
    print(C.table(["threshold", *ANSWERED, "none: anything"], rows))
    rows = []
    for share in (0.0, 0.15, 0.3, 0.5, 1.0):
        loro = decision(hits, repos, args.quiet, share)["loro"]
        m = decide(hits, w, d["threshold"], share * d["threshold"])
        rows.append([f"{share:.2f}", *(f"{m[c]['gold']:.2f} ({loro[c]['gold']:.2f})" for c in ANSWERED),
                     f"{m['none']['anything']:.2f} ({loro['none']['anything']:.2f})",
                     " ".join(f"{m[c]['injected']:.2f}" for c in (*ANSWERED, "none"))])  # fmt: skip
    res["follow_sweep"] = rows
    print(
        "\n## the followers' bar (a share of the threshold; 1.0: each hit on its own): gold injected, all data "
        "(leave-one-repository-out), and memories injected per prompt by category"
    )
    print(C.table(["follow", *ANSWERED, "none: anything", "injected per prompt"], rows))
    C.write_json(args.json, res)
    return 0


def _features() -> tuple[str, ...]:
    from memoryd.search import relevance

    return relevance.FEATURES


if __name__ == "__main__":
    sys.exit(main())
