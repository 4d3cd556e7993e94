"""Fields and surfaces added after issue 10 (code anchors, the console, prompts/resources, importers) inherit
its limits table, redaction and scope boundary: each test tries to break one of them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError

from memoryd.engine import Engine
from memoryd.engine.console import BrowseQuery
from memoryd.search.embed import HashEmbedder
from memoryd.shared.config import Settings
from memoryd.shared.errors import AuthorizationRequired, InvalidInput, NotFound
from memoryd.shared.limits import LIMITS

from ..conftest import git, make_repo
from ._util import person, session

GITHUB = "ghp_R2d2C3poX9aBcDeFgHiJkLmNoPqRsTuVwXyZ01"  # a made-up token in GitHub's format
DSN = "postgres://app:hunter2secret@db:5432/x"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _stored_bytes(settings: Settings) -> bytes:
    """Every byte SQLite and the vault hold (PostgreSQL: the columns are read by the engine instead)."""
    out = b""
    for path in settings.home.rglob("*"):
        if path.is_file() and not path.name.endswith(".lock"):
            out += path.read_bytes()
    return out


# -- code anchors: anchors on save, path/symbol filters --------------------------------------------------------


def test_anchor_fields_follow_the_limits_table(engine: Engine) -> None:
    text = "Sessions come from get_session in auth/session.py"
    cases = [
        ({"anchors": ["a.py"] * (LIMITS["anchors"][0] + 1)}, "anchors has 21 items; the limit is 20"),
        ({"anchors": ["p" * (LIMITS["anchor"][0] + 1)]}, "anchors[0] is 513 characters; the limit is 512"),
        ({"anchors": ["a\x00b"]}, "anchors[0] holds a NUL character"),
        ({"anchors": ["a\ud800b"]}, "anchors[0] holds a lone surrogate U+D800"),
        ({"anchors": [7]}, "anchors[0] must be a string"),
    ]
    for kwargs, message in cases:
        with pytest.raises(InvalidInput, match=re.escape(message)):
            engine.memorize(text, **kwargs)  # type: ignore[arg-type]
    for kwargs, message in (
        ({"path": "p" * (LIMITS["path"][0] + 1)}, "path is 4097 characters; the limit is 4096"),
        ({"symbol": "S" * (LIMITS["symbol"][0] + 1)}, "symbol is 513 characters; the limit is 512"),
        ({"path": "a\x00b"}, "path holds a NUL character"),
        ({"symbol": 5}, "symbol must be a string"),
    ):
        with pytest.raises(InvalidInput, match=message):
            engine.recall("sessions", **kwargs)  # type: ignore[arg-type]
        with pytest.raises(InvalidInput, match=message):
            engine.search("sessions", **kwargs)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="path is 4097 characters"):
        engine.memories_for_path("p" * 4097)


def test_a_secret_in_an_anchor_or_a_filter_never_reaches_disk_or_a_message(engine: Engine, settings: Settings) -> None:
    for call in (lambda: engine.memorize("x is y", anchors=[f"{DSN}::get_session"]),
                 lambda: engine.recall("x", path=f"{GITHUB}/x.py" + "p" * 5000)):  # fmt: skip
        with pytest.raises(InvalidInput) as info:
            call()
        assert "hunter2secret" not in str(info.value) and GITHUB not in str(info.value)
    if not settings.db:
        assert b"hunter2secret" not in _stored_bytes(settings) and GITHUB.encode() not in _stored_bytes(settings)


def test_anchor_operations_keep_to_the_scope_boundary(engine: Engine, settings: Settings, tmp_path: Path) -> None:
    """An agent in another repository cannot read, confirm or re-anchor this repository's memory by id."""
    repo_code = Path(engine.scope.root or ".")
    (repo_code / "auth.py").write_text("def login():\n    return True\n")
    git(repo_code, "add", "-A")
    git(repo_code, "commit", "-q", "-m", "code")
    a = engine.memorize("`login()` in auth.py checks the password", source="user", gate="trusted").atom_id
    assert a and engine.anchors(a)
    other = make_repo(tmp_path / "other", remote="git@github.com:acme/other.git")
    with Engine.open(settings, cwd=other, embedder=HashEmbedder()) as agent:
        for call in (lambda: agent.anchors(a), lambda: agent.confirm_anchors(a)):
            with pytest.raises(NotFound, match=f"no atom with id '{a}'"):
                call()
        with pytest.raises(NotFound, match="no scope"):
            agent.recall("login", scope=engine.scope, path="auth.py")
    with person(settings, other) as cli:  # the person reaches it, but its code is in the other working tree
        with pytest.raises(Exception, match="confirm it from that repository"):
            cli.confirm_anchors(a)
    with pytest.raises(InvalidInput, match="reason is 2001 characters"):
        engine.confirm_anchors(a, reason="r" * 2001)


