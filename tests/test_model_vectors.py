"""A second vector per memory, of another model (migration 15, issue 35), on both backends: written, read as
cosines for recall's candidates, listed where missing, scrubbed with its atom, carried by a store copy; and the
engine writing it on save and filling it for a store from before (the backfill)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from memoryd.engine import Engine
from memoryd.search.embed import HashEmbedder, MiniLMEnglish, english_embedder
from memoryd.shared.config import Settings
from memoryd.shared.scope import infer_scope
from memoryd.storage import open_store

MODEL = "test-model"


def unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_a_second_vector_is_written_read_scrubbed_and_copied(settings: Settings, repo: Path, tmp_path: Path) -> None:
    with Engine.open(settings, cwd=repo, embedder=HashEmbedder()) as e:
        a = e.memorize("Invoices are stored in PostgreSQL 16.", source="user").atom_id
        b = e.memorize("Deploys go out on Tuesdays.", source="user").atom_id
        store = e.store
        assert sorted(i for i, _ in store.missing_model_vectors(MODEL, limit=10)) == sorted([a, b])
        with store.transaction() as tx:
            tx.set_model_vector(a, MODEL, unit(1, 0, 0))
            tx.set_model_vector(b, MODEL, unit(0, 1, 0))
            tx.set_model_vector(a, MODEL, unit(1, 1, 0))  # written again: replaced, not doubled
        cos = store.model_cosines(MODEL, unit(1, 0, 0), [a, b, "01HZZZZZZZZZZZZZZZZZZZZZZZ"])
        assert set(cos) == {a, b} and abs(cos[a] - 0.7071) < 1e-3 and abs(cos[b]) < 1e-6
        assert store.model_cosines("another-model", unit(1, 0, 0), [a, b]) == {}
        assert store.model_cosines(MODEL, unit(1, 0, 0, 0), [a]) == {}  # a query of another size matches nothing
        assert store.missing_model_vectors(MODEL, limit=10) == []
        assert store.table_counts()["model_vectors"] == 2
        # a store copy carries them (the other backend's copy: SQLite -> a second SQLite file here)
        copy = open_store(Settings(home=tmp_path / "copy", db=None))
        try:
            from memoryd.engine.migrate import migrate_store

            migrate_store(store, copy)
            assert copy.model_cosines(MODEL, unit(1, 0, 0), [a, b]) == cos
        finally:
            copy.close()
        e.govern(a, "tombstone", "test")  # a tombstone takes the vector with the content
        assert store.model_cosines(MODEL, unit(1, 0, 0), [a, b]) == {b: cos[b]}
        assert store.missing_model_vectors(MODEL, limit=10) == []  # nothing left to embed of a scrubbed atom


def test_the_engine_stores_the_english_vector_and_backfills_a_store_without_it(
    settings: Settings, repo: Path, embedder: Any
) -> None:
    english = english_embedder("minilm")
    assert english is not None
    with Engine.open(settings, cwd=repo, embedder=embedder, english=None) as e:  # as before migration 15's writer
        old = [e.memorize(t, source="user").atom_id for t in ("Run `make migrate` before starting the API server.",
                                                              "The cafeteria opens at noon.")]  # fmt: skip
        assert len(e.store.missing_model_vectors(english.name, limit=10)) == 2
    with Engine.open(settings, cwd=repo, embedder=embedder) as e:
        assert e.english is english
        new = e.memorize("Release notes are written in CHANGELOG.md by hand.", source="user").atom_id
        assert [i for i, _ in e.store.missing_model_vectors(english.name, limit=10)] == old  # the new one has it
        events = len(e.store.events())
        assert e.backfill_vectors(batch=1) == 2
        assert e.store.missing_model_vectors(english.name, limit=10) == [] and len(e.store.events()) == events
        q = english.query("how do I get the schema up to date before launching the backend?")
        cos = e.store.model_cosines(english.name, q, [*old, new])
        assert max(cos, key=cos.__getitem__) == old[0]
        hits = e.recall("how do I get the schema up to date before launching the backend?").hits
        assert hits[0].atom.id == old[0] and hits[0].signals["semantic_en"] > 0


def test_the_english_model_ships_inside_the_install() -> None:
    m = MiniLMEnglish()
    v = m.passages(["Run buf generate after editing any .proto file", "The cafeteria opens at noon", ""])
    assert v.shape == (3, 384) and np.allclose(np.linalg.norm(v[:2], axis=1), 1.0, atol=1e-5)
    q = m.query("how are the gRPC stubs regenerated?")
    assert float(v[0] @ q) > float(v[1] @ q) + 0.2
    assert m.passages([]).shape == (0, 384)
    long = m.passages(["word " * 5000])  # truncated at the model's 256 tokens, not an error
    assert long.shape == (1, 384)


def test_engine_parts_keep_to_the_english_setting(settings: Settings, repo: Path, embedder: Any) -> None:
    off = settings.model_copy(update={"english_embedder": "none"})
    with Engine.open(off, cwd=repo, embedder=embedder) as e:
        assert e.english is None and e.term_embedder is not None  # the former English signal instead
        e.memorize("Invoices are stored in PostgreSQL 16.", source="user")
        assert e.store.table_counts()["model_vectors"] == 0
    with Engine(settings, open_store(settings), HashEmbedder(), infer_scope(repo)) as e:
        assert e.english is None
