#!/usr/bin/env python3
"""Code-anchor drift on real history: does memoryd notice when the code a memory names moves on?

History mode (default): clone `sqlite-utils.bundle` (the whole history of a real Python project),
walk its first-parent history, and at --samples evenly spaced commits write --per-commit memories
about real files and symbols of that commit (generated from its code: "`Table.insert_all` in
sqlite_utils/db.py: Insert multiple rows…"), through `Engine.memorize` (automatic anchoring, as an
agent's save). Then check out later commits (--horizons commits ahead) and compare memoryd's
verdict on every anchor with the truth, computed independently:

- memoryd: `DriftChecker` (blob ids, `ast.dump` fingerprints, `git diff --find-renames` and, for
  the deletions and additions git leaves unpaired, the definition names they share; `git grep`);
- truth: file contents read from git objects; renames by content similarity of the old file with
  files that did not exist at the anchor commit (difflib line ratio ≥ 0.5, the best one), not by
  git's rename detection; definitions found with the `tokenize` module (blocks by INDENT/DEDENT,
  qualified names by nesting) and compared as normalised token streams (comments and layout
  dropped, string literals by value, magic trailing commas dropped), not with `ast`; a class by its
  header and the sorted names of its members, as memoryd defines a class change.

Reports precision and recall per kind (file deleted, renamed, changed; symbol changed, removed,
moved), renames followed to the right path (the history has only 5 renames, so every one of them is
checked, plus renames made here: `git mv` with 0–50% of the lines edited), the share of memories that drift per 100 commits, and
the drift-check cost per recall on this store (anchors on vs off, same store and queries).

Synthetic mode (--synthetic N): a repository of N Python files, 1000 anchored memories, then 10%
of the files edited, some renamed and deleted; recall p50 with anchors on vs off (the drift check's
cost at that size) and memorize p50 with and without anchoring of memories naming files and symbols.

Phrasing mode (--phrasing, issue 26): on sqlite-utils.bundle and pflag.bundle (Go), --symbols symbols
sampled outside tests at 100 commits before the end, each written about in eight phrasings (backticked,
parenthesised, prose next to the path, qualified module path, `module:function` / Go import path with
receiver, receiver syntax, class-qualified without path, bare name). Reports per phrasing the share of
unambiguous mentions anchored to the intended definition (truth: the sample itself; a bare or
class-qualified name is unambiguous when only one non-test definition has it, by the bench's own
`ast`/scanner tables); end-to-end precision/recall over every memory (anchored or not) at +10 and +100
commits (truth: the definition's tokens, a class with its methods, by `tokenize` for Python and a
brace scanner for Go; annotation-only changes counted apart); and edits made here at the anchor's commit:
rename (same body, new name), move (same definition to a new file), false move (deleted here, a
different definition of the name added in a test file) and, for Python, an added type hint.

    .venv/bin/python bench/drift.py                         # sqlite-utils history
    .venv/bin/python bench/drift.py --phrasing --symbols 30
    .venv/bin/python bench/drift.py --samples 6 --json out.json
    .venv/bin/python bench/drift.py --synthetic 10000
"""

from __future__ import annotations

import argparse
import ast
import copy
import difflib
import io
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tokenize
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, NamedTuple

# The data folder beside the checkout (../shared/data), or one level further up (a checkout in a folder of checkouts).
_REPOS = next((p / "shared" / "data" / "repos" for p in Path(__file__).resolve().parents[1].parents[:2]
               if (p / "shared" / "data" / "repos").is_dir()), Path("../shared/data/repos"))  # fmt: skip
BUNDLE = _REPOS / "sqlite-utils.bundle"
MINOR = ("annotation_only", "docstring_only")  # aspects that leave a memory current
KINDS = ["file_deleted", "file_renamed", "file_changed", "symbol_changed", "symbol_removed", "symbol_moved"]


def git(repo: Path, *args: str, text: bool = True) -> Any:
    out = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)
    return out.stdout.decode("utf-8", "replace") if text else out.stdout


