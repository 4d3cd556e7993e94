#!/usr/bin/env python3
"""Bilingual (zh-Hant / zh-Hans / en / mixed) project-memory retrieval: memoryd vs BM25 vs dense-only.

Data: bench/data/bilingual.jsonl, written for this benchmark before any system was run on it:
306 memories about ten fictional software projects (decisions, constraints, preferences,
commands, file names, warnings, facts) and 195 queries with their relevant memory ids, one slice
label each:

    paraphrase_en, paraphrase_zh_hans, paraphrase_zh_hant  same language, reworded
    xling_zh2en, xling_en2zh                                cross-lingual
    hant_hans                                               Traditional query -> Simplified memory or back
    identifier                                              file names, commands, env vars, functions
    mixed                                                   code-switched zh/en queries

All memories go into one fresh store through `engine.memorize(text, source="user", gate="trusted")`
(trusted so every memory is present; what DURA admission would have done with agent saves is
reported separately). Each query is recalled with max_results=10. Baselines see the same stored
texts: bm25s with its default English tokenizer (with and without a stemmer) and with memoryd's
tokenizer; dense-only with the engine's e5 model (passages vs query, exact cosine).

Reports recall@1/5/10 and MRR per slice and overall, the score distribution of relevant vs
irrelevant hits and what "score >= 0.5 means relevant" gives. The offline replay of the ranking is
bench/replay.py. `--data bench/data/entity_negation.jsonl` runs the entity / negation set the same way.

    .venv/bin/python bench/bilingual.py [--json out.json] [--quick]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "bilingual.jsonl"
SYSTEMS = ("memoryd", "bm25s-en", "bm25s-en-stem", "bm25s-memoryd", "dense-e5")
XLING = ("xling_zh2en", "xling_en2zh")


def load(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    mems, queries = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            o = json.loads(line)
            (mems if o["type"] == "memory" else queries).append(o)
    return mems, queries


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--quick", action="store_true", help="every 3rd query only")
    ap.add_argument("--embedder", choices=("e5", "use"), default="use",
                    help="engine + dense baseline model (default use = memoryd's default USE-m3+t2s; "
                         "e5 = multilingual-e5-small)")  # fmt: skip
    ap.add_argument("--json")
    ap.add_argument(
        "--db",
        default="sqlite",
        choices=("sqlite", "postgresql"),
        help="store of the engine: sqlite (default) or postgresql (a throwaway server from tests/pg.py)",
    )
    ap.add_argument(
        "--pg-plan",
        default="auto",
        choices=("auto", "exact", "hnsw"),
        help="with --db postgresql: the vector plan (default auto, by scope size, as served)",
    )
    args = ap.parse_args()

    m = C.machine()
    C.print_machine(m)
    mems, queries = load(Path(args.data))
    if args.quick:
        queries = queries[::3]
    t0 = time.perf_counter()
    emb = C.make(args.embedder)
    systems = SYSTEMS
    server, dsn = None, None
    if args.db == "postgresql":
        import _pg

        server = _pg.start_server()
        dsn = _pg.create_database(server.dsn(), "memoryd_bilingual")
        _pg.force_plan(args.pg_plan)
        print(f"engine store: PostgreSQL, vector plan {args.pg_plan}")
    te = C.fresh_engine(emb, db=dsn)
    eng = te.engine

    from memoryd.text.admission import score_dura
    from memoryd.text.entities import extract_entities

    atom_of: dict[str, str] = {}
    write_ms = []
    dura = Counter()
    for mem in mems:
        t = time.perf_counter()
        r = eng.memorize(mem["text"], source="user", gate="trusted")
        write_ms.append((time.perf_counter() - t) * 1000)
        assert r.atom_id and r.effect == "applied", (mem["id"], r)
        atom_of[r.atom_id] = mem["id"]
        d = score_dura(mem["text"], source="agent", entity_count=len(extract_entities(mem["text"])))
        dura["rejected" if d.average < 0.35 else "pending" if d.average < 0.6 else "admitted"] += 1
    ids = [m_["id"] for m_ in mems]
    idx = {i: n for n, i in enumerate(ids)}
    stored = eng.store.get_atoms(list(atom_of))
    texts = [None] * len(ids)
    for aid, mid in atom_of.items():
        texts[idx[mid]] = stored[aid].content

    bms = {v: C.BM25(texts, v) for v in C.BM25.VARIANTS}
    dense = C.Dense(texts, emb)

    rows = []
    for q in queries:
        rel = {idx[r] for r in q["relevant"]}
        row: dict[str, Any] = {"id": q["id"], "slice": q["slice"], "lang": q["lang"], "batch": q.get("batch")}
        t = time.perf_counter()
        hits = eng.recall(q["text"], max_results=10).hits
        row["lat_memoryd_ms"] = (time.perf_counter() - t) * 1000
        ranked = [idx[atom_of[h.atom.id]] for h in hits]
        row["memoryd"] = C.rank_metrics(ranked, rel)
        row["top"] = [ids[i] for i in ranked[:3]]
        row["hits"] = [{"rel": idx[atom_of[h.atom.id]] in rel, "score": h.score, **h.signals} for h in hits]
        for v, bm in bms.items():
            row[v] = C.rank_metrics([d for d, _ in bm.search(q["text"], 10)], rel)
        qv = dense.query_vec(q["text"])
        row["dense-e5"] = C.rank_metrics([d for d, _ in dense.search_vec(qv, 10)], rel)
        rows.append(row)

    slices = list(dict.fromkeys(q["slice"] for q in queries))
    has_xling = any(s in XLING for s in slices)
    groups = [(s, {s}) for s in slices] + ([("cross-lingual (both)", set(XLING))] if has_xling else [])
    groups.append(("overall", set(slices)))
    batches = sorted({r["batch"] for r in rows if r["batch"] is not None})
    summary: dict[str, Any] = {}
    print(
        f"\nembedder {emb.name} (the dense-e5 column uses it too); "
        f"{len(mems)} memories, {len(queries)} queries; DURA gate for agent saves would give {dict(dura)}"
    )
    for metric in ("any@1", "any@5", "any@10", "mrr"):
        print(f"\n## {metric.replace('any', 'recall')} per slice")
        trows = []
        for label, sl in groups:
            sub = [r for r in rows if r["slice"] in sl]
            summary.setdefault(label, {"n": len(sub)})
            line = [label, len(sub)]
            for s in systems:
                agg = C.mean_metrics([r[s] for r in sub])
                summary[label][s] = agg
                line.append(C.fmt(agg[metric]))
            trows.append(line)
        for b in batches if len(batches) > 1 else ():  # the entity / negation set: each batch apart
            sub = [r for r in rows if r["batch"] == b]
            summary.setdefault(f"batch {b}", {"n": len(sub)})
            line = [f"batch {b}", len(sub)]
            for s in systems:
                agg = C.mean_metrics([r[s] for r in sub])
                summary[f"batch {b}"][s] = agg
                line.append(C.fmt(agg[metric]))
            trows.append(line)
        print(C.table(["slice", "n", *systems], trows))

    lat = [r["lat_memoryd_ms"] for r in rows]
    print(f"\nmemoryd recall latency p50 {C.med(lat):.1f} ms p95 {C.pct(lat, 95):.1f} ms; "
          f"memorize p50 {C.med(write_ms):.1f} ms p95 {C.pct(write_ms, 95):.1f} ms")  # fmt: skip
    o = summary["overall"]["memoryd"]
    if has_xling:  # issue 12: never below 0.959 / 0.873 (the ranking before it), at least 0.95 / 0.90
        x = summary["cross-lingual (both)"]["memoryd"]
        targets = {"overall_r5": o["any@5"], "xling_r5": x["any@5"], "met_overall_0.95": o["any@5"] >= 0.95,
                   "met_xling_0.90": x["any@5"] >= 0.90}  # fmt: skip
        print(f"targets: recall@5 overall {o['any@5']:.3f} (>= 0.95: {'MET' if targets['met_overall_0.95'] else 'MISSED'}), "
              f"cross-lingual {x['any@5']:.3f} (>= 0.90: {'MET' if targets['met_xling_0.90'] else 'MISSED'})")  # fmt: skip
    else:  # the entity / negation set (issue 12): R@5 >= 0.90
        targets = {"overall_r5": o["any@5"], "met_overall_0.90": o["any@5"] >= 0.90}
        for b in batches:
            targets[f"batch_{b}_r5"] = summary.get(f"batch {b}", summary["overall"])["memoryd"]["any@5"]
        print(f"target: recall@5 overall {o['any@5']:.3f} (>= 0.90: {'MET' if targets['met_overall_0.90'] else 'MISSED'})"
              + "".join(f"; batch {b} {targets[f'batch_{b}_r5']:.3f}" for b in batches))  # fmt: skip

    rel_s = [h["score"] for r in rows for h in r["hits"] if h["rel"]]
    irr_s = [h["score"] for r in rows for h in r["hits"] if not h["rel"]]
    calib = C.calibration(rel_s, irr_s, 0.5)
    top1 = [r["hits"][0] for r in rows if r["hits"]]
    calib["top1_rel_p50"] = C.pct([h["score"] for h in top1 if h["rel"]], 50)
    calib["top1_irr_p50"] = C.pct([h["score"] for h in top1 if not h["rel"]], 50)
    calib["sweep"] = {f"{t:.2f}": C.calibration(rel_s, irr_s, t) for t in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)}
    calib["signals"] = {
        s: {"relevant_p50": C.pct([h.get(s, 0.0) for r in rows for h in r["hits"] if h["rel"]], 50),
            "irrelevant_p50": C.pct([h.get(s, 0.0) for r in rows for h in r["hits"] if not h["rel"]], 50)}
        for s in ("keyword", "semantic", "semantic_en", "entity")
    }  # fmt: skip
    print("\n## score calibration (memoryd top-10 hits)")
    print(C.table(["hits", "n", "p10", "median", "p90"],
                  [[k, calib[k]["n"], C.fmt(calib[k]["p10"]), C.fmt(calib[k]["p50"]), C.fmt(calib[k]["p90"])]
                   for k in ("relevant", "irrelevant")]))  # fmt: skip
    print(C.table(["threshold", "precision", "recall (returned relevant)", "share of hits above"],
                  [[t, C.fmt(c["precision"]), C.fmt(c["recall_of_returned_relevant"]), C.fmt(c["share_of_hits_above"])]
                   for t, c in calib["sweep"].items()]))  # fmt: skip
    print(
        "top-1 score median: relevant {} / irrelevant {}; signal medians rel/irr: {}".format(
            C.fmt(calib["top1_rel_p50"]),
            C.fmt(calib["top1_irr_p50"]),
            ", ".join(
                f"{k} {C.fmt(v['relevant_p50'])}/{C.fmt(v['irrelevant_p50'])}" for k, v in calib["signals"].items()
            ),
        )
    )

    misses = [(r["id"], r["slice"], r["top"]) for r in rows if not r["memoryd"]["any@5"]]
    print(f"\nmemoryd misses at 5 ({len(misses)}): " + "; ".join(f"{i} [{s}] top={t}" for i, s, t in misses))
    wall = time.perf_counter() - t0
    print(f"wall time {wall:.0f}s")
    te.close()
    if server is not None:
        server.stop()
    C.write_json(args.json, {
        "machine": m, "embedder": emb.name, "db": args.db, "pg_plan": args.pg_plan if args.db != "sqlite" else None, "wall_s": wall, "summary": summary, "targets": targets, "calibration": calib,
        "dura_agent_gate": dict(dura), "recall_ms": {"p50": C.med(lat), "p95": C.pct(lat, 95)},
        "memorize_ms": {"p50": C.med(write_ms), "p95": C.pct(write_ms, 95)},
        "queries": [{k: v for k, v in r.items() if k != "hits"} for r in rows],
    })  # fmt: skip


if __name__ == "__main__":
    main()
