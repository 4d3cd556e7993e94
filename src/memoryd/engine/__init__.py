"""Engine: the single service layer. Every surface (MCP, CLI, hooks) calls these methods.

`Engine` is a facade over explicit parts, each given what it depends on when the engine is built:

    Core(settings, store, embedder, scope)  shared: the write transaction that keeps the vault in
                                            step, the sensitive-scope check, embedding, atoms
    Writer(core)                            the write path and every change to a memory
    Reader(core)                            recall, context, timeline, audit, stats, the brief
    Sessions(core, writer)                  sessions and passive capture
    Review(core)                            promotion review, judgments, the LLM
    VaultSync(core, writer)                 hand edits of the markdown vault
    Admin(core, review, vault_sync)         stats per scope, merges, doctor, sensitive scopes
    Observer(core, writer)                  transcript observations
    Importer(core, writer)                  bulk import of JSON lines

Each public method of `Engine` names the part that implements it (`_part`), so the API is one list.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Concatenate, Generic, ParamSpec, Self, TypeVar, cast, overload

from ..config import Settings
from ..llm import LLM
from ..models import Atom, Scope
from ..scope import infer_scope
from ..search.embed import Embedder, make_embedder
from ..storage import Store, open_store
from ..vault import atom_frontmatter
from .admin import Admin
from .core import PLACEHOLDERS, Core, visible_content
from .importer import Importer
from .observations import Observer
from .reads import Reader
from .review import Review
from .sessions import Sessions
from .vault_sync import VaultSync
from .writes import Writer

__all__ = ["PLACEHOLDERS", "Embedder", "Engine", "atom_frontmatter", "visible_content"]

P = ParamSpec("P")
R = TypeVar("R")


class _part(Generic[P, R]):  # noqa: N801 - reads as a function in the class body below
    """`Engine.<name>(…)` is `<part>.<name>(…)`, with the part method's signature and docstring."""

    def __init__(self, part: str, method: Callable[Concatenate[Any, P], R]) -> None:
        self.part, self.name, self.__doc__ = part, method.__name__, method.__doc__

    @overload
    def __get__(self, engine: None, owner: type) -> Self: ...
    @overload
    def __get__(self, engine: Engine, owner: type) -> Callable[P, R]: ...
    def __get__(self, engine: Engine | None, owner: type) -> Self | Callable[P, R]:
        if engine is None:
            return self
        return cast(Callable[P, R], getattr(getattr(engine, self.part), self.name))


