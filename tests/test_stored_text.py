"""Redaction in one place (engine/inputs.py): every text column of the schema, on both backends, is filled
from a declared, redacted input, derived from redacted text, or not free text at all (with why); and no
engine part calls `redact` itself.

The behavioural side (a secret through every declared field, then the database, its WAL and every file
searched byte for byte) is tests/security/test_redaction.py::test_no_secret_reaches_any_stored_byte.
"""

from __future__ import annotations

import ast
import inspect
import sqlite3
from pathlib import Path

import pytest

from memoryd.anchors.symbols import parse_python
from memoryd.engine import Engine, _part
from memoryd.engine.inputs import FROM_DISK, STORED_TEXT, read_in, redacted
from memoryd.shared.config import Settings
from memoryd.shared.errors import MemorydError
from memoryd.shared.limits import LIMITS

ENGINE_DIR = Path(__file__).parents[1] / "src" / "memoryd" / "engine"
SECRET = "ghp_" + "Zq8x3Lm2" * 4 + "Ab12"  # a GitHub token: found by its format, fits a tag and a source

# Column → the declared fields (engine/inputs.py: "<Engine method>.<parameter>" or "<file kind>.<field>") whose
# redacted text fills it.
_CONTENT = (
    "memorize.content",
    "handoff.summary",
    "correct.new_content",
    "govern.lesson_content",
    "patch.content",
    "session_start.title",
    "session_start.source",
    "session_end.summary",
    "capture_passive.content",
    "vault file.body",
    "import line.content",
    "transcript.text",
)
_ACTORS = (
    "memorize.actor",
    "memorize.source",
    "handoff.source",
    "correct.actor",
    "govern.actor",
    "restore.actor",
    "supersede.actor",
    "dismiss_link.actor",
    "patch.actor",
    "delete.actor",
    "session_start.source",
    "session_end.actor",
    "capture_passive.source",
    "promote.actor",
    "reject.actor",
    "merge_projects.actor",
    "grant.by",
    "decide_promotions.actor",
    "confirm_anchors.actor",
    "import_jsonl.source",
    "import_file.source",
    "import line.source",
    "observe_transcript.source",
)
REDACTED: dict[str, tuple[str, ...]] = {
    "atoms.content": _CONTENT,
    # and the progress state of an import or a transcript: counters, the file's path, the host's session id
    "event_payloads.content": (*_CONTENT, "observe_transcript.event"),
    "atoms.title": ("memorize.title", "patch.title", "session_start.title", "vault file.title", "import line.title"),
    "atoms.tags": ("memorize.tags", "patch.tags", "capture_passive.tags", "vault file.tags", "import line.tags"),
    "atoms.triggers": (
        "memorize.triggers",
        "patch.triggers",
        "capture_passive.triggers",
        "vault file.triggers",
        "import line.triggers",
    ),
    "atoms.source": (
        "memorize.source",
        "handoff.source",
        "session_start.source",
        "capture_passive.source",
        "govern.actor",
        "import_jsonl.source",
        "import_file.source",
        "import line.source",
        "observe_transcript.source",
    ),
    "events.actor": _ACTORS,
    # and what memoryd writes itself: counts, scope hashes, a token's record
    "events.reason": (
        "observe_transcript.event",
        "correct.reason",
        "govern.reason",
        "restore.reason",
        "supersede.reason",
        "dismiss_link.reason",
        "patch.reason",
        "delete.reason",
        "confirm_anchors.reason",
        "create_token.label",
    ),
    "sessions.title": ("session_start.title",),
    "sessions.source": ("session_start.source",),
    "sessions.summary": ("session_end.summary",),
    "tokens.label": ("create_token.label",),
    "access_requests.reason": ("request_sensitive_read.reason", "request_access.reason"),
    "grants.granted_by": ("grant.by",),
    "anchors.path": ("memorize.anchors",),  # and paths of the repository's code
    "anchors.symbol": ("memorize.anchors",),  # and symbols of the repository's code
}
_TERMS = "index terms of the redacted content, title, tags and triggers"
_ENTITY = "an entity id or name, extracted by memoryd from redacted content"
DERIVED: dict[str, str] = {
    "promotions.reasoning": "the DURA scores' reasoning, written by memoryd about the redacted content",
    "atoms.kw": _TERMS,
    "atom_fts.terms": _TERMS,
    "atom_fts_content.c0": _TERMS,
    "atom_fts_idx.term": _TERMS,
    "atom_fts_vocab.term": _TERMS,
    "scope_terms.term": _TERMS,
    "entities.id": _ENTITY,
    "entities.name": _ENTITY,
    "edges.src": "an atom id or an entity id",
    "edges.dst": "an atom id or an entity id",
}
_ID = "an id memoryd makes (a ULID, a sequence)"
_HASH = "a hash or digest memoryd computes"
_TIME = "a timestamp"
_ENUM = "one of a fixed set of values, checked on input"
_SCOPE = "the scope: parsed from the repository's git remote and path, or a validated scope argument"
_NAME = "a tenant or team name, checked against a strict pattern (`check_name`)"
NOT_FREE_TEXT: dict[str, str] = {
    **dict.fromkeys(
        """atoms.id atoms.supersedes atoms.superseded_by events.id event_payloads.event_id sessions.id
        promotions.atom_id anchors.atom_id model_vectors.atom_id tokens.id vault_outbox.atom_id sqlite_sequence.seq""".split(),
        _ID,
    ),
    **dict.fromkeys(
        """atoms.norm_hash atoms.scope_hash atoms.vault_digest events.content_hash events.prev_hash events.hash edges.scope_hash
        access_requests.scope_hash grants.scope_hash promotions.scope_hash recalls.scope_hash scope_docs.scope_hash
        scope_terms.scope_hash sensitive_scopes.scope_hash tokens.salt tokens.digest anchors.commit_sha
        anchors.blob anchors.fingerprint""".split(),
        _HASH,
    ),
    **dict.fromkeys(
        """access_requests.requested_at anchors.created_at atoms.created_at atoms.updated_at atoms.last_accessed_at atoms.written_at
        edges.created_at events.at grants.granted_at grants.expires_at promotions.created_at promotions.decided_at
        recalls.at schema_migrations.applied_at sensitive_scopes.marked_at sessions.started_at sessions.ended_at
        shares.shared_at team_members.added_at teams.created_at tokens.created_at tokens.expires_at
        tokens.revoked_at vault_outbox.at""".split(),
        _TIME,
    ),
    **dict.fromkeys(
        """atoms.type atoms.epistemic atoms.polarity atoms.status atoms.prior_status events.action edges.kind
        entities.kind promotions.origin promotions.status anchors.kind anchors.lang anchors.origin""".split(),
        _ENUM,
    ),
    **dict.fromkeys(
        """atoms.tenant_id atoms.workspace atoms.repository atoms.branch atoms.scope_root sensitive_scopes.name
        shares.workspace shares.repository""".split(),
        _SCOPE,
    ),
    **dict.fromkeys("tokens.tenant_id teams.name team_members.team team_members.tenant_id shares.team".split(), _NAME),
    "events.atom_id": "an atom id, or a progress marker: import:<sha256>, transcript:<the host's session id>",
    "tokens.scopes": "repository names a token may act in (WORKSPACE/REPOSITORY, validated) and `global`",
    "atoms.vault_path": "the vault file's path, made by memoryd from the scope, type and id",
    "vault_outbox.remove_path": "a vault file's path, made by memoryd",
    "vault_outbox.token": "a random token memoryd makes",
    "recalls.hits": "the ids of a recall's hits (never the query)",
    "model_vectors.model": "the name of a bundled embedding model, set by memoryd",
    "meta.key": "memoryd's own settings (schema version, embedder name)",
    "meta.value": "memoryd's own settings (schema version, embedder name)",
    "schema_migrations.name": "a migration's name",
    "sqlite_sequence.name": "SQLite's own: a table name",
    "atom_fts_config.k": "SQLite FTS5's own configuration",
    "atom_fts_config.v": "SQLite FTS5's own configuration",
    "atom_fts_idx.segid": "SQLite FTS5's own: a segment id",
    "atom_fts_idx.pgno": "SQLite FTS5's own: a page number",
    "atom_fts_vocab.doc": "SQLite FTS5's own: a count",
    "atom_fts_vocab.cnt": "SQLite FTS5's own: a count",
}
_NOT_TEXT_SQLITE = ("INTEGER", "REAL", "BLOB", "NUMERIC", "BOOLEAN")
_NOT_TEXT_PG = (
    "int2",
    "int4",
    "int8",
    "float4",
    "float8",
    "numeric",
    "bool",
    "timestamptz",
    "timestamp",
    "vector",
    "halfvec",
)


