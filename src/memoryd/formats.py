"""Other memory tools' formats: read them as memoryd import records, write memories as a markdown folder.

Import (each turns into records `{"content", "type", "title", "tags", "source"}` that
`Engine.import_file` feeds through the same write path as `memoryd import FILE.jsonl`):

- `server-memory`: the JSONL graph of Anthropic's `@modelcontextprotocol/server-memory`
  (`memory.jsonl`): `{"type": "entity", "name", "entityType", "observations": [...]}` and
  `{"type": "relation", "from", "to", "relationType"}` lines. Each observation becomes a memory
  "<name>: <observation>" titled with the entity and tagged with its type; each relation the
  memory "<from> <relation type> <to>".
- `mem0`: a mem0 export, the JSON of `Memory.get_all()` / the platform API (`{"results": [...]}`,
  `{"memories": [...]}` or a bare list) whose items carry the text in `memory` (or `text` /
  `content`), with `categories`, `metadata` and `user_id`. Categories become tags; a `type` in
  the metadata that memoryd knows is kept.
- `basic-memory`: a folder of basic-memory notes: markdown with YAML frontmatter (`title`, `type`, `tags` as a
  list or a comma string, `permalink`), observations `- [category] text #tag (context)` or `- text #tag`, and
  relations `- relation_type [[Target]]` / `- "multi word type" [[Target]] (context)`, read with basic-memory's
  own rules (markdown-it tokens; see `_basic_memory`). Each observation becomes a memory (category → tag, and →
  type when it names one), each relation "<note title> <relation type> <target>", and the rest of the note (its
  prose, inline links, tasks, timestamped lines, callouts, code) one memory titled by the note. Frontmatter that
  does not parse is reported and the note read without it; other frontmatter keys are reported as not carried.

- `openmemory`: an OpenMemory export (its dashboard's "Export": `memories_export_<user>.zip`, or either file
  in it: `memories.json`, the relational dump with `categories` / `category_ids`, and `memories.jsonl.gz`,
  one memory per line with `state`, `app` and category names; layouts from OpenMemory's
  `api/app/routers/backup.py`). Only `active` memories are imported; `paused`, `archived` and `deleted`
  ones are reported as not carried (by state). Category names become tags.

A gzip-compressed file (`.gz`) is read decompressed (any format but the basic-memory folder).
Whatever a format holds that memoryd does not carry (non-active states, timestamps, ids, metadata) is
reported by kind and count (`ImportReport.not_carried`).

Records come in a fixed order (files sorted by path), so the same source always gives the same
records and an interrupted import resumes where it stopped.

Export: `write_markdown(atoms, folder)` writes an Obsidian-readable folder, one note per memory
(`memories/<type>/<title> (<id tail>).md`, frontmatter and body) and one per entity
(`entities/<kind>/<name>.md`), joined by `[[wikilinks]]`: a memory links its entities and the
memories it supersedes or is superseded by; an entity lists the memories that mention it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .errors import InvalidInput
from .limits import LIMITS
from .models import ATOM_TYPES, Atom

__all__ = ["FORMATS", "MAX_DECOMPRESSED", "Record", "detect", "read_bytes", "read_records", "write_markdown"]

FORMATS = ("jsonl", "server-memory", "mem0", "basic-memory", "openmemory", "memoryd-markdown")
GZIP_MAGIC = b"\x1f\x8b"
ZIP_MAGIC = b"PK\x03\x04"
MAX_DECOMPRESSED = 1 << 30  # a compressed import is read into memory: at most 1 GiB once decompressed


@dataclass(frozen=True)
class Record:
    """One memory to import and where it came from ("<file>:<line>" or "<file>: <item>").

    `fields` is either memorize arguments, `{"problem": why}` (a malformed item) or `{"not_carried": kind}`
    (an item deliberately not imported, e.g. a deleted memory); `dropped` names the parts of an imported
    item memoryd does not keep (e.g. "mem0 timestamps"), counted by kind in the report."""

    fields: dict[str, Any]
    origin: str
    dropped: tuple[str, ...] = ()


def _gunzip(raw: bytes, path: Path) -> bytes:
    import gzip
    import zlib

    try:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        out = d.decompress(raw, MAX_DECOMPRESSED + 1)
        if len(out) > MAX_DECOMPRESSED or d.unconsumed_tail:
            raise InvalidInput(f"{path} decompresses to more than {MAX_DECOMPRESSED >> 20} MiB (the limit for a "
                               "compressed import); decompress it and import the plain file")  # fmt: skip
        if not d.eof:
            raise EOFError("the compressed stream ends early (a truncated file)")
        return out
    except (zlib.error, gzip.BadGzipFile, EOFError) as exc:
        raise InvalidInput(f"{path} looks gzip-compressed but does not decompress: {exc}") from exc


def read_bytes(path: Path) -> bytes | None:
    """A compressed file's decompressed bytes (gzip; an OpenMemory zip export: its memories.json, else its
    memories.jsonl.gz), or None for a plain file (read as it is)."""
    import zipfile

    try:
        with path.open("rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from exc
    if head.startswith(GZIP_MAGIC):
        return _gunzip(path.read_bytes(), path)
    if head == ZIP_MAGIC:
        try:
            with zipfile.ZipFile(path) as zf:
                names = {n.rsplit("/", 1)[-1]: n for n in zf.namelist() if not n.endswith("/")}
                if "memories.json" in names:
                    info = zf.getinfo(names["memories.json"])
                    if info.file_size > MAX_DECOMPRESSED:
                        raise InvalidInput(f"{path}: memories.json is over {MAX_DECOMPRESSED >> 20} MiB")
                    return zf.read(info)
                if "memories.jsonl.gz" in names:
                    return _gunzip(zf.read(names["memories.jsonl.gz"]), path)
        except zipfile.BadZipFile as exc:
            raise InvalidInput(f"{path} is not a readable zip file: {exc}") from exc
        raise InvalidInput(f"{path} is a zip file without memories.json or memories.jsonl.gz (an OpenMemory export "
                           "holds them); unzip it and import the file inside")  # fmt: skip
    return None


def _is_openmemory(obj: Any) -> bool:
    if isinstance(obj, dict) and isinstance(obj.get("memories"), list) and (
            "export_meta" in obj or "memory_categories" in obj or "status_history" in obj):  # fmt: skip
        return True  # memories.json
    return isinstance(obj, dict) and "state" in obj and "content" in obj and "categories" in obj and "kind" not in obj


def detect(path: Path, data: bytes | None = None) -> str:
    """The format of `path` (or of its decompressed `data`): a folder is basic-memory; an OpenMemory
    export (zip, memories.json, memories.jsonl lines with `state`) openmemory; another JSON document mem0;
    JSON lines of `"type": "entity"`/`"relation"` objects server-memory; other JSON lines memoryd's own."""
    if path.is_dir():
        return "memoryd-markdown" if _is_memoryd_markdown(path) else "basic-memory"
    if data is None:
        data = read_bytes(path)
    try:
        if data is not None:
            raw = data[:65536]
        else:
            with path.open("rb") as fh:
                raw = fh.read(65536)
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from exc
    head = raw.decode("utf-8", errors="replace")
    stripped = head.lstrip()
    if stripped.startswith("["):
        return "mem0"
    first = next((line for line in head.splitlines() if line.strip()), "")
    try:
        obj = json.loads(first)
    except json.JSONDecodeError:
        if stripped.startswith("{"):  # a pretty-printed JSON document
            try:
                whole = json.loads(data if data is not None else path.read_bytes())
            except (OSError, ValueError):
                return "mem0"
            return "openmemory" if _is_openmemory(whole) else "mem0"
        return "jsonl"
    if _is_openmemory(obj):
        return "openmemory"
    if isinstance(obj, dict) and obj.get("type") in ("entity", "relation") and "kind" not in obj:
        return "server-memory"
    if isinstance(obj, dict) and ("results" in obj or "memories" in obj) and "content" not in obj:
        return "mem0"
    return "jsonl"


