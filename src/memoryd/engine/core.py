"""What every part of the engine shares: the store and the scope, the write transaction that keeps
the markdown vault in step, the scope boundary (`reach`, `find_atom`) with the one sensitive-scope
check, embedding, and building atoms."""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import unicodedata
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Unpack

from ulid import ULID

from .. import vault
from ..anchors.model import Anchor
from ..config import Settings
from ..errors import AuthorizationRequired, Forbidden, InvalidInput, NotFound
from ..limits import LIMITS, UNSTORABLE, check_text, check_texts, unstorable
from ..models import ATOM_TYPES, Atom, AtomType, Event, Scope, Session, Status
from ..search.embed import Embedder, TermEmbedder
from ..search.tokenize import tokens
from ..stamps import norm_hash, utc_now
from ..storage.base import AtomUpdate, Store, StoreTx, TokenRecord, Vector
from ..write.classify import classify
from ..write.entities import extract_entities
from ..write.redact import redact

__all__ = ["AUTHORITIES", "PLACEHOLDERS", "Core", "TrackedTx", "check_source", "clean", "shown", "split_actor",
           "visible_content"]

log = logging.getLogger("memoryd")

# Who the engine acts for. "agent": only the inferred scope and the tenant's global scope are
# within reach, and sensitive scopes need a grant (MCP, hooks, the SDK by default). "operator": a
# person at the CLI, who may name any scope.
AUTHORITIES = ("agent", "operator")

PLACEHOLDERS = {
    "quarantined": "[quarantined: content hidden pending review]",
    "sealed": "[sealed: content visible to audit only]",
    "tombstoned": "[tombstoned: content destroyed]",
}


def clean(text: str) -> str:
    """What is stored of a text: LF newlines, no surrounding blanks, secrets redacted."""
    return redact(text.replace("\r\n", "\n").replace("\r", "\n").strip()).text


def visible_content(atom: Atom) -> str:
    """What a reader may see of an atom: its content, or a placeholder for hidden states."""
    return PLACEHOLDERS.get(atom.status, atom.content)


def shown(value: object) -> str:
    """An id as an error message shows it: quoted, cut short (a hostile id may be a megabyte), redacted
    (messages are logged by the MCP SDK, and an agent may paste a token where an id goes)."""
    text = value if isinstance(value, str) else repr(value)
    return repr(redact(text if len(text) <= 80 else text[:77] + "...").text)


# The separators of an event's actor: `<source>@<person>#<token id>` (`TrackedTx.append_event`; the daemon's
# `<host>/<agent>#<session>`). A source (free text a caller gives) may hold neither, nor a control or format
# character (a newline splits the line `memoryd history` prints, a bidi override reorders it), so the
# person and token memoryd records itself can never be forged by a source.
IDENTITY_SEPARATORS = "@#"


def check_source(value: object, field: str = "source") -> None:
    """Refuse a source (an actor name) holding an identity separator or a control/format character.
    Raises InvalidInput."""
    if not isinstance(value, str):
        return
    for ch in value:
        if ch in IDENTITY_SEPARATORS or unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp"):
            what = repr(ch) if ch in IDENTITY_SEPARATORS else f"U+{ord(ch):04X}"
            raise InvalidInput(f"{field} holds {what}: a source is a plain name (letters, digits, spaces, ._-/:), "
                               "without control characters, '@' or '#' (memoryd records the person and token "
                               "that made a change itself)")  # fmt: skip


def split_actor(actor: str) -> tuple[str, str | None, str | None]:
    """(source, person, token id) of an event's actor: `agent@alice#<id>` → ("agent", "alice", "<id>"); an
    actor without an authenticated person → (actor, None, None)."""
    source, sep, who = actor.partition("@")
    if not sep:
        return actor, None, None
    person, sep, token = who.rpartition("#")
    return (source, person, token) if sep and person else (actor, None, None)


def private_home(home: Path, *, sqlite: bool) -> None:
    """The data root (database, vault, prompts) is readable by its owner only: 0700, the database 0600.

    Other local users must not read memories; SQLite gives its -wal/-shm files the database's mode.
    """
    import os
    import stat

    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        st = home.stat()
        if st.st_uid == os.getuid() and st.st_mode & 0o077:
            os.chmod(home, stat.S_IMODE(st.st_mode) & 0o700)
        db = home / "memoryd.db"
        if not sqlite:
            return
        if not db.exists():
            os.close(os.open(db, os.O_CREAT | os.O_WRONLY, 0o600))
        elif db.stat().st_uid == os.getuid() and db.stat().st_mode & 0o077:
            os.chmod(db, 0o600)
    except (OSError, AttributeError):  # AttributeError: no getuid (Windows), where ACLs apply instead
        log.warning("could not make %s private to its owner", home)


