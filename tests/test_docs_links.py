"""Every relative link of README.md and docs/*.md resolves: the file exists, and a `#fragment` names a heading of it
(GitHub's anchor rules), so moving a section without fixing its links fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]\n]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6} (.+)$", FENCE.sub("", path.read_text(encoding="utf-8")), re.M):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path: Path) -> list[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`\n]*`", "", text)  # inline code is not a link
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]


def broken(path: Path) -> list[str]:
    bad = []
    for target in links(path):
        file, _, fragment = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            bad.append(f"{target}: no such file")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            bad.append(f"{target}: no heading #{fragment} in {dest.name}")
    return bad


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(doc: Path) -> None:
    assert broken(doc) == []


def test_the_check_finds_a_broken_file_and_a_broken_fragment(tmp_path: Path) -> None:
    (tmp_path / "A.md").write_text("# A\n\n## The HTTP transport\n\n```sh\n# not a heading\n```\n", encoding="utf-8")
    doc = tmp_path / "B.md"
    doc.write_text(
        "[ok](A.md#the-http-transport) [gone](C.md) [frag](A.md#not-a-heading) `[code](X.md)` [web](https://x.y/z)\n",
        encoding="utf-8",
    )
    assert broken(doc) == ["C.md: no such file", "A.md#not-a-heading: no heading #not-a-heading in A.md"]


def test_the_readme_links_into_the_manual() -> None:
    targets = {t.partition("#")[0] for t in links(ROOT / "README.md")}
    manual = {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    assert manual <= targets, f"docs not linked from the README: {sorted(manual - targets)}"
