"""The markdown vault follows the database, and hand edits come back in: nothing lost."""

from __future__ import annotations

from pathlib import Path

from memoryd.engine import Engine


def _file(engine: Engine, atom_id: str) -> Path:
    path = engine.path_of(engine.get(atom_id))
    assert path is not None and path.exists()
    return path


def test_every_active_memory_has_a_file_that_follows_its_state(engine: Engine) -> None:
    a = engine.memorize("Never push directly to main; open a pull request").atom_id
    path = _file(engine, a)
    assert "Never push directly to main" in path.read_text() and "status: active" in path.read_text()
    engine.correct(a, "confirm_necessary", "team rule")
    assert "epistemic: necessary" in path.read_text()
    engine.govern(a, "quarantine", "check")
    assert not path.exists() and engine.get(a).vault_path is None
    engine.restore(a, "fine")
    assert _file(engine, a).exists()
    engine.govern(a, "tombstone", "gone")
    assert not any(engine.vault_root.rglob("*.md"))
    assert engine.vault_check() == {k: [] for k in engine.vault_check()}


def test_hand_edit_becomes_a_replace_correction(engine: Engine) -> None:
    a = engine.memorize("The staging database runs PostgreSQL 15 on db-staging-1").atom_id
    path = _file(engine, a)
    path.write_text(path.read_text().replace("PostgreSQL 15", "PostgreSQL 16"))
    report = engine.vault_sync()
    [edit] = report["edited"]
    assert edit["memory_id"] == a and edit["new_memory_id"] != a
    new = engine.get(edit["new_memory_id"])
    assert new.content == "The staging database runs PostgreSQL 16 on db-staging-1"
    assert engine.get(a).status == "superseded"
    assert [e.reason for e in engine.history(new.id)] == ["edited on disk"]
    assert not path.exists() and _file(engine, new.id).read_text().count("PostgreSQL 16") == 1
    assert engine.vault_sync() == {k: [] for k in report}  # settled


def test_hand_edit_of_tags_updates_in_place(engine: Engine) -> None:
    a = engine.memorize("Frontend tests run with Vitest 3 and Playwright", tags=["ci"]).atom_id
    path = _file(engine, a)
    path.write_text(path.read_text().replace("- ci", "- ci\n- frontend"))
    report = engine.vault_sync()
    assert report["retagged"] == [{"path": str(path), "memory_id": a}]
    assert engine.get(a).tags == ["ci", "frontend"] and engine.get(a).status == "active"


def test_file_deleted_by_hand_deletes_the_memory(engine: Engine) -> None:
    a = engine.memorize("Use ruff for linting and formatting in this repo").atom_id
    engine.memorize("The release branch is cut every second Tuesday")
    _file(engine, a).unlink()
    assert engine.vault_sync()["deleted"] == [a]
    assert engine.store.get_atoms([a]) == {}
    assert [e.action for e in engine.store.events(a)] == ["create", "delete"]


def test_a_missing_vault_is_written_again_not_taken_for_deletions(engine: Engine) -> None:
    """Every recorded file gone (a new machine, a team replica or a restore on a shared database): the
    vault is missing, not emptied by hand; deleting every memory would lose them all."""
    import shutil

    ids = [engine.memorize(t).atom_id for t in ("Use ruff for linting and formatting in this repo",
                                                 "The release branch is cut every second Tuesday")]  # fmt: skip
    shutil.rmtree(engine.vault_root)
    report = engine.vault_sync()
    assert report["deleted"] == [] and sorted(report["written"]) == sorted(ids)
    assert all(engine.get(i).status == "active" and _file(engine, i).is_file() for i in ids)


def test_new_file_becomes_a_memory(engine: Engine) -> None:
    new = engine.vault_root / "notes" / "deploy.md"
    new.parent.mkdir(parents=True)
    new.write_text(
        "---\ntype: playbook\ntitle: 部署\ntags: [ops]\n---\n\n部署前先跑 make test，再用 make release 打 tag\n"
    )
    [imported] = engine.vault_sync()["imported"]
    atom = engine.get(imported["memory_id"])
    assert (atom.type, atom.title, atom.tags, atom.source) == ("playbook", "部署", ["ops"], "vault")
    assert atom.content == "部署前先跑 make test，再用 make release 打 tag"
    assert not new.exists() and _file(engine, atom.id).exists()  # moved into the memory's own file


def test_broken_file_is_reported_and_left_untouched(engine: Engine) -> None:
    a = engine.memorize("Backups run nightly at 02:00 UTC to the object store").atom_id
    path = _file(engine, a)
    broken = path.read_text().replace("type: fact", "type: [fact")
    path.write_text(broken)
    report = engine.vault_sync()
    [problem] = report["broken"]
    assert problem["path"] == str(path) and "invalid YAML" in problem["error"]
    assert path.read_text() == broken  # untouched
    assert engine.get(a).status == "active" and report["deleted"] == []  # and not mistaken for a deletion


def test_active_memory_without_file_gets_one(engine: Engine) -> None:
    a = engine.memorize("Releases are cut from the release/* branches").atom_id
    path = _file(engine, a)
    with engine.store.transaction() as tx:  # as after a crash between commit and file write
        tx.update_atom(a, vault_path=None, vault_digest=None)
    path.unlink()
    assert engine.vault_sync()["written"] == [a]
    assert _file(engine, a).exists()


def test_doctor_reports_vault_drift(engine: Engine) -> None:
    a = engine.memorize("Releases are cut from the release/* branches").atom_id
    _file(engine, a).write_text(_file(engine, a).read_text() + "\nmore\n")
    assert engine.doctor()["sync"].startswith("warn: 1 edited")


def test_sync_parses_only_files_whose_bytes_changed(engine: Engine, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Start-up sync over a big unchanged vault must not re-parse every file's YAML."""
    import memoryd.formats.vault as vault_module

    ids = [engine.memorize(f"Service s{i} listens on port {8000 + i} behind the gateway").atom_id for i in range(6)]
    parsed: list[Path] = []
    real = vault_module._parse_text
    monkeypatch.setattr(vault_module, "_parse_text", lambda text, label: parsed.append(label) or real(text, label))
    assert engine.vault_sync() == {k: [] for k in engine.vault_sync()}
    assert parsed == []  # six unchanged files, none parsed
    path = _file(engine, ids[2])
    path.write_text(path.read_text().replace("port 8002", "port 9002"))
    report = engine.vault_sync()
    assert [e["memory_id"] for e in report["edited"]] == [ids[2]]
    assert [p for p in parsed if isinstance(p, Path)] == [path]  # only the edited one (plus our own render check)
