"""memoryd side by side with the memory servers a user would pick instead, all over MCP stdio.

Peers, each on its own offline defaults and driven exactly like memoryd (the Python `mcp` client
SDK, one stdio server process per system, the system's natural tools):

- memoryd (`memoryd-mcp`, profile memoryd): `mem_save` per memory, `mem_search(top_k=10)`. A save
  the DURA gate holds (`pending`) is approved with one `mem_promote` after all saves; a save it
  rejects is stored with `mem_capture_passive` (the trusted-source tool) so every system holds the
  same memories. Both counts are printed.
- server-memory: Anthropic's reference `@modelcontextprotocol/server-memory` (pinned in
  bench/peer/package.json, `npm ci --prefix bench/peer` when missing), its file in a temp dir via
  MEMORY_FILE_PATH. One `create_entities` call per memory (name = memory id, entityType "memory",
  the text as the one observation); `search_nodes(query)`. search_nodes is a case-insensitive
  substring match of the whole query over names, types and observations, returned in storage
  order (no ranking): that is the row "server-memory". The row "server-memory per-word OR" is
  ours, not the server's: the query split into words (\\w+ runs, so a Chinese sentence stays one
  word), one search_nodes call per word, entities ranked by how many words hit them.
- basic-memory (PyPI, pinned below) in its own venv under bench/.peer-venv (created with a
  Python >= 3.12, which it requires): `write_note(title=id, content=text)` per memory,
  `search_notes(query, page_size=10)` with no search_type, i.e. its default. Isolated with
  HOME / BASIC_MEMORY_CONFIG_DIR / BASIC_MEMORY_HOME in a temp dir; BASIC_MEMORY_AUTO_UPDATE=false
  so its stdio server does not try to upgrade itself in the background. What its semantic search
  did on this host is printed from its own log (see bench/README.md).

Per system: start-to-initialize time, save latency (p50/p95, first), query latency (p50/p95,
first), peak RSS of the server process (VmHWM, plus its child processes), tool errors;
recall@1/5/10 (any relevant id in the top k) and MRR@10 overall and per slice.

    .venv/bin/python bench/peer.py [--systems memoryd,server-memory,basic-memory] [--quick]
                                   [--locomo conv-26] [--memoryd-src DIR] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import psutil
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

HERE = Path(__file__).resolve().parent
PEER_DIR = HERE / "peer"
SERVER_MEMORY_JS = PEER_DIR / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
BM_VENV = HERE / ".peer-venv"
BM_PIN = "basic-memory==0.24.1"
MEMORYD_MCP = str(Path(sys.executable).with_name("memoryd-mcp"))
SYSTEMS = ("memoryd", "server-memory", "basic-memory")
XLING = ("xling_zh2en", "xling_en2zh")
K = 10
# memoryd's mem_save types for the kinds in data/bilingual.jsonl (anything else is a fact).
MEM_TYPE = {"decision": "decision", "preference": "preference", "warning": "warning", "command": "playbook"}
CHINESE = {
    "memoryd": "yes: zh bigrams with Traditional folded to Simplified, multilingual embeddings (cross-lingual)",
    "server-memory": "only as a verbatim substring: no tokenising, no zh-Hant/zh-Hans folding, no semantics",
    "server-memory per-word OR": "a Chinese run without spaces is one 'word', so still a verbatim substring",
    "basic-memory": "lexical: CJK unigrams + bigrams in its FTS5 index; no zh-Hant/zh-Hans folding; "
                    "its default embedding model (bge-small-en-v1.5) is English-only",
}  # fmt: skip


# --------------------------------------------------------------------------- installs


def ensure_server_memory() -> str:
    if not SERVER_MEMORY_JS.exists():
        print("installing @modelcontextprotocol/server-memory: npm ci --prefix bench/peer", flush=True)
        subprocess.run(["npm", "ci", "--prefix", str(PEER_DIR), "--no-audit", "--no-fund"], check=True)
    lock = json.loads((PEER_DIR / "package-lock.json").read_text())
    return lock["packages"]["node_modules/@modelcontextprotocol/server-memory"]["version"]


def _python312() -> str:
    pyenv = sorted(Path.home().glob(".pyenv/versions/3.1[23]*/bin/python3"))
    for cand in ("python3.13", "python3.12", *(str(p) for p in pyenv)):
        exe = shutil.which(cand) or (cand if Path(cand).exists() else None)
        check = [exe, "-c", "import sys; sys.exit(sys.version_info < (3, 12))"] if exe else []
        if exe and subprocess.run(check, check=False).returncode == 0:
            return exe
    raise SystemExit("basic-memory needs Python >= 3.12 and none was found (python3.12 / python3.13 / pyenv)")


def ensure_basic_memory() -> str:
    exe = BM_VENV / "bin" / "basic-memory"
    if not exe.exists():
        py = _python312()
        print(f"installing {BM_PIN} into bench/.peer-venv with {py}", flush=True)
        subprocess.run([py, "-m", "venv", str(BM_VENV)], check=True)
        subprocess.run([str(BM_VENV / "bin" / "pip"), "install", "-q", BM_PIN], check=True)
    code = "import importlib.metadata as m, sys; print(m.version('basic-memory'), sys.version.split()[0])"
    out = subprocess.run([str(BM_VENV / "bin" / "python"), "-c", code],
                         capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    return f"{out[0]} (Python {out[1]})"


# --------------------------------------------------------------------------- process stats


def _vm_hwm_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def peak_rss_mb(proc: psutil.Process) -> tuple[float, float]:
    """VmHWM of the server process, and the sum of its live descendants' (MB)."""
    kids = 0
    try:
        kids = sum(_vm_hwm_kb(c.pid) for c in proc.children(recursive=True))
    except psutil.Error:
        pass
    return _vm_hwm_kb(proc.pid) / 1024, kids / 1024


