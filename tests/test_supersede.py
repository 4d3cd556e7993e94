"""One memory per fact (issue 35) in the engine, on both backends with the real model: a restatement merges, a
change supersedes, a look-alike stays apart; the source time orders them; an explicit `replaces`; the review band;
undo; what importers, passive capture, transcripts and promotions do; a superseded memory never reaches a hook."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memoryd.agents.hooks import run_hook
from memoryd.engine import Engine
from memoryd.shared.config import Settings
from memoryd.shared.errors import Conflict, InvalidInput, NotFound, Rejected

from .conftest import make_repo
from .test_judge import serving

CAP = "Deploys use Capistrano: `bundle exec cap production deploy`, from `main` only."
CAP_AGAIN = "We deploy with Capistrano: `bundle exec cap production deploy`, from the `main` branch only."
KAMAL = ("Capistrano is gone: we deploy with Kamal now, `bin/kamal deploy -d production` from `main` only. The old "
         "`config/deploy/*.rb` files were removed.")  # fmt: skip
KAMAL_MAYBE = "Deploys now go through Kamal: `bin/kamal deploy -d production` from `main` only."
# Look-alikes: the same words about two different things (an environment, a queue, a client, an owner).
APART = [
    ("Staging Redis: `REDIS_URL=redis://cache-stg.acme.internal:6379/0`, flushed every night by `reset-staging`.",
     "Production Redis: `REDIS_URL=redis://cache-prd.acme.internal:6379/0`, never flushed; snapshots every hour."),
    ("The `mailer` queue runs with concurrency 4 and retries a failed job 5 times with exponential backoff.",
     "The `webhooks` queue runs with concurrency 8 and retries a failed job 3 times with a fixed 60s backoff."),
    ("`StripeClient` times out after 5s and retries twice on 503; its key comes from `STRIPE_API_KEY`.",
     "`AdyenClient` times out after 10s and never retries; its key comes from `ADYEN_API_KEY`."),
    ("Lena Fischer owns the billing exports in `jobs/exports/`; ask her before changing a CSV column.",
     "Omar Haddad owns the payout reconciliation in `jobs/payouts/`; ask him before changing a matcher."),
]  # fmt: skip


def statuses(e: Engine, *ids: str | None) -> list[str]:
    return [e.get(i or "").status for i in ids]


def actions(e: Engine, atom_id: str) -> list[tuple[str, str]]:
    return [(ev.action, ev.reason or "") for ev in e.history(atom_id)]


# -- the rule -------------------------------------------------------------------------------------------------


def test_a_restatement_merges_and_a_change_supersedes(engine: Engine) -> None:
    cap = engine.memorize(CAP, source="user", written_at="2025-01-20").atom_id
    assert cap
    merged = engine.memorize(CAP_AGAIN, source="agent", tags=["deploy"])
    assert (merged.effect, merged.atom_id, merged.status) == ("merged", cap, "active")
    restated = engine.get(merged.restatement_id or "")  # the new wording and its source are kept, as its record
    assert (restated.content, restated.source, restated.tags) == (CAP_AGAIN, "agent", ["deploy"])
    assert (restated.status, restated.superseded_by) == ("superseded", cap)
    assert engine.get(cap).content == CAP and engine.get(cap).status == "active"  # the memory itself unchanged
    assert any(a == "merge" and restated.id in why and "agent" in why for a, why in actions(engine, cap))
    assert (restated.id, cap, "restates") in engine.store.atom_links(cap)

    kamal = engine.memorize(KAMAL, source="user", written_at="2025-10-06")
    assert (kamal.effect, kamal.status, kamal.supersedes) == ("applied", "active", cap)
    assert kamal.reason and kamal.reason.startswith(f"supersedes {cap}: Replacement cue 'is gone'")
    old = engine.get(cap)
    assert (old.status, old.superseded_by) == ("superseded", kamal.atom_id)
    assert engine.get(kamal.atom_id or "").supersedes == cap
    assert any(a == "superseded" and kamal.atom_id in why for a, why in actions(engine, cap))
    assert (kamal.atom_id, cap, "supersedes") in engine.store.atom_links(cap)
    # recall: the current one only; asked for, the old one too, below its successor and naming it
    assert [h.atom.id for h in engine.recall("how do we deploy to production").hits] == [kamal.atom_id]
    hits = engine.recall("how do we deploy to production", include_superseded=True).hits
    order = [h.atom.id for h in hits]
    assert order.index(kamal.atom_id or "") < order.index(cap)
    assert next(h for h in hits if h.atom.id == cap).atom.superseded_by == kamal.atom_id
    assert engine.verify_chain().ok


def test_look_alikes_and_unrelated_changes_stay_apart(engine: Engine) -> None:
    ids = []
    for a, b in APART:
        for text in (a, b):
            r = engine.memorize(text, source="user")
            assert (r.effect, r.supersedes, r.superseded_by, r.review) == ("applied", None, None, None), text
            ids.append(r.atom_id)
    # a change that shares a word with a memory but is about something else touches nothing
    r = engine.memorize("The `mailer` templates moved to `app/views/mailers/`; the old `emails/` folder is gone.",
                        source="user")  # fmt: skip
    assert (r.effect, r.supersedes, r.review) == ("applied", None, None)
    # one word swapped in one place (another service): two statements, not a restatement
    go = engine.memorize("Run `go test ./...` before pushing changes to checkout; the CI pipeline takes about 34 minutes.",
                         source="user").atom_id  # fmt: skip
    gw = engine.memorize("Run `go test ./...` before pushing changes to gateway; the CI pipeline takes about 34 minutes.",
                         source="user")  # fmt: skip
    assert (gw.effect, gw.restatement_id) == ("applied", None)
    # the swapped word used elsewhere in both (a path), or two named things in the other order: not merged either
    auth = engine.memorize("The auth service reads its settings from auth/login.py; the request timeout is 52 seconds.",
                           source="user").atom_id  # fmt: skip
    search = engine.memorize("The search service reads its settings from auth/login.py; the request timeout is 52 "
                             "seconds.", source="user")  # fmt: skip
    assert (search.effect, search.restatement_id, search.supersedes) == ("applied", None, None), search.reason
    prom = engine.memorize("In scheduler, we decided to use Prometheus instead of Kafka because on-call load was "
                           "too high.", source="user").atom_id  # fmt: skip
    kafka = engine.memorize("In scheduler, we decided to use Kafka instead of Prometheus because on-call load was "
                            "too high.", source="user")  # fmt: skip
    assert (kafka.effect, kafka.restatement_id, kafka.supersedes) == ("applied", None, None), kafka.reason
    assert statuses(engine, auth, prom) == ["active", "active"]
    # a change cue about other code, sharing only generic words, changes nothing
    retry = engine.memorize("注意：retry_with_backoff() 在 docker-compose.yml 里处理超时，最多重试 28 次，间隔 2768 毫秒。",
                            source="user").atom_id  # fmt: skip
    other = engine.memorize("ml-serving 的 retry policy 改成 exponential backoff，get_session() 最多重试 35 次，上限 31 毫秒。",
                            source="user")  # fmt: skip
    assert other.supersedes is None and statuses(engine, go, retry) == ["active", "active"]
    # a question announces no change, whatever its words ("any more", "moved to")
    cap = engine.memorize(CAP, source="user").atom_id
    asked = engine.memorize("Did the deploys move to Kamal, or is Capistrano not used any more? `bundle exec cap "
                            "production deploy` from `main` only.", source="user")  # fmt: skip
    assert (asked.supersedes, asked.effect) == (None, "applied") and statuses(engine, cap) == ["active"]
    assert set(statuses(engine, *ids)) == {"active"}
    assert all(not engine.store.atom_links(i or "") for i in ids)


def test_chinese_in_both_scripts_merges_supersedes_and_keeps_environments_apart(engine: Engine) -> None:
    mysql = engine.memorize("數據庫用 MySQL 8，連線池大小 20", source="user").atom_id  # Traditional
    merged = engine.memorize("数据库用 MySQL 8，连接池大小 20。", source="agent")  # the same in Simplified
    assert (merged.effect, merged.atom_id) == ("merged", mysql)
    moved = engine.memorize("數據庫已遷移到 PostgreSQL 16，不再用 MySQL 8", source="user")
    assert moved.supersedes == mysql and "不再" in (moved.reason or "")
    stg = engine.memorize("预发环境的 Redis 地址是 redis-stg:6379", source="user").atom_id
    prd = engine.memorize("生产环境的 Redis 地址是 redis-prd:6379", source="user")
    assert (prd.effect, prd.supersedes, prd.review) == ("applied", None, None)
    assert statuses(engine, stg, prd.atom_id) == ["active", "active"]


def test_an_older_note_stored_later_never_supersedes_the_newer_one(engine: Engine) -> None:
    kamal = engine.memorize(KAMAL, source="user", written_at="2025-10-06T09:00:00+02:00")
    assert engine.get(kamal.atom_id or "").written_at == datetime(2025, 10, 6, 7, tzinfo=UTC)
    cap = engine.memorize(CAP, source="import", written_at="2025-01-20")
    assert (cap.effect, cap.status, cap.superseded_by) == ("applied", "superseded", kamal.atom_id)
    assert statuses(engine, kamal.atom_id) == ["active"] and engine.get(kamal.atom_id or "").supersedes == cap.atom_id
    assert any(
        a == "supersede" and "written earlier, stored later" in why for a, why in actions(engine, kamal.atom_id or "")
    )


def test_replaces_names_the_memory_a_save_replaces(engine: Engine, tmp_path: Path) -> None:
    cap = engine.memorize(CAP, source="user").atom_id or ""
    # no cue at all: the save says what it replaces
    r = engine.memorize("Production deploys run `bin/kamal deploy -d production`.", source="user", replaces=cap)
    assert r.supersedes == cap and statuses(engine, cap) == ["superseded"]
    assert "named as the memory it replaces" in (r.reason or "")
    with pytest.raises(Conflict, match=f"memory {cap} is already superseded by {r.atom_id}; replace the current one"):
        engine.memorize("Production deploys run Kamal 2.", source="user", replaces=cap)
    with pytest.raises(NotFound, match="no atom with id '01JZZZZZZZZZZZZZZZZZZZZZZZ' in this scope"):
        engine.memorize("Production deploys run Kamal 2.", source="user", replaces="01JZZZZZZZZZZZZZZZZZZZZZZZ")
    # a memory of another scope answers exactly as a missing one: the global scope, another repository
    glob = engine.memorize("I prefer small pull requests.", source="user", scope=engine.scope.global_scope()).atom_id
    with pytest.raises(NotFound, match=f"no atom with id '{glob}' in this scope"):
        engine.memorize("Keep pull requests small.", source="user", replaces=glob)
    other = make_repo(tmp_path / "gadgets", remote="git@github.com:acme/gadgets.git")
    with Engine.open(engine.settings, cwd=other, embedder=engine.embedder) as g:
        theirs = g.memorize("Gadgets deploy with Helm.", source="user").atom_id or ""
    with pytest.raises(NotFound, match=f"no atom with id '{theirs}' in this scope"):
        engine.memorize("Gadgets deploy with Argo CD now.", source="user", replaces=theirs)
    # written before the memory it would replace: refused, nothing stored
    newer = engine.memorize("Release notes live in `CHANGELOG.md`.", source="user", written_at="2025-06-01").atom_id
    with pytest.raises(Conflict, match="an older memory cannot replace a newer one"):
        engine.memorize("Release notes live in the wiki.", source="user", replaces=newer, written_at="2025-01-01")
    engine.correct(newer or "", "negate", "wrong")
    with pytest.raises(Conflict, match="is negated; only an active memory can be replaced"):
        engine.memorize("Release notes live in the wiki.", source="user", replaces=newer)
    # a save the gate would hold names what it replaces: stored at once, like `correct replace`
    ports = engine.memorize("The API listens on port 8080.", source="user").atom_id or ""
    held = engine.memorize("api port 9090", source="agent", gate="review", replaces=ports)
    assert (held.status, held.supersedes) == ("active", ports)


def test_restore_undoes_a_supersession_and_a_merge(engine: Engine) -> None:
    cap = engine.memorize(CAP, source="user", written_at="2025-01-20").atom_id or ""
    restated = engine.memorize(CAP_AGAIN, source="agent").restatement_id or ""
    kamal = engine.memorize(KAMAL, source="user").atom_id or ""
    assert statuses(engine, cap, restated) == ["superseded", "superseded"]
    with pytest.raises(Rejected, match="reason is required"):
        engine.restore(cap, " ")
    engine.restore(cap, "both are true: staging still uses Capistrano")
    assert statuses(engine, cap, kamal) == ["active", "active"]
    assert engine.get(cap).superseded_by is None and engine.get(kamal).supersedes is None
    assert not [k for s, d, k in engine.store.atom_links(cap) if {s, d} == {cap, kamal}]
    assert actions(engine, cap)[-1] == ("restore", f"both are true: staging still uses Capistrano (no longer "
                                                   f"superseded by {kamal})")  # fmt: skip
    assert actions(engine, kamal)[-1] == ("unlink", f"no longer supersedes {cap}: both are true: staging still uses "
                                                    "Capistrano")  # fmt: skip
    engine.restore(restated, "a second wording is worth its own memory")
    assert statuses(engine, restated) == ["active"]
    assert actions(engine, cap)[-1] == ("unlink", f"no longer restated by {restated}: a second wording is worth its "
                                                  "own memory")  # fmt: skip
    assert (restated, cap, "restates") not in engine.store.atom_links(cap)
    with pytest.raises(Rejected, match="atom is active; only quarantined or superseded atoms restore"):
        engine.restore(cap, "again")
    assert engine.verify_chain().ok


def test_the_review_band_is_listed_for_a_person_never_applied(engine: Engine) -> None:
    cap = engine.memorize(CAP, source="user").atom_id or ""
    maybe = engine.memorize(KAMAL_MAYBE, source="agent")
    assert (maybe.effect, maybe.review, maybe.supersedes) == ("applied", cap, None)
    assert statuses(engine, cap) == ["active"]  # nothing applied
    [s] = engine.review_links()
    assert (s.atom.id, s.older.id) == (maybe.atom_id, cap) and "Replacement cue 'now'" in s.why
    with pytest.raises(NotFound, match="no suggestion that"):
        engine.dismiss_link(cap, maybe.atom_id or "", "not one")
    with pytest.raises(InvalidInput, match="a memory cannot supersede itself"):
        engine.supersede(cap, cap, "x")
    with pytest.raises(Conflict, match="an older memory cannot replace a newer one"):
        engine.supersede(cap, maybe.atom_id or "", "backwards")
    engine.supersede(maybe.atom_id or "", cap, "we moved to Kamal")
    assert statuses(engine, cap) == ["superseded"] and engine.review_links() == []
    assert actions(engine, cap)[-1] == ("superseded", f"superseded by {maybe.atom_id}: we moved to Kamal")
    # dismissed: both stay, the suggestion goes, the decision is audited
    a = engine.memorize("Nightly backups go to `s3://acme-backups/db/` and are kept 30 days.", source="user").atom_id
    b = engine.memorize("Backups now go to `s3://acme-backups/db/` and are kept 90 days.", source="user")
    assert b.review == a
    engine.dismiss_link(b.atom_id or "", a or "", "30 days is the nightly set, 90 days the weekly one")
    assert engine.review_links() == [] and statuses(engine, a, b.atom_id) == ["active", "active"]
    assert actions(engine, b.atom_id or "")[-1][0] == "dismiss_link"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "yesterday",
            "written_at 'yesterday' is not an ISO 8601 date or time (e.g. 2025-03-15 or 2025-03-15T09:30:00Z)",
        ),
        ("2025-13-01", "written_at '2025-13-01' is not an ISO 8601 date or time"),
        (1700000000, "written_at must be an ISO 8601 date or time (e.g. 2025-03-15 or 2025-03-15T09:30:00Z), got int"),
        ("2100-01-01", "written_at 2100-01-01T00:00:00+00:00 is out of bounds: from 1970-01-01 to one day from now"),
        ("1969-12-31T23:59:59Z", "is out of bounds: from 1970-01-01"),
        ("2025-01-01" + " " * 60, "written_at is 70 characters; the limit is 64"),
    ],
)
def test_a_bad_source_time_is_refused_with_a_clear_message(engine: Engine, value: Any, message: str) -> None:
    before = engine.stats().atoms
    with pytest.raises(InvalidInput, match=re.escape(message)):
        engine.memorize(CAP, source="user", written_at=value)
    assert engine.stats().atoms == before


# -- write paths ----------------------------------------------------------------------------------------------


def test_imports_link_and_carry_the_source_time(engine: Engine, tmp_path: Path) -> None:
    # JSON lines, the newer note first: the older one is stored superseded by it, the restatement merges
    lines = [{"content": KAMAL, "written_at": "2025-10-06"}, {"content": CAP, "written_at": "2025-01-20"},
             {"content": "Lint runs with `bin/rubocop` in CI and locally.", "written_at": "2025-02-01"},
             {"content": "Lint runs with `bin/rubocop`, in CI and locally.", "written_at": "2025-03-01"},
             {"content": "Tests use RSpec.", "written_at": "next week"}]  # fmt: skip
    path = tmp_path / "notes.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    r = engine.import_file(path, batch_size=2)  # the pair in one batch, the restatement in the next
    assert (r.imported, r.merged, r.superseded, r.bad) == (3, 1, 1, 1)
    assert r.problems == [{"line": 5, "kind": "bad", "reason": "written_at 'next week' is not an ISO 8601 date or "
                                                               "time (e.g. 2025-03-15 or 2025-03-15T09:30:00Z)"}]  # fmt: skip
    atoms = {a.content: a for a in engine.store.list_atoms(limit=-1)}
    assert atoms[CAP].status == "superseded" and atoms[CAP].superseded_by == atoms[KAMAL].id
    assert atoms[KAMAL].written_at == datetime(2025, 10, 6, tzinfo=UTC) and atoms[KAMAL].created_at > atoms[
        KAMAL].written_at  # fmt: skip
    lint = [a for c, a in atoms.items() if c.startswith("Lint runs")]
    assert sorted(a.status for a in lint) == ["active", "superseded"]
    # memoryd's own export carries each memory's time (its written_at, else its created_at) into another store
    out = tmp_path / "export.jsonl"
    with out.open("w", encoding="utf-8") as fh:
        engine.export(fh)
    other = Settings(home=tmp_path / "other", db=None)
    with Engine.open(other, cwd=tmp_path, embedder=engine.embedder, authority="operator") as e2:
        e2.import_file(out)
        got = {a.content: a for a in e2.store.list_atoms(limit=-1)}
    assert got[KAMAL].written_at == atoms[KAMAL].written_at and CAP not in got  # a superseded one is not exported
    lint_active = next(a for a in lint if a.status == "active")
    assert got[lint_active.content].written_at == lint_active.written_at


def test_each_importer_carries_when_a_memory_was_written(engine: Engine, tmp_path: Path) -> None:
    mem0 = tmp_path / "mem0.json"
    mem0.write_text(json.dumps({"results": [
        {"id": "1", "memory": "Alice deploys the storefront with Vercel", "created_at": "2025-02-01T10:00:00-08:00",
         "updated_at": None, "user_id": "alice"},
        {"id": "2", "memory": "Alice moved the storefront from Vercel to Netlify", "created_at": "2025-03-01T10:00:00Z",
         "updated_at": "2025-05-01T10:00:00Z", "user_id": "alice"},
        {"id": "3", "memory": "Alice reviews pull requests on Fridays", "created_at": "last spring", "user_id": "alice"},
    ]}), encoding="utf-8")  # fmt: skip
    r = engine.import_file(mem0)
    assert (r.imported, r.bad, r.superseded) == (2, 1, 1)
    assert r.problems[0]["reason"] == ("created_at 'last spring' is not an ISO 8601 date or time (e.g. 2025-03-15 or "
                                       "2025-03-15T09:30:00Z)")  # fmt: skip
    got = {a.content: a for a in engine.store.list_atoms(limit=-1)}
    vercel, netlify = (
        got["Alice deploys the storefront with Vercel"],
        got["Alice moved the storefront from Vercel to Netlify"],
    )
    assert vercel.written_at == datetime(2025, 2, 1, 18, tzinfo=UTC) and netlify.written_at == datetime(
        2025, 5, 1, 10, tzinfo=UTC
    )
    assert (vercel.status, vercel.superseded_by) == ("superseded", netlify.id)
    assert r.not_carried["mem0 created_at (kept updated_at)"] == 1
    # basic-memory: the note's frontmatter time (modified before created) for each memory of the note
    notes = tmp_path / "bm"
    notes.mkdir()
    (notes / "ci.md").write_text("---\ntitle: CI\ntype: note\ncreated: 2024-11-02\nmodified: 2025-01-15T08:30:00Z\n---\n"
                                 "\n# CI\n\n- [fact] CI runs on GitHub Actions with four shards\n", encoding="utf-8")  # fmt: skip
    (notes / "bad.md").write_text("---\ntitle: Bad\ndate: sometime\n---\n\n- [fact] The docs build with MkDocs\n",
                                  encoding="utf-8")  # fmt: skip
    r = engine.import_file(notes, format="basic-memory")
    ci = next(a for a in engine.store.list_atoms(limit=-1) if a.content == "CI runs on GitHub Actions with four shards")
    assert ci.written_at == datetime(2025, 1, 15, 8, 30, tzinfo=UTC) and r.not_carried[
        "basic-memory frontmatter created (kept modified)"] == 1  # fmt: skip
    assert r.bad == 1 and r.problems[0]["origin"] == "bad.md: frontmatter"
    assert r.problems[0]["reason"].startswith("frontmatter date 'sometime' is not an ISO 8601 date or time")
    # OpenMemory (its memories.jsonl form): updated_at, else created_at
    om = tmp_path / "memories.jsonl"
    om.write_text(json.dumps({"id": "m1", "content": "Bob prefers uv over pip", "state": "active", "categories": [],
                              "created_at": "2025-04-04T04:04:04+00:00", "updated_at": None}) + "\n", encoding="utf-8")  # fmt: skip
    engine.import_file(om, format="openmemory")
    bob = next(a for a in engine.store.list_atoms(limit=-1) if a.content == "Bob prefers uv over pip")
    assert bob.written_at == datetime(2025, 4, 4, 4, 4, 4, tzinfo=UTC)


def test_the_vault_and_the_markdown_export_keep_the_source_time(engine: Engine, tmp_path: Path) -> None:
    a = engine.memorize(CAP, source="user", written_at="2025-01-20T12:00:00Z").atom_id or ""
    text = (engine.vault_root / (engine.get(a).vault_path or "")).read_text(encoding="utf-8")
    assert "\nwritten: '2025-01-20T12:00:00.000000Z'\n" in text
    # a note a person drops into the vault with a `written` time becomes a memory written then
    folder = engine.vault_root / engine.scope.scope_hash / "fact"
    (folder / "by-hand.md").write_text("---\ntype: fact\nwritten: '2024-06-01T00:00:00Z'\n---\n\nThe on-call rota lives "
                                       "in PagerDuty.\n", encoding="utf-8")  # fmt: skip
    [imported] = engine.vault_sync()["imported"]
    assert engine.get(imported["memory_id"]).written_at == datetime(2024, 6, 1, tzinfo=UTC)
    out = tmp_path / "md"
    engine.export_markdown(out)
    with Engine.open(Settings(home=tmp_path / "h2", db=None), cwd=tmp_path, embedder=engine.embedder) as e2:
        e2.import_file(out)
        assert e2.get(a).written_at == datetime(2025, 1, 20, 12, tzinfo=UTC)


def test_passive_capture_transcripts_and_promotions_follow_the_rule(engine: Engine, tmp_path: Path) -> None:
    cap = engine.memorize(CAP, source="user", written_at="2025-01-20").atom_id
    again = engine.capture_passive(CAP_AGAIN, source="openclaw", type="fact")
    assert (again.effect, again.atom_id) == ("merged", cap)
    # a transcript: the restatement is merged (nothing to review), the change waits for review and supersedes the
    # older memory only once it is promoted
    path = tmp_path / "t.jsonl"
    said = ["Remember that we deploy with Capistrano: `bundle exec cap production deploy`, from `main` only.",
            "From now on we deploy with Kamal: Capistrano is gone, `bin/kamal deploy -d production` from `main` only."]  # fmt: skip
    path.write_text("".join(json.dumps({"type": "user", "message": {"role": "user", "content": t}, "uuid": str(i),
                                        "timestamp": "2026-01-05T10:00:00Z", "sessionId": "s-9"}) + "\n"
                            for i, t in enumerate(said)), encoding="utf-8")  # fmt: skip
    report = engine.observe_transcript(path, "s-9", final=False)
    assert (report.merged, report.held) == (1, 1), report.candidates
    change = next(c for c in report.candidates if c["effect"] == "applied")
    assert change["status"] == "pending" and statuses(engine, cap) == ["active"]
    done, _ = engine.promote([change["promotion_id"]])
    assert done == [change["promotion_id"]]
    assert statuses(engine, cap, change["atom_id"]) == ["superseded", "active"]
    assert engine.get(change["atom_id"]).supersedes == cap
    assert any(a == "promote" and f"supersedes {cap}" in why for a, why in actions(engine, change["atom_id"]))


def test_a_superseded_memory_never_reaches_the_prompt_hook(engine: Engine, settings: Settings, repo: Path) -> None:
    cap = engine.memorize(CAP, source="user", written_at="2025-01-20").atom_id or ""
    kamal = engine.memorize(KAMAL, source="user").atom_id or ""
    assert statuses(engine, cap) == ["superseded"]
    for i, prompt in enumerate(["How do we deploy to production?", "run the capistrano deploy from main",
                                "bundle exec cap production deploy"]):  # fmt: skip
        out = run_hook("user-prompt-submit", json.dumps({
            "session_id": f"s-{i}", "transcript_path": "/nonexistent.jsonl", "cwd": str(repo),
            "hook_event_name": "UserPromptSubmit", "permission_mode": "default", "prompt": prompt,
        }), settings=settings, embedder=engine.embedder)  # fmt: skip
        assert out.exit_code == 0
        assert cap not in out.stdout and "Capistrano: `bundle exec" not in out.stdout
        if i == 0:
            assert kamal in out.stdout  # the current memory is what the agent is told


def test_the_llm_refines_the_judgment_when_configured(engine: Engine, repo: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    with serving() as llm_server:
        _llm_decides(engine, repo, llm_server, monkeypatch)


def _llm_decides(engine: Engine, repo: Path, llm_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORYD_LLM_BASE_URL", llm_server.url)
    monkeypatch.setenv("MEMORYD_LLM_MODEL", "judge")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with Engine.open(engine.settings, cwd=repo, embedder=engine.embedder) as e:
        cap = e.memorize(CAP, source="user").atom_id
        llm_server.chat(json.dumps({"type": "supersedes", "confidence": 0.95, "reason": "Kamal replaced Capistrano."}))
        r = e.memorize(KAMAL_MAYBE, source="user")  # the heuristic alone: the review band only
        assert (r.supersedes, r.review) == (cap, None) and "Kamal replaced Capistrano. [llm" in (r.reason or "")
        assert len(llm_server.requests) == 1  # one call, for the one related pair
        look = e.memorize(APART[0][0], source="user").atom_id
        llm_server.chat(json.dumps({"type": "unrelated", "confidence": 0.9, "reason": "Another environment."}))
        r = e.memorize(APART[0][1], source="user")
        assert (r.effect, r.supersedes, r.review) == ("applied", None, None) and statuses(e, look) == ["active"]
