"""Sessions (open, close once, read back) and passive capture from trusted sources."""

from __future__ import annotations

from collections.abc import Sequence

from ..shared.errors import InvalidInput, NotFound
from ..shared.limits import check_text
from ..shared.models import MemorizeResult, Scope, Session
from ..shared.stamps import norm_hash, utc_now
from ..storage.base import MemoryReads
from .core import Core, shown
from .writes import Writer

__all__ = ["PASSIVE_TYPES", "Sessions"]

PASSIVE_TYPES = ("fact", "decision", "preference", "playbook", "warning")


class Sessions:
    def __init__(self, core: Core, writer: Writer, *, memories: MemoryReads) -> None:
        self.memories = memories
        self.core = core
        self.writer = writer

    def session_start(
        self, *, scope: str | Scope | None = "auto", source: str = "manual", title: str | None = None
    ) -> Session:
        """Open a session: a `session` memory that `session_end` later completes."""
        check_text("title", title)
        check_text("source", source)
        core, now = self.core, utc_now()
        title = (title or "").strip() or f"Session {now:%Y-%m-%d %H:%M} UTC"
        source = (source or "").strip() or "manual"
        target = core.resolve_scope(scope)
        core.reach_scope(target)
        body = f"# {title}\n\nStarted {now.isoformat(timespec='seconds')} via {source}."
        atom = self.writer.new_atom(body, type="session", source=source, scope=target, title=title)
        session = Session(id=atom.id, source=source, title=atom.title or title, scope_hash=target.scope_hash,
                          started_at=now)  # fmt: skip
        vector = self.writer.embed(atom.content)
        with core.write() as tx:
            self.writer.persist(tx, atom, actor=source, action="session_start", reason=None, vector=vector)
            tx.records.insert_session(session)
        return session

    def session_end(self, session_id: str, summary: str, *, actor: str = "agent") -> tuple[Session, bool]:
        """Close a session with its summary, once. Returns (session, whether this call closed it)."""
        core = self.core
        session = self._session(session_id)
        if session.ended_at is not None:
            return session, False
        problem = core.validate_content(summary, "summary")
        if problem:
            raise InvalidInput(problem)
        atom = core.get(session_id)
        text = summary.strip()
        body = f"{atom.content}\n\n## Summary\n\n{text}"
        vector = self.writer.embed(body)
        with core.write() as tx:
            tx.update_atom(atom.id, content=body, norm_hash=norm_hash(body))
            self.writer.reindex(tx, atom.model_copy(update={"content": body}), vector)
            tx.records.end_session(session_id, text)
            tx.append_event(atom_id=atom.id, actor=actor, action="session_end", reason=None, content=body)
        ended = self.memories.get_session(session_id)
        assert ended is not None
        return ended, True

    def session_summary(self, session_id: str) -> str:
        """The session memory's markdown body."""
        self._session(session_id)
        return self.core.get(session_id).content

    def _session(self, session_id: object) -> Session:
        """The session with this id within the caller's reach (the scope boundary), else NotFound."""
        missing = NotFound(f"no session with id {shown(session_id)}")
        if not self.core.valid_id(session_id) or len(str(session_id)) > 64:
            raise missing
        assert isinstance(session_id, str)
        session = self.memories.get_session(session_id)
        if session is None or not self.core.reach(session.scope_hash):
            raise missing
        return session

    def capture_passive(
        self, content: str, *, source: str, scope: str | Scope | None = "auto", type: str = "fact", tags: Sequence[str] = (),
        triggers: Sequence[str] = (), replaces: str | None = None, written_at: object = None,
    ) -> MemorizeResult:  # fmt: skip
        """Save from a trusted source (mirror, importer): no DURA gate, everything else as usual (a restatement
        merges, a change supersedes; `replaces` and `written_at` as for `memorize`)."""
        if type not in PASSIVE_TYPES:
            raise InvalidInput(f"type must be one of {', '.join(PASSIVE_TYPES)}, got {type!r}")
        return self.writer.memorize(content, source=source, type=type, tags=tags, triggers=triggers, gate="trusted",
                                    scope=self.core.resolve_scope(scope), replaces=replaces,
                                    written_at=written_at)  # fmt: skip
