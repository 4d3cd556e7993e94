"""The one error tree memoryd raises on purpose, with stable codes.

    MemorydError            code="internal"
    ├── InvalidInput        code="invalid_input"      bad arguments from a caller
    ├── NotFound            code="not_found"          no atom/session/promotion with that id
    ├── Conflict            code="conflict"           the target is in the wrong state
    ├── Rejected            code="rejected"           the write path refused the text or the change (with why)
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

TYPE_CHECKING = False  # not `typing`'s: the hooks read these, and its import costs a hook ~5 ms
if TYPE_CHECKING:
    from typing import ClassVar

__all__ = [
    "AuthorizationRequired",
    "Conflict",
    "EXIT_CODES",
    "Forbidden",
    "HTTP_STATUS",
    "IntegrityError",
    "InvalidInput",
    "MemorydError",
    "MissingExtra",
    "NotFound",
    "Rejected",
    "StorageBusy",
    "StorageError",
    "TooManyAttempts",
    "Unauthorized",
    "status_of",
]


class MemorydError(Exception):
    """Base for every error memoryd raises on purpose."""

    code: ClassVar[str] = "internal"
    status: ClassVar[int] = 500  # the HTTP status every HTTP surface answers it with (console, daemon, team)
    exit_code: ClassVar[int] = 1  # the CLI's exit status (0 is success, 1 an unexpected crash)

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidInput(MemorydError):
    code = "invalid_input"
    status = 400
    exit_code = 2


class NotFound(MemorydError):
    code = "not_found"
    status = 404
    exit_code = 3


class Conflict(MemorydError):
    code = "conflict"
    status = 409
    exit_code = 4


class Rejected(MemorydError):
    """The write path refused a save, correction, governance action or handoff: empty or unstorable text, a
    field over its limit, not worth keeping (the admission gate: `dura` holds its scores), a change that does
    not apply to the memory's state. The seed's tools answer it as their `effect: "rejected"` result."""

    code = "rejected"
    status = 422
    exit_code = 4

    def __init__(self, message: str, *, dura: dict[str, float] | None = None) -> None:
        super().__init__(message)
        self.dura = dura


class AuthorizationRequired(MemorydError):
    code = "authorization_required"
    status = 403
    exit_code = 5


class Unauthorized(MemorydError):
    code = "unauthorized"
    status = 401
    exit_code = 10


class TooManyAttempts(Unauthorized):
    """Team server: this token, secret or client address failed too often; retry after `retry_after` seconds.
    `pace`: seconds the server waits before it answers (so the refusal takes as long as a checked one)."""

    code = "too_many_attempts"
    status = 429
    exit_code = 10

    def __init__(self, message: str, retry_after: int, pace: float = 0.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.pace = pace


class Forbidden(MemorydError):
    code = "forbidden"
    status = 403
    exit_code = 11


class MissingExtra(MemorydError):
    """A setting needs an optional part (`memoryd[e5]`, `[postgres]`, `[ann]`, `[llm]`) that is not installed."""

    code = "missing_extra"
    status = 500
    exit_code = 9


class StorageError(MemorydError):
    code = "storage_error"
    status = 503
    exit_code = 6


class StorageBusy(StorageError):
    code = "storage_busy"
    status = 503
    exit_code = 7


class IntegrityError(MemorydError):
    code = "integrity_error"
    status = 500
    exit_code = 8


def _by_code(attr: str) -> dict[str, int]:
    """`attr` of every error class here, by code: the classes are the one place statuses are set."""
    out: dict[str, int] = {}
    todo: list[type[MemorydError]] = [MemorydError]
    while todo:
        cls = todo.pop()
        out[cls.code] = getattr(cls, attr)
        todo.extend(cls.__subclasses__())
    return out


EXIT_CODES: dict[str, int] = _by_code("exit_code")  # the CLI's exit status by code
HTTP_STATUS: dict[str, int] = _by_code("status")  # every HTTP surface's status by code


def status_of(code: str) -> int:
    """The HTTP status of an error code (500 for a code no class here has)."""
    return HTTP_STATUS.get(code, 500)
