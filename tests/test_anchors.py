"""Code anchors: each freshness case on small real repositories, filters, limits, scope, the file hook."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memoryd.agents.hooks import run_hook
from memoryd.engine import Engine
from memoryd.shared.config import Settings
from memoryd.shared.errors import Conflict, InvalidInput, NotFound, Rejected

from .conftest import git, make_repo

SESSION_PY = '''"""Sessions."""


def get_session(token):
    """Look a session up by its token."""
    return STORE.get(token)


class Store:
    def put(self, key, value):
        self.data[key] = value

    def get(self, key):
        return self.data.get(key)
'''


def commit(repo: Path, message: str = "change") -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


@pytest.fixture
def code(repo: Path) -> Path:
    (repo / "auth").mkdir()
    (repo / "auth" / "session.py").write_text(SESSION_PY)
    (repo / "web").mkdir()
    (repo / "web" / "app.ts").write_text("export class Server {\n  start(port: number): void { listen(port) }\n}\n")
    commit(repo, "code")
    return repo


def save(engine: Engine, text: str, **kw: object) -> str:
    r = engine.memorize(text, source="user", gate="trusted", **kw)  # type: ignore[arg-type]
    assert r.effect == "applied", r
    return str(r.atom_id)


def changes(engine: Engine, atom_id: str) -> tuple[str | None, list[tuple[str, str | None, str | None]]]:
    fresh, found = engine.code_changes([atom_id]).get(atom_id, (None, []))
    return fresh, [(c.kind, c.symbol, c.to) for c in found]


# -- anchoring at write ----------------------------------------------------------------------------


def test_named_files_and_symbols_are_anchored_with_their_fingerprints(engine: Engine, code: Path) -> None:
    r = engine.memorize("Sessions come from `get_session()` in auth/session.py; `Store.put` writes them.",
                        source="user", gate="trusted")  # fmt: skip
    assert sorted(r.anchors or []) == ["auth/session.py", "auth/session.py::Store.put", "auth/session.py::get_session"]
    anchors = {a.ref: a for a in engine.anchors(str(r.atom_id))}
    head = git(code, "rev-parse", "HEAD")
    blob = git(code, "hash-object", "auth/session.py")
    assert {a.commit for a in anchors.values()} == {head} and {a.blob for a in anchors.values()} == {blob}
    assert anchors["auth/session.py::get_session"].line == 4 and anchors["auth/session.py::get_session"].fingerprint
    assert anchors["auth/session.py"].fingerprint is None
    # A name without its file is looked up in the repository; a file name alone is found by its tail.
    r2 = engine.memorize("`Store.get` returns None for unknown keys, see session.py", source="user", gate="trusted")
    assert sorted(r2.anchors or []) == ["auth/session.py", "auth/session.py::Store.get"]
    r3 = engine.memorize("Never call get_session() from request handlers directly", source="user", gate="trusted")
    assert r3.anchors == ["auth/session.py::get_session"]


def test_names_that_do_not_resolve_or_are_ambiguous_are_not_anchored(engine: Engine, code: Path) -> None:
    (code / "tools").mkdir()
    (code / "tools" / "session.py").write_text("def helper():\n    pass\n")
    commit(code)
    r = engine.memorize("session.py and missing.py hold `nothing_here()`", source="user", gate="trusted")
    assert r.anchors is None  # two session.py files, no missing.py
    # issue 26: memorize says what it saw and could not anchor, and why
    assert r.anchor_note == ("not anchored: session.py: ambiguous (auth/session.py, tools/session.py); name the file or "
                             "anchor it explicitly; missing.py: no such file in the repository; "
                             "nothing_here: no definition found in the repository")  # fmt: skip
    assert engine.memorize("PostgreSQL 16 is the main database", source="user", gate="trusted").anchors is None


def test_typescript_symbols_use_tree_sitter(engine: Engine, code: Path) -> None:
    r = engine.memorize("`Server.start` in web/app.ts binds the port", source="user", gate="trusted")
    assert sorted(r.anchors or []) == ["web/app.ts", "web/app.ts::Server.start"]
    (code / "web" / "app.ts").write_text("export class Server {\n  start(port: number): void { listen(port + 1) }\n}\n")
    assert changes(engine, str(r.atom_id)) == ("code_changed", [("symbol_changed", "Server.start", None)])


def test_explicit_anchors_resolve_or_fail_with_a_reason(engine: Engine, code: Path) -> None:
    r = engine.memorize("Token lookups must stay O(1)", source="user", gate="trusted",
                        anchors=["auth/session.py::Store.get", "web/app.ts", "get_session"])  # fmt: skip
    assert sorted(r.anchors or []) == ["auth/session.py::Store.get", "auth/session.py::get_session", "web/app.ts"]
    assert {a.origin for a in engine.anchors(str(r.atom_id))} == {"explicit"}
    cases = {
        "nope.py": "anchors[0] 'nope.py': no such file in the working tree",
        "auth/session.py::nope": "anchors[0] 'auth/session.py::nope': auth/session.py defines no nope",
        "no_such_function": "anchors[0] 'no_such_function': no definition of no_such_function in the repository",
        "README::x": "README is not a source file",
        "auth/session.py::a b": "is not a symbol name",
        "::": "give a path, path::symbol or a symbol name",
    }
    for ref, message in cases.items():
        with pytest.raises(InvalidInput, match=re.escape(message)):
            engine.memorize("Token lookups must stay fast", source="user", anchors=[ref])
    with pytest.raises(InvalidInput, match="anchors has 21 items; the limit is 20"):  # limits.py
        engine.memorize("x is y", anchors=["web/app.ts"] * 21)
    with pytest.raises(InvalidInput, match="the limit is 512"):
        engine.memorize("x is y", anchors=["a" * 513])
    with pytest.raises(InvalidInput, match="must be a list of strings"):
        engine.memorize("x is y", anchors="web/app.ts")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="holds a NUL character"):  # limits.py refuses NUL everywhere
        engine.memorize("x is y", anchors=["web/app.ts\x00"])
    with pytest.raises(InvalidInput, match="control characters"):
        engine.memorize("x is y", anchors=["web/app.ts\x07"])
    with pytest.raises(InvalidInput, match="not global ones"):
        engine.memorize("x is y", anchors=["web/app.ts"], scope=engine.scope.global_scope())
    assert engine.stats().atoms == 1  # nothing was written by the refused saves


def test_an_ambiguous_explicit_anchor_names_the_candidates(engine: Engine, code: Path) -> None:
    (code / "tools").mkdir()
    (code / "tools" / "session.py").write_text("def get_session():\n    pass\n")
    commit(code)
    with pytest.raises(InvalidInput, match="ambiguous, it matches auth/session.py, tools/session.py; give the path"):
        engine.memorize("x is y", anchors=["session.py"])
    with pytest.raises(InvalidInput, match="ambiguous, it matches auth/session.py::get_session, tools/session.py"):
        engine.memorize("x is y", anchors=["get_session"])


# -- each freshness case ---------------------------------------------------------------------------


def test_unchanged_code_is_current_and_unanchored_memories_have_no_field(engine: Engine, code: Path) -> None:
    a = save(engine, "Sessions come from `get_session()` in auth/session.py")
    b = save(engine, "Deploys happen on Fridays after the review")
    hits = {h.atom.id: h for h in engine.recall("sessions deploys Fridays get_session", max_results=10).hits}
    assert hits[a].freshness == "current" and hits[a].code_changes is None
    assert hits[b].freshness is None and hits[b].code_changes is None
    # Touching the file without changing its content, or editing another definition, changes nothing.
    (code / "auth" / "session.py").write_text(SESSION_PY.replace("self.data[key] = value", "self.data[key] = [value]"))
    assert changes(engine, a) == ("current", [])


def test_symbol_body_changed(engine: Engine, code: Path) -> None:
    a = save(engine, "Sessions come from `get_session()` in auth/session.py")
    (code / "auth" / "session.py").write_text(
        SESSION_PY.replace("return STORE.get(token)", "return STORE.get(token.strip())")
    )
    head = git(code, "rev-parse", "--short=7", "HEAD")
    fresh, found = engine.code_changes([a])[a]
    assert fresh == "code_changed" and [(c.kind, c.path, c.symbol, c.since) for c in found] == [
        ("symbol_changed", "auth/session.py", "get_session", head)
    ]
    assert found[0].detail == f"the definition of get_session (auth/session.py) changed since {head}"
    # Layout and comments are not changes.
    (code / "auth" / "session.py").write_text(
        SESSION_PY.replace("    return STORE.get(token)", "    # cached\n    return STORE.get(  token )")
    )
    assert changes(engine, a) == ("current", [])


def test_symbol_removed_and_symbol_moved(engine: Engine, code: Path) -> None:
    a = save(engine, "`Store.put` in auth/session.py overwrites existing keys")
    b = save(engine, "Sessions come from `get_session()`")
    (code / "auth" / "session.py").write_text(
        SESSION_PY.replace("    def put(self, key, value):\n        self.data[key] = value\n\n", "")
    )
    (code / "auth" / "lookup.py").write_text(
        'def get_session(token):\n    """Look a session up by its token."""\n    return STORE.get(token)\n'
    )
    (code / "auth" / "session.py").write_text(
        (code / "auth" / "session.py")
        .read_text()
        .replace(
            'def get_session(token):\n    """Look a session up by its token."""\n    return STORE.get(token)\n', ""
        )
    )
    git(code, "add", "-A")  # word searches are cached per index state (and for 30 s): a move is seen once staged
    assert changes(engine, a) == ("code_changed", [("symbol_removed", "Store.put", None)])
    assert changes(engine, b) == ("code_changed", [("symbol_moved", "get_session", "auth/lookup.py")])


def test_file_deleted_renamed_and_changed(engine: Engine, code: Path) -> None:
    (code / "docs.md").write_text("# Notes\n\nSome notes.\n")
    commit(code)
    a = save(engine, "The notes live in docs.md")
    b = save(engine, "`Store.get` in auth/session.py returns None for unknown keys")
    c = save(engine, "web/app.ts is the entry point of the web server")
    (code / "docs.md").write_text("# Notes\n\nOther notes.\n")
    assert changes(engine, a) == ("code_changed", [("file_changed", None, None)])
    git(code, "mv", "auth/session.py", "auth/sessions.py")
    git(code, "rm", "-q", "web/app.ts")
    commit(code, "rename and delete")
    assert changes(engine, b) == ("code_changed", [("file_renamed", None, "auth/sessions.py")])  # symbol unchanged
    assert changes(engine, c) == ("code_changed", [("file_deleted", None, None)])
    hit = next(h for h in engine.recall("Store.get unknown keys").hits if h.atom.id == b)
    assert hit.code_changes and hit.code_changes[0].detail.startswith("auth/session.py was renamed to auth/sessions.py")


def test_a_symbol_in_a_renamed_file_is_followed(engine: Engine, code: Path) -> None:
    a = save(engine, "Sessions come from `get_session()`")  # the symbol only: its file is not named
    git(code, "mv", "auth/session.py", "auth/sessions.py")
    commit(code)
    assert changes(engine, a) == ("code_changed", [("symbol_moved", "get_session", "auth/sessions.py")])
    (code / "auth" / "sessions.py").write_text(SESSION_PY.replace("STORE.get(token)", "STORE[token]"))
    assert changes(engine, a) == ("code_changed", [("symbol_changed", "get_session", None)])


# A module whose functions keep their names while their bodies are rewritten, for renames git misses.
BILLING_PY = """\"\"\"Billing.\"\"\"


