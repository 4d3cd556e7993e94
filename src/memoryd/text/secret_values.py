"""Is a value a secret, or a name, a reference or a placeholder? The value tests redaction shares.

A detected key or context names where a secret may be; these decide whether the value found there is one:
a word from `STOPWORDS`, a `REFERENCE` (a call, an env-var name, a path, a masked value), an identifier
made of word-like pieces, a host, a date or a nested `name=value` is not (`not_a_value`); a generated
value has entropy and mixed character classes (`generated`, `random_looking`); an assigned value must
look `plausible`.
"""

from __future__ import annotations

import math
import re
from collections import Counter

__all__ = [
    "NESTED_ASSIGNMENT", "REFERENCE", "STOPWORDS", "entropy", "generated", "identifier", "not_a_value", "plausible",
    "random_looking",
]  # fmt: skip

STOPWORDS = frozenset(
    """
    none null nil true false yes required optional string bytes integer bool boolean text secret password token
    redacted hidden masked empty undefined unset missing example placeholder dummy bearer basic oauth oauth2
    include omit same-origin environment vault keychain keyring sops the see use via from stored rotated expired
    expires must should will never always enabled disabled your here flag option argument parameter field
    variable value prompt
    """.split()
)
REFERENCE = re.compile(
    r"[A-Za-z_][\w.]*[(\[]"  # call or subscript: getpass(), os.environ[...]
    r"|(?:[A-Za-z_][a-z]*(?:_[A-Za-z]+)*|[A-Z][A-Z0-9_]*)(?:\.(?:[A-Za-z_][a-z]*(?:_[A-Za-z]+)*|[A-Z][A-Z0-9_]*))+$"
    # dotted name: settings.SECRET_KEY, os.environ.get (each part a word, so `acme.pat.v1.Xk9mQ…` is no name)
    r"|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$"  # env-var name: DB_PASSWORD
    r"|(?:[~.]{0,2}/(?=[\w.-]*[/.])|[~.]{1,2}/|[A-Za-z]:\\)"  # file path (a bare /x1Y… is base64, not a path)
    r"|.*\.(?:pem|key|pub|crt|json|ya?ml|txt|env|toml|ini|cfg|conf|py|js|ts)$"
    r"|(?i:x{3,}|\*+|\.+)$"  # masked
)


def generated(value: str, *, mixed_case: bool = False) -> bool:
    """A credential-shaped value: not a name, host or placeholder; a digit (or 20+ characters); high entropy."""
    core = value.strip("=.-_,;")
    if len(core) < 8 or REFERENCE.match(core) or core.lower() in STOPWORDS or not_a_value(core):
        return False
    if mixed_case and not (re.search(r"[a-z]", core) and re.search(r"[A-Z]", core) and re.search(r"\d", core)):
        return False
    return (bool(re.search(r"\d", core)) or len(core) >= 20) and entropy(core) >= 3.0


_IDENT_PIECE = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_CONSONANTS = re.compile(r"[bcdfghjklmnpqrstvwxz]{6,}")
_HOST = re.compile(r"(?:[a-z0-9-]+\.)+[a-z]{2,12}")
NESTED_ASSIGNMENT = re.compile(r"[A-Za-z_][\w.-]*=[^=]")  # `upstream_timeout_ms=15000`: a name, not a value
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def identifier(value: str) -> bool:
    """Code or prose words joined into a name (`test_retry_backoff`, `BertTokenizerFast2`, `vocab_v3.txt`).

    Split at `_ - . / :` and at case and digit changes, a name is made of word-like pieces; a
    generated value falls apart into one-letter pieces, long digit runs or unpronounceable runs.
    """
    if not re.fullmatch(r"[A-Za-z_][\w.\-/:]*", value):
        return False
    pieces = _IDENT_PIECE.findall(value)
    words = [p for p in pieces if not p.isdigit()]
    if not words or any(p.isdigit() and len(p) > 4 for p in pieces):
        return False
    # one-letter or vowel-less two-letter pieces, and digit groups between them, mark generated text
    weak = sum(len(p) == 1 or (len(p) == 2 and not re.search(r"[aeiouyAEIOUY]", p)) for p in words)
    if weak > max(1, len(words) // 2) or len(pieces) - len(words) > 2:
        return False
    if len(value) >= 12 and sum(map(len, words)) / len(words) < 2.75:  # names are words, not letter pairs
        return False
    for w in words:
        low = w.lower()
        if len(low) > 15 or (len(low) > 3 and not w.isupper() and not re.search(r"[aeiouy]", low)):
            return False
        if _CONSONANTS.search(low):
            return False
    return True


def not_a_value(value: str) -> bool:
    """Structure that names or points at something instead of holding a secret."""
    return bool(identifier(value) or _HOST.fullmatch(value) or NESTED_ASSIGNMENT.match(value)
                or _DATE.match(value))  # fmt: skip


def entropy(value: str) -> float:
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def random_looking(value: str) -> bool:
    """A value that looks generated: long enough, mixed classes, high entropy (hex counts if long)."""
    core = value.strip("=.-_")
    if len(core) < 12 or REFERENCE.match(core) or core.lower() in STOPWORDS or not_a_value(core):
        return False
    if re.fullmatch(r"[0-9a-fA-F]{32,}", core):
        return True
    if re.fullmatch(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", core):
        return True  # a UUID assigned to a key or token name (Heroku, Snyk, …)
    classes = sum(bool(re.search(p, core)) for p in (r"[a-z]", r"[A-Z]", r"\d", r"[^A-Za-z0-9]"))
    return bool(re.search(r"\d", core)) and classes >= 2 and entropy(core) >= 3.0


def plausible(value: str, strong: bool) -> bool:
    """Whether an assigned value looks like a real secret rather than a placeholder or reference."""
    if len(value) < 4 or value[0] in "$<{[(%#@" or value.lower() in STOPWORDS:
        return False
    if not re.search(r"[A-Za-z0-9]", value) or REFERENCE.match(value):
        return False
    if strong:  # passwords may be short dictionary words: "hunter2", "letmein"
        return not NESTED_ASSIGNMENT.match(value)
    if not_a_value(value):
        return False
    return len(value) >= 16 or (len(value) >= 8 and bool(re.search(r"[\d\W_]", value)))
