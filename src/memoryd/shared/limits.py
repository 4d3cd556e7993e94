"""Input limits: the one table of maximum sizes and counts every surface inherits.

Every text field and every list or count an agent, a hook or a person can send has a limit
here; the engine checks them before any work that grows with the input (tokenising,
embedding, redaction, a database read), so an oversized request costs microseconds and is
answered `invalid_input: …`. The "Limits" table of docs/SECURITY.md is `markdown_table()` verbatim (a test
compares them; `python -m memoryd.shared.limits` prints it).
`content` is configurable (`MEMORYD_MAX_CONTENT_CHARS`); the rest are fixed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .errors import InvalidInput

TYPE_CHECKING = False  # not `typing`'s: the hooks read this table, and its import costs a hook ~5 ms
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "LIMITS", "SURROGATE", "UNSTORABLE", "unstorable", "check_count", "check_id", "check_text", "check_texts",
    "json_loads", "markdown_table",
]  # fmt: skip

# A lone UTF-16 surrogate cannot be stored as UTF-8 (vault files, PostgreSQL), nor can PostgreSQL
# store NUL: both are refused on input.
SURROGATE = re.compile("[\ud800-\udfff]")
UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
REDACTED = "[REDACTED]"  # what redaction leaves for a secret (text/redact.py); named in a limit's message


def unstorable(value: str, field: str) -> str | None:
    """Why `value` cannot be stored (a NUL or a lone surrogate), or None."""
    m = UNSTORABLE.search(value)
    if m is None:
        return None
    if m.group() == "\x00":
        return f"{field} holds a NUL character at {m.start()}"
    return f"{field} holds a lone surrogate U+{ord(m.group()):04X} at {m.start()}; send valid Unicode"


# name → (maximum, unit, what it bounds)
LIMITS: dict[str, tuple[int, str, str]] = {
    "content": (8000, "characters", "a memory, a handoff, a session summary, new_content, lesson_content, new_text"),
    "query": (1000, "characters", "a search / recall query"),
    "title": (200, "characters", "a memory or session title"),
    "tags": (32, "items", "tags of one memory"),
    "tag": (64, "characters", "one tag (also the console's tag filter)"),
    "triggers": (32, "items", "triggers of one memory"),
    "trigger": (100, "characters", "one trigger"),
    "source": (
        64,
        "characters",
        "a source / session source / actor name (also an import's and the console's source filter)",
    ),
    "reason": (2000, "characters", "a correction, governance or access-request reason"),
    "id": (64, "characters", "a memory, atom or session id (also in memory://<id>, a console page cursor)"),
    "ids": (100, "items", "promotion_ids of one call"),
    "entity": (512, "characters", "an entity id, entity:<kind>:<name> (an entity_ids item, the console's entity page)"),
    "entity_ids": (50, "items", "entity_ids of one search"),
    "types": (8, "items", "types of one filter"),
    "scope": (
        256,
        "characters",
        "a scope argument (auto, global, a scope hash or owner/repo; the console's scope filter)",
    ),
    "since": (16, "characters", "a timeline window such as 30d"),
    "prompt_name": (64, "characters", "a prompt template name"),
    "prompt": (32000, "characters", "a prompt template"),
    "prompt_args": (32, "items", "arguments of one prompts/get"),
    "prompt_arg": (8000, "characters", "one prompt argument's value"),
    "anchors": (20, "items", "explicit anchors of one memory (anchors on save, memoryd memorize --anchor)"),
    "anchor": (512, "characters", "one explicit anchor: path, path::Symbol or Symbol"),
    "path": (4096, "characters", "a path filter (path=, memoryd recall --path) or the file a file hook names"),
    "symbol": (512, "characters", "a symbol filter (symbol=, memoryd recall --symbol)"),
    "cwd": (4096, "characters", "a directory path"),
    "max_results": (100, "results", "max_results / top_k of one search"),
    "limit": (1000, "items", "limit of one timeline"),
    "review_limit": (100, "items", "limit of one review listing"),
    "neighbors": (50, "memories", "neighbors on each side in mem_context"),
    "token_scopes": (
        50,
        "items",
        "repositories (and `global`) one team-server token may act in (memoryd token create --scope)",
    ),
    "scope_header": (8192, "characters", "the Memoryd-Scope header of one team-server request"),
    "given": (10000, "items", "ids a prompt hook says its session already has (the local API's POST /v1/prompt)"),
    "json_depth": (
        64,
        "levels",
        "nesting of one JSON message or body (MCP over stdio and HTTP, the local API, headers)",
    ),
    "written_at": (64, "characters", "when a memory was written at its source: ISO 8601, from 1970 to a day ahead"),
}


def markdown_table() -> str:
    """docs/SECURITY.md's Limits table, generated from `LIMITS` (one row per limit, in its order)."""
    rows = [f"| `{name}` | {n} {unit} | {what} |" for name, (n, unit, what) in LIMITS.items()]
    return "\n".join(["| field | maximum | what it bounds |", "|---|---|---|", *rows]) + "\n"


