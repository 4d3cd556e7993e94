#!/usr/bin/env python3
"""memoryd bulk import: memories per second and peak RSS of `memoryd import` on a fresh store.

Per batch size, in its own fresh subprocess (so peak RSS is that run's own): N deterministic
zh-Hans / zh-Hant / en / mixed project memories (bench/latency.py `gen_texts`, seed 7) are written
as a JSON-lines file with types, tags and some global-scope lines, then imported in-process by
the real CLI command (`memoryd import FILE --json`, typer app called directly) into a fresh
SQLite store with the configured embedder (default USE) and the full write path: redaction,
dedup, classification, entities, one model call and one transaction per batch, one markdown
file per memory. Reported: seconds (the whole command, model load included, and the engine's own
import time), memories/s, CPU seconds (the machine is shared; CPU time shows what the process
itself spent), load average at start, peak RSS (VmHWM). `--profile` adds the top functions under
cProfile (cumulative and own time).

    .venv/bin/python bench/import_bench.py                          # N=10000, batch 256, USE
    .venv/bin/python bench/import_bench.py --n 2000 --batch-sizes 64,256,1024 --json out.json
    .venv/bin/python bench/import_bench.py --n 2000 --profile
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

TYPES = ["decision", "preference", "fact", "playbook", "warning", None]
TAGS = ["backend", "frontend", "infra", "ci", "db", "security", "perf", "docs"]


def write_input(path: Path, n: int, seed: int = 7) -> None:
    from latency import gen_texts

    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as fh:
        for text in gen_texts(n, seed=seed):
            line: dict[str, Any] = {"content": text}
            kind = rng.choice(TYPES)
            if kind:
                line["type"] = kind
            if rng.random() < 0.6:
                line["tags"] = rng.sample(TAGS, rng.randint(1, 3))
            if rng.random() < 0.1:
                line["scope"] = "global"
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return -1


def child(args: argparse.Namespace) -> None:
    """One import in this process; prints one JSON object on the last line of stdout."""
    work = Path(tempfile.mkdtemp(prefix="memoryd-import-bench-"))
    os.environ["MEMORYD_HOME"] = str(work / "home")
    os.environ["MEMORYD_EMBEDDER"] = args.embedder
    src = work / "in.jsonl"
    write_input(src, args.n)
    project = work / "project"
    project.mkdir()
    from typer.main import get_command

    from memoryd.cli import app

    command = get_command(app)
    argv = ["import", str(src), "--batch-size", str(args.batch_size), "--json", "--cwd", str(project)]
    load = os.getloadavg()[0]
    cpu0, t0 = time.process_time(), time.perf_counter()
    import contextlib
    import io

    out = io.StringIO()
    profiler = None
    if args.profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    with contextlib.redirect_stdout(out):
        command.main(argv, standalone_mode=False)
    if profiler is not None:
        profiler.disable()
    seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    report = json.loads(out.getvalue())
    files = sum(1 for _ in (work / "home" / "vault").rglob("*.md"))
    result = {
        "n": args.n, "batch_size": args.batch_size, "embedder": args.embedder, "seconds": round(seconds, 2),
        "import_seconds": report["seconds"], "imported": report["imported"], "duplicates": report["duplicates"],
        "rejected": report["rejected"], "bad": report["bad"], "vault_files": files,
        "per_s": round(report["imported"] / seconds, 1), "cpu_seconds": round(cpu, 2),
        "per_cpu_s": round(report["imported"] / cpu, 1) if cpu else None, "load_at_start": round(load, 2),
        "peak_rss_mb": round(_status_kb("VmHWM") / 1024, 1),
    }  # fmt: skip
    if profiler is not None:
        import pstats

        for key in ("cumulative", "tottime"):
            buf = io.StringIO()
            pstats.Stats(profiler, stream=buf).sort_stats(key).print_stats(args.profile_top)
            sys.stderr.write(f"\n--- cProfile, sorted by {key} ---\n" + buf.getvalue())
    import shutil

    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=10000, help="memories to import (default 10000)")
    ap.add_argument("--batch-sizes", default="256", help="comma-separated (default 256)")
    ap.add_argument("--embedder", default="use", choices=["use", "e5", "hash"])
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--profile", action="store_true", help="cProfile the import; top functions on stderr")
    ap.add_argument("--profile-top", type=int, default=25)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--batch-size", type=int, default=256, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    rows = []
    for bs in [int(b) for b in args.batch_sizes.split(",")]:
        cmd = [sys.executable, __file__, "--child", "--n", str(args.n), "--batch-size", str(bs),
               "--embedder", args.embedder] + (["--profile", "--profile-top", str(args.profile_top)]
                                                if args.profile else [])  # fmt: skip
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True)
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    head = f"{'N':>7} {'batch':>6} {'seconds':>8} {'import s':>8} {'mem/s':>7} {'mem/cpu-s':>9} {'load':>5} {'peak RSS':>9}"
    print(f"memoryd import, embedder {args.embedder}, {os.cpu_count()} cores")
    print(head)
    for r in rows:
        print(
            f"{r['n']:>7} {r['batch_size']:>6} {r['seconds']:>8.1f} {r['import_seconds']:>8.1f} {r['per_s']:>7.0f} "
            f"{r['per_cpu_s'] or 0:>9.0f} {r['load_at_start']:>5.1f} {r['peak_rss_mb']:>7.0f}MB"
        )
        if r["imported"] != r["n"] or r["vault_files"] != r["n"]:
            print(
                f"  note: imported {r['imported']}, duplicates {r['duplicates']}, rejected {r['rejected']}, "
                f"bad {r['bad']}, vault files {r['vault_files']}"
            )
    if args.json:
        args.json.write_text(json.dumps({"embedder": args.embedder, "cores": os.cpu_count(), "runs": rows}, indent=2))


if __name__ == "__main__":
    main()
