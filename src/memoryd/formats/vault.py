"""The markdown vault: one file per memory, YAML frontmatter plus the content as the body.

This module is the pure format and file layer; it never touches the database.

File format (what :func:`render` writes, byte for byte)::

    ---
    id: 01J9Z3Q6X0ABCDEFGHJKMNPQRS
    type: decision
    scope:
      tenant_id: local
      workspace: acme
      repository: widgets
      branch: main
      hash: 3f2a9c0d1e4b5a67
    tags:
    - db
    triggers: []
    title: Use SQLite
    created: '2026-03-01T10:15:30.123456Z'
    updated: '2026-03-01T10:15:30.123456Z'
    epistemic: actual
    polarity: affirmative
    status: active
    ---
    <blank line>
    <content, verbatim>
    <one newline>

* Keys are always all present, in :data:`FRONTMATTER_KEYS` order, except ``written`` (when the memory was
  written at its source), present only when known, after ``updated``; times are RFC 3339 strings in UTC
  (the database's own spelling); unicode is written as-is (YAML still escapes control characters,
  and PyYAML escapes characters outside the BMP inside a string it must double-quote, i.e. one that
  also holds a tab or a control character: that still reads back exactly).
* Files are UTF-8 and LF-only. Newlines are normalised the universal way (``\\r\\n`` and a lone
  ``\\r`` become ``\\n``) by :func:`render` for the content and by :func:`read` for the whole file, so
  a file saved by a CRLF editor reads back with the same body. Normalise content with
  :func:`normalize_newlines` before storing it, so the database and the vault agree.
* :func:`read` drops exactly what :func:`render` adds around the content (the blank separator line
  and the final newline), so ``read(p).body == content`` exactly, whitespace included. A UTF-8 BOM
  at the start of the file is ignored.
* Parsing is python-frontmatter's YAML handler (``yaml.load`` with the *safe* loader, never the full
  one) with an exact ``---`` boundary: the library's own ``loads``/``dumps`` strip the body and its
  default boundary pattern swallows blank lines, which would break the exact round trip.
* The digest is the sha256 of the file's bytes: compare it with the digest :func:`write_atomic`
  returned to know whether anyone changed the file since memoryd wrote it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, get_args

import yaml
from frontmatter.default_handlers import YAMLHandler

from ..shared.models import ATOM_TYPES, Atom, Epistemic, Polarity, Status

__all__ = [
    "FRONTMATTER_KEYS",
    "VaultLock",
    "remove_temp_files",
    "SCOPE_KEYS",
    "VaultFile",
    "VaultFormatError",
    "atom_frontmatter",
    "format_time",
    "normalize_newlines",
    "parse_time",
    "read",
    "relative_path",
    "remove",
    "render",
    "scan",
    "write_atomic",
]

FRONTMATTER_KEYS = (
    "id", "type", "scope", "tags", "triggers", "title", "created", "updated", "written", "epistemic", "polarity",
    "status",
)  # fmt: skip
SCOPE_KEYS = ("tenant_id", "workspace", "repository", "branch", "hash")
SKIPPED_TOP_DIRS = frozenset({"prompts"})

_STATUSES: tuple[str, ...] = get_args(Status)
_EPISTEMICS: tuple[str, ...] = get_args(Epistemic)
_POLARITIES: tuple[str, ...] = get_args(Polarity)
_ULID = re.compile(r"[0-7][0-9A-HJKMNP-TV-Z]{25}")  # canonical (upper-case Crockford) ULID
_SCOPE_HASH = re.compile(r"[0-9a-f]{8,64}")
# An exact delimiter line: three or more dashes, optional spaces/tabs, then the end of that line only.
# (The library's default `^-{3,}\s*$` lets `\s*` run over following blank lines.)
_HANDLER = YAMLHandler(fm_boundary=re.compile(r"^-{3,}[ \t]*(?:\n|\Z)", re.MULTILINE))
_DELIMITER = "---"


class VaultFormatError(ValueError):
    """A vault file that cannot be used; the message names the file and what is wrong."""

    def __init__(self, path: Path | str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = Path(path)
        self.problem = problem

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.path, self.problem))


@dataclass(frozen=True)
class VaultFile:
    path: Path
    frontmatter: dict[str, Any]
    body: str | None  # None: not parsed, because its bytes are the ones the database recorded
    digest: str


# --------------------------------------------------------------------------- helpers


def normalize_newlines(text: str) -> str:
    """Universal newlines: CRLF and lone CR become LF (what the vault stores and reads)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def format_time(value: datetime) -> str:
    """RFC 3339 in UTC with microseconds and a `Z`, the database's spelling. Naive means UTC."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def parse_time(value: str) -> datetime:
    """The inverse of :func:`format_time`; accepts any ISO 8601 / RFC 3339 date-time, naive means UTC."""
    parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def flush_all() -> None:
    """Make every file written with `durable=False` durable: one sync instead of two per file."""
    os.sync()


def _fsync_dir(directory: Path) -> None:
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
    try:
        fd = os.open(directory, flags)
    except OSError:  # platforms that cannot open a directory (Windows): nothing to sync
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _check_atom_path_parts(atom: Atom) -> None:
    if not _ULID.fullmatch(atom.id):
        raise ValueError(f"atom id {atom.id!r} is not a canonical ULID")
    if atom.type not in ATOM_TYPES:
        raise ValueError(f"atom {atom.id}: unknown type {atom.type!r}")
    if not _SCOPE_HASH.fullmatch(atom.scope_hash):
        raise ValueError(f"atom {atom.id}: scope hash {atom.scope_hash!r} is not lower-case hex")


# --------------------------------------------------------------------------- layout and rendering


def relative_path(atom: Atom) -> Path:
    """`<scope_hash>/<type>/<id>.md`, relative to the vault root.

    A pure function of three things that never change for an atom, so a file never moves and the
    engine can always find it; no user text is in the path (the hash is hex, the type is from a closed
    set, the id is a ULID, checked here), and ULIDs sort by creation time.
    """
    _check_atom_path_parts(atom)
    return Path(atom.scope_hash, atom.type, f"{atom.id}.md")


def atom_frontmatter(atom: Atom) -> dict[str, Any]:
    """The frontmatter :func:`render` writes for `atom`, as :func:`read` gives it back."""
    scope = atom.scope
    return {
        "id": atom.id,
        "type": atom.type,
        "scope": {
            "tenant_id": scope.tenant_id,
            "workspace": scope.workspace,
            "repository": scope.repository,
            "branch": scope.branch,
            "hash": atom.scope_hash,
        },
        "tags": list(atom.tags),
        "triggers": list(atom.triggers),
        "title": atom.title,
        "created": format_time(atom.created_at),
        "updated": format_time(atom.updated_at),
        **({"written": format_time(atom.written_at)} if atom.written_at is not None else {}),
        "epistemic": atom.epistemic,
        "polarity": atom.polarity,
        "status": atom.status,
    }


_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_FAST_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _dump_yaml(metadata: dict[str, Any]) -> str:
    # libyaml's dumper (3x faster) writes what the pure-Python SafeDumper writes, except that it
    # escapes characters beyond the BMP (emoji) even with allow_unicode: those take the slow one.
    astral = _ASTRAL.search(json.dumps(metadata, ensure_ascii=False, default=str))
    return _HANDLER.export(
        metadata, Dumper=yaml.SafeDumper if astral else _FAST_DUMPER, sort_keys=False, allow_unicode=True,
        width=2**31 - 1,
    )  # fmt: skip


def render(atom: Atom) -> str:
    """The whole file for `atom`. Raises ValueError if the atom cannot be written faithfully."""
    _check_atom_path_parts(atom)
    content = normalize_newlines(atom.content)
    if not content.strip():
        raise ValueError(f"atom {atom.id}: content is empty")
    metadata = atom_frontmatter(atom)
    text = f"{_DELIMITER}\n{_dump_yaml(metadata)}\n{_DELIMITER}\n\n{content}\n"
    text.encode("utf-8")  # raises UnicodeEncodeError (a ValueError) on lone surrogates, before any write
    back = _parse_text(text, "<render>")  # never write a file that does not read back identically
    if back[0] != metadata or back[1] != content:
        raise ValueError(f"atom {atom.id}: rendered file does not read back identically")
    return text


# --------------------------------------------------------------------------- writing


def write_atomic(path: Path, text: str, *, durable: bool = True) -> str:
    """Replace `path` with `text` (UTF-8) atomically and durably; returns the sha256 of the bytes.

    The bytes go to a hidden `.<name>.*.tmp` file in the same directory, are fsynced, then
    os.replace'd over `path`, and the directory is fsynced. `path` holds either the old or the new
    content at every instant; on any failure the temporary file is removed and `path` is untouched.
    Files are created 0600 (memories are private). Missing parent directories are created.
    `durable=False` skips the fsyncs: the caller writes many files and calls `flush_all()` once.
    """
    path = Path(path)
    data = text.encode("utf-8")  # fail on unencodable text before touching the disk
    parent = path.parent
    missing: list[Path] = []
    probe = parent
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    parent.mkdir(parents=True, exist_ok=True)
    for created in reversed(missing):  # make the new directory entries durable too
        _fsync_dir(created.parent)
    fd, tmp_name = tempfile.mkstemp(dir=parent, prefix=f".{path.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        _fsync_dir(parent)
    return _digest(data)


class VaultLock:
    """Exclusive access to one vault for publishing files and syncing: threads and processes alike.

    Reentrant within a thread (a sync that corrects a memory publishes its file under the same
    lock). Across processes an `flock` on `<vault>/.lock` (skipped by scans: a dot file).
    """

    def __init__(self, root: Path) -> None:
        self._path = Path(root) / ".lock"
        self._rlock = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    def __enter__(self) -> VaultLock:
        self._rlock.acquire()
        if self._depth == 0:
            try:
                self._path.parent.mkdir(parents=True, exist_ok=True)
                self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    import fcntl
                except ImportError:  # Windows: threads of one process are still serialised
                    pass
                else:
                    fcntl.flock(self._fd, fcntl.LOCK_EX)
            except BaseException:
                if self._fd is not None:
                    os.close(self._fd)
                    self._fd = None
                self._rlock.release()
                raise
        self._depth += 1
        return self

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        if self._depth == 0 and self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None
        self._rlock.release()


def remove_temp_files(root: Path) -> list[Path]:
    """Delete `write_atomic` temporaries (`.<name>.*.tmp`) a killed writer left behind; hold the VaultLock."""
    removed: list[Path] = []
    root = Path(root)
    if not root.is_dir():
        return removed
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            if name.startswith(".") and name.endswith(".tmp"):
                path = Path(dirpath) / name
                path.unlink(missing_ok=True)
                removed.append(path)
    return removed


def remove(path: Path) -> None:
    """Delete the file if it is there; a missing file is fine."""
    path = Path(path)
    try:
        path.unlink()
    except FileNotFoundError:
        return
    _fsync_dir(path.parent)


# --------------------------------------------------------------------------- reading


def _yaml_problem(exc: Exception) -> str:
    """A YAML error as text, with the line and column in the *file* (the opening `---` is line 1)."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is not None:
        where = f"line {mark.line + 2}, column {mark.column + 1}"
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        text = f"invalid YAML in frontmatter at {where}: {what}"
        context, context_mark = getattr(exc, "context", None), getattr(exc, "context_mark", None)
        if context and context_mark is not None and context_mark is not mark:
            text += f" ({context} started at line {context_mark.line + 2})"
        elif context:
            text += f" ({context})"
        return text
    if isinstance(exc, yaml.reader.ReaderError):
        return f"invalid YAML in frontmatter: {exc.reason}"
    return f"invalid YAML in frontmatter: {exc}"


