"""Redaction, in one place: which text entering the engine is kept, and the one function that redacts it.

Text the engine keeps (stores, writes to a vault or prompt file, names in an event, sends to an LLM) is
redacted here, before any part sees it; parts never call `redact` themselves (tests/test_stored_text.py
checks it, and that every text column of the schema is either filled from a field declared here or is
not free text).

- `STORED_TEXT`: per public `Engine` method, the parameters that hold such text. `Engine` applies it to
  every call (`redact_call`), so every surface (MCP tools, CLI, SDK, the daemon's operator endpoint, the
  team server) gets the same.
- `FROM_DISK`: the same for what a part reads from disk (`read_in`): a vault file edited by hand, a line
  of an import, a transcript, a saved prompt.
- `shown`: a value (an id, a scope) quoted in an error message.

Each field names its limit in `LIMITS` (a list: its items' limit and its count limit). A value over its
limit is passed on as it is: its part refuses it with the message it always gave (the length it names is
the caller's), and redaction never runs over an oversized input (limits.py: limits come before work that
grows with the input). A field without a limit (None) is redacted whatever its size.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from ..shared.limits import LIMITS
from ..text.redact import redact

__all__ = ["FROM_DISK", "STORED_TEXT", "Field", "read_in", "redact_call", "redacted", "shown"]

# (the limit of the text, or of each item of a list; the limit of the list's count, None for one text)
Field = tuple[str | None, str | None]

_CONTENT: Field = ("content", None)  # `Settings.max_content_chars` (LIMITS["content"] by default)
_TITLE: Field = ("title", None)
_SOURCE: Field = ("source", None)
_REASON: Field = ("reason", None)
_TAGS: Field = ("tag", "tags")
_TRIGGERS: Field = ("trigger", "triggers")
_ANY: Field = (None, None)  # no limit checked by the part: always redacted

# Engine method → its parameters whose text is kept.
STORED_TEXT: dict[str, dict[str, Field]] = {
    "memorize": {
        "content": _CONTENT,
        "title": _TITLE,
        "tags": _TAGS,
        "triggers": _TRIGGERS,
        "source": _SOURCE,
        "actor": _ANY,
        "anchors": ("anchor", "anchors"),
    },
    "handoff": {"summary": _CONTENT, "source": _SOURCE},
    "correct": {"reason": _REASON, "new_content": _CONTENT, "actor": _ANY},
    "govern": {"reason": _REASON, "lesson_content": _CONTENT, "actor": _ANY},
    "restore": {"reason": _REASON, "actor": _ANY},
    "supersede": {"reason": _REASON, "actor": _ANY},
    "dismiss_link": {"reason": _REASON, "actor": _ANY},
    "patch": {
        "content": _CONTENT,
        "tags": _TAGS,
        "triggers": _TRIGGERS,
        "title": _TITLE,
        "reason": _REASON,
        "actor": _SOURCE,
    },
    "delete": {"reason": _ANY, "actor": _ANY},
    "session_start": {"title": _TITLE, "source": _SOURCE},
    "session_end": {"summary": _CONTENT, "actor": _ANY},
    "capture_passive": {"content": _CONTENT, "source": _SOURCE, "tags": _TAGS, "triggers": _TRIGGERS},
    "promote": {"actor": _ANY},
    "reject": {"actor": _ANY},
    "judge": {"new_text": _CONTENT},  # not stored, but it may go to an LLM or a log
    "merge_projects": {"actor": _ANY},
    "save_prompt": {"content": ("prompt", None)},
    "grant": {"by": _ANY},
    "request_sensitive_read": {"reason": _REASON},
    "request_access": {"reason": _REASON},
    "decide_promotions": {"actor": _ANY},
    "confirm_anchors": {"reason": _REASON, "actor": _ANY},
    # source: checked by each write it makes, not up front; event: named in the progress event's reason
    "observe_transcript": {"source": _ANY, "event": _ANY},
    "import_jsonl": {"source": _SOURCE},
    "import_file": {"source": _SOURCE},
    "create_token": {"label": _SOURCE},
}

# What a part reads from disk → its fields whose text is kept (the part that takes them checks the limits).
FROM_DISK: dict[str, dict[str, Field]] = {
    "vault file": {"body": _CONTENT, "title": _TITLE, "tags": _TAGS, "triggers": _TRIGGERS},
    "import line": {"content": _CONTENT, "title": _TITLE, "tags": _TAGS, "triggers": _TRIGGERS, "source": _SOURCE},
    "transcript": {"text": _CONTENT},
    "prompt file": {"content": _ANY},  # served as read (cut to LIMITS["prompt"] on reading)
}


def _limit(name: str | None, content_limit: int) -> int | None:
    if name is None:
        return None
    return content_limit if name == "content" else LIMITS[name][0]


def _text(value: str, top: int | None) -> str:
    return value if top is not None and len(value) > top else redact(value).text


def redacted(value: object, field: Field, *, content_limit: int = LIMITS["content"][0]) -> Any:
    """`value` as it may be kept: a text, or each text of a list, redacted. A value over its limit, or of
    another type, is returned as it is (its part refuses it)."""
    item, count = field
    top = _limit(item, content_limit)
    if count is None:
        return _text(value, top) if isinstance(value, str) else value
    if not isinstance(value, (list, tuple)) or len(value) > LIMITS[count][0]:
        return value
    if not all(isinstance(v, str) and (top is None or len(v) <= top) for v in value):
        return value
    return [redact(v).text for v in value]


def read_in(kind: str, fields: Mapping[str, object], *, content_limit: int = LIMITS["content"][0]) -> dict[str, Any]:
    """`fields` read from disk (a `FROM_DISK` kind), with the text it keeps redacted."""
    declared = FROM_DISK[kind]
    return {k: redacted(v, declared[k], content_limit=content_limit) if k in declared else v for k, v in fields.items()}


def redact_call(
    name: str, method: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], *, content_limit: int
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The arguments of a call of `Engine.<name>` (its part's `method`) with the `STORED_TEXT` ones redacted.
    Arguments that do not bind are returned as they are (the call raises the usual TypeError)."""
    try:
        bound = _signature(method).bind(None, *args, **kwargs)  # None: the part (`self`)
    except TypeError:
        return args, kwargs
    for param, field in STORED_TEXT[name].items():
        if param in bound.arguments:
            bound.arguments[param] = redacted(bound.arguments[param], field, content_limit=content_limit)
    return bound.args[1:], bound.kwargs


_SIGNATURES: dict[Callable[..., Any], inspect.Signature] = {}


def _signature(method: Callable[..., Any]) -> inspect.Signature:
    sig = _SIGNATURES.get(method)
    if sig is None:
        sig = _SIGNATURES[method] = inspect.signature(method)
    return sig


def shown(value: object) -> str:
    """A value as an error message shows it: quoted, cut short (a hostile id may be a megabyte), redacted
    (messages are logged by the MCP SDK, and an agent may paste a token where an id goes)."""
    text = value if isinstance(value, str) else repr(value)
    return repr(redact(text if len(text) <= 80 else text[:77] + "...").text)
