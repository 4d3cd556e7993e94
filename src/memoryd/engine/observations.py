"""Transcript observations: what a session's conversation says that may be worth remembering.

`observe_transcript(path, session_id)` reads a Claude Code transcript (JSON lines: `user`
records whose `message.content` is a string or a list of `text` / `tool_result` blocks,
`assistant` records with `text`, `thinking` and `tool_use` blocks, plus `summary`,
`system`, `file-history-snapshot`, … records that are skipped) and turns it into promotion
candidates:

- user statements of preferences, decisions and constraints (prefer / always / never / must /
  don't / instead of / 偏好 / 必须 / 不要 / 决定 / 改用 …) — the strong signal;
- assistant conclusions (root cause / turns out / 根因 / 结论 …) — weaker: fewer, stricter cues.

Each candidate goes through the normal write path (`memorize`, source "transcript", origin
"observation"): validation, redaction, dedup and DURA admission. Junk is rejected; everything
else is held as `pending` for a person to promote or reject — an observation never becomes
active by itself. At session end, when the session wrote no handoff of its own, a short handoff
summarising it (task, files changed, last update) is written.

Processing is deterministic and idempotent per session: each run appends one audit event on
the key `transcript:<session_id>` whose payload records how far the transcript was read and
the running state; a second run for the same session reads only what was appended since, so
running a hook twice adds nothing.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..search.tokenize import language
from ..shared.errors import InvalidInput, Rejected
from ..shared.models import MemorizeResult
from ..storage.base import MemoryReads
from .core import Core
from .inputs import read_in
from .writes import Writer

__all__ = [
    "Candidate",
    "Observer",
    "ObservationReport",
    "TranscriptChunk",
    "extract_candidates",
    "read_transcript",
]

MARKER_PREFIX = "transcript:"
MAX_READ_BYTES = 8 * 1024 * 1024  # per run; the rest is read by the next run
MAX_USER_CANDIDATES = 20
MAX_ASSISTANT_CANDIDATES = 3

# -- transcript reading --------------------------------------------------------------------------

_EDIT_TOOLS = {"Edit", "Write", "MultiEdit", "NotebookEdit"}
_HANDOFF_TOOLS = ("memory_handoff", "mem_session_end")
_NOISE_TAGS = re.compile(
    r"<(system-reminder|command-name|command-message|command-args|local-command-stdout|local-command-stderr|"
    r"user-prompt-submit-hook|bash-input|bash-stdout|bash-stderr)>.*?</\1>",
    re.DOTALL,
)
_SKIP_TEXT = re.compile(r"^\s*(\[Request interrupted by user|Caveat: The messages below were generated)")


@dataclass
class Message:
    role: str  # "user" or "assistant"
    text: str
    offset: int  # byte offset of its line in the transcript


@dataclass
class TranscriptChunk:
    """What one read of a transcript found, from `start` up to `end` (a line boundary)."""

    start: int
    end: int
    size: int
    messages: list[Message] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    handoff_tools: int = 0
    bad_lines: int = 0
    first_at: str | None = None  # record timestamps, for a date that does not depend on when this runs
    last_at: str | None = None


def _text_of(content: Any) -> str:
    """The visible text of a message's content (string, or text blocks; tool results skipped)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text" and b.get("text")
    )


def read_transcript(path: str | Path, start: int = 0, *, max_bytes: int = MAX_READ_BYTES) -> TranscriptChunk:
    """Read complete JSON lines from byte `start`; a partial last line is left for the next read."""
    path = Path(path)
    size = path.stat().st_size
    if start > size:  # the file was replaced: start over (dedup keeps this harmless)
        start = 0
    chunk = TranscriptChunk(start=start, end=start, size=size)
    with path.open("rb") as fh:
        fh.seek(start)
        pos = start
        while pos - start < max_bytes:
            raw = fh.readline()
            if not raw or not raw.endswith(b"\n"):
                break  # end of file, or a line still being written
            offset, pos = pos, pos + len(raw)
            chunk.end = pos
            try:
                rec = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                chunk.bad_lines += 1
                continue
            if isinstance(rec, dict):
                _take(rec, offset, chunk)
    return chunk


