"""The write path, lifecycle and audit chain, against a real SQLite file and the real model."""

from __future__ import annotations

import io
import json
import re
import sqlite3
from pathlib import Path

import pytest

from memoryd.engine import Engine
from memoryd.shared.config import Settings
from memoryd.shared.errors import InvalidInput, NotFound, Rejected
from memoryd.shared.models import Scope

PG = "本專案用 PostgreSQL 16 做主資料庫，不用 MongoDB，因為需要事務和複雜查詢"


def test_memorize_applies_and_classifies(engine: Engine) -> None:
    r = engine.memorize(PG, source="user")
    assert r.effect == "applied" and r.reason is None and r.deduped_with is None
    atom = engine.get(r.atom_id)
    assert atom.status == "active" and atom.source == "user"
    assert atom.epistemic == "actual" and atom.polarity == "affirmative"
    assert "entity:library:PostgreSQL" in atom.entities
    assert atom.scope.workspace == "acme" and atom.scope.repository == "widgets"


def test_exact_dedup_is_a_no_op(engine: Engine) -> None:
    first = engine.memorize(PG)
    again = engine.memorize("  " + PG.replace("PostgreSQL", "postgresql") + " ")
    assert again.effect == "no_op"
    assert again.atom_id == again.deduped_with == first.atom_id
    assert again.reason
    assert engine.stats().atoms == 1


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("", "content is empty"),
        ("   \n\t", "content is empty"),
        ("x" * 9000, "the limit is 8000"),
    ],
)
def test_invalid_content_is_rejected_with_reason(engine: Engine, content: str, reason: str) -> None:
    with pytest.raises(Rejected, match=re.escape(reason)):
        engine.memorize(content)
    assert engine.stats().atoms == 0


def test_unknown_type_is_rejected(engine: Engine) -> None:
    with pytest.raises(Rejected, match="unknown type 'rumour'"):
        engine.memorize("We deploy with Terraform 1.9 from the infra/ folder", type="rumour")


@pytest.mark.parametrize("junk", ["好的", "thanks!", "What should we do next?", "为什么测试失败了？"])
def test_junk_is_rejected_by_admission(engine: Engine, junk: str) -> None:
    with pytest.raises(Rejected, match="not worth keeping") as caught:
        engine.memorize(junk)
    assert caught.value.dura is not None and caught.value.dura["average"] < 0.35


def test_review_gate_holds_grey_zone_as_pending(engine: Engine) -> None:
    r = engine.memorize("I am now looking at the file", gate="review")
    assert r.effect == "applied" and r.status == "pending" and isinstance(r.promotion_id, int)
    assert engine.recall("looking at the file").hits == []  # pending is not recalled


def test_secrets_are_redacted_before_storage_and_index(engine: Engine, settings: Settings) -> None:
    r = engine.memorize("Staging DB is postgres://app:hunter2secret@db.internal:5432/app, use it for tests")
    atom = engine.get(r.atom_id)
    assert "hunter2secret" not in atom.content and "[REDACTED]" in atom.content
    assert all("hunter2secret" not in h.atom.content for h in engine.recall("hunter2secret app").hits)
    engine.store.checkpoint()
    assert b"hunter2secret" not in settings.db_path.read_bytes()


def test_recall_finds_chinese_english_and_identifiers(engine: Engine) -> None:
    ids = {
        "pool": engine.memorize("PostgreSQL 連線池大小設為 20，超過會被 pgbouncer 拒絕").atom_id,
        "login": engine.memorize("修復了 login.py 的空指標問題：get_session() 在 session 過期時返回 None").atom_id,
        "front": engine.memorize("We decided to move the frontend from React to Solid for bundle size").atom_id,
    }
    top = lambda q: engine.recall(q, max_results=3).hits[0].atom.id  # noqa: E731
    assert top("連線") == ids["pool"]
    assert top("连线池") == ids["pool"]  # simplified query, traditional memory
    assert top("get_session") == ids["login"]
    assert top("login.py") == ids["login"]
    assert top("PostgreSQL 16") == ids["pool"]
    assert top("frontend framework") == ids["front"]
    assert top("前端從 React 換成 Solid") == ids["front"]  # zh query, en memory
    for h in engine.recall("PostgreSQL").hits:
        assert 0.0 <= h.score <= 1.0


def test_recall_rejects_bad_arguments(engine: Engine) -> None:
    with pytest.raises(InvalidInput, match="query is empty"):
        engine.recall("  ")
    with pytest.raises(InvalidInput, match="max_results must be between 1 and 100"):
        engine.recall("x", max_results=0)
    with pytest.raises(InvalidInput, match="unknown type"):
        engine.recall("x", types=["nope"])


