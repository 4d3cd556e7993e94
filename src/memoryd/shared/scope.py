"""Scope inference from a working directory: git root, `origin` remote, branch, local user."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from .scope_key import scope_hash

if TYPE_CHECKING:  # at run time imported inside infer_scope: hooks use this module without pydantic
    from .models import Scope

__all__ = ["infer_scope", "local_tenant", "parse_remote", "repository_identity", "repository_scope_hash", "scope_hash"]

_SCP_LIKE = re.compile(r"^(?:[\w.\-]+@)?(?P<host>[\w.\-]+):(?P<path>(?!/).+)$")


def local_tenant() -> str:
    """The tenant is the local user name (`MEMORYD_TENANT` overrides, e.g. on shared machines)."""
    tenant = os.environ.get("MEMORYD_TENANT")
    if tenant:
        return tenant
    for name in ("LOGNAME", "USER", "LNAME", "USERNAME"):  # getpass.getuser()'s own order, without importing it
        if os.environ.get(name):
            return os.environ[name]
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry, e.g. in minimal containers
        return "local"


def parse_remote(url: str) -> tuple[str, str] | None:
    """Split a git remote URL into (workspace, repository).

    Handles https (with or without credentials), ssh://, scp-like `git@host:owner/repo.git`,
    nested groups (`group/sub/repo` → workspace `group/sub`) and local paths.
    """
    url = url.strip()
    if not url:
        return None
    path: str
    if "://" in url:
        rest = url.split("://", 1)[1]
        rest = rest.split("@", 1)[1] if "@" in rest.split("/", 1)[0] else rest
        path = rest.split("/", 1)[1] if "/" in rest else ""
    elif (m := _SCP_LIKE.match(url)) is not None:
        path = m.group("path")
    else:
        path = url  # a local path used as a remote
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[: -len(".git")]
    parts = [p for p in path.split("/") if p]
    if not parts:
        return None
    if len(parts) == 1:
        return "", parts[0]
    return "/".join(parts[:-1]), parts[-1]


def _git(cwd: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(cwd), *args],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def infer_scope(cwd: str | os.PathLike[str] | None = None) -> Scope:
    """Infer the scope of a working directory.

    In a git checkout: workspace and repository from the `origin` remote (the git root's
    name when there is none, with workspace `local`), branch from HEAD (`detached@<sha>`
    on a detached HEAD). Elsewhere: workspace `local`, repository = the directory's name.
    """
    from .models import Scope

    path = Path(cwd if cwd is not None else os.getcwd()).resolve()
    tenant = local_tenant()
    top = _git(path, "rev-parse", "--show-toplevel")
    if not top:
        return Scope(tenant_id=tenant, workspace="local", repository=path.name or "root", root=str(path))
    root = Path(top)
    branch = _git(root, "symbolic-ref", "--quiet", "--short", "HEAD")
    if not branch:
        sha = _git(root, "rev-parse", "--short", "HEAD")
        branch = f"detached@{sha}" if sha else "detached"
    workspace, repository = repository_identity(root)
    return Scope(tenant_id=tenant, workspace=workspace, repository=repository, branch=branch, root=str(root))


def repository_identity(root: Path) -> tuple[str, str]:
    """(workspace, repository) of a git root: from the `origin` remote, else ("local", the folder name)."""
    remote = _git(root, "config", "--get", "remote.origin.url")
    parsed = parse_remote(remote) if remote else None
    return parsed if parsed is not None else ("local", root.name)


def repository_scope_hash(root: Path, remote: str | None = None) -> str:
    """The scope hash `infer_scope` gives a git root, without building a Scope (hooks avoid pydantic);
    `remote` is remote.origin.url when the caller read it already."""
    parsed = parse_remote(remote) if remote else None
    workspace, repository = parsed if parsed is not None else (
        repository_identity(root) if remote is None else ("local", root.name))  # fmt: skip
    return scope_hash(local_tenant(), workspace, repository, str(root))
