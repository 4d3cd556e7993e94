"""The team server's identities (issue 16): tokens, teams, shared repositories, and who a request acts for.

- A token is `mdt_<id>_<secret>`: the id (a ULID) finds its row, the secret is checked against a salted
  scrypt digest (memory-hard, `hashlib.scrypt`); the secret itself is printed once and stored nowhere.
  Every request reads the token's row, so a revocation or an expiry is seen by every replica on its next
  request. What a process remembers is only which presented token matched which digest (`_VERIFIED`), a
  pure function of immutable data that saves scrypt's ~40 ms on each request; never a token's rights.
- A person is a tenant. A repository shared with a team (`share_scope`) is one scope of tenant
  `team:<name>` for its members; everyone else, and every other repository, stays private to its tenant.
  A person's global scope is theirs, also in a shared repository.
- Operator actions (tokens, teams, shares) are audit events of their own; a request's changes name the
  person's token in every event (`Core.principal`, `TrackedTx.append_event`).
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, TypedDict

from pydantic import BaseModel
from ulid import ULID

from ..shared.errors import Forbidden, InvalidInput, NotFound, StorageBusy, Unauthorized
from ..shared.limits import check_text, check_texts, json_loads
from ..shared.models import Scope
from ..shared.stamps import utc_now
from ..storage.base import AccessReads, TokenRecord
from .core import Core, shown
from .token_gate import Gate, GateKeys

__all__ = ["IssuedToken", "Principal", "TeamsOverview", "Tenancy", "TokenInfo", "local_scope", "parse_expiry"]

TOKEN_PREFIX = "mdt_"
GLOBAL = "global"  # among a token's scopes: it may also act in the person's global scope
TEAM_PREFIX = "team:"  # the tenant of a shared repository's scope; a person's name cannot hold ':'
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}")
_TOKEN = re.compile(r"mdt_([0-9A-HJKMNP-TV-Z]{26})_([A-Za-z0-9_-]{43})")
_EXPIRY = re.compile(r"(\d{1,5})([hdwy])")
_UNIT = {"h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1), "y": timedelta(days=365)}
# scrypt: n=2^14, r=8 (16 MiB of memory per check), the parameters RFC 7914 gives for interactive use.
_SCRYPT = {"n": 2**14, "r": 8, "p": 1, "maxmem": 64 * 1024 * 1024, "dklen": 32}
_VERIFIED: dict[bytes, str] = {}  # sha256(presented token) -> the digest it matched (bounded, see `_check`)
_VERIFIED_LOCK = threading.Lock()
_VERIFIED_MAX = 10_000


@dataclass(frozen=True)
class Principal:
    """Who a team-server request acts for: a person (tenant) through one token, with its rights."""

    token_id: str
    tenant_id: str
    read_only: bool
    scopes: tuple[str, ...]  # repositories ("workspace/repository") the token may act in, "global"; empty: all
    # (workspace, repository, the team it is shared with if this person is a member) read with the token for
    # the request's Memoryd-Scope header (`authenticate(scope_header=…)`): the request's scope needs no other read
    shared: tuple[str, str, str | None] | None = None

    @property
    def reaches_global(self) -> bool:
        """Whether the token reaches the person's global scope: an unlimited token does; one limited with
        `--scope` only when the operator named `global` among its scopes (a leaked CI token limited to one
        repository must not read the person's preferences, nor plant new ones every agent then follows)."""
        return not self.scopes or GLOBAL in self.scopes

    @property
    def repositories(self) -> tuple[str, ...]:
        """The repositories a limited token may act in (empty: all of them)."""
        return tuple(s for s in self.scopes if s != GLOBAL)

    @property
    def name(self) -> str:
        """How the audit chain names them: `alice#<token id>`."""
        return f"{self.tenant_id}#{self.token_id}"


class IssuedToken(BaseModel):
    id: str
    tenant: str
    token: str  # shown once, stored nowhere
    label: str
    read_only: bool
    scopes: list[str]
    expires_at: datetime | None


class TokenInfo(BaseModel):
    id: str
    tenant: str
    label: str
    read_only: bool
    scopes: list[str]
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    state: Literal["active", "expired", "revoked"]


class TeamsOverview(TypedDict):
    teams: dict[str, list[str]]  # team -> members
    shares: list[dict[str, str]]  # {"repository": "acme/api", "team": "core"}


def parse_expiry(value: str | None, now: datetime) -> datetime | None:
    """`90d`, `12h`, `2w`, `1y` → that long after `now`; `never` → None. Raises InvalidInput."""
    if value is None or value == "never":
        return None
    m = _EXPIRY.fullmatch(value) if isinstance(value, str) else None
    if m is None or int(m.group(1)) == 0:
        raise InvalidInput(f"expires must look like 90d, 12h, 2w or 1y (a positive number and h/d/w/y) or be "
                           f"'never', got {shown(value)}")  # fmt: skip
    return now + int(m.group(1)) * _UNIT[m.group(2)]


_GATE = Gate()
_DUMMY_SALT = secrets.token_hex(16)  # an unknown id is hashed against this: it costs what a known one does


def _digest(secret: str, salt: str) -> str:
    return hashlib.scrypt(secret.encode(), salt=bytes.fromhex(salt), **_SCRYPT).hex()


def check_name(what: str, value: object) -> str:
    """A tenant or team name: 1-64 of letters, digits and `._@+-`, starting with a letter or digit."""
    if not isinstance(value, str) or _NAME.fullmatch(value) is None:
        raise InvalidInput(f"{what} must be 1-64 letters, digits or ._@+- (starting with a letter or digit), "
                           f"got {shown(value)}")  # fmt: skip
    return value


def split_repository(value: object, what: str = "repository") -> tuple[str, str]:
    """`workspace/repository` (the workspace may hold '/': `group/sub/repo`) → (workspace, repository)."""
    text = check_text("scope", value, field=what, required=True)
    assert text is not None
    workspace, _, repository = text.strip().strip("/").rpartition("/")
    if not workspace or not repository:
        raise InvalidInput(f"{what} must be WORKSPACE/REPOSITORY as git remotes name it (e.g. acme/api), got {text!r}")
    return workspace, repository


class Tenancy:
    """Tokens, teams and shares (the operator, `memoryd token|team|scope share`), and each request's identity."""

    def __init__(self, core: Core, *, access: AccessReads) -> None:
        self.access = access
        self.core = core

    def _operator(self, what: str) -> None:
        if self.core.authority != "operator":
            raise Forbidden(f"{what} is for the team server's operator (the memoryd CLI on the server), not an agent")

    # -- tokens ----------------------------------------------------------------------------------

    def create_token(self, tenant: str, *, expires: str | None = "90d", read_only: bool = False,
                     scopes: Sequence[str] = (), label: str = "") -> IssuedToken:  # fmt: skip
        """A new token for `tenant`: the secret is in the answer only. `scopes`: repositories it may act in
        (WORKSPACE/REPOSITORY), and `global` for the person's global scope; none: all of the tenant's, global
        included. Raises InvalidInput, Forbidden."""
        self._operator("creating a token")
        check_name("tenant", tenant)
        check_texts("token_scopes", "scope", list(scopes), field="scopes")
        names = list(dict.fromkeys(s.strip() if isinstance(s, str) and s.strip() == GLOBAL
                                   else "/".join(split_repository(s, "scope")) for s in scopes))  # fmt: skip
        if names == [GLOBAL]:
            raise InvalidInput("scope global alone would reach no repository: add the repositories too "
                               "(--scope WORKSPACE/REPOSITORY --scope global), or give no --scope for all")  # fmt: skip
        check_text("source", label, field="label")
        now = utc_now()
        expires_at = parse_expiry(expires, now)
        token_id, secret, salt = str(ULID()), secrets.token_urlsafe(32), secrets.token_hex(16)
        record = TokenRecord(id=token_id, tenant_id=tenant, label=label, salt=salt, digest=_digest(secret, salt),
                             read_only=read_only, scopes=names, created_at=now, expires_at=expires_at, revoked_at=None)  # fmt: skip
        with self.core.write() as tx:
            tx.access.add_token(record)
            tx.append_event(atom_id=None, actor="operator", action="token_create", reason=json.dumps(
                {"token": token_id, "tenant": tenant, "read_only": read_only, "scopes": names,
                 "expires_at": None if expires_at is None else expires_at.isoformat()}), content=None)  # fmt: skip
        return IssuedToken(id=token_id, tenant=tenant, token=f"{TOKEN_PREFIX}{token_id}_{secret}", label=label,
                           read_only=read_only, scopes=names, expires_at=expires_at)  # fmt: skip

    def list_tokens(self) -> list[TokenInfo]:
        """Every token (never a secret), oldest first."""
        self._operator("listing tokens")
        now = utc_now()
        return [_info(t, now) for t in self.access.tokens()]

    def revoke_token(self, token_id: str) -> TokenInfo:
        """Revoke a token: every replica refuses it from its next request. Raises NotFound; revoking twice
        answers the token as it is."""
        self._operator("revoking a token")
        check_text("id", token_id, field="token id", required=True)
        if self.access.get_token(token_id) is None:
            raise NotFound(f"no token with id {token_id!r}; `memoryd token list` shows them")
        with self.core.write() as tx:
            if tx.access.revoke_token(token_id, utc_now()):
                tx.append_event(atom_id=None, actor="operator", action="token_revoke", reason=token_id, content=None)
        record = self.access.get_token(token_id)
        assert record is not None  # tokens are never deleted
        return _info(record, utc_now())

    def authenticate(self, presented: object, *, client: str | None = None, scope_header: object = None) -> Principal:
        """The principal of a presented token (`client`: the caller's address, for the backoff; `scope_header`:
        the request's Memoryd-Scope, whose repository's team is read in the same statement as the token). Raises
        Unauthorized (missing, malformed, unknown, wrong secret, revoked, expired), TooManyAttempts (this id
        from this address, this secret, or an unknown id from this address failed too often: `token_gate`),
        StorageBusy (every hashing slot stayed taken); the message never repeats the token."""
        if not isinstance(presented, str) or not presented:
            raise Unauthorized("no token: send `Authorization: Bearer <token>` (`memoryd token create` on the server)")
        m = _TOKEN.fullmatch(presented)
        if m is None:
            raise Unauthorized("not a memoryd token (expected mdt_<id>_<secret>, as `memoryd token create` prints it)")
        token_id, secret = m.groups()
        keys = GateKeys.of(token_id, secret, client)
        repository = _header_repository(scope_header)
        shared: tuple[str, str, str | None] | None = None
        if repository is None:
            record = self.access.get_token(token_id)
        else:
            record, team = self.access.token_for_request(token_id, *repository)
            shared = (*repository, team)
        # A dead token is refused before any hashing: it costs a row read, however often it is sent.
        if record is not None and record.revoked_at is not None:
            raise Unauthorized(f"token {token_id} was revoked at {record.revoked_at.isoformat()}")
        if record is not None and record.expires_at is not None and record.expires_at <= utc_now():
            raise Unauthorized(f"token {token_id} expired at {record.expires_at.isoformat()}; ask for a new one")
        held = 0  # a token this process checked before passes; others meet the backoff (token_gate)
        if record is None or not _known(presented, record):
            held = _GATE.check(keys, live=record is not None)  # refused before hashing, or checked anyway
        if not _matches(presented, secret, record, urgent=_GATE.fresh(keys)):
            _GATE.failed(keys, address=not held)
            if held:  # from a held address: answered as a made-up id is there
                _GATE.refuse(held)
            raise Unauthorized("unknown token, or its secret does not match")
        _GATE.cleared(keys)
        assert record is not None
        return Principal(token_id=token_id, tenant_id=record.tenant_id, read_only=record.read_only,
                         scopes=tuple(record.scopes), shared=shared)  # fmt: skip

    # -- teams and shares ------------------------------------------------------------------------

    def create_team(self, name: str) -> dict[str, list[str]]:
        """A new team (no members yet). Raises InvalidInput (a bad name, or it exists)."""
        self._operator("creating a team")
        check_name("team", name)
        with self.core.write() as tx:
            if not tx.access.add_team(name):
                raise InvalidInput(f"team {name!r} exists already; `memoryd team list` shows the teams")
            tx.append_event(atom_id=None, actor="operator", action="team_create", reason=name, content=None)
        return self.access.teams()

    def add_members(self, team: str, tenants: Sequence[str]) -> dict[str, list[str]]:
        """Add people (tenants) to a team. Raises InvalidInput, NotFound (no such team)."""
        self._operator("changing a team")
        check_name("team", team)
        if not tenants:
            raise InvalidInput("name at least one tenant to add")
        for t in tenants:
            check_name("tenant", t)
        if team not in self.access.teams():
            raise NotFound(f"no team {team!r}; create it with `memoryd team create {team}`")
        with self.core.write() as tx:
            for t in dict.fromkeys(tenants):
                if tx.access.add_member(team, t):
                    tx.append_event(atom_id=None, actor="operator", action="team_add", reason=f"{team}: {t}",
                                    content=None)  # fmt: skip
        return self.access.teams()

    def share_scope(self, repository: str, team: str) -> list[tuple[str, str, str]]:
        """Share a repository with a team: its members then read and write one scope of it. Raises
        InvalidInput, NotFound (no such team)."""
        self._operator("sharing a repository")
        workspace, repo = split_repository(repository)
        if workspace == "local":
            raise InvalidInput("a repository without a remote (workspace 'local') is one person's folder and "
                               "cannot be shared; give it an origin remote")  # fmt: skip
        check_name("team", team)
        if team not in self.access.teams():
            raise NotFound(f"no team {team!r}; create it with `memoryd team create {team}`")
        with self.core.write() as tx:
            tx.access.share(workspace, repo, team)
            tx.append_event(atom_id=None, actor="operator", action="scope_share", reason=f"{workspace}/{repo} -> {team}",
                            content=None)  # fmt: skip
        return self.access.shares()

    def teams_overview(self) -> TeamsOverview:
        """Teams with their members, and the shared repositories."""
        self._operator("listing teams")
        return TeamsOverview(
            teams=self.access.teams(),
            shares=[{"repository": f"{w}/{r}", "team": t} for w, r, t in self.access.shares()],
        )

    # -- a request's scope -----------------------------------------------------------------------

    def request_scopes(self, principal: Principal, header: object) -> tuple[Scope, Scope]:
        """(the scope a request acts on, the person's own scope of that repository) from its `Memoryd-Scope`
        header (JSON: workspace, repository, branch, root), accepted only within the token's rights.

        Raises InvalidInput (missing or malformed), Forbidden (a repository the token does not cover).
        """
        data = read_scope_header(header, missing="send the repository the agent works in as JSON "
                                                 '{"workspace": …, "repository": …} (`memoryd connect` does)')  # fmt: skip
        workspace, repository, branch, root = scope_fields(data, expected="workspace, repository, branch, root")
        name = f"{workspace}/{repository}"
        if principal.repositories and name not in principal.repositories:
            raise Forbidden(f"this token may act in {', '.join(principal.repositories)}, not in {name}")
        person = Scope(tenant_id=principal.tenant_id, workspace=workspace, repository=repository, branch=branch,
                       root=root if workspace == "local" else "")  # fmt: skip
        if workspace == "local":
            team = None
        elif principal.shared is not None and principal.shared[:2] == (workspace, repository):
            team = principal.shared[2]  # read with the token, in the same statement
        else:
            team = self.access.shared_team(workspace, repository)
            team = team if team is not None and self.access.is_member(team, principal.tenant_id) else None
        if team is not None:
            shared = Scope(tenant_id=f"{TEAM_PREFIX}{team}", workspace=workspace, repository=repository,
                           branch=person.branch)  # fmt: skip
            return shared, person
        return person, person


def local_scope(header: object) -> Scope:
    """THE scope of a local request (the daemon's, for every memoryd surface on this machine) from its
    `Memoryd-Scope` header: `{"cwd": "/abs/dir"}`, inferred exactly as in-process (`shared.scope.infer_scope`,
    what `Engine.open(cwd=…)` does), or explicit workspace, repository, branch, root (a `local` workspace keeps
    its root). The global scope is never assumed. Raises InvalidInput."""
    import os

    from ..shared.scope import infer_scope, local_tenant

    data = read_scope_header(header, missing='send {"cwd": "/abs/dir"} or {"workspace", "repository"} (the global '
                                              "scope is never assumed)")  # fmt: skip
    if "cwd" in data:
        if set(data) != {"cwd"}:
            raise InvalidInput('Memoryd-Scope: "cwd" goes alone (the scope is inferred from it)')
        cwd = check_text("cwd", data["cwd"], field="Memoryd-Scope cwd", required=True)
        if not isinstance(cwd, str) or not os.path.isabs(cwd) or not os.path.isdir(cwd):
            raise InvalidInput(f"Memoryd-Scope cwd must be an absolute path of a directory, got {cwd!r}")
        return infer_scope(cwd)
    workspace, repository, branch, root = scope_fields(data, expected="cwd, or workspace, repository, branch, root")
    return Scope(tenant_id=local_tenant(), workspace=workspace, repository=repository, branch=branch,
                 root=root if workspace == "local" else "")  # fmt: skip


def _header_repository(header: object) -> tuple[str, str] | None:
    """(workspace, repository) of a well-formed Memoryd-Scope header naming a shareable repository, else None
    (`request_scopes` then reads and refuses it as it always does)."""
    if header is None:
        return None
    try:
        workspace, repository, _, _ = scope_fields(read_scope_header(header, missing=""), expected="")
    except InvalidInput:
        return None
    return None if workspace == "local" else (workspace, repository)


def read_scope_header(header: object, *, missing: str) -> dict[str, Any]:
    """The JSON object a `Memoryd-Scope` header carries (the team server's and the daemon's), checked: present
    (else InvalidInput "missing: " + `missing`), within its limit, JSON, an object. Raises InvalidInput."""
    if not isinstance(header, str) or not header.strip():
        raise InvalidInput(f"the Memoryd-Scope header is missing: {missing}")
    check_text("scope_header", header, field="the Memoryd-Scope header")
    try:
        data = json_loads(header, field="the Memoryd-Scope header")
    except ValueError as exc:
        raise InvalidInput(f"the Memoryd-Scope header is not JSON ({exc})") from None
    if not isinstance(data, Mapping):
        raise InvalidInput("the Memoryd-Scope header must be a JSON object with workspace and repository")
    return dict(data)


def scope_fields(data: Mapping[str, Any], *, expected: str) -> tuple[str, str, str, str]:
    """(workspace, repository, branch, root) of an explicit Memoryd-Scope object, each within its limit.
    `expected` names the keys the caller accepts, for the message. Raises InvalidInput."""
    unknown = sorted(set(data) - {"workspace", "repository", "branch", "root"})
    if unknown:
        raise InvalidInput(f"the Memoryd-Scope header has unknown keys {unknown}; expected {expected}")
    values = {k: check_text("scope", data.get(k), field=f"Memoryd-Scope {k}", required=k in ("workspace", "repository"))
              for k in ("workspace", "repository", "branch")}  # fmt: skip
    root = check_text("cwd", data.get("root"), field="Memoryd-Scope root") or ""
    workspace, repository = (values["workspace"] or "").strip(), (values["repository"] or "").strip()
    if not workspace or not repository or repository == "*":
        raise InvalidInput("Memoryd-Scope needs a non-empty workspace and repository")
    return workspace, repository, values["branch"] or "", root


def _info(t: TokenRecord, now: datetime) -> TokenInfo:
    """What `token list` shows of a token (never its secret), with its state at `now`."""
    state: Literal["active", "expired", "revoked"] = (
        "revoked" if t.revoked_at else "expired" if t.expires_at and t.expires_at <= now else "active"
    )
    return TokenInfo(
        id=t.id,
        tenant=t.tenant_id,
        label=t.label,
        read_only=t.read_only,
        scopes=t.scopes,
        created_at=t.created_at,
        expires_at=t.expires_at,
        revoked_at=t.revoked_at,
        state=state,
    )


def _matches(presented: str, secret: str, record: TokenRecord | None, *, urgent: bool = False) -> bool:
    """`_check` under the hashing bound; an unknown id pays the same scrypt as a known one (no timing tells
    which ids exist). `urgent`: the id never failed, its check goes first. Raises StorageBusy when no hashing
    slot frees within `Gate.WAIT_S`."""
    if record is not None and _known(presented, record):
        return True  # remembered: no hashing
    start = time.perf_counter()
    if not _GATE.hashing.acquire(Gate.WAIT_S, urgent=urgent):
        raise StorageBusy("the team server is busy checking tokens; try again")
    try:
        if record is None:
            _digest(secret, _DUMMY_SALT)
            return False
        return _check(presented, secret, record)
    finally:
        _GATE.hashing.release()
        _GATE.timed(time.perf_counter() - start)


def _known(presented: str, record: TokenRecord) -> bool:
    key = hashlib.sha256(presented.encode()).digest()
    with _VERIFIED_LOCK:
        known = _VERIFIED.get(key)
    return known is not None and secrets.compare_digest(known, record.digest)


def _check(presented: str, secret: str, record: TokenRecord) -> bool:
    """Whether `secret` matches the stored digest, in constant time; remembered per process (see module doc)."""
    key = hashlib.sha256(presented.encode()).digest()
    with _VERIFIED_LOCK:
        known = _VERIFIED.get(key)
    if known is not None and secrets.compare_digest(known, record.digest):
        return True
    if not secrets.compare_digest(_digest(secret, record.salt), record.digest):
        return False
    with _VERIFIED_LOCK:
        if len(_VERIFIED) >= _VERIFIED_MAX:
            _VERIFIED.clear()
        _VERIFIED[key] = record.digest
    return True
