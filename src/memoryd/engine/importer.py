"""Bulk import of memories from a JSON-lines file, in batches, resumable.

`import_jsonl(path)` reads one JSON object per line:

    {"content": "…", "type": "decision", "title": "…", "tags": ["…"], "triggers": ["…"],
     "source": "…", "scope": "global"}

Only `content` is required. `type` defaults to the one inferred from the wording, `source` to
"import", `scope` to the repository the engine was opened in ("global" = the tenant-wide scope).
The file written by `export` is accepted as well: its `{"kind": "atom", …}` lines of `active`
atoms are imported with their content, type, title, tags, triggers, source and scope (the
scope recorded in the export, so a multi-repository export lands in the same repositories);
other statuses and the `{"kind": "event", …}` lines are ignored. Imported memories get new ids,
new `create` events and new timestamps; epistemic and polarity are classified again, so earlier
corrections (confirm_necessary, negate, …) are not carried over. When a memory was written is kept:
`written_at` (ISO 8601) on any line, or an export line's `written_at`, else its `created_at`, becomes the
memory's `written_at` (a bad one makes the line bad); supersession goes by it, so an older note imported
after a newer one is stored superseded by it (`merged` / `superseded` in the report).

Every line goes through the write path of `memorize` (validation, redaction, exact dedup, the
gate, classification, entities); a batch of lines is embedded with one model call and written in
one transaction (one snapshot bump) together with an `import` audit event on the key
`import:<sha256 of the file>` that records how far the file has been read. A second run of the
same file starts after the last committed batch, so an interruption (Ctrl-C, kill -9, a failing
disk) never duplicates or loses a line. Bad lines (not JSON, not UTF-8, no content, wrong field
types) and lines the write path rejects are counted and reported with their line numbers.

`import_file(path, format=...)` also takes other tools' exports (`memoryd.formats`: Anthropic's
server-memory JSONL graph, a mem0 export, a basic-memory folder): their records are turned into
the same JSON lines (in a fixed order, so the progress key, the sha256 of those lines, makes the
import resumable the same way) and reported with their origin ("<file>:<line>") instead of a line
number.
"""

from __future__ import annotations

import hashlib
import io
import json
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from ..shared.errors import InvalidInput, Rejected
from ..shared.limits import check_text
from ..shared.models import Atom, MemorizeResult, Scope
from ..shared.stamps import norm_hash, written_time
from ..storage.base import MemoryReads
from .core import Core
from .inputs import read_in
from .writes import Draft, Embedded, Writer

__all__ = ["DEFAULT_BATCH_SIZE", "IMPORT_GATES", "ImportReport", "Importer", "MARKER_PREFIX"]

Opener = Callable[[], IO[bytes]]

MARKER_PREFIX = "import:"
DEFAULT_BATCH_SIZE = 256
# "trusted" by default: an import file is a person's own curated data (or an export), and the DURA
# heuristic rejects terse but valid notes; "admit" / "review" apply the agent gates.
IMPORT_GATES = ("trusted", "admit", "review")
MAX_PROBLEMS = 1000  # problem lines listed in a report; the counts stay exact beyond that


