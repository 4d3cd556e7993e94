"""Hashes and timestamps: the one home of the audit chain's hashes, the normalised-content hash and
UTC time in the exact text form the chain covers.

Storage writes with them and the engine verifies with them, so neither imports the other's copy.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from datetime import UTC, datetime

__all__ = ["GENESIS", "chain_hash", "content_hash", "iso", "norm_hash", "normalize", "parse_iso", "utc_now"]

GENESIS = "0" * 64  # the prev_hash of the first event


def normalize(text: str) -> str:
    """NFKC, case-folded, whitespace-collapsed form used for exact dedup (`search.tokenize` re-exports it)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(text.split())


def content_hash(content: str) -> str:
    """sha256 of a text, as events record it."""
    return hashlib.sha256(content.encode()).hexdigest()


def norm_hash(content: str) -> str:
    """sha256 of the normalised text (NFKC, casefold, whitespace): what exact dedup compares."""
    return hashlib.sha256(normalize(content).encode()).hexdigest()


def chain_hash(prev_hash: str, event_id: str, atom_id: str | None, actor: str, action: str,
               reason: str | None, at: str, c_hash: str | None) -> str:  # fmt: skip
    """The hash of one audit event, over its fields and the previous event's hash."""
    body = json.dumps([prev_hash, event_id, atom_id, actor, action, reason, at, c_hash], ensure_ascii=False)
    return hashlib.sha256(body.encode()).hexdigest()


def utc_now() -> datetime:
    return datetime.now(UTC)


def iso(value: datetime) -> str:
    """`2026-12-02T09:30:00.000000Z`: UTC, always microseconds, so the text sorts like the time."""
    return value.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def parse_iso(value: str) -> datetime:
    return datetime.fromisoformat(value)  # Python 3.11 reads the trailing Z