def tool_json(r: Any) -> Any:
    """A tool result's structured content, else its text parsed as JSON, else the text."""
    if r.structured_content is not None:
        return r.structured_content
    text = " ".join(getattr(c, "text", "") for c in r.content)
    try:
        return json.loads(text)
    except ValueError:
        return text


# --------------------------------------------------------------------------- systems


class System:
    """One MCP server under test: how to start it, save one memory, run one query."""

    name = ""
    variants: tuple[str, ...] = ()  # extra result rows computed from the same server

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.errors: dict[str, int] = {}
        self.notes: dict[str, Any] = {}

    def params(self) -> StdioServerParameters:
        raise NotImplementedError

    async def save(self, s: ClientSession, mem_id: str, text: str, kind: str) -> None:
        raise NotImplementedError

    async def after_saves(self, s: ClientSession) -> None:
        pass

    async def search(self, s: ClientSession, query: str, variant: str | None = None) -> list[str]:
        raise NotImplementedError

    def error(self, what: str, result: Any = None) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1
        if result is not None and what not in self.notes.setdefault("first_error", {}):
            self.notes["first_error"][what] = " ".join(getattr(c, "text", "") for c in result.content)[:300]

    def finish(self) -> None:
        pass


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "BASIC_MEMORY_", "MEMORY_FILE"))}
    env.pop("ANTHROPIC_API_KEY", None)
    return {**env, **extra}


