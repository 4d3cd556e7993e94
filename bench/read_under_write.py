#!/usr/bin/env python3
"""Recall latency while memories are being written: does a read wait for a write?

One SQLite store of --n memories (generated as in latency.py, written through `memorize`), copied
fresh for each mode, then --queries recalls (max_results=10) timed in the main thread:

* `alone`: nothing else runs (the baseline);
* `thread`: a writer thread in the same process calls `memorize` on the same Engine in a loop, as
  concurrent MCP tool calls do in one server (each write: model call, transaction, markdown file
  with fsync);
* `process`: a writer process runs the same loop on the same store (another server or a hook).

Reported per mode: recall p50 / p95 / p99 / max (ms), and the writes done meanwhile (writes/s,
memorize p50). The modes take turns over --rounds rounds (each round a fresh copy of the store and
a slice of the queries), so a change in the machine's load during the run falls on every mode
alike. Uses only the public Engine API, so the same script measures any version of the code:
`PYTHONPATH=<other checkout>/src .venv/bin/python bench/read_under_write.py`. On a busy machine the
writer's CPU (model calls, YAML) competes with the recalls; `--embedder hash` leaves mostly the
database and the vault's fsync, which is what a recall must not wait for.

    .venv/bin/python bench/read_under_write.py                      # 1000 memories, 200 recalls per mode
    .venv/bin/python bench/read_under_write.py --n 300 --queries 50 --modes alone,thread
    .venv/bin/python bench/read_under_write.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402
from latency import gen_queries, gen_texts  # noqa: E402

MODES = ("alone", "thread", "process")


def _engine(home: Path, cwd: Path, embedder: Any) -> Any:
    from memoryd.engine import Engine
    from memoryd.shared.config import Settings

    return Engine.open(Settings(home=home, db=None), cwd=cwd, embedder=embedder)


def write_loop(eng: Any, texts: list[str], tag: str, stopped: Callable[[], bool],
               writes: list[tuple[float, float]]) -> None:  # fmt: skip
    """`memorize` in a loop until `stopped()`; each write's (wall time it ended, ms) goes to `writes`."""
    i = 0
    while not stopped():
        t = time.perf_counter()
        eng.memorize(texts[i % len(texts)] + f" ({tag} write {i})", source="agent", gate="trusted")
        writes.append((time.time(), (time.perf_counter() - t) * 1000))
        i += 1


def writer_process(home: str, cwd: str, stop_file: str, embedder: str) -> None:
    """The process mode's writer (`--writer …`): texts on stdin, "ready", then its writes on stdout."""
    from memoryd.search.embed import MODELS, HashEmbedder

    texts, writes = json.loads(sys.stdin.read()), list[tuple[float, float]]()
    with _engine(Path(home), Path(cwd), MODELS.get(embedder, HashEmbedder)()) as eng:
        print("ready", flush=True)
        write_loop(eng, texts, "process", Path(stop_file).exists, writes)
    print(json.dumps(writes), flush=True)


def _recalls(eng: Any, queries: list[str]) -> list[float]:
    out = []
    for q in queries:
        t = time.perf_counter()
        eng.recall(q, max_results=10)
        out.append((time.perf_counter() - t) * 1000)
    return out


def run_mode(mode: str, seed_home: Path, cwd: Path, embedder: Any, args: argparse.Namespace,
             texts: list[str], queries: list[str]) -> tuple[list[float], list[float], float]:  # fmt: skip
    """(recall ms, memorize ms of the writes that ended while the recalls ran, seconds) of one round of one mode."""
    home = seed_home.with_name(f"home-{mode}")
    shutil.rmtree(home, ignore_errors=True)
    shutil.copytree(seed_home, home)
    eng = _engine(home, cwd, embedder)
    for q in queries[:5]:  # warm-up: vector index loaded, caches filled
        eng.recall(q, max_results=10)
    writes: list[tuple[float, float]] = []  # (wall time it ended, ms)
    stop = threading.Event()
    proc = None
    stop_file = home / "stop-writer"
    if mode == "thread":
        worker = threading.Thread(target=write_loop, args=(eng, texts, "thread", stop.is_set, writes), daemon=True)
        worker.start()
        while not writes:  # the writer is in its loop
            time.sleep(0.01)
    elif mode == "process":
        proc = subprocess.Popen([sys.executable, __file__, "--writer", str(home), str(cwd), str(stop_file), args.embedder],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(texts))
        proc.stdin.close()
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(1.0)  # its first writes are under way
    t0, w0 = time.perf_counter(), time.time()
    rec = _recalls(eng, queries)
    seconds, w1 = time.perf_counter() - t0, time.time()
    if mode == "thread":
        stop.set()
        worker.join()
    elif proc is not None:
        stop_file.touch()
        assert proc.stdout is not None
        writes = [tuple(w) for w in json.loads(proc.stdout.read().strip().splitlines()[-1])]
        proc.wait(timeout=120)
    eng.close()
    shutil.rmtree(home, ignore_errors=True)
    return rec, [ms for end, ms in writes if w0 <= end <= w1], seconds


