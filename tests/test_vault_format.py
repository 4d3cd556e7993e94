"""The markdown vault's file format and file IO (memoryd.formats.vault), on real files in a temp dir."""

from __future__ import annotations

import hashlib
import pickle
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml

from memoryd.formats import vault
from memoryd.formats.vault import FRONTMATTER_KEYS, VaultFormatError
from memoryd.shared.models import ATOM_TYPES, Atom, Scope

ID_A = "01J9Z3Q6X0ABCDEFGHJKMNPQRS"
ID_B = "01J9Z3Q6X0ABCDEFGHJKMNPQRT"
ID_C = "01J9Z3Q6X0ABCDEFGHJKMNPQRV"
WHEN = datetime(2026, 3, 1, 10, 15, 30, 123456, tzinfo=UTC)

TRICKY_CONTENT = [
    "plain english sentence",
    "中文记忆：数据库使用 SQLite，不要用 Postgres。",
    "emoji 🚀🧠 and ZWJ 👩‍💻 family 👨‍👩‍👧",
    "# Heading\n\n- item *one*\n- item `two`\n\n> quote\n\n| a | b |\n|---|---|\n| 1 | 2 |",
    "---\nkey: value\nother: [1, 2]\n---\nlooks like frontmatter",
    "key: value\n- list item\n? complex\n&anchor *alias !!python/object:os.system",
    "   leading spaces\ttab\nline with trailing spaces   \n  \n",
    "\n\nstarts with blank lines",
    "ends with blank lines\n\n\n",
    "```python\ndef f():\n    return '---'\n```\n\n~~~\nfence\n~~~",
    "----\n---\n***\n___",
    "unicode separators \u2028 LS \u2029 PS \x85 NEL \u00a0 nbsp \ufeff bom-in-middle",
    "nul \x00 and bell \x07 in the body",
    "a line with only dashes follows\n---",
    "#not-a-tag: \"quoted\" 'single' {braces} [brackets] %percent @at `tick`",
]

TRICKY_STRINGS = [
    'he said "no": really',
    "it's a #hashtag: yes",
    "colon: at: every: turn",
    "- leading dash",
    "---",
    "  padded  ",
    "中文标题：决定",
    "yes",
    "null",
    "123",
    "2026-03-01T10:15:30Z",
    "~",
    "@at",
    "`tick`",
    "multi\nline\n---\ntitle",
    "tab\tand 🚀 emoji",
    "!!python/object:os.system",
    "&anchor",
    "*alias",
    "% percent",
    "",
]


def make_atom(**overrides: object) -> Atom:
    scope = Scope(
        tenant_id="local",
        workspace="acme",
        repository="widgets",
        branch="main",
        root="/home/dev/widgets",
    )
    fields: dict[str, object] = {
        "id": ID_A,
        "content": "Use SQLite for the embedded store.",
        "type": "decision",
        "source": "claude-code",
        "scope": scope,
        "scope_hash": scope.scope_hash,
        "epistemic": "actual",
        "polarity": "affirmative",
        "status": "active",
        "created_at": WHEN,
        "updated_at": WHEN + timedelta(hours=1),
        "title": "Use SQLite",
        "tags": ["db", "storage"],
        "triggers": ["choosing a database"],
    }
    fields.update(overrides)
    return Atom(**fields)  # type: ignore[arg-type]


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        text = text.encode("utf-8")
    path.write_bytes(text)
    return path


def save(root: Path, atom: Atom) -> Path:
    path = root / vault.relative_path(atom)
    vault.write_atomic(path, vault.render(atom))
    return path


def good_text(atom_id: str = ID_B, type_: str = "fact", body: str = "a good memory") -> str:
    return f"---\nid: {atom_id}\ntype: {type_}\n---\n\n{body}\n"


# --------------------------------------------------------------------------- round trip


@pytest.mark.parametrize("content", TRICKY_CONTENT)
def test_body_round_trips_exactly(tmp_path: Path, content: str) -> None:
    atom = make_atom(content=content)
    path = save(tmp_path, atom)
    got = vault.read(path)
    assert got.body == atom.content
    assert got.frontmatter == vault.atom_frontmatter(atom)
    assert got.path == path