def read_records(fmt: str, path: Path, data: bytes | None = None) -> Iterator[Record]:
    """The import records of `path` (or of its decompressed `data`) in format `fmt` (not jsonl: that one the
    importer reads itself)."""
    if fmt == "server-memory":
        return _server_memory(path, data)
    if fmt == "mem0":
        return _mem0(path, data)
    if fmt == "openmemory":
        return _openmemory(path, data)
    if fmt == "basic-memory":
        return _basic_memory(path)
    if fmt == "memoryd-markdown":
        return _memoryd_markdown(path)
    raise InvalidInput(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")


def _title(text: str) -> str:
    """A title derived from a name (an entity, a note, a relation), cut to the limits table's `title`: a long
    name must not cost the memory, which a title over the limit would (the write path rejects it)."""
    top = LIMITS["title"][0]
    return text if len(text) <= top else text[: top - 1] + "…"


def _str(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _lines(path: Path, data: bytes | None) -> Iterator[str]:
    if data is not None:
        yield from data.decode("utf-8", errors="replace").splitlines()
        return
    with path.open("r", encoding="utf-8", errors="replace") as fh:
        yield from fh


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
        raise InvalidInput(f"{path}: expected a list of memories (\"results\" or \"memories\", or a JSON list)")
    # mem0 with a graph store: get_all() returns {"results": [...], "relations": [{"source", "relationship",
    # "target"}]}; each relation becomes the memory "<source> <relationship> <target>", as server-memory's do.
    relations = data.get("relations") if isinstance(data, dict) else None
    if relations is not None and not isinstance(relations, list):
        yield Record({"problem": "\"relations\" is not a list; no relation imported"}, f"{path.name}: relations")
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
        dropped = [k for k in ("created_at", "updated_at") if item.get(k)]
        dropped += [f"metadata.{k}" for k in meta if k != "type" or kind is None]
        dropped += [k for k in ("user_id", "agent_id", "run_id") if item.get(k)]
        yield Record({"content": text, "type": kind, "tags": tags, "source": "mem0"}, origin,
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
        dropped = [k for k in ("created_at", "updated_at") if m.get(k)]
        dropped += [f"metadata.{k}" for k in om_meta]
        dropped += ["app"] if m.get("app") or m.get("app_id") else []
        yield Record({"content": content, "tags": om_tags, "source": "openmemory"}, origin,
                     tuple(f"openmemory {k}" for k in dropped))  # fmt: skip


# basic-memory's own grammar (its src/basic_memory/markdown/plugins.py and entity_parser.py), matched rule by rule:
# the body is parsed with markdown-it (CommonMark, as basic-memory does); an inline token is an observation when it
# reads `[category] text` (a category that is not a clock value such as `00:01:12` nor a task marker such as `x`,
# `/`, `?`) or holds a word starting with `#`, and is not a task `[ ]` / `[x]` / `[-]`, a bare link, nor inside a
# blockquote (Obsidian callouts); a list item is an explicit relation when it reads `type [[Target]]` or
# `"multi word type" [[Target]]` with at most a `(context)` after the link. Everything else is the note's prose.
_TIMESTAMP_VALUE = r"\d{1,3}:\d{2}(?::\d{2})?(?:[.,]\d{1,3})?"
_TIMESTAMP_CATEGORY = re.compile(rf"^{_TIMESTAMP_VALUE}(?:\s+-\s+{_TIMESTAMP_VALUE})?$")
_LINKS_TO_DIRECTIVE = re.compile(r"\s+#bm:links_to\s*$")
_CATEGORY = re.compile(r"^\[([^\[\]()]+)\]\s+(.+)", re.DOTALL)
_TRAILING_TAGS = re.compile(r"(?:\s+#\S+)+$")
_CATEGORY_TYPES = {"decision": "decision", "preference": "preference", "fact": "fact", "warning": "warning",
                   "playbook": "playbook", "lesson": "lesson", "technique": "playbook", "requirement": "fact"}  # fmt: skip
_BM_FRONTMATTER_KEYS = ("title", "type", "tags")


def _frontmatter(text: str) -> tuple[dict[str, Any], str]:
    if not text.startswith("---"):
        return {}, text
    end = text.find("\n---", 3)
    if end < 0:
        return {}, text
    try:
        meta = yaml.safe_load(text[3:end]) or {}
    except yaml.YAMLError:
        meta = {}
    rest = text[end + 4:]
    return (meta if isinstance(meta, dict) else {}), rest.split("\n", 1)[1] if "\n" in rest else ""


def _bm_category(content: str) -> re.Match[str] | None:
    """`[category] text`, unless the bracket is a clock value (a transcript timecode) or a task marker."""
    match = _CATEGORY.match(content)
    if not match:
        return None
    category = match.group(1).strip()
    if _TIMESTAMP_CATEGORY.match(category) or (len(category) == 1 and (category in "xX" or not category.isalnum())):
        return None
    return match


def _bm_is_observation(content: str) -> bool:
    content = _LINKS_TO_DIRECTIVE.sub("", content.strip())
    if not content or content.startswith(("[ ]", "[x]", "[-]")):
        return False
    if re.match(r"^\[.*?\]\(.*?\)$", content) or re.match(r"^\[\[.*?\]\]$", content):
        return False
    return bool(_bm_category(content)) or any(part.startswith("#") for part in content.split())


def _bm_observation(content: str) -> tuple[str | None, str, list[str], str | None]:
    """(category, text, hashtags, context) of an observation, as basic-memory's `parse_observation` splits it
    (except that a category's text keeps every line of a multi-line item, where basic-memory keeps the first)."""
    content = _LINKS_TO_DIRECTIVE.sub("", content.strip())
    category = None
    if match := _bm_category(content):
        category, content = match.group(1).strip(), match.group(2).strip()
    elif empty := re.match(r"^\[\]\s+(.+)", content, re.DOTALL):
        content = empty.group(1).strip()
    context = None
    if content.endswith(")") and (start := content.rfind("(")) != -1:
        context, content = content[start + 1:-1].strip(), content[:start].strip()
    tags = [t for part in content.split() if part.startswith("#") for t in part.split("#") if t]
    return category, content, tags, context


def _bm_relation(content: str) -> tuple[str, str, str | None] | None:
    """(type, target, context) of an explicit relation line, or None (then its links are inline links of prose)."""
    content = content.strip()
    if "[[" not in content or "]]" not in content:
        return None
    before = content.partition("[[")[0].strip()
    if not before:
        return None
    if before[0] in "'\"" and before.endswith(before[0]) and len(before) > 1:
        rel_type = before[1:-1].strip()
    elif any(c.isspace() for c in before):
        return None
    else:
        rel_type = before
    start = content.find("[[")
    end = content.find("]]", start + 2)
    target = content[start + 2:end].strip()
    if not rel_type or not target:
        return None
    after = content[end + 2:].strip()
    if not after:
        return rel_type, target, None
    depth = 0
    for i, c in enumerate(after):
        depth += (c == "(") - (c == ")")
        if depth == 0:
            return (rel_type, target, after[1:-1].strip() or None) if after[0] == "(" and i == len(after) - 1 else None
    return None


def _bm_tags(value: Any) -> list[str]:
    """basic-memory's `parse_tags`: a list, or a comma-separated string; a leading `#` is dropped."""
    items = value if isinstance(value, list) else str(value).split(",") if value is not None else []
    return list(dict.fromkeys(t for t in (str(i).strip().lstrip("#") for i in items if i is not None) if t))


_BM_FENCE = re.compile(r"^-{3,}\s*$", re.MULTILINE)  # python-frontmatter's boundary, which basic-memory uses


def _bm_split(text: str) -> tuple[dict[str, Any], str, str | None]:
    """(frontmatter, body, problem) of a note's text: frontmatter that does not parse, or is not a mapping, is
    reported and the note is read without it, as basic-memory does (titled by its file name)."""
    if not text.startswith("---"):
        return {}, text, None
    parts = _BM_FENCE.split(text, 2)
    if len(parts) < 3 or parts[0]:
        return {}, text, "the frontmatter opened by --- on line 1 is never closed; the note is read as plain markdown"
    _, head, body = parts
    body = body.removeprefix("\r").removeprefix("\n")
    try:
        meta = yaml.safe_load(head)
    except yaml.YAMLError as exc:
        why = " ".join(str(exc).split())
        return {}, body, (f"frontmatter is not valid YAML ({why}); the note is read without it, titled by its file "
                          "name")  # fmt: skip
    if meta is None:
        return {}, body, None
    if not isinstance(meta, dict):
        return {}, body, "frontmatter is not a YAML mapping of fields; the note is read without it"
    return meta, body, None


def _bm_text(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return "" if value is None else str(value).strip()


def _basic_memory(folder: Path) -> Iterator[Record]:
    from markdown_it import MarkdownIt

    md = MarkdownIt()
    for path in sorted(p for p in folder.rglob("*.md") if p.is_file() and not any(s.startswith(".") for s in p.parts)):
        rel = path.relative_to(folder).as_posix()
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            yield Record({"problem": f"unreadable: {exc}"}, rel)
            continue
        text = text.removeprefix("\ufeff").replace("\x00", "")
        meta, body, problem = _bm_split(text)
        first = text[:text.rfind(body)].count("\n") + 1 if body else 1  # the file line of the body's first line
        if problem:
            yield Record({"problem": problem}, f"{rel}: frontmatter")
        raw_title = _bm_text(meta.get("title"))
        title = _title(raw_title if raw_title and raw_title != "None" else path.stem)
        tags = _bm_tags(meta.get("tags"))
        note_type = _CATEGORY_TYPES.get(_bm_text(meta.get("type")).lower())
        dropped = [f"basic-memory frontmatter {k}" for k in meta if k not in _BM_FRONTMATTER_KEYS]
        records: list[Record] = []
        lines = body.split("\n")
        taken: set[int] = set()  # body lines read as observations or relations
        quote, in_item = 0, False
        for token in md.parse(body):
            if token.type in ("blockquote_open", "blockquote_close"):
                quote += 1 if token.type == "blockquote_open" else -1
            elif token.type in ("list_item_open", "list_item_close"):
                in_item = token.type == "list_item_open"
            if token.type != "inline" or token.map is None:
                continue
            origin = f"{rel}:{token.map[0] + first}"
            content = token.content
            relation = _bm_relation(content) if in_item and not _LINKS_TO_DIRECTIVE.search(content) else None
            if relation:
                verb, target, context = relation
                target = target.split("|")[0].strip()
                said = f"{title} {verb.replace('_', ' ')} {target}" + (f" ({context})" if context else "")
                records.append(Record({"content": said, "title": _title(f"{title} → {target}"),
                                       "tags": list(dict.fromkeys([*tags, "relation"])), "source": "basic-memory"},
                                      origin))  # fmt: skip
            elif not quote and _bm_is_observation(content):
                category, said, hashtags, context = _bm_observation(content)
                if not said:
                    continue
                said = _TRAILING_TAGS.sub("", said).strip() or said  # the tags are kept as tags
                said += f" ({context})" if context else ""
                kind = _CATEGORY_TYPES.get(category.lower()) if category else None
                records.append(Record({"content": said, "title": title, "type": kind,
                                       "tags": list(dict.fromkeys([*tags, *([category] if category else []), *hashtags])),
                                       "source": "basic-memory"}, origin))  # fmt: skip
            else:
                continue
            taken.update(range(*token.map))
        prose = _bm_prose([line for i, line in enumerate(lines) if i not in taken], title)
        if prose:
            records.insert(0, Record({"content": prose, "title": title, "type": note_type, "tags": tags,
                                      "source": "basic-memory"}, rel))  # fmt: skip
        if records and dropped:
            records[0] = Record(records[0].fields, records[0].origin, tuple(dropped))
        elif dropped:
            for kind in dropped:
                yield Record({"not_carried": kind}, rel)
        yield from records


def _bm_prose(lines: list[str], title: str) -> str:
    """The note's prose: its lines that are neither observations nor relations, without the headings left with
    nothing under them (`## Observations`, `## Relations`) and without a top heading that repeats the title."""
    sections: list[tuple[str | None, list[str]]] = [(None, [])]
    fence = ""
    for line in lines:
        stripped = line.strip()
        if fence:
            fence = "" if stripped.startswith(fence) else fence
        elif stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
        elif re.match(r"#{1,6}(\s|$)", stripped):
            sections.append((line, []))
            continue
        sections[-1][1].append(line)
    kept: list[str] = []
    for heading, body in sections:
        if not any(s.strip() for s in body):
            continue
        if heading is not None and not re.fullmatch(r"#\s+" + re.escape(title) + r"\s*#*", heading.strip()):
            kept += [heading, ""]
        kept += [*body, ""]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()


# -- memoryd's own markdown export, read back -----------------------------------------------------------------

_KEEP = ("id", "epistemic", "polarity", "created", "updated")


def _is_memoryd_markdown(folder: Path) -> bool:
    """A folder `write_markdown` wrote: memories/<type>/*.md whose frontmatter has id, epistemic and polarity."""
    first = next(iter(sorted((folder / "memories").glob("*/*.md"))), None) if (folder / "memories").is_dir() else None
    if first is None:
        return False
    meta, _ = _frontmatter(first.read_text(encoding="utf-8", errors="replace"))
    return all(k in meta for k in ("id", "epistemic", "polarity", "scope"))


def _memoryd_markdown(folder: Path) -> Iterator[Record]:
    """Each memory note back as the memory it was: content, type, title, tags, source, scope (by name), and its id,
    timestamps, epistemic and polarity kept (`keep`), so export → import → export gives the same bytes. Entity
    notes are derived (re-extracted from the content) and reported as such."""
    for path in sorted((folder / "memories").rglob("*.md")):
        rel = path.relative_to(folder).as_posix()
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            yield Record({"problem": f"unreadable: {exc}"}, rel)
            continue
        if not text.startswith("---\n") or "\n---\n" not in text[3:]:
            yield Record({"problem": "no frontmatter (--- … ---) at the top of the note"}, rel)
            continue
        head, body = text[4:].split("\n---\n", 1)
        try:
            meta = yaml.safe_load(head) or {}
        except yaml.YAMLError as exc:
            yield Record({"problem": f"frontmatter is not valid YAML: {' '.join(str(exc).split())}"}, rel)
            continue
        lines = body.split("\n")
        if not isinstance(meta, dict) or len(lines) < 4 or lines[0] != "" or not lines[1].startswith("# "):
            yield Record({"problem": "not a memory note of `memoryd export --format markdown` (frontmatter, "
                                     "blank line, # title)"}, rel)  # fmt: skip
            continue
        rest = "\n".join(lines[3:])
        cut = rest.rfind("\n## Related\n\n")
        if cut >= 0 and all(line.startswith("- ") for line in rest[cut + 13:].strip().split("\n")):
            rest = rest[:cut + 1]
        content = rest[:-1] if rest.endswith("\n") else rest
        aliases = meta.get("aliases") if isinstance(meta.get("aliases"), list) else []
        keep = {k: str(meta[k]) for k in _KEEP if meta.get(k) is not None}
        yield Record({"content": content, "type": meta.get("type"), "title": aliases[0] if aliases else None,
                      "tags": meta.get("tags") or [], "source": meta.get("source"), "scope_name": meta.get("scope"),
                      "keep": keep}, rel)  # fmt: skip
    entities = folder / "entities"
    for _ in sorted(entities.rglob("*.md")) if entities.is_dir() else []:
        yield Record({"not_carried": "entity notes (derived again from the memories' text)"}, "entities")


# -- markdown export ------------------------------------------------------------------------------------------

_UNSAFE = re.compile(r'[\\/:*?"<>|#^\[\]\n\r\t]+')


def _name(text: str, limit: int = 60) -> str:
    """A file name Obsidian can link to: no path or link syntax characters, bounded length."""
    clean = _UNSAFE.sub(" ", " ".join(text.split())).strip(" .")
    return (clean[:limit].rstrip(" .") or "untitled")


def entity_label(entity_id: str) -> tuple[str, str]:
    """`entity:<kind>:<name>` → (kind, name)."""
    parts = entity_id.split(":", 2)
    return (parts[1], parts[2]) if len(parts) == 3 else ("other", entity_id)


def write_markdown(atoms: Sequence[Atom], folder: Path) -> dict[str, int]:
    """Write `atoms` (and their entities) as linked notes under `folder`; returns the counts."""
    folder.mkdir(parents=True, exist_ok=True)
    notes: dict[str, str] = {}  # atom id -> note name
    used: set[str] = set()
    for a in atoms:
        base = f"{_name(a.title or a.content, 50)} ({a.id[-6:]})"
        name, n = base, 2
        while name.lower() in used:
            name, n = f"{base} {n}", n + 1
        used.add(name.lower())
        notes[a.id] = name
    entity_notes: dict[str, str] = {}
    mentions: dict[str, list[str]] = {}
    for a in atoms:
        for e in a.entities:
            if e not in entity_notes:  # two entities whose names clean to the same text get distinct notes
                kind, label = entity_label(e)
                base = f"{_name(label, 80)} ({_name(kind, 40)})"
                name, n = base, 2
                while name.lower() in used:
                    name, n = f"{base} {n}", n + 1
                used.add(name.lower())
                entity_notes[e] = name
            mentions.setdefault(e, []).append(a.id)
    # Every note's frontmatter `title` is its file name, the text its [[wikilinks]] use: basic-memory (and Obsidian)
    # resolve a link by title or file name, so each link of the export resolves there; the memory's own title
    # stays in `aliases` and the heading.
    for a in atoms:
        meta = {"title": notes[a.id], "id": a.id, "type": a.type, "scope": a.scope.name, "source": a.source, "epistemic": a.epistemic,
                "polarity": a.polarity, "created": a.created_at.isoformat(), "updated": a.updated_at.isoformat(),
                "tags": list(a.tags), "aliases": [a.title] if a.title else []}  # fmt: skip
        lines = ["---", yaml.safe_dump(meta, allow_unicode=True, sort_keys=False).rstrip(), "---", "",
                 f"# {a.title or _name(a.content, 80)}", "", a.content, ""]  # fmt: skip
        related = []
        if a.supersedes and a.supersedes in notes:
            related.append(f"- supersedes [[{notes[a.supersedes]}]]")
        if a.superseded_by and a.superseded_by in notes:
            related.append(f"- superseded_by [[{notes[a.superseded_by]}]]")
        related += [f"- mentions [[{entity_notes[e]}]]" for e in a.entities]
        if related:
            lines += ["## Related", "", *related, ""]
        path = folder / "memories" / a.type / f"{notes[a.id]}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines), encoding="utf-8")
    for e, name in entity_notes.items():
        kind, label = entity_label(e)
        body = ["---", yaml.safe_dump({"title": name, "entity": e, "kind": kind}, allow_unicode=True, sort_keys=False).rstrip(),
                "---", "", f"# {label}", "", "## Memories", "", *(f"- [[{notes[i]}]]" for i in mentions[e]), ""]  # fmt: skip
        path = folder / "entities" / _name(kind, 40) / f"{name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(body), encoding="utf-8")
    return {"memories": len(notes), "entities": len(entity_notes)}