def _check_choice(meta: Mapping[str, Any], key: str, allowed: tuple[str, ...]) -> str | None:
    if key not in meta:
        return None
    value = meta[key]
    if value not in allowed:
        return f"invalid {key} {value!r} (expected one of: {', '.join(allowed)})"
    return None


def _validate(meta: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """Check and normalise parsed frontmatter; returns (frontmatter, problem or None)."""
    atom_id = meta.get("id")
    if atom_id is None or atom_id == "":
        # A file a person wrote by hand: it becomes a new memory, a fact unless it says otherwise.
        meta = {**meta, "id": None, "type": meta.get("type", "fact")}
    elif not isinstance(atom_id, str) or not _ULID.fullmatch(atom_id):
        return meta, f"invalid id {atom_id!r} (expected a 26-character upper-case ULID)"
    if "type" not in meta:
        return meta, "missing type in frontmatter"
    if meta["type"] not in ATOM_TYPES:
        return meta, f"unknown type {meta['type']!r} (expected one of: {', '.join(ATOM_TYPES)})"
    for key, allowed in (("status", _STATUSES), ("epistemic", _EPISTEMICS), ("polarity", _POLARITIES)):
        if problem := _check_choice(meta, key, allowed):
            return meta, problem
    out = dict(meta)
    scope = out.get("scope")
    if "scope" in out:
        if not isinstance(scope, dict):
            return meta, f"scope must be a mapping with keys {', '.join(SCOPE_KEYS)}"
        for key in SCOPE_KEYS:
            if key in scope and not isinstance(scope[key], str):
                return meta, f"scope.{key} must be a string (quote it), got {scope[key]!r}"
    for key in ("tags", "triggers"):
        if key not in out:
            continue
        value = out[key]
        if value is None:
            out[key] = []
        elif not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            return meta, f"{key} must be a list of strings (quote items like yes, 123 or null), got {value!r}"
    if "title" in out and out["title"] is not None and not isinstance(out["title"], str):
        return meta, f"title must be a string (quote it), got {out['title']!r}"
    for key in ("created", "updated", "written"):
        if key not in out:
            continue
        value = out[key]
        if isinstance(value, datetime):  # an unquoted timestamp, parsed by YAML
            out[key] = format_time(value)
            continue
        if isinstance(value, date) or not isinstance(value, str):
            return meta, f"{key} must be an RFC 3339 date-time, got {value!r}"
        try:
            parse_time(value)
        except ValueError:
            return meta, f"{key} is not an RFC 3339 date-time: {value!r}"
    return out, None


def _parse_text(text: str, label: Path | str) -> tuple[dict[str, Any], str]:
    """Split, parse and validate one file's text; raises VaultFormatError naming `label`."""
    text = text.removeprefix("\ufeff")
    text = normalize_newlines(text)
    if not _HANDLER.detect(text):
        raise VaultFormatError(label, "no frontmatter (the file must start with a '---' line)")
    try:
        fm_text, rest = _HANDLER.split(text)
    except ValueError:
        raise VaultFormatError(label, "frontmatter is not closed (no second '---' line)") from None
    try:
        meta = _HANDLER.load(fm_text)  # yaml.load with the safe loader only
    except Exception as exc:  # YAMLError, and ValueError from e.g. an impossible date 2024-13-45
        raise VaultFormatError(label, _yaml_problem(exc)) from exc
    if meta is None:
        raise VaultFormatError(label, "frontmatter is empty")
    if not isinstance(meta, dict):
        raise VaultFormatError(label, f"frontmatter is not a mapping (got a {type(meta).__name__})")
    meta, problem = _validate(meta)
    if problem:
        raise VaultFormatError(label, problem)
    body = rest.removeprefix("\n")  # the blank line render puts after `---`
    body = body.removesuffix("\n")  # the final newline render adds
    if not body.strip():
        raise VaultFormatError(label, "body is empty (the memory content goes after the frontmatter)")
    return meta, body


def read(path: Path, known: tuple[str, str] | None = None) -> VaultFile:
    """Parse one vault file. Raises VaultFormatError (naming `path`) if it is unusable.

    With `known` = (digest, id) recorded for this path, bytes with that digest are not parsed.
    """
    path = Path(path)
    try:
        if not path.is_file():
            raise VaultFormatError(path, "not a regular file" if path.exists() else "file not found")
        data = path.read_bytes()
    except OSError as exc:
        raise VaultFormatError(path, f"cannot read file: {exc.strerror or exc}") from exc
    digest = _digest(data)
    if known is not None and known[0] == digest:
        return VaultFile(path=path, frontmatter={"id": known[1]}, body=None, digest=digest)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise VaultFormatError(path, f"not valid UTF-8 (byte offset {exc.start})") from exc
    meta, body = _parse_text(text, path)
    return VaultFile(path=path, frontmatter=meta, body=body, digest=digest)


def scan(
    root: Path, known: Mapping[Path, tuple[str, str]] | None = None
) -> tuple[list[VaultFile], list[VaultFormatError]]:
    """Every `*.md` under `root`, parsed, in path order (see `iter_scan`), as two lists."""
    files: list[VaultFile] = []
    errors: list[VaultFormatError] = []
    for item in iter_scan(root, known):
        if isinstance(item, VaultFormatError):
            errors.append(item)
        else:
            files.append(item)
    return files, errors


def iter_scan(
    root: Path, known: Mapping[Path, tuple[str, str]] | None = None
) -> Iterator[VaultFile | VaultFormatError]:
    """Every `*.md` under `root`, parsed, in path order. Never raises for a file, never modifies one.

    `known` maps a path to the (digest, id) the database recorded for it: a file whose bytes
    still have that digest is returned unparsed (frontmatter `{"id": id}`, body None), which
    is what makes a start-up sync over a big, unchanged vault cheap (parsing YAML is the cost).
    A generator, so a sync over 100k files never holds them all.

    Skipped: names starting with `.` (files and directories, so also write_atomic's temp files), the
    top-level `prompts/` folder, and anything that is not a regular file. A missing root is empty.
    Two files may carry the same id (e.g. a copy made by hand): both are returned.
    """
    root = Path(root)
    if not root.is_dir():
        return
    walk_errors: list[VaultFormatError] = []

    def on_error(exc: OSError) -> None:
        walk_errors.append(VaultFormatError(exc.filename or root, f"cannot list directory: {exc.strerror or exc}"))

    for dirpath, dirnames, filenames in os.walk(root, onerror=on_error):
        yield from walk_errors
        walk_errors.clear()
        here = Path(dirpath)
        at_top = here == root
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and not (at_top and d in SKIPPED_TOP_DIRS))
        for name in sorted(filenames):
            if name.startswith(".") or not name.endswith(".md"):
                continue
            path = here / name
            if not path.is_file():  # a FIFO, a socket or a dangling link: never open it
                continue
            try:
                yield read(path, known.get(path) if known else None)
            except VaultFormatError as exc:
                yield exc
    yield from walk_errors
