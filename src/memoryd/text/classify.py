"""Epistemic status and polarity of a memory, by transparent cue rules.

The text is NFKC-folded, lower-cased and (if it has CJK) converted Traditional → Simplified,
so every Chinese cue below is written once, in Simplified. It is then cut into clauses at
punctuation and at connectives (if / unless / when / because / but / 而不是 / 否则 …), and each
clause gets a role:

- ``cond``: introduces a condition (if, unless, when, as long as, once, 如果, 若, 要是, 只要,
  一旦, 除非, 万一, 当…时, …时, …的话). Embedded "if" (check if, not sure if), concessive
  "even if" and narrative "when I ran …" are not conditions.
- ``sub``: reason, purpose, concession, time or short framing (because, to avoid, before,
  even if, in CI, 因为, 为了, 不管, 即使, 在 … ,).
- ``main``: everything else. The *scope* is the main clauses (all clauses if there are none).

Epistemic, first match wins:
1. ``possible`` — a hedge (maybe, might, probably, I think, it should, 可能, 也许, 好像, 应该是,
   不确定 …) in the scope, or the text is a question. A hedge outranks a rule on purpose:
   "we might need to always pin numpy" is a guess about a rule, and must not be enforced as
   one. Hedges inside a condition or reason ("if the build might fail, always …") don't count.
2. ``necessary`` — a rule cue in the scope: must, shall, may not, required, need(s), have to,
   can only, should (not after it/this/that), a clause-initial imperative (Always/Never/Don't/
   Use/Run …), "we always/never", 必须, 一定要, 务必, 不得, 禁止, 严禁, 不可以, 不准, 只能, 需要,
   一律, 都要, 不要, 别, 不能, clause-initial 请/记得/避免 …. English "can't"/"cannot" is left
   out because it usually states a capability ("SQLite can't …"), not a rule; Chinese bare
   instructions ("先问 abble 再动手") carry no marker and stay ``actual``.
3. ``actual`` otherwise (facts, decisions, preferences).

Polarity: ``conditional`` if any clause is a condition (or "otherwise"/否则 appears); else
``negative`` if the first main clause holds a negation (not, n't, never, no, 不, 没, 无法, 未,
别, 勿, 禁止, 严禁, prohibitive 避免 …); else ``affirmative``. Only the first main clause counts,
so "用 PostgreSQL，不用 MongoDB" is affirmative with a negated alternative. Words that merely
contain a negator (不错, 不断, 不过, 不同, 不足, 不确定, 没错, 别名, not only, nothing but, don't
forget …) are neutralised first.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

__all__ = ["Classification", "Epistemic", "Polarity", "classify"]

Epistemic = Literal["actual", "necessary", "possible"]
Polarity = Literal["affirmative", "negative", "conditional"]

# ---------------------------------------------------------------- cue tables (Simplified zh)

# 别 as "don't": clause-initial or after an adverb/subject; elsewhere it is part of a word
# (类别, 型别, 别名 …).
IMPERATIVE_BIE = r"(?:^|千万|可|请|你|您|就|也|都|先|最好|还是|我们)别"
HEDGE_EN = (
    r"maybe|might|perhaps|probably|possibly|likely|unlikely|apparently|presumably|seems?|"
    r"seemingly|appears? to|i (?:don't |do not )?think|i believe|i guess|i suspect|i assume|"
    r"guess|suspect|not sure|unsure|not certain|uncertain|unclear|unverified|unconfirmed|"
    r"to be confirmed|tbd|tbc|wonder|could(?!n't| not)|may(?! not)|(?:it|this|that|there) should"
)
HEDGE_ZH = (
    r"(?<![尽不])可能(?!的话)|也许|或许|大概|好像|似乎|猜|不确定|不太确定|待确认|未确认|有待|"
    r"不清楚|应该(?:是|会|已|有|没|不会)|我(?:不)?(?:觉得|认为)|估计|怀疑|说不定|恐怕|貌似|"
    r"看起来|看来|感觉|疑似|推测|据说"
)
RULE_EN = (
    r"must|mustn't|shall|may not|required|mandatory|forbidden|prohibited|banned|not allowed|"
    r"under no circumstances|at all times|make sure|be sure to|remember to|can only|only be|"
    r"(?<!n't )(?<!not )(?<!no )needs?(?! not)|(?<!n't )(?<!not )(?:have|has) to|"
    r"(?<!it )(?<!this )(?<!that )(?<!there )should|(?:we|you|i) (?:always|never)"
)
RULE_ZH = (
    r"必须|必需|一定要|务必|(?<!不)不得(?!不)|不得不|禁止|严禁|不可以|不可(?!能|或缺)|不准|不许|"
    r"只能|(?<![不无])需要|切勿|勿|千万|一律|统一(?:用|使用|采用)|(?<!要)不要|(?<!能)不能|"
    r"应该(?!是|会|已|有|没|不会)|应当|[就还都也]得(?!到|出|知)|[都也]要|才能|确保|别忘|"
    rf"{IMPERATIVE_BIE}|(?:要|应|请|尽量|务必)避免|(?:我们|你们?|我)\s*(?:always|never)\b"
)
# Clause-initial forms that make a rule out of a bare instruction: markers, then base verbs.
IMPERATIVE_MARK = r"always|never|don't|do not|please|be sure|make sure"
IMPERATIVE_EN = (
    r"avoid|ensure|stop|use|run|keep|call|add|put|write|install|regenerate|rebuild|rerun|re-run|"
    r"clear|reset|rotate|notify|review|annotate|mock|"
    r"import|store|make|remember|check|wrap|pin|follow|rebase|squash|bump|restart|ask|treat|"
    r"configure|enable|disable|prefix|place|verify|validate|delete|remove|rename|move|commit|"
    r"push|merge|deploy|wait|roll|set|read|update|document"
)
IMPERATIVE_ZH = r"请|记得|避免|不要|别|切勿|勿"
# A verb that is really a noun here ("Commit messages follow …", "Set of …").
NOT_IMPERATIVE = r"\s+(?:messages?|logs?|time|of|is|are|was|were)\b"

NEG_EN = r"\b(?:not|never|no|none|nobody|nothing|neither|nor|cannot|forbidden|prohibited|banned)\b|n't\b"
NEG_EN_INITIAL = r"(?:avoid|stop|refrain)\b"
NEG_ZH = rf"不|没|无法|无需|无须|未|{IMPERATIVE_BIE}|勿|禁止|严禁|并非|绝非|甭|(?:^|要|应|请|尽量|务必)避免"
# Phrases that contain a negator without negating the clause.
NOT_NEGATION_EN = (
    r"not only|not just|nothing but|nothing else (?:than|but)|none other than|no matter|"
    r"whether or not|not sure|not certain|not yet sure|no doubt|(?:don't|do not|never) forget|\bno-\w+|"
    r"no (?:more|less|fewer|later|earlier|sooner) than"
)
NOT_NEGATION_ZH = (
    "不错 不断 不过 不同 不少 不久 不仅 不只 不但 不管 不论 不然 不足 不一样 不一致 不稳定 不安全 "
    "不小心 不如 不便 不明 不幸 不料 不一定 说不定 不确定 不太确定 不清楚 不得不 不可或缺 不时 要不然 有没有 "
    "是不是 能不能 会不会 要不要 可不可以 好不好 对不对 没错 别忘了 别忘记 别忘 不要忘记 不要忘了 "
    "无论 未来 未确认 未知 特别 区别 分别 级别 类别 识别 告别 个别 差别 性别 别人 别的 别名 别处"
).split()

COND_EN_INITIAL = r"(?:only )?if|unless|whenever|when|as long as|in case|provided|assuming|once|in the event"
COND_ZH = r"如果|如若|若(?!干)|假如|假若|倘若|假使|(?<![主需只重想就])要是|只要|一旦|除非|万一|的话|的时候"
COND_ZH_INITIAL = r"当(?![然前时初地下天年作成做中])|如需|如有|如遇|如要"
OTHERWISE = r"\botherwise\b|否则|不然"
# "时" ends a "when …" clause unless it is part of one of these words.
SHI_WORDS = set(
    "时间 时区 时候 时钟 时长 时效 时刻 时序 时机 时代 时常 时而 时段 时期 时限 时态 时光 及时 同时 当时 "
    "临时 实时 准时 定时 超时 逾时 小时 暂时 有时 随时 按时 届时 过时 平时 何时 此时 那时 这时 计时 "
    "耗时 延时 历时 一时 即时 适时 旧时 每时".split()
)
# "when I ran …": a past event, not a condition.
NARRATIVE_WHEN = r"when (?:the )?\w+ (?:\w+ed|was|were|ran|did|had|got|broke|went|made|saw|came|took)\b"
EMBEDDING_VERBS = {
    "check",
    "see",
    "verify",
    "ask",
    "know",
    "sure",
    "wonder",
    "test",
    "determine",
    "unsure",
    "unclear",
    "whether",
    "decide",
    "remember",
    "as",
}

SUB_EN_INITIAL = (
    r"because|since|although|though|even if|even though|even when|so that|"
    r"before|after|while|due to"
)
# Purpose ("To avoid conflicts, …") and framing ("In CI, …") only lead into a main clause;
# as the last clause they are the statement itself ("…, to be confirmed").
PURPOSE_EN = r"(?:in order )?to\b"
SUB_ZH_INITIAL = r"因为|由于|虽然|虽|尽管|即使|就算|哪怕|为了|不管|无论|不论|为避免"
FRAMING_EN = r"(?:in|on|at|for|during|within|per)\b"
FRAMING_ZH = r"在|对于|关于|针对|根据|按照"
LABEL = r"^(?:note|nb|update|todo|fyi|important|warning|reminder|注意|备注|重要|提醒|更新)\s*:\s*"
LEADING_CONNECTIVE = (
    r"(?:and|but|so|then|also|however|therefore|otherwise|而且|并且|但是|但|可是|所以|因此|否则|"
    r"要不然|不然|那就|那么|就|则|而)\s*"
)

PUNCTUATION = r"[,;:!?、。\n()\[\]]+|\.(?=\s|$)|\s[-—]+\s|—"
CONNECTIVE = (
    r"\b(?:but|unless|even if|only if|if|whenever|when|because|since|although|though|so that|"
    r"as long as|in case|provided|before|after|while|rather than|instead of|and not|otherwise)\b"
    r"|而不是|而非|但是|(?<!不)但(?!是)|可是|否则|(?<!要)不然"
)

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"


@dataclass(frozen=True)
class Classification:
    epistemic: Epistemic
    polarity: Polarity


def _c(pattern: str) -> re.Pattern[str]:
    # ASCII word boundaries, so "maybe是" and "用PostgreSQL" still split at the CJK character.
    return re.compile(pattern, re.ASCII)


_PUNCT_SPLIT = _c(PUNCTUATION)
_CONNECTIVE = _c(CONNECTIVE)
_HEDGE = _c(rf"\b(?:{HEDGE_EN})\b|{HEDGE_ZH}")
_RULE = _c(rf"\b(?:{RULE_EN})\b|{RULE_ZH}")
_IMPERATIVE = _c(rf"^(?:(?:{IMPERATIVE_MARK})\b|(?:{IMPERATIVE_EN})\b(?!{NOT_IMPERATIVE})|{IMPERATIVE_ZH})")
_NEG = _c(rf"{NEG_EN}|{NEG_ZH}")
_NEG_INITIAL = _c(rf"^{NEG_EN_INITIAL}")
_NOT_NEG = _c(rf"{NOT_NEGATION_EN}|" + "|".join(sorted(NOT_NEGATION_ZH, key=len, reverse=True)))
_COND_INITIAL = _c(rf"^(?:(?:{COND_EN_INITIAL})\b|{COND_ZH_INITIAL})")
_COND_ZH = _c(COND_ZH)
_OTHERWISE = _c(OTHERWISE)
_NARRATIVE_WHEN = _c(rf"^{NARRATIVE_WHEN}")
_SUB_INITIAL = _c(rf"^(?:(?:{SUB_EN_INITIAL})\b|{SUB_ZH_INITIAL})")
_FRAMING = _c(rf"^(?:{FRAMING_EN}|{FRAMING_ZH})")
_PURPOSE = _c(rf"^{PURPOSE_EN}")
_LABEL = _c(LABEL)
_LEADING = _c(rf"^(?:{LEADING_CONNECTIVE})+")
_QUESTION = _c(r"\?(?:\s|$)|[吗呢]\s*[?]?\s*$|^(?:should|shall|do|does|is|are|can) (?:we|i|it|you)\b")
_HAS_CJK = _c(f"[{_CJK}]")


@lru_cache(maxsize=1)
def _t2s() -> Any:
    import opencc  # deferred: only needed once Chinese text shows up

    return opencc.OpenCC("t2s")


def _normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower().replace("\u2019", "'")
    if _HAS_CJK.search(text):
        text = str(_t2s().convert(text))
    return _LABEL.sub("", " ".join(text.split()))


def _is_connective(text: str, m: re.Match[str]) -> bool:
    word = m.group()
    before = text[: m.start()].split()
    prev = before[-1] if before else ""
    if word in {"if", "when"} and prev in EMBEDDING_VERBS:
        return False
    if word == "but" and (prev in {"nothing", "all"} or text[m.end() :].startswith(" also")):
        return False
    return m.start() > 0


def _clauses(text: str) -> list[str]:
    out: list[str] = []
    for piece in _PUNCT_SPLIT.split(text):
        cuts = [m.start() for m in _CONNECTIVE.finditer(piece) if _is_connective(piece, m)]
        bounds = [0, *cuts, len(piece)]
        out += [piece[a:b].strip() for a, b in zip(bounds, bounds[1:], strict=False)]
    return [c for c in out if c]


def _has_shi_condition(clause: str) -> bool:
    return any(
        ch == "时" and i > 0 and clause[i - 1 : i + 1] not in SHI_WORDS and clause[i : i + 2] not in SHI_WORDS
        for i, ch in enumerate(clause)
    )


def _role(clause: str, is_last: bool) -> str:
    c = _LEADING.sub("", clause)
    if _NARRATIVE_WHEN.match(c):
        return "sub"
    if _COND_INITIAL.match(c) or _COND_ZH.search(c) or _has_shi_condition(c):
        return "cond"
    if _SUB_INITIAL.match(c):
        return "sub"
    if is_last:
        return "main"
    short = len(c.split()) <= 4 if not _HAS_CJK.search(c) else len(c) <= 12
    if _PURPOSE.match(c) or (_FRAMING.match(c) and short):
        return "sub"
    return "main"


def _is_rule(clause: str) -> bool:
    return bool(_RULE.search(clause) or _IMPERATIVE.match(_LEADING.sub("", clause)))


def _is_negated(clause: str) -> bool:
    c = _NOT_NEG.sub(" ", _LEADING.sub("", clause)).strip()
    return bool(_NEG.search(c) or _NEG_INITIAL.match(c))


def classify(text: str) -> Classification:
    """Classify one memory statement; see the module docstring for the rules."""
    t = _normalise(text)
    clauses = _clauses(t) or [t]
    roles = [_role(c, i == len(clauses) - 1) for i, c in enumerate(clauses)]
    main = [c for c, r in zip(clauses, roles, strict=True) if r == "main"]
    scope = main or clauses

    epistemic: Epistemic = "actual"
    if _QUESTION.search(t) or any(_HEDGE.search(c) for c in scope):
        epistemic = "possible"
    elif any(_is_rule(c) for c in scope):
        epistemic = "necessary"

    polarity: Polarity = "affirmative"
    if "cond" in roles or _OTHERWISE.search(t):
        polarity = "conditional"
    elif _is_negated(main[0] if main else clauses[0]):
        polarity = "negative"
    return Classification(epistemic, polarity)
