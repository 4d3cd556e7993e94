"""How a new memory relates to an older one, and a stable topic key for a memory.

`judge()` asks the LLM when one is configured and falls back to `judge_heuristic()`, whose
rules are deterministic and explainable. Both texts are first folded: NFKC, case-folded,
English contractions expanded (don't → do not), Traditional/Taiwan Chinese to mainland
Simplified (資料庫 → 数据库, 換成 → 换成), so every Chinese cue and glossary word below is
written once, in Simplified. Signals:

- *terms*: ``tokens(query=True)`` of each text minus filler (use, 用, 是 …); J = Jaccard of the
  two term sets, C = share of OLD's terms found in NEW;
- *entities*: `extract_entities` ids, compared case-insensitively;
- *polarity*: `classify`; a conditional text is classified again without its condition
  ("Never squash when merging" → negative);
- *replacement cue*: a `REPLACEMENT_CUES` (or weaker `WEAK_CUES`: now, 现在, from X to Y,
  从…到) match in NEW that OLD does not also have.

Rules, first match wins:
1. Same text once punctuation, spacing, case and script are ignored → duplicates.
2. No shared entity, no shared term and no two technologies of one kind (`CATEGORIES`: React
   and Solid are both frontend frameworks) → unrelated.
3. A replacement cue in NEW → supersedes (auto band only with a strong cue and a shared
   entity or J ≥ 0.3).
4. Opposite polarity (negative vs affirmative) on the same topic (J ≥ 0.3, or a shared entity
   and half of one side's terms found in the other) → contradicts.
5. J ≥ 0.8 → duplicates (a rewording); NEW's terms nearly all in OLD → duplicates (adds nothing).
6. C ≥ 0.6 and NEW adds terms → refines.
7. J ≥ 0.2 or a shared kind of technology, and each side names a technology or a version the
   other lacks → supersedes, review band only ("We use Vitest" vs "We use Jest", "PostgreSQL 17"
   vs "PostgreSQL 16": usually a replacement whose cue was left out).
8. Otherwise unrelated (they share a word or a name but say different things).
Confidence grows with the overlap; `band()` turns it into auto / review / ignore.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter
from functools import lru_cache
from typing import Any, Literal, NamedTuple, get_args

from pydantic import BaseModel, Field

from memoryd.search.tokenize import tokens
from memoryd.text.classify import classify
from memoryd.text.entities import extract_entities
from memoryd.text.llm import LLM, LLMError

__all__ = [
    "JUDGE_SYSTEM",
    "TOPIC_SYSTEM",
    "Judgment",
    "JudgmentType",
    "band",
    "judge",
    "heuristic_topic_key",
    "judge_heuristic",
    "suggest_topic_key",
]

JudgmentType = Literal["supersedes", "contradicts", "duplicates", "refines", "unrelated"]
TYPES = get_args(JudgmentType)

# ---------------------------------------------------------------- cue tables (folded text)

# Traditional forms (換成, 遷移到, 替換, 棄用, 現在用, 從…到 …) fold to these before matching.
# Strong: the text says that something changed (a tool, a version, an owner, a limit), not only what is.
REPLACEMENT_CUES = (
    r"改用|改成|改为|改由|换成|换用|换到|切到|切换到|切换成|迁移到|迁到|不再|取代|替换|替代|弃用|废弃|"
    r"现在用|现在改|现在是|升级到|升到|降级到|调整为|调整到|提高到|降低到|接手|已移除|已删除|已下线|已经下线|"
    r"\b(?:switch(?:ed|ing)? (?:to|from|over)|mov(?:e|ed|ing) (?:to|from|over)|migrat(?:e|ed|ing) (?:to|from|off)|"
    r"(?:upgrad|downgrad|bump|rais|lower|increas|decreas|reduc|resiz|chang|renam|mov|switch|migrat)e?d\b"
    r"(?:[^.;:,]|[.:](?=\w)){0,60}?\b(?:to|from)|"
    r"no longer|(?:is|are) (?:gone|now)|(?:was|were|has been|have been) (?:retired|removed|deleted|dropped|"
    r"replaced|decommissioned|sunset)|took over|taken over|(?:since|as of) (?:(?:jan|feb|mar|apr|may|jun|jul|aug|sep|"
    r"oct|nov|dec)[a-z]*\.? )?(?:\d{4}|v?\d+\.\d+)|not\b[^.;:,]{0,40}?\bany ?more|replac(?:e|ed|es|ing)|deprecated|"
    r"now us(?:e|es|ing))\b"
)
# Weaker: often a replacement, sometimes just a time ("from 9 to 5", "now also …") or an alternative
# ("use X instead of Y": a directive, not a change).
WEAK_CUES = r"现在|从[^，,。；;]{1,40}?(?:到|换|切|迁|改)|\b(?:now|instead of|from [\w.+#-]+ to)\b"
FILLER = frozenset("use us be has have 用 使用 是 有 的 了 在 也 都 就 和".split())
# Polarity is judged separately, so negators do not count as topic terms.
POLARITY_TERMS = re.compile(r"^(?:never|alway|.*[不没].*)$")
CONTRACTIONS = {"can't": "cannot", "won't": "will not", "n't": " not"}
CONDITION = (
    r"\b(?:when|whenever|if|unless|once|as long as)\b[^,;.]*|"
    r"(?:如果|若|只要|一旦|除非|当)[^，,。；;]*|[^，,。；;]*(?:的时候|的话)"
)

# Technologies that fill the same slot, so one can replace another ("现在用 Solid" vs "前端用 React").
CATEGORIES = {
    kind.strip(): set(members.lower().split(","))
    for kind, _, members in (
        group.partition(":")
        for group in """
    frontend framework:React,Vue,Angular,Svelte,Solid,Next.js,Nuxt,SvelteKit,Remix,Astro,jQuery,htmx;
    database:PostgreSQL,MySQL,SQLite,MongoDB,MariaDB,Cassandra,DynamoDB,CockroachDB,Supabase,Firebase;
    search engine:Elasticsearch,OpenSearch,Meilisearch,Typesense,Qdrant,Milvus,pgvector,FAISS;
    test runner:pytest,unittest,Jest,Vitest,Mocha,Cypress,Playwright,Selenium,Puppeteer;
    backend framework:Django,FastAPI,Flask,Starlette,Express,NestJS,Rails,Laravel,Spring Boot,Gin,Axum;
    package manager:pip,Poetry,uv,Conda,npm,pnpm,Yarn,Bun; cache:Redis,Memcached; type checker:mypy,Pyright;
    task queue:Celery,RQ,Dramatiq,Kafka,RabbitMQ; linter:Ruff,Flake8,pylint,isort,ESLint,Prettier;
    CI service:GitHub Actions,GitLab CI,Jenkins,CircleCI,Travis CI; bundler:Vite,webpack,esbuild,Rollup;
    hosting:Heroku,Vercel,Netlify,AWS,GCP,Azure,Cloudflare,AWS Lambda; auth provider:Auth0,Keycloak;
    ORM:SQLAlchemy,Prisma,TypeORM,Sequelize,Drizzle,Hibernate; state library:Redux,Zustand;
    CSS framework:Tailwind CSS,Bootstrap""".split(";")
    )
}

# zh → English words for topic keys, "zh:en" pairs; Traditional/Taiwan forms (資料庫, 連線池, 快取,
# 日誌, 權限, 測試 …) fold to the Simplified key first.
GLOSSARY = dict(
    pair.split(":")
    for pair in """
    前端:frontend 后端:backend 数据库:database 部署:deploy 测试:testing 单测:testing 连接池:connection-pool
    决策:decision 迁移:migration 切换:migration 缓存:cache 日志:logging 权限:auth 鉴权:auth 认证:auth
    登录:login 配置:config 环境变量:env-vars 依赖:dependencies 包管理:packaging 版本:version 发布:release
    构建:build 接口:api 监控:monitoring 告警:alerting 性能:performance 安全:security 备份:backup
    限流:rate-limit 队列:queue 索引:index 事务:transaction 分支:branch 合并:merge 提交:commit
    代码审查:code-review 代码检查:lint 文档:docs 格式:format 错误:errors 重试:retry 超时:timeout
    并发:concurrency 线程:threads 容器:container 服务器:server 密钥:secrets 会话:session 搜索:search
    向量:vector 状态管理:state-management 路由:routing 样式:styling 组件:components 脚本:scripts
    定时任务:cron 生产环境:production 预发:staging 钩子:hooks""".split()
)
# English words folded onto one key word, so "switched"/"migrated" key like 切换/迁移.
EN_KEY_WORDS = dict(
    pair.split(":")
    for pair in """
    switch:migration switched:migration migrate:migration migrated:migration moved:migration
    replaced:migration decided:decision tests:testing test:testing logs:logging deploys:deploy
    deployed:deploy deployment:deploy caching:cache authentication:auth permissions:auth""".split()
)
EN_STOP = frozenset(
    """a an and are as at be been by can do does for from has have how i if in into is it its of
    on or our should that the their then there these this to too use used uses using via was we
    were what when where which who will with you your must never always only also not no all any
    now new old just more most run runs make set get they them than so but each every one two
    don doesn isn aren per instead longer after before follow follows loaded goes lives""".split()
)

# What a change changes rather than what it is about: numbers, versions, sizes, durations (`_VALUE`), and the
# stems of month, weekday and time-of-day words (a date in a note is no subject).
VALUE_WORDS = frozenset(
    """januari februari march april may june juli august septemb octob novemb decemb jan feb mar apr jun jul aug
    sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday pm""".split()
)
# The write path applies a cue's judgment (auto band) only for the same subject: NEW holds this share of
# OLD's subject terms with this Jaccard, or a word both name is followed by another number or version
# and NEW holds this smaller share (bench/supersede.py, leave-one-repository-out).
SUPERSEDE_JACCARD = 0.2
SUPERSEDE_COVER = 0.35
SUPERSEDE_SWAP_COVER = 0.2
# Below the auto band: a cue about a related subject is a supersession for review, one about a subject that
# only shares a word is ignored.
RELATED_COVER = 0.2
RELATED_JACCARD = 0.15

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CUE = re.compile(REPLACEMENT_CUES, re.ASCII)
_WEAK_CUE = re.compile(WEAK_CUES, re.ASCII)
_CONDITION = re.compile(CONDITION, re.ASCII)
_HAS_CJK = re.compile(f"[{_CJK}]")
_GLOSSARY = re.compile("|".join(sorted(GLOSSARY, key=len, reverse=True)))
_EN_WORD = re.compile(r"[a-z][a-z0-9]+")
_KEY = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+){0,4}")
_QUESTION = re.compile(r"[^.!?。！？\n]*[?？]")
_VALUE = re.compile(r"v?\d[\d.,:]*[a-z]{0,3}")
# a word, a few linking words, then a number or version: "kotlin is on 1.9.24", "minsdk stays at 24", "ruby 3.4.1"
_KEYED = re.compile(
    r"([a-z][\w.+#-]*[a-z0-9])(?:\s+(?:is|are|was|on|at|to|now|stays|pinned|set|version|v))*"
    r"\s+v?(\d+(?:\.\d+)*)\b"
)


class Judgment(BaseModel):
    type: JudgmentType
    confidence: float = Field(ge=0.0, le=1.0)
    reason: str
    source: Literal["llm", "heuristic"]


def band(confidence: float, type: str) -> Literal["auto", "review", "ignore"]:
    """What to do with a judgment: apply it, ask a human, or drop it."""
    if type == "unrelated":
        return "ignore"
    return "auto" if confidence >= 0.85 else "review" if confidence >= 0.5 else "ignore"


# ---------------------------------------------------------------- signals


@lru_cache(maxsize=1)
def _tw2sp() -> Any:
    import opencc

    return opencc.OpenCC("tw2sp")


@lru_cache(maxsize=4096)
def _fold(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold().replace("\u2019", "'")
    for short, long in CONTRACTIONS.items():
        text = text.replace(short, long)
    if _HAS_CJK.search(text):
        text = str(_tw2sp().convert(text))
    return " ".join(text.split())


def _canon(text: str) -> str:  # for "same text": no punctuation, no spaces
    return re.sub(r"[\W_]+", "", _fold(text))


def _terms(text: str) -> set[str]:
    return {t for t in _ordered(text) if t not in FILLER and not POLARITY_TERMS.match(t)}


@lru_cache(maxsize=4096)
def _ordered(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(tokens(_fold(text), query=True)))


def _phrases(text: str, terms: set[str], limit: int = 3) -> str:
    """Some of `terms` in text order, with overlapping Chinese bigrams joined back (连接, 接池 → 连接池)."""
    out: list[str] = []
    prev = ""
    for t in _ordered(text):
        if t not in terms:
            prev = ""
            continue
        if prev and len(t) == 2 and _HAS_CJK.match(t) and prev[-1] == t[0]:
            out[-1] += t[1]  # the next bigram of the same Chinese run
        else:
            out.append(t)
        prev = t
    return ", ".join(out[:limit])


def _entities(text: str) -> dict[str, str]:
    return {e.id.lower(): e.name for e in extract_entities(text)}


@lru_cache(maxsize=4096)
def _polarity(text: str) -> str:
    polarity = classify(text).polarity
    if polarity == "conditional":
        rest = _CONDITION.sub(" ", _fold(text)).strip(" ,;.，。；")
        polarity = classify(rest).polarity if rest else polarity
    return polarity


def _cues(text: str, pattern: re.Pattern[str]) -> set[str]:
    return {m.group() for m in pattern.finditer(_fold(text))}


def _categories(entities: dict[str, str]) -> set[str]:
    names = {name.lower() for name in entities.values()}
    return {kind for kind, members in CATEGORIES.items() if names & members}


def _names(ids: set[str], names: dict[str, str]) -> str:
    return ", ".join(sorted(names[i] for i in ids))


# ---------------------------------------------------------------- judgment


class _Side(NamedTuple):
    """What the rules read of one text (cached: the write path judges one text against several)."""

    terms: frozenset[str]
    subject: frozenset[str]  # terms that are no value: no number, version, date word
    entities: dict[str, str]
    strong: frozenset[str]  # replacement cues
    weak: frozenset[str]
    keyed: frozenset[tuple[str, str]]  # (a word, the number or version right after it): "kotlin" → "2.1.10"


@lru_cache(maxsize=4096)
def _side(text: str) -> _Side:
    terms = _terms(text)
    folded = _fold(text)
    keyed = frozenset((m.group(1), m.group(2)) for m in _KEYED.finditer(folded) if m.group(1) not in EN_STOP)
    said = _QUESTION.sub(" ", text)  # a question announces no change ("any more paintings coming up?")
    return _Side(frozenset(terms), frozenset(t for t in terms if not _is_value(t)), _entities(text),
                 frozenset(_cues(said, _CUE)), frozenset(_cues(said, _WEAK_CUE)), keyed)  # fmt: skip


def _is_value(term: str) -> bool:
    """A number, a version, a size or duration ("16", "1.84", "30s", "v2"), a month or time-of-day word: what a
    change changes, not what it is about."""
    return bool(_VALUE.fullmatch(term)) or term in VALUE_WORDS


def judge_heuristic(new_text: str, old_text: str) -> Judgment:
    """Judge NEW against OLD by the rules in the module docstring."""

    def result(type_: JudgmentType, confidence: float, reason: str) -> Judgment:
        return Judgment(
            type=type_, confidence=round(min(max(confidence, 0.0), 1.0), 2), reason=reason, source="heuristic"
        )

    if _canon(new_text) == _canon(old_text):
        return result("duplicates", 0.97, "Same text once punctuation, spacing, case and script are ignored.")
    new, old = _side(new_text), _side(old_text)
    new_t, old_t, new_e, old_e = set(new.terms), set(old.terms), new.entities, old.entities
    shared_t, shared_e = new_t & old_t, set(new_e) & set(old_e)
    jac = len(shared_t) / len(new_t | old_t) if new_t | old_t else 0.0
    cover_old = len(shared_t) / len(old_t) if old_t else 0.0
    cover_new = len(shared_t) / len(new_t) if new_t else 0.0
    # the subject: the same measures without values (a version or a limit is what changes)
    shared_s = new.subject & old.subject
    jac_s = len(shared_s) / len(new.subject | old.subject) if new.subject | old.subject else 0.0
    cover_s = len(shared_s) / len(old.subject) if old.subject else 0.0
    shared_c = _categories(new_e) & _categories(old_e)
    # two different technologies of one kind (React here, Solid there): one may have replaced the other
    swap_c = _categories({k: v for k, v in new_e.items() if k not in old_e}) & _categories(
        {k: v for k, v in old_e.items() if k not in new_e}
    )
    overlap = f"Jaccard {jac:.2f}" + (f", shared {_names(shared_e, new_e)}" if shared_e else "")
    overlap += f", both name a {sorted(shared_c)[0]}" if shared_c and not shared_e else ""
    if not shared_t and not shared_e and not shared_c:
        return result("unrelated", 0.9, "No shared entity, kind of technology or topic term.")

    strong_cues = new.strong - old.strong
    cues = strong_cues or new.weak - old.weak
    if cues:
        # Auto only for a strong cue about the same subject: most of OLD's subject again (a short OLD is
        # covered whole), or a value of a word both name changed (Kotlin 1.9.24 → Kotlin 2.1.10).
        swapped = _swapped(new, old, shared_s)
        same = (jac_s >= SUPERSEDE_JACCARD and cover_s >= SUPERSEDE_COVER) or (
            bool(swapped) and cover_s >= SUPERSEDE_SWAP_COVER)  # fmt: skip
        # nothing named in common, and each names other code (get_session() here, retry_with_backoff() there): the
        # words they share are the generic ones, not the subject
        same = same and not (not shared_e and _code_swap(new_e, old_e))
        conf = 0.6 + 0.1 * bool(strong_cues) + 0.15 * same + 0.05 * bool(set(new_e) - set(old_e))
        cue = sorted(cues)[0]
        what = f"same subject ({overlap}, {cover_s:.0%} of the old subject" + (f", {swapped}" if swapped else "")
        if not same:
            # a change of something related (review), or of something else that shares a word (ignore)
            related = cover_s >= RELATED_COVER or jac_s >= RELATED_JACCARD or bool(swap_c)
            conf = min(conf, 0.75) if related else 0.45
            what = f"{'related topic' if related else 'hardly the same subject'} ({overlap}, {cover_s:.0%} of the old subject"
        return result("supersedes", conf, f"Replacement cue {cue!r} in the new one, {what}).")

    same_topic = jac >= 0.3 or (bool(shared_e) and max(cover_new, cover_old) >= 0.5)
    if same_topic and {_polarity(new_text), _polarity(old_text)} == {"affirmative", "negative"}:
        conf = 0.6 + 0.3 * min(1.0, jac / 0.6) + 0.05 * bool(shared_e)
        neg = "new" if _polarity(new_text) == "negative" else "old"
        why = f"Opposite polarity (the {neg} one is negated) on the same topic, no replacement cue"
        return result("contradicts", conf, f"{why} ({overlap}).")

    # Different values (3 retries vs 5, port 9096 vs 9092) make two statements, however alike the words; so do
    # two different words in one place (billing vs scheduler, React vs Flutter): a rewording that only adds
    # or drops words is a restatement (auto), one that swaps a word is one for a person (review).
    values_differ = bool({t for t in new_t ^ old_t if _is_value(t)})
    if jac >= 0.8 and not values_differ:
        moved = _moved(new_text, old_text)
        if moved:
            return result("duplicates", 0.7, f"Near-identical terms ({overlap}) but {moved}.")
        return result("duplicates", 0.85 + 0.5 * (jac - 0.8), f"Near-identical terms ({overlap}).")
    if cover_new >= 0.8 and len(new_t) < len(old_t):
        return result("duplicates", 0.6, f"The new memory adds nothing the old one lacks ({overlap}).")
    if cover_old >= 0.6 and new_t - old_t:
        why = f"Holds {cover_old:.0%} of the old memory's terms and adds {_phrases(new_text, new_t - old_t)}"
        return result("refines", 0.6 + 0.3 * cover_old, f"{why} ({overlap}).")

    swap = _swap(new_t - old_t, old_t - new_t, new_e, old_e)
    if (jac >= 0.2 or swap_c) and swap:
        # another technology of the same kind is worth a person's look; another number or name alone is as
        # often a different thing (staging vs production, two workers): below the review band
        conf = 0.55 if swap_c else 0.45
        return result("supersedes", conf, f"Same topic ({overlap}) with {swap}, but no replacement cue.")
    return result("unrelated", 0.6, f"Some overlap ({overlap}) but different statements.")


def _moved(new_text: str, old_text: str) -> str | None:
    """What two texts of the same words changed all the same: a word of the subject said in one place where
    the other says another (billing vs scheduler; counted, so a word both also use elsewhere does not hide the
    swap: "the search service reads auth/login.py" for "the auth service reads auth/login.py"), or two named
    things in the other order ("Kafka instead of Prometheus" for "Prometheus instead of Kafka"). None for a
    plain rewording."""
    new_f, old_f = _fold(new_text), _fold(old_text)
    new_c, old_c = _subject_counts(new_f), _subject_counts(old_f)
    more, fewer = new_c - old_c, old_c - new_c
    if more and fewer:
        return f"{_phrases(new_text, set(more), 2)} for {_phrases(old_text, set(fewer), 2)} in one place"
    new_e, old_e = _entities(new_text), _entities(old_text)
    both = [k for k in new_e if k in old_e]
    if len(both) >= 2:
        order_new = sorted(both, key=lambda k: new_f.find(new_e[k].casefold()))
        order_old = sorted(both, key=lambda k: old_f.find(old_e[k].casefold()))
        if order_new != order_old:
            return f"{', '.join(new_e[k] for k in order_new)} named in another order"
    return None


def _subject_counts(folded: str) -> Counter[str]:
    """`_Side.subject` with how often each word is said (of a folded text)."""
    return Counter(t for t in tokens(folded, query=True)
                   if t not in FILLER and not POLARITY_TERMS.match(t) and not _is_value(t))  # fmt: skip


def _code_swap(new_e: dict[str, str], old_e: dict[str, str]) -> bool:
    """Each side names a function or a file the other does not."""
    for kind in ("function", "file"):
        mine = {i for i in new_e if i.split(":")[1] == kind}
        theirs = {i for i in old_e if i.split(":")[1] == kind}
        if mine and theirs and not mine & theirs:
            return True
    return False


def _swapped(new: _Side, old: _Side, shared: frozenset[str]) -> str:
    """'kotlin 1.9.24 → 2.1.10' when a word both name is followed by another number or version in NEW."""
    old_values: dict[str, set[str]] = {}
    for word, value in old.keyed:
        old_values.setdefault(word, set()).add(value)
    for word, value in sorted(new.keyed):
        stem = next(iter(tokens(word, query=True)), word)
        if (word in shared or stem in shared) and word in old_values and value not in old_values[word]:
            return f"{word} {sorted(old_values[word])[0]} → {value}"
    return ""


def _swap(new_only: set[str], old_only: set[str], new_e: dict[str, str], old_e: dict[str, str]) -> str:
    """'X in place of Y' when each side has a technology (or a version number) the other lacks."""
    if (e_new := set(new_e) - set(old_e)) and (e_old := set(old_e) - set(new_e)):
        return f"{_names(e_new, new_e)} in place of {_names(e_old, old_e)}"
    new_n, old_n = ({t for t in terms if t[0].isdigit()} for terms in (new_only, old_only))
    if new_n and old_n:
        return f"{', '.join(sorted(new_n))} in place of {', '.join(sorted(old_n))}"
    return ""


JUDGE_SYSTEM = """You compare two memories an AI coding agent saved about one software project.
OLD was saved earlier, NEW just now. Decide how NEW relates to OLD:
- "supersedes": NEW replaces OLD - a later decision or state of the same thing
  (switched, migrated, no longer, now uses ...).