class Memoryd(System):
    name = "memoryd"

    def __init__(self, tmp: Path, embedder: str | None, src: str | None) -> None:
        super().__init__(tmp)
        self.embedder = embedder
        self.src = src
        self.atom_to_id: dict[str, str] = {}
        self.pending: list[int] = []
        self.pending_atoms: dict[int, tuple[str, str]] = {}
        self.status: dict[str, int] = {}

    def params(self) -> StdioServerParameters:
        (self.tmp / "home").mkdir()
        (self.tmp / "project").mkdir()
        extra = {"MEMORYD_HOME": str(self.tmp / "home")}
        if self.embedder:
            extra["MEMORYD_EMBEDDER"] = self.embedder
        if self.src:  # e.g. a `git archive HEAD` copy while the checkout's src/ is being edited
            extra["PYTHONPATH"] = os.pathsep.join(p for p in (self.src, os.environ.get("PYTHONPATH")) if p)
        return StdioServerParameters(
            command=MEMORYD_MCP, args=[], cwd=str(self.tmp / "project"), env=_clean_env(**extra)
        )

    async def save(self, s: ClientSession, mem_id: str, text: str, kind: str) -> None:
        r = await s.call_tool("mem_save", {"content": text, "type": MEM_TYPE.get(kind, "fact")})
        out = tool_json(r)
        if r.is_error or not isinstance(out, dict):
            self.error("mem_save", r)
            return
        st = out["status"]
        self.status[st] = self.status.get(st, 0) + 1
        if st == "rejected":
            r = await s.call_tool("mem_capture_passive", {"content": text, "source": "bench-import",
                                                          "type": MEM_TYPE.get(kind, "fact")})  # fmt: skip
            out = tool_json(r)
            if r.is_error or not isinstance(out, dict) or not out.get("memory_id"):
                self.error("mem_capture_passive", r)
                return
        if st == "pending":
            self.pending.append(int(out["promotion_id"]))
        if out.get("memory_id"):
            self.atom_to_id.setdefault(out["memory_id"], mem_id)  # duplicates keep the first id

    async def after_saves(self, s: ClientSession) -> None:
        if self.pending:
            t = time.perf_counter()
            r = await s.call_tool("mem_promote", {"promotion_ids": self.pending})
            self.notes["mem_promote_ms"] = (time.perf_counter() - t) * 1000
            out = tool_json(r)
            if r.is_error:
                self.error("mem_promote", r)
            self.notes["promoted"] = len(out.get("promoted", [])) if isinstance(out, dict) else 0
        self.notes["mem_save_status"] = dict(self.status)

    async def search(self, s: ClientSession, query: str, variant: str | None = None) -> list[str]:
        r = await s.call_tool("mem_search", {"query": query, "top_k": K})
        out = tool_json(r)
        if r.is_error or not isinstance(out, dict):
            self.error("mem_search", r)
            return []
        return [self.atom_to_id.get(x["memory_id"], "?") for x in out["results"]]


_WORD = re.compile(r"\w+", re.UNICODE)


class ServerMemory(System):
    name = "server-memory"
    variants = ("server-memory per-word OR",)

    def params(self) -> StdioServerParameters:
        return StdioServerParameters(command="node", args=[str(SERVER_MEMORY_JS)], cwd=str(self.tmp),
                                     env=_clean_env(MEMORY_FILE_PATH=str(self.tmp / "memory.jsonl")))  # fmt: skip

    async def save(self, s: ClientSession, mem_id: str, text: str, kind: str) -> None:
        r = await s.call_tool(
            "create_entities", {"entities": [{"name": mem_id, "entityType": "memory", "observations": [text]}]}
        )
        if r.is_error:
            self.error("create_entities", r)

    async def _nodes(self, s: ClientSession, query: str) -> list[str]:
        r = await s.call_tool("search_nodes", {"query": query})
        out = tool_json(r)
        if r.is_error or not isinstance(out, dict):
            self.error("search_nodes", r)
            return []
        return [e["name"] for e in out.get("entities", [])]

    async def search(self, s: ClientSession, query: str, variant: str | None = None) -> list[str]:
        if variant is None:
            return (await self._nodes(s, query))[:K]
        hits: dict[str, int] = {}
        for w in dict.fromkeys(w.lower() for w in _WORD.findall(query)):
            for name in await self._nodes(s, w):
                hits[name] = hits.get(name, 0) + 1
        return sorted(hits, key=lambda n: -hits[n])[:K]  # stable: ties stay in storage order


