"""Secret redaction for the write path: replace credentials with [REDACTED], keep their context.

Three kinds of evidence, generalising by family rather than by example:
- format: a prefix or shape only that kind of token has (`secret_rules.PREFIX_RULES`, the families
  of gitleaks' rule set and detect-secrets' plugins), each regex run only when its keyword occurs;
- context: a secret word or a provider name (`twilio`, `密钥`, `api key` …), an assignment (`=`,
  `:`, `is`, `是` …), then a value that looks random (length, character classes, entropy);
- assignments: `key=value` pairs whose key names a secret (`DB_PASSWORD=…`, `--token …`), the
  value running to its end (a Django `SECRET_KEY=a&b` keeps no tail).

Whether a value found there is a secret or a name, reference or placeholder: `secret_values`.

Known limitation: natural-language descriptions ("the password is my dog's name", "用我生日当密码")
and bare high-entropy strings with no telling prefix or context are not detected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, lru_cache

from ..shared.limits import REDACTED
from .secret_rules import PREFIX_RULES, PROVIDERS, SECRET_WORDS
from .secret_structure import FAMILIES
from .secret_values import SECRET_KEY_QUALIFIERS, entropy, generated, plausible, prose, random_looking, secret_key

__all__ = ["REDACTED", "Redaction", "redact"]


@dataclass(frozen=True)
class Redaction:
    text: str  # the redacted text, safe to store
    kinds: tuple[str, ...]  # what was found, in order of appearance, duplicates removed


# Tokens with a recognisable format beyond the family table; the whole match is the secret.
_OWN_TOKENS = [
    ("jwt", ("eyj",), r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),
]

# detect-secrets plugins whose denylist regexes match exactly the token (so group 0 is the
# secret). Only the first AWS/Slack regex qualifies: the others capture surrounding context.
# Its OpenAI regex is left out: it backtracks quadratically on long "sk-sk-..." runs, and
# the openai_key rule above covers those keys.
_DS_PLUGINS = [  # (module, class, kind, how many of its regexes, keywords that must occur for them to run)
    (
        "aws",
        "AWSKeyDetector",
        "aws_access_key",
        1,
        ("akia", "asia", "abia", "acca", "a3t", "agpa", "aida", "aroa", "aipa", "anpa", "anva", "apka"),
    ),
    ("github_token", "GitHubTokenDetector", "github_token", None, ("gh",)),
    ("gitlab_token", "GitLabTokenDetector", "gitlab_token", None, ("gl", "gr1348941")),
    ("slack", "SlackDetector", "slack_token", 1, ("xox",)),
    ("stripe", "StripeDetector", "stripe_key", None, ("_live_", "_test_")),
    ("sendgrid", "SendGridDetector", "sendgrid_key", None, ("sg.",)),
    ("twilio", "TwilioKeyDetector", "twilio_key", None, ("sk", "ac")),
    ("pypi_token", "PypiTokenDetector", "pypi_token", None, ("pypi-",)),
    ("discord", "DiscordBotTokenDetector", "discord_token", None, None),
    ("telegram_token", "TelegramBotTokenDetector", "telegram_token", None, (":",)),
    ("mailchimp", "MailchimpDetector", "mailchimp_key", None, ("-us",)),
    ("square_oauth", "SquareOAuthDetector", "square_oauth", None, ("sq0",)),
]

# Secrets recognised by their context; only the group named v is the secret.
_Q = r"[\"'`“”‘’]?"
_CONTEXT_RULES = [
    ("connection_string", r"\b[A-Za-z][A-Za-z0-9+.-]{0,20}://[^\s:/@]*:(?P<v>[^\s/]+)@[\w.-]+(?::\d+)?(?![\w.@-])"),
    ("azure_storage_key", r"\b(?:AccountKey|SharedAccessKey)=(?P<v>[A-Za-z0-9+/]{20,}={0,2})"),
    (
        "secret_assignment",
        r"[?&](?:sig|X-Amz-Signature|X-Goog-Signature|Signature|access_token|token|api_key|apikey|key)"
        r"=(?P<v>[A-Za-z0-9%+/._~-]{16,})",
    ),
    # a value named first, its use as a secret after: "用 Xk9!pq2 作为数据库密码", "use Xk9!pq2 as the password"
    (
        "password",
        r"(?:用|以|拿|把)\s*[\"'`“‘]?(?P<v>(?=\S*[A-Za-z])(?=\S*\d)[!-~]{6,64}?)[\"'`”’]?\s*"
        r"(?:作为|作為|当作|當作|当|當|做为|做為|设为|設為)\S{0,8}?(?:密码|密碼|口令|密钥|密鑰|令牌|token)",
    ),
    (
        "password",
        r"(?i:\buse\s+)[\"'`]?(?P<v>(?=\S*[A-Za-z])(?=\S*\d)[!-~]{6,64}?)[\"'`]?\s+(?i:as\s+(?:the\s+|our\s+|a\s+|an\s+)?"
        r"(?:[\w-]+\s+)?(?:password|passphrase|passcode|token|secret|api\s+key))",
    ),
    ("slack_webhook", r"hooks\.slack\.com/services/(?P<v>T\w+/B\w+/\w+)"),
    ("bearer_token", r"\b[Bb]earer\s+(?P<v>(?=[\w.~+/-]*\d)[\w.~+/-]{12,}=*)"),
    (
        "authorization_header",
        r"(?i:\bAuthorization)[\"']?\s*[:=]\s*[\"']?(?:Basic|Token|Bot|Digest|ApiKey)\s+(?P<v>[\w.~+/-]{8,}=*)",
    ),
    ("basic_auth", r"\bcurl\b[^\n]{0,300}?\s(?:-u|--user)[ =]?['\"]?[^\s:'\"]+:(?P<v>[^\s'\"]+)"),
    ("password", r"\bmysql\w*\b[^\n]{0,300}?\s-p['\"]?(?P<v>[^\s'\"]+)"),
    # "the password is X" only when X mixes letters and digits, so prose stays untouched
    (
        "password",
        r"(?:(?i:\b(?:password|passwd|passphrase)\s+(?:is|was)):?|(?:密码|密碼|口令)(?:是|为|為))"
        rf"\s*{_Q}(?P<v>(?=\S*[A-Za-z])(?=\S*\d)[!-~]{{6,}})",
    ),
    ("password", rf"(?:密碼|密码|口令|密鑰|密钥|秘钥|秘鑰)[ \t]*[：:=][ \t]*{_Q}(?P<v>[!-~]{{1,512}})"),
]

# keywords of each context rule above, in order (a rule runs only when one occurs, lower-cased)
_CONTEXT_KEYWORDS: list[tuple[str, ...]] = [
    ("://",),
    ("accountkey=", "sharedaccesskey="),
    ("sig=", "signature=", "token=", "key="),
    ("作为", "作為", "当", "當", "做为", "做為", "设为", "設為"),
    ("use ",),
    ("hooks.slack.com",),
    ("bearer",),
    ("authorization",),
    ("curl",),
    ("mysql",),
    ("password", "passwd", "passphrase", "密码", "密碼", "口令"),
    ("密碼", "密码", "口令", "密鑰", "密钥", "秘钥", "秘鑰"),
]
_FAMILY = 1_000_000  # keyword index of the structure families (see `_keyword_index`)
_ASSIGN_KEYWORDS = ("pass", "pwd", "secret", "token", "key", "auth", "credential")

# key (maybe a --flag), optional closing quote/bracket, separator, then a quoted or bare value.
# Values are capped so that rescanning from a rejected value stays linear on hostile input.
_ASSIGN = re.compile(
    r"(?<![\w.-])(?P<key>-{0,2}(?=[\w.-]*?(?i:pass|pwd|secret|token|key|auth|credential))[A-Za-z_][\w.-]*)"
    r"[\"'\]]*(?P<sep>[ \t]*(?::=|=>|=|:)[ \t]*|[ \t]+|[ \t]*,[ \t]*(?=[\"']))"
    r"(?P<val>\"[^\"\n]{0,512}\"|'[^'\n]{0,512}'|`[^`\n]{0,512}`|(?:(?![\"'`;])(?!,(?:\s|$))[!-~]){1,512})"
)
_SWITCH = re.compile(r"-{1,2}(?:enable|disable|with|without|no|skip|use|allow|require)-", re.I)
_ALNUM = re.compile(r"[A-Za-z0-9]")
_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_-]*")
# Key containers, by their markers: PEM and RFC 4716 (ssh.com) armour whose BEGIN line names a private or
# secret key (any algorithm: RSA, EC, OPENSSH, ENCRYPTED, PGP … BLOCK, SSH2 ENCRYPTED), to its END line (or,
# cut off, its last base64 or header line); the whole block is the secret.
_ARMOUR = (
    r"-{4,5} ?BEGIN ((?:[A-Z0-9]+ )*?(?:PRIVATE|SECRET) KEY(?: BLOCK)?) ?-{4,5}"
    r"(?:.*?-{4,5} ?END \1 ?-{4,5}|(?:[ \t]*(?:\n[ \t]*)?(?:[\w-]+: [^\n]*|[A-Za-z0-9+/=]{16,}))*)"
)
_STRUCTURE = [  # (kind, keywords (lower-case, any), pattern); group v (else the whole match) is the secret
    # a PuTTY key file (.ppk, any version): header to MAC
    (
        "private_key",
        ("putty-user-key-file",),
        re.compile(
            r"PuTTY-User-Key-File-\d+:.*?Private-Lines: *\d+(?:\s*[A-Za-z0-9+/=]{8,})*(?:\s*Private-MAC: *[0-9a-fA-F]+)?",
            re.S,
        ),
    ),
    # PKCS#12 / PKCS#8 DER in base64 (MII…) named as a key store or private key (a certificate alone is public)
    (
        "private_key",
        (".p12", ".pfx", "pkcs", "keystore", ".jks", "private key", "privatekey"),
        re.compile(
            r"(?i:\.p12|\.pfx|pkcs ?#? ?(?:12|8)|keystore|\.jks|private ?key)[^\n]{0,60}?(?P<v>MII[A-Za-z0-9+/]{40,}={0,2})"
        ),
    ),
    # a JSON Web Key's private members (RSA d p q dp dq qi, EC/OKP d, symmetric k)
    ("private_key", ('"kty"',), re.compile(r'"(?:d|p|q|dp|dq|qi|k)"\s*:\s*"(?P<v>[A-Za-z0-9_-]{16,})"')),
]
# An Authorization header under any scheme (Splunk, SSWS, GenieKey, Api-Key, AWS4-HMAC-SHA256 …): the
# credentials after the scheme, with a parameter list (`Credential=…, Signature=…`) when there is one.
_PARAM = r"[\w-]{1,40}=(?:\\?\"[^\"\\\n]*\\?\"|[^\s\"'`,\\]+)"  # name=value or name="value" (maybe \-escaped)
_AUTH_HEADER = re.compile(
    r"(?i:\b(?:proxy-)?authori[sz]ation)[\"']?[ \t]*[:=,][ \t]*[\"']?(?P<scheme>[A-Za-z][\w.-]{1,40})[ \t]+"
    rf"(?P<v>(?:{_PARAM}|[^\s\"'`<>$,\\]{{6,}})(?:[ \t]*,[ \t]*{_PARAM})*)"
)
# An AWS secret access key without the word "secret": 40 base64 characters beside an access key id or "aws".
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+])(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])")
_AWS_KEY_ID = re.compile(r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}")


def _structural(text: str, low: str) -> list[tuple[int, int, str]]:
    """Secrets found by structure, whoever issued them: key containers, Authorization headers, AWS pairs."""
    found: list[tuple[int, int, str]] = []
    for kind, keywords, pattern in _STRUCTURE:
        if any(k in low for k in keywords):
            for m in pattern.finditer(text):
                found.append((*m.span("v" if "v" in pattern.groupindex else 0), kind))
    if "authori" in low:
        for m in _AUTH_HEADER.finditer(text):
            start, end = _clean(text, *m.span("v"))
            # the credential, or a parameter list holding one (`token=…`, `Signature=…`)
            if any(generated(part) for part in re.split(r"[\s,;=\"\\]+", text[start:end])):
                found.append((start, end, "authorization_header"))
    if "aws" in low or _AWS_KEY_ID.search(text):
        for m in _AWS_SECRET.finditer(text):
            if generated(m["v"], mixed_case=True) and entropy(m["v"]) >= 4.0:
                found.append((*m.span("v"), "aws_secret_key"))
    return found


Rule = tuple[str, re.Pattern[str], "int | str", "tuple[str, ...] | None"]


@cache
def _rules() -> list[Rule]:
    """(kind, pattern, group, keywords) in priority order; group 0 marks a format token, "v" a context rule.

    A rule with keywords runs only when one of them occurs in the lower-cased text.
    """
    # Imported lazily: detect-secrets pulls in requests (~150 ms). Only the plugins' compiled
    # regexes are used, never scan_line/settings, so no baseline or config file is ever read,
    # no verification request is ever sent, and the noisy high-entropy plugins stay out.
    import importlib

    rules: list[Rule] = [
        ("private_key", re.compile(_ARMOUR, re.S), 0, ("begin",)),
    ]
    rules += [(kind, re.compile(p), 0, kw) for kind, kw, p in PREFIX_RULES]
    rules += [(kind, re.compile(p), 0, kw) for kind, kw, p in _OWN_TOKENS]
    for module, name, kind, first, keywords in _DS_PLUGINS:
        plugin = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)
        rules += [(kind, p, 0, keywords) for p in list(plugin.denylist)[:first]]
    rules += [(kind, re.compile(p), "v", kw) for (kind, p), kw in zip(_CONTEXT_RULES, _CONTEXT_KEYWORDS, strict=True)]
    return rules


# -- context: a secret word or a provider, an assignment, a random-looking value ------------------

# after the key: a few words (`auth token`, `_API_KEY`), a separator, an optional quote, the value
_NOUNS = (
    "token",
    "key",
    "secret",
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "sid",
    "credential",
    "creds",
    "密钥",
    "密鑰",
    "秘钥",
    "令牌",
    "密码",
    "密碼",
    "口令",
    "凭证",
    "憑證",
)
_AFTER_NOUN = "(?:" + "|".join(f"(?<=(?i:{n}))" if n.isascii() else f"(?<={n})" for n in _NOUNS) + ")"
# after the key: a few words (`auth token`, `_API_KEY`), a separator, an optional quote, the value (not
# itself a `name=value`); a bare space separates only right after a secret noun ("auth token 5f9d…")
_VALUE = r"(?![\w.-]+[=:][^=\s])[A-Za-z0-9+/=_.~!@#$%^&*\-]{8,300}"
_CONTEXT_TAIL = re.compile(
    r"(?P<mid>[\w.\- \t]{0,32}?(?:\([\w.\- \t]{1,24}\))?)[\"'\]]*"
    r"(?P<sep>[ \t]*(?::=|=>|->|[=:：]|\b(?:(?:is|was|are)[ \t]+set[ \t]+to|set to|is|was|are)\b|是|为|為|设为|設為|改为|改為|改成)[ \t]*[\"'`“‘]?"
    rf"|{_AFTER_NOUN}[ \t]+(?=\S{{8}}))"
    rf"(?P<v>{_VALUE.replace('{8,300}', '{3,300}')})"  # a short first value may be a user name: "admin / Xk9…"
)
# more values of the same clause: "creds: AC… / 5f9d…", "key 1a2b…, secret 3c4d…"
_MORE = re.compile(rf"[ \t]*(?:/|,|;|\band\b|和|与|與|、)[ \t]*[\"'`]?(?P<v>{_VALUE})")
_NOT_SECRET_WORDS = re.compile(
    r"(?i)\b(?:id|ids|name|names|file|path|url|uri|endpoint|length|len|hash|fingerprint|digest|checksum|commit|sha|"
    r"public|publishable|pub|version|rotation|policy|expiry|expires|ttl|format|type|field|header|env|var|count|"
    r"size|limit|bucket|refresh interval|prefix|hint|example|placeholder|region|account id|user|username|"
    r"email|host|port|label)\b|公钥|公鑰|指纹|指紋|长度|長度|格式|名称|名稱"
)


_CONTEXT_WORDS = tuple(sorted({w.lower() for w in (*SECRET_WORDS, *PROVIDERS)}))


@lru_cache(maxsize=512)
def _context_key(words: frozenset[str]) -> re.Pattern[str]:
    """The key regex for the context words that occur in a text (a small alternation is fast)."""
    alternation = "|".join(sorted((re.escape(w) for w in words), key=len, reverse=True))
    return re.compile(f"(?i)(?<![a-z])(?:{alternation})(?:e?s)?(?![a-z])")


def _weak_key(text: str, key: re.Match[str]) -> bool:
    """Whether a bare "key" context word lacks a credential qualifier or a provider's name just before it ("deploy
    key", "SendGrid，key 是 …")."""
    if key.group().lower().rstrip("s") != "key":
        return False
    before = re.findall(r"[A-Za-z]+", text[max(0, key.start() - 24) : key.start()])
    return not before or before[-1].lower() not in _KEY_QUALIFIERS


