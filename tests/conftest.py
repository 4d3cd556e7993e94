"""Shared fixtures: a real SQLite store in a temp dir, a real git checkout, the real model."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from memoryd.config import Settings
from memoryd.engine import Engine
from memoryd.search.embed import E5Embedder


def git(cwd: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True)
    return out.stdout.strip()


def make_repo(path: Path, remote: str | None = "git@github.com:acme/widgets.git", branch: str = "main") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", branch)
    git(path, "config", "user.email", "t@example.com")
    git(path, "config", "user.name", "t")
    (path / "README").write_text("x\n")
    git(path, "add", "README")
    git(path, "commit", "-q", "-m", "init")
    if remote:
        git(path, "remote", "add", "origin", remote)
    return path


@pytest.fixture(scope="session")
def embedder() -> E5Embedder:
    """The bundled multilingual-e5-small, loaded once for the whole run."""
    return E5Embedder()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "widgets")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home")


@pytest.fixture
def engine(settings: Settings, repo: Path, embedder: E5Embedder) -> Iterator[Engine]:
    with Engine.open(settings, cwd=repo, embedder=embedder) as e:
        yield e