class BasicMemory(System):
    name = "basic-memory"

    def __init__(self, tmp: Path) -> None:
        super().__init__(tmp)
        self.title_to_id: dict[str, str] = {}
        self.cfg = tmp / "config"

    def params(self) -> StdioServerParameters:
        (self.tmp / "home").mkdir()
        env = _clean_env(HOME=str(self.tmp / "home"), BASIC_MEMORY_CONFIG_DIR=str(self.cfg),
                         BASIC_MEMORY_HOME=str(self.tmp / "notes"), BASIC_MEMORY_AUTO_UPDATE="false")  # fmt: skip
        return StdioServerParameters(
            command=str(BM_VENV / "bin" / "basic-memory"), args=["mcp"], cwd=str(self.tmp), env=env
        )

    async def save(self, s: ClientSession, mem_id: str, text: str, kind: str) -> None:
        title = re.sub(r"[^\w-]", "-", mem_id)
        self.title_to_id[title] = mem_id
        r = await s.call_tool(
            "write_note", {"title": title, "content": text, "directory": "memories", "output_format": "json"}
        )
        out = tool_json(r)
        if r.is_error or not isinstance(out, dict):
            self.error("write_note", r)

    async def search(self, s: ClientSession, query: str, variant: str | None = None) -> list[str]:
        r = await s.call_tool("search_notes", {"query": query, "page_size": K, "output_format": "json"})
        out = tool_json(r)
        if r.is_error or not isinstance(out, dict):
            self.error("search_notes", r)  # it answers a failed search with a guidance text, not an error
            return []
        res = out.get("result", out).get("results", [])
        return [self.title_to_id.get(x.get("title", ""), "?") for x in res]

    def finish(self) -> None:
        log = self.cfg / "basic-memory.log"
        text = log.read_text(errors="replace") if log.exists() else ""
        self.notes["semantic_log"] = sorted(
            {m.group(0)[:240] for m in re.finditer(r"(Semantic search[^\n]*|[^\n]*fastembed[^\n]*)", text)}
        )
        self.notes["log_errors"] = len(re.findall(r"\| ERROR ", text))


# --------------------------------------------------------------------------- run


async def run_system(sys_: System, mems: Sequence[dict[str, Any]],
                     queries: Sequence[dict[str, Any]]) -> dict[str, Any]:  # fmt: skip
    """Start one server, save every memory, run every query (and variant), then stop it."""
    with (sys_.tmp / "server-stderr.log").open("w") as errlog:
        out = await _session(sys_, mems, queries, errlog)
    sys_.finish()
    out["errors"] = sys_.errors
    out["notes"] = sys_.notes
    return out


async def _session(sys_: System, mems: Sequence[dict[str, Any]], queries: Sequence[dict[str, Any]],
                   errlog: Any) -> dict[str, Any]:  # fmt: skip
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    out: dict[str, Any] = {"system": sys_.name}
    async with AsyncExitStack() as stack:
        t = time.perf_counter()
        read, write = await stack.enter_async_context(stdio_client(sys_.params(), errlog=errlog))
        s = await stack.enter_async_context(ClientSession(read, write))
        await s.initialize()
        out["start_to_init_ms"] = (time.perf_counter() - t) * 1000
        new = [p for p in psutil.Process().children(recursive=False) if p.pid not in before]
        proc = new[0] if new else None
        save_ms = []
        for m in mems:
            t = time.perf_counter()
            await sys_.save(s, m["id"], m["text"], m.get("kind", ""))
            save_ms.append((time.perf_counter() - t) * 1000)
        await sys_.after_saves(s)
        out["save_ms"] = save_ms
        for name in (None, *sys_.variants):
            label = name or sys_.name
            rows, lat = [], []
            for q in queries:
                t = time.perf_counter()
                ranked = await sys_.search(s, q["text"], name)
                lat.append((time.perf_counter() - t) * 1000)
                rows.append(
                    {
                        "id": q["id"],
                        "slice": q["slice"],
                        "ranked": ranked,
                        "m": C.rank_metrics(ranked, set(q["relevant"])),
                    }
                )
            out.setdefault("rows", {})[label] = rows
            out.setdefault("query_ms", {})[label] = lat
        out["peak_rss_mb"], out["children_peak_rss_mb"] = peak_rss_mb(proc) if proc else (float("nan"), 0.0)
    return out


