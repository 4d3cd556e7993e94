"""Secrets found by where they sit (issue 37): on a command line, in markup and config files, in cookies and
session headers, after a credential label in another language. Each family is a class of places, not a list
of examples: a command's credential option (`secret_rules.CLI_CREDENTIALS`), a `user:pass@host`, an element or
attribute named like a secret, a session cookie, a label in Japanese, Korean, German, French, Spanish,
Portuguese, Italian or Russian (`secret_rules.LABELS`).

Every value found must still look like a value (`secret_values.plausible`): a `$VAR`, `${{ … }}`, `<token>`, a
path, a placeholder or a YAML tag is not one, and neither is a plain word that begins a phrase (`prose`:
"sshpass -p is a last resort", "Passwort: mindestens 12 Zeichen").

`FAMILIES` lists (name, keywords, finder): `redact` runs a finder only when one of its keywords occurs in the
lower-cased text; a finder returns (start, end, kind) spans.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

from .secret_rules import CLI_CREDENTIALS, LABELS, SESSION_COOKIE
from .secret_values import METADATA_WORDS, generated, not_a_value, plausible, prose, random_looking, secret_key

__all__ = ["FAMILIES", "Span"]

Span = tuple[int, int, str]
_Spec = tuple[tuple[str, ...], tuple[str, ...]]  # (a command's further words, its option forms)


def _value_ok(text: str, start: int, end: int, *, strong: bool = True) -> bool:
    value = text[start:end]
    return end > start and not value.startswith("-") and plausible(value, strong=strong) and not prose(text, start, end)


def _unquote(text: str, start: int, end: int) -> tuple[int, int]:
    """The span inside one pair of quotes around text[start:end], if it has them."""
    if end - start >= 2 and text[start] in "'\"" and text[end - 1] == text[start]:
        return start + 1, end - 1
    return start, end


# -- command lines -----------------------------------------------------------------------------------------

# a shell word (quoted parts included) or what ends a command: a pipe, ;, &&, ||, a backtick, ), a line end
_WORD = re.compile(
    r"""[ \t]*(?:(?P<end>\|\||&&|[|;&)\n`]|$)|(?P<w>(?:'[^'\n]{0,512}'|"(?:[^"\\\n]|\\.){0,512}"|[^\s'"|;&)`]){1,512}))"""
)
_MAX_WORDS = 64  # a command's words read (so that a line of many commands costs each one a bounded read)


@cache
def _commands() -> tuple[tuple[str, ...], dict[str, list[_Spec]]]:
    """(every command's first word, first word → [(its further words, its option forms)]); `*`: a prefix."""
    table: dict[str, list[_Spec]] = {}
    for names, forms in CLI_CREDENTIALS:
        for name in names.split("|"):
            first, *rest = name.split()
            table.setdefault(first, []).append((tuple(rest), tuple(forms.split())))
    return tuple(table), table


@cache
def _command_names() -> tuple[frozenset[str], tuple[str, ...]]:
    """(the commands' first words, the prefixes of those ending with `*`)."""
    firsts, _ = _commands()
    return frozenset(f for f in firsts if not f.endswith("*")), tuple(f[:-1] for f in firsts if f.endswith("*"))


_NAME = re.compile(r"[A-Za-z0-9][\w-]*")
_BEFORE_COMMAND = frozenset(" \t\n'\"`(|;&$=")


def _command_words(text: str) -> list[tuple[int, str]]:
    """(where its words start, the command) for each command of the table in the text, at a command's place:
    the text's start, after a space, a quote, a pipe, `;`, `&`, `(`, `$(` or `=`; followed by a space."""
    exact, prefixes = _command_names()
    words = set(_NAME.findall(text))  # which commands occur at all, as words (a set lookup, not a find per name)
    present = [(n, False) for n in words & exact] + [(p, True) for p in prefixes if any(w.startswith(p) for w in words)]
    found = []
    for name, prefix in present:
        i = text.find(name)
        while i >= 0:
            j = i + len(name)
            if prefix:
                while j < len(text) and (text[j].isalnum() or text[j] in "_-"):
                    j += 1
            if (i == 0 or text[i - 1] in _BEFORE_COMMAND) and j < len(text) and text[j] in " \t":
                found.append((j, text[i:j]))
            i = text.find(name, i + 1)
    return found


def _spec(table: dict[str, list[_Spec]], cmd: str) -> list[_Spec]:
    if cmd in table:
        return table[cmd]
    return [s for k, specs in table.items() if k.endswith("*") and cmd.startswith(k[:-1]) for s in specs]


def _words(text: str, pos: int, limit: int) -> list[tuple[int, int]]:
    """The spans of the words of the command that starts at `pos`, to its end (at most to `limit`)."""
    words: list[tuple[int, int]] = []
    while len(words) < _MAX_WORDS and (m := _WORD.match(text, pos, limit)) is not None and m["w"] is not None:
        words.append(m.span("w"))
        pos = m.end()
    return words


def _option_value(text: str, words: list[tuple[int, int]], i: int, form: str) -> tuple[int, int] | None:
    """The credential's span if word i is option `form` (see `secret_rules.CLI_CREDENTIALS`), else None."""
    start, end = words[i]
    word = text[start:end]
    name, _, inner = form.partition("=")
    mode = name[-1] if name[-1] in "+*" else ""
    name = name.rstrip("+*")
    span: tuple[int, int] | None = None
    if name.endswith(":"):  # /p:VALUE
        span = (start + len(name), end) if word.startswith(name) and len(word) > len(name) else None
    elif word == name and mode != "+":  # -p VALUE
        span = words[i + 1] if i + 1 < len(words) else None
    elif word.startswith(name + "=") and mode != "+":  # --password=VALUE
        span = (start + len(name) + 1, end)
    elif mode and not name.startswith("--") and word.startswith(name) and len(word) > len(name):  # -pVALUE
        span = (start + len(name), end)
    if span is None:
        return None
    s, e = _unquote(text, *span)
    if not inner:
        return s, e
    if len(inner) > 1:  # a prefix: openssl's pass:VALUE
        return (s + len(inner), e) if text.startswith(inner, s) else None
    cut = text.find(inner, s, e)  # user:password, user%password, user,password
    return (cut + 1, e) if cut > s else None


def _positional(text: str, rest: list[tuple[int, int]], form: str) -> tuple[int, int] | None:
    """`#N` (the N-th word that is no option), `#N=/` (its part after '/', to an '@': user/password@db), `#key`
    (the word after one that names a secret), `#unc`
    (the word after a \\\\server\\share path: `net use Z: \\\\srv\\share PASSWORD`)."""
    index, _, after = form[1:].partition("=")
    if index == "key":  # the word after one naming a secret
        k = next((j + 1 for j, (s, e) in enumerate(rest[:-1]) if secret_key(text[s:e].rsplit(":", 1)[-1])), len(rest))
    elif index == "unc":
        k = next((j + 1 for j, (s, _) in enumerate(rest) if text.startswith("\\\\", s)), len(rest))
    else:
        k = int(index)
    if not -len(rest) <= k < len(rest):
        return None
    s, e = _unquote(text, *rest[k])
    if not after:
        return s, e
    cut = text.find(after, s, e)
    if cut < 0:
        return None
    at = text.find("@", cut + 1, e)
    return cut + 1, at if at >= 0 else e


_SWITCH = re.compile(r"/[A-Za-z]+(?::|$)")  # a Windows switch (/user:x, /persistent:yes), not a word


def command_line(text: str, low: str) -> list[Span]:
    """A credential given to a command: its option (`sshpass -p X`, `docker login -p X`, `mysql -pX`,
    `curl -u user:X`, `openssl … -passout pass:X`) or its positional word (`rabbitmqctl add_user u X`,
    `sqlplus user/X@db`, `htpasswd -b file user X`), and a password echoed into `--password-stdin`."""
    _, table = _commands()
    found: list[Span] = []
    places = sorted(_command_words(text))
    for n, (pos, cmd) in enumerate(places):  # a command's words end where the next command starts
        limit = places[n + 1][0] - len(places[n + 1][1]) if n + 1 < len(places) else len(text)
        words = _words(text, pos, max(pos, limit))
        plain = [(s, e) for s, e in words if text[s] != "-" and not _SWITCH.fullmatch(text, s, e)]
        for subcommand, forms in _spec(table, cmd):
            if [text[s:e] for s, e in plain[: len(subcommand)]] != list(subcommand):
                continue
            rest = plain[len(subcommand) :]
            for form in forms:
                if form.startswith("#"):
                    spans = [_positional(text, rest, form)]
                else:
                    spans = [_option_value(text, words, i, form) for i in range(len(words))]
                found += [(s, e, "password") for s, e in filter(None, spans) if _value_ok(text, s, e)]
        if cmd == "htpasswd":
            found += _htpasswd(text, words)
    if "echo" in low or "printf" in low:
        found += [(*m.span("v"), "password") for m in _STDIN.finditer(text) if _value_ok(text, *m.span("v"))]
    return found


def _user_pass_at(text: str, at: int) -> list[Span]:
    """The password of a `user:password@host` without a scheme, around the '@' at `at`."""
    start = at
    while start > max(0, at - 200) and (text[start - 1].isalnum() or text[start - 1] in "_.%+-/:"):
        start -= 1
    m = _USER_PASS.fullmatch(text, start, at)
    if m is None or _HOST.match(text, at + 1) is None or not _value_ok(text, *m.span("v")):
        return []
    return [(*m.span("v"), "password")]


def _htpasswd(text: str, words: list[tuple[int, int]]) -> list[Span]:
    """`htpasswd -b[c] FILE USER PASSWORD`, `htpasswd -nb USER PASSWORD` (-C takes a number)."""
    flags = "".join(text[s + 1 : e] for s, e in words if text[s] == "-" and not text[s:e].startswith("--"))
    if "b" not in flags:
        return []
    plain = [(s, e) for s, e in words if text[s] != "-" and not text[s:e].isdigit()]
    index = 1 if "n" in flags else 2
    if len(plain) <= index:
        return []
    s, e = _unquote(text, *plain[index])
    return [(s, e, "password")] if _value_ok(text, s, e) else []


_STDIN = re.compile(
    r"\b(?:echo|printf)[ \t]+(?:-[neE]+[ \t]+)?(?P<q>['\"]?)(?:[\w.@-]{1,64}:)??(?P<v>[^\s'\"|]{4,256})(?P=q)[ \t]*\|"
    r"[ \t]*(?:sudo[ \t]+(?:-\w+[ \t]+)*-S\b|(?:sudo[ \t]+)?[^\n|;]{0,200}?(?:--password-stdin|--pass-stdin|chpasswd|"
    r"passwd[ \t]+--stdin|\bkinit\b))"
)
# user:password@host without a scheme (proxy settings, impacket's domain/user:pass@host, ftp user:pass@host)
_USER_PASS = re.compile(r"(?:[\w.%+-]{1,64}/)?[\w.%+-]{1,64}:(?P<v>[^\s:@/'\"]{3,128})")
_HOST = re.compile(r"(?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+|localhost|\[[0-9a-fA-F:]+\])(?::\d{1,5})?(?![\w@-])")


# -- markup and config -------------------------------------------------------------------------------------

_ELEMENT = re.compile(
    r"<(?P<tag>[A-Za-z_][\w.:-]{0,63})(?P<attrs>\s[^<>]{0,512}?)?>(?:<!\[CDATA\[(?P<cdata>[^\]\n]{1,512})\]\]>|"
    r"(?P<v>[^<>]{1,512}))</(?P=tag)\s*>"
)
_TAG = re.compile(r"<(?P<name>[A-Za-z_][\w.:-]{0,63})\s[^<>]{0,1024}>")
# PHP's define('DB_PASSWORD', 'X')
_DEFINE = re.compile(
    r"""\bdefine\([ \t]*(['"])(?P<k>[\w.-]{1,64})\1[ \t]*,[ \t]*(['"])(?P<v>[^'"\n]{1,512})\3[ \t]*\)"""
)
_ATTR = re.compile(r"""(?P<attr>[\w.:-]{1,40})\s*=\s*(?P<q>["'])(?P<val>[^"'<>\n]{0,512})(?P=q)""")
_NAMING = frozenset({"name", "key", "id", "property", "param", "setting", "field", "type"})
_VALUE_ATTRS = frozenset({"value", "val", "content", "default", "secret"})
# `- name: DB_PASSWORD` / `"name": "DB_PASSWORD",` then `value: …` (Kubernetes env, JSON name/value lists)
_NAME_VALUE = re.compile(
    r"""["']?name["']?[ \t]*:[ \t]*["']?(?P<n>[\w.-]{2,64})["']?[ \t]*(?:,[ \t]*|\n[ \t]*(?:-[ \t]*)?)"""
    r"""["']?value["']?[ \t]*:[ \t]*(?P<q>["']?)(?P<v>[^\s"',}\]]{1,512})"""
)
_NETRC = re.compile(r"\bmachine[ \t]+\S+(?:[ \t\n]+(?:login|account)[ \t]+\S+)*[ \t\n]+password[ \t]+(?P<v>\S+)")


def _names_secret(name: str) -> str | None:
    return secret_key(name.rsplit(":", 1)[-1])


def markup(text: str, low: str) -> list[Span]:
    """A secret as the content of an element named like one (`<password>X</password>`, `<apiKey>`), or named
    by an attribute (`<entry key="smtp.password">X</entry>`, `<add key="ApiKey" value="X"/>`, `<input
    type="password" value="X">`); a name/value pair (`- name: DB_PASSWORD` / `value: X`); a .netrc password."""
    found: list[Span] = []
    if "</" in text:
        for m in _ELEMENT.finditer(text):
            kind = _names_secret(m["tag"]) or next(
                (k for a in _ATTR.finditer(m["attrs"] or "") if a["attr"].lower() in _NAMING - {"type"}
                 and (k := _names_secret(a["val"]))), None)  # fmt: skip
            s, e = m.span("v" if m["v"] is not None else "cdata")
            while s < e and text[s].isspace():
                s += 1
            while e > s and text[e - 1].isspace():
                e -= 1
            if kind and _value_ok(text, s, e, strong=kind == "password") and "\n" not in text[s:e]:
                found.append((s, e, kind))
    if "value" in low or "secret" in low or "content" in low:
        for tag in _TAG.finditer(text):
            attrs = list(_ATTR.finditer(text, tag.start(), tag.end()))
            kind = _names_secret(tag["name"]) or next(
                (k for a in attrs if a["attr"].lower() in _NAMING and (k := _names_secret(a["val"]))), None
            )
            if kind is None:
                continue
            for a in attrs:
                s, e = a.span("val")
                if a["attr"].lower() in _VALUE_ATTRS and _value_ok(text, s, e, strong=kind == "password"):
                    found.append((s, e, kind))
        for m in _NAME_VALUE.finditer(text):
            kind = secret_key(m["n"]) or ("session_cookie" if _SESSION_NAME.search(m["n"]) else None)
            if kind and _value_ok(text, *m.span("v"), strong=kind == "password"):
                found.append((*m.span("v"), kind))
    if "define(" in low:
        for m in _DEFINE.finditer(text):
            kind, (s, e) = secret_key(m["k"]), m.span("v")
            if (
                kind
                and (kind == "password" or " " not in text[s:e])
                and _value_ok(text, s, e, strong=kind == "password")
            ):
                found.append((s, e, kind))
    if "machine" in low:
        found += [(*m.span("v"), "password") for m in _NETRC.finditer(text) if _value_ok(text, *m.span("v"))]
    return found


# -- cookies and session headers ---------------------------------------------------------------------------

# `Cookie: …`, `Set-Cookie: …`, and a few words between ("Cookie header in the HAR: …")
_COOKIE_HEADER = re.compile(
    r"(?i)\b(?P<set>set-)?cookies?(?:[ \t]+[\w-]{1,24}){0,4}?[\"']?[ \t]*:[ \t]*(?P<body>[^\n\"'`]*)"
)
# a session cookie by its well-known name anywhere (PHPSESSID=…, JSESSIONID=…, sessionid=…, laravel_session=…)
_SESSION_PAIR = re.compile(
    r"(?i)(?<![\w.-])(?P<n>[\w.-]{0,40}(?:sess(?:ion)?_?id|sessid|_session)|sid)=(?P<v>[^\s;,'\"&<>()\[\]{}]{16,512})"
)
_COOKIE_STRING = re.compile(
    r"(?:\bdocument\.cookie[ \t]*=[ \t]*|(?<![\w-])(?:-b|--cookie)[ \t]+)(?P<q>[\"'`]?)(?P<body>[^\n\"'`]*)"
)
_PAIR = re.compile(r"(?:^|;)[ \t]*(?P<n>[^=;\s,]{1,128})=(?P<v>[^;\s,]*)")
_SESSION_NAME = re.compile(SESSION_COOKIE, re.I)
# a header's shape, words joined by '-' (X-Session-Id, Session-Token): `cookies` keeps those naming a session
_HEADER = re.compile(r"(?<![\w-])(?P<name>[A-Za-z]+(?:-[A-Za-z]+)+)[\"']?[ \t]*:[ \t]*[\"']?(?P<v>[^\s\"',;}]{8,512})")
_SESSION_WORD = re.compile(r"(?i)session|sess|sid|csrf|xsrf")


def _cookie_pairs(text: str, start: int, body: str, *, first_only: bool) -> list[Span]:
    found: list[Span] = []
    for i, m in enumerate(_PAIR.finditer(body)):
        if first_only and i:
            break
        s, e = start + m.start("v"), start + m.end("v")
        value = text[s:e]
        if (
            _SESSION_NAME.search(m["n"])
            and len(value) >= 8
            and plausible(value, strong=True)
            and not not_a_value(value)
        ):
            found.append((s, e, "session_cookie"))
    return found


_COOKIE_DICT = re.compile(r"\bcookies[ \t]*=[ \t]*\{(?P<body>[^{}\n]{0,1024})\}")
_DICT_PAIR = re.compile(r"""(['"])(?P<n>[^'"\n]{1,128})\1[ \t]*:[ \t]*(['"])(?P<v>[^'"\n]{1,1024})\3""")
# res.cookie('sid', 'X'), response.set_cookie("sessionid", "X"), cookies.set(…), localStorage.setItem('authToken', 'X')
_COOKIE_CALL = re.compile(
    r"""(?:\bset_cookie|\.cookie|\bsetCookie|\bcookies\.set|\badd_cookie|Storage\.setItem)\([ \t]*(['"])(?P<n>[^'"\n]{1,128})\1"""
    r"""[ \t]*,[ \t]*(['"])(?P<v>[^'"\n]{1,1024})\3"""
)
# a cookies.txt (Netscape) line: domain, flag, path, secure, expiry, name, value
_COOKIE_JAR = re.compile(
    r"(?m)^[^\t\n]+\t(?:TRUE|FALSE)\t[^\t\n]*\t(?:TRUE|FALSE)\t\d+\t(?P<n>[^\t\n]+)\t(?P<v>[^\t\n]+)$"
)


def _session_value(text: str, name: str, s: int, e: int) -> bool:
    value = text[s:e]
    return bool(_SESSION_NAME.search(name)) and len(value) >= 8 and _value_ok(text, s, e) and not not_a_value(value)


def cookies(text: str, low: str) -> list[Span]:
    """A session cookie's value (`Cookie: sessionid=X`, `Set-Cookie: session=X; Path=/`, `curl -b 'sid=X'`,
    `document.cookie = "auth_token=X"`) and a session header's (`X-Session-Id: X`) when it looks generated."""
    found: list[Span] = []
    if "cookie" in low:
        for m in _COOKIE_HEADER.finditer(text):
            found += _cookie_pairs(text, m.start("body"), m["body"], first_only=bool(m["set"]))
    if "cookie" in low or "-b" in low:
        for m in _COOKIE_STRING.finditer(text):
            found += _cookie_pairs(text, m.start("body"), m["body"], first_only=m.group().startswith("document"))
    if "sess" in low or "sid=" in low:
        for m in _SESSION_PAIR.finditer(text):
            if _session_value(text, m["n"], *m.span("v")) and (generated(m["v"]) or random_looking(m["v"])):
                found.append((*m.span("v"), "session_cookie"))
    if "cookies" in low:
        for d in _COOKIE_DICT.finditer(text):
            for m in _DICT_PAIR.finditer(text, d.start("body"), d.end("body")):
                if _session_value(text, m["n"], *m.span("v")):
                    found.append((*m.span("v"), "session_cookie"))
    if "cookie" in low or "storage" in low:
        for m in _COOKIE_CALL.finditer(text):
            if _session_value(text, m["n"], *m.span("v")):
                found.append((*m.span("v"), "session_cookie"))
    if "\ttrue\t" in low or "\tfalse\t" in low:
        for m in _COOKIE_JAR.finditer(text):
            if _session_value(text, m["n"], *m.span("v")):
                found.append((*m.span("v"), "session_cookie"))
    if "-" in text:
        for m in _HEADER.finditer(text):
            name, value = m["name"], m["v"]
            if (
                _SESSION_WORD.search(name)
                and "cookie" not in name.lower()
                and "://" not in value
                and (generated(value) or random_looking(value))
            ):
                found.append((*m.span("v"), "session_token"))
    return found


# -- labels in other languages -----------------------------------------------------------------------------

_STRONG_SEP = r"[ \t]*(?:[:：=＝]|[—–]|-(?=[ \t]))[ \t]*"
_COPULA = (
    r"[ \t]+(?:is|was|ist|lautet|heißt|war|est|était|es|era|é|è|это|är|jest|je|là|adalah)[ \t]*:?[ \t]*"
    r"|[ \t]*(?:は|が)[ \t]*|(?:는|은|이|가)[ \t]+"
)
_QUOTES = "「『\"'“‘«"
# where a value ends: a space, a line's end, a closing quote, sentence punctuation before a space (not ! or ?: more
# often a password's last character here than a sentence's), a Japanese or Korean copula; a value glued to anything
# else ("1Passwordの共有保管庫") is a word of the sentence
_END = r"(?:[ \t]*$|\s|[」』\"'”’»。、]|[.,;:)](?=\s|$)|です|でした|だ(?!\w)|입니다|이다|이에요|예요)"


def _is_cjk(label: str) -> bool:
    """A label of a script written without spaces between words (Japanese, Korean compounds, Chinese, Thai)."""
    return any(
        "\u3040" <= c <= "\u30ff" or "\uac00" <= c <= "\ud7af" or "\u4e00" <= c <= "\u9fff" or "\u0e00" <= c <= "\u0e7f"
        for c in label
    )


_TAIL = re.compile(
    rf"(?P<mid>(?:[ \t]+[^\s.,;!?:：=。、「」\"'’()\[\]{{}}<>]{{1,24}}){{0,4}}?)"
    rf"(?:(?P<strong>{_STRONG_SEP})|(?P<copula>{_COPULA}))"
    rf"(?:(?:(?<=[:：=＝—–-])|(?<=[:：=＝—–-][ \t]))[ \t]*[\w.@-]{{1,64}}[ \t]+/[ \t]+)?"  # a user first: "…: ci / X"
    rf"(?:«[ \t]*|[{_QUOTES}])?(?P<v>[!-~]{{4,256}}?)(?={_END})",
    re.I | re.M,
)


def _in_word(c: str) -> bool:
    return c.isalnum() or c == "_"  # `key_password` is an identifier, not the label "password"


def _label_places(text: str, low: str) -> list[tuple[int, str]]:
    """(where each credential label ends, the label) in the text: a word of its own for a Latin or Cyrillic one,
    anywhere in a compound for a Japanese or Korean one (管理者パスワード)."""
    if len(low) != len(text):  # a character whose lower case is longer (İ): compare case by case
        low = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    found = []
    for label, _ in LABELS:
        i = low.find(label)
        while i >= 0:
            j = i + len(label)
            word = not _is_cjk(label)
            if not word or ((i == 0 or not _in_word(low[i - 1])) and (j == len(low) or not _in_word(low[j]))):
                found.append((j, label))
            i = low.find(label, i + 1)
    return found


_KINDS = {label: kind for label, kind in LABELS}
_ENGLISH = frozenset({"password", "passphrase", "passcode"})
# words between a label and its value that make it name something about the secret (its length, policy …)
_MID_NOT_SECRET = frozenset("länge richtlinie longueur politique longitud política длина политика".split())


def labels(text: str, low: str) -> list[Span]:
    """A value after a credential label in another language: `パスワード: X`, `비밀번호는 X 입니다`, `Passwort: X`,
    `Das Passwort für die Staging-Datenbank ist X`, `mot de passe : X`, `La contraseña del servidor es X`,
    `Пароль от базы: X`. After `:`/`=`/a dash any plausible value (not a word that begins a phrase); after a
    copula a value mixing letters and digits (a password) or a generated one (a key or token)."""
    found: list[Span] = []
    for pos, label in _label_places(text, low):
        m = _TAIL.match(text, pos)
        if m is None:
            found += _inverted(text, pos, label)
            continue
        if any(w in METADATA_WORDS or w in _MID_NOT_SECRET for w in re.findall(r"\w+", m["mid"].lower())):
            continue
        if m["mid"] and m["strong"] is not None and m["strong"][:1] == "=":  # `(m=64MiB`: the last word's own pair
            continue
        s, e = m.span("v")
        while e > s and text[e - 1] in "\"'`”’.,;:)]}>」』»":
            e -= 1
        value, kind = text[s:e], _KINDS[label]
        if not value or not plausible(value, strong=True) or value.startswith("-"):
            continue
        if m["strong"] is not None:
            # English `password: X` / `password = X` is the assignment scan's (`redact._assignments`), with its checks
            ok = label not in _ENGLISH and not prose(text, s, e, any_word=True)
        else:
            ok = _after_copula(value, kind)
        if ok:
            found.append((s, e, kind))
    return found


# the copula before the label ("für den Testnutzer lautet das Passwort X", "la clave es X" reads the other way)
_COPULA_BEFORE = re.compile(r"(?i)(?<!\w)(?:is|ist|lautet|heißt|est|es|è|é|är|jest|je)[ \t]+(?:\w+[ \t]+){0,2}$")
_BARE_VALUE = re.compile(rf"[ \t]+(?:«[ \t]*|[{_QUOTES}])?(?P<v>[!-~]{{6,256}}?)(?={_END})")


def _inverted(text: str, pos: int, label: str) -> list[Span]:
    """A label after its copula, the value right after it: "… lautet das Passwort X", "… is the password X"."""
    start = pos - len(label)
    if _COPULA_BEFORE.search(text, max(0, start - 40), start) is None or (m := _BARE_VALUE.match(text, pos)) is None:
        return []
    s, e = m.span("v")
    while e > s and text[e - 1] in "\"'`”’.,;:)]}>」』»":
        e -= 1
    kind = _KINDS[label]
    return [(s, e, kind)] if plausible(text[s:e], strong=True) and _after_copula(text[s:e], kind) else []


def _after_copula(value: str, kind: str) -> bool:
    """A value after a copula ("ist", "est", "は"), not after `:`: a password mixes letters and digits, a key or
    token looks generated (so "das Passwort ist falsch" stays)."""
    if kind == "password":
        return bool(re.search(r"[^\W\d_]", value) and re.search(r"\d", value)) and len(value) >= 6
    return generated(value) or random_looking(value)


def _command_keywords() -> tuple[str, ...]:
    """What must occur for `command_line` to run: each command with the space after it (`oc login `, `7z `), a
    prefix for `mysql*`; and `echo`/`printf` for a password piped to `--password-stdin`."""
    words = {(n[:-1] if n.endswith("*") else n + " ") for names, _ in CLI_CREDENTIALS for n in names.split("|")}
    return (*sorted(words), "echo", "printf")


_IDENTIFIED = re.compile(
    r"(?P<kw>(?i:\bIDENTIFIED[ \t]+BY))[ \t]+(?!PASSWORD\b|VALUES\b)(?P<q>['\"]?)(?P<v>[^\s'\";`]{1,128})(?P=q)"
)


def sql_password(text: str, low: str) -> list[Span]:
    """SQL's `IDENTIFIED BY 'X'` (MySQL, Oracle); `WITH PASSWORD 'X'` is an assignment (`redact._assignments`). In
    lower case ("identified by reviewers", "identified by 'name'") only a value mixing letters and digits counts."""
    found: list[Span] = []
    for m in _IDENTIFIED.finditer(text):
        sql = m["kw"].isupper() or (re.search(r"[A-Za-z]", m["v"]) and re.search(r"\d", m["v"]))
        if sql and _value_ok(text, *m.span("v")):
            found.append((*m.span("v"), "password"))
    return found


def user_pass_at(text: str, low: str) -> list[Span]:
    """`user:password@host` without a scheme (a proxy setting, `domain/user:password@host`)."""
    found: list[Span] = []
    at = text.find("@")
    while at > 0:
        found += _user_pass_at(text, at)
        at = text.find("@", at + 1)
    return found


FAMILIES: tuple[tuple[str, tuple[str, ...], Callable[[str, str], list[Span]]], ...] = (
    ("command_line", _command_keywords(), command_line),
    ("command_line", ("@",), user_pass_at),
    ("command_line", ("identified by",), sql_password),
    ("markup_config", ("</", "value", "content=", "machine", "define("), markup),
    (
        "cookie_session",
        ("cookie", "session", "sess", "sid", "csrf", "xsrf", "storage", "\ttrue\t", "\tfalse\t"),
        cookies,
    ),
    ("language_label", tuple({label for label, _ in LABELS}), labels),
)
