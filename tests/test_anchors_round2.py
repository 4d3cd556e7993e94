"""Code anchors, round 2 (issue 26): names as people write them, renames by body, no false moves,
kinds of change, and the shortened phrasing suite of bench/drift.py on the two bundled repositories."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from memoryd.anchors.drift import DriftChecker
from memoryd.anchors.git import GitRepo
from memoryd.anchors.resolve import Resolver
from memoryd.anchors.symbols import parser_available
from memoryd.engine import Engine

from .test_anchors import changes, commit, save

DB_PY = '''"""Tables."""


class Table:
    def insert_all(self, rows, batch_size=100):
        """Insert rows in batches."""
        for row in rows:
            self.insert(row)
        return len(rows)

    def update(self, pk, values):
        return self.db.execute(pk, values)


class Database:
    def query(self, sql):
        return self.conn.execute(sql)


def detect_types(values):
    return [type(v).__name__ for v in values]


def _hash(text):
    return hash(text)
'''
UTILS_PY = """class Progress:
    def update(self, n):
        self.n += n
"""
TEST_PY = """def detect_types(values):
    return []
"""
FLAG_GO = """package pflag

type FlagSet struct {
\tname string
}

// GetInt returns the int value of a flag.
func (f *FlagSet) GetInt(name string) (int, error) {
\treturn 0, nil
}

func Parse() {}