- "contradicts": same subject, NEW says the opposite of OLD, with no sign that anything changed.
- "duplicates": the same meaning, possibly worded differently or in another language or script.
- "refines": same subject, NEW adds detail to OLD or narrows it, without replacing it.
- "unrelated": different subjects (mentioning the same technology is not enough). Two memories worded
  alike about a different environment (staging / production), service, worker, queue, client, file or
  owner are unrelated: both stay true.
Answer with one JSON object only:
{"type": "<one of the five>", "confidence": <number 0..1>,
 "reason": "<one or two sentences naming the words that decided it>"}"""

TOPIC_SYSTEM = """Give a topic key for a memory an AI coding agent saved about a software project.
The key names the subject (technologies, component, concern), not the wording, so that memories
about the same subject get the same key. Lower-case ASCII kebab-case, English, 1 to 5 words,
e.g. "frontend-react-solid-migration" or "database-connection-pool".
Answer with one JSON object only: {"topic_key": "<key>"}"""


def _from_llm(answer: dict[str, Any]) -> Judgment | None:
    type_, conf, reason = answer.get("type"), answer.get("confidence"), answer.get("reason")
    if type_ not in TYPES or isinstance(conf, bool) or not isinstance(conf, int | float):
        return None
    reason = reason.strip() if isinstance(reason, str) and reason.strip() else "The LLM gave no reason."
    return Judgment(type=type_, confidence=min(max(float(conf), 0.0), 1.0), reason=reason, source="llm")


def judge(new_text: str, old_text: str, *, llm: LLM | None) -> Judgment:
    """The LLM's judgment when one is given and answers sensibly, else the heuristic's."""
    if llm is None:
        return judge_heuristic(new_text, old_text)
    try:
        answer = llm.complete_json(JUDGE_SYSTEM, f"OLD: {old_text}\nNEW: {new_text}", max_tokens=300)
        judgment = _from_llm(answer)
        note = f"{llm.name} answered an unusable judgment"
    except Exception as exc:  # any LLM failure degrades to the heuristic, never fails the write
        detail = str(exc) if isinstance(exc, LLMError) else f"{llm.name} failed: {type(exc).__name__}: {exc}"
        judgment, note = None, detail[:200].rstrip(".")
    if judgment is not None:
        return judgment
    fallback = judge_heuristic(new_text, old_text)
    return fallback.model_copy(update={"reason": f"{fallback.reason} [LLM fallback: {note}.]"})


# ---------------------------------------------------------------- topic keys


def _slug(text: str) -> str:
    return "-".join(_EN_WORD.findall(text.lower().replace("+", "p").replace("#", "sharp")))


def _key_words(content: str) -> list[str]:
    """Key words in three tiers: technologies and files, glossary words, other English words."""
    folded = _fold(content)
    tiers: list[list[tuple[int, str]]] = [[], [], []]
    masked = folded
    # The leading "» " lifts the sentence-start guard: "React → Solid" names React here.
    for e in extract_entities("» " + content):
        if e.kind in ("library", "file"):
            name = e.name.rsplit("/", 1)[-1].rsplit(".", 1)[0] if e.kind == "file" else e.name
            pos = folded.find(e.name.lower())
            tiers[0].append((pos if pos >= 0 else len(folded), _slug(name)))
            masked = masked.replace(e.name.lower(), " " * len(e.name))
    tiers[1] += [(m.start(), GLOSSARY[m.group()]) for m in _GLOSSARY.finditer(masked)]
    for m in _EN_WORD.finditer(masked):
        word = m.group()
        if word in EN_KEY_WORDS:
            tiers[1].append((m.start(), EN_KEY_WORDS[word]))
        elif word not in EN_STOP and len(word) > 2 and not word.isdigit():
            tiers[2].append((m.start(), word))
    words: list[str] = []
    for tier in tiers:
        for _, part in sorted(tier):
            if part and part.rstrip("s") not in {w.rstrip("s") for w in words}:
                words.append(part)
    return words


def heuristic_topic_key(content: str) -> str:
    """Up to 5 words from `_key_words`; a short hash of the text when none is found."""
    key: list[str] = []
    for part in _key_words(content):
        if len(key) + len(part.split("-")) <= 5:
            key += part.split("-")
    if not key:
        return "topic-" + hashlib.sha1(_canon(content).encode()).hexdigest()[:6]
    return "-".join(key)


def suggest_topic_key(content: str, *, llm: LLM | None) -> tuple[str, Literal["llm", "heuristic"]]:
    """A kebab-case ASCII topic key (≤ 5 words) and who chose it."""
    if llm is not None:
        try:
            key = llm.complete_json(TOPIC_SYSTEM, content, max_tokens=60).get("topic_key")
        except Exception:  # fall back below
            key = None
        if isinstance(key, str) and _KEY.fullmatch(key.strip().lower()):
            return key.strip().lower(), "llm"
    return heuristic_topic_key(content), "heuristic"
