"""Scope is an authorisation boundary: from repository B, no id of repository A reaches anything.

Every id-taking tool of both profiles is called through a real MCP client started in B with ids
of A's memories, session and promotion; each attempt must answer exactly what a missing id
answers (never confirming that the id exists), and A's memories must be untouched afterwards.
A sensitive scope without a grant refuses reads, writes and governance alike.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from ulid import ULID

from memoryd.engine import Engine
from memoryd.search.embed import HashEmbedder
from memoryd.shared.config import Settings
from memoryd.shared.errors import AuthorizationRequired, NotFound, Rejected

from ..conftest import make_repo
from ._util import answer, person, session

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _seed_alpha(settings: Settings, alpha: Path) -> dict[str, Any]:
    with person(settings, alpha) as e:
        m1 = e.memorize("The alpha service uses PostgreSQL 16 with pgbouncer in transaction mode", source="user")
        m2 = e.memorize("Alpha deploys go through the blue-green pipeline on Tuesdays", source="user")
        held = e.memorize("Alpha might move the nightly batch window to 02:00 UTC", gate="hold")
        q = e.memorize("Alpha keeps customer exports for ninety days before deletion", source="user")
        e.govern(q.atom_id, "quarantine", "check retention with legal")  # type: ignore[arg-type]
        s = e.session_start(title="alpha incident review", source="claude-code")
        snap = _snapshot(e)
        return {"m1": m1.atom_id, "m2": m2.atom_id, "pending": held.atom_id, "promotion": held.promotion_id,
                "quarantined": q.atom_id, "session": s.id, "scope_hash": e.scope.scope_hash, "snap": snap}  # fmt: skip


def _snapshot(e: Engine) -> dict[str, Any]:
    """Everything of the engine's own scope: atoms, their events, pending promotions."""
    mine = [e.scope.scope_hash]
    atoms = e.store.list_atoms(scope_hashes=mine, limit=-1, statuses=None)
    return {
        "atoms": {a.id: (a.status, a.content, a.tags, a.title, a.epistemic) for a in atoms},
        "events": sum(len(e.store.events(a.id)) for a in atoms),
        "pending": [p.id for p in e.store.list_promotions(scope_hashes=mine, min_score=0, max_score=1, limit=100)],
    }


def _same_as_missing(kind: str, got: dict[str, Any] | None, missing: dict[str, Any] | None, real: str,
                     fake: str) -> bool:  # fmt: skip
    """The answer for a foreign id is the answer for a missing id, with only the id itself changed."""
    if got is None or missing is None:
        return False
    return str(got).replace(real, fake) == str(missing)


