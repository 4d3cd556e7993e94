"""Secret redaction for the write path: replace credentials with [REDACTED], keep their context.

Known limitation: only secrets with a recognisable shape or a secret-named key are found.
Natural-language descriptions ("the password is my dog's name", "用我生日当密码") and bare
high-entropy strings with no telling key or prefix are not detected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

__all__ = ["REDACTED", "Redaction", "redact"]

REDACTED = "[REDACTED]"


@dataclass(frozen=True)
class Redaction:
    text: str  # the redacted text, safe to store
    kinds: tuple[str, ...]  # what was found, in order of appearance, duplicates removed


# Tokens with a recognisable format; the whole match is the secret.
_OWN_TOKENS = [
    ("anthropic_key", r"sk-ant-[A-Za-z0-9_-]{20,}"),
    ("openai_key", r"sk-(?:proj-|svcacct-|admin-)?(?=[A-Za-z0-9_-]{0,64}?\d)[A-Za-z0-9_-]{20,}"),
    ("github_token", r"github_pat_[A-Za-z0-9_]{22,}"),
    ("slack_token", r"xapp-\d-[A-Za-z0-9-]{10,}"),
    ("stripe_key", r"[sr]k_test_[A-Za-z0-9]{16,}"),
    ("google_api_key", r"AIza[0-9A-Za-z_-]{35}"),
    ("jwt", r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),
    ("npm_token", r"npm_[A-Za-z0-9]{36}"),
]

# detect-secrets plugins whose denylist regexes match exactly the token (so group 0 is the
# secret). Only the first AWS/Slack regex qualifies: the others capture surrounding context.
# Its OpenAI regex is left out: it backtracks quadratically on long "sk-sk-..." runs, and
# the openai_key rule above covers those keys.
_DS_PLUGINS = [
    ("aws", "AWSKeyDetector", "aws_access_key", 1),
    ("github_token", "GitHubTokenDetector", "github_token", None),
    ("gitlab_token", "GitLabTokenDetector", "gitlab_token", None),
    ("slack", "SlackDetector", "slack_token", 1),
    ("stripe", "StripeDetector", "stripe_key", None),
    ("sendgrid", "SendGridDetector", "sendgrid_key", None),
    ("twilio", "TwilioKeyDetector", "twilio_key", None),
    ("pypi_token", "PypiTokenDetector", "pypi_token", None),
    ("discord", "DiscordBotTokenDetector", "discord_token", None),
    ("telegram_token", "TelegramBotTokenDetector", "telegram_token", None),
    ("mailchimp", "MailchimpDetector", "mailchimp_key", None),
    ("square_oauth", "SquareOAuthDetector", "square_oauth", None),
]

# Secrets recognised by their context; only the group named v is the secret.
_Q = r"[\"'`“”‘’]?"
_CONTEXT_RULES = [
    ("connection_string",
     r"\b[A-Za-z][A-Za-z0-9+.-]{0,20}://[^\s:/@]*:(?P<v>[^\s/]+)@[\w.-]+(?::\d+)?(?![\w.@-])"),
    ("azure_storage_key", r"\bAccountKey=(?P<v>[A-Za-z0-9+/]{20,}={0,2})"),
    ("slack_webhook", r"hooks\.slack\.com/services/(?P<v>T\w+/B\w+/\w+)"),
    ("bearer_token", r"\b[Bb]earer\s+(?P<v>(?=[\w.~+/-]*\d)[\w.~+/-]{12,}=*)"),
    ("authorization_header",
     r"(?i:\bAuthorization)[\"']?\s*[:=]\s*[\"']?(?:Basic|Token|Bot|Digest|ApiKey)\s+(?P<v>[\w.~+/-]{8,}=*)"),
    ("basic_auth", r"\bcurl\b[^\n]{0,300}?\s(?:-u|--user)[ =]?['\"]?[^\s:'\"]+:(?P<v>[^\s'\"]+)"),
    ("password", r"\bmysql\w*\b[^\n]{0,300}?\s-p['\"]?(?P<v>[^\s'\"]+)"),
    # "the password is X" only when X mixes letters and digits, so prose stays untouched
    ("password",
     r"(?:(?i:\b(?:password|passwd|passphrase)\s+(?:is|was)):?|(?:密码|密碼|口令)(?:是|为|為))"
     rf"\s*{_Q}(?P<v>(?=\S*[A-Za-z])(?=\S*\d)[!-~]{{6,}})"),
    ("password", rf"(?:密碼|密码|口令|密鑰|密钥|秘钥|秘鑰)[ \t]*[：:=][ \t]*{_Q}(?P<v>[!-~]{{1,512}})"),
]

# key (maybe a --flag), optional closing quote/bracket, separator, then a quoted or bare value.
# Values are capped so that rescanning from a rejected value stays linear on hostile input.
_ASSIGN = re.compile(
    r"(?<![\w.-])(?P<key>-{0,2}(?=[\w.-]*?(?i:pass|pwd|secret|token|key|auth|credential))[A-Za-z_][\w.-]*)"
    r"[\"'\]]*(?P<sep>[ \t]*(?::=|=>|=|:)[ \t]*|[ \t]+)"
    r"(?P<val>\"[^\"\n]{0,512}\"|'[^'\n]{0,512}'|`[^`\n]{0,512}`|(?:(?![\"'`,;&])[!-~]){1,512})"
)
_ALNUM = re.compile(r"[A-Za-z0-9]")
_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_-]*")
_SPLIT_KEY = re.compile(r"[_.\-]+|(?<=[a-z0-9])(?=[A-Z])")
_KEY_QUALIFIERS = {"api", "access", "private", "secret", "signing", "encryption", "master", "account",
                   "auth", "client", "service", "app", "license"}
# A secret word followed by one of these names metadata about the secret, not the secret.
_NOT_SECRET_SUFFIX = {
    "file", "path", "dir", "url", "uri", "endpoint", "length", "len", "min", "max", "type", "name", "id",
    "ids", "field", "policy", "expiry", "expires", "expiration", "ttl", "timeout", "count", "prompt", "env",
    "var", "header", "label", "format", "regex", "pattern", "hint", "rotation", "reset", "location", "store",
    "provider", "mode", "method", "manager", "cmd", "command", "helper", "hash", "hashed", "hashers",
    "strength", "required", "enabled", "size", "limit", "budget", "usage", "kind", "source", "ref", "arn",
    "version", "stdin", "validators", "scheme",
}
_STOPWORDS = {
    "none", "null", "nil", "true", "false", "yes", "required", "optional", "string", "bytes", "integer",
    "bool", "boolean", "text", "secret", "password", "token", "redacted", "hidden", "masked", "empty",
    "undefined", "unset", "missing", "example", "placeholder", "dummy", "bearer", "basic", "oauth",
    "oauth2", "include", "omit", "same-origin", "environment", "vault", "keychain", "keyring", "sops",
    "the", "see", "use", "via", "from", "stored", "rotated", "expired", "expires", "must", "should",
    "will", "never", "always", "enabled", "disabled", "your", "here", "flag", "option", "argument",
    "parameter", "field", "variable", "value", "prompt",
}
_REFERENCE = re.compile(
    r"[A-Za-z_][\w.]*[(\[]"  # call or subscript: getpass(), os.environ[...]
    r"|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$"  # dotted name: settings.SECRET_KEY
    r"|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$"  # env-var name: DB_PASSWORD
    r"|(?:[~.]{0,2}/|[A-Za-z]:\\)"  # file path
    r"|.*\.(?:pem|key|crt|json|ya?ml|txt|env|toml|ini|cfg|conf|py|js|ts)$"
    r"|(?i:x{3,}|\*+|\.+)$"  # masked
)


@cache
def _rules() -> list[tuple[str, re.Pattern[str], int | str]]:
    """(kind, pattern, group) in priority order; group 0 marks a format token, "v" a context rule."""
    # Imported lazily: detect-secrets pulls in requests (~150 ms). Only the plugins' compiled
    # regexes are used, never scan_line/settings, so no baseline or config file is ever read,
    # no verification request is ever sent, and the noisy high-entropy plugins stay out.
    import importlib

    rules: list[tuple[str, re.Pattern[str], int | str]] = [
        ("private_key", re.compile(
            r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----"
            r"(?:.*?-----END \1-----|(?:\s*[A-Za-z0-9+/=]{16,})*)", re.S), 0),
    ]
    rules += [(kind, re.compile(p), 0) for kind, p in _OWN_TOKENS]
    for module, name, kind, first in _DS_PLUGINS:
        plugin = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)
        rules += [(kind, p, 0) for p in list(plugin.denylist)[:first]]
    rules += [(kind, re.compile(p), "v") for kind, p in _CONTEXT_RULES]
    return rules


def _plausible(value: str, strong: bool) -> bool:
    """Whether an assigned value looks like a real secret rather than a placeholder or reference."""
    if len(value) < 4 or value[0] in "$<{[(%#@" or value.lower() in _STOPWORDS:
        return False
    if not re.search(r"[A-Za-z0-9]", value) or _REFERENCE.match(value):
        return False
    if strong:  # passwords may be short dictionary words: "hunter2", "letmein"
        return True
    return len(value) >= 16 or (len(value) >= 8 and bool(re.search(r"[\d\W_]", value)))


def _secret_key(key: str) -> str | None:
    """The kind of secret a key names ("password" or "secret_assignment"), or None."""
    parts = [p.lower() for p in _SPLIT_KEY.split(key.strip("-")) if p]
    hit, kind = -1, None
    for i, part in enumerate(parts):
        if part in ("pwd", "pass") or part.endswith(("password", "passwd", "passphrase")):
            hit, kind = i, "password"
        elif part in ("auth", "credential", "credentials") or part.endswith(
            ("secret", "token", "apikey", "accesskey", "secretkey", "privatekey")
        ):
            hit, kind = i, "secret_assignment"
        elif part == "key" and i and parts[i - 1] in _KEY_QUALIFIERS:
            hit, kind = i, "secret_assignment"
    if hit < 0 or any(p in _NOT_SECRET_SUFFIX for p in parts[hit + 1 :]):
        return None
    if "aws" in parts and kind == "secret_assignment":
        return "aws_secret_key"
    return kind


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
            start, end = _clean(text, start, end)
        value = text[start:end]
        kind = _secret_key(key)
        bare_sep = not sep.strip()
        ok = (
            kind is not None
            # a space alone separates only CLI flags (--password x) and SQL (PASSWORD 'x')
            and (not bare_sep or key.startswith("--") or (quoted and kind == "password"))
            # only a quoted password may hold spaces (a passphrase); `code spans` are commands
            and (not re.search(r"\s", value) or (kind == "password" and val[0] != "`"))
            and _plausible(value, strong=kind == "password")
            and re.sub(r"\W|_", "", value).lower() not in re.sub(r"\W|_", "", key).lower()
        )
        if ok and kind is not None:
            found.append((start, end, kind))
        # on a miss, resume inside the value: it may itself start a real assignment
        pos = m.end() if ok else m.start("val")
    return found


def _spans(text: str) -> list[tuple[int, int, int, str]]:
    spans = []
    rules = _rules()
    for prio, (kind, pattern, group) in enumerate(rules):
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
                if not _plausible(text[start:end], strong=True):
                    continue
            spans.append((start, end, prio, kind))
    spans += [(s, e, len(rules), kind) for s, e, kind in _assignments(text)]
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
