"""memoryd's markdown export: written (`write_markdown`) and read back (`memoryd-markdown`)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import yaml

from ..shared.models import Atom
from .basic_memory import _frontmatter
from .common import Record

# -- memoryd's own markdown export, read back -----------------------------------------------------------------

_KEEP = ("id", "epistemic", "polarity", "created", "updated", "written")


def _is_memoryd_markdown(folder: Path) -> bool:
    """A folder `write_markdown` wrote: memories/<type>/*.md whose frontmatter has id, epistemic and polarity."""
    first = next(iter(sorted((folder / "memories").glob("*/*.md"))), None) if (folder / "memories").is_dir() else None
    if first is None:
        return False
    meta, _ = _frontmatter(first.read_text(encoding="utf-8", errors="replace"))
    return all(k in meta for k in ("id", "epistemic", "polarity", "scope"))


def _memoryd_markdown(folder: Path) -> Iterator[Record]:
    """Each memory note back as the memory it was: content, type, title, tags, source, scope (by name), and its id,
    timestamps, epistemic and polarity kept (`keep`), so export → import → export gives the same bytes. Entity
    notes are derived (re-extracted from the content) and reported as such."""
    for path in sorted((folder / "memories").rglob("*.md")):
        rel = path.relative_to(folder).as_posix()
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            yield Record({"problem": f"unreadable: {exc}"}, rel)
            continue
        if not text.startswith("---\n") or "\n---\n" not in text[3:]:
            yield Record({"problem": "no frontmatter (--- … ---) at the top of the note"}, rel)
            continue
        head, body = text[4:].split("\n---\n", 1)
        try:
            meta = yaml.safe_load(head) or {}
        except yaml.YAMLError as exc:
            yield Record({"problem": f"frontmatter is not valid YAML: {' '.join(str(exc).split())}"}, rel)
            continue
        lines = body.split("\n")
        if not isinstance(meta, dict) or len(lines) < 4 or lines[0] != "" or not lines[1].startswith("# "):
            yield Record({"problem": "not a memory note of `memoryd export --format markdown` (frontmatter, "
                                     "blank line, # title)"}, rel)  # fmt: skip
            continue
        rest = "\n".join(lines[3:])
        cut = rest.rfind("\n## Related\n\n")
        if cut >= 0 and all(line.startswith("- ") for line in rest[cut + 13 :].strip().split("\n")):
            rest = rest[: cut + 1]
        content = rest[:-1] if rest.endswith("\n") else rest
        aliases = meta.get("aliases") if isinstance(meta.get("aliases"), list) else []
        keep = {k: str(meta[k]) for k in _KEEP if meta.get(k) is not None}
        yield Record({"content": content, "type": meta.get("type"), "title": aliases[0] if aliases else None,
                      "tags": meta.get("tags") or [], "source": meta.get("source"), "scope_name": meta.get("scope"),
                      "keep": keep}, rel)  # fmt: skip
    entities = folder / "entities"
    for _ in sorted(entities.rglob("*.md")) if entities.is_dir() else []:
        yield Record({"not_carried": "entity notes (derived again from the memories' text)"}, "entities")


# -- markdown export ------------------------------------------------------------------------------------------

_UNSAFE = re.compile(r'[\\/:*?"<>|#^\[\]\n\r\t]+')


def _name(text: str, limit: int = 60) -> str:
    """A file name Obsidian can link to: no path or link syntax characters, bounded length."""
    clean = _UNSAFE.sub(" ", " ".join(text.split())).strip(" .")
    return clean[:limit].rstrip(" .") or "untitled"


def entity_label(entity_id: str) -> tuple[str, str]:
    """`entity:<kind>:<name>` → (kind, name)."""
    parts = entity_id.split(":", 2)
    return (parts[1], parts[2]) if len(parts) == 3 else ("other", entity_id)


def write_markdown(atoms: Sequence[Atom], folder: Path) -> dict[str, int]:
    """Write `atoms` (and their entities) as linked notes under `folder`; returns the counts.

    Everything is listed in an order of the memories themselves, never of the store: notes are named (and a
    clashing name numbered) by atom id, an entity note lists its memories by id, a memory note its entities by
    entity id. A store that imported this folder (ids kept, rows in another order) writes the same bytes again.
    """
    folder.mkdir(parents=True, exist_ok=True)
    atoms = sorted(atoms, key=lambda a: a.id)  # ULIDs: creation order, kept by the import
    notes: dict[str, str] = {}  # atom id -> note name
    used: set[str] = set()
    for a in atoms:
        base = f"{_name(a.title or a.content, 50)} ({a.id[-6:]})"
        name, n = base, 2
        while name.lower() in used:
            name, n = f"{base} {n}", n + 1
        used.add(name.lower())
        notes[a.id] = name
    entity_notes: dict[str, str] = {}
    mentions: dict[str, list[str]] = {}
    for a in atoms:
        for e in sorted(a.entities):
            if e not in entity_notes:  # two entities whose names clean to the same text get distinct notes
                kind, label = entity_label(e)
                base = f"{_name(label, 80)} ({_name(kind, 40)})"
                name, n = base, 2
                while name.lower() in used:
                    name, n = f"{base} {n}", n + 1
                used.add(name.lower())
                entity_notes[e] = name
            mentions.setdefault(e, []).append(a.id)
    # Every note's frontmatter `title` is its file name, the text its [[wikilinks]] use: basic-memory (and Obsidian)
    # resolve a link by title or file name, so each link of the export resolves there; the memory's own title
    # stays in `aliases` and the heading.
    for a in atoms:
        meta = {"title": notes[a.id], "id": a.id, "type": a.type, "scope": a.scope.name, "source": a.source, "epistemic": a.epistemic,
                "polarity": a.polarity, "created": a.created_at.isoformat(), "updated": a.updated_at.isoformat(),
                **({"written": a.written_at.isoformat()} if a.written_at else {}),
                "tags": list(a.tags), "aliases": [a.title] if a.title else []}  # fmt: skip
        lines = ["---", yaml.safe_dump(meta, allow_unicode=True, sort_keys=False).rstrip(), "---", "",
                 f"# {a.title or _name(a.content, 80)}", "", a.content, ""]  # fmt: skip
        related = []
        if a.supersedes and a.supersedes in notes:
            related.append(f"- supersedes [[{notes[a.supersedes]}]]")
        if a.superseded_by and a.superseded_by in notes:
            related.append(f"- superseded_by [[{notes[a.superseded_by]}]]")
        related += [f"- mentions [[{entity_notes[e]}]]" for e in sorted(a.entities)]
        if related:
            lines += ["## Related", "", *related, ""]
        path = folder / "memories" / a.type / f"{notes[a.id]}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines), encoding="utf-8")
    for e, name in entity_notes.items():
        kind, label = entity_label(e)
        body = ["---", yaml.safe_dump({"title": name, "entity": e, "kind": kind}, allow_unicode=True, sort_keys=False).rstrip(),
                "---", "", f"# {label}", "", "## Memories", "", *(f"- [[{notes[i]}]]" for i in mentions[e]), ""]  # fmt: skip
        path = folder / "entities" / _name(kind, 40) / f"{name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(body), encoding="utf-8")
    return {"memories": len(notes), "entities": len(entity_notes)}