_KEY_QUALIFIERS = frozenset(SECRET_KEY_QUALIFIERS) | {p.lower() for p in PROVIDERS if p.isascii() and p.isalpha()}


def _contextual(text: str, present: frozenset[str]) -> list[tuple[int, int, str]]:
    found = []
    for key in _context_key(present).finditer(text):
        if _weak_key(text, key):
            continue
        m = _CONTEXT_TAIL.match(text, key.end())
        if m is None:
            continue
        mid = m["mid"]
        if "\n" in mid or _NOT_SECRET_WORDS.search(mid) or _NOT_SECRET_WORDS.search(key.group()):
            continue
        kind = "password" if re.search(r"(?i)pass|pwd|密码|密碼|口令", key.group() + mid) else "secret_assignment"
        more: re.Match[str] | None = m
        while more is not None and (more := _MORE.match(text, more.end())) is not None:
            s2, e2 = _clean(text, *more.span("v"))
            if not random_looking(text[s2:e2]):
                break
            found.append((s2, e2, kind))
        start, end = m.span("v")
        word = key.start()
        while word and (text[word - 1].isalnum() or text[word - 1] in "_.-"):
            word -= 1
        if word and text[word - 1] in "?&" and "&" in text[start:end]:
            end = text.index("&", start)  # a URL parameter ends at the next one
        start, end = _clean(text, start, end)
        value = text[start:end]
        if random_looking(value):
            found.append((start, end, kind))
    return found


