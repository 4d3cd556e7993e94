from __future__ import annotations

from pathlib import Path

import pytest

from memoryd.shared.scope import infer_scope, parse_remote

from .conftest import git, make_repo


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://github.com/acme/widgets.git", ("acme", "widgets")),
        ("https://github.com/acme/widgets", ("acme", "widgets")),
        ("https://user:s3cret@github.com/acme/widgets.git", ("acme", "widgets")),
        ("git@github.com:acme/widgets.git", ("acme", "widgets")),
        ("ssh://git@gitlab.example.com:2222/group/sub/widgets.git", ("group/sub", "widgets")),
        ("git@gitlab.com:group/sub/widgets", ("group/sub", "widgets")),
        ("/srv/git/widgets.git", ("srv/git", "widgets")),
        ("", None),
    ],
)
def test_parse_remote(url: str, expected: tuple[str, str] | None) -> None:
    assert parse_remote(url) == expected


def test_https_and_ssh_remotes_give_the_same_scope(tmp_path: Path) -> None:
    a = infer_scope(make_repo(tmp_path / "a", "https://github.com/acme/widgets.git"))
    b = infer_scope(make_repo(tmp_path / "b", "git@github.com:acme/widgets.git"))
    assert (a.workspace, a.repository) == (b.workspace, b.repository) == ("acme", "widgets")
    assert a.scope_hash == b.scope_hash
    assert a.branch == "main"


def test_subdirectory_resolves_to_git_root(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "w")
    sub = repo / "src" / "pkg"
    sub.mkdir(parents=True)
    assert infer_scope(sub).root == str(repo.resolve())


def test_detached_head(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "w")
    sha = git(repo, "rev-parse", "--short", "HEAD")
    git(repo, "checkout", "-q", "--detach")
    assert infer_scope(repo).branch == f"detached@{sha}"


def test_repo_without_remote_falls_back_to_local(tmp_path: Path) -> None:
    s = infer_scope(make_repo(tmp_path / "lonely", remote=None))
    assert (s.workspace, s.repository) == ("local", "lonely")


def test_non_git_directory_falls_back_to_its_path(tmp_path: Path) -> None:
    one, two = tmp_path / "x" / "notes", tmp_path / "y" / "notes"
    one.mkdir(parents=True)
    two.mkdir(parents=True)
    a, b = infer_scope(one), infer_scope(two)
    assert (a.workspace, a.repository, a.branch) == ("local", "notes", "")
    assert a.scope_hash != b.scope_hash  # same name, different folders


def test_tenant_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORYD_TENANT", "qiankun")
    assert infer_scope(tmp_path).tenant_id == "qiankun"
    assert infer_scope(tmp_path).global_scope().is_global
