"""What every hook shares: its data home, its log (`<home>/hooks.log`) and the payload's working directory.

Standard library only: the PreToolUse file hook runs through here on every Read/Edit.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..shared.config import Settings

__all__ = ["LOG_MAX_BYTES", "data_home", "log", "payload_cwd"]

LOG_MAX_BYTES = 1_000_000


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
