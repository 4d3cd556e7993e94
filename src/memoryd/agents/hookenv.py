"""What every hook shares: its data home, its log (`<home>/hooks.log`) and the payload's working directory.

Standard library only: the PreToolUse file hook runs through here on every Read/Edit.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

TYPE_CHECKING = False  # not `typing`'s: its import costs a hook ~5 ms
if TYPE_CHECKING:
    from typing import Any

    from ..shared.config import Settings

__all__ = ["FILE_TOOLS", "FILE_TOOLS_MATCHER", "LOG_MAX_BYTES", "data_home", "log", "payload_cwd", "target_of"]

LOG_MAX_BYTES = 1_000_000
# Claude Code's file tools and the input field naming the file; `memoryd install` and the plugin register
# FILE_TOOLS_MATCHER for the hooks' `file` handler (pretool.PRE_TOOL_USE).
FILE_TOOLS: dict[str, str] = {
    "Read": "file_path", "Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}  # fmt: skip
FILE_TOOLS_MATCHER = "|".join(FILE_TOOLS)


def data_home(settings: Settings | None) -> Path:
    """The hooks' data home: the settings' when given, else the environment's (`memoryd.shared.home`)."""
    if settings is not None:
        return Path(settings.home)
    from ..shared.home import data_home as home

    return home()


def log(settings: Settings | None, event: str, message: str) -> None:
    """Append one line to `<home>/hooks.log` (rotated at 1 MB); never raises. A home that cannot be written
    (read-only, a sandbox) logs to `${XDG_RUNTIME_DIR:-/tmp}/memoryd-<uid>/hooks.log` instead (0700)."""
    stamp = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    line = f"{stamp} [{os.getpid()}] {event}: {message.rstrip()}\n"
    try:
        path = data_home(settings) / "hooks.log"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            _append(path, line)
        except OSError:
            from ..daemon.client import private_dir, tempfile_dir

            private_dir(Path(tempfile_dir()) / f"memoryd-{os.getuid()}")
            _append(Path(tempfile_dir()) / f"memoryd-{os.getuid()}" / "hooks.log", line)
    except Exception:  # noqa: BLE001, S110 - logging is best effort; a hook must never fail on it
        pass


def _append(path: Path, line: str) -> None:
    if path.exists() and path.stat().st_size > LOG_MAX_BYTES:
        os.replace(path, path.with_name("hooks.log.1"))
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as fh:
        fh.write(line)


def payload_cwd(payload: dict[str, Any]) -> str:
    given = payload.get("cwd")
    return given if isinstance(given, str) and given.strip() else os.getcwd()


def target_of(payload: dict[str, Any]) -> str | None:
    """The absolute path of the file a file tool call names, or None (not a file tool, no path, over the limits
    table's `path`: nothing to add, as for a file outside the repository)."""
    field = FILE_TOOLS.get(str(payload.get("tool_name") or ""))
    tool_input = payload.get("tool_input")
    target = tool_input.get(field) if field and isinstance(tool_input, dict) else None
    from ..shared.limits import LIMITS  # standard library only

    if not isinstance(target, str) or not target.strip() or len(target) > LIMITS["path"][0]:
        return None
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
    return target if os.path.isabs(target) else os.path.join(cwd or os.getcwd(), target)
