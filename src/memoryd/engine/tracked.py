"""The write transaction's vault bookkeeping: `TrackedTx` remembers which atoms a transaction wrote;
`plan_file` records (inside it) what each one's markdown file must become; `publish` writes or removes
the files after the commit. `Core.write` is the one place that strings them together."""

from __future__ import annotations

import hashlib
import logging
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Unpack

from ..formats import vault
from ..shared.errors import InvalidInput
from ..shared.models import Atom, Event
from ..storage.base import AccessWrites, AtomUpdate, IndexWrites, RecordWrites, Store, StoreTx, Vector

__all__ = ["IDENTITY_SEPARATORS", "FilePlan", "TrackedTx", "check_source", "plan_file", "publish"]

log = logging.getLogger("memoryd")


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


@dataclass(frozen=True)
class FilePlan:
    """What one committed transaction must publish for one atom: a file to write, a file to remove."""

    atom_id: str
    rel: str | None
    text: str | None
    digest: str | None
    remove: str | None


class TrackedTx:
    """A store transaction that remembers which atoms it wrote, so their markdown files follow, and names
    the person and token of every event. It forwards by hand only what it tracks (memory rows, events);
    the other write roles are the transaction's own (`index`, `records`, `access`)."""

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

    def append_event(self, *, atom_id: str | None, actor: str, action: str, reason: str | None,
                     content: str | None) -> Event:  # fmt: skip
        check_source(actor, "the actor (source)")
        if self._principal is not None:  # "agent@alice#<token id>": the chain covers who made each change
            actor = f"{actor}@{self._principal}"
        return self._tx.append_event(atom_id=atom_id, actor=actor, action=action, reason=reason, content=content)

    def delete_atom(self, atom_id: str) -> None:
        atom = self._store.get_atoms([atom_id]).get(atom_id)
        if atom is not None and atom.vault_path:
            self.removed[atom_id] = atom.vault_path
        self._tx.delete_atom(atom_id)
        self.touched[atom_id] = None

    # -- the roles no file follows: this transaction's own, untracked ------------------------------

    @property
    def index(self) -> IndexWrites:
        """Keyword terms and vector, entity edges, code anchors."""
        return self._tx

    @property
    def records(self) -> RecordWrites:
        """Session records and the review queue."""
        return self._tx

    @property
    def access(self) -> AccessWrites:
        """Sensitive scopes, grants, requests, tokens, teams, shares (their events go through `append_event`)."""
        return self._tx


def plan_file(tx: StoreTx, store: Store, vault_root: Path, atom_id: str, removed_path: str | None,
              token: str) -> FilePlan | None:  # fmt: skip
    """Record (inside the transaction) what the vault must hold for one atom: its file, or none."""
    atom = store.get_atoms([atom_id]).get(atom_id)  # this thread's transaction: its writes show
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
    (vault_root / rel).parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    stale = old if old and old != rel else None
    tx.update_atom(atom.id, vault_path=rel, vault_digest=digest, updated_at=atom.updated_at)
    tx.outbox_add(atom_id, token, stale)
    return FilePlan(atom_id, rel, text, digest, stale)


def publish(plans: Sequence[FilePlan], token: str, store: Store, vault_root: Path, lock: vault.VaultLock) -> None:
    """Write or remove the planned files of a committed transaction, then clear its outbox entries.

    Under the vault lock, and only while the database still records this transaction's digest:
    a later transaction of the same atom publishes its own file, so files never go back in time.
    A failure is logged and left to `recover_vault`: the write itself is committed.
    """
    if not plans:
        return
    try:
        with lock:
            current = store.vault_state([p.atom_id for p in plans])
            batch = len(plans) > 1  # e.g. an import batch: one sync for all its files
            for p in plans:
                state = current.get(p.atom_id)
                if p.text is not None and p.rel is not None:
                    if state is None or state.digest != p.digest:
                        continue
                    vault.write_atomic(vault_root / p.rel, p.text, durable=not batch)
                if p.remove is not None and (state is None or state.path != p.remove):
                    vault.remove(vault_root / p.remove)
            if batch:
                vault.flush_all()
        store.clear_outbox([(p.atom_id, token) for p in plans])
    except Exception:
        log.exception("publishing vault files failed; the next start (or `memoryd vault sync`) finishes it")