@dataclass
class ImportReport:
    """What one `import_jsonl` run did; counts cover this run, `skipped` the lines done before."""

    path: str
    sha256: str
    lines: int = 0
    imported: int = 0
    pending: int = 0
    merged: int = 0  # reworded restatements of a memory already there (kept as its record, `effect` merged)
    superseded: int = 0  # imported memories that replaced an older one, or were already replaced by a newer one
    duplicates: int = 0
    rejected: int = 0
    bad: int = 0
    ignored: int = 0
    skipped: int = 0
    batches: int = 0
    seconds: float = 0.0
    problems: list[dict[str, Any]] = field(default_factory=list)
    more_problems: int = 0
    format: str = "jsonl"
    # What the source holds that memoryd did not carry, by kind: items not imported on purpose (a deleted
    # OpenMemory memory, an export's superseded atom, its audit events) and parts of imported items
    # (timestamps, ids, metadata keys). Malformed and rejected items are `bad` / `rejected`, with problems.
    not_carried: dict[str, int] = field(default_factory=dict)

    @property
    def processed(self) -> int:
        return self.lines - self.skipped

    @property
    def rate(self) -> float:
        """Lines processed per second in this run."""
        return self.processed / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> str:
        held = f" ({self.pending} pending review)" if self.pending else ""
        linked = f", merged {self.merged}" if self.merged else ""
        linked += f" ({self.superseded} superseding or superseded)" if self.superseded else ""
        out = (
            f"imported {self.imported}{held}{linked}, duplicates {self.duplicates}, rejected {self.rejected}, "
            f"bad {self.bad}, skipped {self.skipped} (already imported), ignored {self.ignored}; "
            f"{self.processed} lines in {self.seconds:.1f} s ({self.rate:.0f} lines/s)"
        )
        if self.not_carried:
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.not_carried.items()))
            out += f"\nnot carried (by kind): {kinds}"
        return out

    def _carry(self, kind: str, n: int = 1) -> None:
        self.not_carried[kind] = self.not_carried.get(kind, 0) + n

    def as_dict(self) -> dict[str, Any]:
        keys = ("path", "format", "sha256", "lines", "imported", "pending", "merged", "superseded", "duplicates",
                "rejected", "bad", "ignored",
                "skipped", "batches", "problems", "more_problems", "not_carried")  # fmt: skip
        out = {k: getattr(self, k) for k in keys}
        out.update(seconds=round(self.seconds, 3), rate=round(self.rate, 1))
        return out


@dataclass
class _Line:
    number: int
    fields: dict[str, Any] | None = None  # memorize keyword arguments, when the line is importable
    problem: str | None = None  # why the line is bad
    ignored: str | None = None  # why the line is deliberately not imported
    keep: dict[str, str] | None = None  # what an export of memoryd's own keeps: id, timestamps, epistemic, polarity
    dropped: list[str] = field(default_factory=list)  # parts of the line not carried, by kind


@dataclass
class _Batch:
    """Lines first..last of the file (ending at byte `end`), prepared and not yet committed."""

    first: int
    last: int = 0
    end: int = 0
    drafts: list[Draft] = field(default_factory=list)
    counts: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(("duplicates", "rejected", "bad", "ignored"), 0)
    )
    problems: list[dict[str, Any]] = field(default_factory=list)
    not_carried: dict[str, int] = field(default_factory=dict)


def _scan(path: Path) -> tuple[str, int]:
    """sha256 of the file's bytes and its number of lines (a last line without newline counts)."""
    digest = hashlib.sha256()
    lines = 0
    last = b"\n"
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
            lines += chunk.count(b"\n")
            last = chunk[-1:]
    return digest.hexdigest(), lines + (last != b"\n")