def summarise(results: list[dict[str, Any]], groups: list[tuple[str, set[str]]]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for res in results:
        for label, rows in res["rows"].items():
            lat = res["query_ms"][label]
            summary[label] = {
                "slices": {g: {"n": len(sub), **C.mean_metrics([r["m"] for r in sub])}
                           for g, sl in groups if (sub := [r for r in rows if r["slice"] in sl])},
                "query_ms": {"p50": C.med(lat), "p95": C.pct(lat, 95), "first": lat[0] if lat else None},
                "save_ms": {"p50": C.med(res["save_ms"]), "p95": C.pct(res["save_ms"], 95), "first": res["save_ms"][0]},
                "start_to_init_ms": res["start_to_init_ms"], "peak_rss_mb": res["peak_rss_mb"],
                "children_peak_rss_mb": res["children_peak_rss_mb"], "errors": res["errors"], "notes": res["notes"],
                "empty_results": sum(1 for r in rows if not r["ranked"]),
            }  # fmt: skip
    return summary


def print_tables(title: str, summary: dict[str, Any], groups: list[tuple[str, set[str]]], n_queries: int) -> None:
    labels = list(summary)
    n_overall = summary[labels[0]]["slices"]["overall"]["n"]
    apart = f"; {n_queries - n_overall} adversarial apart" if n_overall != n_queries else ""
    print(f"\n## {title}: overall ({n_overall} queries{apart}; 'no result' counts every query)")
    print(C.table(["system", "R@1", "R@5", "R@10", "MRR", "no result", "tool errors"],
                  [[lab, *(C.fmt(summary[lab]["slices"]["overall"][m]) for m in ("any@1", "any@5", "any@10", "mrr")),
                    summary[lab]["empty_results"], sum(summary[lab]["errors"].values())] for lab in labels]))  # fmt: skip
    for metric in ("any@5", "mrr"):
        print(f"\n## {title}: {metric.replace('any', 'recall')} per slice")
        rows = []
        for g, _ in groups:
            if g == "overall" or g not in summary[labels[0]]["slices"]:
                continue
            rows.append(
                [g, summary[labels[0]]["slices"][g]["n"], *(C.fmt(summary[lab]["slices"][g][metric]) for lab in labels)]
            )
        print(C.table(["slice", "n", *labels], rows))
    print(f"\n## {title}: latency (ms) and memory, one MCP stdio session per server")
    print(C.table(["system", "start→init", "save p50", "save p95", "first save", "query p50", "query p95", "first query", "peak RSS MB"],
                  [[lab, C.fmt(x["start_to_init_ms"], 0), C.fmt(x["save_ms"]["p50"], 1), C.fmt(x["save_ms"]["p95"], 1),
                    C.fmt(x["save_ms"]["first"], 0), C.fmt(x["query_ms"]["p50"], 1), C.fmt(x["query_ms"]["p95"], 1),
                    C.fmt(x["query_ms"]["first"], 0),
                    C.fmt(x["peak_rss_mb"], 0) + (f" (+{x['children_peak_rss_mb']:.0f} children)" if x["children_peak_rss_mb"] else "")]
                   for lab, x in summary.items()]))  # fmt: skip
    for lab, x in summary.items():
        if x["notes"] or x["errors"]:
            print(f"- {lab}: errors {x['errors']}; {json.dumps(x['notes'], ensure_ascii=False)}")


def make_systems(names: Sequence[str], tmp: Path, embedder: str | None, src: str | None) -> list[System]:
    out: list[System] = []
    for n in names:
        d = tmp / n
        d.mkdir()
        out.append(
            Memoryd(d, embedder, src) if n == "memoryd" else ServerMemory(d) if n == "server-memory" else BasicMemory(d)
        )
    return out


def load_bilingual(quick: bool) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[tuple[str, set[str]]]]:
    import bilingual

    mems, queries = bilingual.load(bilingual.DATA)
    if quick:
        queries = queries[::3]
    slices = list(dict.fromkeys(q["slice"] for q in queries))
    groups = [(s, {s}) for s in slices] + [("cross-lingual (both)", set(XLING)), ("overall", set(slices))]
    return mems, queries, groups