def compute_total(items):
    total = 0
    for item in items:
        total += item.price
    return total


def apply_discount(total, rate):
    if rate <= 0:
        return total
    return total * (1 - rate)


def format_invoice(customer, total):
    lines = [customer.name, customer.address]
    lines.append(f"Total: {total:.2f}")
    return "\\n".join(lines)


class Ledger:
    def record(self, entry):
        self.entries.append(entry)

    def balance(self):
        return sum(e.amount for e in self.entries)
"""


# The same module after a rewrite: every body redone, the names kept.
BILLING_REWRITTEN_PY = """\"\"\"Billing: totals, discounts and invoices for the shop.\"\"\"

from decimal import Decimal


def compute_total(items):
    return sum((Decimal(str(i.price)) * i.quantity for i in items), Decimal(0))


def apply_discount(total, rate):
    rate = max(Decimal(0), min(Decimal(1), Decimal(str(rate))))
    return (total * (1 - rate)).quantize(Decimal("0.01"))


def format_invoice(customer, total):
    header = f"{customer.name} <{customer.email}>"
    return "\\n".join([header, customer.address, f"Amount due: {total}"])


class Ledger:
    def record(self, entry):
        if entry.amount:
            self.entries.append(entry)

    def balance(self):
        return sum((e.amount for e in self.entries), Decimal(0))
