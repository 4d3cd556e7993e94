#!/usr/bin/env python3
"""What the drift check costs at +H commits, for several versions of memoryd side by side in one run.

`bench/drift.py --phrasing --before REV [REV ...]` calls `compare` for each bundle: the phrasing
suite's memories (the same texts for every version) are saved at the start commit by each version
into a store of its own, the checkout moves H first-parent commits forward, and then, the versions
taking turns (ABBA) so that the machine's load falls on all of them:

- `stale` cold: a fresh process on a copy of the store as it was right after the move (nothing of
  the new code parsed or cached yet), timing `Engine.stale` over every anchored memory;
- `stale` warm: a second fresh process on the same store and data home (what the first persisted);
- recall with anchors on and off: one fresh process on that store with two engines, one with anchors
  on and one off, taking turns query by query (paired), every query timed (no untimed warm-up),
  `max_results=10`; and the same in a fresh copy where no `stale` ran first (the first recalls after
  a pull pay for what they check).

Each version runs from its own source tree (`git archive REV src`, first on PYTHONPATH; this
checkout's `src/` for "this"), through public names only (`Engine.open`, `memorize`, `stale`,
`recall`), with the hashing embedder (no model: the drift check is what differs).

    .venv/bin/python bench/drift.py --phrasing --symbols 150 --horizons 300 --before e0fdc11 main
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
THIS = "this checkout"


def export_src(rev: str, dest: Path) -> tuple[str, Path]:
    """(abbreviated commit, `src/` of `rev` of this repository) extracted under `dest`."""
    root = HERE.parent
    sha = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", rev], check=True, capture_output=True,
                         text=True).stdout.strip()  # fmt: skip
    out = dest / f"src-{sha}"
    if not out.exists():
        archive = subprocess.run(["git", "-C", str(root), "archive", "--format=tar", sha, "src"], check=True,
                                 capture_output=True).stdout  # fmt: skip
        tmp = dest / f"src-{sha}.tar"
        tmp.write_bytes(archive)
        with tarfile.open(tmp) as tar:
            tar.extractall(out, filter="data")
        tmp.unlink()
    return sha, out / "src"


def _child(op: str, spec: dict[str, Any]) -> dict[str, Any]:
    """One measurement in this process (run with PYTHONPATH=<a version's src>)."""
    import memoryd

    if not str(Path(memoryd.__file__).resolve()).startswith(spec["src"]):
        raise SystemExit(f"memoryd came from {memoryd.__file__}, not {spec['src']}")
    try:
        from memoryd.shared.config import Settings
    except ImportError:  # before the shared/ layout
        from memoryd.config import Settings  # type: ignore[no-redef]
    from memoryd.anchors import symbols
    from memoryd.engine import Engine
    from memoryd.search.embed import make_embedder

    parses = [0]  # files parsed (every version has `symbols._parse`): a warm run should parse none
    real_parse = symbols._parse

    def counted(*args: Any) -> Any:
        parses[0] += 1
        return real_parse(*args)

    symbols._parse = counted
    settings = Settings(home=Path(spec["home"]), embedder="hash", anchors=spec.get("anchors", True))
    t0 = time.perf_counter()
    with Engine.open(settings, cwd=spec["repo"], embedder=make_embedder("hash")) as engine:
        opened = time.perf_counter() - t0
        if op == "prepare":
            anchored, ms = 0, []
            for text in spec["texts"]:
                t = time.perf_counter()
                r = engine.memorize(text, source="agent", gate="trusted")
                ms.append((time.perf_counter() - t) * 1000)
                anchored += bool(r.anchors)
            return {"anchored": anchored, "memorize_ms": ms}
        if op == "stale":
            t, c = time.perf_counter(), time.process_time()
            found = engine.stale(limit=10**6)
            return {"s": time.perf_counter() - t, "cpu_s": time.process_time() - c, "stale": len(found),
                    "open_s": opened, "parses": parses[0]}  # fmt: skip
        # recall: this engine (anchors on) and a second one on the same store with anchors off, taking turns
        # query by query (paired: what the two differ in is the drift check, not the process or the moment)
        off_settings = Settings(home=Path(spec["home"]), embedder="hash", anchors=False)
        times: dict[str, list[float]] = {"on": [], "off": []}
        with Engine.open(off_settings, cwd=spec["repo"], embedder=make_embedder("hash")) as off:
            for n, q in enumerate(spec["queries"]):
                for flag in ("on", "off") if n % 2 == 0 else ("off", "on"):
                    t = time.perf_counter()
                    (engine if flag == "on" else off).recall(q, max_results=10)
                    times[flag].append((time.perf_counter() - t) * 1000)
        return times


def _run(src: Path, op: str, spec: dict[str, Any], work: Path) -> dict[str, Any]:
    path = work / "spec.json"
    path.write_text(json.dumps({**spec, "src": str(src.resolve())}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env.update(PYTHONPATH=str(src), MEMORYD_DAEMON="off", OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, __file__, "--child", op, str(path)], capture_output=True, text=True,
                         env=env, check=False)  # fmt: skip
    if out.returncode != 0:
        raise RuntimeError(f"{op} with {src} failed:\n{out.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def pct(xs: list[float], p: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(len(xs) * p))], 2)


def compare(bundle: Path, versions: list[tuple[str, Path]], texts: list[str], queries: list[str], start: str,
            end: str, work: Path, reps: int = 3) -> dict[str, Any]:  # fmt: skip
    """Timings of each (label, src) version on one repository moved from `start` to `end` (see the module)."""
    repo = work / f"speed-{bundle.stem}"
    subprocess.run(["git", "clone", "-q", str(bundle), str(repo)], check=True, capture_output=True)
    _git(repo, "config", "advice.detachedHead", "false")
    _git(repo, "checkout", "-q", "--detach", "-f", start)
    homes = [work / f"home-{bundle.stem}-{i}" for i in range(len(versions))]
    prepared = []
    for (_, src), home in zip(versions, homes, strict=True):
        prepared.append(_run(src, "prepare", {"home": str(home), "repo": str(repo), "texts": texts}, work))
    _git(repo, "checkout", "-q", "--detach", "-f", end)
    _git(repo, "clean", "-q", "-fdx")
    res: dict[str, dict[str, list[float]]] = {label: {} for label, _ in versions}
    started = time.perf_counter()
    for rep in range(reps):
        order = list(range(len(versions)))
        for i in order if rep % 2 == 0 else order[::-1]:
            label, src = versions[i]
            r = res[label]
            run = work / f"run-{i}"
            for cold_recall in (True, False):
                shutil.rmtree(run, ignore_errors=True)
                shutil.copytree(homes[i], run)  # the store as it was right after the move
                spec = {"home": str(run), "repo": str(repo), "queries": queries}
                if cold_recall:  # no stale first: the first recalls pay for what they check
                    out = _run(src, "recall", spec, work)
                    r.setdefault("recall_cold_on", []).extend(out["on"])
                    r.setdefault("recall_cold_off", []).extend(out["off"])
                    continue
                for key in ("cold", "warm"):
                    out = _run(src, "stale", spec, work)
                    r.setdefault(f"stale_{key}_s", []).append(out["s"])
                    r.setdefault(f"stale_{key}_cpu_s", []).append(out["cpu_s"])
                    r.setdefault(f"parses_{key}", []).append(out["parses"])
                    r["stale"] = [out["stale"]]
                out = _run(src, "recall", spec, work)  # after stale: what it kept is there
                r.setdefault("recall_on", []).extend(out["on"])
                r.setdefault("recall_off", []).extend(out["off"])
        print(f"    speed {bundle.stem} round {rep + 1}/{reps}: {time.perf_counter() - started:.0f}s", file=sys.stderr)
    out: dict[str, Any] = {}
    for (label, _), prep in zip(versions, prepared, strict=True):
        r = res[label]
        med = {k: round(statistics.median(r[k]), 3) for k in ("stale_cold_s", "stale_warm_s", "stale_cold_cpu_s",
                                                               "stale_warm_cpu_s")}  # fmt: skip
        out[label] = {
            **med,
            "anchored": prep["anchored"],
            "memorize_p50_ms": pct(prep["memorize_ms"], 0.5),
            "memorize_p95_ms": pct(prep["memorize_ms"], 0.95),
            "stale_memories": r["stale"][0],
            "parses_cold": max(r["parses_cold"]),
            "parses_warm": max(r["parses_warm"]),
            "warm_over_cold": round(med["stale_warm_s"] / med["stale_cold_s"], 3) if med["stale_cold_s"] else None,
            **{
                f"recall_{k}_{name}_ms": pct(r[f"recall_{k}"], p)
                for k in ("on", "off", "cold_on", "cold_off")
                for name, p in (("p50", 0.5), ("p95", 0.95))
            },  # fmt: skip
            "runs": {k: [round(x, 3) for x in v] for k, v in r.items() if k.startswith("stale_")},
        }
        for q in ("p50", "p95"):
            for cold in ("", "cold_"):
                on, off = out[label][f"recall_{cold}on_{q}_ms"], out[label][f"recall_{cold}off_{q}_ms"]
                out[label][f"recall_{cold}on_over_off_{q}"] = round(on / off, 2) if on and off else None
    first = out[versions[0][0]]["stale_cold_s"]
    for label, _ in versions:
        out[label]["stale_cold_over_first"] = round(out[label]["stale_cold_s"] / first, 2) if first else None
    return {"texts": len(texts), "queries": len(queries), "reps": reps, "versions": out}


def show(bundle: str, horizon: int, result: dict[str, Any]) -> None:
    print(f"\nspeed on {bundle} at +{horizon} commits ({result['texts']} memories, {result['queries']} queries x "
          f"{result['reps']} processes per version and flag; medians, ms unless said)")  # fmt: skip
    cols = ("anchored", "memorize_p50_ms", "memorize_p95_ms", "stale_memories", "stale_cold_s", "stale_warm_s", "warm_over_cold", "stale_cold_over_first",
            "parses_cold", "parses_warm",
            "recall_off_p50_ms", "recall_on_p50_ms", "recall_on_over_off_p50", "recall_off_p95_ms", "recall_on_p95_ms",
            "recall_on_over_off_p95", "recall_cold_off_p50_ms", "recall_cold_on_p50_ms", "recall_cold_on_over_off_p50",
            "recall_cold_off_p95_ms", "recall_cold_on_p95_ms", "recall_cold_on_over_off_p95")  # fmt: skip
    width = max(len(v) for v in result["versions"]) + 2
    print(f"{'':<28}" + "".join(f"{v:>{width}}" for v in result["versions"]))
    for c in cols:
        print(f"{c:<28}" + "".join(f"{result['versions'][v][c]!s:>{width}}" for v in result["versions"]))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        print(json.dumps(_child(sys.argv[2], json.loads(Path(sys.argv[3]).read_text()))))
    else:
        raise SystemExit("run through bench/drift.py --phrasing --before REV (see its --help)")