def _max(name: str, override: int | None) -> int:
    return override if override is not None else LIMITS[name][0]


def check_text(name: str, value: object, *, field: str | None = None, required: bool = False,
               limit: int | None = None) -> str | None:  # fmt: skip
    """The text itself (None allowed unless required). Raises InvalidInput naming `field`."""
    field = field or name
    if value is None:
        if required:
            raise InvalidInput(f"{field} is required")
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string, got {type(value).__name__}")
    top = _max(name, limit)
    if len(value) > top:
        if REDACTED in value:  # checked after redaction (engine/inputs.py): a short secret's marker is longer
            raise InvalidInput(f"{field} is {len(value)} characters once its secrets are replaced by {REDACTED}; "
                               f"the limit is {top}: shorten it")  # fmt: skip
        raise InvalidInput(f"{field} is {len(value)} characters; the limit is {top}")
    if (problem := unstorable(value, field)) is not None:
        raise InvalidInput(problem)
    if required and not value.strip():
        raise InvalidInput(f"{field} is empty")
    return value


def check_texts(name: str, item: str, values: object, *, field: str | None = None) -> list[str] | None:
    """A list of short texts (tags, triggers, entity ids): count and each item's length."""
    field = field or name
    if values is None:
        return None
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise InvalidInput(f"{field} must be a list of strings")
    check_count(name, values, field=field)
    out = []
    for i, v in enumerate(values):
        check_text(item, v, field=f"{field}[{i}]")
        out.append(str(v))
    return out


def check_count(name: str, values: Sequence[Any], *, field: str | None = None) -> None:
    top = LIMITS[name][0]
    if len(values) > top:
        raise InvalidInput(f"{field or name} has {len(values)} items; the limit is {top}")


def check_id(value: object, *, field: str = "id") -> str:
    """An id argument: a non-empty string of at most LIMITS["id"] characters."""
    text = check_text("id", value, field=field, required=True)
    assert text is not None
    return text


def json_loads(text: str | bytes, *, field: str = "the body") -> Any:
    """JSON text's value, nested at most LIMITS["json_depth"] levels (a 100,000-deep array exhausted the
    parser's recursion: an unhandled RecursionError, a 500 or a dead stdio server). Raises ValueError (not
    JSON, as `json.loads`) and InvalidInput naming `field` (nested too deep)."""
    import json  # here, not at the top: a hook that reads LIMITS pays nothing for it

    top = LIMITS["json_depth"][0]
    try:
        value = json.loads(text)
    except RecursionError:
        raise InvalidInput(f"{field} nests JSON deeper than {top} levels") from None
    level, containers = 1, [value] if type(value) in (dict, list) else []
    while containers:  # one level at a time, no recursion of our own (exact types: 5x faster than isinstance)
        if level > top:
            raise InvalidInput(f"{field} nests JSON deeper than {top} levels")
        inner: list[Any] = []
        keep = inner.append
        for c in containers:
            for v in c.values() if type(c) is dict else c:
                if type(v) is dict or type(v) is list:
                    keep(v)
        containers, level = inner, level + 1
    return value


if __name__ == "__main__":
    print(markdown_table(), end="")
