"""The stable key of a scope, apart from everything else about scopes: `models.Scope` and `scope.infer_scope`
both need it, and neither imports the other at module level (no cycle)."""

from __future__ import annotations

import functools
import hashlib

__all__ = ["scope_hash"]


@functools.lru_cache(maxsize=4096)  # a pure function of four strings, asked for each recall candidate and scope
def scope_hash(tenant_id: str, workspace: str, repository: str, root: str) -> str:
    """The stable key of a scope: tenant + workspace + repository (+ the root for `local` ones)."""
    # Non-git directories share no remote, so their path keeps two same-named folders apart.
    key = f"{tenant_id}\x1f{workspace}\x1f{repository}"
    if workspace == "local":
        key += f"\x1f{root}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]
