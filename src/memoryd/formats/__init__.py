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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..shared.errors import InvalidInput
from .basic_memory import _basic_memory
from .common import FORMATS, GZIP_MAGIC, MAX_DECOMPRESSED, ZIP_MAGIC, Record
from .json_exports import _mem0, _openmemory, _server_memory
from .markdown import _is_memoryd_markdown, _memoryd_markdown, entity_label, write_markdown

__all__ = [
    "FORMATS",
    "MAX_DECOMPRESSED",
    "Record",
    "detect",
    "entity_label",
    "read_bytes",
    "read_records",
    "write_markdown",
]


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