@pytest.mark.parametrize("text", TRICKY_STRINGS)
def test_title_tags_triggers_round_trip(tmp_path: Path, text: str) -> None:
    atom = make_atom(title=text, tags=[text, "plain", text + "#x"], triggers=[text, f"when {text}"])
    got = vault.read(save(tmp_path, atom))
    assert got.frontmatter["title"] == text
    assert got.frontmatter["tags"] == [text, "plain", text + "#x"]
    assert got.frontmatter["triggers"] == [text, f"when {text}"]


def test_every_field_round_trips(tmp_path: Path) -> None:
    atom = make_atom(
        type="warning", epistemic="possible", polarity="negative", status="quarantined",
        title=None, tags=[], triggers=[],
        scope=Scope(tenant_id="t-1", workspace="", repository="*", branch=""),
        scope_hash=Scope(tenant_id="t-1").scope_hash,
    )  # fmt: skip
    fm = vault.read(save(tmp_path, atom)).frontmatter
    assert fm == {
        "id": ID_A,
        "type": "warning",
        "scope": {
            "tenant_id": "t-1",
            "workspace": "",
            "repository": "*",
            "branch": "",
            "hash": atom.scope_hash,
        },
        "tags": [],
        "triggers": [],
        "title": None,
        "created": "2026-03-01T10:15:30.123456Z",
        "updated": "2026-03-01T11:15:30.123456Z",
        "epistemic": "possible",
        "polarity": "negative",
        "status": "quarantined",
    }
    assert vault.parse_time(fm["created"]) == atom.created_at
    assert vault.parse_time(fm["updated"]) == atom.updated_at


def test_unicode_is_written_as_is(tmp_path: Path) -> None:
    atom = make_atom(title="决定：用 SQLite 🚀", tags=["数据库", "😀"], content="正文 🧠")
    text = vault.render(atom)
    assert "决定：用 SQLite 🚀" in text
    assert "- 数据库" in text and "😀" in text and "正文 🧠" in text
    assert "\\u" not in text and "\\U" not in text
    raw = (save(tmp_path, atom)).read_bytes()
    assert "决定".encode() in raw


def test_times_are_rfc3339_utc_strings() -> None:
    plus8 = timezone(timedelta(hours=8))
    atom = make_atom(created_at=datetime(2026, 3, 1, 18, 0, tzinfo=plus8), updated_at=datetime(2026, 3, 1, 10, 0))
    fm = yaml.safe_load(vault.render(atom).split("---\n")[1])
    assert fm["created"] == "2026-03-01T10:00:00.000000Z"  # converted to UTC, quoted: a string, not a timestamp
    assert fm["updated"] == "2026-03-01T10:00:00.000000Z"  # naive means UTC
    assert isinstance(fm["created"], str)


def test_render_layout_and_stable_key_order() -> None:
    atom = make_atom()
    text = vault.render(atom)
    assert text.startswith("---\nid: " + ID_A + "\n")
    assert text.endswith("\n---\n\nUse SQLite for the embedded store.\n")
    head = text.split("\n---\n", 1)[0]
    top_keys = [line.split(":", 1)[0] for line in head.splitlines()[1:] if line and line[0] not in " -"]
    assert tuple(top_keys) == tuple(k for k in FRONTMATTER_KEYS if k != "written")  # written: only when known
    scope_keys = [line.strip().split(":", 1)[0] for line in head.splitlines() if line.startswith("  ")]
    assert scope_keys == list(vault.SCOPE_KEYS)
    assert "root" not in head  # the absolute directory stays out of the vault
    # Same atom, same bytes; field order in the model does not leak into the file.
    assert vault.render(make_atom()) == text
    assert vault.render(Atom.model_validate(atom.model_dump())) == text


def test_render_refuses_what_it_could_not_read_back() -> None:
    with pytest.raises(ValueError, match="content is empty"):
        vault.render(make_atom(content="  \n\t\n"))
    with pytest.raises(ValueError, match="ULID"):
        vault.render(make_atom(id="../../etc/passwd"))
    with pytest.raises(UnicodeEncodeError):
        vault.render(make_atom(content="lone surrogate \ud800"))


# --------------------------------------------------------------------------- newlines