"""


def git_status(repo: Path, commit_id: str) -> str:
    return git(repo, "diff", "--find-renames", "--name-status", commit_id, "--")


def test_a_rename_edited_past_gits_similarity_is_followed_by_its_definitions(engine: Engine, code: Path) -> None:
    (code / "billing.py").write_text(BILLING_PY)
    commit(code)
    base = git(code, "rev-parse", "HEAD")
    a = save(engine, "billing.py is where invoices are computed")
    b = save(engine, "`apply_discount()` never raises the total")
    (code / "shop").mkdir()
    git(code, "mv", "billing.py", "shop/billing_core.py")
    (code / "shop" / "billing_core.py").write_text(BILLING_REWRITTEN_PY)
    commit(code, "move billing and rewrite it")
    status = git_status(code, base)
    assert "D\tbilling.py" in status and "A\tshop/billing_core.py" in status  # git alone calls it a deletion
    assert changes(engine, a) == ("code_changed", [("file_renamed", None, "shop/billing_core.py")])
    fresh, found = engine.code_changes([b])[b]
    assert fresh == "code_changed" and [(c.kind, c.path, c.symbol) for c in found] == [
        ("symbol_changed", "shop/billing_core.py", "apply_discount")
    ]


def test_a_heavily_edited_rename_with_two_candidates_is_a_deletion(engine: Engine, code: Path) -> None:
    (code / "billing.py").write_text(BILLING_PY)
    commit(code)
    a = save(engine, "billing.py is where invoices are computed")
    git(code, "rm", "-q", "billing.py")
    (code / "shop").mkdir()
    (code / "shop" / "billing.py").write_text(BILLING_REWRITTEN_PY)
    (code / "shop" / "billing_v2.py").write_text(BILLING_REWRITTEN_PY.replace("Billing:", "Billing (v2):"))
    commit(code, "two copies")
    assert changes(engine, a) == ("code_changed", [("file_deleted", None, None)])


def test_two_deleted_files_matching_one_added_file_are_not_paired(engine: Engine, code: Path) -> None:
    (code / "billing.py").write_text(BILLING_PY)
    (code / "billing_old.py").write_text(BILLING_PY.replace("Billing.", "Old billing."))
    commit(code)
    a = save(engine, "billing.py is where invoices are computed")
    git(code, "rm", "-q", "billing.py", "billing_old.py")
    (code / "invoices.py").write_text(BILLING_REWRITTEN_PY)
    commit(code, "merge both")
    assert changes(engine, a) == ("code_changed", [("file_deleted", None, None)])


def test_an_unrelated_addition_is_not_taken_for_a_rename(engine: Engine, code: Path) -> None:
    (code / "billing.py").write_text(BILLING_PY)
    (code / "cli.py").write_text("def main():\n    run(parse_args())\n\n\ndef parse_args():\n    return []\n\n\n"
                                 "def run(args):\n    return 0\n")  # fmt: skip
    commit(code)
    a = save(engine, "billing.py is where invoices are computed")
    b = save(engine, "cli.py is the command line entry point")
    git(code, "rm", "-q", "billing.py", "cli.py")
    # A new script sharing two generic names (main, parse_args) with cli.py and nothing with billing.py.
    (code / "report.py").write_text("import sys\n\n\ndef main():\n    print(render(parse_args(sys.argv)))\n\n\n"
                                    "def parse_args(argv):\n    return argv[1:]\n\n\ndef render(rows):\n"
                                    "    return ', '.join(rows)\n")  # fmt: skip
    commit(code, "replace billing and the cli with a report")
    assert changes(engine, a) == ("code_changed", [("file_deleted", None, None)])
    assert changes(engine, b) == ("code_changed", [("file_deleted", None, None)])


def test_rename_evidence_reads_names_from_files_that_do_not_parse() -> None:
    from memoryd.anchors.renames import defined_names, qualifies

    names = defined_names("billing.py", BILLING_PY.encode())
    assert names == {"compute_total", "apply_discount", "format_invoice", "Ledger", "Ledger.record", "Ledger.balance"}
    broken = BILLING_PY.replace("    total = 0\n", "pass\n    total = 0\n").encode()  # an unexpected indent
    assert defined_names("billing.py", broken) == names
    assert qualifies(names, names - {"Ledger.balance"} | {"Ledger.audit"})  # 5 of 7 names shared
    assert not qualifies(names, frozenset({"compute_total", "apply_discount"}) | {f"x{i}" for i in range(4)})
    assert defined_names("notes.md", b"def x():\n") == frozenset()  # no language, no evidence


def test_drifted_memories_rank_a_little_lower(engine: Engine, code: Path) -> None:
    a = save(engine, "Sessions are looked up by token in `get_session()` in auth/session.py")
    before = next(h.score for h in engine.recall("sessions looked up by token").hits if h.atom.id == a)
    (code / "auth" / "session.py").write_text(SESSION_PY.replace("STORE.get(token)", "STORE[token]"))
    after = next(h.score for h in engine.recall("sessions looked up by token").hits if h.atom.id == a)
    assert after == pytest.approx(before * 0.9, abs=2e-4)


def test_drift_is_a_multiplier_after_the_ranking_and_hits_say_so(engine: Engine, code: Path) -> None:
    from memoryd.search import rank

    moved = save(engine, "Sessions are looked up by token in `get_session()` in auth/session.py")
    held = save(engine, "`Store.get` in auth/session.py looks sessions up by key")
    plain = save(engine, "Sessions are looked up by token before every request")
    (code / "auth" / "session.py").write_text(SESSION_PY.replace("STORE.get(token)", "STORE[token]"))
    query = "how are sessions looked up by token"
    q, cands, stats = engine._reader.gather(query, max_results=10)
    english = engine._reader._english if engine.term_embedder is not None else None
    ranked = {c.atom_id: (score, signals) for score, c, signals in rank.rank(q, cands, stats, english=english)}
    hits = {h.atom.id: h for h in engine.recall(query).hits}
    assert hits[moved].score == pytest.approx(round(ranked[moved][0] * 0.9, 4), abs=1e-4)
    assert hits[moved].signals["drift"] == 0.9 and hits[moved].freshness == "code_changed"
    assert [c.kind for c in hits[moved].code_changes or []] == ["symbol_changed"]
    assert hits[held].score == pytest.approx(ranked[held][0], abs=1e-4) and hits[held].freshness == "current"
    assert "drift" not in hits[held].signals and hits[held].code_changes is None
    assert hits[plain].freshness is None and hits[plain].score == pytest.approx(ranked[plain][0], abs=1e-4)


def test_recall_logs_its_hits_after_drift_and_refuses_bad_input_before_any_work(engine: Engine, code: Path) -> None:
    from datetime import UTC, datetime

    from memoryd.shared.models import Scope

    save(engine, "Sessions are looked up by token in `get_session()` in auth/session.py")

    def logged() -> list[dict[str, Any]]:
        return engine.store.recalls(scope_hashes=[engine.scope.scope_hash], since=datetime(2000, 1, 1, tzinfo=UTC),
                                    until=None, limit=100)  # fmt: skip

    hits = engine.recall("sessions by token", path="auth/session.py").hits
    assert logged()[0]["hits"] == [h.atom.id for h in hits] and hits  # what was returned, in order (ui's log)
    engine.recall("sessions by token", record=False)
    assert len(logged()) == 1
    # trust's limits and scope boundary come first: nothing is ranked, drift-checked or logged
    with pytest.raises(InvalidInput, match="query is 1001 characters; the limit is 1000"):
        engine.recall("q" * 1001, path="auth/session.py")
    with pytest.raises(InvalidInput, match="types has 9 items"):
        engine.recall("sessions", types=["fact"] * 9, symbol="get_session")
    other = Scope(tenant_id=engine.scope.tenant_id, workspace="acme", repository="elsewhere")
    with pytest.raises(NotFound, match="no scope 'acme/elsewhere' within reach"):
        engine.recall("sessions", scope=other, path="auth/session.py")
    assert len(logged()) == 1


# -- filters, confirm, replace ---------------------------------------------------------------------


def test_path_and_symbol_filters(engine: Engine, code: Path) -> None:
    a = save(engine, "Sessions come from `get_session()` in auth/session.py")
    b = save(engine, "`Server.start` in web/app.ts binds the port")
    save(engine, "Sessions expire after one hour")
    assert [h.atom.id for h in engine.recall("sessions", path="auth/session.py").hits] == [a]
    assert [h.atom.id for h in engine.recall("sessions", path=str(code / "auth")).hits] == [a]  # a directory, absolute
    assert [h.atom.id for h in engine.recall("port", symbol="start").hits] == [b]  # the last part of Server.start
    assert [h.atom.id for h in engine.search("port", symbol="Server.start").hits] == [b]
    assert engine.recall("sessions", path="nowhere.py").hits == []
    with pytest.raises(InvalidInput, match="path is 4097 characters; the limit is 4096"):  # limits.py
        engine.recall("x", path="a" * 4097)
    with pytest.raises(InvalidInput, match="symbol contains control characters"):
        engine.recall("x", symbol="a\nb")


def test_confirm_reanchors_to_head_with_an_audit_event(engine: Engine, code: Path) -> None:
    a = save(engine, "Sessions come from `get_session()` in auth/session.py")
    git(code, "mv", "auth/session.py", "auth/sessions.py")
    (code / "auth" / "sessions.py").write_text(SESSION_PY.replace("STORE.get(token)", "STORE[token]"))
    commit(code)
    assert engine.stale()[0].atom.id == a
    assert engine.correct(a, "confirm_actual", "still true after the refactor").effect == "applied"
    assert changes(engine, a) == ("current", [])
    assert {x.ref for x in engine.anchors(a)} == {"auth/sessions.py", "auth/sessions.py::get_session"}
    assert {x.commit for x in engine.anchors(a)} == {git(code, "rev-parse", "HEAD")}
    last = engine.history(a)[-1]
    assert last.action == "reanchor" and "followed auth/session.py → auth/sessions.py" in (last.reason or "")
    assert engine.verify_chain().ok and engine.stale() == []


def test_stale_confirm_drops_what_is_gone_and_stays_in_scope(engine: Engine, code: Path, settings: Settings,
                                                             tmp_path: Path, embedder: object) -> None:  # fmt: skip
    a = save(engine, "`Store.put` and `Store.get` in auth/session.py share one dict")
    (code / "auth" / "session.py").write_text(
        SESSION_PY.replace("    def put(self, key, value):\n        self.data[key] = value\n\n", "")
    )
    anchors = engine.confirm_anchors(a, reason="get still holds", actor="cli")
    assert {x.ref for x in anchors} == {"auth/session.py", "auth/session.py::Store.get"}
    assert "dropped auth/session.py::Store.put (gone: no definition with the same name or body)" in (
        engine.history(a)[-1].reason or ""
    )
    with pytest.raises(Conflict, match="has no code anchors"):
        engine.confirm_anchors(save(engine, "Deploys happen on Fridays after review"))
    with pytest.raises(NotFound, match="no atom with id 'nope'"):
        engine.confirm_anchors("nope")
    other = make_repo(tmp_path / "other", remote="git@github.com:acme/other.git")
    with Engine.open(settings, cwd=other, embedder=embedder) as e2:  # type: ignore[arg-type]
        # another repository's id answers exactly as a missing one (issue 10's scope boundary)
        with pytest.raises(NotFound, match=f"no atom with id '{a}'"):
            e2.confirm_anchors(a)
        with pytest.raises(NotFound, match=f"no atom with id '{a}'"):
            e2.anchors(a)
        assert e2.stale() == [] and e2.memories_for_path(str(code / "auth" / "session.py")).text == ""
        with pytest.raises(Rejected, match=f"no atom with id '{a}'"):
            e2.correct(a, "confirm_actual", "from elsewhere")
        assert {x.ref for x in engine.anchors(a)} == {"auth/session.py", "auth/session.py::Store.get"}  # untouched
    engine.govern(a, "quarantine", "review")
    with pytest.raises(Conflict, match="only active or pending"):
        engine.confirm_anchors(a)


def test_replace_and_update_take_anchors_again(engine: Engine, code: Path) -> None:
    a = save(engine, "Token lookups are cached", anchors=["auth/session.py::get_session"])
    r = engine.correct(a, "replace", "more precise", "Token lookups are cached in `Store.get`")
    new = str(r.new_atom_id)
    assert {x.ref for x in engine.anchors(new)} == {"auth/session.py::get_session", "auth/session.py::Store.get"}
    engine.update(new, content="Token lookups go through web/app.ts now")
    assert {x.ref for x in engine.anchors(new)} == {"auth/session.py::get_session", "web/app.ts"}


def test_tombstone_and_delete_remove_anchors(engine: Engine, code: Path) -> None:
    a = save(engine, "Sessions come from `get_session()` in auth/session.py")
    b = save(engine, "`Server.start` in web/app.ts binds the port")
    engine.govern(a, "tombstone", "mistake")
    engine.delete(b)
    assert engine.store.anchors_of([a, b]) == {}


# -- repositories: none, empty, branches, worktrees --------------------------------------------------


def test_outside_git_anchors_are_off_and_said_so(settings: Settings, tmp_path: Path, embedder: object) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "login.py").write_text("def login():\n    pass\n")
    with Engine.open(settings, cwd=plain, embedder=embedder) as e:  # type: ignore[arg-type]
        r = e.memorize("login() in login.py checks the password hash", source="user", gate="trusted")
        assert r.anchors is None and r.anchor_note == "not in a git working tree: code anchors are off"
        assert e.memorize("Deploys happen on Fridays", source="user", gate="trusted").anchor_note is None
        with pytest.raises(InvalidInput, match="is not in a git working tree, so code anchors are off"):
            e.memorize("x is y", anchors=["login.py"])
        assert e.stale() == [] and e.code_status().startswith("off:")


def test_a_repository_without_commits(settings: Settings, tmp_path: Path, embedder: object) -> None:
    repo = tmp_path / "fresh"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "app.py").write_text("def main():\n    return 1\n")
    with Engine.open(settings, cwd=repo, embedder=embedder) as e:  # type: ignore[arg-type]
        r = e.memorize("`main()` in app.py returns the exit code", source="user", gate="trusted")
        assert sorted(r.anchors or []) == ["app.py", "app.py::main"]
        assert {a.commit for a in e.anchors(str(r.atom_id))} == {None}
        (repo / "app.py").write_text("def main():\n    return 0\n")
        assert [c.kind for c in e.code_changes([str(r.atom_id)])[str(r.atom_id)][1]] == ["symbol_changed"]
        (repo / "app.py").unlink()
        assert [c.detail for c in e.code_changes([str(r.atom_id)])[str(r.atom_id)][1]] == ["app.py was deleted"]


def test_anchors_belong_to_their_commit_across_branches_and_worktrees(engine: Engine, code: Path, settings: Settings,
                                                                      tmp_path: Path, embedder: object) -> None:  # fmt: skip
    git(code, "switch", "-q", "-c", "feature")
    (code / "auth" / "session.py").write_text(SESSION_PY.replace("STORE.get(token)", "STORE.lookup(token)"))
    commit(code, "feature")
    a = save(engine, "Sessions come from `get_session()` in auth/session.py")  # anchored on the feature branch
    feature = git(code, "rev-parse", "HEAD")
    git(code, "worktree", "add", "-q", str(tmp_path / "wt-main"), "main")
    with Engine.open(settings, cwd=tmp_path / "wt-main", embedder=embedder) as e:  # type: ignore[arg-type]
        assert e.scope.scope_hash == engine.scope.scope_hash  # one repository, one scope
        fresh, found = e.code_changes([a])[a]  # main does not have the feature's body
        assert fresh == "code_changed" and [(c.kind, c.since) for c in found] == [("symbol_changed", feature[:7])]
    assert changes(engine, a) == ("current", [])  # the feature worktree still matches
    git(code, "switch", "-q", "--detach", "main")  # main itself is checked out in the other worktree
    assert changes(engine, a)[1] == [("symbol_changed", "get_session", None)]


def test_anchors_can_be_turned_off(settings: Settings, code: Path, embedder: object) -> None:
    off = settings.model_copy(update={"anchors": False})
    with Engine.open(off, cwd=code, embedder=embedder) as e:  # type: ignore[arg-type]
        r = e.memorize("Sessions come from `get_session()` in auth/session.py", source="user", gate="trusted")
        assert r.anchors is None and r.anchor_note is None
        with pytest.raises(InvalidInput, match="code anchors are turned off"):
            e.memorize("x is y", anchors=["auth/session.py"])


# -- the brief, the file context and the hook ----------------------------------------------------------


def test_the_brief_lists_code_moved_since_the_last_session(engine: Engine, code: Path) -> None:
    a = save(engine, "We decided sessions come from `get_session()` in auth/session.py", type="decision")
    assert engine.agent_brief(mark_session=True).code_changed == []
    (code / "auth" / "session.py").write_text(SESSION_PY.replace("STORE.get(token)", "STORE[token]"))
    brief = engine.agent_brief(mark_session=True)
    assert [m.atom.id for m in brief.code_changed] == [a]
    assert "## Code changed since the last session" in brief.text
    assert f"({a}): the definition of get_session (auth/session.py) changed since" in brief.text
    assert engine.agent_brief(mark_session=True).code_changed == []  # reported once
    assert [m.atom.id for m in engine.agent_brief().code_changed] == []  # unmarked briefs see the same state


def test_memories_for_path_within_a_budget_once_per_session(engine: Engine, code: Path) -> None:
    ids = [save(engine, f"Session rule {i}: `get_session()` in auth/session.py must stay pure ({'x' * 200})")
           for i in range(5)]  # fmt: skip
    ctx = engine.memories_for_path(str(code / "auth" / "session.py"), budget_tokens=200, session_id="s1", record=True)
    assert ctx.path == "auth/session.py" and ctx.memory_ids == ids[::-1][: len(ctx.memory_ids)]
    assert 1 <= len(ctx.memory_ids) < 5 and ctx.left_out == 5 - len(ctx.memory_ids) and ctx.tokens <= 200
    assert ctx.text.startswith(f"[memoryd · {len(ctx.memory_ids)} memor")
    again = engine.memories_for_path("auth/session.py", budget_tokens=5000, session_id="s1", record=True)
    assert set(again.memory_ids) == set(ids) - set(ctx.memory_ids)  # never the same memory twice in a session
    assert engine.memories_for_path("auth/session.py", session_id="s1").memory_ids == []
    assert engine.memories_for_path("web/app.ts").text == ""
    assert engine.memories_for_path("/etc/passwd").text == ""


def hook_payload(repo: Path, file_path: str, session: str = "sess-1", tool: str = "Read") -> str:
    key = "notebook_path" if tool == "NotebookEdit" else "file_path"
    return json.dumps({"session_id": session, "transcript_path": "/dev/null", "cwd": str(repo),
                       "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": {key: file_path}})  # fmt: skip


@pytest.mark.sqlite_only("the hook reads the default SQLite store; PostgreSQL: test_file_hook_reads_postgresql")
def test_file_hook_adds_anchored_memories_once(engine: Engine, code: Path, settings: Settings,
                                               monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv("MEMORYD_HOME", str(settings.home))
    a = save(engine, "Sessions come from `get_session()` in auth/session.py")
    (code / "auth" / "session.py").write_text(SESSION_PY.replace("STORE.get(token)", "STORE[token]"))
    out = run_hook("pre-tool-use", hook_payload(code, str(code / "auth" / "session.py")), settings=settings)
    ctx = json.loads(out.stdout)["hookSpecificOutput"]
    assert ctx["hookEventName"] == "PreToolUse" and "permissionDecision" not in ctx
    assert ctx["additionalContext"].startswith("[memoryd · 1 memory anchored to auth/session.py · ~")
    assert f"[fact {a}] Sessions come from" in ctx["additionalContext"]
    assert "⚠ code changed: the definition of get_session (auth/session.py) changed since" in ctx["additionalContext"]
    assert run_hook("pre-tool-use", hook_payload(code, "auth/session.py", tool="Edit"), settings=settings).stdout == ""
    other = run_hook(
        "pre-tool-use", hook_payload(code, "auth/session.py", session="sess-2", tool="Write"), settings=settings
    )
    assert a in other.stdout  # another session sees it again
    for path in ("web/app.ts", "/etc/hosts", "", "x" * 5000):
        assert run_hook("pre-tool-use", hook_payload(code, path, session="sess-3"), settings=settings).stdout == ""


@pytest.mark.sqlite_only("the hook's budget and sensitive-scope checks on the default store")
def test_file_hook_respects_budget_and_sensitive_scopes(engine: Engine, code: Path, settings: Settings,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv("MEMORYD_FILE_CONTEXT_TOKENS", "60")
    for i in range(3):
        save(engine, f"Rule {i}: `get_session()` in auth/session.py never raises; {'details ' * 20}")
    out = json.loads(run_hook("pre-tool-use", hook_payload(code, "auth/session.py"), settings=settings).stdout)
    text = out["hookSpecificOutput"]["additionalContext"]
    assert "1 memory anchored" in text and "2 more: mem_search / memory_recall with path='auth/session.py'" in text
    engine.mark_sensitive(True)
    assert run_hook("pre-tool-use", hook_payload(code, "auth/session.py", session="s9"), settings=settings).stdout == ""
    monkeypatch.setenv("MEMORYD_ANCHORS", "0")
    assert run_hook("pre-tool-use", hook_payload(code, "auth/session.py", session="s8"), settings=settings).stdout == ""


def test_file_hook_reads_postgresql(
    engine: Engine, code: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not settings.db:
        pytest.skip("PostgreSQL variant of test_file_hook_adds_anchored_memories_once")
    monkeypatch.setenv("MEMORYD_DB", settings.db)
    a = save(engine, "Sessions come from `get_session()` in auth/session.py")
    out = run_hook("pre-tool-use", hook_payload(code, "auth/session.py"), settings=settings)
    assert a in json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]


# -- one "already injected" record for every hook of a session (memoryd.shared.injected) ---------------------------


def _hook_env(monkeypatch: pytest.MonkeyPatch, settings: Settings) -> None:
    """The file hook reads the store the environment names, as in a real hook process."""
    monkeypatch.setenv("MEMORYD_HOME", str(settings.home))
    if settings.db:
        monkeypatch.setenv("MEMORYD_DB", settings.db)
    else:
        monkeypatch.delenv("MEMORYD_DB", raising=False)


def _context(out: object) -> str:
    text = getattr(out, "stdout", "")
    return json.loads(text)["hookSpecificOutput"].get("additionalContext", "") if text else ""


def _prompt(repo: Path, prompt: str, session: str, settings: Settings, embedder: object) -> str:
    body = json.dumps({"session_id": session, "transcript_path": "/dev/null", "cwd": str(repo),
                       "hook_event_name": "UserPromptSubmit", "prompt": prompt})  # fmt: skip
    return _context(run_hook("user-prompt-submit", body, settings=settings, embedder=embedder))  # type: ignore[arg-type]


def test_the_file_hook_and_the_prompt_recall_never_inject_a_memory_twice(
    engine: Engine, code: Path, settings: Settings, embedder: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    _hook_env(monkeypatch, settings)
    a = save(
        engine, "Sessions are looked up by `get_session()` in auth/session.py, which returns None for unknown tokens"
    )
    settings = settings.model_copy(update={"prompt_min_score": 0.0})
    # the prompt recall first: the file hook of the same session adds nothing more
    assert a in _prompt(code, "How are sessions looked up by token?", "s-a", settings, embedder)
    assert (
        _context(run_hook("pre-tool-use", hook_payload(code, "auth/session.py", session="s-a"), settings=settings))
        == ""
    )
    # the file hook first: the prompt recall of that session leaves the memory out
    assert a in _context(
        run_hook("pre-tool-use", hook_payload(code, "auth/session.py", session="s-b"), settings=settings)
    )
    assert a not in _prompt(code, "How are sessions looked up by token?", "s-b", settings, embedder)
    # one record per session, naming the hook that injected each memory
    from memoryd.shared.injected import InjectedRecord

    assert InjectedRecord(settings.home, "s-a")._read() == {a: "user-prompt-submit"}
    assert InjectedRecord(settings.home, "s-b")._read() == {a: "pre-tool-use:file"}
    assert not (settings.home / "hooks" / "injected").exists()  # no second, file-hook-only record


def test_what_the_brief_showed_is_not_added_again_when_its_file_is_opened(
    engine: Engine, code: Path, settings: Settings, embedder: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    _hook_env(monkeypatch, settings)
    d = save(engine, "We decided sessions come from `get_session()` in auth/session.py", type="decision")
    moved = save(engine, "`Store.put` in auth/session.py overwrites silently")
    start = json.dumps({"session_id": "s-c", "transcript_path": "/dev/null", "cwd": str(code),
                        "hook_event_name": "SessionStart", "source": "startup"})  # fmt: skip
    brief = _context(run_hook("session-start", start, settings=settings, embedder=embedder))  # type: ignore[arg-type]
    assert "We decided sessions come from" in brief and "overwrites silently" not in brief  # a fact: not in a brief
    opened = _context(run_hook("pre-tool-use", hook_payload(code, "auth/session.py", session="s-c"), settings=settings))
    assert moved in opened and d not in opened
    # the brief's "code changed" section claims what it lists too
    (code / "auth" / "session.py").write_text(
        SESSION_PY.replace("self.data[key] = value", "self.data.setdefault(key, value)")
    )
    brief = _context(run_hook("session-start", start.replace('"s-c"', '"s-d"'), settings=settings,
                              embedder=embedder))  # type: ignore[arg-type]  # fmt: skip
    assert f"({moved})" in brief and "We decided sessions come from" in brief
    assert (
        _context(run_hook("pre-tool-use", hook_payload(code, "auth/session.py", session="s-d"), settings=settings))
        == ""
    )


def test_memories_for_path_claims_in_the_shared_record_and_a_raced_claim_is_left_out(
    engine: Engine, code: Path
) -> None:
    from memoryd.anchors.filectx import FileMemory, compose_once
    from memoryd.shared.injected import InjectedRecord

    a = save(engine, "Sessions come from `get_session()` in auth/session.py")
    b = save(engine, "`Store.get` in auth/session.py returns None for a missing key")
    record = InjectedRecord(engine.settings.home, "s-e")
    assert record.claim([a], "user-prompt-submit") == [a]  # another hook of the session injected `a`
    ctx = engine.memories_for_path("auth/session.py", session_id="s-e", record=True)
    assert ctx.memory_ids == [b] and record._read() == {a: "user-prompt-submit", b: "pre-tool-use:file"}
    # compose_once: a memory claimed by another hook between the read and the claim is dropped
    memories = [FileMemory(i, "fact", f"memory {i}", [], []) for i in ("01X", "01Y")]
    raced = InjectedRecord(engine.settings.home, "s-f")
    raced.claim(["01Y"], "user-prompt-submit")
    out = compose_once("auth/session.py", memories, 500, raced)
    assert out.included == ["01X"] and "01Y" not in out.text and out.text.startswith("[memoryd · 1 memory anchored")


def test_session_ids_name_one_record_each(tmp_path: Path) -> None:
    from memoryd.shared.injected import InjectedRecord

    plain, odd1, odd2 = (InjectedRecord(tmp_path, s) for s in ("sess-1", "a/b", "a_b"))
    assert plain.path.name == "sess-1.json" and odd2.path.name == "a_b.json"
    assert odd1.path.parent == tmp_path / "sessions" and odd1.path.name.startswith("h-") and odd1.path != odd2.path
    assert InjectedRecord(tmp_path, "..").path.name.startswith("h-")  # never a relative path name


def test_hook_settings_agree_with_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from memoryd.agents.filehook import settings_from_env
    from memoryd.shared.home import data_home

    for env in ({}, {"MEMORYD_HOME": str(tmp_path), "MEMORYD_FILE_CONTEXT_TOKENS": "900", "MEMORYD_ANCHORS": "0"}):
        for key in ("MEMORYD_HOME", "MEMORYD_FILE_CONTEXT_TOKENS", "MEMORYD_ANCHORS", "MEMORYD_DB"):
            monkeypatch.delenv(key, raising=False)
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        s = Settings()
        assert data_home() == s.home
        assert settings_from_env(s.home) == (s.db, s.anchors, s.file_context_tokens)


@pytest.mark.sqlite_only("the hook process reads the default SQLite store")
def test_the_file_hook_process_imports_no_engine(engine: Engine, code: Path, settings: Settings) -> None:
    """The hook answers fast because it never imports numpy, pydantic, the engine, the CLI framework, the model
    or the name resolution it does not use (a drift check of a file that is still there needs neither)."""
    a = save(engine, "Sessions come from `get_session()` in auth/session.py")
    (code / "auth" / "session.py").write_text(SESSION_PY.replace("STORE.get(token)", "STORE[token]"))  # parse too
    probe = (
        "import sys, io; sys.stdin = io.StringIO(sys.argv[1]); from memoryd.agents.hooks import main; main(['pre-tool-use']);"
        " bad = [m for m in ('numpy', 'pydantic', 'typer', 'onnxruntime', 'tokenizers', 'tree_sitter', 'memoryd.engine',"
        " 'memoryd.shared.models', 'memoryd.shared.config', 'memoryd.search', 'memoryd.anchors.resolve', 'memoryd.anchors.renames',"
        " 'filelock', 'dataclasses', 'inspect')"
        " if m in sys.modules];"
        " print('\\nHEAVY', bad)"
    )
    env = {**os.environ, "MEMORYD_HOME": str(settings.home)}
    env.pop("MEMORYD_DB", None)
    r = subprocess.run([sys.executable, "-c", probe, hook_payload(code, "auth/session.py")], env=env,
                       capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    assert a in r.stdout and "symbol_changed" not in r.stdout and "changed since" in r.stdout, r.stdout + r.stderr
    assert r.stdout.strip().endswith("HEAVY []"), r.stdout + r.stderr


def test_explicit_anchors_are_redacted_before_use(engine: Engine, code: Path) -> None:
    secret = "postgres://app:hunter2secret@db:5432/x"
    with pytest.raises(InvalidInput) as info:
        engine.memorize("x is y", anchors=[f"{secret}::get_session"])
    assert "hunter2secret" not in str(info.value) and "[REDACTED]" in str(info.value)
    with pytest.raises(InvalidInput) as info:
        engine.recall("x", path="a" * 4097 + "password=hunter2secret")
    assert "hunter2secret" not in str(info.value)


def test_the_hooks_git_reading_matches_git(code: Path, tmp_path: Path) -> None:
    from memoryd.anchors.git import GitRepo
    from memoryd.shared.scope import infer_scope, repository_scope_hash

    git(code, "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "side")
    (tmp_path / "plain").mkdir()
    for where in (code, code / "auth", tmp_path / "wt" / "auth", tmp_path / "plain"):
        fast, slow = GitRepo.find(where), GitRepo.discover(where)
        assert (fast and (fast.root, fast.git_dir, fast.common_dir)) == (
            slow and (slow.root, slow.git_dir, slow.common_dir)
        )
        if fast is not None:
            assert repository_scope_hash(fast.root, fast.origin_url() or "") == infer_scope(where).scope_hash
    git(code, "remote", "set-url", "origin", "https://github.com/acme/other.git")
    assert GitRepo.find(code).origin_url() == "https://github.com/acme/other.git"  # type: ignore[union-attr]


# Threads parse one big source at once while the garbage collector hands the GIL over in the middle of a
# conversion (a gc callback that sleeps 0 s, low thresholds): bare `ast.parse` then failed about once in
# 120 parses on CPython 3.11 ("AST constructor recursion depth mismatch"); prints the errors seen.
PARSE_IN_THREADS = """
import gc, sys, threading, time
from pathlib import Path
from memoryd.anchors.symbols import parse_python
import memoryd.engine.core as core
sys.setswitchinterval(1e-6)
gc.callbacks.append(lambda phase, info: time.sleep(0))
gc.set_threshold(50, 5, 5)
source = Path(core.__file__).read_text() * 3
errors = []

def work():
    for _ in range(30):
        try:
            parse_python(source)
        except SystemError as exc:
            errors.append(str(exc))

threads = [threading.Thread(target=work) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(len(errors), errors[:1])
"""


def test_python_files_are_parsed_safely_from_several_threads() -> None:
    out = subprocess.run([sys.executable, "-c", PARSE_IN_THREADS], capture_output=True, text=True, timeout=300,
                         check=True)  # fmt: skip
    assert out.stdout.strip() == "0 []", out.stdout
