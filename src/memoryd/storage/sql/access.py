"""Sensitive scopes, grants and requests; the team server's tokens, teams and shares."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ...shared.stamps import iso, utc_now
from ..base import (
    AccessRequest,
    TokenRecord,
)
from .core import C, SqlCore


class AccessSql(SqlCore[C]):
    """Sensitive scopes, grants and requests; the team server's tokens, teams and shares."""

    def sensitive_scopes(self) -> list[tuple[str, str]]:
        return [(r[0], r[1]) for r in self._rows(
            f"SELECT scope_hash, name FROM sensitive_scopes ORDER BY name{self.dialect.binary}")]  # fmt: skip

    def is_sensitive(self, scope_hash: str) -> bool:
        return self._one("SELECT 1 FROM sensitive_scopes WHERE scope_hash = ?", (scope_hash,)) is not None

    def grant_expiry(self, scope_hash: str) -> datetime | None:
        row = self._one("SELECT max(expires_at) FROM grants WHERE scope_hash = ? AND expires_at > ?",
                        (scope_hash, self.dialect.time(utc_now())))  # fmt: skip
        return self._time(row[0]) if row else None

    def access_requests(self) -> list[AccessRequest]:
        return [AccessRequest(id=int(r[0]), scope_hash=r[1], reason=r[2], requested_at=iso(self.dialect.read_time(r[3])))
                for r in self._rows("SELECT id, scope_hash, reason, requested_at FROM access_requests ORDER BY id")]  # fmt: skip

    def _token(self, r: Any) -> TokenRecord:
        d = self.dialect
        return TokenRecord(id=r[0], tenant_id=r[1], label=r[2], salt=r[3], digest=r[4], read_only=bool(r[5]),
                           scopes=d.read_json(r[6]), created_at=d.read_time(r[7]), expires_at=self._time(r[8]),
                           revoked_at=self._time(r[9]))  # fmt: skip

    def get_token(self, token_id: str) -> TokenRecord | None:
        row = self._one(f"{self._TOKEN} WHERE id = ?", (token_id,))
        return None if row is None else self._token(row)

    def token_for_request(
        self, token_id: str, workspace: str, repository: str
    ) -> tuple[TokenRecord | None, str | None]:
        # One round trip per team-server request: the token's row (its rights, revocation and expiry, read
        # every time) and the team the request's repository is shared with, when the token's person is in it.
        row = self._one("SELECT t.id, t.tenant_id, t.label, t.salt, t.digest, t.read_only, t.scopes, t.created_at,"
                        " t.expires_at, t.revoked_at, (SELECT s.team FROM shares s JOIN team_members m ON m.team = s.team"
                        " WHERE s.workspace = ? AND s.repository = ? AND m.tenant_id = t.tenant_id) FROM tokens t"
                        " WHERE t.id = ?", (workspace, repository, token_id))  # fmt: skip
        return (None, None) if row is None else (self._token(row), None if row[10] is None else str(row[10]))

    def tokens(self) -> list[TokenRecord]:
        return [self._token(r) for r in self._rows(f"{self._TOKEN} ORDER BY created_at, id")]

    def teams(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {r[0]: [] for r in self._rows(
            f"SELECT name FROM teams ORDER BY name{self.dialect.binary}")}  # fmt: skip
        for team, tenant in self._rows(
            f"SELECT team, tenant_id FROM team_members ORDER BY tenant_id{self.dialect.binary}"
        ):
            out.setdefault(team, []).append(tenant)
        return out

    def shares(self) -> list[tuple[str, str, str]]:
        return [(r[0], r[1], r[2]) for r in self._rows(
            f"SELECT workspace, repository, team FROM shares ORDER BY workspace{self.dialect.binary},"
            f" repository{self.dialect.binary}")]  # fmt: skip

    def shared_team(self, workspace: str, repository: str) -> str | None:
        row = self._one("SELECT team FROM shares WHERE workspace = ? AND repository = ?", (workspace, repository))
        return None if row is None else str(row[0])

    def is_member(self, team: str, tenant_id: str) -> bool:
        return self._one("SELECT 1 FROM team_members WHERE team = ? AND tenant_id = ?", (team, tenant_id)) is not None