def _text_columns(settings: Settings) -> set[str]:
    """`table.column` of every column of the store that can hold text."""
    if settings.db:
        import psycopg

        with psycopg.connect(settings.db, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT c.table_name, c.column_name, c.udt_name FROM information_schema.columns c"
                " JOIN information_schema.tables t USING (table_schema, table_name)"
                " WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'"
            ).fetchall()
        return {f"{t}.{c}" for t, c, udt in rows if udt not in _NOT_TEXT_PG}
    with sqlite3.connect(settings.db_path) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {
            f"{t}.{r[1]}"
            for t in tables
            for r in conn.execute(f"PRAGMA table_info('{t}')")
            if r[2].upper() not in _NOT_TEXT_SQLITE
        }


def test_every_text_column_is_filled_from_a_redacted_input_or_is_not_free_text(
    engine: Engine, settings: Settings
) -> None:
    columns = _text_columns(settings)
    assert {"atoms.content", "events.reason", "sessions.summary", "tokens.label"} <= columns
    classified = REDACTED.keys() | DERIVED.keys() | NOT_FREE_TEXT.keys()
    assert not REDACTED.keys() & (DERIVED.keys() | NOT_FREE_TEXT.keys()) and not DERIVED.keys() & NOT_FREE_TEXT.keys()
    unclassified = sorted(columns - classified)
    assert not unclassified, (
        f"text columns nobody classified: {unclassified}. Fill each from a field declared in engine/inputs.py "
        "(STORED_TEXT or FROM_DISK) and list it in REDACTED, or say why it holds no free text (NOT_FREE_TEXT)"
    )