func (f *FlagSet) Parse(args []string) error {
\treturn nil
}
"""


@pytest.fixture
def pkg(repo: Path) -> Path:
    (repo / "sqlite_utils").mkdir()
    (repo / "sqlite_utils" / "__init__.py").write_text("")
    (repo / "sqlite_utils" / "db.py").write_text(DB_PY)
    (repo / "sqlite_utils" / "utils.py").write_text(UTILS_PY)
    (repo / "tests").mkdir()
    (repo / "tests" / "test_db.py").write_text(TEST_PY)
    (repo / "flag.go").write_text(FLAG_GO)
    commit(repo, "code")
    return repo


def anchored(engine: Engine, text: str) -> tuple[list[str], str | None]:
    r = engine.memorize(text, source="user", gate="trusted")
    assert r.effect == "applied", r
    return sorted(r.anchors or []), r.anchor_note


@pytest.mark.parametrize(("text", "want"), [
    ("The Table.insert_all method in sqlite_utils/db.py batches rows", "sqlite_utils/db.py::Table.insert_all"),
    ("sqlite_utils.db.Table.insert_all batches rows", "sqlite_utils/db.py::Table.insert_all"),
    ("sqlite_utils.db:Table.insert_all batches rows", "sqlite_utils/db.py::Table.insert_all"),
    ("Table.insert_all batches rows", "sqlite_utils/db.py::Table.insert_all"),
    ("insert_all batches rows", "sqlite_utils/db.py::Table.insert_all"),
    ("the Database class keeps one connection", "sqlite_utils/db.py::Database"),
    ("_hash is not stable across processes", "sqlite_utils/db.py::_hash"),
    ("self.update() on a Progress adds to n", "sqlite_utils/utils.py::Progress.update"),
    ("detect_types names the Python types", "sqlite_utils/db.py::detect_types"),  # the test's copy gives way
])  # fmt: skip
def test_names_are_anchored_however_they_are_written(engine: Engine, pkg: Path, text: str, want: str) -> None:
    refs, note = anchored(engine, text)
    assert want in refs, (refs, note)
    assert not any(r.endswith("::Progress") or r.startswith("tests/") for r in refs)


@pytest.mark.skipif(not parser_available("go"), reason="needs the code extra (tree-sitter-go)")
@pytest.mark.parametrize("text", [
    "(*FlagSet).GetInt returns the int value", "pflag.(*FlagSet).GetInt returns the int value",
    "github.com/spf13/pflag.(*FlagSet).GetInt returns the int value", "pflag.FlagSet.GetInt returns the int value",
    "The FlagSet.GetInt method in flag.go returns the int value", "GetInt returns the int value",
])  # fmt: skip
def test_go_receivers_and_packages(engine: Engine, pkg: Path, text: str) -> None:
    refs, note = anchored(engine, text)
    assert refs == ["flag.go::FlagSet.GetInt"] or refs == ["flag.go", "flag.go::FlagSet.GetInt"], (refs, note)


def test_ambiguous_and_missing_names_are_reported_with_candidates(engine: Engine, pkg: Path) -> None:
    refs, note = anchored(engine, "update: writes the new values; `no_such_thing` is gone")
    assert refs == []
    assert note == ("not anchored: no_such_thing: no definition found in the repository; update: ambiguous "
                    "(sqlite_utils/db.py::Table.update, sqlite_utils/utils.py::Progress.update); name the file or "
                    "anchor it explicitly")  # fmt: skip


def test_explicit_qualified_anchor_resolves_and_a_wrong_one_says_why(engine: Engine, pkg: Path) -> None:
    r = engine.memorize(
        "rows go in batches", source="user", gate="trusted", anchors=["sqlite_utils.db.Table.insert_all"]
    )
    assert r.anchors == ["sqlite_utils/db.py::Table.insert_all"]
    from memoryd.shared.errors import InvalidInput

    with pytest.raises(InvalidInput, match=r"anchors\[0\] 'sqlite_utils.db.Table.nope': no definition of "
                                           r"sqlite_utils.db.Table.nope in the repository"):  # fmt: skip
        engine.memorize("x", source="user", gate="trusted", anchors=["sqlite_utils.db.Table.nope"])


# -- drift ---------------------------------------------------------------------------------------------


def test_a_rename_with_the_same_body_is_followed_and_confirm_follows_it(engine: Engine, pkg: Path) -> None:
    a = save(engine, "`Table.insert_all` in sqlite_utils/db.py batches rows")
    db = pkg / "sqlite_utils" / "db.py"
    db.write_text(DB_PY.replace("def insert_all(", "def insert_many("))
    fresh, found = changes(engine, a)
    assert fresh == "code_changed"
    assert ("symbol_renamed", "Table.insert_all", "sqlite_utils/db.py") in found
    detail = engine.code_changes([a])[a][1]
    assert any(c.new_symbol == "Table.insert_many" and "renamed to Table.insert_many" in c.detail for c in detail)
    anchors = engine.confirm_anchors(a, reason="still batches", actor="cli")
    assert "sqlite_utils/db.py::Table.insert_many" in {x.ref for x in anchors}
    assert "(renamed, same body)" in (engine.history(a)[-1].reason or "")
    assert changes(engine, a) == ("current", [])


def test_a_different_definition_of_the_same_name_elsewhere_is_not_a_move(engine: Engine, pkg: Path) -> None:
    a = save(engine, "`detect_types` in sqlite_utils/db.py names the types")
    db = pkg / "sqlite_utils" / "db.py"
    db.write_text(DB_PY.replace("def detect_types(values):\n    return [type(v).__name__ for v in values]\n", ""))
    (pkg / "sqlite_utils" / "types.py").write_text("def detect_types(values):\n    return None\n")
    assert changes(engine, a) == ("code_changed", [("symbol_removed", "detect_types", None)])
    (pkg / "sqlite_utils" / "types.py").write_text(
        "def detect_types(values):\n    return [type(v).__name__ for v in values]\n"
    )
    commit(pkg, "the same definition now")  # a new repository state: searched verdicts are not reused
    assert changes(engine, a) == ("code_changed", [("symbol_moved", "detect_types", "sqlite_utils/types.py")])


def test_annotation_only_changes_are_reported_but_leave_the_memory_current(engine: Engine, pkg: Path) -> None:
    a = save(engine, "`detect_types` in sqlite_utils/db.py names the types")
    db = pkg / "sqlite_utils" / "db.py"
    db.write_text(DB_PY.replace("def detect_types(values):", "def detect_types(values: list) -> list:"))
    fresh, found = engine.code_changes([a])[a]
    assert fresh == "current" and [(c.kind, c.aspect) for c in found] == [("symbol_changed", "annotation_only")]
    assert "(type annotations only)" in found[0].detail
    assert a not in {s.atom.id for s in engine.stale()}
    db.write_text(DB_PY.replace("return [type(v).__name__ for v in values]", "return []"))
    fresh, found = engine.code_changes([a])[a]
    assert fresh == "code_changed" and [(c.kind, c.aspect) for c in found] == [("symbol_changed", "body")]


def test_a_class_anchor_notices_a_change_of_its_members_signatures_not_their_bodies(engine: Engine,
                                                                                     pkg: Path) -> None:  # fmt: skip
    a = save(engine, "the Database class in sqlite_utils/db.py wraps one connection")
    db = pkg / "sqlite_utils" / "db.py"
    db.write_text(DB_PY.replace("return self.conn.execute(sql)", "return self.conn.executescript(sql)"))
    assert engine.code_changes([a])[a] == ("current", [])  # a method's body: its own anchor says so
    db.write_text(DB_PY.replace("def query(self, sql):", "def query(self, sql: str):"))
    fresh, found = engine.code_changes([a])[a]
    assert fresh == "current" and [(c.kind, c.aspect) for c in found] == [("symbol_changed", "annotation_only")]
    db.write_text(DB_PY.replace("def query(self, sql):", "def query(self, sql, params=None):"))
    fresh, found = engine.code_changes([a])[a]
    assert fresh == "code_changed"
    assert [(c.kind, c.symbol, c.aspect) for c in found] == [("symbol_changed", "Database", "members")]
    assert "(its members' signatures)" in found[0].detail


def test_drift_checker_without_the_engine(pkg: Path) -> None:
    """The checker alone (as the file hook uses it): a renamed Go method is followed too."""
    if not parser_available("go"):
        pytest.skip("needs the code extra (tree-sitter-go)")
    repo = GitRepo.discover(pkg)
    assert repo is not None
    (a,) = Resolver(repo).auto("(*FlagSet).GetInt returns the int value", [])
    (pkg / "flag.go").write_text(FLAG_GO.replace(") GetInt(", ") GetInteger("))
    change = DriftChecker(repo).check_anchor(a)
    assert change is not None and (change.kind, change.new_symbol) == ("symbol_renamed", "FlagSet.GetInteger")


# -- the shortened phrasing suite ----------------------------------------------------------------------

BENCH = Path(__file__).resolve().parents[1] / "bench" / "drift.py"


def _bench() -> object:
    spec = importlib.util.spec_from_file_location("bench_drift", BENCH)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_drift"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["python", "go"])
def test_phrasing_suite_short(tmp_path: Path, lang: str) -> None:
    bench = _bench()
    bundle = bench.BUNDLE if lang == "python" else bench.PFLAG  # type: ignore[attr-defined]
    if not bundle.exists():
        pytest.skip(f"{bundle.name} is not available here")
    if lang == "go" and not parser_available("go"):
        pytest.skip("needs the code extra (tree-sitter-go)")
    r = bench.phrasing_repo(bundle, lang, 6, [10], 7, tmp_path)  # type: ignore[attr-defined]
    for how, v in r["per_phrasing"].items():
        if v["mentions"]:
            assert v["pct"] >= 95.0, (how, v, r["misses"])
    e = r["e2e"][10]
    assert e["unambiguous_precision"] in (None, 1.0) or e["unambiguous_precision"] >= 0.95, r["e2e_wrong"]
    assert e["unambiguous_recall"] in (None, 1.0) or e["unambiguous_recall"] >= 0.90, r["e2e_wrong"]
    assert r["edits"].get("false_moves", 0) == 0
    assert r["edits"]["followed"] >= 0.95, r["edits"]["failures"]


# -- one JSON shape for anchors across commands ---------------------------------------------------------


def test_stale_and_memorize_json_use_anchors_the_same_way_and_stale_says_how_many_it_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from typer.testing import CliRunner

    from memoryd.cli import app

    from .conftest import make_repo

    monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "home"))
    repo = make_repo(tmp_path / "widgets")
    (repo / "db.py").write_text(DB_PY)
    commit(repo, "code")
    runner = CliRunner()

    def cli(*args: str) -> str:
        r = runner.invoke(app, [*args, "--cwd", str(repo)])
        assert r.exit_code == 0, r.output
        return r.output

    made = json.loads(cli("memorize", "`detect_types` in db.py names the Python types", "--json"))
    assert made["anchors"] == ["db.py", "db.py::detect_types"]
    cli("memorize", "the Database class in db.py keeps one connection", "--json")
    out = json.loads(cli("stale", "--json"))
    assert out["stale"] == [] and out["checked"] == 2 and out["code_anchors"].startswith("on:")
    assert "0 of" not in cli("stale") and "2 anchored checked" in cli("stale")
    (repo / "db.py").write_text(DB_PY.replace("return [type(v).__name__ for v in values]", "return []"))
    out = json.loads(cli("stale", "--json"))
    assert [s["memory_id"] for s in out["stale"]] == [made["atom_id"]]
    assert out["stale"][0]["anchors"] == made["anchors"]  # the same meaning as memorize's
    assert out["stale"][0]["changes"][0]["aspect"] == "body"
    assert "1 of 2 anchored memories changed" in cli("stale")
