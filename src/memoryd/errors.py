"""The one error tree memoryd raises on purpose, with stable codes.

    MemorydError            code="internal"
    ├── InvalidInput        code="invalid_input"      bad arguments from a caller
    ├── NotFound            code="not_found"          no atom/session/promotion with that id
    ├── Conflict            code="conflict"           the target is in the wrong state
    ├── AuthorizationRequired code="authorization_required"  sensitive scope without a grant
    ├── Unauthorized        code="unauthorized"       no valid token (team server: missing, unknown, revoked, expired)
    ├── Forbidden           code="forbidden"          the token's rights do not cover this (read-only, another repository)
    ├── MissingExtra        code="missing_extra"      the setting needs an optional extra that is not installed
    ├── StorageError        code="storage_error"      the database failed or is corrupt
    │   └── StorageBusy     code="storage_busy"       the database stayed locked past the timeout
    └── IntegrityError      code="integrity_error"    the audit chain does not verify

Codes are part of the API: surfaces map them once (MCP, CLI exit codes) and never
branch on message text.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "AuthorizationRequired",
    "Conflict",
    "EXIT_CODES",
    "Forbidden",
    "IntegrityError",
    "InvalidInput",
    "MemorydError",
    "MissingExtra",
    "NotFound",
    "StorageBusy",
    "StorageError",
    "TooManyAttempts",
    "Unauthorized",
]


class MemorydError(Exception):
    """Base for every error memoryd raises on purpose."""

    code: ClassVar[str] = "internal"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidInput(MemorydError):
    code = "invalid_input"


class NotFound(MemorydError):
    code = "not_found"


class Conflict(MemorydError):
    code = "conflict"


class AuthorizationRequired(MemorydError):
    code = "authorization_required"


class Unauthorized(MemorydError):
    code = "unauthorized"


class TooManyAttempts(Unauthorized):
    """Team server: this token id or client address failed too often; retry after `retry_after` seconds."""

    code = "too_many_attempts"

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Forbidden(MemorydError):
    code = "forbidden"


class MissingExtra(MemorydError):
    """A setting needs an optional part (`memoryd[e5]`, `[postgres]`, `[ann]`, `[llm]`) that is not installed."""

    code = "missing_extra"


class StorageError(MemorydError):
    code = "storage_error"


class StorageBusy(StorageError):
    code = "storage_busy"


class IntegrityError(MemorydError):
    code = "integrity_error"


# CLI exit codes, one per code (0 is success, 1 is reserved for unexpected crashes).
EXIT_CODES: dict[str, int] = {
    "invalid_input": 2,
    "not_found": 3,
    "conflict": 4,
    "authorization_required": 5,
    "storage_error": 6,
    "storage_busy": 7,
    "integrity_error": 8,
    "missing_extra": 9,
    "unauthorized": 10,
    "too_many_attempts": 10,
    "forbidden": 11,
    "internal": 1,
}