def _clean(text: str, start: int, end: int) -> tuple[int, int]:
    """Trim quotes and sentence punctuation that a greedy value match swallowed."""
    while end > start and text[end - 1] in "\"'`”’.,;:)]}>":
        end -= 1
    return start, end


def _assignments(text: str) -> list[tuple[int, int, str]]:
    found: list[tuple[int, int, str]] = []
    pos = 0
    while m := _ASSIGN.search(text, pos):
        key, sep, val = m["key"], m["sep"], m["val"]
        start, end = m.span("val")
        quoted = val[0] in "\"'`"
        if quoted:
            start, end = start + 1, end - 1
        else:
            if m.start() and text[m.start() - 1] in "?&" and "&" in text[start:end]:
                end = text.index("&", start)  # a URL parameter ends at the next one
            start, end = _clean(text, start, end)
        value = text[start:end]
        kind = secret_key(key)
        bare_sep = not sep.strip()
        # `set("widget_token", "…")`: a comma separates only a quoted key from a generated quoted value
        comma = sep.strip() == "," and (not m.start() or text[m.start() - 1] not in "\"'" or not generated(value))
        ok = (
            kind is not None
            and not comma
            # a space alone separates only CLI flags (--password x, -storepass x) and SQL (PASSWORD 'x'); a flag
            # takes no other option as its value, and a switch (--enable-…, --no-…) takes none
            and (not bare_sep or (key.startswith("-") and len(key) > 3) or (quoted and kind == "password"))
            and not (bare_sep and (value.startswith("-") or _SWITCH.match(key)))
            and not prose(text, start, end)
            # only a quoted password may hold spaces (a passphrase); `code spans` are commands
            and (not re.search(r"\s", value) or (kind == "password" and val[0] != "`"))
            and plausible(value, strong=kind == "password")
            and re.sub(r"\W|_", "", value).lower() not in re.sub(r"\W|_", "", key).lower()
        )
        if ok and kind is not None:
            found.append((start, end, kind))
        # on a miss, resume inside the value: it may itself start a real assignment
        pos = m.end() if ok else m.start("val")
    return found


