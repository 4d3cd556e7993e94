"""Engine: the single service layer. Every surface (MCP, CLI, hooks) calls these methods.

`Engine` is a facade over explicit parts, each given what it depends on when the engine is built:

    Core(settings, store, embedder, scope)  shared: the write transaction that keeps the vault in
                                            step, the scope boundary and sensitive-scope check,
                                            embedding, atoms
    Anchors(core) (`anchoring`)             code anchors: taken at write, checked on reads
    Linker(core) (`linking`)                one memory per fact: merge, supersede, suggest (write path 4b)
    Writer(core, anchors, linker)           the write path and every change to a memory
    Reader(core, anchors)                   recall, context, timeline, audit, stats, the brief
    Sessions(core, writer)                  sessions and passive capture
    Review(core, linker)                    promotion review (a promoted memory is linked), judgments, the LLM
    VaultSync(core, writer)                 hand edits of the markdown vault
    Admin(core, review, vault_sync)         stats per scope, merges, doctor, sensitive scopes
    Observer(core, writer)                  transcript observations
    Importer(core, writer)                  bulk import of JSON lines and other tools' formats
    Library(core, reader)                   saved prompts and memories as MCP resources
    Console(core, reader, review, admin)    what the web console (`memoryd ui`) reads
    Tenancy(core)                           the team server: tokens, teams, shares, a request's scope
    Injector(core, reader)                  what a hook adds to a prompt (the one relevance decision)

Each public method of `Engine` names the part that implements it (`_part`), so the API is one list; the
text arguments a method keeps are redacted here, on the way in (`inputs.STORED_TEXT`).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Concatenate, Generic, ParamSpec, Self, TypeVar, cast, overload

from ..formats.vault import atom_frontmatter
from ..search import threads
from ..search.embed import MODELS, Embedder, HashEmbedder, TermEmbedder, english_embedder, make_embedder
from ..search.embed import term_embedder as make_term_embedder
from ..search.rank import fused
from ..search.tokenize import language
from ..shared.config import Settings
from ..shared.models import Atom, Scope
from ..shared.scope import infer_scope
from ..storage import Store, open_store
from ..text.llm import LLM
from .admin import Admin
from .anchoring import Anchors
from .console import Console
from .core import PLACEHOLDERS, Core, private_home, visible_content
from .importer import Importer
from .inject import Injector, relevant
from .inputs import STORED_TEXT, redact_call
from .library import Library
from .linking import Linker
from .observations import Observer
from .reads import Reader
from .review import Review
from .sessions import Sessions
from .tenancy import IssuedToken, Principal, Tenancy, TokenInfo
from .vault_sync import VaultSync
from .writes import Writer

# What surfaces use besides `Engine`: embedders for a hook's own model choice, the fused score of a
# signal set (a hook's score bar without the semantic signal), which of a recall's hits a hook injects
# (`search.relevance.inject`), the language of a text.
__all__ = [
    "MODELS",
    "PLACEHOLDERS",
    "Embedder",
    "Engine",
    "HashEmbedder",
    "IssuedToken",
    "Principal",
    "TokenInfo",
    "atom_frontmatter",
    "fused",
    "language",
    "make_embedder",
    "relevant",
    "visible_content",
]

P = ParamSpec("P")
R = TypeVar("R")
# `Engine.open(term_embedder=...)` default: the one the settings name.
_FROM_SETTINGS: Any = object()
log = logging.getLogger("memoryd")


class _part(Generic[P, R]):  # noqa: N801 - reads as a function in the class body below
    """`Engine.<name>(…)` is `<part>.<name>(…)`, with the part method's signature and docstring."""

    def __init__(self, part: str, method: Callable[Concatenate[Any, P], R]) -> None:
        self.part, self.name, self.__doc__ = part, method.__name__, method.__doc__
        self.method = method  # its signature and type hints (the daemon's operator endpoint converts by them)
        self.redacts = self.name in STORED_TEXT  # its text arguments are redacted on the way in (`inputs`)

    @overload
    def __get__(self, engine: None, owner: type) -> Self: ...
    @overload
    def __get__(self, engine: Engine, owner: type) -> Callable[P, R]: ...
    def __get__(self, engine: Engine | None, owner: type) -> Self | Callable[P, R]:
        if engine is None:
            return self
        bound = getattr(getattr(engine, self.part), self.name)
        if not self.redacts:
            return cast(Callable[P, R], bound)
        name, method, limit = self.name, self.method, engine.settings.max_content_chars

        @functools.wraps(bound)
        def call(*args: Any, **kwargs: Any) -> Any:
            args, kwargs = redact_call(name, method, args, kwargs, content_limit=limit)
            return bound(*args, **kwargs)

        return cast(Callable[P, R], call)


