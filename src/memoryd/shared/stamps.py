"""Hashes and timestamps: the one home of the audit chain's hashes, the normalised-content hash and
UTC time in the exact text form the chain covers.

Storage writes with them and the engine verifies with them, so neither imports the other's copy.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from datetime import UTC, date, datetime, timedelta

from .errors import InvalidInput
from .limits import LIMITS

__all__ = [
    "EARLIEST", "GENESIS", "chain_hash", "content_hash", "iso", "norm_hash", "normalize", "parse_iso", "utc_now",
    "written_time",
]  # fmt: skip

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


EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)  # a source time before this is a mistake (an epoch of 0 read as a date)
_SKEW = timedelta(days=1)  # a source time may be this far ahead of this machine's clock (another time zone, a skew)


def written_time(value: object, field: str = "written_at") -> datetime | None:
    """A memory's time at its source (`Atom.written_at`) from a caller or a file: an ISO 8601 date or time
    (`2025-03-15`, `2025-03-15T09:30:00Z`, `…+02:00`; a time without a zone is UTC) or a datetime, from 1970 to
    one day ahead. None stays None.

    Raises:
        InvalidInput: another type, text that is not ISO 8601, a time out of those bounds.
    """
    if value is None:
        return None
    example = "e.g. 2025-03-15 or 2025-03-15T09:30:00Z"
    if isinstance(value, datetime):
        when = value
    elif isinstance(value, date):
        when = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        if len(value) > LIMITS["written_at"][0]:
            raise InvalidInput(f"{field} is {len(value)} characters; the limit is {LIMITS['written_at'][0]}")
        text = value.strip()
        try:
            when = datetime.fromisoformat(text)
        except ValueError:
            raise InvalidInput(f"{field} {text[:40]!r} is not an ISO 8601 date or time ({example})") from None
    else:
        raise InvalidInput(f"{field} must be an ISO 8601 date or time ({example}), got {type(value).__name__}")
    when = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    latest = utc_now() + _SKEW
    if not EARLIEST <= when <= latest:
        raise InvalidInput(f"{field} {when.isoformat()} is out of bounds: from {EARLIEST.date()} to one day from now")
    return when
