"""The vector index: exact search, the HNSW graph on big stores, and its file across restarts.

Real vectors are not needed to check the index's bookkeeping; random unit vectors in a few
clusters are, with a small `ann_min` so the graph is built from a few hundred rows.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from memoryd import Engine
from memoryd.search.embed import HashEmbedder
from memoryd.search.vector import VectorIndex
from memoryd.shared.config import Settings

DIM = 32


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.normal(size=(n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _fill(index: VectorIndex, vectors: np.ndarray, scopes: list[str]) -> None:
    index.add((i + 1, i + 1, f"a{i}", scopes[i % len(scopes)], v) for i, v in enumerate(vectors))


def _exact(vectors: np.ndarray, q: np.ndarray, rows: list[int], k: int) -> list[str]:
    sims = vectors[rows] @ q
    return [f"a{rows[j]}" for j in np.argsort(-sims)[:k]]


def test_exact_search_respects_scopes_and_removals() -> None:
    rng = np.random.default_rng(1)
    vectors = _unit(rng, 300)
    index = VectorIndex()
    _fill(index, vectors, ["s1", "s2", "s3"])
    q = vectors[7]
    # all scopes (full product, masked) and one scope of three (product over its rows only)
    assert [i for i, _ in index.search(q, scope_hashes=["s1", "s2", "s3"], k=5)] == _exact(
        vectors, q, list(range(300)), 5
    )
    s2_rows = [i for i in range(300) if i % 3 == 1]
    hits = index.search(q, scope_hashes=["s2"], k=5)
    assert [i for i, _ in hits] == _exact(vectors, q, s2_rows, 5)
    assert all(abs(c - float(vectors[int(i[1:])] @ q)) < 1e-5 for i, c in hits)
    index.remove("a7", key=8, seq=301)
    assert "a7" not in [i for i, _ in index.search(q, scope_hashes=["s1", "s2", "s3"], k=5)]
    assert index.search(q, scope_hashes=["nowhere"], k=5) == []
    assert len(index.search(q, scope_hashes=["s2"], k=1000)) == 100 - 1  # a7 (i % 3 == 1) was in s2
    assert len(index) == 299


def test_graph_is_built_in_background_and_proposes_the_exact_neighbours() -> None:
    rng = np.random.default_rng(2)
    vectors = _unit(rng, 600)
    index = VectorIndex(ann_min=100)
    _fill(index, vectors, ["s"])
    assert not index.ann_ready
    index.maybe_build()
    assert index.wait_ready(60)
    import memoryd.search.vector as vector_module

    old = vector_module.EXACT_MAX
    vector_module.EXACT_MAX = 10  # route this small store's searches through the graph
    try:
        overlap = []
        for j in range(20):
            q = vectors[j * 13]
            got = index.search(q, scope_hashes=["s"], k=10)
            want = _exact(vectors, q, list(range(600)), 10)
            overlap.append(len({i for i, _ in got} & set(want)))
            # cosines of graph hits are exact, not the graph's int8 approximation
            assert all(abs(c - float(vectors[int(i[1:])] @ q)) < 1e-5 for i, c in got)
        assert sum(overlap) / len(overlap) >= 9.0
        # changes after the build reach the graph: a removed atom is never proposed again
        index.remove("a0", key=1, seq=601)
        assert "a0" not in [i for i, _ in index.search(vectors[0], scope_hashes=["s"], k=10)]
    finally:
        vector_module.EXACT_MAX = old


def _engine(home: Path, project: Path, ann_min: int) -> Engine:
    return Engine.open(Settings(home=home, ann_min=ann_min), cwd=project, embedder=HashEmbedder())


def _dirs(tmp_path: Path) -> tuple[Path, Path]:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    return home, project


def _filled(home: Path, project: Path, n: int, ann_min: int) -> Engine:
    eng = _engine(home, project, ann_min=ann_min)
    for text in _texts(n):
        assert eng.memorize(text, gate="trusted").effect == "applied"
    return eng


def _texts(n: int, offset: int = 0) -> list[str]:
    topics = ["postgres pool size", "redis cache ttl", "deploy with helm", "pytest fixtures", "login token"]
    return [f"Decision {i + offset}: the {topics[i % 5]} is set to {i + offset} for service s{i % 7}" for i in range(n)]


def test_graph_file_survives_restarts_and_catches_up_with_writes(tmp_path: Path) -> None:
    home, project = _dirs(tmp_path)
    eng = _engine(home, project, ann_min=50)
    first_id = None
    for text in _texts(120):
        result = eng.memorize(text, gate="trusted")
        assert result.effect == "applied"
        first_id = first_id or result.atom_id
    eng.store.warm()
    assert eng.store._vectors.wait_ready(60)
    eng.close()
    graph = home / "memoryd.db.ann.usearch"
    meta = json.loads((home / "memoryd.db.ann.usearch.json").read_text())
    assert graph.exists() and meta["count"] == 120

    # Another process (here: another engine on the same file) writes and deletes while the
    # first is gone; the next open loads the file and catches up without a rebuild.
    other = _engine(home, project, ann_min=10_000)  # writes only: it never searches, so never loads the graph
    written = [other.memorize(text, gate="trusted").atom_id for text in _texts(30, offset=1000)]
    other.delete(written[5])
    other.delete(first_id)  # an atom the saved graph holds
    other.close()
    eng = _engine(home, project, ann_min=50)
    eng.store.warm()
    index = eng.store._vectors
    assert index.ann_ready and index._building is None  # loaded, not rebuilt
    assert len(index._ann) == 120 + 30 - 2  # 30 new; two deleted (one of them reconciled away)
    hits = eng.recall("Decision 1010: the postgres pool size is set to 1010").hits
    assert hits and "1010" in hits[0].atom.content
    eng.close()


def test_damaged_or_foreign_graph_file_is_rebuilt_not_trusted(tmp_path: Path) -> None:
    home, project = _dirs(tmp_path)
    eng = _filled(home, project, 80, ann_min=50)
    eng.store.warm()
    assert eng.store._vectors.wait_ready(60)
    eng.close()
    graph = home / "memoryd.db.ann.usearch"
    graph.write_bytes(b"not a graph" * 100)  # e.g. a torn copy
    eng = _engine(home, project, ann_min=50)
    eng.store.warm()
    assert eng.store._vectors.wait_ready(60)  # rebuilt from the database
    assert len(eng.store._vectors._ann) == 80
    eng.close()

    # A graph claiming changes the database never had (restored older database) is dropped.
    meta_path = home / "memoryd.db.ann.usearch.json"
    meta = json.loads(meta_path.read_text())
    meta["vec_seq"] = 10**9
    meta_path.write_text(json.dumps(meta))
    eng = _engine(home, project, ann_min=50)
    eng.store.warm()
    assert eng.store._vectors.wait_ready(60)
    assert eng.store._vectors._ann_mark < 10**9
    eng.close()


def test_keyword_candidates_on_a_big_store_stay_bounded_and_relevant(tmp_path: Path) -> None:
    """Above the postings budget the newest postings of the rarest terms are ranked."""
    import memoryd.search.keywords as base_module

    home, project = _dirs(tmp_path)
    eng = _filled(home, project, 200, ann_min=10_000)
    rare = eng.memorize("The helm chart for billing pins replicaCount to three", gate="trusted").atom_id
    old = base_module.KEYWORD_POSTINGS_BUDGET
    base_module.KEYWORD_POSTINGS_BUDGET = 20  # force the big-store path on this small store
    try:
        statements: list[str] = []
        eng.store.tracer = lambda sql, params: statements.append(sql)
        hits = eng.recall("billing helm replicaCount").hits
        assert hits[0].atom.id == rare
        fts = [s for s in statements if "MATCH" in s]
        assert fts and all("ORDER BY rowid DESC LIMIT" in s for s in fts)  # no bm25 over every match
    finally:
        base_module.KEYWORD_POSTINGS_BUDGET = old
        eng.store.tracer = None
    eng.close()


def test_ann_min_setting_is_validated() -> None:
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        Settings(ann_min=0)


def test_graph_file_is_ignored_when_parameters_change(tmp_path: Path) -> None:
    path = tmp_path / "x.ann.usearch"
    rng = np.random.default_rng(3)
    index = VectorIndex(ann_path=path, ann_min=10)
    _fill(index, _unit(rng, 50), ["s"])
    index.maybe_build()
    assert index.wait_ready(60) and path.exists()
    meta = json.loads(path.with_name(path.name + ".json").read_text())
    meta["params"]["dtype"] = "f16"
    path.with_name(path.name + ".json").write_text(json.dumps(meta))
    assert VectorIndex(ann_path=path).load() is None


class _TinyEmbedder:
    """A second model with another vector size (as after switching MEMORYD_EMBEDDER)."""

    name, dim, cosine_floor, cosine_ceil = "tiny", 8, 0.0, 1.0

    def passages(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i, len(t) % self.dim] = 1.0
        return out

    def query(self, text: str) -> np.ndarray:
        return self.passages([text])[0]


def test_vectors_of_another_model_are_skipped_not_fatal(tmp_path: Path) -> None:
    home, project = _dirs(tmp_path)
    with _engine(home, project, ann_min=10_000) as old:
        old.memorize("The billing service retries payments three times", gate="trusted")
    with Engine.open(Settings(home=home), cwd=project, embedder=_TinyEmbedder()) as eng:  # type: ignore[arg-type]
        eng.memorize("The search service caches queries for ten minutes", gate="trusted")
        hits = eng.recall("billing service retries payments").hits  # old vector: keyword signal only
        assert hits and hits[0].atom.content.startswith("The billing service") and hits[0].signals["semantic"] == 0
        assert eng.recall("search service caches").hits[0].atom.content.startswith("The search service")


def test_a_big_scope_has_a_tighter_keyword_budget(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """Above KEYWORD_BIG_SCOPE_DOCS documents in the scopes searched, the budget is KEYWORD_BIG_SCOPE_BUDGET
    (issue 27: each matching row is read to be scored); below, every term within the usual budget."""
    import memoryd.search.keywords as kw

    df = {"billing": 100, "helm": 900, "the": 1000}
    assert kw.selective_terms(["the", "helm", "billing"], df, docs=kw.KEYWORD_BIG_SCOPE_DOCS) == (
        ["the", "helm", "billing"], False)  # fmt: skip
    assert kw.selective_terms(["the", "helm", "billing"], df, docs=kw.KEYWORD_BIG_SCOPE_DOCS + 1) == (
        ["billing", "helm"], True)  # fmt: skip
    for text in _texts(60):
        engine.memorize(text, gate="trusted")
    rare = engine.memorize("The helm chart for billing pins replicaCount to three", gate="trusted").atom_id
    scope = [engine.scope.scope_hash]
    terms = ["billing", "helm", "replicacount", "the", "service"]
    stats = engine.store.term_stats(terms, scope_hashes=scope)
    present = [t for t in terms if stats[1][t]]
    assert stats[0] == 61 and sum(stats[1].values()) > 5
    monkeypatch.setattr(kw, "KEYWORD_BIG_SCOPE_BUDGET", 5)
    monkeypatch.setattr(kw, "KEYWORD_BIG_SCOPE_DOCS", 61)  # not above: every term
    assert kw.selective_terms(terms, stats[1], stats[0]) == (present, False)
    monkeypatch.setattr(kw, "KEYWORD_BIG_SCOPE_DOCS", 60)  # a big scope: the rarest terms within 5 postings
    chosen, cut = kw.selective_terms(terms, stats[1], stats[0])
    assert cut and chosen[0] in ("billing", "helm", "replicacount") and sum(stats[1][t] for t in chosen) <= 5
    ids = engine.store.keyword_candidates(terms, scope_hashes=scope, statuses=["active"], limit=5, stats=stats)
    assert ids[0] == rare  # the rare, fitting memory still wins on both backends


def test_budgeted_keyword_candidates_on_both_backends(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same bounded keyword path on SQLite and PostgreSQL: the rare, fitting memory wins."""
    import memoryd.search.keywords as base_module

    for text in _texts(60):
        engine.memorize(text, gate="trusted")
    rare = engine.memorize("The helm chart for billing pins replicaCount to three", gate="trusted").atom_id
    monkeypatch.setattr(base_module, "KEYWORD_POSTINGS_BUDGET", 5)
    assert base_module.selective_terms(["billing", "helm", "the"], {"billing": 1, "helm": 13, "the": 61}) == (
        ["billing"], True)  # fmt: skip
    ids = engine.store.keyword_candidates(
        ["billing", "helm", "replicacount", "the"], scope_hashes=[engine.scope.scope_hash], statuses=["active"], limit=5
    )
    assert ids[0] == rare
    assert engine.recall("billing helm replicaCount").hits[0].atom.id == rare