class Engine:
    """memoryd's service layer over one store; see the module docstring for its parts."""

    def __init__(
        self, settings: Settings, store: Store, embedder: Embedder, scope: Scope, *, enforce_sensitive: bool = False
    ) -> None:
        self.core = core = Core(settings, store, embedder, scope, enforce_sensitive=enforce_sensitive)
        self.writer = Writer(core)
        self.reader = Reader(core)
        self.sessions = Sessions(core, self.writer)
        self.review = Review(core)
        self.vault = VaultSync(core, self.writer)
        self.admin = Admin(core, self.review, self.vault)
        self.observer = Observer(core, self.writer)
        self.importer = Importer(core, self.writer)

    @classmethod
    def open(
        cls, settings: Settings | None = None, *, cwd: str | Path | None = None, embedder: Embedder | None = None,
        enforce_sensitive: bool = False,
    ) -> Self:  # fmt: skip
        """Open the store named by `settings` (default: environment) for the scope of `cwd`.

        `enforce_sensitive` makes every read of a sensitive scope without a grant raise
        AuthorizationRequired (agent surfaces set it; a person at the CLI is the authority).
        """
        settings = settings or Settings()
        return cls(settings, open_store(settings), embedder or make_embedder(settings.embedder), infer_scope(cwd),
                   enforce_sensitive=enforce_sensitive)  # fmt: skip

    def close(self) -> None:
        self.core.store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def warm(self) -> None:
        """Load what searches need (the vector index) now, so the first search is fast (servers, at start)."""
        self.core.store.warm()

    # -- what the engine was opened with ---------------------------------------------------------

    @property
    def settings(self) -> Settings:
        return self.core.settings

    @property
    def store(self) -> Store:
        return self.core.store

    @property
    def scope(self) -> Scope:
        return self.core.scope

    @property
    def vault_root(self) -> Path:
        return self.core.vault_root

    @property
    def embedder(self) -> Embedder:
        return self.core.embedder

    @embedder.setter
    def embedder(self, value: Embedder) -> None:
        self.core.embedder = value

    @property
    def enforce_sensitive(self) -> bool:
        return self.core.enforce_sensitive

    @property
    def llm(self) -> LLM | None:
        """The configured LLM client, or None (see `memoryd.llm`)."""
        return self.review.llm

    # -- the API, part by part -------------------------------------------------------------------

    get = _part("core", Core.get)
    path_of = _part("core", Core.path_of)
    resolve_scope = _part("core", Core.resolve_scope)

    memorize = _part("writer", Writer.memorize)
    handoff = _part("writer", Writer.handoff)
    correct = _part("writer", Writer.correct)
    govern = _part("writer", Writer.govern)
    restore = _part("writer", Writer.restore)
    patch = _part("writer", Writer.patch)
    delete = _part("writer", Writer.delete)

    def update(
        self, memory_id: str, *, content: str | None = None, tags: Sequence[str] | None = None,
        triggers: Sequence[str] | None = None, title: str | None = None, actor: str = "agent", reason: str | None = None,
    ) -> Atom:  # fmt: skip
        """`patch`, returning the memory as stored now."""
        return self.writer.patch(memory_id, content=content, tags=tags, triggers=triggers, title=title, actor=actor,
                                 reason=reason).atom  # fmt: skip

    recall = _part("reader", Reader.recall)
    search = _part("reader", Reader.search)
    context = _part("reader", Reader.context)
    timeline_window = _part("reader", Reader.timeline_window)
    history = _part("reader", Reader.history)
    verify_chain = _part("reader", Reader.verify_chain)
    stats = _part("reader", Reader.stats)
    export = _part("reader", Reader.export)
    agent_brief = _part("reader", Reader.agent_brief)
    session_context = _part("reader", Reader.session_context)

    def timeline(
        self, *, scope: str | None = "auto", since: str = "30d", types: Sequence[str] | None = None, limit: int = 100
    ) -> list[Atom]:
        """`timeline_window`'s memories: active memories of a scope, newest first, soft-forgotten ones left out."""
        return self.reader.timeline_window(scope=scope, since=since, types=types, limit=limit).memories

    session_start = _part("sessions", Sessions.session_start)
    session_end = _part("sessions", Sessions.session_end)
    session_summary = _part("sessions", Sessions.session_summary)
    capture_passive = _part("sessions", Sessions.capture_passive)

    review_pending = _part("review", Review.review_pending)
    promote = _part("review", Review.promote)
    reject = _part("review", Review.reject)
    judge = _part("review", Review.judge)
    compare = _part("review", Review.compare)
    suggest_topic_key = _part("review", Review.suggest_topic_key)

    stats_detail = _part("admin", Admin.stats_detail)
    merge_projects = _part("admin", Admin.merge_projects)
    current_project = _part("admin", Admin.current_project)
    doctor = _part("admin", Admin.doctor)
    save_prompt = _part("admin", Admin.save_prompt)
    scope_info = _part("admin", Admin.scope_info)
    access_requests = _part("admin", Admin.access_requests)
    mark_sensitive = _part("admin", Admin.mark_sensitive)
    grant = _part("admin", Admin.grant)
    request_sensitive_read = _part("admin", Admin.request_sensitive_read)

    vault_check = _part("vault", VaultSync.vault_check)
    vault_sync = _part("vault", VaultSync.vault_sync)

    observation_state = _part("observer", Observer.observation_state)
    observe_transcript = _part("observer", Observer.observe_transcript)

    import_state = _part("importer", Importer.import_state)
    import_jsonl = _part("importer", Importer.import_jsonl)
