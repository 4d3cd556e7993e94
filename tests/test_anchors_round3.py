"""Code anchors, round 3 (issue 38), each case on a real history: the two bundled repositories
(`../shared/data/repos`: sqlite-utils, pflag) at the commits where it happened, or a small history
built here with git. Moves across files followed again, qualified names through packages, a bare
method only where the context picks one, passing mentions not anchored, classes by their interface,
and what the drift check keeps (once per blob, searched verdicts per working-tree state)."""

from __future__ import annotations

import copy
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from memoryd.anchors import moves, symbols
from memoryd.anchors.drift import DriftChecker
from memoryd.anchors.git import GitRepo
from memoryd.anchors.model import Anchor, Change
from memoryd.anchors.resolve import Resolver
from memoryd.anchors.symbols import parser_available
from memoryd.engine import Engine

from .conftest import git, make_repo
from .test_anchors import commit, save
from .test_anchors_round2 import BENCH, _bench, anchored

REPOS = _bench().BUNDLE.parent  # type: ignore[attr-defined]
needs_go = pytest.mark.skipif(not parser_available("go"), reason="needs the code extra (tree-sitter-go)")


def _forget() -> None:
    """Empty this process's in-memory symbol tables, as a new process starts (the disk caches stay)."""
    with symbols._LOCK:
        symbols._tables.clear()
        symbols._trees.clear()
        symbols._names.clear()


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One clone of each bundle for the module; tests take cheap `--shared` clones of it."""
    out = {}
    for name in ("sqlite-utils", "pflag"):
        bundle = REPOS / f"{name}.bundle"
        if not bundle.exists():
            pytest.skip(f"{bundle.name} is not available here")
        dest = tmp_path_factory.mktemp("bundles") / name
        subprocess.run(["git", "clone", "-q", "--no-checkout", str(bundle), str(dest)], check=True)
        out[name] = dest
    return out


def clone(bundles: dict[str, Path], name: str, rev: str, dest: Path) -> Path:
    subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", str(bundles[name]), str(dest)], check=True)
    checkout(dest, rev)
    return dest


def checkout(repo: Path, rev: str) -> None:
    git(repo, "-c", "advice.detachedHead=false", "checkout", "-q", "--detach", "-f", rev)


class Code:
    """A resolver and a drift checker on one working tree, with on-disk caches under `cache`."""

    def __init__(self, repo: Path, cache: Path) -> None:
        found = GitRepo.discover(repo)
        assert found is not None
        self.repo, self.cache = found, cache
        self.checker = DriftChecker(found, cache / "symbols", cache / "drift")

    def anchor(self, text: str, symbol: str) -> Anchor:
        anchors, reports = Resolver(self.repo, self.cache / "symbols").resolve_text(text, [])
        found = [a for a in anchors if a.symbol == symbol]
        assert len(found) == 1, (anchors, reports)
        return found[0]

    def check(self, a: Anchor) -> Change | None:
        self.repo._cache.clear()  # a new checkout: HEAD moved (the stamp's mtime granularity aside)
        (change,) = self.checker.check([a]) or [None]
        return change


# -- moves across files -------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "old", "new", "moved_at", "edited_at", "aspect"), [
    ("_flatten", "sqlite_utils/cli.py", "sqlite_utils/utils.py", "34e75ed", "8d74ffc", "annotation_only"),
    ("chunks", "sqlite_utils/db.py", "sqlite_utils/utils.py", "a8f9cc6", "e10536c", None),
    ("test_insert_simple", "tests/test_cli.py", "tests/test_cli_insert.py", "d1ed2f4", "a256d7d", None),
])  # fmt: skip
def test_a_definition_moved_within_its_package_or_between_test_files_is_followed_also_once_edited(
    bundles: dict[str, Path], tmp_path: Path, name: str, old: str, new: str, moved_at: str, edited_at: str,
    aspect: str | None,
) -> None:  # fmt: skip
    """sqlite-utils' own moves: `_flatten` cli.py -> utils.py (type hints added 195 commits later), `chunks`
    db.py -> utils.py, a test from tests/test_cli.py to tests/test_cli_insert.py (edited later)."""
    repo = clone(bundles, "sqlite-utils", f"{moved_at}^", tmp_path / "su")
    code = Code(repo, tmp_path / "cache")
    a = code.anchor(f"`{name}` in {old} is where this happens", name)
    assert a.path == old
    checkout(repo, moved_at)
    assert code.check(a) == Change("symbol_moved", old, symbol=name, since=a.commit[:7], to=new)  # type: ignore[index]
    checkout(repo, edited_at)
    change = code.check(a)
    assert change is not None and (change.kind, change.to) == ("symbol_moved", new), change
    assert change.aspect is not None and (aspect is None or change.aspect == aspect), change
    assert "moved from" in change.detail and " and " in change.detail
    assert not change.minor  # a move makes the memory stale, whatever else changed on the way


@needs_go
def test_a_go_test_moved_to_another_test_file_is_followed(bundles: dict[str, Path], tmp_path: Path) -> None:
    """pflag 0491e57 moved TestFuncCompat from func_test.go to func_go1.21_test.go."""
    repo = clone(bundles, "pflag", "0491e57^", tmp_path / "pf")
    code = Code(repo, tmp_path / "cache")
    a = code.anchor("`TestFuncCompat` in func_test.go compares with the standard flag package", "TestFuncCompat")
    checkout(repo, "0491e57")
    change = code.check(a)
    assert change is not None and (change.kind, change.to) == ("symbol_moved", "func_go1.21_test.go"), change


@needs_go
def test_a_rename_is_found_where_its_body_lines_also_stand_elsewhere(bundles: dict[str, Path], tmp_path: Path) -> None:
    """pflag at 5126803: FlagSet.ParseAll shares lines with FlagSet.Parse; renamed in place, it is still found
    (the old body's lines are looked for at every place they stand, not the first)."""
    repo = clone(bundles, "pflag", "5126803", tmp_path / "pf")
    code = Code(repo, tmp_path / "cache")
    a = code.anchor("`FlagSet.ParseAll` in flag.go parses with a callback", "FlagSet.ParseAll")
    flag = repo / "flag.go"
    flag.write_text(flag.read_text().replace(") ParseAll(", ") ParseAllRenamed("))
    change = code.check(a)
    assert change is not None and (change.kind, change.new_symbol) == ("symbol_renamed", "FlagSet.ParseAllRenamed")


GO_TEST = """package tool

import "testing"

func TestParse(t *testing.T) {
\tgot := Parse("a=1")
\tif got["a"] != "1" {
\t\tt.Fatalf("got %v", got)
\t}
\tif len(got) != 1 {
\t\tt.Fatalf("len %d", len(got))
\t}
}
"""


@needs_go
def test_a_go_test_moved_and_edited_between_test_files_is_followed_and_a_stub_is_not(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "tool")
    (repo / "parse.go").write_text("package tool\n\nfunc Parse(s string) map[string]string {\n\treturn nil\n}\n")
    (repo / "parse_test.go").write_text(GO_TEST)
    (repo / "other_test.go").write_text('package tool\n\nimport "testing"\n\nfunc TestOther(t *testing.T) {}\n')
    commit(repo, "code")
    code = Code(repo, tmp_path / "cache")
    a = code.anchor("`TestParse` in parse_test.go checks one pair", "TestParse")
    (repo / "parse_test.go").write_text("package tool\n")
    moved = GO_TEST.split("\n", 3)[3].replace('"a=1"', '"a=1,b=2"').replace("!= 1", "!= 2")
    (repo / "other_test.go").write_text((repo / "other_test.go").read_text() + "\n" + moved)
    commit(repo, "tests moved into one file, and edited")
    change = code.check(a)
    assert change is not None and (change.kind, change.to, change.aspect) == ("symbol_moved", "other_test.go", "body")
    # a library function gone, and a stub of the same name in a test file: not a move
    b = code.anchor("`Parse` in parse.go splits pairs", "Parse")
    (repo / "parse.go").write_text("package tool\n")
    (repo / "stub_test.go").write_text('package tool\n\nfunc Parse(s string) map[string]string {\n\tpanic("stub")\n}\n')
    commit(repo, "Parse is gone; a test stub has its name")
    assert code.check(b) == Change("symbol_removed", "parse.go", symbol="Parse", since=b.commit[:7])  # type: ignore[index]


def test_a_same_named_definition_with_little_in_common_is_not_a_move(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "pkg")
    (repo / "pkg").mkdir()
    body = "\n".join(f"    total += row[{i}] * {i}" for i in range(8))
    (repo / "pkg" / "a.py").write_text(f"def score(row):\n    total = 0\n{body}\n    return total\n")
    (repo / "pkg" / "b.py").write_text("def other():\n    return 1\n")
    commit(repo, "code")
    code = Code(repo, tmp_path / "cache")
    a = code.anchor("`score` in pkg/a.py weighs a row", "score")
    (repo / "pkg" / "a.py").write_text("")
    (repo / "pkg" / "b.py").write_text("def other():\n    return 1\n\n\ndef score(row):\n    return len(row)\n")
    commit(repo, "score is something else now")
    assert code.check(a) == Change("symbol_removed", "pkg/a.py", symbol="score", since=a.commit[:7])  # type: ignore[index]
    (repo / "pkg" / "b.py").write_text(f"def score(row, weight=1):\n    total = 0\n{body}\n    return total * weight\n")
    commit(repo, "the same function, moved and given a weight")
    change = code.check(a)
    assert change is not None and (change.kind, change.to, change.aspect) == ("symbol_moved", "pkg/b.py", "signature")


# -- qualified names through packages ----------------------------------------------------------------


@pytest.mark.parametrize(("text", "want"), [
    ("sqlite_utils.Table.insert_all inserts rows in batches", "sqlite_utils/db.py::Table.insert_all"),
    ("sqlite_utils.Database opens one connection", "sqlite_utils/db.py::Database"),
    ("sqlite_utils.utils.chunks splits an iterator", "sqlite_utils/utils.py::chunks"),
])  # fmt: skip
def test_python_names_qualified_by_their_package_resolve(bundles: dict[str, Path], tmp_path: Path, text: str,
                                                         want: str) -> None:  # fmt: skip
    repo = clone(bundles, "sqlite-utils", "e10536c", tmp_path / "su")
    found = GitRepo.discover(repo)
    assert found is not None
    anchors, reports = Resolver(found).resolve_text(text, [])
    assert [a.ref for a in anchors] == [want], reports


@needs_go
@pytest.mark.parametrize(("text", "want"), [
    ("tool.GenMarkdown writes one page per command", "doc/md.go::GenMarkdown"),
    ("github.com/acme/tool/doc.GenMarkdown writes one page per command", "doc/md.go::GenMarkdown"),
    ("doc.GenMarkdown writes one page per command", "doc/md.go::GenMarkdown"),
    ("tool.Execute runs the root command", "command.go::Execute"),  # the package itself beats doc.Execute
    ("tool.(*Command).Run runs it", "command.go::Command.Run"),
])  # fmt: skip
def test_go_names_qualified_by_their_module_resolve_through_sub_packages(tmp_path: Path, text: str,
                                                                        want: str) -> None:  # fmt: skip
    repo = make_repo(tmp_path / "tool")
    (repo / "go.mod").write_text("module github.com/acme/tool\n\ngo 1.21\n")
    (repo / "command.go").write_text("package tool\n\ntype Command struct{}\n\nfunc (c *Command) Run() {}\n\n"
                                     "func Execute() error {\n\treturn nil\n}\n")  # fmt: skip
    (repo / "doc").mkdir()
    (repo / "doc" / "md.go").write_text("package doc\n\nfunc GenMarkdown(dir string) error {\n\treturn nil\n}\n\n"
                                        "func Execute() {}\n")  # fmt: skip
    commit(repo, "code")
    found = GitRepo.discover(repo)
    assert found is not None
    anchors, reports = Resolver(found).resolve_text(text, [])
    assert [a.ref for a in anchors] == [want], reports


# -- which names a memory is about ------------------------------------------------------------------------

CONTEXT_PY = '''class Context:
    def close(self):
        """Invoke all close callbacks registered with :meth:`call_on_close`, and exit all context
        managers entered with :meth:`with_resource`."""
        for cb in self._callbacks:
            cb()

    def call_on_close(self, f):
        self._callbacks.append(f)
        return f

    def with_resource(self, cm):
        return self._stack.enter_context(cm)


class LazyFile:
    def close(self):
        self._f.close()
'''


@pytest.fixture
def click_like(repo: Path) -> Path:
    (repo / "core.py").write_text(CONTEXT_PY)
    (repo / "helpers.py").write_text("def unquote(s):\n    return s.strip('\"')\n\n\n"
                                     "def strip_quotes(s):\n    return unquote(s).strip(\"'\")\n")  # fmt: skip
    commit(repo, "code")
    return repo


def test_a_bare_method_is_anchored_only_where_the_context_picks_one_never_to_another_name(
    engine: Engine, click_like: Path
) -> None:
    first = engine.memorize("close: Invoke all callbacks registered with `call_on_close`, and exit all "
                            "managers entered with `with_resource`.", source="user", gate="trusted")  # fmt: skip
    refs, note = sorted(first.anchors or []), first.anchor_note
    assert first.effect == "applied" and refs == [], note
    assert note is not None and "close: ambiguous (core.py::Context.close, core.py::LazyFile.close)" in note
    assert "call_on_close: mentioned in passing" in note and "with_resource: mentioned in passing" in note
    assert anchored(engine, "close() on a context object runs the callbacks")[0] == ["core.py::Context.close"]
    engine.delete(first.atom_id or "", reason="the next phrasing restates it")  # else it merges into this one
    # a common noun is not the class: "context managers" leaves it ambiguous
    refs, note = anchored(engine, "close: Invoke all close callbacks registered with `call_on_close`, and exit "
                                  "all context managers entered with `with_resource`.")  # fmt: skip
    assert refs == [] and note is not None and "close: ambiguous" in note
    assert anchored(engine, "self.close() on a LazyFile closes the file")[0] == ["core.py::LazyFile.close"]


def test_a_callee_mentioned_in_passing_is_not_anchored_and_its_change_does_not_flag(
    engine: Engine, click_like: Path
) -> None:
    a = save(engine, "`strip_quotes` in helpers.py removes both kinds of quote; it calls `unquote` first.")
    assert [x.ref for x in engine.anchors(a)] == ["helpers.py", "helpers.py::strip_quotes"]
    both = save(engine, "`strip_quotes` and `unquote` in helpers.py only strip, they never unescape.")
    assert {x.ref for x in engine.anchors(both)} == {"helpers.py", "helpers.py::strip_quotes", "helpers.py::unquote"}
    helpers = click_like / "helpers.py"
    helpers.write_text(helpers.read_text().replace("def unquote(s):", "def unquote(s, quote='\"'):"))
    commit(click_like, "unquote takes the quote")
    assert engine.code_changes([a])[a] == ("current", [])
    fresh, found = engine.code_changes([both])[both]
    assert fresh == "code_changed" and [(c.symbol, c.aspect) for c in found] == [("unquote", "signature")]


# -- classes and structs by their interface -----------------------------------------------------------------


@pytest.mark.parametrize(("bundle", "path", "cls", "body_only", "interface"), [
    ("sqlite-utils", "sqlite_utils/db.py", "Database", ("2616dec", "7d86118"), ("fcfccea", "2b52b5e")),
    ("pflag", "flag.go", "FlagSet", ("07769da", "7ef35c6"), ("3d32e71", "9912b67")),
])  # fmt: skip
def test_a_class_or_struct_changes_with_its_interface_not_its_method_bodies(
    bundles: dict[str, Path], tmp_path: Path, bundle: str, path: str, cls: str, body_only: tuple[str, str],
    interface: tuple[str, str],
) -> None:  # fmt: skip
    if path.endswith(".go") and not parser_available("go"):
        pytest.skip("needs the code extra (tree-sitter-go)")
    repo = clone(bundles, bundle, body_only[0], tmp_path / "r")
    code = Code(repo, tmp_path / "cache")
    kind = "type" if path.endswith(".go") else "class"
    a = code.anchor(f"The {cls} {kind} in {path} holds the state", cls)
    checkout(repo, body_only[1])  # methods' bodies changed, no signature
    assert code.check(a) is None
    checkout(repo, interface[0])
    b = code.anchor(f"The {cls} {kind} in {path} holds the state", cls)
    checkout(repo, interface[1])  # a method's signature changed
    change = code.check(b)
    assert change is not None and (change.kind, change.symbol, change.aspect) == ("symbol_changed", cls, "members")


@pytest.mark.parametrize(("name", "text"), [
    ("hash_record", "`hash_record` in sqlite_utils/utils.py hashes a record's values"),
    ("suggest_column_types", "`suggest_column_types` in sqlite_utils/utils.py guesses column types"),
])  # fmt: skip
def test_type_hints_added_in_a_body_and_a_signature_leave_the_memory_current(
    bundles: dict[str, Path], tmp_path: Path, name: str, text: str
) -> None:
    """sqlite-utils 9a5add6 -> 56dd097 (300 commits): these functions only gained type hints, one of them on a
    local (`to_hash: dict[str, Any] = record`): listed as annotation_only, not stale."""
    repo = clone(bundles, "sqlite-utils", "9a5add6", tmp_path / "su")
    code = Code(repo, tmp_path / "cache")
    a = code.anchor(text, name)
    checkout(repo, "56dd097")
    change = code.check(a)
    assert change is not None and (change.kind, change.aspect) == ("symbol_changed", "annotation_only"), change
    assert change.minor


# -- what the drift check keeps -------------------------------------------------------------------------------


def test_a_second_process_parses_nothing_and_searches_nothing(bundles: dict[str, Path], tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """sqlite-utils 137 commits on: the tables and forms of each file version and the searched verdicts are on
    disk after one check; a new process with the same working tree reads them (no parse, no search) and
    reaches the same verdicts. No syntax tree is copied on the way."""
    repo = clone(bundles, "sqlite-utils", "a8f9cc6^", tmp_path / "su")
    code = Code(repo, tmp_path / "cache")
    texts = [("`chunks` in sqlite_utils/db.py splits an iterator", "chunks"),
             ("`Table.insert_all` in sqlite_utils/db.py inserts in batches", "Table.insert_all"),
             ("The Database class in sqlite_utils/db.py opens one connection", "Database"),
             ("`suggest_column_types` in sqlite_utils/db.py guesses types", "suggest_column_types")]  # fmt: skip
    anchors = [code.anchor(text, name) for text, name in texts]
    checkout(repo, "e10536c")  # 137 first-parent commits on: chunks moved to utils.py and edited, more changed

    def no_copy(*_a: object, **_k: object) -> None:
        raise AssertionError("a syntax tree was copied")

    monkeypatch.setattr(copy, "deepcopy", no_copy)
    code.repo._cache.clear()
    first = code.checker.check_all([[a] for a in anchors])
    assert any(c and c[0].kind == "symbol_moved" for c in first), first  # chunks moved to utils.py: searched
    assert any(c and c[0].kind == "symbol_changed" for c in first), first
    _forget()
    parsed: list[str] = []
    searched: list[str] = []
    real_parse, real_vanished = symbols._parse, moves.vanished
    monkeypatch.setattr(symbols, "_parse", lambda lang, source: parsed.append(lang) or real_parse(lang, source))
    monkeypatch.setattr("memoryd.anchors.drift.vanished",
                        lambda *a, **k: searched.append(a[2].ref) or real_vanished(*a, **k))  # fmt: skip
    again = Code(repo, tmp_path / "cache").checker.check_all([[a] for a in anchors])
    assert again == first
    assert parsed == [] and searched == []


def test_a_search_reads_only_files_changed_since_the_anchor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "many")
    (repo / "lib").mkdir()
    for i in range(60):  # files that name the function and never change
        (repo / "lib" / f"use_{i}.py").write_text(
            f"from lib.core import handle\n\n\ndef use_{i}():\n    return handle()\n"
        )
    (repo / "lib" / "core.py").write_text("def handle():\n    return 1\n\n\ndef other():\n    return 2\n")
    commit(repo, "code")
    code = Code(repo, tmp_path / "cache")
    a = code.anchor("`handle` in lib/core.py answers", "handle")
    (repo / "lib" / "core.py").write_text("def other():\n    return 2\n")
    (repo / "lib" / "zz_new.py").write_text("def handle():\n    return 1\n")  # after every use_*.py
    commit(repo, "handle moved")
    parsed: list[bytes] = []
    real_parse = symbols._parse
    monkeypatch.setattr(symbols, "_parse", lambda lang, source: parsed.append(source) or real_parse(lang, source))
    assert code.check(a) == Change("symbol_moved", "lib/core.py", symbol="handle", since=a.commit[:7],  # type: ignore[index]
                                   to="lib/zz_new.py")  # fmt: skip
    assert len(parsed) <= 2, [p[:40] for p in parsed]  # core.py now and zz_new.py; none of the 60 others


@pytest.mark.sqlite_only("runs `memoryd stale` as processes on the default store")
def test_a_warm_stale_reads_what_the_cold_one_kept(engine: Engine, code: Path, settings: object,
                                                   tmp_path: Path) -> None:  # fmt: skip
    """Two `memoryd stale --json` processes on one data home: the same answer, and the second one finds the
    searched verdicts the first kept (one file per working-tree state under cache/drift)."""
    import json
    import os
    import sys

    save(engine, "Sessions come from `get_session()` in auth/session.py")
    session = code / "auth" / "session.py"
    session.write_text(session.read_text().replace("def get_session(token)", "def fetch_session(token)"))
    commit(code, "renamed")
    home = settings.home  # type: ignore[attr-defined]
    env = {**os.environ, "MEMORYD_HOME": str(home), "MEMORYD_DAEMON": "off"}
    env.pop("MEMORYD_DB", None)

    def stale() -> dict[str, object]:
        out = subprocess.run([str(Path(sys.executable).parent / "memoryd"), "stale", "--json", "--cwd", str(code)], env=env,
                             capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
        return json.loads(out.stdout)  # type: ignore[no-any-return]

    cold = stale()
    assert len(list((home / "cache" / "drift").glob("*.json"))) == 1  # the searched verdicts of this tree
    warm = stale()
    assert warm == cold
    changes = cold["stale"][0]["changes"]  # type: ignore[index]
    assert [(c["kind"], c["new_symbol"]) for c in changes] == [("symbol_renamed", "fetch_session")]


@pytest.fixture
def code(repo: Path) -> Iterator[Path]:
    from .test_anchors import SESSION_PY

    (repo / "auth").mkdir()
    (repo / "auth" / "session.py").write_text(SESSION_PY)
    commit(repo, "code")
    yield repo


# -- the short form of the bench's timings (bench/drift.py --phrasing --before REV), as CI runs it ----------------


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["python", "go"])
def test_speed_short_form(tmp_path: Path, lang: str) -> None:
    """`bench/drift_speed.compare` on this checkout, small: memories written 300 commits back (pflag: its
    whole first-parent history), `stale` cold and warm in fresh processes, recall with anchors on and off.
    Timings are the bench's to report; what is checked is the work: a warm run parses no file."""
    import importlib.util
    import sys

    if lang == "go" and not parser_available("go"):
        pytest.skip("needs the code extra (tree-sitter-go)")
    bench = _bench()
    bundle = REPOS / ("sqlite-utils.bundle" if lang == "python" else "pflag.bundle")
    if not bundle.exists():
        pytest.skip(f"{bundle.name} is not available here")
    spec = importlib.util.spec_from_file_location("drift_speed", BENCH.parent / "drift_speed.py")
    assert spec is not None and spec.loader is not None
    speed = importlib.util.module_from_spec(spec)
    sys.modules["drift_speed"] = speed
    spec.loader.exec_module(speed)
    texts, queries, start, end, _ = bench.speed_inputs(bundle, lang, 4, 300, 13, tmp_path)  # type: ignore[attr-defined]
    src = BENCH.parents[1] / "src"
    out = speed.compare(bundle, [(speed.THIS, src)], texts, queries[:4], start, end, tmp_path, reps=1)
    v = out["versions"][speed.THIS]
    assert v["anchored"] > 0 and v["stale_memories"] > 0, v
    assert v["parses_cold"] > 0 and v["parses_warm"] == 0, v
    assert v["recall_on_p50_ms"] and v["recall_off_p50_ms"], v