@dataclass(frozen=True)
class FilePlan:
    """What one committed transaction must publish for one atom: a file to write, a file to remove."""

    atom_id: str
    rel: str | None
    text: str | None
    digest: str | None
    remove: str | None


class TrackedTx:
    """A store transaction that remembers which atoms it wrote, so their markdown files follow."""

    def __init__(self, tx: StoreTx, store: Store, principal: str | None = None) -> None:
        self._tx = tx
        self._store = store
        self._principal = principal  # the person and token a team server acts for: every event names them
        self.touched: dict[str, None] = {}
        self.removed: dict[str, str] = {}  # deleted atom → the file it had
        self.committed = False  # set by `Core.write` once the transaction committed

    def resync(self, atom_id: str) -> None:
        """Write the atom's file again at commit (its rendering or digest is out of date)."""
        self.touched[atom_id] = None

    def insert_atom(self, atom: Atom, *, norm_hash: str, terms: Sequence[str], vector: Vector | None) -> None:
        self._tx.insert_atom(atom, norm_hash=norm_hash, terms=terms, vector=vector)
        self.touched[atom.id] = None

    def update_atom(self, atom_id: str, **fields: Unpack[AtomUpdate]) -> None:
        self._tx.update_atom(atom_id, **fields)
        self.touched[atom_id] = None

    def scrub_atom(self, atom_id: str) -> None:
        self._tx.scrub_atom(atom_id)
        self.touched[atom_id] = None

    def replace_terms(self, atom_id: str, terms: Sequence[str], vector: Vector | None) -> None:
        self._tx.replace_terms(atom_id, terms, vector)

    def link(self, src: str, dst: str, kind: str) -> None:
        self._tx.link(src, dst, kind)

    def unlink_entities(self, atom_id: str) -> None:
        self._tx.unlink_entities(atom_id)

    def append_event(self, *, atom_id: str | None, actor: str, action: str, reason: str | None,
                     content: str | None) -> Event:  # fmt: skip
        check_source(actor, "the actor (source)")
        if self._principal is not None:  # "agent@alice#<token id>": the chain covers who made each change
            actor = f"{actor}@{self._principal}"
        return self._tx.append_event(atom_id=atom_id, actor=actor, action=action, reason=reason, content=content)

    def insert_session(self, session: Session) -> None:
        self._tx.insert_session(session)

    def end_session(self, session_id: str, summary: str) -> None:
        self._tx.end_session(session_id, summary)

    def insert_promotion(self, *, atom_id: str, scope_hash: str, origin: str, scores: dict[str, float],
                         reasoning: str) -> int:  # fmt: skip
        return self._tx.insert_promotion(atom_id=atom_id, scope_hash=scope_hash, origin=origin, scores=scores,
                                         reasoning=reasoning)  # fmt: skip

    def decide_promotion(self, promotion_id: int, status: str) -> None:
        self._tx.decide_promotion(promotion_id, status)

    def rescope_promotions(self, old: str, new: str) -> None:
        self._tx.rescope_promotions(old, new)

    def delete_atom(self, atom_id: str) -> None:
        atom = self._store.get_atoms([atom_id]).get(atom_id)
        if atom is not None and atom.vault_path:
            self.removed[atom_id] = atom.vault_path
        self._tx.delete_atom(atom_id)
        self.touched[atom_id] = None

    def set_anchors(self, atom_id: str, anchors: Sequence[Anchor]) -> None:
        self._tx.set_anchors(atom_id, anchors)

    def outbox_add(self, atom_id: str, token: str, remove_path: str | None) -> None:
        self._tx.outbox_add(atom_id, token, remove_path)

    def add_token(self, token: TokenRecord) -> None:
        self._tx.add_token(token)

    def revoke_token(self, token_id: str, at: datetime) -> bool:
        return self._tx.revoke_token(token_id, at)

    def add_team(self, name: str) -> bool:
        return self._tx.add_team(name)

    def add_member(self, team: str, tenant_id: str) -> bool:
        return self._tx.add_member(team, tenant_id)

    def share(self, workspace: str, repository: str, team: str) -> None:
        self._tx.share(workspace, repository, team)

    def mark_sensitive(self, scope_hash: str, name: str, sensitive: bool) -> None:
        self._tx.mark_sensitive(scope_hash, name, sensitive)

    def add_grant(self, scope_hash: str, granted_by: str, expires_at: datetime) -> None:
        self._tx.add_grant(scope_hash, granted_by, expires_at)

    def add_access_request(self, scope_hash: str, reason: str) -> int:
        return self._tx.add_access_request(scope_hash, reason)