def test_crlf_content_is_stored_as_lf(tmp_path: Path) -> None:
    atom = make_atom(content="line one\r\nline two\r\n\r\nold mac\rend", title="t")
    path = save(tmp_path, atom)
    assert b"\r" not in path.read_bytes()
    assert vault.read(path).body == "line one\nline two\n\nold mac\nend"
    assert vault.read(path).body == vault.normalize_newlines(atom.content)


def test_crlf_file_reads_like_its_lf_twin(tmp_path: Path) -> None:
    atom = make_atom(content="first\n\n  indented\nlast")
    lf = save(tmp_path / "lf", atom)
    crlf = write(tmp_path / "crlf" / "x.md", lf.read_bytes().replace(b"\n", b"\r\n"))
    a, b = vault.read(lf), vault.read(crlf)
    assert b.body == a.body == atom.content
    assert b.frontmatter == a.frontmatter
    assert b.digest != a.digest  # the bytes differ, so the engine sees a change on disk


def test_bom_is_ignored(tmp_path: Path) -> None:
    path = write(tmp_path / "bom.md", "\ufeff" + good_text())
    got = vault.read(path)
    assert got.frontmatter["id"] == ID_B and got.body == "a good memory"


def test_hand_written_file_without_blank_line_or_final_newline(tmp_path: Path) -> None:
    path = write(tmp_path / "x.md", f"---\nid: {ID_B}\ntype: fact\n---\nbody right away")
    assert vault.read(path).body == "body right away"


# --------------------------------------------------------------------------- hand edits and digests


def test_digest_is_sha256_of_the_bytes_on_disk(tmp_path: Path) -> None:
    atom = make_atom()
    path = tmp_path / vault.relative_path(atom)
    digest = vault.write_atomic(path, vault.render(atom))
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest()
    assert vault.read(path).digest == digest
    assert vault.write_atomic(path, vault.render(atom)) == digest  # same atom, same bytes


def test_body_only_hand_edit_is_detectable(tmp_path: Path) -> None:
    atom = make_atom(content="Use SQLite.\n\nSecond paragraph.")
    path = save(tmp_path, atom)
    before = vault.read(path)
    path.write_text(path.read_text(encoding="utf-8").replace("Second paragraph.", "Edited by hand."), "utf-8")
    after = vault.read(path)
    assert after.digest != before.digest
    assert after.body == "Use SQLite.\n\nEdited by hand." != before.body
    assert after.frontmatter == before.frontmatter


def test_frontmatter_hand_edit_is_parsed(tmp_path: Path) -> None:
    path = save(tmp_path, make_atom())
    text = path.read_text(encoding="utf-8").replace("- storage\n", "- storage\n- 'added: by hand #1'\n")
    text = text.replace("title: Use SQLite", 'title: "Use SQLite: \\"really\\""')
    path.write_text(text, encoding="utf-8")
    fm = vault.read(path).frontmatter
    assert fm["tags"] == ["db", "storage", "added: by hand #1"]
    assert fm["title"] == 'Use SQLite: "really"'


def test_broken_yaml_names_the_path_and_the_line(tmp_path: Path) -> None:
    path = save(tmp_path, make_atom())
    lines = path.read_text(encoding="utf-8").split("\n")
    tags_line = lines.index("tags:")
    lines[tags_line] = "tags: [db, storage"  # unclosed flow sequence
    path.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(VaultFormatError) as info:
        vault.read(path)
    message = str(info.value)
    assert str(path) in message
    assert "invalid YAML" in message
    assert f"started at line {tags_line + 1}" in message  # the line the user broke (1-based)
    assert info.value.path == path


def test_yaml_error_line_is_the_line_in_the_file(tmp_path: Path) -> None:
    path = write(tmp_path / "x.md", f'---\nid: {ID_B}\ntype: fact\ntitle: "unterminated\n---\n\nbody\n')
    with pytest.raises(VaultFormatError, match=r"line \d+") as info:
        vault.read(path)
    assert str(path) in str(info.value)
    path = write(tmp_path / "y.md", f"---\nid: {ID_B}\ntype: fact\n  bad: indent\n---\n\nbody\n")
    with pytest.raises(VaultFormatError, match=r"line 4") as info:
        vault.read(path)


