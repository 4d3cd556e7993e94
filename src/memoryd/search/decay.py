"""Decay: fresh → stale → soft_forgotten, from age since last use, type and epistemic state.

A memory's clock starts at its last update or its last read, whichever is later. It stays
`fresh` for one half-life of its type, is `stale` up to three half-lives, and is
`soft_forgotten` after that: it leaves the timeline and ranks lower in recall, but is never
deleted. Hard constraints (epistemic `necessary`) never go further than `stale`.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Protocol

from ..shared.errors import InvalidInput

__all__ = ["DECAY_STATES", "HALF_LIFE_DAYS", "decay_state", "parse_since"]

DECAY_STATES = ("fresh", "stale", "soft_forgotten")
HALF_LIFE_DAYS = {
    "session": 14, "handoff": 30, "fact": 90, "warning": 120, "decision": 180, "playbook": 180,
    "preference": 365, "lesson": 365,
}  # fmt: skip
_SINCE = re.compile(r"^\s*(\d{1,4})\s*([dwmy])\s*$")
_UNIT_DAYS = {"d": 1, "w": 7, "m": 30, "y": 365}


class Dated(Protocol):
    """What decay reads of a memory (an `Atom`, or the store's `CandidateFacts` of one)."""

    @property
    def updated_at(self) -> datetime: ...
    @property
    def last_accessed_at(self) -> datetime | None: ...
    @property
    def type(self) -> str: ...
    @property
    def epistemic(self) -> str: ...


def decay_state(atom: Dated, now: datetime) -> str:
    last = max(atom.updated_at, atom.last_accessed_at or atom.updated_at)
    age_days = (now - last).total_seconds() / 86400
    half = HALF_LIFE_DAYS.get(atom.type, 90)
    if age_days < half:
        return "fresh"
    if age_days < 3 * half or atom.epistemic == "necessary":
        return "stale"
    return "soft_forgotten"


def parse_since(since: str, now: datetime) -> datetime:
    """`30d`, `2w`, `6m`, `1y` → the moment that long before `now`. Raises InvalidInput."""
    m = _SINCE.match(since) if isinstance(since, str) else None
    if m is None:
        raise InvalidInput(f"since must look like 30d, 2w, 6m or 1y (a number and d/w/m/y), got {since!r}")
    return now - timedelta(days=int(m.group(1)) * _UNIT_DAYS[m.group(2)])
