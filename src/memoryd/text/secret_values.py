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
    "METADATA_WORDS", "NESTED_ASSIGNMENT", "NOT_SECRET_SUFFIX", "REFERENCE", "SECRET_KEY_QUALIFIERS", "STOPWORDS", "entropy", "generated",
    "identifier", "not_a_value", "plausible", "prose", "random_looking", "secret_key",
]  # fmt: skip

STOPWORDS = frozenset(
    """
    none null nil true false yes required optional string bytes integer bool boolean text secret password token
    redacted hidden masked empty undefined unset missing example placeholder dummy bearer basic oauth oauth2
    include omit same-origin environment vault keychain keyring sops the see use via from stored rotated expired
    expires must should will never always enabled disabled your here flag option argument parameter field
    variable value prompt changeme changeit replaceme todo tbd
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
    r"|![A-Za-z_]+(?:[:.][A-Za-z_]+)*$"  # a YAML tag: `password: !vault |`, `!Ref DbPassword`
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


# Words that start or continue a phrase; after a plain word they mark prose: "Authorization: Token followed by the
# user's token", "password: whatever the user typed", "Passwort: wie im Wiki beschrieben".
FUNCTION_WORDS = frozenset(
    """
    the a an by of to for with from in on at as is are was were be been and or but that which when where if then
    than instead every each any all its their your our his her this these those it not no only after before until
    via per so into onto over under about like same other such
    der die das den dem des ein eine einen und oder für mit von zu im ist sind wird nicht wie auf aus bei
    le la les un une des de du et ou pour avec dans est sont sur par au aux
    el los las del y para con en es son por al
    il lo gli della dei nel è e o per con
    o os as um uma do da dos das é em no na
    и в на с по для от не это как из
    """.split()
)
_PLAIN = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
_NEXT_WORD = re.compile(r"[ \t]+([^\W_]+)")


def prose(text: str, start: int, end: int, *, any_word: bool = False) -> bool:
    """Whether the value at text[start:end] is a plain word that begins a phrase: the look-alike rule, "a
    credential word followed by ordinary prose is not a secret". The word must be followed on its line by a
    function word (`FUNCTION_WORDS`), or, with `any_word`, by any word or number."""
    if not _PLAIN.fullmatch(text[start:end]):
        return False
    m = _NEXT_WORD.match(text, end)
    return m is not None and (any_word or m.group(1).lower() in FUNCTION_WORDS)


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


# -- does a key (a variable, flag, tag, header or cookie name) name a secret? ---------------------------

_SPLIT_KEY = re.compile(r"[_.\-]+|(?<=[a-z0-9])(?=[A-Z])")
_KEY_QUALIFIERS = frozenset(
    """
    api access private secret signing encryption master account auth client service app license
    """.split()
)
# A secret word followed by one of these names metadata about the secret, not the secret.
METADATA_WORDS = frozenset(
    """
    file path dir url uri endpoint length len min max type name id ids field policy expiry expires expiration
    ttl timeout count prompt env var header label format regex pattern hint rotation reset location store
    provider mode method manager cmd command helper hash hashed hashers strength required enabled size limit
    budget usage kind source ref arn version stdin validators scheme hasher hashing encoder encoding requirements
    complexity rules
    """.split()
)
NOT_SECRET_SUFFIX = METADATA_WORDS | frozenset(
    # a thing named after the secret it handles (`auth-gateway`, `secret-rotator`, `TOKEN_REFRESH_INTERVAL`)
    """
    gateway service svc proxy server rotator worker job handler middleware module plugin controller validator
    generator parser cache pool factory backend frontend router test tests spec flow check refresh interval
    leeway lifetime bucket
    """.split()
)


# "key" alone names too many things (primary, cache, sort, public keys): it counts only after one of these
SECRET_KEY_QUALIFIERS = _KEY_QUALIFIERS | {
    "deploy",
    "signing",
    "webhook",
    "ssh",
    "gpg",
    "pgp",
    "hmac",
    "jwt",
    "storage",
    "session",
    "admin",
    "root",
    "shared",
    "encryption",
    "decryption",
}


def secret_key(key: str) -> str | None:
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
        elif part == "key" and i and parts[i - 1] in SECRET_KEY_QUALIFIERS:
            hit, kind = i, "secret_assignment"
    if hit < 0 or any(p in NOT_SECRET_SUFFIX for p in parts[hit + 1 :]):
        return None
    if "aws" in parts and kind == "secret_assignment":
        return "aws_secret_key"
    return kind
