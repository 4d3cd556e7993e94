"""What every reader shares: the format names, the import record, and small text helpers."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..shared.limits import LIMITS

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


def written_of(item: dict[str, Any], keys: tuple[str, ...] = ("updated_at", "created_at")) -> tuple[str | None, list[str],
                                                                                           str | None]:  # fmt: skip
    """When an item's text was last written at its source: the first of `keys` it has (its last update, else its
    creation) as ISO 8601 text; the other time keys it has (not carried); and why the time is unusable, naming
    the source's field (the item is then refused as bad, never imported with a wrong time)."""
    from ..shared.errors import InvalidInput
    from ..shared.stamps import written_time

    present = [k for k in keys if item.get(k) not in (None, "")]
    if not present:
        return None, [], None
    try:
        when = written_time(item[present[0]], present[0])
    except InvalidInput as exc:
        return None, [], exc.message
    return (when.isoformat() if when else None), [f"{k} (kept {present[0]})" for k in present[1:]], None
