"""Keep the markdown vault and the database in step; import what people edit by hand.

memoryd publishes each active memory's file after its write transaction commits, having recorded
the file's digest and an outbox entry in that transaction (`Core.write`). At start-up
`recover_vault` first finishes what a crash interrupted (outbox entries, temporary files), from the
database. Then a file whose bytes no longer match the recorded digest was edited on disk; a recorded
file that is gone was deleted on disk (unless every recorded file is gone: then the vault is missing,
e.g. a new machine on a shared database, and the files are written again); a file with an id the database does not know (or none) is
new. Atoms with a pending outbox entry are changing right now and are left alone, and every action
is checked again against the database just before it is applied, all under the vault lock, so a
sync never records an edit or a deletion for an atom the engine changed during its scan. Broken
files are reported with their path and never touched.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..formats import vault
from ..shared.errors import InvalidInput, Rejected
from ..shared.models import Scope
from ..storage.base import MemoryReads, OutboxReads, VaultRecord
from .core import Core, clean
from .inputs import read_in
from .writes import Writer

__all__ = ["VaultSync"]

_REPORT_KEYS = ("imported", "edited", "retagged", "deleted", "written", "orphaned", "broken")


class VaultSync:
    def __init__(self, core: Core, writer: Writer, *, memories: MemoryReads, outbox: OutboxReads) -> None:
        self.memories = memories
        self.outbox = outbox
        self.core = core
        self.writer = writer

    def recover_vault(self) -> dict[str, list[str]]:
        """Finish what a crash interrupted: publish queued files from the database, drop temporaries."""
        core = self.core
        with core.vault_lock:
            temps = [str(p) for p in vault.remove_temp_files(core.vault_root)]
            rows = self.outbox.outbox()
            atoms = self.memories.get_atoms([r[0] for r in rows])
            states = self.outbox.vault_state([r[0] for r in rows])
            published: list[str] = []
            for atom_id, _, remove_path in rows:
                atom = atoms.get(atom_id)
                if atom is not None and atom.status == "active" and atom.vault_path:
                    text = vault.render(atom)
                    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
                    path = core.vault_root / atom.vault_path
                    current = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
                    if current != digest:
                        vault.write_atomic(path, text)
                        published.append(atom_id)
                    if digest != states[atom_id].digest:  # only if rendering changed between versions
                        with core.untracked() as tx:
                            tx.update_atom(atom.id, vault_digest=digest, updated_at=atom.updated_at)
                if remove_path and (atom is None or atom.vault_path != remove_path):
                    vault.remove(core.vault_root / remove_path)
                    published.append(atom_id)
            self.outbox.clear_outbox([(r[0], r[1]) for r in rows])
            return {"published": published, "temp_files_removed": temps}

    def _vault_plan(self) -> tuple[dict[str, list[Any]], dict[str, VaultRecord]]:
        db = self.outbox.vault_digests()
        root = self.core.vault_root
        known = {root / rel: (digest, atom_id) for atom_id, (_, rel, digest) in db.items() if rel and digest}
        plan: dict[str, list[Any]] = {k: [] for k in _REPORT_KEYS}
        broken_paths: set[str] = set()
        on_disk: set[str] = set()
        for f in vault.iter_scan(root, known):  # only files that need work are kept
            if isinstance(f, vault.VaultFormatError):
                plan["broken"].append({"path": str(f.path), "error": str(f)})
                broken_paths.add(str(f.path))
                continue
            atom_id = f.frontmatter.get("id")
            if not atom_id or atom_id not in db:
                plan["imported"].append(f)
                continue
            status, rel, digest = db[atom_id]
            if status != "active":
                plan["orphaned"].append(f)  # left alone: it may hold a person's edit
                continue
            if rel and (root / rel) != f.path and (root / rel).exists():
                plan["orphaned"].append(f)  # a copy of a memory whose own file is still in place
                continue
            on_disk.add(atom_id)
            if f.digest != digest:
                plan["edited"].append(f)
        for atom_id, (status, rel, _) in db.items():
            if status != "active" or atom_id in on_disk:
                continue
            path = root / rel if rel else None
            if path is not None and str(path) in broken_paths:
                continue
            if rel:
                plan["deleted"].append(atom_id)
            else:
                plan["written"].append(atom_id)
        if plan["deleted"] and not on_disk and not broken_paths:
            # Not one recorded file is there: the vault is missing (a new machine, a replica or a restore
            # sharing this database), not emptied by hand. Publish the files again; deleting every memory
            # would be the one answer that loses data.
            plan["written"] += plan["deleted"]
            plan["deleted"] = []
        # Atoms changed while we scanned (committed, file not yet published) are not hand edits.
        busy = {r[0] for r in self.outbox.outbox()}
        for key in ("edited", "orphaned", "imported"):
            plan[key] = [f for f in plan[key] if f.frontmatter.get("id") not in busy]
        plan["deleted"] = [a for a in plan["deleted"] if a not in busy]
        return plan, db

    def _unchanged(self, atom_id: str, seen: dict[str, VaultRecord]) -> bool:
        """Whether an atom is still what the plan saw (status, file, digest) and not being written."""
        now = self.outbox.vault_state([atom_id]).get(atom_id)
        if atom_id not in seen or now is None or atom_id in {r[0] for r in self.outbox.outbox()}:
            return False
        return now == seen[atom_id]

    def _read_in(self, body: str, title: Any, tags: Any, triggers: Any) -> dict[str, Any]:
        """A vault file's body and frontmatter fields as they would be stored (`inputs.read_in`)."""
        fields = {"body": body, "title": title, "tags": [str(t) for t in tags or []],
                  "triggers": [str(t) for t in triggers or []]}  # fmt: skip
        return read_in("vault file", fields, content_limit=self.core.settings.max_content_chars)

    def _scope_from_frontmatter(self, fm: dict[str, Any]) -> Scope:
        """The scope a file names (a copy from another checkout), else the current one."""
        s = fm.get("scope")
        if isinstance(s, dict) and s.get("hash") == self.core.scope.scope_hash:
            return self.core.scope
        if isinstance(s, dict) and s.get("tenant_id") and s.get("repository"):
            return Scope(tenant_id=s["tenant_id"], workspace=s.get("workspace") or "",
                         repository=s["repository"], branch=s.get("branch") or "")  # fmt: skip
        return self.core.scope

    def vault_check(self) -> dict[str, list[str]]:
        """What `vault_sync` would do, as paths or ids, without changing anything."""
        plan = self._vault_plan()[0]
        return {k: [str(getattr(x, "path", x)) if not isinstance(x, dict) else x["path"] for x in v]
                for k, v in plan.items()}  # fmt: skip

    def vault_sync(self) -> dict[str, list[Any]]:
        """Import hand edits (replace, reason "edited on disk"), deletions and new files.

        The vault holds every scope's files and is the person's own: sync acts for memoryd itself
        (`Core.as_system`), whichever surface started it.
        """
        with self.core.as_system(), self.core.vault_lock:
            self.recover_vault()
            return self._vault_sync()

    def _vault_sync(self) -> dict[str, list[Any]]:
        plan, seen = self._vault_plan()
        report: dict[str, list[Any]] = {k: [] for k in _REPORT_KEYS}
        report["broken"] = plan["broken"]
        report["orphaned"] = [str(f.path) for f in plan["orphaned"]]
        for f in plan["edited"]:
            if not self._unchanged(f.frontmatter["id"], seen):
                continue  # the engine changed it since the scan: not a hand edit
            atom = self.memories.get_atoms([f.frontmatter["id"]])[f.frontmatter["id"]]
            fm = f.frontmatter
            assert f.body is not None  # edited = its digest changed, so it was parsed
            # compared as they would be stored (redacted): a secret typed into the file is no change
            read = self._read_in(f.body, fm.get("title"), fm.get("tags"), fm.get("triggers"))
            body, title, tags, triggers = read["body"], read["title"], read["tags"], read["triggers"]
            if clean(body) != atom.content:
                try:
                    r = self.writer.correct(atom.id, "replace", "edited on disk", body, actor="vault")
                except Rejected as exc:
                    report["broken"].append({"path": str(f.path), "error": exc.message})
                    continue
                new_id = r.new_atom_id or atom.id
                if (tags, triggers, title) != (atom.tags, atom.triggers, atom.title):
                    self.writer.patch(new_id, tags=tags, triggers=triggers, title=title, actor="vault",
                                reason="edited on disk")  # fmt: skip
                report["edited"].append({"path": str(f.path), "memory_id": atom.id, "new_memory_id": new_id})
            elif (tags, triggers, title) != (atom.tags, atom.triggers, atom.title):
                self.writer.patch(
                    atom.id, tags=tags, triggers=triggers, title=title, actor="vault", reason="edited on disk"
                )
                report["retagged"].append({"path": str(f.path), "memory_id": atom.id})
            else:  # only formatting changed: write our rendering back and record its digest
                with self.core.write() as tx:
                    tx.resync(atom.id)
        for atom_id in plan["deleted"]:
            rel = seen[atom_id].path
            if not self._unchanged(atom_id, seen) or (rel and (self.core.vault_root / rel).exists()):
                continue  # changed or written since the scan: not a deletion
            self.writer.delete(atom_id, actor="vault", reason="deleted on disk")
            report["deleted"].append(atom_id)
        for f in plan["imported"]:
            assert f.body is not None  # unknown files are always parsed
            fm = f.frontmatter
            read = self._read_in(f.body, fm.get("title"), fm.get("tags"), fm.get("triggers"))
            try:
                saved = self.writer.memorize(
                    read["body"], source="vault", type=fm.get("type") or "fact", title=read["title"], tags=read["tags"],
                    triggers=read["triggers"], gate="trusted", actor="vault", scope=self._scope_from_frontmatter(fm),
                    written_at=fm.get("written"),
                )  # fmt: skip
            except (Rejected, InvalidInput) as exc:
                report["broken"].append({"path": str(f.path), "error": exc.message})
                continue
            if saved.atom_id and self.core.path_of(self.memories.get_atoms([saved.atom_id])[saved.atom_id]) != f.path:
                vault.remove(f.path)  # its content now lives in the memory's own file
            report["imported"].append({"path": str(f.path), "memory_id": saved.atom_id, "effect": saved.effect})
        for atom_id in plan["written"]:
            if not self._unchanged(atom_id, seen):
                continue
            with self.core.write() as tx:
                tx.resync(atom_id)
            report["written"].append(atom_id)
        return report