def summary(mode: str, rec: list[float], write_ms: list[float], seconds: float) -> dict[str, Any]:
    return {
        "mode": mode, "recalls": len(rec), "p50_ms": C.med(rec), "p95_ms": C.pct(rec, 95), "p99_ms": C.pct(rec, 99),
        "max_ms": max(rec), "writes": len(write_ms), "writes_per_s": len(write_ms) / seconds if write_ms else 0.0,
        "memorize_p50_ms": C.med(write_ms) if write_ms else None,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="memories in the store (default 1000)")
    parser.add_argument("--queries", type=int, default=200, help="recalls timed per mode (default 200)")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of {', '.join(MODES)}")
    parser.add_argument("--rounds", type=int, default=4, help="the modes take turns this many times (default 4)")
    parser.add_argument("--embedder", default="use", choices=("use", "e5", "hash"), help="default use (memoryd's)")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    import memoryd
    from memoryd.search.embed import MODELS, HashEmbedder

    root = Path(tempfile.mkdtemp(prefix="memoryd-ruw-"))
    try:
        seed_home, cwd = root / "home", root / "project"
        cwd.mkdir()
        embedder = MODELS.get(args.embedder, HashEmbedder)()
        texts = gen_texts(args.n + 2000)
        fill, extra = texts[: args.n], texts[args.n :]
        queries = gen_queries(args.queries + 5)
        t = time.perf_counter()
        eng = _engine(seed_home, cwd, embedder)
        for text in fill:
            eng.memorize(text, source="agent", gate="trusted")
        eng.close()
        fill_s = time.perf_counter() - t
        modes = args.modes.split(",")
        runs: dict[str, tuple[list[float], list[float], float]] = {m: ([], [], 0.0) for m in modes}
        for r in range(args.rounds):
            for m in modes:
                rec, writes, seconds = run_mode(m, seed_home, cwd, embedder, args, extra, queries[5:][r :: args.rounds])
                runs[m] = (runs[m][0] + rec, runs[m][1] + writes, runs[m][2] + seconds)
        results = [summary(m, *runs[m]) for m in modes]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    m = C.machine()
    print(f"memoryd {Path(memoryd.__file__).parent} · {args.n} memories (filled in {fill_s:.0f} s) · "
          f"{args.queries} recalls per mode in {args.rounds} rounds · embedder {args.embedder}")  # fmt: skip
    print(f"machine: {m.get('nproc')} cpu, load average {m.get('loadavg')}")
    print("\n| mode | recall p50 ms | p95 ms | p99 ms | max ms | writes meanwhile | writes/s | memorize p50 ms |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        mp50 = f"{r['memorize_p50_ms']:.1f}" if r["memorize_p50_ms"] is not None else "-"
        print(f"| {r['mode']} | {r['p50_ms']:.1f} | {r['p95_ms']:.1f} | {r['p99_ms']:.1f} | {r['max_ms']:.1f} | "
              f"{r['writes']} | {r['writes_per_s']:.1f} | {mp50} |")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps({"machine": m, "n": args.n, "queries": args.queries, "rounds": args.rounds,
                                         "embedder": args.embedder,
                                         "code": str(Path(memoryd.__file__).parent), "results": results}, indent=2))  # fmt: skip


if __name__ == "__main__":
    os.environ.setdefault("MEMORYD_EMBEDDER", "use")
    if sys.argv[1:2] == ["--writer"]:
        writer_process(*sys.argv[2:6])
    else:
        main()
