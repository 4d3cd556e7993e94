#!/usr/bin/env python3
"""LoCoMo evidence retrieval: memoryd vs BM25 (bm25s) vs dense-only (same e5 model).

Data: /work/shared/data/locomo10_dev.json — LoCoMo (snap-research/locomo), first 7 of its 10
conversations, CC BY-NC 4.0 (Maharana et al., "Evaluating Very Long-Term Conversational Memory
of LLM Agents", ACL 2024). Non-commercial use only.

Per conversation: a fresh store (temporary MEMORYD_HOME, non-git cwd), every dialog turn written
through the engine's normal write path, `engine.memorize(text, source="user", gate="trusted")`
(gate="trusted" skips DURA admission, which would otherwise reject chit-chat turns; everything
else — validation, redaction, dedup, classification, entities, FTS terms, vector, audit event,
markdown file — runs). Text = "<speaker>: <text>" + " [image: <blip caption>]" if the turn shared
an image + " (<session date>)". Each QA question is recalled with max_results=10.

Metrics per category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop; 5 adversarial
reported apart): evidence recall@1/5/10 where "any" = at least one evidence turn in the top k,
"all" = every evidence turn in the top k; MRR of the first evidence turn within the top 10.
Baselines run on exactly the texts the engine stored. Also: per-question recall latency, the
score calibration of memoryd's hits (relevant vs irrelevant, what score >= 0.5 means). The
offline replay of the ranking (parameter search, leave-one-conversation-out) is bench/replay.py.

    .venv/bin/python bench/locomo.py                      # all 7 conversations (~10 min)
    .venv/bin/python bench/locomo.py --quick              # 2 conversations
    .venv/bin/python bench/locomo.py --convs conv-26,conv-30 --json out.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

DATA = Path("/work/shared/data/locomo10_dev.json")
CATS = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
SYSTEMS = ("memoryd", "bm25s-en", "bm25s-en-stem", "bm25s-memoryd", "dense-e5")


def turn_text(turn: dict[str, Any], date: str) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [image: {turn['blip_caption']}]"
    return f"{text} ({date})"


def turns_of(conv: dict[str, Any]) -> list[tuple[str, str]]:
    c = conv["conversation"]
    out = []
    n = 1
    while f"session_{n}_date_time" in c or f"session_{n}" in c:
        for turn in c.get(f"session_{n}", []) or []:
            out.append((turn["dia_id"], turn_text(turn, c.get(f"session_{n}_date_time", ""))))
        n += 1
    return out


def evidence_ids(qa: dict[str, Any]) -> list[str]:
    ids: list[str] = []
    for e in qa.get("evidence", []) or []:
        ids.extend(x for x in re.split(r"[;,\s]+", str(e)) if x)
    return ids


def run_conversation(conv: dict[str, Any], args: argparse.Namespace, pg: Any = None) -> dict[str, Any]:
    emb = C.make(args.embedder)
    dsn = None
    if pg is not None:  # one fresh database per conversation on the PostgreSQL server
        import _pg

        dsn = _pg.create_database(pg["url"], f"memoryd_locomo_{conv['sample_id'].replace('-', '_')}")
    te = C.fresh_engine(emb, db=dsn)
    eng = te.engine
    dia_to_atom: dict[str, str] = {}
    atom_order: list[str] = []  # unique atoms, in write order
    write_ms: list[float] = []
    effects: dict[str, int] = defaultdict(int)
    for dia_id, text in turns_of(conv):
        t = time.perf_counter()
        r = eng.memorize(text, source="user", gate="trusted")
        write_ms.append((time.perf_counter() - t) * 1000)
        effects[r.effect] += 1
        if r.atom_id is None:
            continue
        dia_to_atom[dia_id] = r.atom_id
        if r.atom_id not in atom_order:
            atom_order.append(r.atom_id)
    atoms = eng.store.get_atoms(atom_order)
    texts = [atoms[a].content for a in atom_order]  # exactly what the engine stored
    index_of = {a: i for i, a in enumerate(atom_order)}

    questions = []
    missing_evidence = 0
    for qa in conv["qa"]:
        ev = evidence_ids(qa)
        rel = {index_of[dia_to_atom[d]] for d in ev if d in dia_to_atom}
        missing_evidence += sum(1 for d in ev if d not in dia_to_atom)
        if not rel:
            continue
        questions.append({"q": qa["question"], "cat": int(qa["category"]), "rel": rel})

    bms = {v: C.BM25(texts, v) for v in C.BM25.VARIANTS}
    dense = C.Dense(texts, emb)

    per_q: list[dict[str, Any]] = []
    for q in questions:
        row: dict[str, Any] = {"cat": q["cat"], "n_rel": len(q["rel"])}
        t = time.perf_counter()
        hits = eng.recall(q["q"], max_results=10).hits
        row["lat_memoryd_ms"] = (time.perf_counter() - t) * 1000
        ranked = [index_of[h.atom.id] for h in hits]
        row["memoryd"] = C.rank_metrics(ranked, q["rel"])
        row["hits"] = [{"rel": index_of[h.atom.id] in q["rel"], "score": h.score, **h.signals} for h in hits]
        for v, bm in bms.items():
            t = time.perf_counter()
            res = bm.search(q["q"], 10)
            row[f"lat_{v}_ms"] = (time.perf_counter() - t) * 1000
            row[v] = C.rank_metrics([d for d, _ in res], q["rel"])
        t = time.perf_counter()
        qv = dense.query_vec(q["q"])
        res = dense.search_vec(qv, 10)
        row["lat_dense-e5_ms"] = (time.perf_counter() - t) * 1000
        row["dense-e5"] = C.rank_metrics([d for d, _ in res], q["rel"])
        per_q.append(row)

    te.close()
    if dsn is not None:
        import _pg

        _pg.drop_database(pg["url"], dsn.rsplit("/", 1)[-1])
    return {
        "sample_id": conv["sample_id"], "turns": len(dia_to_atom), "atoms": len(atom_order),
        "effects": dict(effects), "write_ms": write_ms, "questions": per_q,
        "missing_evidence_ids": missing_evidence, "rels": [q["rel"] for q in questions],
    }  # fmt: skip


def aggregate(per_q: list[dict[str, Any]], system: str, cats: set[int]) -> dict[str, float]:
    return C.mean_metrics([r[system] for r in per_q if r["cat"] in cats])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--convs", help="comma-separated sample ids (default: all)")
    ap.add_argument("--quick", action="store_true", help="first 2 conversations only")
    ap.add_argument("--json", help="write full results here")
    ap.add_argument(
        "--db",
        default="sqlite",
        metavar="sqlite|postgresql|postgresql://…",
        help="store of the engine: sqlite (default), postgresql (a throwaway server from tests/pg.py) "
        "or the URL of a server whose role may CREATE DATABASE",
    )
    ap.add_argument(
        "--pg-plan",
        default="auto",
        choices=("auto", "exact", "hnsw"),
        help="with --db postgresql: the vector plan (default auto, by scope size, as served)",
    )
    ap.add_argument(
        "--embedder",
        choices=("e5", "use"),
        default="use",
        help="engine + dense baseline model (default use = memoryd's default USE-m3+t2s; e5 = multilingual-e5-small)",
    )
    ap.add_argument(
        "--keyword-budget",
        type=int,
        metavar="N",
        help="treat every store as a big scope with this keyword postings budget (search/keywords.py): "
        "how answers change when the budget binds (issue 27)",
    )
    args = ap.parse_args()
    if args.keyword_budget is not None:
        import memoryd.search.keywords as kw

        kw.KEYWORD_BIG_SCOPE_DOCS, kw.KEYWORD_BIG_SCOPE_BUDGET = 0, args.keyword_budget

    m = C.machine()
    C.print_machine(m)
    data = json.loads(Path(args.data).read_text())
    if args.convs:
        want = set(args.convs.split(","))
        data = [c for c in data if c["sample_id"] in want]
    elif args.quick:
        data = data[:2]
    t0 = time.perf_counter()
    print(f"embedder: {C.make(args.embedder).name} (engine and the dense-e5 column)")
    pg: dict[str, Any] | None = None
    server = None
    if args.db != "sqlite":
        import _pg

        if args.db == "postgresql":
            server = _pg.start_server()
            pg = {"url": server.dsn()}
        elif args.db.startswith(("postgresql://", "postgres://")):
            pg = {"url": args.db}
        else:
            raise SystemExit(f"--db {args.db}: expected sqlite, postgresql or a postgresql:// URL")
        _pg.force_plan(args.pg_plan)
        print(f"engine store: PostgreSQL ({pg['url'].split('@')[-1]}), vector plan {args.pg_plan}")
    convs = []
    for conv in data:
        t = time.perf_counter()
        res = run_conversation(conv, args, pg)
        convs.append(res)
        print(
            f"{res['sample_id']}: {res['turns']} turns -> {res['atoms']} atoms {res['effects']}, "
            f"{len(res['questions'])} questions, {time.perf_counter() - t:.0f}s", flush=True,
        )  # fmt: skip
    wall = time.perf_counter() - t0
    if server is not None:
        server.stop()
    per_q = [q for c in convs for q in c["questions"]]

    groups = [(f"cat {k} {v}", {k}) for k, v in CATS.items() if k != 5] + [
        ("cat 1-4", {1, 2, 3, 4}),
        ("cat 5 adversarial", {5}),
    ]
    summary: dict[str, Any] = {}
    for label, cats in groups:
        n = sum(1 for r in per_q if r["cat"] in cats)
        print(f"\n## {label} (n={n})")
        rows = []
        summary[label] = {"n": n}
        for s in SYSTEMS:
            agg = aggregate(per_q, s, cats)
            summary[label][s] = agg
            if agg:
                rows.append([s] + [C.fmt(agg[k]) for k in ("any@1", "any@5", "any@10", "all@5", "all@10", "mrr")])
        print(C.table(["system", "any@1", "any@5", "any@10", "all@5", "all@10", "MRR"], rows))

    lat = {s: C.med([r[f"lat_{s}_ms"] for r in per_q]) for s in SYSTEMS}
    lat_p95 = {s: C.pct([r[f"lat_{s}_ms"] for r in per_q], 95) for s in SYSTEMS}
    writes = [w for c in convs for w in c["write_ms"]]
    print("\n## latency per question (ms)")
    print(C.table(["system", "p50", "p95"], [[s, C.fmt(lat[s], 1), C.fmt(lat_p95[s], 1)] for s in SYSTEMS]))
    print(f"memorize per turn: p50 {C.med(writes):.1f} ms, p95 {C.pct(writes, 95):.1f} ms (n={len(writes)})")

    # targets (cat 1-4, any@10 and MRR)
    a = summary["cat 1-4"]
    best_bm = max(C.BM25.VARIANTS, key=lambda v: a[v]["any@10"])
    tgt = {
        "best_bm25": best_bm,
        "memoryd_r10": a["memoryd"]["any@10"], "bm25_r10": a[best_bm]["any@10"], "dense_r10": a["dense-e5"]["any@10"],
        "r10_vs_bm25_points": 100 * (a["memoryd"]["any@10"] - a[best_bm]["any@10"]),
        "r10_vs_dense_points": 100 * (a["memoryd"]["any@10"] - a["dense-e5"]["any@10"]),
        "mrr": {s: a[s]["mrr"] for s in SYSTEMS},
    }  # fmt: skip
    # issue 12: +5 points R@10 over BM25 on memoryd's own terms and MRR above it, +15 over dense-only
    own = a["bm25s-memoryd"]
    tgt["r10_vs_own_terms_points"] = 100 * (a["memoryd"]["any@10"] - own["any@10"])
    tgt["met_r10_own_terms_plus5"] = tgt["r10_vs_own_terms_points"] >= 5
    tgt["met_mrr_above_own_terms"] = a["memoryd"]["mrr"] > own["mrr"]
    tgt["met_r10_dense_plus15"] = tgt["r10_vs_dense_points"] >= 15
    print("\n## targets (cat 1-4, issue 12; the leave-one-conversation-out figure is bench/replay.py's)")
    print(
        f"recall@10 any: memoryd {tgt['memoryd_r10']:.3f} vs BM25 on memoryd's terms {own['any@10']:.3f} = "
        f"{tgt['r10_vs_own_terms_points']:+.1f} pts (target +5: {'MET' if tgt['met_r10_own_terms_plus5'] else 'MISSED'}); "
        f"MRR {a['memoryd']['mrr']:.3f} vs {own['mrr']:.3f} ({'MET' if tgt['met_mrr_above_own_terms'] else 'MISSED'}); "
        f"vs dense {tgt['dense_r10']:.3f} = {tgt['r10_vs_dense_points']:+.1f} pts (target +15: "
        f"{'MET' if tgt['met_r10_dense_plus15'] else 'MISSED'}); best BM25 variant: {best_bm} {tgt['bm25_r10']:.3f}"
    )

    # calibration of memoryd's returned hits
    calib = {}
    for label, cats in (("cat 1-4", {1, 2, 3, 4}), ("cat 5", {5})):
        rel = [h["score"] for r in per_q if r["cat"] in cats for h in r["hits"] if h["rel"]]
        irr = [h["score"] for r in per_q if r["cat"] in cats for h in r["hits"] if not h["rel"]]
        calib[label] = C.calibration(rel, irr, 0.5)
        sig = {}
        for s in ("keyword", "semantic", "semantic_en", "entity"):
            sig[s] = {
                "relevant_p50": C.pct(
                    [h.get(s, 0.0) for r in per_q if r["cat"] in cats for h in r["hits"] if h["rel"]], 50
                ),
                "irrelevant_p50": C.pct(
                    [h.get(s, 0.0) for r in per_q if r["cat"] in cats for h in r["hits"] if not h["rel"]], 50
                ),
            }
        calib[label]["signals"] = sig
        top1 = [r["hits"][0]["score"] for r in per_q if r["cat"] in cats and r["hits"]]
        calib[label]["top1_p50"] = C.pct(top1, 50)
        calib[label]["top1_share_ge_0.5"] = sum(1 for s in top1 if s >= 0.5) / len(top1) if top1 else float("nan")
    print("\n## score calibration (memoryd top-10 hits)")
    rows = []
    for label, c in calib.items():
        for kind in ("relevant", "irrelevant"):
            d = c[kind]
            rows.append([label, kind, d["n"], C.fmt(d["p10"]), C.fmt(d["p50"]), C.fmt(d["p90"])])
    print(C.table(["questions", "hits", "n", "p10", "median", "p90"], rows))
    for label, c in calib.items():
        print(
            f"{label}: score>=0.5 -> precision {C.fmt(c['precision'])}, recall (of relevant hits returned) "
            f"{C.fmt(c['recall_of_returned_relevant'])}, {C.fmt(c['share_of_hits_above'])} of hits above; "
            f"top-1 >= 0.5 for {C.fmt(c['top1_share_ge_0.5'])} of questions; signal medians rel/irr "
            + ", ".join(f"{k} {C.fmt(v['relevant_p50'])}/{C.fmt(v['irrelevant_p50'])}" for k, v in c["signals"].items())
        )

    print(f"\nwall time {wall:.0f}s")

    C.write_json(args.json, {
        "machine": m, "wall_s": wall, "summary": summary, "latency_ms_p50": lat, "latency_ms_p95": lat_p95,
        "memorize_ms": {"p50": C.med(writes), "p95": C.pct(writes, 95), "n": len(writes)}, "targets": tgt,
        "calibration": calib,
        "conversations": [{k: v for k, v in c.items() if k not in ("questions", "rels", "write_ms")} for c in convs],
        "questions": [{k: v for k, v in q.items() if k != "hits"} for q in per_q],
    })  # fmt: skip


if __name__ == "__main__":
    main()