def test_unsafe_yaml_tags_are_refused(tmp_path: Path) -> None:
    path = write(
        tmp_path / "x.md",
        f"---\nid: {ID_B}\ntype: fact\ntitle: !!python/object/apply:os.system [echo]\n---\nb\n",
    )
    with pytest.raises(VaultFormatError, match="invalid YAML"):
        vault.read(path)


# --------------------------------------------------------------------------- read errors


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("just a note, no frontmatter\n", "no frontmatter"),
        ("", "no frontmatter"),
        ("intro\n---\nid: x\n---\nbody\n", "no frontmatter"),
        ('{"id": "x"}\nbody\n', "no frontmatter"),
        (f"---\nid: {ID_B}\ntype: fact\nbody without a closing line\n", "not closed"),
        ("---\n---\n\nbody\n", "frontmatter is empty"),
        ("---\n- a\n- b\n---\n\nbody\n", "not a mapping"),
        ("---\njust a string\n---\n\nbody\n", "not a mapping"),
        ("---\nid: not-a-ulid\ntype: fact\n---\n\nbody\n", "invalid id"),
        (f"---\nid: {ID_B.lower()}\ntype: fact\n---\n\nbody\n", "invalid id"),
        ("---\nid: 12345\ntype: fact\n---\n\nbody\n", "invalid id"),
        (f"---\nid: {ID_B}\n---\n\nbody\n", "missing type"),
        (f"---\nid: {ID_B}\ntype: recipe\n---\n\nbody\n", "unknown type 'recipe'"),
        (f"---\nid: {ID_B}\ntype: fact\nstatus: deleted\n---\n\nbody\n", "invalid status"),
        (f"---\nid: {ID_B}\ntype: fact\nepistemic: sure\n---\n\nbody\n", "invalid epistemic"),
        (f"---\nid: {ID_B}\ntype: fact\npolarity: maybe\n---\n\nbody\n", "invalid polarity"),
        (f"---\nid: {ID_B}\ntype: fact\ntags: db\n---\n\nbody\n", "tags must be a list of strings"),
        (
            f"---\nid: {ID_B}\ntype: fact\ntriggers: [yes, 1]\n---\n\nbody\n",
            "triggers must be a list of strings",
        ),
        (f"---\nid: {ID_B}\ntype: fact\ntitle: 2026\n---\n\nbody\n", "title must be a string"),
        (f"---\nid: {ID_B}\ntype: fact\nscope: acme\n---\n\nbody\n", "scope must be a mapping"),
        (f"---\nid: {ID_B}\ntype: fact\nscope: {{hash: 1234}}\n---\n\nbody\n", "scope.hash must be a string"),
        (f"---\nid: {ID_B}\ntype: fact\ncreated: yesterday\n---\n\nbody\n", "created is not an RFC 3339"),
        (f"---\nid: {ID_B}\ntype: fact\nupdated: 2026-03-01\n---\n\nbody\n", "updated must be an RFC 3339"),
        (f"---\nid: {ID_B}\ntype: fact\ncreated: 2026-13-45\n---\n\nbody\n", "invalid YAML"),
        (f"---\nid: {ID_B}\ntype: fact\n---\n", "body is empty"),
        (f"---\nid: {ID_B}\ntype: fact\n---", "body is empty"),
        (f"---\nid: {ID_B}\ntype: fact\n---\n\n   \n\t\n\n", "body is empty"),
    ],
)
def test_read_rejects_with_path_and_reason(tmp_path: Path, text: str, problem: str) -> None:
    path = write(tmp_path / "sub dir" / "bad.md", text)
    with pytest.raises(VaultFormatError) as info:
        vault.read(path)
    assert str(info.value).startswith(f"{path}: ")
    assert problem in str(info.value)
    assert info.value.path == path
    assert isinstance(info.value, ValueError)


def test_read_rejects_unreadable_files(tmp_path: Path) -> None:
    missing = tmp_path / "gone.md"
    with pytest.raises(VaultFormatError, match="file not found") as info:
        vault.read(missing)
    assert str(missing) in str(info.value)
    (tmp_path / "dir.md").mkdir()
    with pytest.raises(VaultFormatError, match="not a regular file"):
        vault.read(tmp_path / "dir.md")
    latin1 = write(tmp_path / "latin1.md", good_text(body="caf\u00e9").encode("latin-1"))
    with pytest.raises(VaultFormatError, match="not valid UTF-8") as info:
        vault.read(latin1)
    assert str(latin1) in str(info.value)
    nul_yaml = write(tmp_path / "nul.md", f"---\nid: {ID_B}\ntype: fact\ntitle: a\x00b\n---\n\nbody\n")
    with pytest.raises(VaultFormatError, match="invalid YAML"):
        vault.read(nul_yaml)