def _grams(low: str) -> set[str]:
    """Every 1- and 2-character slice of the text: keyword checks become a set intersection."""
    return set(low).union(map(str.__add__, low, low[1:]))


@cache
def _keyword_index() -> tuple[dict[str, list[tuple[str, int]]], list[int]]:
    """(first ≤2 characters of a keyword → [(keyword, rule index)], rules without keywords).

    Index -1 stands for the assignment scan, -2 - n for the n-th context word, _FAMILY + n for the n-th family of
    `secret_structure.FAMILIES`.
    """
    index: dict[str, list[tuple[str, int]]] = {}
    always = []
    for i, (_, _, _, keywords) in enumerate(_rules()):
        if keywords is None:
            always.append(i)
        for k in keywords or ():
            index.setdefault(k[:2], []).append((k, i))
    for k in _ASSIGN_KEYWORDS:
        index.setdefault(k[:2], []).append((k, -1))
    for n, k in enumerate(_CONTEXT_WORDS):
        index.setdefault(k[:2], []).append((k, -2 - n))
    for n, (_, keywords, _) in enumerate(FAMILIES):
        for k in keywords:
            index.setdefault(k[:2], []).append((k, _FAMILY + n))
    return index, always


def _candidates(low: str) -> set[int]:
    """Indices (see `_keyword_index`) whose keywords occur in the lower-cased text."""
    index, always = _keyword_index()
    hits = set(always)
    for gram in _grams(low) & index.keys():
        for keyword, i in index[gram]:
            if i not in hits and keyword in low:
                hits.add(i)
    return hits