def test_recall_covers_repo_and_global_but_not_other_repos(
    settings: Settings, tmp_path: Path, repo: Path, embedder: object
) -> None:
    from .conftest import make_repo

    other = make_repo(tmp_path / "other", "https://github.com/acme/other.git")
    with Engine.open(settings, cwd=other, embedder=embedder) as e_other:  # type: ignore[arg-type]
        e_other.memorize("The other repo deploys with Ansible playbooks nightly")
    with Engine.open(settings, cwd=repo, embedder=embedder) as e:  # type: ignore[arg-type]
        e.memorize("Always answer in Traditional Chinese with English identifiers", scope=e.scope.global_scope())
        e.memorize("This repo deploys with Helm charts on every merge")
        contents = [h.atom.content for h in e.recall("deploys", max_results=10).hits]
        assert any("Helm" in c for c in contents)
        assert not any("Ansible" in c for c in contents)
        assert any("Traditional Chinese" in h.atom.content for h in e.recall("answer language Chinese").hits)


def test_negate_hides_unless_include_negated(engine: Engine) -> None:
    a = engine.memorize("The CI runs on GitHub Actions with ubuntu-22.04 runners").atom_id
    r = engine.correct(a, "negate", "moved to Buildkite")
    assert r.effect == "applied" and r.new_atom_id is None
    assert all(h.atom.id != a for h in engine.recall("GitHub Actions runners").hits)
    assert any(h.atom.id == a for h in engine.recall("GitHub Actions runners", include_negated=True).hits)
    with pytest.raises(Rejected, match="only active atoms"):
        engine.correct(a, "negate", "twice")


def test_confirm_and_demote_change_epistemic(engine: Engine) -> None:
    a = engine.memorize("The flaky test is probably caused by the shared tmp dir in conftest.py").atom_id
    assert engine.get(a).epistemic == "possible"
    assert engine.correct(a, "confirm_actual", "reproduced").effect == "applied"
    assert engine.get(a).epistemic == "actual"
    assert engine.correct(a, "confirm_necessary", "team rule").effect == "applied"
    assert engine.get(a).epistemic == "necessary"
    assert engine.correct(a, "demote", "not sure any more").effect == "applied"
    assert engine.get(a).epistemic == "possible"


def test_replace_supersedes_and_only_head_can_be_replaced(engine: Engine) -> None:
    old = engine.memorize("主資料庫用 MongoDB 6，文件模型方便迭代").atom_id
    r = engine.correct(
        old, "replace", "v3 已遷移到 PostgreSQL", new_content="主資料庫用 PostgreSQL 16，替換原 MongoDB 方案"
    )
    assert r.effect == "applied" and r.new_atom_id
    assert engine.get(old).status == "superseded" and engine.get(old).superseded_by == r.new_atom_id
    assert engine.get(r.new_atom_id).supersedes == old
    with pytest.raises(Rejected, match=f"superseded by {r.new_atom_id}"):
        engine.correct(old, "replace", "again", new_content="主資料庫用 CockroachDB")
    head = engine.correct(r.new_atom_id, "replace", "fix typo", new_content="主資料庫用 PostgreSQL 16.4")
    assert head.effect == "applied"
    actions = [e.action for e in engine.history(old)]
    assert actions == ["create", "superseded"]


@pytest.mark.parametrize(
    ("action", "kwargs", "reason"),
    [
        ("replace", {}, "new_content is required for replace"),
        ("replace", {"new_content": "   "}, "new_content is empty"),
        ("negate", {"new_content": "x"}, "new_content is only accepted with replace"),
        ("undo", {}, "unknown action 'undo'"),
    ],
)
def test_correct_rejections(engine: Engine, action: str, kwargs: dict[str, str], reason: str) -> None:
    a = engine.memorize("Use ruff for linting and formatting in this repo").atom_id
    with pytest.raises(Rejected, match=re.escape(reason)):
        engine.correct(a, action, "because", **kwargs)


def test_correct_unknown_atom_and_missing_reason(engine: Engine) -> None:
    with pytest.raises(Rejected, match="no atom with id"):
        engine.correct("01NOPE", "negate", "x")
    a = engine.memorize("Use ruff for linting and formatting in this repo").atom_id
    with pytest.raises(Rejected, match="^reason is required$"):
        engine.correct(a, "negate", "  ")


