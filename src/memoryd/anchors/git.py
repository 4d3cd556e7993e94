"""The git repository of a working directory, read through a few cached `git` calls.

Everything that lists or diffs the repository is cached against `stamp()`: the stat of HEAD, the
ref it points to, packed-refs and the index (commits, checkouts, `git add` and `git mv` all change
one of them). Files themselves are hashed in-process (a blob id is sha1("blob <size>\\0" + bytes)),
cached against each file's own stat, so a recall never walks the tree or spawns git for files
that did not change.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["GitRepo", "blob_id"]

_T = TypeVar("_T")
GIT_TIMEOUT = 10.0
# A word search never looks at more files than this (a name common enough to exceed it is ambiguous).
GREP_MAX_FILES = 40
# Word searches also see untracked and unstaged edits, which the stamp does not: their answers live this long.
GREP_TTL = 30.0
READ_CACHE = 32 * 1024 * 1024  # bytes of recently read files kept per repository


def blob_id(data: bytes) -> str:
    """The id git gives a file with these bytes (`git hash-object`)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _stat_key(path: Path | str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes] | None:
    try:
        return subprocess.run(
            ["git", "-C", str(cwd), *args], capture_output=True, timeout=GIT_TIMEOUT, check=False,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"},
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None


class GitRepo:
    """One working tree (a clone or a `git worktree`), with caches keyed by its state."""

    def __init__(self, root: Path, git_dir: Path, common_dir: Path) -> None:
        self.root = root
        self.git_dir = git_dir
        self.common_dir = common_dir
        self._cache: dict[Any, tuple[Any, Any]] = {}  # key -> (stamp, value)
        self._files: dict[str, tuple[tuple[int, int, int], str]] = {}  # path -> (stat key, blob)
        self._texts: OrderedDict[str, tuple[tuple[int, int, int], bytes]] = OrderedDict()  # path -> (stat, bytes)
        self._text_bytes = 0
        self._head: tuple[Any, str | None] = (None, None)  # (HEAD's stat, the ref it names)
        self._lock = threading.Lock()

    @classmethod
    def discover(cls, path: str | os.PathLike[str]) -> GitRepo | None:
        """The repository whose working tree holds `path`, or None outside git (or in a bare repository)."""
        p = Path(path)
        if not p.is_dir():
            return None
        out = _run(p, "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-dir", "--git-common-dir")
        if out is None or out.returncode != 0:
            return None
        lines = out.stdout.decode("utf-8", "surrogateescape").splitlines()
        if len(lines) != 3 or not lines[0]:
            return None
        return cls(Path(lines[0]), Path(lines[1]), Path(lines[2]))

    @classmethod
    def find(cls, path: str | os.PathLike[str]) -> GitRepo | None:
        """`discover` without spawning git, for the file hook: the nearest `.git` directory or file
        (worktrees and submodules: `gitdir:` and `commondir`); git itself when the layout is unusual."""
        if any(k in os.environ for k in ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR")):
            return cls.discover(path)
        here = os.path.realpath(path)
        while True:
            dot = os.path.join(here, ".git")
            if os.path.isdir(dot):
                git_dir = dot
                break
            if os.path.isfile(dot):
                try:
                    text = open(dot, encoding="utf-8").read().strip()
                except OSError:
                    return cls.discover(path)
                if not text.startswith("gitdir:"):
                    return cls.discover(path)
                git_dir = os.path.normpath(os.path.join(here, text[len("gitdir:") :].strip()))
                break
            parent = os.path.dirname(here)
            if parent == here:
                return None
            here = parent
        common = git_dir
        try:
            with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as fh:
                common = os.path.normpath(os.path.join(git_dir, fh.read().strip()))
        except OSError:
            pass
        if not os.path.isfile(os.path.join(git_dir, "HEAD")):
            return cls.discover(path)
        return cls(Path(here), Path(git_dir), Path(common))

    def origin_url(self) -> str | None:
        """remote.origin.url read from the repository's config file (git itself when it has includes)."""
        try:
            text = (self.common_dir / "config").read_text("utf-8", "replace")
        except OSError:
            return None
        if re.search(r"^\s*\[include", text, re.M | re.I):
            out = _run(self.root, "config", "--get", "remote.origin.url")
            return out.stdout.decode().strip() or None if out is not None and out.returncode == 0 else None
        section, url = None, None
        for line in text.splitlines():
            line = line.strip()
            head = re.match(r'^\[\s*remote\s+"([^"]*)"\s*\]', line, re.I)
            if head:
                section = head.group(1)
            elif line.startswith("["):
                section = None
            elif section == "origin":
                kv = re.match(r"^url\s*=\s*(.*)$", line, re.I)
                if kv:
                    url = kv.group(1).strip().strip('"')
        return url

    # -- state -------------------------------------------------------------------------------

    def _head_ref(self, head_stat: Any = None) -> str | None:
        """The ref HEAD points to (None: detached), read again only when HEAD's stat changes."""
        if head_stat is not None and self._head[0] == head_stat:
            return self._head[1]
        try:
            text = (self.git_dir / "HEAD").read_text("utf-8").strip()
        except OSError:
            return None
        ref = text[5:].strip() if text.startswith("ref:") else None
        self._head = (head_stat, ref)
        return ref

    def stamp(self) -> tuple[Any, ...]:
        """Changes whenever HEAD moves, a branch is checked out or committed to, or the index changes."""
        git_dir = str(self.git_dir)
        head = _stat_key(f"{git_dir}/HEAD")
        ref = self._head_ref(head)
        parts: list[Any] = [head, _stat_key(f"{git_dir}/index"), _stat_key(f"{self.common_dir}/packed-refs")]
        if ref:
            parts.append(_stat_key(f"{self.common_dir}/{ref}"))
        return tuple(parts)

    def _cached(self, key: Any, compute: Callable[[], _T], ttl: float | None = None) -> _T:
        stamp = self.stamp()
        if ttl is not None:
            stamp = (stamp, int(time.monotonic() // ttl))
        hit = self._cache.get(key)
        if hit is not None and hit[0] == stamp:
            cached: _T = hit[1]
            return cached
        value = compute()
        self._cache[key] = (stamp, value)
        return value

    def head(self) -> str | None:
        """The commit checked out, or None in a repository without commits."""

        def compute() -> str | None:
            out = _run(self.root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
            return out.stdout.decode().strip() or None if out is not None and out.returncode == 0 else None

        return self._cached("head", compute)

    def tracked(self) -> dict[str, list[str]]:
        """Tracked paths grouped by file name (`db.py` -> ["sqlite_utils/db.py", …])."""

        def compute() -> dict[str, list[str]]:
            out = _run(self.root, "ls-files", "-z", "--cached")
            names: dict[str, list[str]] = {}
            if out is None or out.returncode != 0:
                return names
            for raw in out.stdout.split(b"\0"):
                if raw:
                    path = raw.decode("utf-8", "surrogateescape")
                    names.setdefault(path.rsplit("/", 1)[-1], []).append(path)
            return names

        return self._cached("tracked", compute)

    # -- files -------------------------------------------------------------------------------

    def abspath(self, rel: str) -> Path:
        return self.root / rel

    def relpath(self, path: str) -> str | None:
        """`path` (absolute, or relative to the root) as a clean root-relative path; None outside the tree."""
        p = Path(path)
        if not p.is_absolute():
            p = self.root / p
        try:
            rel = Path(os.path.normpath(p)).relative_to(self.root)
        except ValueError:
            try:  # the root may be reached through a symlink
                rel = Path(os.path.realpath(p)).relative_to(os.path.realpath(self.root))
            except ValueError:
                return None
        text = rel.as_posix()
        return None if text in ("", ".") or text.startswith("../") or text.split("/")[0] == ".git" else text

    def blob(self, rel: str) -> str | None:
        """The blob id of the working-tree file, or None when it does not exist (cached by the file's stat)."""
        path = self.root / rel
        key = _stat_key(path)
        if key is None or not path.is_file():
            self._files.pop(rel, None)
            return None
        hit = self._files.get(rel)
        if hit is not None and hit[0] == key:
            return hit[1]
        data = self.read(rel)
        if data is None:
            return None
        blob = blob_id(data)
        self._files[rel] = (key, blob)
        return blob

    def read(self, rel: str) -> bytes | None:
        """The working-tree file's bytes; the recently read ones are kept (by their stat) up to `READ_CACHE`
        bytes, so a drift check's searches read each candidate once."""
        path = f"{self.root}/{rel}"
        key = _stat_key(path)
        with self._lock:
            hit = self._texts.get(rel)
            if hit is not None and key is not None and hit[0] == key:
                self._texts.move_to_end(rel)
                return hit[1]
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            return None
        if key is not None and len(data) <= READ_CACHE // 8:
            with self._lock:
                old = self._texts.pop(rel, None)
                self._text_bytes += len(data) - (len(old[1]) if old else 0)
                self._texts[rel] = (key, data)
                while self._text_bytes > READ_CACHE:
                    self._text_bytes -= len(self._texts.popitem(last=False)[1][1])
        return data

    # -- history -----------------------------------------------------------------------------

    def renames(self, commit: str | None) -> dict[str, str]:
        """Files renamed between `commit` and the working tree (tracked paths), old -> new, by git's
        rename detection (≥ 50% similar)."""
        return self.diff(commit)[0]

    def diff(self, commit: str | None) -> tuple[dict[str, str], tuple[str, ...], tuple[str, ...]]:
        """(renamed old -> new, deleted, added) between `commit` and the working tree (tracked paths);
        deleted and added are what git's rename detection left unpaired."""
        renames, deleted, added, _ = self._name_status(commit)
        return renames, deleted, added

    def changed_files(self, commit: str) -> tuple[str, ...]:
        """Files that differ between `commit` and the working tree and exist there (tracked: modified, added,
        renamed to), where a definition that left its file may be now. The same `git diff` as `diff`."""
        return self._name_status(commit)[3]

    def _name_status(
        self, commit: str | None
    ) -> tuple[dict[str, str], tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        if not commit:
            return {}, (), (), ()

        def compute() -> tuple[dict[str, str], tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
            out = _run(self.root, "diff", "--find-renames", "--name-status", "-z", "--no-ext-diff", commit, "--")
            if out is None or out.returncode != 0:
                return {}, (), (), ()
            parts = out.stdout.decode("utf-8", "surrogateescape").split("\0")
            found: dict[str, str] = {}
            deleted: list[str] = []
            added: list[str] = []
            changed: list[str] = []
            i = 0
            while i < len(parts) and parts[i]:
                status = parts[i]
                if status.startswith(("R", "C")) and i + 2 < len(parts):
                    if status.startswith("R"):
                        found[parts[i + 1]] = parts[i + 2]
                    changed.append(parts[i + 2])
                    i += 3
                else:
                    if i + 1 < len(parts):
                        if status == "D":
                            deleted.append(parts[i + 1])
                        else:
                            changed.append(parts[i + 1])
                            if status == "A":
                                added.append(parts[i + 1])
                    i += 2
            return found, tuple(deleted), tuple(added), tuple(changed)

        # the working tree can change without HEAD or the index: answers also live GREP_TTL
        return self._cached(("diff", commit), compute, ttl=GREP_TTL)

    def show_many(self, commit: str, paths: list[str]) -> dict[str, bytes]:
        """The contents of `paths` at `commit` (one `git cat-file --batch`); missing ones are left out."""
        return self._batch([f"{commit}:{p}" for p in paths], paths)

    def read_blobs(self, blobs: list[str]) -> dict[str, bytes]:
        """The contents of these blob ids (one `git cat-file --batch`); missing ones are left out."""
        return self._batch(blobs, blobs)

    def _batch(self, specs: list[str], names: list[str]) -> dict[str, bytes]:
        if not specs:
            return {}
        spec = "".join(f"{s}\n" for s in specs).encode("utf-8", "surrogateescape")
        try:
            out = subprocess.run(
                ["git", "-C", str(self.root), "cat-file", "--batch"], input=spec, capture_output=True,
                timeout=GIT_TIMEOUT, check=False, env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"},
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired):
            return {}
        if out.returncode != 0:
            return {}
        data, pos, found = out.stdout, 0, {}
        for name in names:
            end = data.find(b"\n", pos)
            if end < 0:
                break
            head = data[pos:end].split()
            pos = end + 1
            if len(head) != 3 or head[1] != b"blob":  # "<spec> missing", or not a file
                continue
            size = int(head[2])
            found[name] = data[pos : pos + size]
            pos += size + 1
        return found

    def grep_defs(self, word: str, suffixes: tuple[str, ...]) -> list[str]:
        """Files whose lines look like they define `word` (`def word`, `class word`, `func (r *T) word`,
        `type word`, `fn word`, `function word`, `interface word`…): a narrower net than `grep_files`
        for common words."""
        if not word or not suffixes or not word.replace("_", "a").replace("$", "a").isalnum():
            return []

        def compute() -> list[str]:
            globs = [f"*{s}" for s in suffixes]
            pattern = (
                r"(^|[^A-Za-z0-9_])(def|class|func|fn|type|struct|interface|enum|trait|function|record)"
                r"[[:space:]]+(\([^)]*\)[[:space:]]*)?" + word + r"([^A-Za-z0-9_]|$)"
            )
            out = _run(self.root, "grep", "-l", "-z", "-E", "-I", "--untracked", "-e", pattern, "--", *globs)
            if out is None or out.returncode not in (0, 1):
                return []
            return [p.decode("utf-8", "surrogateescape") for p in out.stdout.split(b"\0") if p][:400]

        return self._cached(("grepdefs", word, suffixes), compute, ttl=GREP_TTL)

    def read_blob(self, blob: str) -> bytes | None:
        """The content of a blob by id (an anchor's file as it was), or None."""
        out = _run(self.root, "cat-file", "blob", blob)
        return out.stdout if out is not None and out.returncode == 0 else None

    def _status(self) -> tuple[tuple[str, str], ...] | None:
        """(XY, path) of every path `git status` lists (untracked ones too, each file), or None on failure."""

        def compute() -> tuple[tuple[str, str], ...] | None:
            out = _run(self.root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames",
                       "--ignore-submodules")  # fmt: skip
            if out is None or out.returncode != 0:
                return None
            return tuple((raw[:2].decode("ascii", "replace"), raw[3:].decode("utf-8", "surrogateescape"))
                         for raw in out.stdout.split(b"\0") if len(raw) >= 4)  # fmt: skip

        return self._cached("status", compute, ttl=GREP_TTL)

    def untracked(self, suffixes: tuple[str, ...]) -> tuple[str, ...]:
        """Untracked files that are not ignored, of these suffixes (where a moved definition may be too)."""
        status = self._status() if suffixes else None
        return tuple(p for xy, p in status or () if xy == "??" and p.endswith(suffixes))

    def state_token(self, suffixes: tuple[str, ...]) -> str | None:
        """A name for the whole content of the working tree as far as code anchors can see it: HEAD, and
        the path and blob id of every tracked file that differs from it and of every untracked file of
        these suffixes. Equal tokens mean equal answers to every drift question, so searched verdicts
        are kept under it across processes. None outside a repository with commits."""

        def compute() -> str | None:
            head, status = self.head(), self._status()
            if head is None or status is None:
                return None
            entries = [
                f"{path}\0{self.blob(path) or '-'}" for xy, path in status if xy != "??" or path.endswith(suffixes)
            ]  # an untracked file no check reads: left out
            digest = hashlib.sha1(head.encode(), usedforsecurity=False)
            digest.update("\n".join(sorted(entries)).encode("utf-8", "surrogateescape"))
            return digest.hexdigest()[:32]

        return self._cached(("token", suffixes), compute, ttl=GREP_TTL)

    def grep_files(self, word: str, suffixes: tuple[str, ...]) -> list[str]:
        """Files (tracked or untracked, not ignored) holding `word` as a whole word, of these suffixes."""
        if not word or not suffixes:
            return []

        def compute() -> list[str]:
            globs = [f"*{s}" for s in suffixes]
            out = _run(self.root, "grep", "-l", "-z", "-w", "-F", "-I", "--untracked", "-e", word, "--", *globs)
            if out is None or out.returncode not in (0, 1):
                return []
            files = [p.decode("utf-8", "surrogateescape") for p in out.stdout.split(b"\0") if p]
            return files[: GREP_MAX_FILES + 1]

        return self._cached(("grep", word, suffixes), compute, ttl=GREP_TTL)
