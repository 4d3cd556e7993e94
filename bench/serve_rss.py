#!/usr/bin/env python3
"""Peak RSS of a restarted server's work on an existing store (no fill in this process).

Opens the store in MEMORYD_HOME-style `--home` for the checkout `--project` with memoryd's default
model, then does what a server does: load the vectors (and the saved HNSW graph), 100 memorize,
200 recalls, the start-up vault sync; prints VmHWM after each step. bench/latency.py's own peak RSS
includes the heap its fill leaves behind; this one does not.

    .venv/bin/python bench/serve_rss.py --home /path/home --project /path/project
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _hwm_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM")) / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--home", type=Path, required=True)
    ap.add_argument("--project", type=Path, required=True)
    args = ap.parse_args()
    spec = importlib.util.spec_from_file_location("bench_latency", HERE / "latency.py")
    assert spec and spec.loader
    lat = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lat)

    from memoryd import Engine
    from memoryd.search.embed import MODELS
    from memoryd.shared.config import Settings

    eng = Engine.open(Settings(home=args.home), cwd=args.project, embedder=MODELS["use"]())
    rows = []
    t = time.perf_counter()
    eng.store.warm()
    rows.append(("load vectors (+ graph)", time.perf_counter() - t, _hwm_mb()))
    t = time.perf_counter()
    for text in lat.gen_texts(100, seed=99):
        eng.memorize(f"{text} (serve check {time.time()})", gate="trusted")
    rows.append(("100 memorize", time.perf_counter() - t, _hwm_mb()))
    t = time.perf_counter()
    for q in lat.gen_queries(200):
        eng.recall(q)
    rows.append(("200 recalls", time.perf_counter() - t, _hwm_mb()))
    t = time.perf_counter()
    eng.vault_sync()
    rows.append(("start-up vault sync", time.perf_counter() - t, _hwm_mb()))
    print(f"store: {eng.stats().atoms} atoms; graph ready: {eng.store._vectors.ann_ready}")
    eng.close()
    print("| step | s | peak RSS so far MB |\n|---|---|---|")
    for name, s, mb in rows:
        print(f"| {name} | {s:.1f} | {mb:.0f} |")


if __name__ == "__main__":
    main()