def test_every_column_source_is_a_declared_field() -> None:
    declared = {f"{m}.{p}" for m, params in STORED_TEXT.items() for p in params}
    declared |= {f"{k}.{f}" for k, fields in FROM_DISK.items() for f in fields}
    sources = {s for fields in REDACTED.values() for s in fields}
    assert sources <= declared, sorted(sources - declared)
    # every declared field that is stored fills some column (judge's text goes to an LLM, a prompt to a file)
    not_a_column = {"judge.new_text", "save_prompt.content", "prompt file.content", "memorize.anchors"}
    assert declared - sources <= not_a_column, sorted(declared - sources - not_a_column)


def test_declared_entries_are_engine_methods_with_those_parameters() -> None:
    for name, fields in STORED_TEXT.items():
        attr = inspect.getattr_static(Engine, name, None)
        assert isinstance(attr, _part), f"STORED_TEXT names {name}, which is no part method of Engine"
        params = inspect.signature(attr.method).parameters
        assert set(fields) <= set(params), f"{name}: no parameter {set(fields) - set(params)}"
        for item, count in fields.values():
            assert item is None or item in LIMITS and (count is None or count in LIMITS), (name, item, count)
    for kind, fields in FROM_DISK.items():
        for item, count in fields.values():
            assert item is None or item in LIMITS and (count is None or count in LIMITS), (kind, item, count)


