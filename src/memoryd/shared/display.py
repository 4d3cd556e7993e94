"""How a memory and its events are shown, for the engine and for surfaces that print its answers as JSON (the
CLI through the daemon): the placeholder of hidden content, the parts of an event's actor. Standard library only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["PLACEHOLDERS", "shown_content", "split_actor"]

PLACEHOLDERS = {
    "quarantined": "[quarantined: content hidden pending review]",
    "sealed": "[sealed: content visible to audit only]",
    "tombstoned": "[tombstoned: content destroyed]",
}


def shown_content(atom: Mapping[str, Any] | Any) -> str:
    """What a reader may see of an atom (a model or its JSON): its content, or a placeholder for hidden states."""
    status, content = (atom["status"], atom["content"]) if isinstance(atom, Mapping) else (atom.status, atom.content)
    return str(PLACEHOLDERS.get(status, content))


def split_actor(actor: str) -> tuple[str, str | None, str | None]:
    """(source, person, token id) of an event's actor: `agent@alice#<id>` → ("agent", "alice", "<id>"); an
    actor without an authenticated person → (actor, None, None)."""
    source, sep, who = actor.partition("@")
    if not sep:
        return actor, None, None
    person, sep, token = who.rpartition("#")
    return (source, person, token) if sep and person else (actor, None, None)