class Core:
    """The engine's shared state and services; every part (`memoryd.engine.Engine`) is given one."""

    def __init__(
        self, settings: Settings, store: Store, embedder: Embedder, scope: Scope, *, authority: str = "agent",
        enforce_sensitive: bool | None = None, term_embedder: TermEmbedder | None = None,
        vault_lock: vault.VaultLock | None = None, principal: str | None = None, read_only: bool = False,
        person: Scope | None = None, global_reach: bool = True, local_files: bool = True,
    ) -> None:  # fmt: skip
        if authority not in AUTHORITIES:
            raise ValueError(f"unknown authority {authority!r}; expected one of {', '.join(AUTHORITIES)}")
        if authority == "agent" and enforce_sensitive is False:
            raise ValueError("an agent always needs a grant for a sensitive scope")
        self.settings = settings
        self.store = store
        self.embedder = embedder
        self.term_embedder = term_embedder  # recall's English signal (None: left out)
        self.scope = scope  # where this engine writes: the repository's scope (a team's, when shared)
        # The person's own scope of this repository (the team server: differs from `scope` when the
        # repository is shared); its global scope is the person's, never the team's.
        self.person = person or scope
        self.principal = principal  # team server: "alice#<token id>", named in every event (`TrackedTx`)
        self.read_only = read_only  # team server: a read-only token; every write is refused (`write`)
        # team server: False for a token limited to repositories without `global` (`Principal.reaches_global`):
        # the person's global scope is then out of reach, for reads and writes alike
        self.global_reach = global_reach
        # False on a team server: the vault is the replica's, so no answer names a path on its disk
        self.local_files = local_files
        self.authority = authority
        # A person at the web console reaches every scope but still needs a grant for a sensitive one.
        self._sensitive_locked = authority == "agent" if enforce_sensitive is None else enforce_sensitive
        self.vault_root = settings.home / "vault"
        self.vault_lock = vault_lock or vault.VaultLock(self.vault_root)  # one per vault within the process
        self._system = threading.local()  # set while memoryd itself acts (vault sync), see `as_system`

    @property
    def enforce_sensitive(self) -> bool:
        """Whether sensitive scopes need a grant (agents, and the console's person; not the CLI)."""
        return self._sensitive_locked and not getattr(self._system, "on", False)

    # -- writing -------------------------------------------------------------------------------

    @contextmanager
    def write(self) -> Iterator[TrackedTx]:
        """One write transaction; the markdown files of the atoms it touched are published after commit.

        Inside the transaction each touched atom's file is planned (path and digest recorded on the
        atom) and queued in the vault outbox under this transaction's token; after the commit the
        files are written or removed under the vault lock and the queue entries cleared. A crash
        before the commit leaves no file, so nothing is invented; a crash after it leaves the queue
        entry, which `VaultSync.recover_vault` finishes from the database at the next start (never lost).
        """
        self.check_write()
        token = str(ULID())
        plans: list[FilePlan] = []
        with self.store.transaction() as tx:
            tracked = TrackedTx(tx, self.store, self.principal)
            yield tracked
            for atom_id in tracked.touched:
                plan = self._plan_file(tx, atom_id, tracked.removed.get(atom_id), token)
                if plan is not None:
                    plans.append(plan)
        tracked.committed = True  # what a caller interrupted from here on (Ctrl-C) must count as written
        self._publish(plans, token)

    def check_write(self) -> None:
        """THE rights check of every store write (`write`, `untracked`): a read-only token writes nothing.
        Raises Forbidden. (tests/test_architecture.py: no other module opens a store transaction.)"""
        if self.read_only:
            raise Forbidden("this token is read-only; ask the team server's operator for a token that may write "
                            "(`memoryd token create` without --read-only)")  # fmt: skip

    @contextmanager
    def untracked(self) -> Iterator[StoreTx]:
        """A write transaction that plans no vault file (memoryd's own vault bookkeeping), after the same
        rights check as `write`."""
        self.check_write()
        with self.store.transaction() as tx:
            yield tx

    def _plan_file(self, tx: StoreTx, atom_id: str, removed_path: str | None, token: str) -> FilePlan | None:
        """Record (inside the transaction) what the vault must hold for one atom: its file, or none."""
        atom = self.store.get_atoms([atom_id]).get(atom_id)  # this thread's transaction: its writes show
        old = atom.vault_path if atom is not None else removed_path
        if atom is None or atom.status != "active":
            if atom is not None and old:
                tx.update_atom(atom.id, vault_path=None, vault_digest=None, updated_at=atom.updated_at)
            if not old:
                return None
            tx.outbox_add(atom_id, token, old)
            return FilePlan(atom_id, None, None, None, old)
        rel = str(vault.relative_path(atom))
        text = vault.render(atom)  # raises (and rolls back) for an atom that cannot be written faithfully
        # The folder now, inside the transaction: a vault that cannot take the file fails the write
        # (rolled back) instead of leaving a committed memory without its file.
        (self.vault_root / rel).parent.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        stale = old if old and old != rel else None
        tx.update_atom(atom.id, vault_path=rel, vault_digest=digest, updated_at=atom.updated_at)
        tx.outbox_add(atom_id, token, stale)
        return FilePlan(atom_id, rel, text, digest, stale)

    def _publish(self, plans: Sequence[FilePlan], token: str) -> None:
        """Write or remove the planned files of a committed transaction, then clear its outbox entries.

        Under the vault lock, and only while the database still records this transaction's digest:
        a later transaction of the same atom publishes its own file, so files never go back in time.
        A failure is logged and left to `recover_vault`: the write itself is committed.
        """
        if not plans:
            return
        try:
            with self.vault_lock:
                current = self.store.vault_state([p.atom_id for p in plans])
                batch = len(plans) > 1  # e.g. an import batch: one sync for all its files
                for p in plans:
                    state = current.get(p.atom_id)
                    if p.text is not None and p.rel is not None:
                        if state is None or state.digest != p.digest:
                            continue
                        vault.write_atomic(self.vault_root / p.rel, p.text, durable=not batch)
                    if p.remove is not None and (state is None or state.path != p.remove):
                        vault.remove(self.vault_root / p.remove)
                if batch:
                    vault.flush_all()
            self.store.clear_outbox([(p.atom_id, token) for p in plans])
        except Exception:
            log.exception("publishing vault files failed; the next start (or `memoryd vault sync`) finishes it")

    # -- the scope boundary --------------------------------------------------------------------
    # Every operation that takes an id (memory, atom, session, promotion, scope) resolves it through
    # `reach` / `find_atom`; nothing else in the engine decides who may act on what.

    @contextmanager
    def as_system(self) -> Iterator[None]:
        """memoryd itself acts (vault sync of the person's own files, admin): every scope is in reach."""
        before = getattr(self._system, "on", False)
        self._system.on = True
        try:
            yield
        finally:
            self._system.on = before

    def reachable_scopes(self) -> list[str] | None:
        """Scope hashes this engine may act on: None = every scope (operator, or memoryd itself)."""
        if self.authority == "operator" or getattr(self._system, "on", False):
            return None
        return self.recall_scopes(None)

    def reach(self, scope_hash: str, name: str | None = None) -> bool:
        """THE authorisation decision: may the caller act on atoms of `scope_hash`?

        False for a scope out of reach (the caller answers `not_found`, exactly as for a missing id,
        so nothing confirms it exists). For a scope in reach that is sensitive without a running
        grant, raises AuthorizationRequired (agents and the console; reads, writes and governance alike).
        """
        scopes = self.reachable_scopes()
        if scopes is not None and scope_hash not in scopes:
            return False
        self.guard_read(scope_hash, name)
        return True

    def reach_scope(self, scope: Scope) -> None:
        """`reach` for a whole scope an operation targets. Raises NotFound, AuthorizationRequired."""
        if not self.reach(scope.scope_hash, scope.name):
            raise NotFound(f"no scope {scope.name!r} within reach")

    @staticmethod
    def valid_id(value: object) -> bool:
        """Whether `value` can be an id at all (a string within the id limit, nothing unstorable)."""
        return isinstance(value, str) and bool(value) and len(value) <= LIMITS["id"][0] and not UNSTORABLE.search(value)

    def find_atom(self, atom_id: object) -> Atom | None:
        """The atom with this id if it exists and is within the caller's reach, else None."""
        if not self.valid_id(atom_id):
            return None
        assert isinstance(atom_id, str)
        atom = self.store.get_atoms([atom_id]).get(atom_id)
        if atom is None or not self.reach(atom.scope_hash, atom.scope.name):
            return None
        return atom

    def new_atom(
        self, content: str, *, type: AtomType, source: str, scope: Scope, status: Status = "active",
        title: str | None = None, tags: Sequence[str] = (), triggers: Sequence[str] = (),
        supersedes: str | None = None, entities: Sequence[str] | None = None,
    ) -> Atom:  # fmt: skip
        """A new atom of `content`, classified, with its entities (extracted unless given)."""
        check_source(source)
        c = classify(content)
        now = utc_now()
        # Every new atom is built here: its short texts are redacted here, whoever the caller is.
        return Atom(
            id=str(ULID()), content=content, type=type, source=redact(source).text, scope=scope,
            scope_hash=scope.scope_hash, epistemic=c.epistemic, polarity=c.polarity, status=status, created_at=now,
            updated_at=now, title=None if title is None else redact(title).text, tags=[redact(t).text for t in tags],
            triggers=[redact(t).text for t in triggers], supersedes=supersedes,
            entities=list(entities) if entities is not None else [e.id for e in extract_entities(content)],
        )  # fmt: skip

    def persist(self, tx: TrackedTx, atom: Atom, *, actor: str, action: str, reason: str | None,
                vector: Vector | None) -> None:  # fmt: skip
        """Insert an atom with its index terms, vector, entity edges and audit event."""
        tx.insert_atom(atom, norm_hash=norm_hash(atom.content), terms=self.index_terms(atom), vector=vector)
        for entity_id in atom.entities:
            tx.link(atom.id, entity_id, "mentions")
        tx.append_event(atom_id=atom.id, actor=actor, action=action, reason=reason, content=atom.content)

    def reindex(self, tx: TrackedTx, atom: Atom, vector: Vector | None) -> None:
        """Refresh keyword terms, vector and entity links of an atom changed in place."""
        tx.replace_terms(atom.id, self.index_terms(atom), vector)
        tx.unlink_entities(atom.id)
        for entity_id in atom.entities:
            tx.link(atom.id, entity_id, "mentions")

    @staticmethod
    def index_terms(atom: Atom) -> list[str]:
        extra = " ".join([atom.title or "", *atom.tags, *atom.triggers]).strip()
        return tokens(f"{atom.content} {extra}" if extra else atom.content)

    def embed(self, text: str) -> Vector | None:
        return self.embed_many([text])[0]

    def embed_many(self, texts: Sequence[str]) -> list[Vector | None]:
        """One model call for many texts; None for each when the model fails."""
        if not texts:
            return []
        try:
            return list(self.embedder.passages(list(texts)))
        except Exception:  # a broken model must not lose the write; coverage shows the gap
            log.exception("embedding failed; stored without a vector")
            return [None] * len(texts)

    # -- checks --------------------------------------------------------------------------------

    @staticmethod
    def check_fields(*, title: object = None, tags: object = None, triggers: object = None,
                     source: object = None) -> None:  # fmt: skip
        """Limits of a memory's short fields (LIMITS). Raises InvalidInput."""
        check_text("title", title)
        check_texts("tags", "tag", tags)
        check_texts("triggers", "trigger", triggers)
        check_text("source", source)
        check_source(source)

    def validate_content(self, content: object, what: str = "content") -> str | None:
        """A rejection reason, or None when the text is acceptable."""
        if not isinstance(content, str):
            return f"{what} must be a string"
        if not content.strip():
            return f"{what} is empty"
        if len(content) > self.settings.max_content_chars:
            return f"{what} is {len(content)} characters; the limit is {self.settings.max_content_chars}"
        return unstorable(content, what)

    @staticmethod
    def check_types(types: Sequence[str] | None) -> None:
        if types is not None:
            check_texts("types", "id", types)
        unknown = [t for t in types or () if t not in ATOM_TYPES]
        if unknown:
            raise InvalidInput(f"unknown type(s) {unknown}; expected any of {', '.join(ATOM_TYPES)}")

    def locked(self, scope_hash: str) -> bool:
        """Whether agents may not read the scope: it is sensitive and has no running grant.

        The one sensitive-scope check (`reach`, recall, review, the brief, the console's listings).
        """
        return self.store.is_sensitive(scope_hash) and self.store.grant_expiry(scope_hash) is None

    def guard_read(self, scope_hash: str, name: str | None = None) -> None:
        """Refuse a locked scope (agents and the console; reads, writes, governance; not the CLI)."""
        if self.enforce_sensitive and self.locked(scope_hash):
            raise AuthorizationRequired(
                f"scope {name or scope_hash} is sensitive and has no running grant; a person can grant access with "
                f"`memoryd scope grant --minutes 30` in that repository, or call mem_request_sensitive_read"
            )

    # -- reading -------------------------------------------------------------------------------

    def get(self, atom_id: str) -> Atom:
        """The atom with this id (content as stored), if within reach. Raises NotFound, AuthorizationRequired."""
        atom = self.find_atom(atom_id)
        if atom is None:
            raise NotFound(f"no atom with id {shown(atom_id)}")
        return atom

    def path_of(self, atom: Atom) -> Path | None:
        """Absolute path of an atom's markdown file, if it has one and the caller shares this disk."""
        return self.file_path(atom.vault_path)

    def file_path(self, rel: str | Path | None) -> Path | None:
        """A vault-relative path as the caller may see it: absolute locally, never on a team server (the
        replica's disk is not the caller's; its layout is nobody else's business)."""
        return self.vault_root / rel if rel and self.local_files else None

    def resolve_scope(self, scope: str | Scope | None) -> Scope:
        """`auto` (or anything an agent passes) → the inferred scope; `global` → the tenant-wide scope."""
        return self.resolve_scope_arg(scope)[0]

    def resolve_scope_arg(self, scope: object) -> tuple[Scope, str | None]:
        """(the scope an agent's `scope` argument resolves to, a warning when it named another one).

        An agent cannot choose a repository: `global` is the tenant-wide scope, everything else the
        inferred one. A value naming another repository is answered with a warning saying where the
        memory went, never silently. A `Scope` is one an adapter resolved here before (it resolves once
        to get the warning, then passes the result on).
        """
        if isinstance(scope, Scope):
            return scope, None
        if scope == "global":
            if not self.global_reach:
                raise Forbidden(f"this token may act in {self.scope.workspace}/{self.scope.repository} only, not in "
                                "the person's global scope (the operator grants it: `memoryd token create "
                                "--scope WORKSPACE/REPOSITORY --scope global`)")  # fmt: skip
            return self.global_scope, None
        if scope is not None and not isinstance(scope, str):
            raise InvalidInput(f"scope must be a string, got {type(scope).__name__}")
        check_text("scope", scope)
        own = self.scope
        if scope in (None, "", "auto", own.scope_hash, own.name, own.repository):
            return own, None
        return own, (f"scope {shown(scope)} names another scope; an agent acts only on this repository "
                     f"({own.name}, scope_hash {own.scope_hash}) or \"global\", so this call used {own.name}")

    def scope_input_warning(self, given: dict[str, object] | None) -> str | None:
        """A warning when an HMG `scope` input names another tenant, workspace or repository."""
        if not given:
            return None
        own = self.scope
        for key, mine in (("tenant_id", own.tenant_id), ("workspace", own.workspace), ("repository", own.repository)):
            value = given.get(key)
            if value not in (None, "", mine):
                return (f"scope.{key} {shown(value)} differs from this repository's ({mine!r}); the scope is "
                        f"inferred from the working directory, so this call used {own.name} "
                        f"(scope_hash {own.scope_hash})")
        return None

    @property
    def global_scope(self) -> Scope:
        """The person's global scope (on a team server, never the team's)."""
        return self.person.global_scope()

    def recall_scopes(self, scope: Scope | None = None) -> list[str]:
        """The scope and its tenant's global scope: what recall and the brief search. For this engine's
        own scope on a team server: the repository's scope, the person's own scope of it (their memories
        from before it was shared) and the person's global scope."""
        if scope is None or scope == self.scope:
            own = [self.scope.scope_hash, self.person.scope_hash]
            return list(dict.fromkeys(own + [self.global_scope.scope_hash] if self.global_reach else own))
        if not self.global_reach:
            return [scope.scope_hash]
        return list(dict.fromkeys([scope.scope_hash, scope.global_scope().scope_hash]))

    def marker_state(self, marker: str, action: str) -> dict[str, Any] | None:
        """The JSON object of the newest `action` event keyed `marker` (import and transcript progress)."""
        for e in reversed(self.store.events(marker)):
            if e.action == action and e.content:
                try:
                    state = json.loads(e.content)
                except json.JSONDecodeError:
                    continue
                if isinstance(state, dict):
                    return state
        return None