def test_unquoted_timestamps_and_extra_keys_are_accepted(tmp_path: Path) -> None:
    text = f"---\nid: {ID_B}\ntype: fact\ncreated: 2026-03-01T18:00:00+08:00\ntags:\naliases: [x]\n---\n\nbody\n"
    fm = vault.read(write(tmp_path / "x.md", text)).frontmatter
    assert fm["created"] == "2026-03-01T10:00:00.000000Z"
    assert fm["tags"] == []
    assert fm["aliases"] == ["x"]


def test_error_pickles_with_its_path() -> None:
    err = VaultFormatError(Path("/v/a.md"), "body is empty")
    back = pickle.loads(pickle.dumps(err))
    assert str(back) == str(err) == "/v/a.md: body is empty" and back.path == Path("/v/a.md")


# --------------------------------------------------------------------------- layout


def test_relative_path_layout_and_stability() -> None:
    atom = make_atom()
    rel = vault.relative_path(atom)
    assert rel == Path(atom.scope_hash, "decision", f"{ID_A}.md")
    assert not rel.is_absolute() and ".." not in rel.parts
    # Title, tags, content, status, branch and times are not in the path: edits never move the file.
    edited = make_atom(
        title="Renamed: \"totally\" / ../ 中文", content="new", tags=["x"], status="negated",
        updated_at=WHEN + timedelta(days=9), scope=atom.scope.model_copy(update={"branch": "feature/x"}),
    )  # fmt: skip
    assert vault.relative_path(edited) == rel
    assert vault.relative_path(make_atom(id=ID_B)) != rel
    other_scope = Scope(tenant_id="local", workspace="acme", repository="gadgets")
    assert (
        vault.relative_path(make_atom(scope=other_scope, scope_hash=other_scope.scope_hash)).parts[0] != (rel.parts[0])
    )


@pytest.mark.parametrize("atom_type", ATOM_TYPES)
def test_relative_path_for_every_type(atom_type: str) -> None:
    rel = vault.relative_path(make_atom(type=atom_type))
    assert rel.parts[1] == atom_type and rel.suffix == ".md"