class Engine:
    """memoryd's service layer over one store; see the module docstring for its parts."""

    def __init__(
        self, settings: Settings, store: Store, embedder: Embedder, scope: Scope, *, authority: str = "agent",
        enforce_sensitive: bool | None = None, term_embedder: TermEmbedder | None = None,
        english: Embedder | None = None, core: Core | None = None,
    ) -> None:  # fmt: skip
        self._core = core = core or Core(settings, store, embedder, scope, authority=authority,
                                        enforce_sensitive=enforce_sensitive, term_embedder=term_embedder,
                                        english=english)  # fmt: skip
        store = core.store  # each part is given the store roles it reads (storage/base.py), no more
        self._anchoring = Anchors(core, memories=store)
        self._linker = Linker(core, memories=store, index=store, audit=store, reports=store,
                              llm=lambda: self._review.llm)  # fmt: skip
        self._writer = Writer(core, self._anchoring, self._linker, memories=store, index=store)
        self._reader = Reader(core, self._anchoring, memories=store, index=store, audit=store, reports=store)
        self._sessions = Sessions(core, self._writer, memories=store)
        self._review = Review(core, self._linker, memories=store, embed=lambda text: self._writer.embed(text).main)
        self._vault = VaultSync(core, self._writer, memories=store, outbox=store)
        self._admin = Admin(core, self._review, self._vault, memories=store, outbox=store, access=store, reports=store,
                           maintenance=store)  # fmt: skip
        self._observer = Observer(core, self._writer, memories=store)
        self._importer = Importer(core, self._writer, memories=store)
        self._library = Library(core, self._reader, memories=store)
        self._console = Console(core, self._reader, self._review, self._admin, memories=store, audit=store, access=store,
                               reports=store)  # fmt: skip
        self._tenancy = Tenancy(core, access=store)
        self._injector = Injector(core, self._reader)
        self._stop = threading.Event()  # ends the English vectors' backfill (`warm`) when the engine closes
        self._backfilling: threading.Thread | None = None

    @classmethod
    def open(
        cls, settings: Settings | None = None, *, cwd: str | Path | None = None, embedder: Embedder | None = None,
        authority: str = "agent", enforce_sensitive: bool | None = None,
        term_embedder: TermEmbedder | None = _FROM_SETTINGS, english: Embedder | None = _FROM_SETTINGS,
    ) -> Self:  # fmt: skip
        """Open the store named by `settings` (default: environment) for the scope of `cwd`.

        `authority` is "agent" (the default: by-id operations reach only the scope of `cwd` and
        the tenant's global scope, and a sensitive scope needs a grant) or "operator" (a person,
        who may address any scope). `enforce_sensitive=True` keeps sensitive scopes locked for an
        operator too (the web console: a grant can be requested there, not bypassed).
        `english`: the English sentence model whose second vector of each memory recall weighs for English
        text; by default the one `settings.english_embedder` names. `term_embedder`: the former English
        signal, by default the one `settings.term_embedder` names when there is no English model. Both are
        left out when the main embedder is the hashing fake (tests that need no model).
        """
        settings = settings or Settings()
        private_home(settings.home, sqlite=not settings.db)
        store = open_store(settings)
        embedder = embedder or make_embedder(settings.embedder)
        if english is _FROM_SETTINGS:
            english = None if embedder.name == "hash" else english_embedder(settings.english_embedder)
        if term_embedder is _FROM_SETTINGS:
            term_embedder = (None if embedder.name == "hash" or english is not None
                             else make_term_embedder(settings.term_embedder))  # fmt: skip
        engine = cls(settings, store, embedder, infer_scope(cwd), authority=authority,
                     enforce_sensitive=enforce_sensitive, term_embedder=term_embedder, english=english)  # fmt: skip
        engine.finish_crashed_writes()
        return engine

    def finish_crashed_writes(self) -> None:
        """Publish the vault files a crash (kill -9 between a write's commit and its file) left queued.

        Every opening does it (CLI, SDK, hooks, console, MCP server), so `doctor` stops reporting
        "files waiting to be published" after the next command, whichever it is. One indexed read
        when nothing is queued; a failure is logged, the store still opens (doctor reports the gap).
        """
        try:
            if self._core.store.outbox():
                self._vault.recover_vault()
        except Exception:
            logging.getLogger("memoryd").exception("finishing the vault files a crash left failed")

    def acting_as(self, authority: str, *, enforce_sensitive: bool | None = None) -> Self:
        """This engine's store, models and scope, acting for someone else (the web console served beside
        the MCP tools: a person, where the tools act for an agent). Close the original, not this view."""
        c = self._core
        core = Core(
            c.settings,
            c.store,
            c.embedder,
            c.scope,
            authority=authority,
            enforce_sensitive=enforce_sensitive,
            term_embedder=c.term_embedder,
            english=c.english,
            vault_lock=c.vault_lock,
        )  # one lock per vault within the process
        return type(self)(c.settings, c.store, c.embedder, c.scope, core=core)

    def for_request(self, principal: Principal, scope_header: object) -> Self:
        """This engine's store and models acting for one team-server request: the person's token (named in
        every event, read-only refused at each write) and the repository their `Memoryd-Scope` header names,
        a team's scope when it is shared with them. Code anchors are off: the server has no checkout.
        Raises InvalidInput, Forbidden (see `Tenancy.request_scopes`)."""
        c = self._core
        scope, person = self._tenancy.request_scopes(principal, scope_header)
        settings = c.settings.model_copy(update={"anchors": False})
        # The store for this person: on PostgreSQL with hot standbys, their reads wait for their own writes.
        store = c.store.acting_for(principal.tenant_id)
        core = Core(settings, store, c.embedder, scope, authority="agent", term_embedder=c.term_embedder,
                    english=c.english, vault_lock=c.vault_lock, principal=principal.name, read_only=principal.read_only,
                    person=person, global_reach=principal.reaches_global, local_files=False)  # fmt: skip
        return type(self)(settings, store, c.embedder, scope, core=core)

    def for_scope(self, scope: Scope, *, principal: str | None = None) -> Self:
        """This engine's store and models acting for an agent in `scope` (the local daemon: each request's
        scope, inferred from its client's directory). `principal` names the client in every event it writes."""
        c = self._core
        core = Core(c.settings, c.store, c.embedder, scope, authority="agent", term_embedder=c.term_embedder,
                    english=c.english, vault_lock=c.vault_lock, principal=principal)  # fmt: skip
        return type(self)(c.settings, c.store, c.embedder, scope, core=core)

    @classmethod
    def api(cls) -> dict[str, Callable[..., Any]]:
        """The engine's API as one list: every public method that names its part, by name, with the part's own
        function (its signature and type hints). The daemon's operator endpoint serves what this lists."""
        return {name: attr.method for name, attr in vars(cls).items() if isinstance(attr, _part)}

    def close(self) -> None:
        self._stop.set()
        if self._backfilling is not None:
            self._backfilling.join()  # its batch finishes (a second or so) before the store closes
        self._core.store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def warm(self) -> None:
        """Load what searches need (the vector index, the term model) now, so the first search is fast (servers,
        at start)."""
        self._core.store.warm()
        for model in (self._core.term_embedder, self._core.english):
            start = getattr(model, "start", None)  # loads on a thread joined at exit
            if start is not None:
                start()
        if self._core.english is not None and self._backfilling is None:
            self._backfilling = threads.start(self._backfill, "memoryd-backfill-vectors", self._stop)

    def _backfill(self) -> None:
        try:
            n = self._writer.backfill_vectors(stop=self._stop)
        except Exception:  # recall goes on without the English signal for what has no vector yet
            log.exception("backfilling the English vectors failed")
            return
        if n:
            log.info("gave %d memories their English vector", n)

    # -- what the engine was opened with ---------------------------------------------------------

    @property
    def settings(self) -> Settings:
        return self._core.settings

    @property
    def store(self) -> Store:
        return self._core.store

    @property
    def scope(self) -> Scope:
        return self._core.scope

    @property
    def vault_root(self) -> Path:
        return self._core.vault_root

    @property
    def embedder(self) -> Embedder:
        return self._core.embedder

    @embedder.setter
    def embedder(self, value: Embedder) -> None:
        self._core.embedder = value

    @property
    def enforce_sensitive(self) -> bool:
        return self._core.enforce_sensitive

    @property
    def authority(self) -> str:
        return self._core.authority

    @property
    def term_embedder(self) -> TermEmbedder | None:
        return self._core.term_embedder

    @property
    def english(self) -> Embedder | None:
        return self._core.english

    @property
    def llm(self) -> LLM | None:
        """The configured LLM client, or None (see `memoryd.text.llm`)."""
        return self._review.llm

    # -- the API, part by part -------------------------------------------------------------------

    get = _part("_core", Core.get)
    path_of = _part("_core", Core.path_of)
    resolve_scope = _part("_core", Core.resolve_scope)
    resolve_scope_arg = _part("_core", Core.resolve_scope_arg)
    scope_input_warning = _part("_core", Core.scope_input_warning)
    reachable_scopes = _part("_core", Core.reachable_scopes)

    memorize = _part("_writer", Writer.memorize)
    handoff = _part("_writer", Writer.handoff)
    correct = _part("_writer", Writer.correct)
    govern = _part("_writer", Writer.govern)
    restore = _part("_writer", Writer.restore)
    patch = _part("_writer", Writer.patch)
    delete = _part("_writer", Writer.delete)

    supersede = _part("_linker", Linker.supersede)
    dismiss_link = _part("_linker", Linker.dismiss_link)
    review_links = _part("_linker", Linker.review_links)

    def update(
        self, memory_id: str, *, content: str | None = None, tags: Sequence[str] | None = None,
        triggers: Sequence[str] | None = None, title: str | None = None, actor: str = "agent", reason: str | None = None,
    ) -> Atom:  # fmt: skip
        """`patch`, returning the memory as stored now."""
        return self.patch(memory_id, content=content, tags=tags, triggers=triggers, title=title, actor=actor,
                                 reason=reason).atom  # fmt: skip

    recall = _part("_reader", Reader.recall)
    search = _part("_reader", Reader.search)
    context = _part("_reader", Reader.context)
    timeline_window = _part("_reader", Reader.timeline_window)
    history = _part("_reader", Reader.history)
    verify_chain = _part("_reader", Reader.verify_chain)
    backfill_vectors = _part("_writer", Writer.backfill_vectors)
    stats = _part("_reader", Reader.stats)
    export = _part("_reader", Reader.export)
    export_file = _part("_reader", Reader.export_file)
    agent_brief = _part("_reader", Reader.agent_brief)
    session_context = _part("_reader", Reader.session_context)
    prompt_context = _part("_injector", Injector.prompt_context)

    def timeline(
        self, *, scope: str | None = "auto", since: str = "30d", types: Sequence[str] | None = None, limit: int = 100
    ) -> list[Atom]:
        """`timeline_window`'s memories: active memories of a scope, newest first, soft-forgotten ones left out."""
        return self._reader.timeline_window(scope=scope, since=since, types=types, limit=limit).memories

    session_start = _part("_sessions", Sessions.session_start)
    session_end = _part("_sessions", Sessions.session_end)
    session_summary = _part("_sessions", Sessions.session_summary)
    capture_passive = _part("_sessions", Sessions.capture_passive)

    review_pending = _part("_review", Review.review_pending)
    promote = _part("_review", Review.promote)
    reject = _part("_review", Review.reject)
    judge = _part("_review", Review.judge)
    compare = _part("_review", Review.compare)
    suggest_topic_key = _part("_review", Review.suggest_topic_key)

    stats_detail = _part("_admin", Admin.stats_detail)
    merge_projects = _part("_admin", Admin.merge_projects)
    current_project = _part("_admin", Admin.current_project)
    doctor = _part("_admin", Admin.doctor)
    save_prompt = _part("_admin", Admin.save_prompt)
    scope_info = _part("_admin", Admin.scope_info)
    access_requests = _part("_admin", Admin.access_requests)
    mark_sensitive = _part("_admin", Admin.mark_sensitive)
    grant = _part("_admin", Admin.grant)
    request_sensitive_read = _part("_admin", Admin.request_sensitive_read)

    vault_check = _part("_vault", VaultSync.vault_check)
    vault_sync = _part("_vault", VaultSync.vault_sync)

    observation_state = _part("_observer", Observer.observation_state)
    observe_transcript = _part("_observer", Observer.observe_transcript)

    import_state = _part("_importer", Importer.import_state)
    import_jsonl = _part("_importer", Importer.import_jsonl)
    import_file = _part("_importer", Importer.import_file)

    recover_vault = _part("_vault", VaultSync.recover_vault)

    anchors = _part("_anchoring", Anchors.anchors)
    code_changes = _part("_anchoring", Anchors.code_changes)
    stale = _part("_anchoring", Anchors.stale)
    code_status = _part("_anchoring", Anchors.code_status)
    stale_checked = _part("_anchoring", Anchors.stale_checked)
    confirm_anchors = _part("_anchoring", Anchors.confirm_anchors)
    memories_for_path = _part("_anchoring", Anchors.memories_for_path)
    code_moved_since_last_session = _part("_anchoring", Anchors.code_moved_since_last_session)

    prompts = _part("_library", Library.prompts)
    prompt = _part("_library", Library.prompt)
    render_prompt = _part("_library", Library.render_prompt)
    resources = _part("_library", Library.resources)
    resource = _part("_library", Library.resource)
    export_markdown = _part("_library", Library.export_markdown)
    brief_resource = _part("_library", Library.brief_resource)

    create_token = _part("_tenancy", Tenancy.create_token)
    list_tokens = _part("_tenancy", Tenancy.list_tokens)
    revoke_token = _part("_tenancy", Tenancy.revoke_token)
    authenticate = _part("_tenancy", Tenancy.authenticate)
    create_team = _part("_tenancy", Tenancy.create_team)
    add_members = _part("_tenancy", Tenancy.add_members)
    share_scope = _part("_tenancy", Tenancy.share_scope)
    teams_overview = _part("_tenancy", Tenancy.teams_overview)

    console_scopes = _part("_console", Console.console_scopes)
    scope_of = _part("_console", Console.scope_of)
    request_access = _part("_console", Console.request_access)
    browse = _part("_console", Console.browse)
    decay_of = _part("_console", Console.decay_of)
    memory_detail = _part("_console", Console.memory_detail)
    decide_promotions = _part("_console", Console.decide_promotions)
    sessions_page = _part("_console", Console.sessions_page)
    session_detail = _part("_console", Console.session_detail)
    entity_graph = _part("_console", Console.entity_graph)
    entity_page = _part("_console", Console.entity_page)
    health_overview = _part("_console", Console.health_overview)