def _take(rec: dict[str, Any], offset: int, chunk: TranscriptChunk) -> None:
    kind = rec.get("type")
    if isinstance(rec.get("timestamp"), str):
        chunk.first_at = chunk.first_at or rec["timestamp"]
        chunk.last_at = rec["timestamp"]
    if kind not in ("user", "assistant") or rec.get("isSidechain") or rec.get("isMeta"):
        return
    if rec.get("isCompactSummary") or rec.get("isVisibleInTranscriptOnly"):
        return
    message = rec.get("message")
    if not isinstance(message, dict):
        return
    content = message.get("content")
    if kind == "assistant" and isinstance(content, list):
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "tool_use":
                continue
            name = str(block.get("name") or "")
            if name.endswith(_HANDOFF_TOOLS) and name.startswith("mcp__"):
                chunk.handoff_tools += 1
            tool_input = block.get("input")
            tool_input = tool_input if isinstance(tool_input, dict) else {}
            file_path = tool_input.get("file_path") or tool_input.get("notebook_path")
            if name in _EDIT_TOOLS and isinstance(file_path, str) and file_path not in chunk.files:
                chunk.files.append(file_path)
    text = _NOISE_TAGS.sub("", _text_of(content)).strip()
    if text and not _SKIP_TEXT.match(text):
        chunk.messages.append(Message(role=kind, text=text, offset=offset))


@dataclass
class SessionSummary:
    first_request: str = ""
    last_update: str = ""
    files: list[str] = field(default_factory=list)
    handoff_tools: int = 0
    started_at: str | None = None


SUMMARY_WINDOW = 8 * 1024 * 1024


def summarize_transcript(path: Path) -> SessionSummary:
    """Task (first request), files changed, last update and start date of a whole session.

    A transcript over twice SUMMARY_WINDOW is summarised from its first and last windows.
    """
    size = path.stat().st_size
    if size <= 2 * SUMMARY_WINDOW:
        chunks = [read_transcript(path, 0, max_bytes=size + 1)]
    else:
        with path.open("rb") as fh:  # the tail window starts at the first whole line in it
            fh.seek(size - SUMMARY_WINDOW)
            fh.readline()
            tail_start = fh.tell()
        chunks = [read_transcript(path, 0, max_bytes=SUMMARY_WINDOW), read_transcript(path, tail_start, max_bytes=size)]
    out = SessionSummary()
    for chunk in chunks:
        out.handoff_tools += chunk.handoff_tools
        out.started_at = out.started_at or chunk.first_at
        out.files += [f for f in chunk.files if f not in out.files]
        users = [m for m in chunk.messages if m.role == "user"]
        if not out.first_request and users:
            out.first_request = _clip(users[0].text, 300)
        replies = [m for m in chunk.messages if m.role == "assistant" and _weight(m.text) >= 20]
        if replies:
            out.last_update = _clip(replies[-1].text, 500)
    return out


# -- candidate extraction --------------------------------------------------------------------------

_USER_CUES = re.compile(
    r"\b(prefer(s|red|ence)?|always|never|don'?t|do not|must(n'?t)?|make sure|remember( that)?|from now on|"
    r"going forward|(in|for) the future|decided?|decision|let'?s (use|go with|switch|keep|stick)|"
    r"we('ll| will)? use|instead of|rather than|switch(ed)? (to|from)|avoid|stick (to|with)|convention|"
    r"requires?|not allowed|forbidden|only use|no longer)\b|"
    r"(偏好|喜欢|喜歡|习惯|習慣|总是|總是|一律|永远|永遠|始终|始終|不要|别再|別再|不许|不許|不准|必须|必須|务必|務必|"
    r"禁止|一定要|决定|決定|改用|换成|換成|以后都|以後都|今后|今後|记住|記住|统一用|統一用|而不是|代替|取代|避免|"
    r"约定|約定|规范|規範|不再)",
    re.IGNORECASE,
)
_ASSISTANT_CUES = re.compile(
    r"\b(root cause|the (fix|problem|issue|bug|cause) (is|was)|turns out|it turned out|the reason (is|was)|"
    r"lesson learned|gotcha)\b|(根因|根本原因|原因是|问题在于|問題在於|结论|結論|教训|教訓)",
    re.IGNORECASE,
)
_ASSISTANT_SKIP = re.compile(
    r"^(I'?ll|I will|I'?m going|Let me|Now (I|let)|Next,? I|Great|Sure|OK|Okay)\b|^(我来|我將|我将|让我|讓我|接下来|接下來|好的)",
    re.IGNORECASE,
)
_PHATIC = re.compile(
    r"\b(never mind|nevermind|no worries|don'?t worry|no problem|not a big deal|thanks?|thank you)\b|"
    r"(没关系|沒關係|不用了|算了|没事|沒事|谢谢|謝謝)",
    re.IGNORECASE,
)
_QUESTION_END = re.compile(r"[?？]\s*$|(吗|嗎|呢)\s*[。.]?\s*$")
_LOGLIKE = re.compile(r"(error|exception|traceback|warning|fatal|stack trace)\s*[:(]|^\s*(at |File \"|\$ |>>> |#\s)",
                      re.IGNORECASE)  # fmt: skip
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)]|>+)\s+")
_FILLER = re.compile(r"^(ok(ay)?|also|and|btw|by the way|so|well|好的|好|另外|还有|還有|对了|對了|嗯)[,，:：\s]+",
                     re.IGNORECASE)  # fmt: skip
