"""Where the data home is: the one place every surface, the daemon and `Settings` find it. Standard library only
(the hook and the daemon's clients find the home without pydantic)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["data_home"]


def data_home() -> Path:
    """`MEMORYD_HOME` (a leading `~` expanded), else the platform's user data directory + `memoryd`
    (`platformdirs.user_data_dir("memoryd")`: on Linux an absolute `$XDG_DATA_HOME/memoryd`, else
    `~/.local/share/memoryd`, read here without importing platformdirs)."""
    env = os.environ.get("MEMORYD_HOME", "").strip()
    if env:
        return Path(env).expanduser()
    if sys.platform == "linux":
        xdg = os.environ.get("XDG_DATA_HOME", "")  # platformdirs takes an absolute one only
        return Path(xdg if os.path.isabs(xdg) else os.path.expanduser("~/.local/share")) / "memoryd"
    import platformdirs

    return Path(platformdirs.user_data_dir("memoryd", appauthor=False))