@pytest.mark.parametrize(
    "overrides",
    [{"id": "../../escape"}, {"id": "01j9z3q6x0abcdefghjkmnpqrs"}, {"id": "a/b"}, {"scope_hash": "../x"},
     {"scope_hash": "ABCDEF0123456789"}, {"scope_hash": ""}],
)  # fmt: skip
def test_relative_path_refuses_unsafe_parts(overrides: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        vault.relative_path(make_atom(**overrides))


# --------------------------------------------------------------------------- writing


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp") or p.name.startswith("."))


def test_write_atomic_creates_parents_and_leaves_no_temp_files(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "x.md"
    vault.write_atomic(path, "one\n")
    vault.write_atomic(path, "two\n")
    assert path.read_text(encoding="utf-8") == "two\n"
    assert leftovers(path.parent) == []
    assert [p.name for p in path.parent.iterdir()] == ["x.md"]
    assert path.stat().st_mode & 0o777 == 0o600


def test_write_atomic_failing_encode_keeps_old_file(tmp_path: Path) -> None:
    path = tmp_path / "x.md"
    old = vault.write_atomic(path, "old content\n")
    with pytest.raises(UnicodeEncodeError):
        vault.write_atomic(path, "new content with a lone surrogate \udc80\n")
    assert path.read_text(encoding="utf-8") == "old content\n"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == old
    assert leftovers(tmp_path) == []


def test_failing_render_keeps_old_file(tmp_path: Path) -> None:
    good = make_atom()
    path = save(tmp_path, good)
    before = path.read_bytes()
    with pytest.raises(ValueError):
        vault.write_atomic(path, vault.render(make_atom(content="bad \ud800")))
    assert path.read_bytes() == before
    assert leftovers(path.parent) == []


def test_write_atomic_failing_replace_removes_the_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "occupied.md"
    target.mkdir()  # os.replace of a file onto a directory fails after the temp file is written
    (target / "keep").write_text("inside")
    with pytest.raises(OSError):
        vault.write_atomic(target, "text\n")
    assert target.is_dir() and (target / "keep").read_text() == "inside"
    assert leftovers(tmp_path) == []


def test_remove(tmp_path: Path) -> None:
    path = save(tmp_path, make_atom())
    vault.remove(path)
    assert not path.exists()
    vault.remove(path)  # missing is fine
    vault.remove(tmp_path / "never" / "existed.md")


# --------------------------------------------------------------------------- scan


def test_scan_returns_good_files_and_errors_without_touching_anything(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    a = save(root, make_atom())
    b = save(root, make_atom(id=ID_B, type="preference", content="偏好：用中文回答", title="语言"))
    handmade = write(root / "anywhere" / "renamed by hand.md", good_text(atom_id=ID_C))
    broken = {
        write(root / "x" / "no-frontmatter.md", "just text\n"): "no frontmatter",
        write(root / "x" / "bad-yaml.md", f"---\nid: {ID_B}\ntype: [fact\n---\n\nbody\n"): "invalid YAML",
        write(root / "x" / "bad-type.md", f"---\nid: {ID_B}\ntype: recipe\n---\n\nbody\n"): "unknown type",
        write(root / "x" / "empty-body.md", f"---\nid: {ID_B}\ntype: fact\n---\n\n"): "body is empty",
    }
    ignored = [
        write(root / "x" / "notes.txt", "not markdown"),
        write(root / "x" / "README.markdown", "not .md"),
        write(root / ".hidden.md", "dotfile"),
        write(root / "x" / ".x.md.abc123.tmp", "a temp file"),
        write(root / ".obsidian" / "workspace.md", "a dot dir"),
        write(root / "prompts" / "system.md", "a prompt, not a memory"),
    ]
    nested_prompts = write(root / "x" / "prompts" / "nested.md", "---\nid: nope\n---\nb\n")  # only top-level skipped
    snapshot = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}

    files, errors = vault.scan(root)

    assert [f.path for f in files] == sorted([a, b, handmade])
    by_id = {f.frontmatter["id"]: f for f in files}
    assert by_id[ID_B].body == "偏好：用中文回答" and by_id[ID_B].frontmatter["title"] == "语言"
    assert by_id[ID_C].path == handmade  # the id inside is the truth, not the file name
    error_paths = {e.path: str(e) for e in errors}
    assert set(error_paths) == set(broken) | {nested_prompts}
    for path, problem in broken.items():
        assert error_paths[path].startswith(str(path)) and problem in error_paths[path]
    assert not any(str(p) in "".join(error_paths.values()) for p in ignored)
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == snapshot  # nothing modified


def test_scan_missing_or_empty_root(tmp_path: Path) -> None:
    assert vault.scan(tmp_path / "nope") == ([], [])
    assert vault.scan(tmp_path) == ([], [])


def test_scan_finds_what_write_wrote_for_every_type(tmp_path: Path) -> None:
    ids = ["01J9Z3Q6X0ABCDEFGHJKMNPQ" + f"{i:02d}" for i in range(len(ATOM_TYPES))]
    atoms = [make_atom(id=i, type=t, content=f"memory of type {t}") for i, t in zip(ids, ATOM_TYPES, strict=True)]
    for atom in atoms:
        save(tmp_path, atom)
    files, errors = vault.scan(tmp_path)
    assert errors == []
    assert sorted((f.frontmatter["id"], f.frontmatter["type"], f.body) for f in files) == sorted(
        (a.id, a.type, a.content) for a in atoms
    )


def test_a_hand_written_file_without_id_reads_as_a_new_fact(tmp_path: Path) -> None:
    path = write(tmp_path / "new.md", "---\ntitle: 部署\n---\n\n部署前先跑 make test\n")
    f = vault.read(path)
    assert f.frontmatter["id"] is None and f.frontmatter["type"] == "fact"
    assert f.body == "部署前先跑 make test"
    typed = vault.read(write(tmp_path / "typed.md", "---\nid:\ntype: warning\n---\n\nNever run migrations on Friday\n"))
    assert typed.frontmatter["type"] == "warning"