# -- the console: form fields, and the person with sensitive scopes locked -------------------------------------


def test_console_form_fields_follow_the_limits_table(engine: Engine) -> None:
    console = engine.acting_as("operator", enforce_sensitive=True)
    for q, message in (
        (BrowseQuery(q="q" * 1001), "q is 1001 characters; the limit is 1000"),
        (BrowseQuery(tag="t" * 65), "tag is 65 characters; the limit is 64"),
        (BrowseQuery(source="s" * 65), "source is 65 characters; the limit is 64"),
        (BrowseQuery(scope="h" * 257), "scope is 257 characters; the limit is 256"),
        (BrowseQuery(before="0" * 65), "before is 65 characters; the limit is 64"),
        (BrowseQuery(tag="a\x00"), "tag holds a NUL character"),
    ):
        with pytest.raises(InvalidInput, match=message):
            console.browse(q)
    for call, message in (
        (lambda: console.entity_page("entity:file:" + "x" * 600), "entity id is 612 characters; the limit is 512"),
        (lambda: console.sessions_page(before="0" * 65), "before is 65 characters"),
        (lambda: console.request_access(engine.scope.scope_hash, "r" * 2001), "reason is 2001 characters"),
        (lambda: console.request_access("h" * 300, "need it"), "scope is 300 characters"),
    ):
        with pytest.raises(InvalidInput, match=message):
            call()
    with pytest.raises(NotFound, match="no session with id '0{77}\\.\\.\\.'"):  # the id cut short in the message
        console.session_detail("0" * 100)
    atom = console.memorize("The release train leaves every other Thursday", source="user").atom_id
    assert atom
    with pytest.raises(InvalidInput, match="title is 201 characters"):
        console.update(atom, title="t" * 201, actor="console")
    console.update(atom, title=f"deploy with {GITHUB}", actor="console", reason=f"pasted {DSN}")
    assert GITHUB not in (console.get(atom).title or "") and all(
        DSN not in (e.reason or "") for e in console.history(atom)
    )


def test_the_console_acts_as_the_person_with_sensitive_scopes_locked(
    engine: Engine, settings: Settings, tmp_path: Path
) -> None:
    """`memoryd ui` and `memoryd-mcp --ui` open the engine as the person (every scope, like the CLI), but a
    sensitive scope without a grant stays locked: listed as locked, refused by id, for reads and writes."""
    from memoryd.ui.server import open_console_engine

    payroll = make_repo(tmp_path / "payroll", remote="git@github.com:acme/payroll.git")
    billing = make_repo(tmp_path / "billing", remote="git@github.com:acme/billing.git")
    with person(settings, payroll) as p:
        secret = p.memorize("Payroll runs on the 25th through the bank's SFTP drop", source="user").atom_id
        p.mark_sensitive(True)
        locked_scope = p.scope.scope_hash
    with person(settings, billing) as b:
        bill = b.memorize("Invoices are generated nightly by the billing cron job", source="user").atom_id
    assert secret and bill
    with open_console_engine(Path(engine.scope.root or "."), settings, embedder=HashEmbedder()) as console:
        assert console.authority == "operator" and console.enforce_sensitive
        assert console.get(bill).id == bill  # another repository: the person reaches it
        assert bill in {a.id for a in console.browse(BrowseQuery()).atoms}
        assert secret not in {a.id for a in console.browse(BrowseQuery(status=None)).atoms}
        locked = {s.scope_hash: s for s in console.console_scopes()}[locked_scope]
        assert locked.sensitive and locked.locked
        for call in (lambda: console.get(secret), lambda: console.memory_detail(secret),
                     lambda: console.browse(BrowseQuery(scope=locked_scope)),
                     lambda: console.update(secret, title="x", actor="console"),
                     lambda: console.govern(secret, "tombstone", "no", actor="console")):  # fmt: skip
            with pytest.raises(AuthorizationRequired):
                call()
        with person(settings, payroll) as p2:
            p2.grant(30, by="test")
        assert console.get(secret).id == secret  # a grant opens it; the console never bypasses
    # the MCP transport's console: a view of the agent's engine acting for the person, same rules
    view = engine.acting_as("operator", enforce_sensitive=True)
    assert engine.authority == "agent" and view.authority == "operator" and view.enforce_sensitive
    assert view.store is engine.store and view.get(bill).id == bill
    with pytest.raises(NotFound):
        engine.get(bill)  # the agent itself still cannot
    with pytest.raises(ValueError, match="an agent always needs a grant"):
        engine.acting_as("agent", enforce_sensitive=False)


