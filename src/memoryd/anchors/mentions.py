"""Where a memory's text names code, and which of those names the memory is about.

Names are taken wherever people write them: backticked, called (`f()`), dotted (`Table.insert_all`,
`pkg.mod.Class.method`), `module:function`, Go receivers (`(*FlagSet).GetInt`) — "strong" — and plain
words that look like code (snake_case, camelCase, a leading underscore) or stand next to "function",
"method", "class", "type"… or label a sentence (`Parse: …`) — "weak".

A memory is about its subjects, not about everything it mentions: "`close()`: invoke the callbacks
registered with `call_on_close`" is about `close`, and a change of `call_on_close` does not make it
stale. Subjects are:

- the first name of the text;
- a name joined to a subject by nothing but joiners (and, or, commas, slashes, "the", kind words,
  "in <path>"): "`Table.insert_all` and `Table.upsert_all` batch rows";
- the first name of a later sentence or `;` clause, when only joiners come before it there:
  "…; `no_such_thing` is gone".

Every other name is mentioned in passing (after a verb, in a description: "uses `executemany`",
"registered with `call_on_close`") and is not anchored.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

__all__ = ["FILE_SUFFIXES", "KIND_WORDS", "Mention", "mentions", "norm_symbol"]

FILE_SUFFIXES = frozenset(
    "py pyi js mjs cjs jsx ts tsx go rs java kt rb php c h cc cpp hpp cs swift md rst txt json yml yaml toml "
    "ini cfg sql sh html css lock".split()
)
KIND_WORDS = frozenset(
    "function functions method methods class classes func type struct interface constructor property helper "
    "decorator classmethod staticmethod receiver def enum trait callback hook".split()
)
_RECEIVERS = ("self.", "this.", "cls.", "super().")
_BACKTICK = re.compile(r"`([A-Za-z_$][\w$]*(?:(?:\.|::|#)[A-Za-z_$][\w$]*)*)(?:\(\))?`")
# Go receivers, optionally package-qualified: (*FlagSet).GetInt, pflag.(*FlagSet).GetInt, (FlagSet).Name
_RECEIVER = re.compile(r"(?<![\w.])((?:[A-Za-z_]\w*\.)*)\(\s*\*?\s*([A-Za-z_]\w*)\s*\)\s*\.([A-Za-z_]\w*)")
# module:function, as entry points and pytest ids write it: sqlite_utils.db:Table.insert
_MODULE_FN = re.compile(r"(?<![\w./:-])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*):([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?![\w/])")
_DOTTED = re.compile(r"(?<![\w$.:-])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?![\w/-])")
_WORD = re.compile(r"(?<![\w/$.:*-])([A-Za-z_]\w*)(?![\w/-]|\.\w)")
_STOP = frozenset("the a an this that its it in of on to for and or is are was be by with from as at new old".split())
_JOINERS = frozenset("and or nor the a an both either its their plus in of on vs versus also".split()) | KIND_WORDS
_GAP_TOKEN = re.compile(r"[\w./-]+|[^\s\w]")
_CLAUSE = re.compile(r"[;!?]\s|\.(?:\s|$)|\n")


class Mention(NamedTuple):
    name: str  # as a symbol: `Table.insert_all`, `pflag.FlagSet.GetInt`
    start: int  # where in the text (-1: an entity the text does not spell out)
    end: int
    strong: bool  # written as code
    subject: bool = True  # what the memory is about (False: mentioned in passing)


def norm_symbol(name: str) -> str:
    name = name.strip().removesuffix("()").replace("::", ".").replace("#", ".")
    for prefix in _RECEIVERS:
        if name.startswith(prefix):
            name = name[len(prefix) :]
    return name


def _looks_like_code(name: str) -> bool:
    """snake_case, camelCase, CapWords with two humps, dotted, a leading underscore."""
    core = name.lstrip("_")
    return (name != core or "_" in core.strip("_") or "." in name or re.search(r"[a-z0-9][A-Z]", core) is not None
            or re.search(r"[A-Z][a-z]+[A-Z]", core) is not None)  # fmt: skip


def _found(text: str) -> list[Mention]:
    """Every name the text writes, strong ones first (as anchoring reports them), with where it stands."""
    strong: list[Mention] = []
    masked = text

    def blank(start: int, end: int) -> None:
        nonlocal masked
        masked = masked[:start] + " " * (end - start) + masked[end:]

    for m in _RECEIVER.finditer(text):
        strong.append(Mention(f"{m.group(1)}{m.group(2)}.{m.group(3)}", m.start(), m.end(), True))
        blank(m.start(), m.end())
    for m in _MODULE_FN.finditer(masked):
        if m.group(1).lower() in ("http", "https", "file", "ssh", "git", "mailto"):
            continue
        strong.append(Mention(f"{m.group(1)}.{m.group(2)}", m.start(), m.end(), True))
        blank(m.start(), m.end())
    for m in _BACKTICK.finditer(masked):
        strong.append(Mention(norm_symbol(m.group(1)), m.start(), m.end(), True))
    for m in _DOTTED.finditer(masked):
        name = norm_symbol(m.group(1))
        if (name.rsplit(".", 1)[-1].lower() not in FILE_SUFFIXES and name.split(".")[0].lower() not in ("e", "i", "www")
                and name.rsplit(".", 1)[-1] not in ("com", "org", "net", "io", "dev")):  # fmt: skip
            strong.append(Mention(name, m.start(), m.end(), True))
    masked = _DOTTED.sub(lambda m: " " * len(m.group(0)), masked)
    weak: list[Mention] = []
    words = list(_WORD.finditer(masked))
    names = {m.name for m in strong}
    for i, m in enumerate(words):
        w = m.group(1)
        near = {x.group(1).lower() for x in words[max(0, i - 1) : i + 2] if x is not m}
        if w.lower() in KIND_WORDS or w.lower() in _STOP or w in names:
            continue
        label = masked[m.end() : m.end() + 2] in (": ", ":\n") or masked[m.end() :] == ":"  # `Parse: …`
        if _looks_like_code(w) or near & KIND_WORDS or label:
            weak.append(Mention(w, m.start(), m.end(), False))
    return strong + weak


def _joined(gap: str) -> bool:
    """Whether the text between two names only joins them ("and", ",", "the … method in db.py")."""
    for token in _GAP_TOKEN.findall(gap):
        if token.lower() in _JOINERS or token in ",/&()`'\"*+":
            continue
        if "/" in token or token.rsplit(".", 1)[-1].lower() in FILE_SUFFIXES:
            continue  # a path: where the name is
        return False
    return True


def mentions(text: str, functions: list[str] | tuple[str, ...] = (),
             is_name: Callable[[Mention], bool] = lambda m: True) -> list[Mention]:  # fmt: skip
    """The names the text writes (and `functions`, names an entity extractor found in it), each marked
    subject or in passing (the module docstring), strong ones first, each name once.

    `is_name(mention)` says whether a weak mention names code here at all (a prose word that names
    nothing cannot be the subject that makes the names after it passing); it is asked only of weak
    mentions that would otherwise be subjects."""
    found = _found(text)
    for name in functions:  # entities: where the text spells them, else taken as subjects
        if any(m.name == name for m in found):
            continue
        at = text.find(name.rsplit(".", 1)[-1])
        found.insert(0, Mention(name, at, at + len(name.rsplit(".", 1)[-1]) if at >= 0 else -1, True))
    subjects: set[tuple[int, int]] = set()
    last: tuple[int, int] | None = None
    for m in sorted((m for m in found if m.start >= 0), key=lambda m: (m.start, not m.strong)):
        span = (m.start, m.end)
        if span in subjects:
            continue
        clause = max((c.end() for c in _CLAUSE.finditer(text, 0, m.start)), default=0)
        if last is None or _joined(text[last[1] : m.start]) or (clause >= last[1] and _joined(text[clause : m.start])):
            if m.strong or is_name(m):
                subjects.add(span)
                last = span
    out: dict[str, Mention] = {}
    for m in found:
        subject = m.start < 0 or (m.start, m.end) in subjects
        if m.name not in out or (subject and not out[m.name].subject):
            out[m.name] = m._replace(subject=subject)
    return list(out.values())