def _spans(text: str) -> list[tuple[int, int, int, str]]:
    spans = []
    rules = _rules()
    low = text.lower()
    hits = _candidates(low)
    for prio, (kind, pattern, group, _keywords) in enumerate(rules):
        if prio not in hits:
            continue
        covered = 0
        for m in pattern.finditer(text):
            start, end = m.span(group)
            if group == 0:
                # a token glued to a longer word is not that token ("task-..." is no "sk-" key)
                glued = start and _ALNUM.match(text, start - 1) and _ALNUM.match(text, start)
                if start < covered or glued:
                    continue
                tail = _TOKEN_TAIL.match(text, end)
                end = covered = tail.end() if tail else end
            else:
                start, end = _clean(text, start, end)
                if not plausible(text[start:end], strong=True) or prose(text, start, end):
                    continue
            spans.append((start, end, prio, kind))
    if -1 in hits:
        spans += [(s, e, len(rules), kind) for s, e, kind in _assignments(text)]
    spans += [(s, e, len(rules), kind) for s, e, kind in _structural(text, low)]
    words = frozenset(_CONTEXT_WORDS[-2 - i] for i in hits if i <= -2)
    if words:
        spans += [(s, e, len(rules) + 1, kind) for s, e, kind in _contextual(text, words)]
    for n, (_, _, find) in enumerate(FAMILIES):  # by structure: command lines, markup, cookies, other languages
        if _FAMILY + n in hits:
            spans += [(s, e, len(rules), kind) for s, e, kind in find(text, low)]
    return spans


