"""Every `memoryd` command answers the same with a daemon running for its home and without one.

Two homes start as byte copies of one seeded store (a real SQLite file and vault); the same commands run in
the same order in both, one home with no daemon (`MEMORYD_DAEMON=off`), the other with its daemon running.
In the daemon's home the CLI's own `Engine.open` is made to fail (`probe`), so whatever a command asks the
engine must be answered by the daemon, except where a command's engine call cannot cross (a stream, a
callback: `export` to stdout, `import`). Outputs are compared with what differs by nature replaced (the
homes' paths, ids and times the commands themselves create, a new token's secret). The list of commands is
the CLI's own (typer's command tree), so a command added without a case here fails this test.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from memoryd.cli import app
from memoryd.daemon.client import Client
from memoryd.engine import Engine
from memoryd.shared.config import Settings

from .conftest import make_repo
from .test_daemon import _env

# Commands left out, and why: each manages or is the daemon, or serves until interrupted.
EXEMPT = {
    "daemon start": "starts the daemon: with one running it says so, without it starts one",
    "daemon status": "reports whether the daemon runs",
    "daemon stop": "stops the daemon",
    "daemon serve": "is the daemon (runs in the foreground until stopped)",
    "daemon logs": "prints the daemon's log",
    "ui": "serves the console until interrupted (tests/test_daemon_ui.py: served by the daemon and in-process)",
}


def _in_process(args: list[str]) -> bool:
    """Commands whose engine call cannot cross to the daemon (a callback, a stream): their own engine either way."""
    return args[0] == "import" or args == ["export"]


SEED = [
    ("The billing service stores amounts as integer cents, never floats.", {"type": "decision"}),
    ("round_invoice in billing.py rounds half to even, as the accountants asked.", {"anchors": ["billing.py"]}),
    ("Deploys run database migrations before switching traffic.", {}),
    ("Maybe we should look at the cache layer again at some point.", {"source": "agent", "gate": "hold"}),
    ("Perhaps the nightly report could move to the reports service.", {"source": "agent", "gate": "hold"}),
]


def _commands(ids: list[str], token: str, work: Path) -> list[tuple[list[str], str]]:
    """(arguments, stdin) in the order both homes run them; `work`: a folder outside both homes."""
    pid = str(work)
    return [
        (["stats", "--json"], ""), (["stats"], ""),
        (["recall", "how are billing amounts stored", "--json"], ""), (["recall", "rounding", "--path", "billing.py"], ""),
        (["memorize", "Invoices are numbered per fiscal year, starting at 1.", "--json"], ""),
        (["memorize", "ok"], ""),
        (["correct", ids[2], "confirm_actual", "-r", "checked in the runbook", "--json"], ""),
        (["correct", ids[0], "nonsense", "-r", "why"], ""),
        (["govern", ids[0], "quarantine", "-r", "double-check with finance", "--json"], ""),
        (["govern", ids[0], "restore", "-r", "finance agreed"], ""),
        (["handoff", "Moved invoice numbering to the fiscal year; next: backfill 2025.", "--json"], ""),
        (["history", ids[0], "--json"], ""), (["history", ids[0]], ""),
        (["verify", "--json"], ""), (["brief", "--json"], ""), (["brief"], ""),
        (["export", str(work / "dump.jsonl")], ""), (["export"], ""),
        (["export", "--format", "markdown", str(work / "md")], ""),
        (["export", "--format", "markdown", str(work / "md")], ""),  # an earlier export is replaced whole
        (["import", str(work / "notes.jsonl"), "--json"], ""),
        (["review", "--json"], ""), (["review", "--links", "--json"], ""), (["review", "--links"], ""),
        (["promote", "1", "--json"], ""), (["reject", "2"], ""),
        (["memorize", "Invoices are now numbered per calendar year.", "--replaces", ids[1], "--json"], ""),
        (["supersede", ids[2], ids[0], "-r", "the newer note replaces it", "--json"], ""),
        (["supersede", ids[2], ids[0], "-r", "not a replacement after all", "--dismiss"], ""),
        (["recall", "invoice numbering", "--include-superseded", "--json"], ""),
        (["timeline", "--json"], ""), (["timeline"], ""),
        (["show", ids[1], "--json"], ""), (["show", ids[0]], ""), (["show", "01NOSUCHMEMORY000000000000"], ""),
        (["stale", "--json"], ""), (["stale"], ""),
        (["stale", "--confirm", ids[1], "-r", "still rounds half to even", "--json"], ""),
        (["doctor", "--json"], ""),
        (["migrate", "--from", "sqlite:///nowhere/memoryd.db", "--to", "postgresql://localhost:1/none"], ""),
        (["connect"], ""),
        (["hook", "session-start"], json.dumps({"session_id": "s-1", "cwd": "{repo}", "hook_event_name": "SessionStart"})),
        (["vault", "check", "--json"], ""), (["vault", "sync", "--json"], ""),
        (["scope", "show", "--json"], ""), (["scope", "mark-sensitive", "--json"], ""),
        (["scope", "grant", "--minutes", "5"], ""), (["scope", "requests"], ""), (["scope", "unmark"], ""),
        (["team", "create", "payments", "--json"], ""), (["team", "add", "payments", "alice", "bob"], ""),
        (["team", "list", "--json"], ""), (["scope", "share", "acme/widgets", "--team", "payments", "--json"], ""),
        (["token", "create", "--tenant", "carol", "--label", "laptop", "--json"], ""), (["token", "list"], ""),
        (["token", "revoke", token, "--json"], ""),
        (["install", "claude", "--scope", "project", "--project-dir", pid, "--dry-run", "--json"], ""),
        (["uninstall", "claude", "--scope", "project", "--project-dir", pid, "--dry-run", "--json"], ""),
        (["install", "codex", "--codex-home", str(work / "codex"), "--dry-run", "--json"], ""),
        (["uninstall", "codex", "--codex-home", str(work / "codex"), "--dry-run", "--json"], ""),
        (["install", "claude-desktop", "--config", str(work / "desktop.json"), "--dry-run", "--json"], ""),
        (["uninstall", "claude-desktop", "--config", str(work / "desktop.json"), "--dry-run", "--json"], ""),
        (["install", "cursor", "--scope", "project", "--project-dir", pid, "--dry-run", "--json"], ""),
        (["uninstall", "cursor", "--scope", "project", "--project-dir", pid, "--dry-run", "--json"], ""),
        (["install", "openclaw", "--openclaw", str(work / "no-openclaw"), "--dry-run"], ""),
        (["uninstall", "openclaw", "--openclaw", str(work / "no-openclaw"), "--dry-run"], ""),
    ]  # fmt: skip


def _leaves() -> set[str]:
    def walk(cmd: Any, prefix: tuple[str, ...] = ()) -> Iterator[str]:
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                yield from walk(sub, (*prefix, name))
        else:
            yield " ".join(prefix)

    return set(walk(typer.main.get_command(app)))


_ULID = re.compile(r"\b01[0-9A-HJKMNP-TV-Z]{24}\b")
_TIME = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)?")


class Normal:
    """Replaces what differs between the two homes by nature, consistently within one home's run."""

    def __init__(self, home: Path, work: Path, known: set[str]) -> None:
        self.home, self.work, self.known = str(home), str(work), known
        self.new: dict[str, str] = {}

    def __call__(self, text: str) -> str:
        text = text.replace(self.home, "<home>").replace(self.work, "<work>")
        text = _ULID.sub(lambda m: m[0] if m[0] in self.known else self.new.setdefault(m[0], f"<id{len(self.new)}>"),
                         text)  # fmt: skip
        text = re.sub(r'("token": "|^)mdt_[A-Za-z0-9_\-.]+', r"\1<token>", text, flags=re.M)
        text = re.sub(r"\b[0-9a-f]{64}\b", "<hash>", text)
        text = re.sub(
            r'"(seconds|rate)": [0-9.]+', r'"\1": <n>', text
        )  # how long an import took  # the audit chain's hashes cover the events' times
        return _TIME.sub("<time>", text)


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    repo = make_repo(tmp_path / "widgets")
    (repo / "billing.py").write_text("def round_invoice(total):\n    return round(total)\n")
    a, b, work = tmp_path / "a", tmp_path / "b", tmp_path / "work"
    work.mkdir()
    (work / "notes.jsonl").write_text(json.dumps({"content": "Refunds are issued within five working days."}) + "\n")
    env = _env(a)
    for k in [k for k in list(__import__("os").environ) if k.startswith("MEMORYD_")]:
        monkeypatch.delenv(k)
    for k, v in env.items():
        if k.startswith("MEMORYD_") and k != "MEMORYD_HOME":
            monkeypatch.setenv(k, v)
    monkeypatch.setenv("HOME", str(tmp_path / "person"))  # the install commands' user-level files
    with Engine.open(Settings(home=a), cwd=repo, authority="operator") as e:
        ids = [e.memorize(text, **{"source": "user", **extra}).atom_id or "" for text, extra in SEED]
        token = e.create_token("dave", label="ci").id
    (repo / "billing.py").write_text("def round_total(total):\n    return round(total, 2)\n")  # the anchor is stale
    shutil.copytree(a, b)
    monkeypatch.setenv("MEMORYD_HOME", str(b))
    Client(b).start()
    known = set(ids) | {token}
    for path in (a, b):
        known |= set(_ULID.findall((path / "memoryd.db").read_bytes().decode("latin-1")))
    yield {"repo": repo, "a": a, "b": b, "work": work, "ids": ids, "token": token, "known": known}
    Client(b, autostart=False).stop()


