#!/usr/bin/env python3
"""Recall latency of two versions of memoryd on the same store, in alternating processes.

On a shared machine the load drifts between two runs made one after the other; here each version
runs --runs times, alternating (ABBA…), each in a fresh process on a fresh copy of one 1k-memory
SQLite store (written by this checkout through `memorize`; the schema is the same), USE embedder,
10 warm-up recalls, then --queries timed recalls (max_results=10). Prints p50/p95 per process and
over all of a version's recalls.

    .venv/bin/python bench/ab_recall.py --other /tmp/rw-main/src      # this checkout vs that one
    .venv/bin/python bench/ab_recall.py --other ../main/src --runs 6 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402
from latency import gen_queries, gen_texts  # noqa: E402

CHILD = """
import json, shutil, sys, time
from pathlib import Path
from memoryd.shared.config import Settings
from memoryd.engine import Engine
from memoryd.search.embed import UseEmbedder
seed, home, cwd = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
queries = json.loads(sys.stdin.read())
shutil.rmtree(home, ignore_errors=True)
shutil.copytree(seed, home)
with Engine.open(Settings(home=home, db=None), cwd=cwd, embedder=UseEmbedder()) as e:
    for q in queries[:10]:
        e.recall(q, max_results=10)
    ms = []
    for q in queries[10:]:
        t = time.perf_counter()
        e.recall(q, max_results=10)
        ms.append((time.perf_counter() - t) * 1000)
print(json.dumps(ms))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--other", required=True, help="the other version's src/ folder (put first on PYTHONPATH)")
    ap.add_argument("--n", type=int, default=1000, help="memories in the store (default 1000)")
    ap.add_argument("--queries", type=int, default=300, help="timed recalls per process (default 300)")
    ap.add_argument("--runs", type=int, default=4, help="processes per version (default 4)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    from memoryd.engine import Engine
    from memoryd.search.embed import UseEmbedder
    from memoryd.shared.config import Settings

    root = Path(tempfile.mkdtemp(prefix="memoryd-ab-"))
    versions = {"this": "", "other": str(Path(args.other).resolve())}
    times: dict[str, list[float]] = {v: [] for v in versions}
    try:
        seed, cwd = root / "seed", root / "project"
        cwd.mkdir()
        with Engine.open(Settings(home=seed, db=None), cwd=cwd, embedder=UseEmbedder()) as e:
            for text in gen_texts(args.n):
                e.memorize(text, source="agent", gate="trusted")
        queries = json.dumps(gen_queries(args.queries + 10))
        print("| run | version | recall p50 ms | p95 ms | load |\n|---|---|---|---|---|")
        for i in range(args.runs):
            for v in ("this", "other") if i % 2 == 0 else ("other", "this"):
                env = {**os.environ, "PYTHONPATH": versions[v]}
                out = subprocess.run([sys.executable, "-c", CHILD, str(seed), str(root / "home"), str(cwd)],
                                     input=queries, capture_output=True, text=True, env=env, check=True).stdout  # fmt: skip
                ms = json.loads(out.strip().splitlines()[-1])
                times[v] += ms
                print(
                    f"| {i + 1} | {v} | {C.med(ms):.1f} | {C.pct(ms, 95):.1f} | {os.getloadavg()[0]:.1f} |", flush=True
                )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"\nall runs (other = {versions['other']}):")
    for v, ms in times.items():
        print(f"| {v} | {len(ms)} recalls | p50 {C.med(ms):.1f} ms | p95 {C.pct(ms, 95):.1f} ms |")
    if args.json:
        args.json.write_text(json.dumps({"machine": C.machine(), "other": versions["other"], "n": args.n,
                                         "results": {v: {"p50_ms": C.med(ms), "p95_ms": C.pct(ms, 95), "recalls": len(ms)}
                                                     for v, ms in times.items()}}, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