def _merge(spans: list[tuple[int, int, int, str]]) -> list[tuple[int, int, int, str]]:
    """Union overlapping spans; the most specific rule (lowest priority number) names the kind."""
    merged: list[tuple[int, int, int, str]] = []
    for start, end, prio, kind in sorted(spans):
        if merged and start < merged[-1][1]:
            s, e, p, k = merged[-1]
            merged[-1] = (s, max(e, end), *min((p, k), (prio, kind)))
        else:
            merged.append((start, end, prio, kind))
    return merged


def redact(text: str) -> Redaction:
    """Replace every detected secret in text with REDACTED and report the kinds found."""
    if not text:
        return Redaction(text, ())
    spans = _merge(_spans(text))
    # A secret found once in context is also removed where it recurs bare ("...then run it
    # with Xk9!pq2"); short or purely alphabetic values are skipped as too likely to be words.
    values = {text[s:e]: (p, k) for s, e, p, k in reversed(spans)}
    for value, (prio, kind) in values.items():
        if len(value) >= 8 and re.search(r"[\d\W_]", value):
            spans += [(m.start(), m.end(), prio, kind) for m in re.finditer(re.escape(value), text)]
    spans = _merge(spans)
    out, last, kinds = [], 0, []
    for start, end, _, kind in spans:
        out += [text[last:start], REDACTED]
        last = end
        if kind not in kinds:
            kinds.append(kind)
    out.append(text[last:])
    return Redaction("".join(out), tuple(kinds))