def machine() -> dict[str, Any]:
    mem = next((int(line.split()[1]) // 1024 for line in open("/proc/meminfo") if line.startswith("MemTotal")), 0)
    return {"nproc": os.cpu_count(), "ram_mb": mem, "load": os.getloadavg(), "date": time.strftime("%Y-%m-%d %H:%M")}


# -- the truth: tokenize-based definitions ------------------------------------------------------------

_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING,
         tokenize.ENDMARKER}  # fmt: skip


def _norm(tokens: list[tokenize.TokenInfo]) -> list[str]:
    sig = [t for t in tokens if t.type not in _SKIP]
    out: list[str] = []
    for i, t in enumerate(sig):
        if t.type == tokenize.OP and t.string == "," and i + 1 < len(sig) and sig[i + 1].string in ")]}":
            continue  # a magic trailing comma is layout
        if t.type == tokenize.STRING:
            try:
                out.append(repr(ast.literal_eval(t.string)))
                continue
            except (ValueError, SyntaxError):
                pass
        out.append(t.string)
    return out


def truth_defs(source: bytes) -> dict[str, str] | None:
    """qualified name -> normalised definition (functions: all tokens; classes: header + member names)."""
    try:
        toks = list(tokenize.tokenize(io.BytesIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    defs: dict[str, str] = {}
    stack: list[dict[str, Any]] = []  # open blocks: name, qual, kind, depth, start, body_started, members
    depth = 0
    line_start = True
    deco_start: int | None = None
    i = 0

    def close(block: dict[str, Any], end: int) -> None:
        body = toks[block["start"] : end]
        if block["kind"] == "def":
            value = "\x1f".join(_norm(body))
        else:
            header_end = block["header_end"]
            value = json.dumps([_norm(toks[block["start"] : header_end]), sorted(block["members"])])
        defs.setdefault(block["qual"], value)

    while i < len(toks):
        t = toks[i]
        if t.type == tokenize.INDENT:
            depth += 1
            line_start = True
        elif t.type == tokenize.DEDENT:
            depth -= 1
            while stack and stack[-1]["body_depth"] is not None and depth < stack[-1]["body_depth"]:
                close(stack.pop(), i)
            line_start = True
        elif t.type in (tokenize.NEWLINE, tokenize.NL):
            if t.type == tokenize.NEWLINE and stack and stack[-1]["header_end"] is None:
                stack[-1]["header_end"] = i
                nxt = next((x for x in toks[i + 1 :] if x.type not in (tokenize.NL, tokenize.COMMENT)), None)
                if nxt is None or nxt.type != tokenize.INDENT:  # a one-line definition
                    close(stack.pop(), i + 1)
                else:
                    stack[-1]["body_depth"] = depth + 1
            line_start = True
        elif t.type == tokenize.COMMENT:
            pass
        else:
            if line_start and t.type == tokenize.OP and t.string == "@":
                if deco_start is None:
                    deco_start = i
            elif line_start and t.type == tokenize.NAME and t.string in ("def", "class", "async"):
                j = i + 1 if t.string != "async" else i + 2
                kind = "class" if toks[j - 1].string == "class" else "def"
                if t.string == "async" and toks[i + 1].string != "def":
                    line_start = False
                    i += 1
                    continue
                name = toks[j].string
                parent = next((b for b in reversed(stack) if b["body_depth"] is not None), None)
                if parent is not None and parent["kind"] == "class" and depth == parent["body_depth"]:
                    parent["members"].add(name)
                qual = f"{parent['qual']}.{name}" if parent is not None else name
                stack.append({"qual": qual, "kind": kind, "start": deco_start if deco_start is not None else i,
                              "header_end": None, "body_depth": None, "members": set()})  # fmt: skip
                deco_start = None
            elif line_start and t.type == tokenize.NAME:
                parent = (
                    stack[-1] if stack and stack[-1]["body_depth"] == depth and stack[-1]["kind"] == "class" else None
                )
                nxt = toks[i + 1] if i + 1 < len(toks) else None
                if parent is not None and nxt is not None and nxt.type == tokenize.OP and nxt.string in ("=", ":"):
                    parent["members"].add(t.string)
                deco_start = None if t.string not in ("def", "class") else deco_start
            line_start = False
        i += 1
    while stack:
        close(stack.pop(), len(toks))
    return defs


class Truth:
    """What really happened to an anchor between its commit and the checked-out one."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self._defs: dict[str, dict[str, str] | None] = {}

    def show(self, commit: str, path: str) -> bytes | None:
        try:
            return git(self.repo, "show", f"{commit}:{path}", text=False)
        except subprocess.CalledProcessError:
            return None

    def files(self, commit: str) -> set[str]:
        return set(git(self.repo, "ls-tree", "-r", "--name-only", commit).splitlines())

    def defs(self, key: str, data: bytes) -> dict[str, str] | None:
        if key not in self._defs:
            self._defs[key] = truth_defs(data)
        return self._defs[key]

    def renamed(self, commit: str, later: str, path: str, old_files: set[str], new_files: set[str]) -> str | None:
        old = self.show(commit, path)
        if old is None:
            return None
        a = old.decode("utf-8", "replace").splitlines()
        best, best_ratio = None, 0.5
        for cand in sorted(new_files - old_files):
            if os.path.splitext(cand)[1] != os.path.splitext(path)[1]:
                continue
            data = self.show(later, cand)
            if data is None:
                continue
            m = difflib.SequenceMatcher(None, a, data.decode("utf-8", "replace").splitlines(), autojunk=False)
            if m.quick_ratio() < best_ratio:
                continue
            r = m.ratio()
            if r >= best_ratio:
                best, best_ratio = cand, r
        return best

    def symbol_where(self, later: str, symbol: str, files: set[str], skip: str) -> str | None:
        for f in sorted(files):
            if not f.endswith(".py") or f == skip:
                continue
            data = self.show(later, f)
            d = self.defs(f"{later}:{f}", data) if data is not None else None
            if d and symbol in d:
                return f
        return None


def truth_label(t: Truth, a: Any, commit: str, later: str, file_paths: set[str], symbol_paths: set[str],
                cache: dict[Any, Any]) -> tuple[str, str | None]:  # fmt: skip
    """(label, new path) for one anchor: "current" or one of KINDS."""
    key = (commit, later)
    if key not in cache:
        cache[key] = (t.files(commit), t.files(later))
    old_files, new_files = cache[key]
    path = a.path
    to = None
    if path not in new_files:
        rkey = (commit, later, path)
        if rkey not in cache:
            cache[rkey] = t.renamed(commit, later, path, old_files, new_files)
        to = cache[rkey]
    if a.kind == "file":
        if path not in new_files:
            return ("file_renamed", to) if to else ("file_deleted", None)
        if path not in symbol_paths and t.show(commit, path) != t.show(later, path):
            return "file_changed", None
        return "current", None
    old = t.show(commit, path)
    old_defs = t.defs(f"{commit}:{path}", old) if old is not None else None
    where = to if path not in new_files else path
    if where is not None:
        new = t.show(later, where)
        new_defs = t.defs(f"{later}:{where}", new) if new is not None else None
        if new_defs is not None and old_defs is not None and a.symbol in new_defs:
            if new_defs[a.symbol] != old_defs.get(a.symbol):
                return "symbol_changed", where
            if where != path and path not in file_paths:
                return "symbol_moved", where
            return "current", None
    elsewhere = t.symbol_where(later, a.symbol, new_files, skip=where or path)
    return ("symbol_moved", elsewhere) if elsewhere else ("symbol_removed", None)


# -- memories generated from the code --------------------------------------------------------------------


def _doc(node: ast.AST) -> str:
    doc = ast.get_docstring(node) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else None
    first = (doc or "").strip().splitlines()[0] if doc and doc.strip() else ""
    return first[:120]


def generate(repo: Path, rng: random.Random, n: int) -> list[tuple[str, str, str]]:
    """(text, expected path, expected symbol or "") for n memories about this checkout's code."""
    symbols: list[tuple[str, str, ast.AST]] = []
    files = [p for p in git(repo, "ls-files", "*.py").splitlines() if not p.startswith(("docs/",))]
    for path in files:
        try:
            tree = ast.parse((repo / path).read_bytes())
        except (SyntaxError, ValueError):
            continue

        def visit(body: list[ast.stmt], prefix: str, path: str = path) -> None:
            for node in body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    symbols.append((path, prefix + node.name, node))
                    if isinstance(node, ast.ClassDef):
                        visit(node.body, prefix + node.name + ".")

        visit(tree.body, "")
    # Library code more than tests: that is what memories are mostly about.
    lib = [s for s in symbols if not s[0].startswith("tests/") and not s[1].split(".")[-1].startswith("_")]
    tests = [s for s in symbols if s[0].startswith("tests/")]
    pool = lib * 3 + tests
    out: list[tuple[str, str, str]] = []
    seen: set[tuple[str, str]] = set()
    while len(out) < n and pool:
        roll = rng.random()
        if roll < 0.15:  # a file only
            path = rng.choice(files)
            if (path, "") in seen:
                continue
            seen.add((path, ""))
            out.append(
                (f"{path} holds the {Path(path).stem.replace('_', ' ')} code; read it before changing it.", path, "")
            )
            continue
        path, qual, node = rng.choice(pool)
        if (path, qual) in seen:
            continue
        seen.add((path, qual))
        doc = _doc(node) or f"implements {qual.split('.')[-1].replace('_', ' ')}"
        call = "" if isinstance(node, ast.ClassDef) else "()"
        if roll < 0.75:
            text = f"`{qual}{call}` in {path}: {doc}"
        else:  # the symbol alone: memoryd has to find its file
            text = f"`{qual}{call}`: {doc}"
        out.append((text, path, qual))
    return out


# -- history mode ---------------------------------------------------------------------------------------------


def history(args: argparse.Namespace) -> dict[str, Any]:
    from memoryd.anchors.drift import DriftChecker
    from memoryd.engine import Engine
    from memoryd.search.embed import make_embedder
    from memoryd.shared.config import Settings

    work = Path(tempfile.mkdtemp(prefix="memoryd-drift-"))
    repo = work / "sqlite-utils"
    git(work, "clone", "-q", str(args.bundle), str(repo))
    git(repo, "config", "advice.detachedHead", "false")
    commits = git(repo, "rev-list", "--first-parent", "--reverse", "HEAD").split()
    horizons = sorted(args.horizons)
    last_start = len(commits) - 1 - max(horizons)
    first = len(commits) // 20
    starts = sorted({first + (last_start - first) * k // max(1, args.samples - 1) for k in range(args.samples)})
    rng = random.Random(args.seed)
    truth = Truth(repo)
    labels: list[dict[str, Any]] = []
    memories_drift: dict[int, list[tuple[bool, bool]]] = defaultdict(list)
    anchored = Counter()
    cache: dict[Any, Any] = {}
    home = work / "home"
    settings = Settings(home=home, embedder="hash")
    emb = make_embedder("hash")
    written: list[tuple[str, int, list[Any]]] = []  # (atom id, start index, anchors)
    started = time.perf_counter()
    for si in starts:
        git(repo, "checkout", "-q", "--detach", "-f", commits[si])
        git(repo, "clean", "-q", "-fdx")
        with Engine.open(settings, cwd=repo, embedder=emb) as engine:
            for text, path, symbol in generate(repo, rng, args.per_commit):
                r = engine.memorize(text, source="agent", gate="trusted")
                if r.effect != "applied":
                    continue
                anchors = engine.store.anchors_of([r.atom_id]).get(r.atom_id, [])
                refs = {(a.path, a.symbol) for a in anchors}
                anchored["expected"] += 1
                anchored["found"] += (path, symbol) in refs
                written.append((str(r.atom_id), si, anchors))
        for h in horizons:
            git(repo, "checkout", "-q", "--detach", "-f", commits[si + h])
            git(repo, "clean", "-q", "-fdx")
            with Engine.open(settings, cwd=repo, embedder=emb) as engine:
                checker: DriftChecker = engine._anchoring.checker()  # type: ignore[assignment]
                for _atom_id, start, anchors in written:
                    if start != si:
                        continue
                    fp = {a.path for a in anchors if a.kind == "file"}
                    sp = {a.path for a in anchors if a.kind == "symbol"}
                    sys_any = truth_any = False
                    for a in anchors:
                        change = checker.check_anchor(a, fp, sp)
                        got = change.kind if change else "current"
                        got_to = change.to if change else None
                        want, want_to = truth_label(truth, a, commits[si], commits[si + h], fp, sp, cache)
                        labels.append({"start": si, "h": h, "kind": a.kind, "system": got, "truth": want,
                                       "system_to": got_to, "truth_to": want_to, "ref": a.ref})  # fmt: skip
                        sys_any |= got != "current"
                        truth_any |= want != "current"
                    if anchors:
                        memories_drift[h].append((sys_any, truth_any))
        print(f"  commit {si}/{len(commits)}: {len(written)} memories so far, {len(labels)} verdicts, "
              f"{time.perf_counter() - started:.0f}s", file=sys.stderr)  # fmt: skip
    # Drift-check cost per recall, at the store's final size, on the last checkout.
    cost = recall_cost(settings, repo, emb, queries=[t for t, _, _ in generate(repo, random.Random(1), 60)])
    follow = rename_pass(repo, settings, emb, commits, rng)
    shutil.rmtree(work, ignore_errors=True)
    return {"machine": machine(), "commits": len(commits), "starts": starts, "horizons": horizons,
            "memories": len(written), "anchored": dict(anchored), "table": table(labels),
            "renames": renames(labels), "rename_pass": follow, "drift_share": drift_share(memories_drift), "recall_cost": cost,
            "seconds": round(time.perf_counter() - started)}  # fmt: skip


def table(labels: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in KINDS:
        tp = sum(1 for x in labels if x["system"] == k and x["truth"] == k)
        fp = sum(1 for x in labels if x["system"] == k and x["truth"] != k)
        fn = sum(1 for x in labels if x["truth"] == k and x["system"] != k)
        out[k] = {"truth": tp + fn, "system": tp + fp, "tp": tp,
                  "precision": round(tp / (tp + fp), 3) if tp + fp else None,
                  "recall": round(tp / (tp + fn), 3) if tp + fn else None}  # fmt: skip
    sym = {"symbol_changed", "symbol_removed", "symbol_moved"}
    s_lab = [x for x in labels if x["kind"] == "symbol"]
    tp = sum(1 for x in s_lab if x["system"] in sym and x["truth"] in sym)
    fp = sum(1 for x in s_lab if x["system"] in sym and x["truth"] not in sym)
    fn = sum(1 for x in s_lab if x["truth"] in sym and x["system"] not in sym)
    out["symbol-level (any)"] = {"truth": tp + fn, "system": tp + fp, "tp": tp,
                                 "precision": round(tp / (tp + fp), 3) if tp + fp else None,
                                 "recall": round(tp / (tp + fn), 3) if tp + fn else None}  # fmt: skip
    out["verdicts"] = len(labels)
    out["disagreements"] = Counter(
        f"{x['truth']}→{x['system']}" for x in labels if x["truth"] != x["system"]
    ).most_common(12)
    return out


def renames(labels: list[dict[str, Any]]) -> dict[str, Any]:
    truth = [x for x in labels if x["truth"] == "file_renamed"]
    followed = sum(1 for x in truth if x["system"] == "file_renamed" and x["system_to"] == x["truth_to"])
    moved = [x for x in labels if x["truth"] == "symbol_moved"]
    to_right = sum(1 for x in moved if x["system"] == "symbol_moved" and x["system_to"] == x["truth_to"])
    return {"renames": len(truth), "followed": followed, "share": round(followed / len(truth), 3) if truth else None,
            "symbol_moves": len(moved), "moves_to_right_file": to_right}  # fmt: skip


def drift_share(memories: dict[int, list[tuple[bool, bool]]]) -> dict[str, Any]:
    out = {}
    for h, rows in sorted(memories.items()):
        out[str(h)] = {"memories": len(rows), "system": round(sum(s for s, _ in rows) / len(rows), 3),
                       "truth": round(sum(t for _, t in rows) / len(rows), 3)}  # fmt: skip
    return out


def recall_cost(settings: Any, repo: Path, emb: Any, queries: list[str], rounds: int = 3) -> dict[str, Any]:
    """Recall p50 with anchors on and off (same store, same queries, fresh engines, alternated), and the
    drift step itself timed inside recall: wall and CPU time, steady passes, and the cold first pass."""
    from memoryd.engine import Engine

    times: dict[str, list[float]] = {"on": [], "off": []}
    steady: list[tuple[float, float]] = []  # (wall ms, CPU ms) of the drift step in steady passes
    cold: list[tuple[float, float]] = []  # the first pass of the first engine: every changed version parsed once
    for n, flag in enumerate(("off", "on") * rounds):
        s = settings.model_copy(update={"anchors": flag == "on"})
        with Engine.open(s, cwd=repo, embedder=emb) as engine:
            rank = engine._anchoring.rank_with_drift
            spent: list[tuple[float, float]] = []

            def timed(*a: Any, _rank: Any = rank, _spent: list[tuple[float, float]] = spent) -> Any:
                t0, c0 = time.perf_counter(), time.process_time()
                try:
                    return _rank(*a)
                finally:
                    _spent.append(((time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000))

            engine._anchoring.rank_with_drift = timed  # type: ignore[method-assign]
            for q in queries:  # first pass: loads, first parses, first diffs and searches
                engine.recall(q, max_results=10)
            if n == 1:
                cold.extend(spent)
            spent.clear()
            for q in queries:
                t = time.perf_counter()
                engine.recall(q, max_results=10)
                times[flag].append((time.perf_counter() - t) * 1000)
            if flag == "on":
                steady.extend(spent)

    def pct(xs: list[float], p: float) -> float:
        xs = sorted(xs)
        return round(xs[min(len(xs) - 1, int(len(xs) * p))], 2)

    on, off = statistics.median(times["on"]), statistics.median(times["off"])
    return {"recall_p50_on_ms": round(on, 2), "recall_p50_off_ms": round(off, 2),
            "difference_p50_ms": round(on - off, 2), "recalls": len(times["on"]),
            "drift_step_p50_ms": pct([w for w, _ in steady], 0.5), "drift_step_p95_ms": pct([w for w, _ in steady], 0.95),
            "drift_step_cpu_p50_ms": pct([c for _, c in steady], 0.5),
            "cold_first_pass": {"drift_step_p50_ms": pct([w for w, _ in cold], 0.5),
                                "drift_step_p95_ms": pct([w for w, _ in cold], 0.95),
                                "drift_step_cpu_total_s": round(sum(c for _, c in cold) / 1000, 2),
                                "recalls": len(cold)}}  # fmt: skip


# -- renames: every real one in the history, and constructed ones with edits ---------------------------------


def rename_pass(repo: Path, settings: Any, emb: Any, commits: list[str], rng: random.Random) -> dict[str, Any]:
    """Follow-rate of renames: the 5 real renames of the whole history (every branch), and renames made
    here (git mv + a share of the lines edited, committed) of files memories were written about."""
    from memoryd.engine import Engine

    log = git(repo, "log", "--all", "--diff-filter=R", "-M", "--name-status", "--format=C %H %P")
    real: list[tuple[str, str, str, str]] = []
    commit = parent = ""
    for line in log.splitlines():
        if line.startswith("C "):
            parts = line.split()
            commit, parent = parts[1], (parts[2] if len(parts) > 2 else "")
        elif line.startswith("R") and parent:
            _, old, new = line.split("\t")
            real.append((commit, parent, old, new))
    rows: list[dict[str, Any]] = []

    def evaluate(kind: str, before: str, after: str, old: str, new: str, edit: float) -> None:
        git(repo, "checkout", "-q", "--detach", "-f", before)
        with Engine.open(settings, cwd=repo, embedder=emb) as engine:
            r = engine.memorize(f"{old} is where the {Path(old).stem.replace('_', ' ')} work lives ({kind} {edit})",
                                source="agent", gate="trusted", anchors=[old])  # fmt: skip
            anchors = engine.store.anchors_of([str(r.atom_id)])[str(r.atom_id)]
        git(repo, "checkout", "-q", "--detach", "-f", after)
        with Engine.open(settings, cwd=repo, embedder=emb) as engine:
            change = engine._anchoring.checker().check_anchor(anchors[0])  # type: ignore[union-attr]
        rows.append({"kind": kind, "edit": edit, "old": old, "new": new, "system": change.kind if change else "current",
                     "to": change.to if change else None})  # fmt: skip

    for commit, parent, old, new in real:
        evaluate("real", parent, commit, old, new, -1)
    base = commits[len(commits) * 2 // 3]
    git(repo, "checkout", "-q", "--detach", "-f", base)
    files = [f for f in git(repo, "ls-files", "*.py").split() if len((repo / f).read_text().splitlines()) >= 20]
    for n, old in enumerate(rng.sample(files, min(len(files), 24))):
        edit = (0.0, 0.1, 0.3, 0.5)[n % 4]
        git(repo, "checkout", "-q", "--detach", "-f", base)
        new = old.replace(".py", "_moved.py") if n % 2 else f"renamed_{n}/{Path(old).name}"
        (repo / new).parent.mkdir(parents=True, exist_ok=True)
        git(repo, "mv", old, new)
        lines = (repo / new).read_text().splitlines()
        for i in rng.sample(range(len(lines)), int(len(lines) * edit)):
            lines[i] = lines[i] + "  # edited" if lines[i].strip() else "pass"
        (repo / new).write_text("\n".join(lines) + "\n")
        git(repo, "add", "-A")
        git(repo, "-c", "user.email=b@x", "-c", "user.name=b", "commit", "-q", "-m", f"rename {old}")
        after = git(repo, "rev-parse", "HEAD").strip()
        evaluate("made", base, after, old, new, edit)
    out: dict[str, Any] = {}
    for key in sorted({(r["kind"], r["edit"]) for r in rows}):
        sel = [r for r in rows if (r["kind"], r["edit"]) == key]
        followed = sum(1 for r in sel if r["system"] == "file_renamed" and r["to"] == r["new"])
        label = "real (history)" if key[0] == "real" else f"made, {int(key[1] * 100)}% of lines edited"
        out[label] = {
            "renames": len(sel),
            "followed": followed,
            "other": Counter(r["system"] for r in sel if r["system"] != "file_renamed"),
        }
    total = sum(v["renames"] for v in out.values())
    out["all"] = {"renames": total, "followed": sum(v["followed"] for v in out.values()),
                  "share": round(sum(v["followed"] for v in out.values()) / total, 3) if total else None}  # fmt: skip
    out["rows"] = rows  # each rename: kind, share of lines edited, old and new path, memoryd's verdict
    return out


# -- synthetic mode -----------------------------------------------------------------------------------------------


def synthetic(args: argparse.Namespace) -> dict[str, Any]:
    from memoryd.engine import Engine
    from memoryd.search.embed import make_embedder
    from memoryd.shared.config import Settings

    n = args.synthetic
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="memoryd-drift-synth-"))
    repo = work / "big"
    started = time.perf_counter()
    for i in range(n):
        d = repo / f"pkg{i % 100:02d}" / f"sub{i % 7}"
        d.mkdir(parents=True, exist_ok=True)
        body = "\n\n".join(f"def handle_{i}_{k}(request, limit={k}):\n    \"\"\"Handle case {k}.\"\"\"\n"
                           f"    return request.get('v{k}', limit) + {i}" for k in range(8))  # fmt: skip
        (d / f"mod_{i}.py").write_text(
            f'"""Module {i}."""\n\n{body}\n\n\nclass Service{i}:\n    def run(self):\n        return {i}\n'
        )
    for cmd in (["init", "-q", "-b", "main"], ["add", "-A"],
                ["-c", "user.email=b@x", "-c", "user.name=b", "commit", "-q", "-m", "init"]):  # fmt: skip
        git(repo, *cmd)
    print(f"  {n} files committed in {time.perf_counter() - started:.0f}s", file=sys.stderr)
    settings = Settings(home=work / "home", embedder="hash")
    emb = make_embedder("hash")
    texts = []
    for j in range(args.memories):
        i, k = rng.randrange(n), rng.randrange(8)
        path = f"pkg{i % 100:02d}/sub{i % 7}/mod_{i}.py"
        texts.append(f"`handle_{i}_{k}()` in {path} returns the v{k} value plus {i} (note {j})")
    timings: dict[str, list[float]] = {"on": [], "off": []}
    cpu: dict[str, list[float]] = {"on": [], "off": []}
    for flag in ("on", "off"):
        s = settings.model_copy(update={"anchors": flag == "on"})
        with Engine.open(s, cwd=repo, embedder=emb) as engine:
            for _j, text in enumerate(texts if flag == "on" else [t + " (again)" for t in texts[:200]]):
                t, c = time.perf_counter(), time.process_time()
                r = engine.memorize(text, source="agent", gate="trusted")
                timings[flag].append((time.perf_counter() - t) * 1000)
                cpu[flag].append((time.process_time() - c) * 1000)
                assert r.effect == "applied"
    # The code moves on: 10% of the files edited, 1% renamed, 1% deleted.
    files = git(repo, "ls-files").split()
    rng.shuffle(files)
    for f in files[: n // 10]:
        p = repo / f
        p.write_text(p.read_text().replace("return request.get('v3'", "return request.get('w3'"))
    for f in files[n // 10 : n // 10 + n // 100]:
        git(repo, "mv", f, f.replace(".py", "_renamed.py"))
    for f in files[n // 10 + n // 100 : n // 10 + 2 * (n // 100)]:
        git(repo, "rm", "-q", f)
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=b@x", "-c", "user.name=b", "commit", "-q", "-m", "move on")
    queries = [f"handle {rng.randrange(n)} value v{rng.randrange(8)}" for _ in range(60)]
    cost = recall_cost(settings, repo, emb, queries)
    with Engine.open(settings, cwd=repo, embedder=emb) as engine:
        t = time.perf_counter()
        stale = engine.stale(limit=5000)
        stale_s = time.perf_counter() - t
    shutil.rmtree(work, ignore_errors=True)
    return {"machine": machine(), "files": n, "memories": args.memories, "recall_cost": cost,
            "memorize_p50_ms": {k: round(statistics.median(v), 2) for k, v in timings.items()},
            "memorize_p95_ms": {k: round(sorted(v)[int(len(v) * 0.95) - 1], 2) for k, v in timings.items()},
            "memorize_cpu_p50_ms": {k: round(statistics.median(v), 2) for k, v in cpu.items()},
            "stale": {"memories": len(stale), "seconds": round(stale_s, 2)}}  # fmt: skip


# -- the phrasing suite (issue 26): the eight ways people write about code --------------------------------

PHRASINGS = ["backticked", "parenthesised", "prose", "qualified", "module_fn", "receiver", "class_qualified", "bare"]
PFLAG = _REPOS / "pflag.bundle"
_PERIPHERAL = ("test", "tests/", "testing/", "testdata/", "examples/", "vendor/", "docs/", "conftest.py")
_GO_FUNC = re.compile(r"^func\s+(?:\(\s*\w*\s*\*?\s*(\w+)(?:\[[^\]]*\])?\s*\)\s*)?(\w+)\s*[\[(]", re.M)
_GO_TYPE = re.compile(r"^type\s+(\w+)\s+(?:struct|interface)\b", re.M)


def peripheral(path: str) -> bool:
    base = path.rsplit("/", 1)[-1]
    return base.startswith("test_") or base.endswith("_test.go") or any(
        part in path for part in _PERIPHERAL[1:]) or path.startswith("test")  # fmt: skip


def _go_strip(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return " ".join(text.split())


def _go_body_open(text: str, start: int) -> int:
    """Where the body of the declaration at `start` opens: the first `{` outside parentheses that does
    not belong to an `interface{}` or `struct{}` type in the signature (-1: none before the next line
    that starts a declaration)."""
    depth, j = 0, start
    while j < len(text):
        ch = text[j]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "{" and depth == 0:
            before = text[start:j].rstrip()
            if before.endswith(("interface", "struct")) and not text[start:].startswith("type"):
                j = text.find("}", j)
                if j < 0:
                    return -1
            else:
                return j
        elif ch == "\n" and depth == 0 and text[j + 1 : j + 6] in ("func ", "type ", "var (", "const"):
            return -1
        j += 1
    return -1


def go_truth_defs(source: bytes) -> dict[str, tuple[str, str, str]]:
    """Go definitions by a scanner of its own (not tree-sitter): qualified name -> (kind, normalised text,
    doc comment). Functions/methods run from `func` to their matching brace; types to their closing brace."""
    text = source.decode("utf-8", "replace")
    out: dict[str, tuple[str, str, str]] = {}

    def block(start: int) -> str:
        i = _go_body_open(text, start)
        nl = text.find("\n", start)
        if i < 0:
            return text[start : nl if nl >= 0 else len(text)]  # a declaration without a body
        depth, j = 0, i
        while j < len(text):
            ch = text[j]
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    return text[start : j + 1]
            elif ch in "\"'`":  # skip literals: braces inside strings do not count
                end = text.find(ch, j + 1) if ch == "`" else j + 1
                while ch != "`" and end < len(text) and text[end] != ch:
                    end += 2 if text[end] == "\\" else 1
                j = max(end, j)
            j += 1
        return text[start:]

    def doc(start: int) -> str:
        lines = text[:start].rstrip("\n").splitlines()
        out_lines = []
        while lines and lines[-1].startswith("//"):
            out_lines.insert(0, lines.pop()[2:].strip())
        return " ".join(out_lines)[:120]

    for m in _GO_FUNC.finditer(text):
        name = f"{m.group(1)}.{m.group(2)}" if m.group(1) else m.group(2)
        out.setdefault(name, ("function", _go_strip(block(m.start())), doc(m.start())))
    for m in _GO_TYPE.finditer(text):
        out.setdefault(m.group(1), ("class", _go_strip(block(m.start())), doc(m.start())))
    return out


def py_truth_defs(source: bytes) -> dict[str, tuple[str, str, str]] | None:
    """Python definitions: qualified name -> (kind, tokenize-normalised text, first docstring line)."""
    toks = truth_defs(source)
    if toks is None:
        return None
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    kinds: dict[str, tuple[str, str]] = {}

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + node.name
                kinds.setdefault(name, ("class" if isinstance(node, ast.ClassDef) else "function", _doc(node)))
                if isinstance(node, ast.ClassDef):
                    visit(node.body, name + ".")

    visit(tree.body, "")
    return {q: (kinds[q][0], toks[q], kinds[q][1]) for q in kinds if q in toks}


def _py_node(source: bytes, name: str) -> Any:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    body: list[ast.stmt] = tree.body
    node: Any = None
    for p in name.split("."):
        node = next((n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     and n.name == p), None)  # fmt: skip
        if node is None:
            return None
        body = node.body
    return node


def _py_noann(source: bytes, name: str, docstrings: bool = True) -> str | None:
    """The definition `name` with its annotations (and, `docstrings=False`, its docstrings) removed (ast),
    for telling annotation-only and docstring-only changes."""
    node = _py_node(source, name)
    if node is None:
        return None
    for n in ast.walk(node):
        if isinstance(n, ast.arg):
            n.annotation = None
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            n.returns = None
        if hasattr(n, "body") and isinstance(n.body, list):  # `x: T = v` is `x = v`; a bare `x: T` is nothing
            n.body = [ast.Assign(targets=[b.target], value=b.value, lineno=0) if isinstance(b, ast.AnnAssign) else b
                      for b in n.body if not (isinstance(b, ast.AnnAssign) and b.value is None)] or [ast.Pass()]  # fmt: skip
            if not docstrings and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.body and (
                    isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)
                    and isinstance(n.body[0].value.value, str)):  # fmt: skip
                n.body = n.body[1:] or [ast.Pass()]
    return ast.dump(node)


def _py_minor(old: bytes, new: bytes, name: str, kind: str) -> bool:
    """Truth: a change of `name` that only touches type annotations or docstrings (a class: only the
    annotations of its interface)."""
    if kind == "class":
        a, b = _py_iface(old, name, False), _py_iface(new, name, False)
        return a is not None and a == b
    for docstrings in (True, False):
        a, b = _py_noann(old, name, docstrings), _py_noann(new, name, docstrings)
        if a is not None and a == b:
            return True
    return False


class Sample(NamedTuple):
    path: str
    symbol: str  # qualified name in the file
    kind: str  # "function" | "class"
    doc: str
    module: str  # Python: dotted module; Go: package name


def _module_of(path: str, lang: str, source: bytes) -> str:
    if lang == "go":
        m = re.search(rb"^package\s+(\w+)", source, re.M)
        return m.group(1).decode() if m else ""
    stem = path[:-3].removesuffix("/__init__")
    return stem.replace("/", ".")


def repo_defs(repo: Path, lang: str) -> dict[str, dict[str, tuple[str, str, str]]]:
    """path -> definitions, for every tracked source file of the language at the checked-out commit."""
    ext = ".go" if lang == "go" else ".py"
    out = {}
    for path in git(repo, "ls-files").splitlines():
        if not path.endswith(ext):
            continue
        data = (repo / path).read_bytes()
        d = go_truth_defs(data) if lang == "go" else py_truth_defs(data)
        if d:
            out[path] = d
    return out


def phrase(s: Sample, how: str, lang: str, ambiguous_bare: bool, unique_cq: bool) -> tuple[str, bool] | None:
    """(text, unambiguous) of one phrasing of a sample; None when the phrasing does not apply to it."""
    doc = s.doc.rstrip(".") or "is where this is handled"
    doc = doc[0].lower() + doc[1:] if doc[:1].isupper() and not doc[1:2].isupper() else doc
    is_method = "." in s.symbol
    last = s.symbol.rsplit(".", 1)[-1]
    word = "method" if is_method else ("function" if s.kind == "function" else ("type" if lang == "go" else "class"))
    cls = s.symbol.rsplit(".", 1)[0] if is_method else ""
    if how == "backticked":
        return f"`{s.symbol}` in {s.path}: {doc}.", True
    if how == "parenthesised":
        return f"{s.symbol}() in {s.path}: {doc}.", True
    if how == "prose":
        return f"The {s.symbol} {word} in {s.path} {doc}.", True
    if how == "qualified":
        return f"{s.module}.{s.symbol}: {doc}.", True
    if how == "module_fn":
        if lang == "go":
            if not is_method:
                return None
            return f"github.com/spf13/pflag.(*{cls}).{last}: {doc}.", True
        return f"{s.module}:{s.symbol}: {doc}.", True
    if how == "receiver":
        if not is_method:
            return None
        if lang == "go":
            return f"(*{cls}).{last}: {doc}.", True
        return f"self.{last}() on a {cls}: {doc}.", unique_cq
    if how == "class_qualified":
        if not is_method:
            return None
        return f"{s.symbol}: {doc}.", unique_cq
    return f"{last}: {doc}.", not ambiguous_bare


def _signature(text: str, lang: str) -> str:
    """The signature part of a truth definition: Go up to its body's brace, Python its tokens up to the
    colon that ends the `def` line (decorators included)."""
    if lang == "go":
        i = _go_body_open(text, 0)
        return text[:i] if i >= 0 else text
    toks, depth, seen = text.split("\x1f"), 0, False
    for i, t in enumerate(toks):
        if t == "def":
            seen = True
        depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(t, 0)
        if seen and depth == 0 and t == ":":
            return "\x1f".join(toks[:i])
    return text


def _changed(old: dict[str, tuple[str, str, str]] | None, new: dict[str, tuple[str, str, str]] | None, name: str,
             lang: str = "python") -> bool:  # fmt: skip
    """Truth: did definition `name` change between two versions of its file? A class (struct) by its
    interface: its header and member names (Python; a Go struct: its fields) and its direct members'
    signatures (Go: the methods on it), not their bodies (issue 38)."""
    if old is None or new is None or name not in new or name not in old:
        return True
    if old[name][0] != "class":
        return old[name][1] != new[name][1]
    if old[name][1] != new[name][1]:
        return True

    def members(d: dict[str, tuple[str, str, str]]) -> dict[str, str]:
        prefix = name + "."
        return {q: _signature(v[1], lang) for q, v in d.items() if q.startswith(prefix) and "." not in q[len(prefix) :]}

    return members(old) != members(new)


def _py_iface(source: bytes, name: str, annotations: bool) -> str | None:
    """A class's interface by `ast` (header, members' signatures, attributes' annotations), with or
    without type annotations: for telling annotation-only interface changes."""
    node = _py_node(source, name)
    if not isinstance(node, ast.ClassDef):
        return None

    def sig(f: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
        args = copy.deepcopy(f.args)
        if not annotations:
            for a in ast.walk(args):
                if isinstance(a, ast.arg):
                    a.annotation = None
        returns = ast.dump(f.returns) if annotations and f.returns is not None else ""
        return f"{type(f).__name__} {ast.dump(args)} {[ast.dump(d) for d in f.decorator_list]} {returns}"

    parts = [ast.dump(x) for x in (*node.bases, *node.keywords, *node.decorator_list)]
    for c in node.body:
        if isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef)):
            parts.append(f"{c.name}: {sig(c)}")
        elif isinstance(c, ast.AnnAssign) and isinstance(c.target, ast.Name):
            parts.append(f"{c.target.id}: {ast.dump(c.annotation) if annotations else ''}")
        elif isinstance(c, ast.ClassDef):
            parts.append(f"class {c.name}")
    return "\n".join(sorted(parts))


def phrasings(repo: Path, lang: str, defs: dict[str, dict[str, tuple[str, str, str]]], n: int,
              rng: random.Random) -> tuple[list[Sample], list[tuple[Sample, str, str, bool]]]:  # fmt: skip
    """(n symbols sampled outside tests, (sample, phrasing, text, unambiguous) for each phrasing that applies)."""
    bare: Counter[str] = Counter()  # names defined outside tests, for what counts as unambiguous
    cq: Counter[str] = Counter()
    for path, d in defs.items():
        if peripheral(path):
            continue
        for q in d:
            bare[q.rsplit(".", 1)[-1]] += 1
            cq[q] += 1
    pool = [Sample(path, q, k, doc, _module_of(path, lang, (repo / path).read_bytes()))
            for path, d in sorted(defs.items()) if not peripheral(path)
            for q, (k, _, doc) in d.items() if q.count(".") <= 1 and not q.rsplit(".", 1)[-1].startswith("__")]  # fmt: skip
    samples = rng.sample(pool, min(n, len(pool)))
    out: list[tuple[Sample, str, str, bool]] = []
    for s in samples:
        for how in PHRASINGS:
            p = phrase(s, how, lang, bare[s.symbol.rsplit(".", 1)[-1]] > 1, cq[s.symbol] == 1)
            if p is not None:  # a running number keeps eight phrasings of one fact from being merged as duplicates
                out.append((s, how, f"{p[0]} Note {len(out) + 1}.", p[1]))
    return samples, out


def phrasing_repo(bundle: Path, lang: str, n: int, horizons: list[int], seed: int, work: Path) -> dict[str, Any]:
    from memoryd.engine import Engine
    from memoryd.search.embed import make_embedder
    from memoryd.shared.config import Settings

    repo = work / bundle.stem
    git(work, "clone", "-q", str(bundle), str(repo))
    git(repo, "config", "advice.detachedHead", "false")
    commits = git(repo, "rev-list", "--first-parent", "--reverse", "HEAD").split()
    # pflag has 216 first-parent commits: at most half the history, so that memories are written about its own
    # code (its first commit is Go's flag package, `package flag`)
    horizons = sorted({min(h, len(commits) // 2) for h in horizons})
    si = len(commits) - 1 - max(horizons)
    start = commits[si]
    git(repo, "checkout", "-q", "--detach", "-f", start)
    defs = repo_defs(repo, lang)
    rng = random.Random(seed)
    samples, phrased = phrasings(repo, lang, defs, n, rng)
    settings = Settings(home=work / f"home-{bundle.stem}", embedder="hash")
    emb = make_embedder("hash")
    memories: list[dict[str, Any]] = []
    with Engine.open(settings, cwd=repo, embedder=emb) as engine:
        for s, how, text, unambiguous in phrased:
            r = engine.memorize(text, source="agent", gate="trusted")
            if r.effect != "applied" or r.atom_id is None:
                continue
            refs = set(r.anchors or [])
            memories.append({"id": str(r.atom_id), "how": how, "sample": s, "unambiguous": unambiguous,
                             "intended": f"{s.path}::{s.symbol}" in refs, "anchors": sorted(refs),
                             "note": r.anchor_note})  # fmt: skip
    per: dict[str, dict[str, Any]] = {}
    for how in PHRASINGS:
        rows = [m for m in memories if m["how"] == how and m["unambiguous"]]
        per[how] = {"mentions": len(rows), "anchored": sum(m["intended"] for m in rows),
                    "pct": round(100 * sum(m["intended"] for m in rows) / len(rows), 1) if rows else None,
                    "ambiguous_reported": sum(1 for m in memories if m["how"] == how and not m["unambiguous"]
                                              and "ambiguous" in (m["note"] or ""))}  # fmt: skip
    misses = [f"{m['how']}: {m['sample'].path}::{m['sample'].symbol} -> {m['anchors']} {m['note'] or ''}"
              for m in memories if m["unambiguous"] and not m["intended"]][:15]  # fmt: skip
    # End to end: every symbol memory, whatever it got anchored to, against the truth of its symbol.
    e2e: dict[int, Counter[str]] = {}
    minor_flags: dict[int, Counter[str]] = {}
    wrong: list[str] = []
    old_src = {s.path: (repo / s.path).read_bytes() for s in samples}
    old_defs = {p: defs.get(p) for p in old_src}
    for h in horizons:
        git(repo, "checkout", "-q", "--detach", "-f", commits[si + h])
        c: Counter[str] = Counter()
        mc: Counter[str] = Counter()
        new_src = {p: (repo / p).read_bytes() if (repo / p).exists() else None for p in old_src}
        new_defs = {
            p: (None if b is None else (go_truth_defs(b) if lang == "go" else py_truth_defs(b)))
            for p, b in new_src.items()
        }
        with Engine.open(settings, cwd=repo, embedder=emb) as engine:
            fresh = engine._anchoring.code_changes([m["id"] for m in memories])
            for m in memories:
                s = m["sample"]
                truth = _changed(old_defs[s.path], new_defs[s.path], s.symbol, lang)
                new_here = new_defs[s.path]
                minor = bool(truth and lang == "python" and new_src[s.path] is not None and new_here
                             and s.symbol in new_here
                             and _py_minor(old_src[s.path], new_src[s.path] or b"", s.symbol, s.kind))  # fmt: skip
                got = fresh.get(m["id"], ("none", []))
                flagged = got[0] == "code_changed"
                if minor:  # annotation-only: must not be stale, and must be reported as such
                    mc["changes"] += 1
                    mc["flagged_stale"] += flagged
                    mc["reported_separately"] += any(
                        ch.kind == "symbol_changed" and ch.aspect in MINOR for ch in got[1]
                    )
                    continue
                verdict = "tp" if truth and flagged else "fp" if flagged else "fn" if truth else "tn"
                c[verdict] += 1
                if m["unambiguous"]:
                    c["unambiguous_" + verdict] += 1
                if verdict in ("fp", "fn") and len(wrong) < 12:
                    wrong.append(f"+{h} {verdict} {m['how']} {s.path}::{s.symbol} anchors={m['anchors']} "
                                 f"changes={[ch.detail for ch in got[1]][:3]}")  # fmt: skip
        e2e[h] = c
        minor_flags[h] = mc
    e2e_out = {}
    for h, c in e2e.items():
        p = c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] else None
        r = c["tp"] / (c["tp"] + c["fn"]) if c["tp"] + c["fn"] else None
        u = {k: c[f"unambiguous_{k}"] for k in ("tp", "fp", "fn")}
        up = u["tp"] / (u["tp"] + u["fp"]) if u["tp"] + u["fp"] else None
        ur = u["tp"] / (u["tp"] + u["fn"]) if u["tp"] + u["fn"] else None
        e2e_out[h] = {**{k: v for k, v in c.items() if not k.startswith("unambiguous_")},
                      "precision": None if p is None else round(p, 3), "recall": None if r is None else round(r, 3),
                      "unambiguous_precision": None if up is None else round(up, 3),
                      "unambiguous_recall": None if ur is None else round(ur, 3),
                      "annotation_or_docstring_only": dict(minor_flags[h])}  # fmt: skip
    edits = edit_pass(repo, settings, emb, memories, lang, rng, start)
    return {"bundle": bundle.name, "lang": lang, "commits": len(commits), "start": si, "samples": len(samples),
            "memories": len(memories), "per_phrasing": per, "misses": misses, "e2e": e2e_out, "e2e_wrong": wrong, "edits": edits}  # fmt: skip


def edit_pass(repo: Path, settings: Any, emb: Any, memories: list[dict[str, Any]], lang: str,
              rng: random.Random, start: str) -> dict[str, Any]:  # fmt: skip
    """Edits made here, one at a time in the working tree, on symbols memories are anchored to:
    rename (the same body under a new name, in its file), move (the same definition to a new file),
    false move (the definition deleted, a different one of the same name added in a test file), and,
    for Python, annotation-only (a parameter gets a type hint)."""
    from memoryd.engine import Engine

    git(repo, "checkout", "-q", "--detach", "-f", start)  # the commit the anchors were taken at
    git(repo, "clean", "-q", "-fdx")
    seen: set[tuple[str, str]] = set()
    targets = []
    for m in memories:
        s = m["sample"]
        if m["intended"] and (s.path, s.symbol) not in seen and (repo / s.path).exists():
            seen.add((s.path, s.symbol))
            targets.append(m)
    rng.shuffle(targets)
    out: Counter[str] = Counter()
    rows: list[str] = []
    with Engine.open(settings, cwd=repo, embedder=emb) as engine:
        checker = engine._anchoring.checker()
        assert checker is not None
        for m in targets[:40]:
            s = m["sample"]
            anchors = [a for a in engine.store.anchors_of([m["id"]]).get(m["id"], []) if a.symbol == s.symbol]
            if not anchors or s.kind != "function":
                continue
            a = anchors[0]
            src = (repo / s.path).read_bytes().decode("utf-8")
            d = (go_truth_defs if lang == "go" else lambda b: py_truth_defs(b) or {})(src.encode())
            if s.symbol not in d:
                continue  # changed since the memory was written: not a clean edit
            span = _def_span(src, s.symbol, lang)
            if span is None:
                continue
            i, j = span
            last = s.symbol.rsplit(".", 1)[-1]
            new_name = last + "_renamed" if lang == "python" else last + "Renamed"
            definition = src[i:j]
            renamed_def = re.sub(
                rf"((?:def|func)\s+(?:\([^)]*\)\s*)?){re.escape(last)}\b", rf"\g<1>{new_name}", definition, count=1
            )  # the definition's own name, not a decorator's string
            trials = {
                "rename": {s.path: src[:i] + renamed_def + src[j:]},
                "move": {s.path: src[:i] + src[j:], _new_file(s.path, lang, "moved"): _wrap(definition, src, lang, s)},
                "false_move": {s.path: src[:i] + src[j:],
                               _new_file(s.path, lang, "test_other" if lang == "python" else "other_test"):
                               _wrap(_other(definition, last, lang), src, lang, s)},
            }  # fmt: skip
            if lang == "python":
                ann = _annotate(definition)
                if ann is not None:
                    trials["annotation"] = {s.path: src[:i] + ann + src[j:]}
            for kind, files in trials.items():
                for path, text in files.items():
                    (repo / path).parent.mkdir(parents=True, exist_ok=True)
                    (repo / path).write_text(text)
                if kind != "rename" and kind != "annotation":
                    git(repo, "add", "-N", *files)  # new files are seen by the drift check's grep either way
                ch = checker.check_anchor(a, set(), {a.path})
                got = f"{ch.kind}:{ch.aspect or ''}" if ch else "current"
                ok = {
                    "rename": ch is not None and ch.kind == "symbol_renamed" and ch.new_symbol is not None
                              and ch.new_symbol.endswith(new_name),
                    "move": ch is not None and ch.kind == "symbol_moved" and ch.to == _new_file(s.path, lang, "moved"),
                    "false_move": ch is not None and ch.kind != "symbol_moved",
                    "annotation": ch is not None and ch.kind == "symbol_changed" and ch.aspect == "annotation_only",
                }[kind]  # fmt: skip
                out[f"{kind}_trials"] += 1
                out[f"{kind}_ok"] += ok
                if kind == "false_move" and ch is not None and ch.kind == "symbol_moved":
                    out["false_moves"] += 1
                if not ok:
                    rows.append(f"{kind} {s.path}::{s.symbol}: {got}")
                git(repo, "reset", "-q")
                git(repo, "checkout", "-q", "-f", start)
                git(repo, "clean", "-q", "-fdx")
    followed = (out["rename_ok"] + out["move_ok"]) / max(1, out["rename_trials"] + out["move_trials"])
    return {**dict(out), "followed": round(followed, 3), "failures": rows[:12]}


def _new_file(path: str, lang: str, stem: str) -> str:
    d = path.rsplit("/", 1)[0] + "/" if "/" in path else ""
    return f"{d}{stem}.go" if lang == "go" else f"{d}{stem}.py"


def _wrap(definition: str, src: str, lang: str, s: Sample) -> str:
    if lang == "go":
        m = re.search(r"^package\s+\w+", src, re.M)
        return f"{m.group(0) if m else 'package main'}\n\n{definition}\n"
    import textwrap

    body = textwrap.dedent(definition)
    if definition[:1] in (" ", "\t"):  # a method: to a class of the same name (a class split across files)
        return f"class {s.symbol.rsplit('.', 1)[0]}:\n{textwrap.indent(body, '    ')}\n"
    return body + "\n"


def _other(definition: str, last: str, lang: str) -> str:
    """A different definition of the same name (a test helper, a stub)."""
    if lang == "go":
        head = definition.split("{", 1)[0]
        return head + '{\n\tpanic("stub")\n}\n'
    first = definition.lstrip().splitlines()[0]
    indent = definition[: len(definition) - len(definition.lstrip())]
    return f"{indent}{first.strip()}\n{indent}    raise NotImplementedError('a test stub of {last}')\n"


def _def_span(src: str, symbol: str, lang: str) -> tuple[int, int] | None:
    """(start, end) character offsets of a definition in the source (with its decorators)."""
    if lang == "go":
        for m in _GO_FUNC.finditer(src):
            name = f"{m.group(1)}.{m.group(2)}" if m.group(1) else m.group(2)
            if name == symbol:
                depth, j, k = 0, _go_body_open(src, m.start()), m.start()
                if j < 0:
                    return None
                while j < len(src):
                    depth += {"{": 1, "}": -1}.get(src[j], 0)
                    if depth == 0:
                        return k, j + 1
                    j += 1
        return None
    tree = ast.parse(src)
    body: list[ast.stmt] = tree.body
    node: Any = None
    for p in symbol.split("."):
        node = next((n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     and n.name == p), None)  # fmt: skip
        if node is None:
            return None
        body = node.body
    lines = src.splitlines(keepends=True)
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    start = sum(len(x) for x in lines[: first - 1])
    end = sum(len(x) for x in lines[: node.end_lineno])
    return start, end


def _annotate(definition: str) -> str | None:
    """The definition with a type hint added to its first unannotated parameter (not self/cls)."""
    m = re.search(r"def\s+\w+\s*\(\s*(?:(?:self|cls)\s*,\s*)?([A-Za-z_]\w*)(?=\s*[,)=])", definition)
    if m is None or m.group(1) in ("self", "cls"):
        return None
    k = m.end(1)
    rest = definition[k:]
    if rest.lstrip().startswith("="):
        return definition[:k] + ": object" + " " + rest.lstrip()[:1] + " " + rest.lstrip()[1:].lstrip()
    return definition[:k] + ": object" + rest


def speed_inputs(bundle: Path, lang: str, n: int, horizon: int, seed: int,
                 work: Path) -> tuple[list[str], list[str], str, str, int]:  # fmt: skip
    """(the phrasing suite's texts, queries about the same symbols, start and end commit, horizon) for
    `drift_speed.compare`: the same samples `phrasing_repo` writes about with this seed."""
    repo = work / f"inputs-{bundle.stem}"
    git(work, "clone", "-q", str(bundle), str(repo))
    commits = git(repo, "rev-list", "--first-parent", "--reverse", "HEAD").split()
    horizon = min(horizon, len(commits) - 1)
    si = len(commits) - 1 - horizon
    git(repo, "-c", "advice.detachedHead=false", "checkout", "-q", "--detach", "-f", commits[si])
    samples, phrased = phrasings(repo, lang, repo_defs(repo, lang), n, random.Random(seed))
    queries = [f"{s.symbol.rsplit('.', 1)[-1].replace('_', ' ')} {s.doc}".strip() for s in samples[:60]]
    shutil.rmtree(repo, ignore_errors=True)
    return [t for _, _, t, _ in phrased], queries, commits[si], commits[si + horizon], horizon


def phrasing(args: argparse.Namespace) -> dict[str, Any]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import drift_speed

    work = Path(tempfile.mkdtemp(prefix="memoryd-phrasing-"))
    started = time.perf_counter()
    repos = []
    try:
        versions = [drift_speed.export_src(rev, work) for rev in args.before]
        versions.append((drift_speed.THIS, Path(__file__).resolve().parents[1] / "src"))
        for bundle, lang in ((args.bundle, "python"), (args.go_bundle, "go")):
            if not args.speed_only:
                repos.append(phrasing_repo(bundle, lang, args.symbols, args.horizons, args.seed, work))
            else:
                repos.append({"bundle": bundle.name, "lang": lang})
            print(f"  {bundle.name}: {time.perf_counter() - started:.0f}s", file=sys.stderr)
            if args.before or args.speed_only:
                texts, queries, start, end, h = speed_inputs(bundle, lang, args.symbols, max(args.horizons),
                                                             args.seed, work)  # fmt: skip
                repos[-1]["speed"] = drift_speed.compare(bundle, versions, texts, queries, start, end, work,
                                                         reps=args.reps)  # fmt: skip
                repos[-1]["speed"]["horizon"] = h
                print(f"  {bundle.name} speed: {time.perf_counter() - started:.0f}s", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"machine": machine(), "phrasing": repos, "seconds": round(time.perf_counter() - started)}


def show_phrasing(result: dict[str, Any]) -> None:
    m = result["machine"]
    print(f"machine: {m['nproc']} cpus, {m['ram_mb']} MB, {m['date']}; {result['seconds']}s")
    for r in result["phrasing"]:
        if "speed" in r:
            import drift_speed

            drift_speed.show(r["bundle"], r["speed"]["horizon"], r["speed"])
        if "per_phrasing" not in r:
            continue
        print(f"\n{r['bundle']} ({r['lang']}): {r['samples']} symbols at commit {r['start']}/{r['commits']}, "
              f"{r['memories']} memories")  # fmt: skip
        print(f"{'phrasing':<16} {'mentions':>8} {'anchored':>8} {'%':>6} {'ambiguous reported':>19}")
        for how, v in r["per_phrasing"].items():
            print(f"{how:<16} {v['mentions']:>8} {v['anchored']:>8} {v['pct']!s:>6} {v['ambiguous_reported']:>19}")
        for h, v in r["e2e"].items():
            print(f"end to end +{h}: {v}")
        print(f"edits: {r['edits']}")
        for w in r["e2e_wrong"]:
            print(f"  end to end wrong: {w}")
        for miss in r["misses"]:
            print(f"  missed: {miss}")


def show(result: dict[str, Any]) -> None:
    m = result["machine"]
    print(f"machine: {m['nproc']} cpus, {m['ram_mb']} MB, load {tuple(round(x, 1) for x in m['load'])}, {m['date']}")
    if "table" in result:
        print(f"{result['commits']} commits; {result['memories']} memories at {len(result['starts'])} commits; "
              f"horizons {result['horizons']}; anchored as intended {result['anchored']}")  # fmt: skip
        print(f"{'kind':<20} {'truth':>6} {'memoryd':>8} {'precision':>10} {'recall':>8}")
        for k, v in result["table"].items():
            if isinstance(v, dict):
                print(f"{k:<20} {v['truth']:>6} {v['system']:>8} {v['precision']!s:>10} {v['recall']!s:>8}")
        print(
            f"verdicts: {result['table']['verdicts']}; disagreements (truth→memoryd): {result['table']['disagreements']}"
        )
        print(f"renames among the verdicts: {result['renames']}")
        print("renames followed (real ones of the whole history, and made here with edits):")
        for k, v in result["rename_pass"].items():
            if k != "rows":
                print(f"  {k:<30} {v}")
        for r in result["rename_pass"].get("rows", []):
            if r["system"] != "file_renamed" or r["to"] != r["new"]:
                print(
                    f"  not followed: {r['old']} -> {r['new']} ({r['kind']}, {r['edit']}): {r['system']} {r['to'] or ''}"
                )
        print(f"memories drifted after h commits (memoryd / truth): {result['drift_share']}")
    else:
        print(f"{result['files']} files, {result['memories']} memories; memorize p50 {result['memorize_p50_ms']} "
              f"p95 {result['memorize_p95_ms']} cpu p50 {result['memorize_cpu_p50_ms']}; stale: {result['stale']}")  # fmt: skip
    print(f"recall cost: {result['recall_cost']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", type=Path, default=BUNDLE)
    ap.add_argument("--samples", type=int, default=12, help="commits at which memories are written")
    ap.add_argument("--per-commit", type=int, default=40, help="memories written at each of them")
    ap.add_argument("--horizons", type=int, nargs="+", default=[10, 50, 100, 300])
    ap.add_argument("--synthetic", type=int, default=0, help="N: the synthetic N-file repository instead")
    ap.add_argument("--memories", type=int, default=1000, help="synthetic mode: memories written")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--phrasing", action="store_true", help="the phrasing suite (issue 26) on both bundles")
    ap.add_argument("--go-bundle", type=Path, default=PFLAG)
    ap.add_argument("--symbols", type=int, default=60, help="phrasing suite: symbols sampled per repository")
    ap.add_argument(
        "--before",
        nargs="*",
        default=[],
        metavar="REV",
        help="phrasing suite: also time stale and recall at the last horizon with these versions "
        "of memoryd (git revisions) beside this checkout, in one run (bench/drift_speed.py)",
    )
    ap.add_argument("--speed-only", action="store_true", help="phrasing suite: the timings only")
    ap.add_argument("--reps", type=int, default=3, help="phrasing suite timings: processes per version")
    args = ap.parse_args()
    if args.phrasing:
        if args.horizons == [10, 50, 100, 300]:
            args.horizons = [10, 100]
        result = phrasing(args)
        show_phrasing(result)
        if args.json:
            args.json.write_text(json.dumps(result, indent=2, default=str))
        return
    result = synthetic(args) if args.synthetic else history(args)
    show(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main()