def test_replace_with_identical_content_is_rejected(engine: Engine) -> None:
    a = engine.memorize("Use ruff for linting and formatting in this repo").atom_id
    with pytest.raises(Rejected, match="identical"):
        engine.correct(a, "replace", "same", new_content="use ruff for linting and formatting in this repo")


def test_quarantine_hides_and_restore_brings_back(engine: Engine) -> None:
    a = engine.memorize("Deploy keys live in the ops vault under /infra/deploy").atom_id
    assert engine.govern(a, "quarantine", "review").effect == "applied"
    assert all(h.atom.id != a for h in engine.recall("deploy keys vault", include_negated=True).hits)
    with pytest.raises(Rejected, match="^atom is already quarantined$"):
        engine.govern(a, "quarantine", "again")
    assert engine.restore(a, "reviewed, fine").effect == "applied"
    assert engine.get(a).status == "active"
    with pytest.raises(Rejected, match="only quarantined or superseded atoms restore"):
        engine.restore(a, "again")


def test_seal_and_derive_lesson(engine: Engine) -> None:
    a = engine.memorize("The prod API key is sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD, rotate monthly").atom_id
    assert "sk-proj-abcdefghijklmnop" not in engine.get(a).content
    r = engine.govern(
        a, "derive_lesson", "原文包含洩露的 API key", lesson_content="不要在程式碼或記憶中硬編碼 API key，使用環境變數"
    )
    assert r.effect == "applied" and r.lesson_atom_id
    assert engine.get(a).status == "sealed"
    lesson = engine.get(r.lesson_atom_id)
    assert lesson.type == "lesson" and lesson.status == "active"
    with pytest.raises(Rejected, match="^lesson_content is required for derive_lesson$"):
        engine.govern(a, "derive_lesson", "x")
    with pytest.raises(Rejected, match="^atom is already sealed$"):
        engine.govern(a, "seal", "again")


def test_govern_rejections(engine: Engine) -> None:
    with pytest.raises(Rejected, match="no atom with id"):
        engine.govern("01NOPE", "seal", "x")
    a = engine.memorize("Use ruff for linting and formatting in this repo").atom_id
    with pytest.raises(Rejected, match="unknown action 'delete'"):
        engine.govern(a, "delete", "x")
    with pytest.raises(Rejected, match="^reason is required$"):
        engine.govern(a, "seal", "")


def test_tombstone_destroys_content_everywhere(engine: Engine, settings: Settings) -> None:
    secret = "傳說中的內部代號是 Zebra-Quasar-7781，只在 staging 使用"
    a = engine.memorize(secret).atom_id
    engine.correct(a, "confirm_actual", "checked")
    assert engine.govern(a, "tombstone", "never store code names").effect == "applied"
    atom = engine.get(a)
    assert atom.status == "tombstoned" and atom.content == "" and atom.entities == []
    assert all(e.content is None for e in engine.history(a))
    with pytest.raises(Rejected, match="tombstoned"):
        engine.govern(a, "tombstone", "again")
    assert engine.recall("Zebra-Quasar-7781").hits == []
    engine.store.checkpoint()
    raw = settings.db_path.read_bytes()
    wal = settings.db_path.with_name(settings.db_path.name + "-wal")
    raw += wal.read_bytes() if wal.exists() else b""
    for needle in ("Zebra-Quasar-7781", "zebra-quasar-7781", "傳說中的內部代號", "quasar"):
        assert needle.encode() not in raw, needle
    assert engine.verify_chain().ok


def test_snapshot_version_increments_on_every_write(engine: Engine) -> None:
    v0 = engine.stats().snapshot_version
    a = engine.memorize("Use ruff for linting and formatting in this repo").atom_id
    engine.correct(a, "confirm_actual", "yes")
    engine.handoff("Set up ruff; next: add mypy strict.")
    assert engine.stats().snapshot_version == v0 + 3
    engine.memorize("Use ruff for linting and formatting in this repo")  # no_op writes nothing
    assert engine.stats().snapshot_version == v0 + 3


def test_history_and_chain(engine: Engine) -> None:
    a = engine.memorize("Use ruff for linting and formatting in this repo").atom_id
    engine.correct(a, "demote", "maybe black")
    events = engine.history(a)
    assert [e.action for e in events] == ["create", "demote"]
    assert events[0].content == engine.get(a).content and events[1].reason == "maybe black"
    assert events[1].prev_hash == events[0].hash
    with pytest.raises(NotFound, match="no atom with id"):
        engine.history("01NOPE")
    assert engine.verify_chain().ok


