"""Sessions (open, close once, read back) and passive capture from trusted sources."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import InvalidInput, NotFound
from ..limits import UNSTORABLE, check_text
from ..models import MemorizeResult, Session
from ..write.redact import redact
from .core import _norm_hash, _shown

if TYPE_CHECKING:
    from .memories import MemoryOps

    _Base = MemoryOps
else:
    _Base = object

__all__ = ["PASSIVE_TYPES", "SessionOps"]

PASSIVE_TYPES = ("fact", "decision", "preference", "playbook", "warning")


class SessionOps(_Base):
    def session_start(self, *, scope: str | None = "auto", source: str = "manual", title: str | None = None) -> Session:
        """Open a session: a `session` memory that `session_end` later completes."""
        from .core import _now

        check_text("title", title)
        check_text("source", source)
        now = _now()
        title = redact((title or "").strip()).text or f"Session {now:%Y-%m-%d %H:%M} UTC"
        source = redact((source or "").strip()).text or "manual"
        target = self.resolve_scope(scope)
        if not self._reach(target.scope_hash, target.name):
            raise NotFound(f"no scope {target.name!r} within reach")
        body = f"# {title}\n\nStarted {now.isoformat(timespec='seconds')} via {source}."
        atom, _ = self._new_atom(body, type="session", source=source, scope=target, title=title)
        session = Session(id=atom.id, source=source, title=atom.title or title, scope_hash=target.scope_hash,
                          started_at=now)  # fmt: skip
        with self._write() as tx:
            self._persist(tx, atom, actor=source, action="session_start", reason=None)
            tx.insert_session(session)
        return session

    def session_end(self, session_id: str, summary: str, *, actor: str = "agent") -> tuple[Session, bool]:
        """Close a session with its summary, once. Returns (session, whether this call closed it)."""
        session = self._session(session_id)
        if session.ended_at is not None:
            return session, False
        problem = self._validate_content(summary, "summary")
        if problem:
            raise InvalidInput(problem)
        atom = self.get(session_id)
        clean = redact(summary.strip()).text
        body = f"{atom.content}\n\n## Summary\n\n{clean}"
        with self._write() as tx:
            tx.update_atom(atom.id, content=body, norm_hash=_norm_hash(body))
            self.reindex(tx, atom.model_copy(update={"content": body}))
            tx.end_session(session_id, clean)
            tx.append_event(atom_id=atom.id, actor=actor, action="session_end", reason=None, content=body)
        ended = self.store.get_session(session_id)
        assert ended is not None
        return ended, True

    def session_summary(self, session_id: str) -> str:
        """The session memory's markdown body."""
        self._session(session_id)
        return self.get(session_id).content

    def _session(self, session_id: object) -> Session:
        """The session with this id within the caller's reach (the scope boundary), else NotFound."""
        missing = NotFound(f"no session with id {_shown(session_id)}")
        if not isinstance(session_id, str) or not session_id or len(session_id) > 64 or UNSTORABLE.search(session_id):
            raise missing
        session = self.store.get_session(session_id)
        if session is None or not self._reach(session.scope_hash):
            raise missing
        return session

    def capture_passive(
        self,
        content: str,
        *,
        source: str,
        scope: str | None = "auto",
        type: str = "fact",
        tags: Sequence[str] = (),
        triggers: Sequence[str] = (),
    ) -> MemorizeResult:
        """Save from a trusted source (mirror, importer): no DURA gate, everything else as usual."""
        if type not in PASSIVE_TYPES:
            raise InvalidInput(f"type must be one of {', '.join(PASSIVE_TYPES)}, got {type!r}")
        return self.memorize(content, source=source, type=type, tags=tags, triggers=triggers, gate="trusted",
                             scope=self.resolve_scope(scope))  # fmt: skip
