#!/usr/bin/env python3
"""How much of the exact top-k the HNSW graph (search/vector.py) finds, on real USE vectors.

Embeds --n generated zh/en memories (bench/latency.py's templates) with memoryd's default model,
builds memoryd's VectorIndex with its graph, and for --queries generated queries compares the
graph-routed search (`EXACT_MAX` lowered so every search goes through the graph) with exact cosine
search over the same vectors: mean overlap of the top 10 and top 50, and CPU ms per search.

    .venv/bin/python bench/ann_recall.py              # 30 000 memories, 200 queries (~2-3 min)
    .venv/bin/python bench/ann_recall.py --n 5000 --json out.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def _latency_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("bench_latency", HERE / "latency.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=30_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--json")
    args = ap.parse_args()

    import memoryd.search.vector as vector
    from memoryd.search.embed import MODELS

    lat = _latency_module()
    model = MODELS["use"]()
    texts = lat.gen_texts(args.n)
    t = time.perf_counter()
    matrix = np.concatenate([model.passages(texts[i : i + 128]) for i in range(0, args.n, 128)])
    embed_s = time.perf_counter() - t
    index = vector.VectorIndex(ann_min=1)
    index.add((i + 1, i + 1, f"a{i}", "s", matrix[i]) for i in range(args.n))
    t = time.perf_counter()
    index.maybe_build()
    assert index.wait_ready(600), "graph build failed"
    build_s = time.perf_counter() - t
    queries = np.stack([model.query(q) for q in lat.gen_queries(args.queries)])
    vector.EXACT_MAX = 0  # every search through the graph
    top10, top50, cpu_ms = [], [], []
    for q in queries:
        c = time.thread_time()
        got = [i for i, _ in index.search(q, scope_hashes=["s"], k=50)]
        cpu_ms.append((time.thread_time() - c) * 1000)
        exact = [f"a{j}" for j in np.argsort(-(matrix @ q))[:50]]
        top10.append(len(set(got[:10]) & set(exact[:10])))
        top50.append(len(set(got) & set(exact)))
    out = {"n": args.n, "queries": args.queries, "embed_s": embed_s, "build_s": build_s,
           "mean_overlap_top10": statistics.mean(top10), "mean_overlap_top50": statistics.mean(top50),
           "cpu_ms_p50": statistics.median(cpu_ms)}  # fmt: skip
    print("| memories | queries | build s | exact top-10 found (of 10) | exact top-50 found (of 50) | CPU ms p50 |")
    print("|---|---|---|---|---|---|")
    print(f"| {args.n} | {args.queries} | {build_s:.1f} | {out['mean_overlap_top10']:.2f} | "
          f"{out['mean_overlap_top50']:.1f} | {out['cpu_ms_p50']:.2f} |")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