def test_tampering_is_detected(engine: Engine, settings: Settings) -> None:
    a = engine.memorize("Use ruff for linting and formatting in this repo").atom_id
    engine.correct(a, "demote", "maybe black")
    assert engine.verify_chain().ok
    con = sqlite3.connect(settings.db_path)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        con.execute("UPDATE events SET reason = 'nothing happened' WHERE action = 'demote'")
    con.execute("DROP TRIGGER events_no_update")
    con.execute("UPDATE events SET reason = 'nothing happened' WHERE action = 'demote'")
    con.commit()
    report = engine.verify_chain()
    assert not report.ok and report.problem == "event hash mismatch" and report.first_bad_seq == 2


def test_tampering_with_payload_or_atom_is_detected(engine: Engine, settings: Settings) -> None:
    a = engine.memorize("Use ruff for linting and formatting in this repo").atom_id
    con = sqlite3.connect(settings.db_path)
    con.execute("UPDATE atoms SET content = 'Use black' WHERE id = ?", (a,))
    con.commit()
    report = engine.verify_chain()
    assert not report.ok and "differs from its audit chain" in (report.problem or "")
    con.execute("UPDATE event_payloads SET content = 'Use black'")
    con.commit()
    assert engine.verify_chain().problem == "payload does not match its hash"


def test_export_jsonl(engine: Engine) -> None:
    a = engine.memorize("Use ruff for linting and formatting in this repo").atom_id
    buf = io.StringIO()
    n = engine.export(buf)
    lines = [json.loads(x) for x in buf.getvalue().splitlines()]
    assert n == len(lines) == 2
    assert lines[0]["kind"] == "atom" and lines[0]["id"] == a
    assert lines[1]["kind"] == "event" and lines[1]["action"] == "create"


def test_migrations_are_recorded(engine: Engine, settings: Settings) -> None:
    assert engine.store.applied_migrations()[0][0] == 1  # type: ignore[attr-defined]
    rows = sqlite3.connect(settings.db_path).execute("SELECT version, name FROM schema_migrations").fetchall()
    assert rows and rows[0][0] == 1
    mode = sqlite3.connect(settings.db_path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_agent_brief_orders_handoff_first_and_is_bounded(engine: Engine) -> None:
    assert engine.agent_brief().empty_store
    engine.memorize("必須在合併前跑完 pytest 和 ruff，不得跳過 CI")
    engine.memorize("abble 偏好中文匯總，技術名詞保留英文")
    engine.memorize("決定從 React 切到 Solid，理由是性能和體積")
    engine.handoff("修復了 login.py 的空指標問題；下一步：補 session 整合測試")
    b = engine.agent_brief()
    assert not b.empty_store and b.handoff is not None
    text = b.text
    assert text.index("最近交接") < text.index("約束") < text.index("偏好") < text.index("近期決策")
    for i in range(60):
        engine.memorize(f"規則 {i}: 必須在 module_{i}.py 裡保留型別註解，不得使用 Any")
    assert len(engine.agent_brief().text) <= engine.settings.brief_max_chars


def test_brief_in_english_for_english_memories(engine: Engine) -> None:
    engine.memorize("Never push directly to main; open a pull request")
    assert engine.agent_brief().text.startswith("## Constraints")


def test_explicit_global_scope_via_sdk(engine: Engine) -> None:
    g = engine.scope.global_scope()
    assert isinstance(g, Scope) and g.is_global
    r = engine.memorize("I prefer concise answers with code first", scope=g)
    assert engine.get(r.atom_id).scope_hash == g.scope_hash


def test_two_engines_on_one_store_see_each_others_vector_changes(
    settings: Settings, repo: Path, embedder: object
) -> None:
    with (
        Engine.open(settings, cwd=repo, embedder=embedder) as a,
        Engine.open(settings, cwd=repo, embedder=embedder) as b,
    ):  # type: ignore[arg-type]
        mid = a.memorize("The cache layer uses Redis 7 with a 5 minute TTL").atom_id
        assert b.recall("Redis cache TTL").hits[0].atom.id == mid  # b catches up with a's insert
        a.update(mid, content="Sessions are stored in DynamoDB with on-demand capacity")
        hit = b.recall("DynamoDB on-demand sessions").hits[0]
        assert hit.atom.id == mid and hit.signals["semantic"] > 0.5  # b sees the new vector
        a.govern(mid, "tombstone", "gone")
        assert b.recall("DynamoDB on-demand sessions").hits == []
