"""The CLI as a person uses it: real store, human output, --json, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memoryd.cli import app

from .conftest import make_repo

runner = CliRunner()


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "home"))
    repo = make_repo(tmp_path / "widgets")

    def run(*args: str, code: int = 0) -> str:
        r = runner.invoke(app, [*args, "--cwd", str(repo)])
        assert r.exit_code == code, (r.exit_code, r.output)
        return r.output

    return run


def test_memorize_recall_history_roundtrip(cli) -> None:  # type: ignore[no-untyped-def]
    out = json.loads(cli("memorize", "Never push directly to main; open a pull request", "--json"))
    assert out["effect"] == "applied"
    atom = out["atom_id"]
    assert atom in cli("recall", "push to main")
    hits = json.loads(cli("recall", "pull request", "--json"))
    assert hits[0]["atom_id"] == atom and 0 < hits[0]["score"] <= 1
    assert "applied" in cli("correct", atom, "confirm_necessary", "--reason", "team rule")
    history = json.loads(cli("history", atom, "--json"))
    assert [e["action"] for e in history] == ["create", "confirm_necessary"]
    assert "chain ok" in cli("verify")
    assert "Constraints" in cli("brief")
    assert "snapshot_version: 2" in cli("stats")


def test_rejections_and_errors_map_to_exit_codes(cli) -> None:  # type: ignore[no-untyped-def]
    assert "rejected" in cli("memorize", "   ", code=4)
    assert "no atom with id" in cli("correct", "01NOPE", "negate", "--reason", "x", code=4)
    assert "error [invalid_input]: query is empty" in cli("recall", " ", code=2)
    assert "error [not_found]" in cli("history", "01NOPE", code=3)


def test_govern_restore_and_export(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    atom = json.loads(cli("memorize", "Deploy keys live in the ops vault under /infra/deploy", "--json"))["atom_id"]
    assert "applied" in cli("govern", atom, "quarantine", "--reason", "check")
    assert "applied" in cli("govern", atom, "restore", "--reason", "fine")
    assert "applied" in cli("handoff", "Moved deploy keys to the vault; next: rotate them")
    out = tmp_path / "dump.jsonl"
    cli("export", str(out))
    kinds = [json.loads(line)["kind"] for line in out.read_text().splitlines()]
    assert kinds.count("atom") == 2 and kinds.count("event") == 4


def test_vault_scope_review_timeline_show_doctor(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    atom = json.loads(cli("memorize", "Backups run nightly at 02:00 UTC to the object store", "--json"))["atom_id"]
    shown = json.loads(cli("show", atom, "--json"))
    path = Path(shown["path"])
    assert path.exists() and [h["action"] for h in shown["history"]] == ["create"]
    path.write_text(path.read_text().replace("02:00", "03:00"))
    assert json.loads(cli("vault", "check", "--json"))["edited"] == [str(path)]
    synced = json.loads(cli("vault", "sync", "--json"))
    assert synced["edited"][0]["memory_id"] == atom
    bad = path.parent / "broken.md"
    bad.write_text("no frontmatter here\n")
    assert "broken:" in cli("vault", "sync", code=4) and bad.read_text() == "no frontmatter here\n"
    assert "03:00" in cli("timeline", "--since", "1w")
    assert "since must look like" in cli("timeline", "--since", "soon", code=2)
    scope = json.loads(cli("scope", "show", "--json"))
    assert scope["scope_name"] == "acme/widgets" and scope["sensitive"] is False
    assert "not marked sensitive" in cli("scope", "grant", code=2)
    assert "is sensitive" in cli("scope", "mark-sensitive")
    assert "agents may read acme/widgets until" in cli("scope", "grant", "--minutes", "5")
    assert "minutes must be between 1 and 1440" in cli("scope", "grant", "--minutes", "0", code=2)
    assert "no requests" in cli("scope", "requests")
    assert "no longer sensitive" in cli("scope", "unmark")
    assert "nothing pending" in cli("review")
    assert "pass promotion_ids" in cli("promote", code=2)
    assert "skipped #7: no promotion with id 7" in cli("reject", "7")
    doc = json.loads(cli("doctor", "--json"))
    assert doc["index_db"].startswith("ok") and doc["sync"] == "warn: 1 broken (see `memoryd vault check`)"


def _limited(limit: int) -> None:
    """A child that may write files only up to `limit` bytes (writes past it fail with EFBIG, as on a full disk)."""
    import resource
    import signal

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_an_export_is_written_whole_or_not_at_all(tmp_path: Path) -> None:
    """`export FILE` fills a temporary file beside the target and renames it into place: a failure half-way
    (here: no room past 48 kB, as on a full disk) leaves the earlier export as it was, and no temporary file.
    `export --format markdown DIR` writes into a new or empty folder, or replaces an earlier export whole."""
    import os
    import subprocess
    import sys

    from memoryd.engine import Engine
    from memoryd.shared.config import Settings

    repo = make_repo(tmp_path / "widgets")
    home = tmp_path / "home"
    with Engine.open(Settings(home=home, embedder="hash", term_embedder="none"), cwd=repo) as e:
        for i in range(120):
            e.memorize(f"Service svc_{i} keeps its queue depth under {i + 3} jobs per worker.", source="user")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}, "MEMORYD_HOME": str(home),
           "MEMORYD_EMBEDDER": "hash", "MEMORYD_TERM_EMBEDDER": "none", "MEMORYD_DAEMON": "off"}  # fmt: skip
    memoryd = str(Path(sys.executable).with_name("memoryd"))
    dump, md = tmp_path / "dump.jsonl", tmp_path / "md"

    def export(*args: str, limit: int | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([memoryd, "export", *args], env=env, cwd=repo, capture_output=True, text=True,
                              timeout=120, preexec_fn=(lambda: _limited(limit)) if limit else None)  # fmt: skip

    assert export(str(dump)).returncode == 0 and export("--format", "markdown", str(md)).returncode == 0
    whole = dump.read_bytes()
    assert len(whole) > 2 * 48 * 1024
    r = export(str(dump), limit=48 * 1024)
    assert (
        r.returncode == 2 and r.stderr == f"error [invalid_input]: cannot write the export to {dump}: File too large\n"
    )
    assert dump.read_bytes() == whole  # the earlier export, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dump.jsonl", "home", "md", "widgets"]  # no temporary left
    notes = sorted(p.relative_to(md) for p in md.rglob("*"))
    assert export("--format", "markdown", str(md)).returncode == 0  # an earlier export: replaced whole
    assert sorted(p.relative_to(md) for p in md.rglob("*")) == notes and len(notes) > 120
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "mine.md").write_text("a note of my own\n")
    r = export("--format", "markdown", str(tmp_path / "notes"))
    assert r.returncode == 2 and r.stderr == (f"error [invalid_input]: {tmp_path / 'notes'} is not empty: export into a "
                                              "new or empty folder (an earlier memoryd markdown export there is "
                                              "replaced whole)\n")  # fmt: skip
    assert [p.name for p in (tmp_path / "notes").iterdir()] == ["mine.md"]


def test_a_folder_written_whole_or_not_at_all(tmp_path: Path) -> None:
    """`shared.files.atomic_folder`, what `export --format markdown` writes through: a failure half-way leaves
    the folder as it was (absent, or the earlier one) and no staging folder behind."""
    from memoryd.shared.files import atomic_folder, atomic_text

    def half(folder: Path) -> None:
        (folder / "a.md").write_text("one\n")
        raise OSError(28, "No space left on device")

    target = tmp_path / "out"
    with pytest.raises(OSError, match="No space left"):
        atomic_folder(target, half, replaceable=lambda f: True)
    assert list(tmp_path.iterdir()) == []
    atomic_folder(target, lambda f: (f / "b.md").write_text("two\n"), replaceable=lambda f: True)
    with pytest.raises(OSError, match="No space left"):
        atomic_folder(target, half, replaceable=lambda f: True)
    assert [p.name for p in tmp_path.iterdir()] == ["out"] and [p.name for p in target.iterdir()] == ["b.md"]
    with pytest.raises(FileExistsError, match="is not empty"):
        atomic_folder(target, lambda f: None, replaceable=lambda f: False)
    file = tmp_path / "x.jsonl"
    file.write_text("old\n")
    with pytest.raises(RuntimeError), atomic_text(file) as fh:
        fh.write("new, half")
        raise RuntimeError
    assert file.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["out", "x.jsonl"]


def _main_output(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *argv: str,
                 whole: bool = False) -> tuple[int, str]:  # fmt: skip
    """What `memoryd ARGV` answers through `main` (or, `whole`, through the full app)."""
    from memoryd.cli import main

    monkeypatch.setattr("sys.argv", ["memoryd", *argv])
    with pytest.raises(SystemExit) as exited:
        app() if whole else main()
    out = capsys.readouterr()
    return int(exited.value.code or 0), out.out + out.err


def test_main_builds_only_the_named_command_and_answers_as_the_whole_tree(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`main` builds just the command (or group) named first; its help, its usage errors and the whole tree's
    answers (no command, an unknown one, `--version`) are the same as the full app's, for every command."""
    from typer.main import get_command_name

    names = [c.name or get_command_name(c.callback.__name__) for c in app.registered_commands if c.callback]
    names += [g.name for g in app.registered_groups if g.name]
    assert {"recall", "memorize", "supersede", "vault", "daemon", "install"} <= set(names)
    for argv in [*([n, "--help"] for n in names), ["recall", "--no-such-option"], ["vault", "no-such"]]:
        assert _main_output(monkeypatch, capsys, *argv) == _main_output(monkeypatch, capsys, *argv, whole=True), argv
    code, out = _main_output(monkeypatch, capsys, "recall", "--no-such-option")
    assert code == 2 and "No such option" in out
    code, out = _main_output(monkeypatch, capsys, "no-such-command")
    assert code == 2 and "No such command 'no-such-command'" in out
    code, out = _main_output(monkeypatch, capsys, "--version")
    assert code == 0 and out.startswith("memoryd ")
    code, out = _main_output(monkeypatch, capsys)
    assert "memorize" in out and "recall" in out and "supersede" in out  # no command: the whole list
