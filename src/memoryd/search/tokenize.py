"""Tokenization shared by indexing and querying: Chinese bigrams, English stems, identifiers.

One function, `tokens()`, produces the terms that go into the keyword index and into
queries, so both sides always agree:

- Chinese (Traditional folded to Simplified): overlapping character bigrams, so any
  2-character word such as 連線 matches, plus the lone character of a 1-character run.
- Latin words: lower-cased Snowball (English) stems; stop words dropped in queries. The stemmer
  is PyStemmer's C libstemmer (snowballstemmer hands it out when PyStemmer is installed, a
  dependency; ~0.5 µs a word, bench/stemming.py), one per thread: a stemmer object is not
  thread-safe.
- Identifiers keep their whole form and add their parts: `get_session()` → get_session,
  get, session; `login.py` → login.py, login, py; `PG16` → pg16, pg, 16; `getSession` →
  getsession, get, session.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from functools import lru_cache
from typing import Any

import snowballstemmer

from ..shared.stamps import normalize

__all__ = ["STOPWORDS", "language", "normalize", "term_groups", "to_simplified", "tokens"]

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_SEGMENT = re.compile(rf"[{_CJK}]+|[A-Za-z0-9_][A-Za-z0-9_.\-+#/]*")
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_CJK_RUN = re.compile(rf"[{_CJK}]+")
_CJK_CHAR = re.compile(r"[\u3400-\u9fff]")

STOPWORDS = frozenset(
    """a an and are as at be by for from how i in is it its of on or that the this to was were
    what when where which who why with we our you your do does did not no
    am been being has have had can could would should will shall might must me my he him his
    she her they them their us there here than then so if but about into also just any some
    all each such very s t""".split()
)

_local = threading.local()


def _stem(word: str) -> str:
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = snowballstemmer.stemmer("english")
    return str(stemmer.stemWord(word))


@lru_cache(maxsize=1)
def _t2s() -> Any:  # an opencc.OpenCC (untyped)
    import opencc  # deferred: only needed once Chinese text shows up

    return opencc.OpenCC("t2s")


def to_simplified(text: str) -> str:
    """Fold Traditional Chinese to Simplified so 連線 and 连线 index alike."""
    if not _CJK_RUN.search(text):
        return text
    return str(_t2s().convert(text))


def language(sample: str) -> str:
    """ "en", "zh" or "zh-Hant": the language labels written for this text should be in (CJK under 15%
    of its characters, counted double, is English)."""
    compact = "".join(sample.split())
    if not compact or len(_CJK_CHAR.findall(compact)) * 2 < len(compact) * 0.3:
        return "en"
    return "zh-Hant" if to_simplified(sample) != sample else "zh"


def _latin(word: str, out: list[str], query: bool) -> None:
    word = word.rstrip(".-/+")
    if not word:
        return
    low = word.lower()
    pieces = [p for p in re.split(r"[_.\-/+#]+", word) if p]
    sub: list[str] = []
    for piece in pieces:
        sub.extend(m.lower() for m in _PARTS.findall(piece))
    compound = len(sub) > 1 or any(c in word for c in "_.-/+#")
    if compound:
        out.append(low)
    for part in sub if sub else [low]:
        if (query and part in STOPWORDS) or (compound and len(part) < 2):
            continue
        out.append(part if part.isdigit() else _stem(part))


def tokens(text: str, *, query: bool = False) -> list[str]:
    """Index (or query) terms of a text, in order, duplicates kept."""
    text = to_simplified(unicodedata.normalize("NFKC", text))
    out: list[str] = []
    for m in _SEGMENT.finditer(text):
        seg = m.group(0)
        if _CJK_RUN.fullmatch(seg):
            if len(seg) == 1:
                out.append(seg)
            else:
                out.extend(seg[i : i + 2] for i in range(len(seg) - 1))
        else:
            _latin(seg, out, query)
    return out


def term_groups(text: str, *, query: bool = True) -> list[tuple[str, ...]]:
    """`tokens()` grouped by the word they come from: an identifier's whole form and its parts
    (`billing-exporter` → billing-exporter, bill, export; `PostgreSQL` → postgresql, postgr, sql)
    form one group, each Chinese bigram is a group of its own. Recall counts a group as one unit
    of keyword evidence, so a compound is not counted once per part."""
    text = to_simplified(unicodedata.normalize("NFKC", text))
    out: list[tuple[str, ...]] = []
    for m in _SEGMENT.finditer(text):
        seg = m.group(0)
        if _CJK_RUN.fullmatch(seg):
            out.extend([(seg,)] if len(seg) == 1 else [(seg[i : i + 2],) for i in range(len(seg) - 1)])
        else:
            part: list[str] = []
            _latin(seg, part, query)
            if part:
                out.append(tuple(dict.fromkeys(part)))
    return out
