"""A folder of basic-memory notes, read with basic-memory's own rules (see the package docstring)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from .common import Record, _title, written_of

_TIMESTAMP_VALUE = r"\d{1,3}:\d{2}(?::\d{2})?(?:[.,]\d{1,3})?"
_TIMESTAMP_CATEGORY = re.compile(rf"^{_TIMESTAMP_VALUE}(?:\s+-\s+{_TIMESTAMP_VALUE})?$")
_LINKS_TO_DIRECTIVE = re.compile(r"\s+#bm:links_to\s*$")
_CATEGORY = re.compile(r"^\[([^\[\]()]+)\]\s+(.+)", re.DOTALL)
_TRAILING_TAGS = re.compile(r"(?:\s+#\S+)+$")
_CATEGORY_TYPES = {"decision": "decision", "preference": "preference", "fact": "fact", "warning": "warning",
                   "playbook": "playbook", "lesson": "lesson", "technique": "playbook", "requirement": "fact"}  # fmt: skip
_BM_FRONTMATTER_KEYS = ("title", "type", "tags")
# When the note was written, most recent first: it becomes each of its memories' `written_at`.
_BM_TIME_KEYS = ("modified", "updated", "updated_at", "date", "created", "created_at")


def _frontmatter(text: str) -> tuple[dict[str, Any], str]:
    if not text.startswith("---"):
        return {}, text
    end = text.find("\n---", 3)
    if end < 0:
        return {}, text
    try:
        meta = yaml.safe_load(text[3:end]) or {}
    except yaml.YAMLError:
        meta = {}
    rest = text[end + 4 :]
    return (meta if isinstance(meta, dict) else {}), rest.split("\n", 1)[1] if "\n" in rest else ""


def _bm_category(content: str) -> re.Match[str] | None:
    """`[category] text`, unless the bracket is a clock value (a transcript timecode) or a task marker."""
    match = _CATEGORY.match(content)
    if not match:
        return None
    category = match.group(1).strip()
    if _TIMESTAMP_CATEGORY.match(category) or (len(category) == 1 and (category in "xX" or not category.isalnum())):
        return None
    return match


def _bm_is_observation(content: str) -> bool:
    content = _LINKS_TO_DIRECTIVE.sub("", content.strip())
    if not content or content.startswith(("[ ]", "[x]", "[-]")):
        return False
    if re.match(r"^\[.*?\]\(.*?\)$", content) or re.match(r"^\[\[.*?\]\]$", content):
        return False
    return bool(_bm_category(content)) or any(part.startswith("#") for part in content.split())


def _bm_observation(content: str) -> tuple[str | None, str, list[str], str | None]:
    """(category, text, hashtags, context) of an observation, as basic-memory's `parse_observation` splits it
    (except that a category's text keeps every line of a multi-line item, where basic-memory keeps the first)."""
    content = _LINKS_TO_DIRECTIVE.sub("", content.strip())
    category = None
    if match := _bm_category(content):
        category, content = match.group(1).strip(), match.group(2).strip()
    elif empty := re.match(r"^\[\]\s+(.+)", content, re.DOTALL):
        content = empty.group(1).strip()
    context = None
    if content.endswith(")") and (start := content.rfind("(")) != -1:
        context, content = content[start + 1 : -1].strip(), content[:start].strip()
    tags = [t for part in content.split() if part.startswith("#") for t in part.split("#") if t]
    return category, content, tags, context


def _bm_relation(content: str) -> tuple[str, str, str | None] | None:
    """(type, target, context) of an explicit relation line, or None (then its links are inline links of prose)."""
    content = content.strip()
    if "[[" not in content or "]]" not in content:
        return None
    before = content.partition("[[")[0].strip()
    if not before:
        return None
    if before[0] in "'\"" and before.endswith(before[0]) and len(before) > 1:
        rel_type = before[1:-1].strip()
    elif any(c.isspace() for c in before):
        return None
    else:
        rel_type = before
    start = content.find("[[")
    end = content.find("]]", start + 2)
    target = content[start + 2 : end].strip()
    if not rel_type or not target:
        return None
    after = content[end + 2 :].strip()
    if not after:
        return rel_type, target, None
    depth = 0
    for i, c in enumerate(after):
        depth += (c == "(") - (c == ")")
        if depth == 0:
            return (rel_type, target, after[1:-1].strip() or None) if after[0] == "(" and i == len(after) - 1 else None
    return None


def _bm_tags(value: Any) -> list[str]:
    """basic-memory's `parse_tags`: a list, or a comma-separated string; a leading `#` is dropped."""
    items = value if isinstance(value, list) else str(value).split(",") if value is not None else []
    return list(dict.fromkeys(t for t in (str(i).strip().lstrip("#") for i in items if i is not None) if t))


_BM_FENCE = re.compile(r"^-{3,}\s*$", re.MULTILINE)  # python-frontmatter's boundary, which basic-memory uses


def _bm_split(text: str) -> tuple[dict[str, Any], str, str | None]:
    """(frontmatter, body, problem) of a note's text: frontmatter that does not parse, or is not a mapping, is
    reported and the note is read without it, as basic-memory does (titled by its file name)."""
    if not text.startswith("---"):
        return {}, text, None
    parts = _BM_FENCE.split(text, 2)
    if len(parts) < 3 or parts[0]:
        return {}, text, "the frontmatter opened by --- on line 1 is never closed; the note is read as plain markdown"
    _, head, body = parts
    body = body.removeprefix("\r").removeprefix("\n")
    try:
        meta = yaml.safe_load(head)
    except yaml.YAMLError as exc:
        why = " ".join(str(exc).split())
        return {}, body, (f"frontmatter is not valid YAML ({why}); the note is read without it, titled by its file "
                          "name")  # fmt: skip
    if meta is None:
        return {}, body, None
    if not isinstance(meta, dict):
        return {}, body, "frontmatter is not a YAML mapping of fields; the note is read without it"
    return meta, body, None


def _bm_text(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return "" if value is None else str(value).strip()


def _basic_memory(folder: Path) -> Iterator[Record]:
    from markdown_it import MarkdownIt

    md = MarkdownIt()
    for path in sorted(p for p in folder.rglob("*.md") if p.is_file() and not any(s.startswith(".") for s in p.parts)):
        rel = path.relative_to(folder).as_posix()
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            yield Record({"problem": f"unreadable: {exc}"}, rel)
            continue
        text = text.removeprefix("\ufeff").replace("\x00", "")
        meta, body, problem = _bm_split(text)
        first = text[: text.rfind(body)].count("\n") + 1 if body else 1  # the file line of the body's first line
        if problem:
            yield Record({"problem": problem}, f"{rel}: frontmatter")
        raw_title = _bm_text(meta.get("title"))
        title = _title(raw_title if raw_title and raw_title != "None" else path.stem)
        tags = _bm_tags(meta.get("tags"))
        note_type = _CATEGORY_TYPES.get(_bm_text(meta.get("type")).lower())
        written, later, bad_time = written_of(meta, _BM_TIME_KEYS)
        if bad_time:  # a note whose time is unusable is refused whole: its memories would be ordered wrongly
            yield Record({"problem": f"frontmatter {bad_time}"}, f"{rel}: frontmatter")
            continue
        dropped = [f"basic-memory frontmatter {k}" for k in meta if k not in (*_BM_FRONTMATTER_KEYS, *_BM_TIME_KEYS)]
        dropped += [f"basic-memory frontmatter {k}" for k in later]
        records: list[Record] = []
        lines = body.split("\n")
        taken: set[int] = set()  # body lines read as observations or relations
        quote, in_item = 0, False
        for token in md.parse(body):
            if token.type in ("blockquote_open", "blockquote_close"):
                quote += 1 if token.type == "blockquote_open" else -1
            elif token.type in ("list_item_open", "list_item_close"):
                in_item = token.type == "list_item_open"
            if token.type != "inline" or token.map is None:
                continue
            origin = f"{rel}:{token.map[0] + first}"
            content = token.content
            relation = _bm_relation(content) if in_item and not _LINKS_TO_DIRECTIVE.search(content) else None
            if relation:
                verb, target, context = relation
                target = target.split("|")[0].strip()
                said = f"{title} {verb.replace('_', ' ')} {target}" + (f" ({context})" if context else "")
                records.append(Record({"content": said, "title": _title(f"{title} → {target}"),
                                       "tags": list(dict.fromkeys([*tags, "relation"])), "source": "basic-memory",
                                       "written_at": written},
                                      origin))  # fmt: skip
            elif not quote and _bm_is_observation(content):
                category, said, hashtags, context = _bm_observation(content)
                if not said:
                    continue
                said = _TRAILING_TAGS.sub("", said).strip() or said  # the tags are kept as tags
                said += f" ({context})" if context else ""
                kind = _CATEGORY_TYPES.get(category.lower()) if category else None
                records.append(Record({"content": said, "title": title, "type": kind,
                                       "tags": list(dict.fromkeys([*tags, *([category] if category else []), *hashtags])),
                                       "source": "basic-memory", "written_at": written}, origin))  # fmt: skip
            else:
                continue
            taken.update(range(*token.map))
        prose = _bm_prose([line for i, line in enumerate(lines) if i not in taken], title)
        if prose:
            records.insert(0, Record({"content": prose, "title": title, "type": note_type, "tags": tags,
                                      "source": "basic-memory", "written_at": written}, rel))  # fmt: skip
        if records and dropped:
            records[0] = Record(records[0].fields, records[0].origin, tuple(dropped))
        elif dropped:
            for kind in dropped:
                yield Record({"not_carried": kind}, rel)
        yield from records


def _bm_prose(lines: list[str], title: str) -> str:
    """The note's prose: its lines that are neither observations nor relations, without the headings left with
    nothing under them (`## Observations`, `## Relations`) and without a top heading that repeats the title."""
    sections: list[tuple[str | None, list[str]]] = [(None, [])]
    fence = ""
    for line in lines:
        stripped = line.strip()
        if fence:
            fence = "" if stripped.startswith(fence) else fence
        elif stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
        elif re.match(r"#{1,6}(\s|$)", stripped):
            sections.append((line, []))
            continue
        sections[-1][1].append(line)
    kept: list[str] = []
    for heading, body in sections:
        if not any(s.strip() for s in body):
            continue
        if heading is not None and not re.fullmatch(r"#\s+" + re.escape(title) + r"\s*#*", heading.strip()):
            kept += [heading, ""]
        kept += [*body, ""]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()
