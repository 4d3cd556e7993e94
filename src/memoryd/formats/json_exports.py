"""JSON formats: Anthropic's server-memory graph (JSON lines), mem0 exports, OpenMemory exports."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..shared.errors import InvalidInput
from ..shared.models import ATOM_TYPES
from .common import Record, _lines, _str, _title, written_of


def _server_memory(path: Path, data: bytes | None = None) -> Iterator[Record]:
    for number, line in enumerate(_lines(path, data), 1):
        if not line.strip():
            continue
        origin = f"{path.name}:{number}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            yield Record({"problem": f"invalid JSON: {exc.msg}"}, origin)
            continue
        if not isinstance(obj, dict):
            yield Record({"problem": "expected a JSON object"}, origin)
        elif obj.get("type") == "entity":
            name, kind = _str(obj.get("name")), _str(obj.get("entityType"))
            observations = obj.get("observations")
            if not name or not isinstance(observations, list):
                yield Record({"problem": "an entity needs a name and a list of observations"}, origin)
                continue
            for i, text in enumerate(observations, 1):
                if _str(text):
                    yield Record({"content": f"{name}: {_str(text)}", "title": _title(name),
                                  "tags": [kind] if kind else [], "source": "server-memory"},
                                 f"{origin} observation {i}")  # fmt: skip
        elif obj.get("type") == "relation":
            src, rel, dst = _str(obj.get("from")), _str(obj.get("relationType")), _str(obj.get("to"))
            if not (src and rel and dst):
                yield Record({"problem": "a relation needs from, relationType and to"}, origin)
                continue
            yield Record({"content": f"{src} {rel.replace('_', ' ')} {dst}", "title": _title(f"{src} → {dst}"),
                          "tags": ["relation", rel], "source": "server-memory"}, origin)  # fmt: skip
        else:
            yield Record({"problem": f"unknown line type {obj.get('type')!r}; expected entity or relation"}, origin)


def _mem0(path: Path, raw: bytes | None = None) -> Iterator[Record]:
    try:
        data = json.loads(raw if raw is not None else path.read_bytes())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInput(f"{path} is not a mem0 export (JSON): {exc}") from exc
    items = data.get("results", data.get("memories")) if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise InvalidInput(f'{path}: expected a list of memories ("results" or "memories", or a JSON list)')
    # mem0 with a graph store: get_all() returns {"results": [...], "relations": [{"source", "relationship",
    # "target"}]}; each relation becomes the memory "<source> <relationship> <target>", as server-memory's do.
    relations = data.get("relations") if isinstance(data, dict) else None
    if relations is not None and not isinstance(relations, list):
        yield Record({"problem": '"relations" is not a list; no relation imported'}, f"{path.name}: relations")
        relations = []
    for i, rel in enumerate(relations or [], 1):
        origin = f"{path.name}: relation {i}"
        src = _str(rel.get("source")) if isinstance(rel, dict) else ""
        verb = _str(rel.get("relationship") or rel.get("relation")) if isinstance(rel, dict) else ""
        dst = _str(rel.get("target") or rel.get("destination")) if isinstance(rel, dict) else ""
        if not (src and verb and dst):
            yield Record({"problem": "a relation needs source, relationship and target"}, origin)
            continue
        yield Record({"content": f"{src} {verb.replace('_', ' ')} {dst}", "title": _title(f"{src} → {dst}"),
                      "tags": ["relation", verb], "source": "mem0"}, origin)  # fmt: skip
    for i, item in enumerate(items, 1):
        origin = f"{path.name}: item {i}"
        if not isinstance(item, dict):
            yield Record({"problem": "expected a JSON object"}, origin)
            continue
        text = _str(item.get("memory")) or _str(item.get("text")) or _str(item.get("content"))
        if not text:
            yield Record({"problem": "no memory text (memory, text or content)"}, origin)
            continue
        meta: dict[str, Any] = item["metadata"] if isinstance(item.get("metadata"), dict) else {}
        tags = [c for c in (item.get("categories") or []) if isinstance(c, str) and c.strip()]
        kind = meta.get("type") if meta.get("type") in ATOM_TYPES else None
        written, dropped, bad_time = written_of(item)
        if bad_time:
            yield Record({"problem": bad_time}, origin)
            continue
        dropped += [f"metadata.{k}" for k in meta if k != "type" or kind is None]
        dropped += [k for k in ("user_id", "agent_id", "run_id") if item.get(k)]
        yield Record({"content": text, "type": kind, "tags": tags, "source": "mem0", "written_at": written}, origin,
                     tuple(f"mem0 {k}" for k in dropped))  # fmt: skip


def _openmemory(path: Path, raw: bytes | None = None) -> Iterator[Record]:
    """memories.json (relational: categories by id) or memories.jsonl lines (category names inline)."""
    data = raw if raw is not None else path.read_bytes()
    text = data.decode("utf-8", errors="replace")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get("memories"), list):
        names = {c.get("id"): _str(c.get("name")) for c in doc.get("categories") or [] if isinstance(c, dict)}
        links: dict[Any, list[str]] = {}
        for link in doc.get("memory_categories") or []:
            if isinstance(link, dict) and names.get(link.get("category_id")):
                links.setdefault(link.get("memory_id"), []).append(names[link["category_id"]])
        items: list[tuple[str, Any]] = []
        for i, m in enumerate(doc["memories"], 1):
            if isinstance(m, dict) and "categories" not in m:
                cats = [names[c] for c in m.get("category_ids") or [] if names.get(c)] or links.get(m.get("id"), [])
                m = {**m, "categories": cats}
            items.append((f"{path.name}: memory {i}", m))
        extra = {"status_history": "status history entries", "access_controls": "access control rules",
                 "apps": "app records"}  # fmt: skip
        for key, kind in extra.items():
            for _ in doc.get(key) or []:
                yield Record({"not_carried": f"openmemory {kind}"}, f"{path.name}: {key}")
    else:
        items = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                items.append((f"{path.name}:{number}", json.loads(line)))
            except json.JSONDecodeError as exc:
                yield Record({"problem": f"invalid JSON: {exc.msg} (column {exc.colno})"}, f"{path.name}:{number}")
    for origin, m in items:
        if not isinstance(m, dict):
            yield Record({"problem": "expected a JSON object"}, origin)
            continue
        state = _str(m.get("state")) or "active"
        if state != "active":
            yield Record({"not_carried": f"openmemory state {state}"}, origin)
            continue
        content = _str(m.get("content"))
        if not content:
            yield Record({"problem": "no memory text (content)"}, origin)
            continue
        raw_cats = m.get("categories")
        labels = [c.strip() for c in raw_cats if isinstance(c, str) and c.strip()] if isinstance(raw_cats, list) else []
        om_tags = list(dict.fromkeys(labels))
        om_meta: dict[str, Any] = m["metadata"] if isinstance(m.get("metadata"), dict) else {}
        written, dropped, bad_time = written_of(m)
        if bad_time:
            yield Record({"problem": bad_time}, origin)
            continue
        dropped += [f"metadata.{k}" for k in om_meta]
        dropped += ["app"] if m.get("app") or m.get("app_id") else []
        yield Record({"content": content, "tags": om_tags, "source": "openmemory", "written_at": written}, origin,
                     tuple(f"openmemory {k}" for k in dropped))  # fmt: skip


# basic-memory's own grammar (its src/basic_memory/markdown/plugins.py and entity_parser.py), matched rule by rule:
# the body is parsed with markdown-it (CommonMark, as basic-memory does); an inline token is an observation when it
# reads `[category] text` (a category that is not a clock value such as `00:01:12` nor a task marker such as `x`,
# `/`, `?`) or holds a word starting with `#`, and is not a task `[ ]` / `[x]` / `[-]`, a bare link, nor inside a
# blockquote (Obsidian callouts); a list item is an explicit relation when it reads `type [[Target]]` or
# `"multi word type" [[Target]]` with at most a `(context)` after the link. Everything else is the note's prose.
