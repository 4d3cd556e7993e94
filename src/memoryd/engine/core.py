"""What every part of the engine shares: the store and the scope, the write transaction that keeps
the markdown vault in step, the scope boundary (`reach`, `find_atom`) with the one sensitive-scope
check, embedding, and building atoms."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ulid import ULID

from ..formats import vault
from ..search.embed import Embedder, TermEmbedder
from ..shared.config import Settings
from ..shared.display import PLACEHOLDERS, shown_content, split_actor
from ..shared.errors import AuthorizationRequired, Forbidden, InvalidInput, NotFound
from ..shared.limits import LIMITS, UNSTORABLE, check_text, check_texts, unstorable
from ..shared.models import ATOM_TYPES, Atom, Scope
from ..storage.base import Store, StoreTx
from .inputs import shown
from .tracked import FilePlan, TrackedTx, check_source, plan_file, publish

__all__ = [
    "AUTHORITIES",
    "PLACEHOLDERS",
    "Core",
    "TrackedTx",
    "check_source",
    "clean",
    "shown",
    "split_actor",
    "visible_content",
]

log = logging.getLogger("memoryd")

# Who the engine acts for. "agent": only the inferred scope and the tenant's global scope are
# within reach, and sensitive scopes need a grant (MCP, hooks, the SDK by default). "operator": a
# person at the CLI, who may name any scope.
AUTHORITIES = ("agent", "operator")


def clean(text: str) -> str:
    """What is stored of a text: LF newlines, no surrounding blanks (its secrets were redacted as it came in:
    `inputs`)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").strip()


def visible_content(atom: Atom) -> str:
    """What a reader may see of an atom: its content, or a placeholder for hidden states."""
    return shown_content(atom)


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


class Core:
    """The engine's shared state and services; every part (`memoryd.engine.Engine`) is given one."""

    def __init__(
        self, settings: Settings, store: Store, embedder: Embedder, scope: Scope, *, authority: str = "agent",
        enforce_sensitive: bool | None = None, term_embedder: TermEmbedder | None = None,
        english: Embedder | None = None, vault_lock: vault.VaultLock | None = None, principal: str | None = None, read_only: bool = False,
        person: Scope | None = None, global_reach: bool = True, local_files: bool = True,
    ) -> None:  # fmt: skip
        if authority not in AUTHORITIES:
            raise ValueError(f"unknown authority {authority!r}; expected one of {', '.join(AUTHORITIES)}")
        if authority == "agent" and enforce_sensitive is False:
            raise ValueError("an agent always needs a grant for a sensitive scope")
        self.settings = settings
        self.store = store
        self.embedder = embedder
        self.term_embedder = term_embedder  # recall's former English signal, used without `english` (None: left out)
        self.english = english  # the English sentence model: each memory's second vector (None: left out)
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
                plan = plan_file(tx, self.store, self.vault_root, atom_id, tracked.removed.get(atom_id), token)
                if plan is not None:
                    plans.append(plan)
        tracked.committed = True  # what a caller interrupted from here on (Ctrl-C) must count as written
        publish(plans, token, self.store, self.vault_root, self.vault_lock)

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

    # -- checks --------------------------------------------------------------------------------

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
        return own, (
            f"scope {shown(scope)} names another scope; an agent acts only on this repository "
            f'({own.name}, scope_hash {own.scope_hash}) or "global", so this call used {own.name}'
        )

    def scope_input_warning(self, given: dict[str, object] | None) -> str | None:
        """A warning when an HMG `scope` input names another tenant, workspace or repository."""
        if not given:
            return None
        own = self.scope
        for key, mine in (("tenant_id", own.tenant_id), ("workspace", own.workspace), ("repository", own.repository)):
            value = given.get(key)
            if value not in (None, "", mine):
                return (
                    f"scope.{key} {shown(value)} differs from this repository's ({mine!r}); the scope is "
                    f"inferred from the working directory, so this call used {own.name} "
                    f"(scope_hash {own.scope_hash})"
                )
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