def _redact_calls(path: Path) -> list[str]:
    found = []
    for node in ast.walk(parse_python(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("redact"):
            found.append(f"{path.name}:{node.lineno} imports {node.module}")
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "redact":
            found.append(f"{path.name}:{node.lineno} calls redact")
    return found


def test_no_engine_part_calls_redact_itself() -> None:
    calls = [c for p in sorted(ENGINE_DIR.glob("*.py")) if p.name != "inputs.py" for c in _redact_calls(p)]
    assert calls == [], "redact through engine/inputs.py (STORED_TEXT, FROM_DISK), not by hand"
    assert _redact_calls(ENGINE_DIR / "inputs.py"), "the one place must still call it"


def test_the_facade_redacts_what_any_surface_passes(engine: Engine) -> None:
    """Positional or keyword, through `update` (a facade method of its own) or `patch`: the same redaction."""
    a = engine.memorize(f"The deploy bot token is {SECRET}", source="user", gate="trusted").atom_id
    assert a and SECRET not in engine.get(a).content
    engine.update(a, tags=[SECRET], title=f"bot {SECRET}", reason=f"rotated {SECRET}")
    engine.patch(a, triggers=[SECRET])
    atom = engine.get(a)
    assert SECRET not in f"{atom.title} {atom.tags} {atom.triggers}" and atom.tags == ["[REDACTED]"]
    assert all(SECRET not in (e.reason or "") for e in engine.history(a))


def test_a_value_over_its_limit_is_left_for_its_part_to_refuse_with_the_usual_message(engine: Engine) -> None:
    """Redaction never runs over an oversized input, and the length the refusal names is the caller's."""
    from memoryd.shared.errors import InvalidInput, Rejected

    long_title = f"{SECRET} " + "x" * 300
    assert redacted(long_title, ("title", None)) == long_title  # passed on as it is
    assert redacted(f"{SECRET}", ("title", None)) == "[REDACTED]"
    assert redacted([SECRET] * 33, ("tag", "tags")) == [SECRET] * 33  # over the count limit
    assert redacted([SECRET, "x" * 65], ("tag", "tags")) == [SECRET, "x" * 65]  # an item over its limit
    assert redacted([SECRET, 3], ("tag", "tags")) == [SECRET, 3]  # not all text: the part says so
    assert redacted(("ok", SECRET), ("tag", "tags")) == ["ok", "[REDACTED]"]
    assert redacted(7, ("title", None)) == 7
    assert redacted("x " * 25_000 + SECRET, (None, None)).endswith("[REDACTED]")  # no limit: always redacted
    with pytest.raises(Rejected, match=f"title is {len(long_title)} characters; the limit is 200"):
        engine.memorize("The deploy runs at noon on weekdays", source="user", title=long_title)
    content = f"token {SECRET} " + "y" * 8000
    with pytest.raises(Rejected, match=f"content is {len(content)} characters; the limit is 8000"):
        engine.memorize(content, source="user")
    reason = f"rotated {SECRET} " + "z" * 2000
    a = engine.memorize("The deploy runs at noon on weekdays", source="user", gate="trusted").atom_id
    assert a
    with pytest.raises(Rejected, match=f"reason is {len(reason)} characters; the limit is 2000"):
        engine.correct(a, "negate", reason)
    with pytest.raises(InvalidInput, match=r"tags\[1\] is 65 characters; the limit is 64"):
        engine.patch(a, tags=[SECRET, "t" * 65])
    # the one difference (docs/DECISIONS.md): a text under its limit that redaction makes longer is measured after
    near = "x" * 183 + " DB_PASSWORD=abcd"  # 200 characters; stored, it would be 206
    assert len(near) == 200
    with pytest.raises(Rejected, match=r"title is 206 characters once its secrets are replaced by \[REDACTED\]; "
                       r"the limit is 200: shorten it"):  # fmt: skip
        engine.memorize("The deploy runs at noon on weekdays", source="user", title=near)


def test_every_limited_field_is_refused_by_its_part_when_over_its_limit(engine: Engine, tmp_path: Path) -> None:
    """A field declared with a limit is passed on unredacted when over it: so its part must refuse it.
    Checked for every single-text field of the write entries (lists: the patch test above)."""
    a = engine.memorize("The deploy runs at noon on weekdays", source="user", gate="trusted").atom_id
    q = engine.memorize("Exports are kept for ninety days", source="user", gate="trusted").atom_id
    assert a and q and engine.govern(q, "quarantine", "check").effect == "applied"
    s = engine.session_start(title="release")
    lines = tmp_path / "notes.jsonl"
    lines.write_text('{"content": "An imported note about the deploy window"}\n', encoding="utf-8")
    calls = {
        "memorize": lambda **kw: engine.memorize(
            **{"content": "The deploy runs at noon on Fridays", "source": "user", **kw}
        ),
        "handoff": lambda **kw: engine.handoff(**{"summary": "Handed off the deploy work", **kw}),
        "correct": lambda **kw: engine.correct(a, "replace", **{"reason": "r", "new_content": "New text here", **kw}),
        "govern": lambda **kw: engine.govern(a, "derive_lesson", **{"reason": "r", "lesson_content": "A lesson", **kw}),
        "restore": lambda **kw: engine.restore(q, **{"reason": "r", **kw}),
        "patch": lambda **kw: engine.patch(a, **{"content": "Patched text here", **kw}),
        "session_start": lambda **kw: engine.session_start(**kw),
        "session_end": lambda **kw: engine.session_end(s.id, **kw),
        "capture_passive": lambda **kw: engine.capture_passive(**{"content": "Captured text", "source": "m", **kw}),
        "judge": lambda **kw: engine.judge(old_atom_id=a, **kw),
        "save_prompt": lambda **kw: engine.save_prompt("p", **kw),
        "request_sensitive_read": lambda **kw: engine.request_sensitive_read(**kw),
        "confirm_anchors": lambda **kw: engine.confirm_anchors(a, **kw),
        "import_jsonl": lambda **kw: engine.import_jsonl(lines, **kw),
        "import_file": lambda **kw: engine.import_file(lines, **kw),
        "observe_transcript": lambda **kw: engine.observe_transcript("missing.jsonl", "s-1", **kw),
    }
    checked = 0
    for name, fields in STORED_TEXT.items():
        for param, (item, count) in fields.items():
            if item is None or count is not None or name not in calls:
                continue
            top = engine.settings.max_content_chars if item == "content" else LIMITS[item][0]
            with pytest.raises(MemorydError, match=rf"is {top + 1} characters; the limit is {top}|at most {top} char"):
                calls[name](**{param: "v" * (top + 1)})
            checked += 1
    assert checked >= 25


def test_read_in_redacts_only_the_declared_fields_of_a_file() -> None:
    fields = {"content": f"a note with {SECRET}", "type": SECRET, "tags": [SECRET]}
    out = read_in("import line", fields)
    assert out == {"content": "a note with [REDACTED]", "type": SECRET, "tags": ["[REDACTED]"]}
    with pytest.raises(KeyError):
        read_in("a kind nobody declared", fields)
