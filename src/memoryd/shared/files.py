"""Files a command writes are written whole or not at all: a temporary name beside the target, renamed over it
once complete. Standard library only."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TypeVar

__all__ = ["atomic_bytes", "atomic_folder", "atomic_text"]

T = TypeVar("T")


@contextmanager
def atomic_text(path: Path) -> Iterator[IO[str]]:
    """A UTF-8 text file written to a hidden `.<name>.*.tmp` beside `path` and renamed over it when the block
    ends normally (fsynced first); on any exception the temporary file is removed and `path` is untouched.
    A file that exists keeps its permissions; a new one gets the process's umask, as `open` would give it."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)  # its folder must exist
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _mode_for(path))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_bytes(path: Path, data: bytes, *, new_mode: int | None = None) -> None:
    """Replace `path` with `data` in one rename (see `atomic_text`); `new_mode`: a new file's permissions
    (default: as `open` would make it)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _mode_for(path) if new_mode is None or path.exists() else new_mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_folder(folder: Path, fill: Callable[[Path], T], *, replaceable: Callable[[Path], bool]) -> T:
    """Fill a folder and put it at `folder` only once `fill(staging)` returned; returns what `fill` returned.

    `fill` writes into a hidden staging folder beside `folder`. A `folder` that does not exist or is empty is
    replaced by the staging folder in one rename; one that `replaceable` accepts (an earlier export of the same
    kind) is swapped out (renamed aside, the new one renamed in, the old one removed). Anything else is refused
    with FileExistsError before anything is written. On any exception the staging folder is removed and
    `folder` is as it was.
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise FileExistsError(f"{folder} is a file, not a folder")
    occupied = folder.is_dir() and any(folder.iterdir())
    if occupied and not replaceable(folder):
        raise FileExistsError(f"{folder} is not empty")
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".tmp", dir=folder.parent))
    try:
        result = fill(staging)
        os.chmod(staging, 0o777 & ~_umask())  # mkdtemp makes it 0700; a folder made by mkdir would not be
        if not occupied:
            if folder.is_dir():
                folder.rmdir()  # empty: the rename below puts the new one in its place
            os.replace(staging, folder)
            return result
        aside = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".old", dir=folder.parent))
        os.replace(folder, aside / "old")
        try:
            os.replace(staging, folder)
        except BaseException:
            os.replace(aside / "old", folder)
            raise
        shutil.rmtree(aside, ignore_errors=True)
        return result
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _umask() -> int:
    """The process's umask, read without setting it (`os.umask` sets it, which a threaded server must not)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022  # no /proc: the usual default


def _mode_for(path: Path) -> int:
    """The permissions `path` has, or those `open` would give a new file (0666 less the umask)."""
    try:
        return path.stat().st_mode & 0o7777
    except FileNotFoundError:
        return 0o666 & ~_umask()