def _str_list(value: Any, name: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{name} must be a list of strings")
    return value


class Importer:
    def __init__(self, core: Core, writer: Writer, *, memories: MemoryReads) -> None:
        self.memories = memories
        self.core = core
        self.writer = writer

    def import_state(self, sha256: str) -> dict[str, Any] | None:
        """The recorded progress of the file with this content hash, or None if never imported."""
        return self.core.marker_state(MARKER_PREFIX + sha256, "import")

    def import_jsonl(
        self,
        path: str | Path,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        gate: str = "trusted",
        source: str = "import",
        progress: Callable[[int, int], None] | None = None,
    ) -> ImportReport:
        """Import a JSON-lines file (format in the module docstring), resuming an interrupted run.

        `progress(lines_done, lines_total)` is called once at the start and after every committed
        batch. An exception (storage failure, KeyboardInterrupt) rolls back the batch in flight
        only; running the same file again continues after the last committed batch.

        Raises:
            InvalidInput: the file is missing or unreadable, batch_size < 1, an unknown gate or an
                empty source.
        """
        start = time.perf_counter()
        path = Path(path)
        self._check_import_args(batch_size, gate, source)
        if not path.is_file():
            raise InvalidInput(f"no file at {path}")
        from ..formats import read_bytes

        data = read_bytes(path)  # a .jsonl.gz is read decompressed, never as "not UTF-8" lines
        if data is not None:
            total = data.count(b"\n") + (not data.endswith(b"\n") and bool(data))
            return self._import_lines(lambda: io.BytesIO(data), str(path), hashlib.sha256(data).hexdigest(), total,
                                      start=start, batch_size=batch_size, gate=gate, source=source,
                                      progress=progress)  # fmt: skip
        try:
            sha, total = _scan(path)
        except OSError as exc:
            raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from exc
        return self._import_lines(lambda: path.open("rb"), str(path), sha, total, start=start, batch_size=batch_size,
                                  gate=gate, source=source, progress=progress)  # fmt: skip

    def import_file(
        self,
        path: str | Path,
        *,
        format: str = "auto",
        batch_size: int = DEFAULT_BATCH_SIZE,
        gate: str = "trusted",
        source: str | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> ImportReport:
        """Import `path` in `format` (`auto` detects it; see `memoryd.formats`): memoryd's JSON lines, a
        server-memory graph, a mem0 export or a basic-memory folder. `source` overrides the records'
        own (server-memory, mem0, basic-memory). Resumable like `import_jsonl`.

        Raises:
            InvalidInput: no such file or folder, an unknown format, a file that is not in the format,
                or the arguments `import_jsonl` refuses.
        """
        from .. import formats

        start = time.perf_counter()
        path = Path(path)
        if not path.exists():
            raise InvalidInput(f"no file or folder at {path}")
        if format != "auto" and format not in formats.FORMATS:
            raise InvalidInput(f"unknown format {format!r}; expected auto or one of {', '.join(formats.FORMATS)}")
        data = None if path.is_dir() else formats.read_bytes(path)  # gzip / an OpenMemory zip, decompressed
        fmt = formats.detect(path, data) if format == "auto" else format
        if fmt == "jsonl":
            return self.import_jsonl(path, batch_size=batch_size, gate=gate, source=source or "import",
                                     progress=progress)  # fmt: skip
        if fmt in ("basic-memory", "memoryd-markdown") and not path.is_dir():
            raise InvalidInput(f"{fmt} imports a folder of notes; {path} is a file")
        if fmt not in ("basic-memory", "memoryd-markdown") and not path.is_file():
            raise InvalidInput(f"{fmt} imports a file; {path} is a folder")
        self._check_import_args(batch_size, gate, source or fmt)
        records = list(formats.read_records(fmt, path, data))
        lines, origins, problems = [], [], []
        not_carried: dict[str, int] = {}
        for r in records:
            for kind in (r.fields["not_carried"],) if "not_carried" in r.fields else r.dropped:
                not_carried[kind] = not_carried.get(kind, 0) + 1
            if "not_carried" in r.fields:
                continue
            fields = {k: v for k, v in r.fields.items() if v not in (None, [], "")}
            if source:
                fields["source"] = source
            lines.append(json.dumps({"problem": True} if "problem" in fields else fields, ensure_ascii=False,
                                    sort_keys=True))  # fmt: skip
            origins.append(r.origin)
            problems.append(r.fields.get("problem"))
        data = ("\n".join(lines) + "\n").encode("utf-8") if lines else b""
        sha = hashlib.sha256(f"{fmt}\n".encode() + data).hexdigest()
        report = self._import_lines(lambda: io.BytesIO(data), str(path), sha, len(lines), start=start,
                                    batch_size=batch_size, gate=gate, source=source or fmt, progress=progress)  # fmt: skip
        for p in report.problems:  # name the place in the source, and the format's own reason
            i = int(p["line"]) - 1
            if 0 <= i < len(origins):
                p["origin"] = origins[i]
                if problems[i]:
                    p["reason"] = problems[i]
        report.format = fmt
        for kind, n in not_carried.items():
            report._carry(kind, n)
        return report

    @staticmethod
    def _check_import_args(batch_size: int, gate: str, source: str) -> None:
        if not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInput(f"batch_size must be a positive integer, got {batch_size!r}")
        if gate not in IMPORT_GATES:
            raise InvalidInput(f"unknown gate {gate!r}; expected one of {', '.join(IMPORT_GATES)}")
        if not isinstance(source, str) or not source.strip():
            raise InvalidInput("source must be a non-empty string")
        check_text("source", source)

    def _import_lines(
        self, opener: Opener, label: str, sha: str, total: int, *, start: float, batch_size: int, gate: str,
        source: str, progress: Callable[[int, int], None] | None,
    ) -> ImportReport:  # fmt: skip
        """Import JSON lines read from `opener()`, resuming after what an earlier run of `sha` committed."""
        report = ImportReport(path=label, sha256=sha, lines=total)
        state = self.import_state(sha) or {}
        offset, done_lines = int(state.get("offset", 0)), int(state.get("line", 0))
        report.skipped = done_lines
        if progress:
            progress(done_lines, total)
        # Pipelined: while batch k is written (SQLite, YAML, fsync) one worker thread embeds batch
        # k+1 (numpy, GIL released), so the two largest costs overlap on a second core. Batch k+1
        # is prepared before batch k commits; `seen` holds the uncommitted drafts for dedup.
        seen: dict[tuple[str, str], Atom] = {}
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memoryd-import-embed")
        in_flight: tuple[_Batch, Future[list[Embedded]]] | None = None
        number = done_lines
        try:
            for batch in self._read_batches(opener, offset, done_lines, batch_size, gate=gate, source=source,
                                            seen=seen):  # fmt: skip
                number = batch.last
                texts = [d.atom.content for d in batch.drafts]
                future: Future[list[Embedded]] = pool.submit(self.writer.embed_many, texts)
                if in_flight is not None:
                    self._commit_batch(*in_flight, report, state, source=source, seen=seen, progress=progress)
                in_flight = (batch, future)
            if in_flight is not None:
                self._commit_batch(*in_flight, report, state, source=source, seen=seen, progress=progress)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        report.lines = max(total, number)  # a file appended to while it was read
        report.seconds = time.perf_counter() - start
        return report

    # -- pieces ------------------------------------------------------------------------------

    def _read_batches(
        self, opener: Opener, offset: int, number: int, size: int, *, gate: str, source: str,
        seen: dict[tuple[str, str], Atom],
    ) -> Iterator[_Batch]:  # fmt: skip
        """Parse and prepare the file from `offset` on, `size` lines at a time."""
        batch = _Batch(first=number + 1)
        with opener() as fh:
            fh.seek(offset)
            for raw in fh:
                offset += len(raw)
                number += 1
                self._prepare_line(batch, number, raw, gate=gate, source=source, seen=seen)
                batch.last, batch.end = number, offset
                if number - batch.first + 1 >= size:
                    yield batch
                    batch = _Batch(first=number + 1)
        if batch.last:
            yield batch

    def _prepare_line(
        self, batch: _Batch, number: int, raw: bytes, *, gate: str, source: str, seen: dict[tuple[str, str], Atom]
    ) -> None:
        line = self._parse_line(number, raw, default_source=source)
        if line.problem is not None:
            batch.counts["bad"] += 1
            batch.problems.append({"line": number, "kind": "bad", "reason": line.problem})
            return
        if line.fields is None:
            batch.counts["ignored"] += 1
            if line.ignored and line.ignored != "blank line":
                batch.not_carried[line.ignored] = batch.not_carried.get(line.ignored, 0) + 1
            return
        fields = read_in("import line", line.fields, content_limit=self.core.settings.max_content_chars)
        for kind in line.dropped:
            batch.not_carried[kind] = batch.not_carried.get(kind, 0) + 1
        try:
            r = self.writer.prepare(fields.pop("content"), gate=gate, actor=source, origin="import", batch=seen,
                                    **fields)  # fmt: skip
        except Rejected as exc:
            batch.counts["rejected"] += 1
            batch.problems.append({"line": number, "kind": "rejected", "reason": exc.message})
            return
        if line.keep and isinstance(r, Draft):
            kept = self._kept(r.atom, line.keep, batch)
            if kept is not r.atom:
                seen[(kept.scope_hash, norm_hash(kept.content))] = kept
                r.atom = kept
        if isinstance(r, MemorizeResult):  # a duplicate
            batch.counts["duplicates"] += 1
            return
        batch.drafts.append(r)

    def _commit_batch(
        self, batch: _Batch, vectors: Future[list[Embedded]], report: ImportReport, state: dict[str, Any], *,
        source: str, seen: dict[tuple[str, str], Atom], progress: Callable[[int, int], None] | None,
    ) -> None:  # fmt: skip
        """Write one prepared batch and its progress record in one transaction, then count it."""
        counts = {"imported": 0, "pending": 0, "merged": 0, "superseded": 0, **batch.counts}
        done = list(zip(batch.drafts, vectors.result(), strict=True))
        for i, (draft, vector) in enumerate(done):  # step 4b, against the store and this batch's earlier lines
            if draft.link is None:
                draft.link = self.writer.linker.find(
                    draft.atom, vector.main, batch=[(d.atom, v.main) for d, v in done[:i]]
                )
        tx = None
        try:
            with self.core.write() as tx:
                for draft, vector in done:
                    r = self.writer.store_draft(tx, draft, vector)
                    counts[
                        "merged" if r.effect == "merged" else "pending" if r.status == "pending" else "imported"
                    ] += 1
                    counts["superseded"] += bool(r.supersedes or r.superseded_by)
                # Cumulative over every run of this file; `offset`/`line` are where the next run starts.
                new_state = {**state, **{k: int(state.get(k, 0)) + v for k, v in counts.items()},
                             "offset": batch.end, "line": batch.last, "path": report.path, "sha256": report.sha256}  # fmt: skip
                reason = (f"lines {batch.first}-{batch.last}: {counts['imported']} imported, {counts['pending']} "
                          f"pending, {counts['merged']} merged, {counts['duplicates']} duplicates, {counts['rejected']} rejected, "
                          f"{counts['bad']} bad, {counts['ignored']} ignored")  # fmt: skip
                tx.append_event(atom_id=MARKER_PREFIX + report.sha256, actor=source, action="import",
                                reason=reason, content=json.dumps(new_state, ensure_ascii=False, sort_keys=True))  # fmt: skip
        except BaseException:
            # Rolled back: nothing of the batch exists (files are only written after a commit). Committed
            # and then interrupted while its files were published (Ctrl-C): it counts, the files follow
            # at the next start (`Core.write`).
            if tx is None or not tx.committed:
                raise
            self._count_batch(batch, counts, new_state, report, state, seen, progress)
            raise
        self._count_batch(batch, counts, new_state, report, state, seen, progress)

    def _count_batch(
        self, batch: _Batch, counts: dict[str, int], new_state: dict[str, Any], report: ImportReport,
        state: dict[str, Any], seen: dict[tuple[str, str], Atom], progress: Callable[[int, int], None] | None,
    ) -> None:  # fmt: skip
        for draft in batch.drafts:  # committed: the store's own dedup sees them from now on
            seen.pop((draft.atom.scope_hash, norm_hash(draft.atom.content)), None)
        state.clear()
        state.update(new_state)
        for key, value in counts.items():
            setattr(report, key, getattr(report, key) + value)
        report.batches += 1
        for kind, n in batch.not_carried.items():
            report._carry(kind, n)
        room = MAX_PROBLEMS - len(report.problems)
        report.problems.extend(batch.problems[:room])
        report.more_problems += max(0, len(batch.problems) - room)
        if progress:
            progress(batch.last, report.lines)

    def _parse_line(self, number: int, raw: bytes, *, default_source: str) -> _Line:
        """Turn one line into memorize arguments, or say why it is bad or ignored."""
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return _Line(number, problem=f"not UTF-8 (invalid byte at position {exc.start + 1})")
        if not text.strip():
            return _Line(number, ignored="blank line")
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            return _Line(number, problem=f"invalid JSON: {exc.msg} (column {exc.colno})")
        if not isinstance(obj, dict):
            return _Line(number, problem=f"expected a JSON object, got {type(obj).__name__}")
        kind = obj.get("kind")
        if kind == "event":
            return _Line(number, ignored="export audit event")
        if kind not in (None, "atom"):
            return _Line(number, problem=f'unknown kind {kind!r}; expected "atom" (an export line) or none')
        if kind == "atom" and obj.get("status", "active") != "active":
            return _Line(number, ignored=f"export atom with status {obj.get('status')}")
        if "content" not in obj:
            return _Line(number, problem='missing "content"')
        if not isinstance(obj["content"], str):
            return _Line(number, problem='"content" must be a string')
        try:
            for name in ("type", "title", "source"):
                if obj.get(name) is not None and not isinstance(obj[name], str):
                    raise ValueError(f"{name} must be a string")
            fields = {
                "content": obj["content"], "type": obj.get("type"), "title": obj.get("title"),
                "tags": _str_list(obj.get("tags"), "tags"), "triggers": _str_list(obj.get("triggers"), "triggers"),
                "source": obj.get("source") or default_source, "scope": self._import_scope(obj.get("scope")),
            }  # fmt: skip
            # when it was written at its source: `written_at`; an export line of memoryd's own: its written_at,
            # else its created_at (the time it was stored where it was exported from)
            when = obj.get("written_at") or (obj.get("created_at") if kind == "atom" else None)
            try:
                fields["written_at"] = written_time(when, "written_at" if obj.get("written_at") else "created_at")
            except InvalidInput as exc:
                raise ValueError(exc.message) from None
            dropped = []
            scope_name = obj.get("scope_name")  # a markdown export names the scope only
            if isinstance(scope_name, str) and obj.get("scope") is None:
                if scope_name in ("global", self.core.global_scope.name):
                    fields["scope"] = self.core.global_scope
                elif scope_name != self.core.scope.name:
                    dropped.append(f"scope {scope_name} (imported into {self.core.scope.name})")
            keep = obj.get("keep")
            if keep is not None and (not isinstance(keep, dict) or not all(isinstance(v, str) for v in keep.values())):
                raise ValueError("keep must be an object of strings")
        except ValueError as exc:
            return _Line(number, problem=str(exc))
        return _Line(number, fields=fields, keep=keep, dropped=dropped)

    def _kept(self, atom: Atom, keep: dict[str, str], batch: _Batch) -> Atom:
        """The atom with the id, timestamps, epistemic and polarity its export recorded (an id already in the
        store, or in this batch, keeps the new one; a value that does not validate is counted, not applied)."""
        from datetime import datetime

        update: dict[str, Any] = {}
        wanted = keep.get("id")
        if wanted and not self.memories.get_atoms([wanted]) and all(d.atom.id != wanted for d in batch.drafts):
            update["id"] = wanted
        for key, name in (("created", "created_at"), ("updated", "updated_at"), ("written", "written_at")):
            if keep.get(key):
                try:
                    update[name] = datetime.fromisoformat(keep[key])
                except ValueError:
                    batch.not_carried[f"unreadable {key} timestamp"] = (
                        batch.not_carried.get(f"unreadable {key} timestamp", 0) + 1
                    )
        for key in ("epistemic", "polarity"):
            if keep.get(key):
                update[key] = keep[key]
        try:
            return Atom.model_validate({**atom.model_dump(), **update})
        except ValidationError:
            batch.not_carried["kept fields that do not validate"] = batch.not_carried.get(
                "kept fields that do not validate", 0) + 1  # fmt: skip
            return atom

    def _import_scope(self, value: Any) -> Scope:
        if value is None or value in ("auto", "global"):
            return self.core.resolve_scope(value)
        if isinstance(value, dict):  # an export line carries the full scope
            try:
                return Scope.model_validate(value)
            except ValidationError as exc:
                raise ValueError(f"scope is not a valid scope object: {exc.errors()[0]['msg']}") from exc
        raise ValueError(f'scope must be "global" or omitted, got {value!r}')