# -- MCP prompts and resources ----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_prompts_and_resources_keep_the_limits_redaction_and_scope(settings: Settings, repo: Path,
                                                                         tmp_path: Path) -> None:  # fmt: skip
    other = make_repo(tmp_path / "other", remote="git@github.com:acme/other.git")
    with person(settings, other) as p:
        theirs = p.memorize("Repository other keeps its deploy keys in Vault kv/other", source="user").atom_id
    with person(settings, repo) as p:
        p.save_prompt("deploy", f"Deploy {{service}} with token {GITHUB}")
    # a prompt file edited by hand is served redacted too
    (settings.home / "prompts" / "by-hand.md").write_text(f"Connect with {DSN} to {{db}}\n", encoding="utf-8")
    async with session(settings, repo) as s:
        got = await s.get_prompt("deploy", {"service": "billing"})
        assert GITHUB not in got.messages[0].content.text and "[REDACTED]" in got.messages[0].content.text  # type: ignore[union-attr]
        hand = await s.get_prompt("by-hand", {"db": "main"})
        assert "hunter2secret" not in hand.messages[0].content.text  # type: ignore[union-attr]
        for args, message in (
            ({f"a{i}": "x" for i in range(LIMITS["prompt_args"][0] + 1)}, "arguments has 33 items; the limit is 32"),
            (
                {"service": "x" * (LIMITS["prompt_arg"][0] + 1)},
                "argument service is 8001 characters; the limit is 8000",
            ),
        ):
            with pytest.raises(MCPError) as exc:
                await s.get_prompt("deploy", args)
            assert exc.value.error.message.startswith("invalid_input: ") and message in exc.value.error.message
        with pytest.raises(MCPError) as exc:
            await s.get_prompt("p" * 65, {})
        assert "invalid_input: name is 65 characters; the limit is 64" in exc.value.error.message
        for uri in (f"memory://{theirs}", "memory://" + "0" * 5000, "memory://x\u0000y"):
            with pytest.raises(MCPError) as exc:
                await s.read_resource(uri)
            message = exc.value.error.message
            assert message.startswith("not_found: no atom with id ") and "Vault" not in message and len(message) < 200
    if not settings.db:
        stored = _stored_bytes(settings)
        assert GITHUB.encode() not in stored


# -- importers ----------------------------------------------------------------------------------------------------


def test_imported_texts_are_bounded_and_redacted(engine: Engine, settings: Settings, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "long.md").write_text(
        "---\ntitle: " + "T" * 300 + "\ntags: [ops]\n---\n\nDeploys use blue-green switches.\n"
    )
    (folder / "secret.md").write_text(f"---\ntitle: Staging {GITHUB}\ntags: [ops]\n---\n\nStaging uses {DSN}.\n")
    (folder / "tags.md").write_text("---\ntitle: Tags\ntags: [" + "x" * 100 + "]\n---\n\nThe cache is Redis 7.\n")
    report = engine.import_file(folder, format="basic-memory")
    assert report.imported == 2 and report.rejected + report.bad == 1
    problem = next(p for p in report.problems)
    assert problem["origin"] == "tags.md" and "tags[0] is 100 characters; the limit is 64" in problem["reason"]
    atoms = engine.store.list_atoms(scope_hashes=[engine.scope.scope_hash], statuses=["active"], limit=10)
    titles = {a.title for a in atoms}
    assert any(t and len(t) == LIMITS["title"][0] and t.endswith("…") for t in titles)  # a long name is cut, not lost
    assert not any(GITHUB in (a.title or "") + a.content or "hunter2secret" in a.content for a in atoms)
    graph = tmp_path / "graph.jsonl"
    graph.write_text(json.dumps({"type": "entity", "name": "n" * 300, "entityType": "service",
                                 "observations": [f"Token is {GITHUB}"]}) + "\n")  # fmt: skip
    assert engine.import_file(graph, format="server-memory").imported == 1
    with pytest.raises(InvalidInput, match="source is 65 characters; the limit is 64"):
        engine.import_file(graph, format="server-memory", source="s" * 65)
    if not settings.db:
        stored = _stored_bytes(settings)
        assert GITHUB.encode() not in stored and b"hunter2secret" not in stored