def load_locomo(conv_id: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[tuple[str, set[str]]]]:
    import locomo

    conv = next(c for c in json.loads(locomo.DATA.read_text()) if c.get("sample_id") == conv_id)
    mems = [{"id": d, "text": t} for d, t in locomo.turns_of(conv)]
    ids = {m["id"] for m in mems}
    queries = []
    for n, qa in enumerate(conv["qa"]):
        rel = [d for d in locomo.evidence_ids(qa) if d in ids]
        if rel:
            queries.append(
                {
                    "id": f"{conv_id}-q{n}",
                    "slice": locomo.CATS[int(qa["category"])],
                    "text": qa["question"],
                    "relevant": rel,
                }
            )
    cats = [c for c in locomo.CATS.values() if any(q["slice"] == c for q in queries)]
    # "overall" means categories 1-4, as in locomo.py; adversarial (5) is reported apart.
    return mems, queries, [(c, {c}) for c in cats] + [("overall", set(cats) - {"adversarial"})]


async def run_dataset(names: Sequence[str], mems: list[dict[str, Any]], queries: list[dict[str, Any]],
                      embedder: str | None, src: str | None) -> list[dict[str, Any]]:  # fmt: skip
    results = []
    with tempfile.TemporaryDirectory(prefix="memoryd-peer-") as tmp:
        for sys_ in make_systems(names, Path(tmp), embedder, src):
            print(f"running {sys_.name}: {len(mems)} saves, {len(queries)} queries ...", flush=True)
            t = time.perf_counter()
            results.append(await run_system(sys_, mems, queries))
            print(f"  {sys_.name} done in {time.perf_counter() - t:.0f}s", flush=True)
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma-separated subset of {','.join(SYSTEMS)}")
    ap.add_argument("--quick", action="store_true", help="bilingual: every 3rd query only")
    ap.add_argument("--locomo", metavar="CONV", help="also run one LoCoMo conversation, e.g. conv-26")
    ap.add_argument("--no-bilingual", action="store_true")
    ap.add_argument(
        "--memoryd-embedder", choices=("use", "e5", "hash"), help="MEMORYD_EMBEDDER for memoryd (default: its own)"
    )
    ap.add_argument(
        "--memoryd-src",
        metavar="DIR",
        help="run memoryd-mcp with DIR (a src/ folder) first on PYTHONPATH, e.g. a `git archive HEAD` copy",
    )
    ap.add_argument("--json")
    args = ap.parse_args()
    names = [n for n in args.systems.split(",") if n]
    if unknown := set(names) - set(SYSTEMS):
        ap.error(f"unknown systems {sorted(unknown)}")

    m = C.machine()
    C.print_machine(m)
    versions: dict[str, str] = {
        "memoryd": (m["versions"]["memoryd"] or "?") + (f" from {args.memoryd_src}" if args.memoryd_src else "")
    }
    if "server-memory" in names:
        node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True).stdout.strip()
        versions["server-memory"] = f"@modelcontextprotocol/server-memory {ensure_server_memory()} (node {node})"
    if "basic-memory" in names:
        versions["basic-memory"] = f"basic-memory {ensure_basic_memory()}"
    print("versions: " + "; ".join(f"{k} {v}" for k, v in versions.items()))

    t0 = time.perf_counter()
    data: dict[str, Any] = {"machine": m, "versions": versions, "memoryd_embedder": args.memoryd_embedder or "default"}
    datasets = []
    if not args.no_bilingual:
        datasets.append(("bilingual", *load_bilingual(args.quick)))
    if args.locomo:
        datasets.append((f"LoCoMo {args.locomo}", *load_locomo(args.locomo)))
    for title, mems, queries, groups in datasets:
        results = asyncio.run(run_dataset(names, mems, queries, args.memoryd_embedder, args.memoryd_src))
        summary = summarise(results, groups)
        print_tables(title, summary, groups, len(queries))
        data[title] = {"summary": summary, "n_memories": len(mems), "n_queries": len(queries),
                       "queries": {r["system"]: r["rows"] for r in results}}  # fmt: skip
    print("\n## Chinese support")
    print(C.table(["system", "Chinese"], [[lab, CHINESE[lab]] for lab in CHINESE if lab.split()[0] in names]))
    data["wall_s"] = time.perf_counter() - t0
    data["loadavg_end"] = os.getloadavg()
    print(
        f"\nwall time {data['wall_s']:.0f}s; load average at the end {tuple(round(x, 2) for x in data['loadavg_end'])}"
    )
    C.write_json(args.json, data)


if __name__ == "__main__":
    main()