_SENTENCE = re.compile(r"(?<=[。！？!?])\s*|(?<=[.])\s+(?=[A-Z\u3400-\u9fff\"'`(])")
_FENCE = re.compile(r"```.*?(```|$)", re.DOTALL)
_CJK = re.compile(r"[\u3400-\u9fff]")
_MEMORY_LINE = re.compile(r"\([0-9A-HJKMNP-TV-Z]{26}\)\s*$")  # a line of memoryd's own brief: never re-observed


@dataclass
class Candidate:
    text: str
    role: str
    offset: int


def _weight(text: str) -> int:
    cjk = len(_CJK.findall(text))
    return cjk * 2 + (len(text) - cjk)


def _sentences(text: str) -> Iterator[str]:
    lines = _FENCE.sub("\n", text).splitlines()
    if len(lines) > 40:  # a paste (logs, files): only its ends are the person talking
        lines = lines[:10] + lines[-10:]
    for line in lines:
        if line.lstrip().startswith(">") or _MEMORY_LINE.search(line):
            continue  # quoted material, or a line of memoryd's own brief
        line = _BULLET.sub("", line).strip()
        for part in _SENTENCE.split(line):
            part = _FILLER.sub("", part.strip()).strip()
            if part:
                yield part


def extract_candidates(messages: list[Message]) -> list[Candidate]:
    """Deterministic cue-based extraction; user statements first-class, assistant conclusions capped."""
    out: list[Candidate] = []
    seen: set[str] = set()
    counts = {"user": 0, "assistant": 0}
    caps = {"user": MAX_USER_CANDIDATES, "assistant": MAX_ASSISTANT_CANDIDATES}
    for m in messages:
        cues = _USER_CUES if m.role == "user" else _ASSISTANT_CUES
        for s in _sentences(m.text):
            if counts[m.role] >= caps[m.role]:
                break
            w = _weight(s)
            if w < 12 or len(s) > 500 or not cues.search(s) or _QUESTION_END.search(s) or _LOGLIKE.search(s) \
                    or _MEMORY_LINE.search(s):  # fmt: skip
                continue
            if m.role == "assistant" and _ASSISTANT_SKIP.search(s):
                continue
            if _PHATIC.search(s) and w < 40:
                continue  # politeness, not a rule
            if sum(ch in "{}[]();=<>" for ch in s) > max(4, len(s) // 10):
                continue  # code, not a statement
            key = re.sub(r"\s+", " ", s.casefold())
            if key in seen:
                continue
            seen.add(key)
            counts[m.role] += 1
            out.append(Candidate(text=s, role=m.role, offset=m.offset))
    return out


# -- the engine part ---------------------------------------------------------------------------------


@dataclass
class ObservationReport:
    """What one `observe_transcript` run did."""

    session_id: str
    transcript: str
    start: int
    end: int
    skipped: str | None = None  # why nothing was read (already processed, missing file)
    candidates: list[dict[str, Any]] = field(default_factory=list)
    held: int = 0
    rejected: int = 0
    duplicates: int = 0
    merged: int = 0  # restatements of a memory already stored: kept as its record, nothing to review
    handoff_atom_id: str | None = None
    handoff_reason: str | None = None
    truncated: bool = False  # stopped early (size or time); the next run goes on from `end`

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        if self.skipped:
            return f"session {self.session_id}: {self.skipped}"
        return (
            f"session {self.session_id}: read bytes {self.start}-{self.end}, {len(self.candidates)} candidate(s): "
            f"{self.held} held for review, {self.rejected} rejected, {self.duplicates} already known"
            + (f", {self.merged} merged into what was known" if self.merged else "")
            + (f"; handoff {self.handoff_atom_id}" if self.handoff_atom_id else "")
            + (f"; no handoff ({self.handoff_reason})" if self.handoff_reason else "")
            + ("; more to read" if self.truncated else "")
        )


class Observer:
    def __init__(self, core: Core, writer: Writer, *, memories: MemoryReads) -> None:
        self.memories = memories
        self.core = core
        self.writer = writer

    def observation_state(self, session_id: str) -> dict[str, Any] | None:
        """The recorded progress of a transcript (byte offset, counters, handoff id), or None if never read."""
        return self.core.marker_state(MARKER_PREFIX + session_id, "observe")

    def observe_transcript(
        self,
        path: str | Path,
        session_id: str,
        *,
        final: bool = True,
        event: str = "session-end",
        source: str = "transcript",
        budget_seconds: float = 30.0,
        max_bytes: int | None = None,
    ) -> ObservationReport:
        """Turn what a transcript added since the last run into pending promotion candidates.

        `final` (session end) also writes a handoff when the session wrote none. One call reads at
        most `max_bytes` (default MAX_READ_BYTES) and works at most `budget_seconds`; the report's
        `truncated` says more is left for the next call. Idempotent per `session_id`.

        Raises:
            InvalidInput: an empty session id.
        """
        max_bytes = max_bytes or MAX_READ_BYTES
        if not isinstance(session_id, str) or not session_id.strip():
            raise InvalidInput("session_id is empty")
        session_id = session_id.strip()
        path = Path(path)
        with self._session_lock(session_id):
            state = self.observation_state(session_id) or {}
            start = int(state.get("offset", 0))
            report = ObservationReport(session_id=session_id, transcript=str(path), start=start, end=start)
            if not path.is_file():
                report.skipped = f"no transcript at {path}"
                return report
            chunk = read_transcript(path, start, max_bytes=max_bytes)
            report.end = chunk.end
            report.truncated = chunk.end < chunk.size and chunk.end - chunk.start >= max_bytes
            state = self._fold(state, chunk)
            deadline = time.monotonic() + budget_seconds
            for cand in extract_candidates(chunk.messages):
                if time.monotonic() > deadline:  # bounded: the rest waits for the next run
                    report.end = cand.offset
                    report.truncated = True
                    break
                try:
                    r = self._memorize_held(cand, source=source, session_id=session_id)
                except Rejected as exc:
                    report.candidates.append({"text": cand.text, "role": cand.role, "effect": "rejected",
                                              "reason": exc.message})  # fmt: skip
                    report.rejected += 1
                    continue
                entry = {"text": cand.text, "role": cand.role, "effect": r.effect, "status": r.status,
                         "atom_id": r.atom_id, "promotion_id": r.promotion_id, "reason": r.reason}  # fmt: skip
                report.candidates.append({k: v for k, v in entry.items() if v is not None})
                if r.effect == "no_op":
                    report.duplicates += 1
                elif r.effect == "merged":
                    report.merged += 1
                else:
                    report.held += 1
            state["held_total"] = int(state.get("held_total", 0)) + report.held
            if final and not report.truncated:
                self._final_handoff(state, report, session_id, source)
            if report.end == start and not report.handoff_atom_id:
                report.skipped = "nothing new since the last run"
                return report
            state.update(offset=report.end, transcript=str(path), session_id=session_id,
                         last_event=event, final=bool(state.get("final")) or (final and not report.truncated))  # fmt: skip
            reason = (f"{event}: bytes {start}-{report.end}, {report.held} held, {report.rejected} rejected, "
                      f"{report.duplicates} known" + (f", handoff {report.handoff_atom_id}" if report.handoff_atom_id
                                                      else ""))  # fmt: skip
            with self.core.write() as tx:
                tx.append_event(atom_id=MARKER_PREFIX + session_id, actor=source, action="observe", reason=reason,
                                content=json.dumps(state, ensure_ascii=False, sort_keys=True))  # fmt: skip
            return report

    # -- pieces ----------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _session_lock(self, session_id: str) -> Iterator[None]:
        """One run per session at a time (a PreCompact worker and a SessionEnd worker can overlap);
        `filelock` locks the file on POSIX and Windows alike."""
        from filelock import FileLock

        lock_dir = self.core.settings.home / "locks"
        lock_dir.mkdir(parents=True, exist_ok=True)
        safe = re.sub(r"[^A-Za-z0-9._-]", "_", session_id)[:120]
        with FileLock(lock_dir / f"transcript-{safe}.lock"):
            yield

    def _memorize_held(self, cand: Candidate, *, source: str, session_id: str) -> MemorizeResult:
        """The write path with every admitted candidate held as pending (never straight to active)."""
        tags = ["observation"] if cand.role == "user" else ["observation", "assistant"]
        text = read_in("transcript", {"text": cand.text}, content_limit=self.core.settings.max_content_chars)["text"]
        return self.writer.memorize(text, source=source, tags=tags, gate="hold", origin="observation")

    @staticmethod
    def _fold(state: dict[str, Any], chunk: TranscriptChunk) -> dict[str, Any]:
        """Carry the run-to-run counters. No conversation text: the marker is an audit payload that a
        tombstone of the handoff would not reach, so the summary is rebuilt from the transcript."""
        state = dict(state)
        state["agent_handoff"] = bool(state.get("agent_handoff")) or chunk.handoff_tools > 0
        state["user_messages"] = int(state.get("user_messages", 0)) + sum(m.role == "user" for m in chunk.messages)
        return state

    def _final_handoff(self, state: dict[str, Any], report: ObservationReport, session_id: str, source: str) -> None:
        if state.get("handoff_atom_id"):
            report.handoff_reason = "already written for this session"
            return
        if state.get("agent_handoff"):
            report.handoff_reason = "the session wrote its own handoff"
            return
        summary = summarize_transcript(Path(report.transcript))
        if summary.handoff_tools:
            report.handoff_reason = "the session wrote its own handoff"
            return
        if not summary.first_request:
            report.handoff_reason = "the session had no request to summarise"
            return
        tag = f"claude-code session {session_id}"
        for a in self.memories.list_atoms(scope_hashes=[self.core.scope.scope_hash], statuses=["active"],
                                            types=["handoff"], limit=20):  # fmt: skip
            if tag in a.content:  # written by a run that stopped before recording it
                state["handoff_atom_id"] = a.id
                report.handoff_reason = "already written for this session"
                return
        text = _handoff_text(summary, int(state.get("held_total", 0)), session_id)
        try:
            limit = self.core.settings.max_content_chars
            r = self.writer.handoff(read_in("transcript", {"text": text}, content_limit=limit)["text"], source=source)
        except Rejected as exc:
            report.handoff_reason = exc.message
        else:
            state["handoff_atom_id"] = report.handoff_atom_id = r.atom_id


def _clip(text: str, n: int) -> str:
    text = re.sub(r"\s+", " ", _FENCE.sub(" ", text)).strip()
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


_HANDOFF_LABELS = {
    "en": ("Session summary (from the transcript; the session ended without a handoff).", "Task", "Files changed",
           "Last update", "Observations held for review: {n} (see `memoryd review`)", "claude-code session"),
    "zh": ("会话小结（由对话记录整理；该会话结束时没有写交接）。", "任务", "修改的文件", "最后进展",
           "待审核的观察：{n} 条（见 `memoryd review`）", "claude-code 会话"),
    "zh-Hant": ("會話小結（由對話記錄整理；該會話結束時沒有寫交接）。", "任務", "修改的檔案", "最後進展",
                "待審核的觀察：{n} 條（見 `memoryd review`）", "claude-code 會話"),
}  # fmt: skip


def _handoff_text(summary: SessionSummary, held: int, session_id: str) -> str:
    first, last = summary.first_request, summary.last_update
    lang = language(first + " " + last)
    head, task, files_l, last_l, held_l, tag = _HANDOFF_LABELS[lang]
    colon = ": " if lang == "en" else "："
    lines = [head, f"{task}{colon}{first}"]
    files = list(dict.fromkeys(Path(f).name for f in summary.files))
    if files:
        lines.append(f"{files_l}{colon}{', '.join(files[:10])}" + (f" (+{len(files) - 10})" if len(files) > 10 else ""))
    if last:
        lines.append(f"{last_l}{colon}{last}")
    if held:
        lines.append(held_l.format(n=held))
    date = (summary.started_at or "")[:10]
    lines.append(f"{tag} {session_id}" + (f" ({date})" if date else ""))
    return "\n".join(lines)
