"""Administration: stats, merging scopes, the current project, health checks, prompts, sensitive
scopes with time-limited grants. (Moving a whole store between databases: `engine/migrate.py`.)"""

from __future__ import annotations

import os
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

from ..formats import vault
from ..search.decay import DECAY_STATES, decay_state
from ..shared.errors import InvalidInput, NotFound
from ..shared.limits import check_text
from ..shared.models import Scope
from ..shared.scope import infer_scope
from ..shared.stamps import norm_hash, utc_now
from ..storage.base import AccessReads, AccessRequest, AtomUpdate, Maintenance, MemoryReads, OutboxReads, Reports
from ..text.redact import redact
from .core import Core
from .review import Review
from .vault_sync import VaultSync

__all__ = ["Admin"]

_PROMPT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class Admin:
    def __init__(
        self,
        core: Core,
        review: Review,
        vault: VaultSync,
        *,
        memories: MemoryReads,
        outbox: OutboxReads,
        access: AccessReads,
        reports: Reports,
        maintenance: Maintenance,
    ) -> None:
        self.memories = memories
        self.outbox = outbox
        self.access = access
        self.reports = reports
        self.maintenance = maintenance
        self.core = core
        self.review = review
        self.vault = vault

    # Admin operations (stats over every scope, merging scopes) exist only for a person: the CLI/SDK,
    # or an MCP server the person started with --admin. They act over every scope (`Core.as_system`), as
    # the seed's mem_merge_projects must (a renamed repository's old scope is another scope).

    def stats_detail(self, scope: str | None = None) -> dict[str, Any]:
        """total, by_type, by_scope, by_decay, top_entities — over every scope, or one scope hash."""
        with self.core.as_system():
            return self._stats_detail(scope)

    def _stats_detail(self, scope: str | None) -> dict[str, Any]:
        hashes = self.core.reachable_scopes() if scope in (None, "", "all") else [self._scope_hash_of(scope)]
        groups = self.reports.group_counts(hashes)
        now = utc_now()
        by_decay = dict.fromkeys(DECAY_STATES, 0)
        for atom in self.memories.list_atoms(scope_hashes=hashes, statuses=["active"], limit=-1):
            by_decay[decay_state(atom, now)] += 1
        return {"total": sum(groups["by_type"].values()), "by_type": groups["by_type"], "by_scope": groups["by_scope"],
                "by_decay": by_decay, "top_entities": groups["top_entities"]}  # fmt: skip

    def _scope_hash_of(self, value: str) -> str:
        """A scope given by hash, by name (`owner/repo`), or as `auto` / `global`, within reach.

        An agent reaches its repository and the global scope only; any other scope is `not_found`
        with the same message as a scope that holds nothing.
        """
        if not isinstance(value, str):
            raise InvalidInput(f"scope must be a string, got {type(value).__name__}")
        check_text("scope", value)
        if value in ("auto", "global"):
            return self.core.resolve_scope(value).scope_hash
        known = self.reports.group_counts(self.core.reachable_scopes())["by_scope"]
        if value in known:
            return value
        named = [h for h, v in known.items() if v["name"] == value]
        if len(named) == 1:
            return named[0]
        if len(named) > 1:
            raise InvalidInput(f"scope name {value!r} is ambiguous; pass one of the hashes {named}")
        raise NotFound(f"no scope {value!r} holds memories (pass a scope_hash from mem_stats or mem_current_project)")

    def merge_projects(
        self, scope_a: str, scope_b: str, *, dry_run: bool = True, actor: str = "admin"
    ) -> dict[str, Any]:
        """Merge scope_b into scope_a: move its memories, deduplicating exact copies. One transaction."""
        with self.core.as_system():
            return self._merge_projects(scope_a, scope_b, dry_run=dry_run, actor=actor)

    def _merge_projects(self, scope_a: str, scope_b: str, *, dry_run: bool, actor: str) -> dict[str, Any]:
        a, b = self._scope_hash_of(scope_a), self._scope_hash_of(scope_b)
        if a == b:
            raise InvalidInput("scope_a and scope_b are the same scope")
        live = ["active", "pending", "negated", "superseded", "quarantined", "sealed"]
        target = self.memories.list_atoms(scope_hashes=[a], statuses=live, limit=1)
        a_atoms = self.memories.list_atoms(scope_hashes=[a], statuses=["active", "pending"], limit=-1)
        b_atoms = self.memories.list_atoms(scope_hashes=[b], statuses=live, limit=-1)
        existing = {norm_hash(x.content): x.id for x in a_atoms}
        dups = {x.id: existing[norm_hash(x.content)] for x in b_atoms if x.status in ("active", "pending")
                and norm_hash(x.content) in existing}  # fmt: skip
        moves = [x for x in b_atoms if x.id not in dups]
        samples = [{"memory_id": x.id, "content": x.content[:120], "dedup_with": dups.get(x.id)} for x in b_atoms[:5]]
        report: dict[str, Any] = {"would_move": len(moves), "would_dedup": len(dups), "samples": samples,
                                  "dry_run": dry_run}  # fmt: skip
        if dry_run:
            return report
        if not target and not a_atoms:
            raise NotFound(f"scope_a {scope_a!r} holds no memories to merge into")
        scope = (a_atoms or target)[0].scope
        fields: AtomUpdate = {"tenant_id": scope.tenant_id, "workspace": scope.workspace, "repository": scope.repository,
                              "branch": scope.branch, "scope_root": scope.root, "scope_hash": a}  # fmt: skip
        reason = f"merged {b} into {a}"
        with self.core.write() as tx:
            for x in moves:
                tx.update_atom(x.id, **fields)
                tx.append_event(atom_id=x.id, actor=actor, action="merge", reason=reason, content=None)
            for dup, keep in dups.items():
                superseded: AtomUpdate = {**fields, "status": "superseded", "superseded_by": keep}
                tx.update_atom(dup, **superseded)
                tx.index.link(keep, dup, "supersedes")
                tx.append_event(atom_id=dup, actor=actor, action="merge_dedup", reason=f"{reason}; same as {keep}",
                                content=None)  # fmt: skip
            tx.records.rescope_promotions(b, a)
        return {**report, "moved": len(moves), "deduped": len(dups)}

    def current_project(self, cwd: str | None = None) -> dict[str, str]:
        s: Scope = infer_scope(cwd) if cwd else self.core.scope
        return {"scope_hash": s.scope_hash, "scope_name": s.name, "scope_root": s.root}

    def doctor(self) -> dict[str, str]:
        """One line per subsystem: "ok…", "warn: …" or "error: …", each from a real check."""
        out: dict[str, str] = {}
        home = self.core.settings.home
        out["data_root"] = f"ok: {home}" if os.access(home, os.W_OK) else f"error: {home} is not writable"
        try:
            check = self.maintenance.integrity()
            latest = self.maintenance.latest_migration()
            applied = max((v for v, _ in self.maintenance.applied_migrations()), default=0)
            if check != "ok":
                out["index_db"] = f"error: integrity check says {check}"
            elif applied != latest:
                out["index_db"] = f"warn: schema at migration {applied}, code expects {latest}"
            else:
                counts = self.reports.counts()
                out["index_db"] = f"ok: {counts['atoms']} atoms, schema {applied}, keyword index {counts['keyword']}"
        except Exception as exc:  # doctor reports, never raises
            out["index_db"] = f"error: {exc}"
        emb = self.core.embedder
        err = getattr(emb, "error", None)
        if err is not None:
            out["embeddings"] = f"error: {emb.name} failed to load: {err}"
        else:
            try:
                out["embeddings"] = f"ok: {emb.name}, dim {len(emb.query('health check'))}"
            except Exception as exc:
                out["embeddings"] = f"error: {emb.name}: {exc}"
        llm = self.review.llm
        out["llm"] = (f"ok: {llm.name}" if llm is not None else f"error: {self.review.llm_error}" if self.review.llm_error
                      else "warn: ANTHROPIC_API_KEY not set and no MEMORYD_LLM_BASE_URL; judgments use the heuristic")  # fmt: skip
        dangling, edges = self.maintenance.dangling_edges(), self.reports.counts()["edges"]
        out["kg"] = f"ok: {edges} edges" if dangling == 0 else f"warn: {dangling} of {edges} edges point nowhere"
        problems: dict[str, list[Any]] = {k: v for k, v in self.vault.vault_check().items() if v}
        waiting = self.outbox.outbox()
        if waiting:  # committed writes whose files were not published (a crash, or a vault that failed)
            problems["files waiting to be published"] = list(waiting)
        out["sync"] = "ok: vault matches the database" if not problems else "warn: " + ", ".join(
            f"{len(v)} {k}" for k, v in problems.items()) + " (see `memoryd vault check`)"  # fmt: skip
        return out

    def save_prompt(self, name: str, content: str) -> Path:
        """Store a prompt template as `<data_root>/prompts/<name>.md`."""
        if not isinstance(name, str) or not _PROMPT_NAME.match(name) or ".." in name:
            raise InvalidInput(
                f"prompt name {name!r} is not allowed: use 1-64 letters, digits, '.', '_' or '-', no path separators"
            )
        if not isinstance(content, str) or not content.strip():
            raise InvalidInput("prompt content is empty")
        check_text("prompt", content, field="content")
        content = redact(content).text  # prompts are files on disk: no secret in them either
        folder = (self.core.settings.home / "prompts").resolve()
        path = (folder / f"{name.removesuffix('.md')}.md").resolve()
        if path.parent != folder:
            raise InvalidInput(f"prompt name {name!r} escapes the prompts folder")
        vault.write_atomic(path, content if content.endswith("\n") else content + "\n")
        return path

    # -- sensitive scopes --------------------------------------------------------------------

    def scope_info(self) -> dict[str, Any]:
        """The current scope (hash, name, root) and whether it is sensitive."""
        return {**self.current_project(), "sensitive": self.access.is_sensitive(self.core.scope.scope_hash)}

    def access_requests(self) -> list[AccessRequest]:
        """Read requests agents filed with mem_request_sensitive_read, oldest first."""
        return self.access.access_requests()

    def mark_sensitive(self, sensitive: bool = True, *, scope: Scope | None = None) -> Scope:
        scope = scope or self.core.scope
        with self.core.write() as tx:
            tx.access.mark_sensitive(scope.scope_hash, scope.name, sensitive)
            tx.append_event(atom_id=None, actor="user", action="mark_sensitive" if sensitive else "unmark_sensitive",
                            reason=scope.scope_hash, content=None)  # fmt: skip
        return scope

    def grant(self, minutes: int, *, scope: Scope | None = None, by: str = "user") -> dict[str, Any]:
        if not isinstance(minutes, int) or not 1 <= minutes <= 24 * 60:
            raise InvalidInput(f"minutes must be between 1 and 1440, got {minutes!r}")
        scope = scope or self.core.scope
        if not self.access.is_sensitive(scope.scope_hash):
            raise InvalidInput(f"scope {scope.name} is not marked sensitive; nothing to grant")
        expires = utc_now() + timedelta(minutes=minutes)
        with self.core.write() as tx:
            tx.access.add_grant(scope.scope_hash, by, expires)
            tx.append_event(atom_id=None, actor=by, action="grant", reason=f"{scope.scope_hash} for {minutes} min",
                            content=None)  # fmt: skip
        return {"scope_hash": scope.scope_hash, "scope_name": scope.name, "expires_at": expires.isoformat()}

    def request_sensitive_read(self, reason: str, *, scope: str | Scope | None = "auto") -> dict[str, Any]:
        """Record an agent's request to read a sensitive scope; a person grants it from the CLI."""
        return self.request_read(self.core.resolve_scope(scope), reason)

    def request_read(self, target: Scope, reason: str, *, by: str = "agent") -> dict[str, Any]:
        """Record a request to read the sensitive scope `target` (agents, the console), with its audit event."""
        if not isinstance(reason, str) or not reason.strip():
            raise InvalidInput("reason is required: say what you need to read and why")
        check_text("reason", reason)
        reason = redact(reason).text
        if not self.access.is_sensitive(target.scope_hash):
            return {"request_id": None, "scope_hash": target.scope_hash, "status": "not_needed",
                    "message": f"scope {target.name} is not sensitive; reads are allowed"}  # fmt: skip
        expiry = self.access.grant_expiry(target.scope_hash)
        if expiry is not None:
            return {"request_id": None, "scope_hash": target.scope_hash, "status": "granted",
                    "message": f"a grant runs until {expiry.isoformat()}"}  # fmt: skip
        with self.core.write() as tx:  # a team token's person is named in the event, as in every write
            rid = tx.access.add_access_request(target.scope_hash, reason.strip())
            tx.append_event(atom_id=None, actor=by, action="request_access",
                            reason=f"{target.scope_hash} #{rid}: {reason.strip()}", content=None)  # fmt: skip
        return {"request_id": rid, "scope_hash": target.scope_hash, "status": "pending",
                "message": f"ask the user to run `memoryd scope grant --minutes 30` in {target.root or 'the repository'}"}  # fmt: skip


# -- SQLite → PostgreSQL ------------------------------------------------------------------------