def _invoke(args: list[str], stdin: str, home: Path, repo: Path, daemon: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("MEMORYD_HOME", str(home))
    monkeypatch.setenv("MEMORYD_DAEMON", "on" if daemon else "off")
    monkeypatch.chdir(repo)
    return CliRunner().invoke(app, args, input=stdin.replace("{repo}", str(repo)), catch_exceptions=False)


@pytest.mark.slow
def test_every_command_answers_the_same_with_a_daemon_and_without(homes: dict[str, Any],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    a, b, repo, work = homes["a"], homes["b"], homes["repo"], homes["work"]
    commands = _commands(homes["ids"], homes["token"], work)
    leaves = _leaves()
    covered = {" ".join(args[:2]) if " ".join(args[:2]) in leaves else args[0] for args, _ in commands}
    assert leaves - set(EXEMPT) - covered == set(), "add a case for each new command (or say why it is exempt)"
    norm = {a: Normal(a, work, homes["known"]), b: Normal(b, work, homes["known"])}
    served_before = int((Client(b, autostart=False).health() or {})["calls"])
    for args, stdin in commands:
        out: dict[Path, tuple[int, str, str]] = {}
        for home, daemon in ((a, False), (b, True)):
            with monkeypatch.context() as m:
                if daemon and not _in_process(args):

                    def no_engine(*_: Any, **__: Any) -> Any:
                        raise AssertionError("the CLI opened its own engine while the daemon runs")

                    m.setattr(Engine, "open", no_engine)
                r = _invoke(args, stdin, home, repo, daemon, m)
            out[home] = (r.exit_code, norm[home](r.stdout), norm[home](r.stderr))
            for name in ("dump.jsonl",):
                path = work / name
                if path.exists():
                    out[home] += (norm[home](path.read_text()),)  # type: ignore[assignment]
                    path.unlink()
        assert out[a] == out[b], (args, [(x, y) for x, y in zip(out[a], out[b], strict=False) if x != y])
    assert int((Client(b, autostart=False).health() or {})["calls"]) > served_before + len(commands)