async def test_cross_repository_ids_are_not_found_on_every_id_tool(
    settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    alpha = make_repo(tmp_path / "alpha", "git@github.com:acme/alpha.git")
    beta = make_repo(tmp_path / "beta", "git@github.com:acme/beta.git")
    a = _seed_alpha(settings, alpha)
    with person(settings, beta) as e:
        own = e.memorize("Beta renders invoices with WeasyPrint 62", source="user").atom_id
    ghost, ghost_session = str(ULID()), str(ULID())
    m1, m2, sess, pid = a["m1"], a["m2"], a["session"], a["promotion"]
    ghost_pid, ghost_hash = 987654, "0123456789abcdef"
    # (tool, arguments with A's id, the same arguments with a missing id, A's id, the missing id)
    mem: list[tuple[str, dict[str, Any], dict[str, Any], str, str]] = []

    def probe(tool: str, build: Any, real: str, fake: str) -> None:
        mem.append((tool, build(real), build(fake), real, fake))

    for atom in (m1, a["pending"], a["quarantined"], sess):
        probe("mem_get", lambda i: {"memory_id": i}, atom, ghost)
        probe("mem_context", lambda i: {"memory_id": i, "neighbors": 3}, atom, ghost)
    probe("mem_update", lambda i: {"memory_id": i, "content": "Alpha now uses MySQL 8"}, m1, ghost)
    probe("mem_update", lambda i: {"memory_id": i, "tags": ["hijacked"], "title": "t"}, m1, ghost)
    probe("mem_update", lambda i: {"memory_id": i, "triggers": ["x"]}, a["pending"], ghost)
    probe("mem_delete", lambda i: {"memory_id": i}, m1, ghost)
    probe("mem_delete", lambda i: {"memory_id": i}, a["quarantined"], ghost)
    probe("mem_judge", lambda i: {"new_text": "Alpha switched to MySQL 8", "old_memory_id": i}, m1, ghost)
    probe("mem_compare", lambda i: {"memory_id_a": i, "memory_id_b": own}, m2, ghost)
    probe("mem_compare", lambda i: {"memory_id_a": own, "memory_id_b": i}, m2, ghost)
    probe("mem_session_end", lambda i: {"session_id": i, "summary": "closed from beta"}, sess, ghost_session)
    probe("mem_session_summary", lambda i: {"session_id": i}, sess, ghost_session)
    probe("mem_promote", lambda i: {"promotion_ids": [int(i)]}, str(pid), str(ghost_pid))
    probe("mem_reject", lambda i: {"promotion_ids": [int(i)]}, str(pid), str(ghost_pid))
    probe("mem_review_pending", lambda i: {"scope": i}, a["scope_hash"], ghost_hash)
    probe("mem_promote", lambda i: {"auto_high": True, "threshold": 0.0, "scope": i}, a["scope_hash"], ghost_hash)
    hmg: list[tuple[str, dict[str, Any], dict[str, Any], str, str]] = []
    for target in (m1, a["pending"], a["quarantined"]):
        for action in ("negate", "confirm_actual", "confirm_necessary", "demote"):
            args = {"action": action, "reason": "from beta"}
            hmg.append(
                ("memory_correct", {"target_atom": target, **args}, {"target_atom": ghost, **args}, target, ghost)
            )
        args = {"action": "replace", "reason": "from beta", "new_content": "Alpha uses MySQL 8 now"}
        hmg.append(("memory_correct", {"target_atom": target, **args}, {"target_atom": ghost, **args}, target, ghost))
        for action in ("quarantine", "seal", "tombstone"):
            args = {"action": action, "reason": "from beta"}
            hmg.append(
                ("memory_govern", {"target_atom": target, **args}, {"target_atom": ghost, **args}, target, ghost)
            )
        args = {"action": "derive_lesson", "reason": "from beta", "lesson_content": "Never trust alpha's pool size"}
        hmg.append(("memory_govern", {"target_atom": target, **args}, {"target_atom": ghost, **args}, target, ghost))

    refused, failures = 0, []
    for profile, attempts in ((("--profile", "memoryd"), mem), (("--profile", "hmg"), hmg)):
        async with session(settings, beta, *profile) as s:
            for tool, real_args, fake_args, real, fake in attempts:
                kind, got = await answer(s, tool, real_args)
                miss_kind, missing = await answer(s, tool, fake_args)
                leak_free = kind == miss_kind and _same_as_missing(kind, got, missing, real, fake)
                if tool.startswith("memory_"):
                    leak_free = leak_free and kind == "ok" and got is not None and got["effect"] == "rejected"
                elif tool in ("mem_promote", "mem_reject") and "promotion_ids" in real_args:
                    leak_free = (
                        leak_free
                        and kind == "ok"
                        and got is not None
                        and not (got.get("promoted") or got.get("rejected"))
                    )
                else:
                    leak_free = (
                        leak_free and kind == "error" and got is not None and got["text"].startswith("not_found: ")
                    )
                if leak_free:
                    refused += 1
                else:
                    failures.append((tool, real_args, kind, got, missing))
    total = len(mem) + len(hmg)
    with capsys.disabled():
        print(
            f"\ncross-repository by-id attempts refused: {refused}/{total} ({settings.db and 'postgresql' or 'sqlite'})"
        )
    assert not failures, failures
    assert refused == total
    with person(settings, alpha) as e:
        assert _snapshot(e) == a["snap"]  # nothing of A changed, no event was recorded


async def test_sensitive_scope_refuses_reads_writes_and_governance_without_a_grant(
    settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vault = make_repo(tmp_path / "payroll", "git@github.com:acme/payroll.git")
    with person(settings, vault) as e:
        m = e.memorize("Payroll runs on the 25th; the bank file goes out at 16:00 CET", source="user").atom_id
        held = e.memorize("Payroll could maybe move to a weekly schedule", gate="hold")
        s = e.session_start(title="payroll fix")
        e.mark_sensitive(True)
        before = _snapshot(e)
    mem_calls = [
        ("mem_get", {"memory_id": m}), ("mem_context", {"memory_id": m}),
        ("mem_update", {"memory_id": m, "content": "Payroll runs on the 1st"}),
        ("mem_update", {"memory_id": m, "tags": ["x"]}), ("mem_delete", {"memory_id": m}),
        ("mem_save", {"content": "Payroll exports are encrypted with age before upload", "type": "fact"}),
        ("mem_capture_passive", {"content": "Payroll SFTP host rotates keys monthly", "source": "mirror"}),
        ("mem_search", {"query": "payroll"}), ("mem_timeline", {}),
        ("mem_judge", {"new_text": "Payroll now runs on the 1st", "old_memory_id": m}),
        ("mem_session_start", {"title": "another"}),
        ("mem_session_end", {"session_id": s.id, "summary": "done"}), ("mem_session_summary", {"session_id": s.id}),
        ("mem_review_pending", {"scope": "auto"}),
        ("mem_promote", {"promotion_ids": [held.promotion_id]}), ("mem_reject", {"promotion_ids": [held.promotion_id]}),
    ]  # fmt: skip
    hmg_calls = [
        ("memory_memorize", {"content": "Payroll's bank is reached over SFTP only", "source": "user"}),
        ("memory_recall", {"query": "payroll"}),
        *[("memory_correct", {"target_atom": m, "action": a, "reason": "r"})
          for a in ("negate", "confirm_actual", "confirm_necessary", "demote")],
        ("memory_correct", {"target_atom": m, "action": "replace", "reason": "r", "new_content": "Payroll is weekly"}),
        *[("memory_govern", {"target_atom": m, "action": a, "reason": "r"}) for a in ("quarantine", "seal", "tombstone")],
        ("memory_govern", {"target_atom": m, "action": "derive_lesson", "reason": "r", "lesson_content": "be careful"}),
        ("memory_handoff", {"summary": "Payroll handoff: the 25th run is verified"}),
    ]  # fmt: skip
    refused, failures = 0, []
    for profile, calls in ((("--profile", "memoryd"), mem_calls), (("--profile", "hmg"), hmg_calls)):
        async with session(settings, vault, *profile) as sess:
            for tool, args in calls:
                kind, got = await answer(sess, tool, args)
                if (
                    kind == "rpc"
                    and got
                    and got["code"] == -32001
                    and got["message"].startswith("AuthorizationRequired: ")
                ):
                    refused += 1
                else:
                    failures.append((tool, kind, got))
    with capsys.disabled():
        print(f"\nsensitive scope without a grant, attempts refused: {refused}/{len(mem_calls) + len(hmg_calls)}")
    assert not failures, failures
    with person(settings, vault) as e:
        assert _snapshot(e) == before
        e.grant(5, by="test")
    async with session(settings, vault) as sess:
        kind, got = await answer(sess, "mem_get", {"memory_id": m})
        assert kind == "ok" and got is not None and "25th" in got["body"]


def test_engine_methods_by_id_respect_the_boundary(settings: Settings, tmp_path: Path) -> None:
    """The SDK's by-id methods (restore, history, brief, explicit scopes) pass the same boundary."""
    alpha = make_repo(tmp_path / "alpha", "git@github.com:acme/alpha.git")
    beta = make_repo(tmp_path / "beta", "git@github.com:acme/beta.git")
    a = _seed_alpha(settings, alpha)
    with Engine.open(settings, cwd=beta, embedder=HashEmbedder()) as agent, person(settings, alpha) as alpha_person:
        assert agent.authority == "agent"
        ghost = str(ULID())
        with pytest.raises(Rejected, match=re.escape(f"no atom with id {a['quarantined']!r}")):
            agent.restore(a["quarantined"], "from beta")
        for fn in (agent.history, agent.get):
            with pytest.raises(NotFound) as real:
                fn(a["m1"])
            with pytest.raises(NotFound) as missing:
                fn(ghost)
            assert real.value.message.replace(a["m1"], ghost) == missing.value.message
        with pytest.raises(NotFound):
            agent.agent_brief(alpha_person.scope)
        with pytest.raises(NotFound):
            agent.recall("PostgreSQL", scope=alpha_person.scope)
        with pytest.raises(NotFound):
            agent.memorize("Beta writes into alpha's scope", scope=alpha_person.scope)
        with pytest.raises(NotFound):
            agent.session_end(a["session"], "closed")
        assert agent.review_pending(scope="global") == []  # A's promotion is not listed from B
        done, skipped = agent.promote([a["promotion"]])
        assert done == [] and skipped == [
            {"promotion_id": a["promotion"], "reason": f"no promotion with id {a['promotion']}"}
        ]
        # the person reaches every scope by id
        assert alpha_person.get(a["m1"]).id == a["m1"]
    with person(settings, beta) as op:
        assert op.get(a["m1"]).scope_hash == a["scope_hash"]
        assert op.restore(a["quarantined"], "legal said ok").effect == "applied"


def test_sensitive_gate_on_the_sdk_agent_but_not_on_the_person(settings: Settings, repo: Path) -> None:
    with person(settings, repo) as op:
        m = op.memorize("The release signing key lives in the hardware token in the safe", source="user").atom_id
        op.mark_sensitive(True)
        assert op.get(m).id == m  # the person is not gated
    with Engine.open(settings, cwd=repo, embedder=HashEmbedder()) as agent:
        for call in (lambda: agent.get(m), lambda: agent.update(m, tags=["x"]), lambda: agent.delete(m),
                     lambda: agent.govern(m, "tombstone", "r"), lambda: agent.correct(m, "negate", "r"),
                     lambda: agent.memorize("Releases are signed on the build host", source="user"),
                     lambda: agent.history(m)):  # fmt: skip
            with pytest.raises(AuthorizationRequired, match="is sensitive and has no running grant"):
                call()
