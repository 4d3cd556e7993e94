import json
from pathlib import Path

import pytest

from memoryd.write.redact import REDACTED, Redaction, redact

CORPUS = json.loads((Path(__file__).parent / "data" / "redaction_corpus.json").read_text(encoding="utf-8"))
SECRETS = CORPUS["secrets"]
BENIGN = [case["text"] for case in CORPUS["benign"]]


def _case_id(case):
    return f"{case['kind']}:{case['text'][:40]}"


def test_corpus_is_big_enough():
    assert len(SECRETS) >= 45
    assert len(BENIGN) >= 45


@pytest.mark.parametrize("case", SECRETS, ids=[_case_id(c) for c in SECRETS])
def test_secret_is_removed(case):
    result = redact(case["text"])
    assert case["secret"] not in result.text
    assert REDACTED in result.text


@pytest.mark.parametrize("case", SECRETS, ids=[_case_id(c) for c in SECRETS])
def test_secret_kind_is_reported(case):
    assert case["kind"] in redact(case["text"]).kinds


def test_benign_texts_are_left_alone():
    changed = [(text, redact(text).text) for text in BENIGN if redact(text).text != text]
    report = "\n".join(f"  {before!r}\n  -> {after!r}" for before, after in changed)
    assert len(changed) <= 2, f"{len(changed)} benign texts changed:\n{report}"


def test_kinds_are_empty_exactly_when_text_is_unchanged():
    for text in BENIGN + [case["text"] for case in SECRETS]:
        result = redact(text)
        assert bool(result.kinds) == (result.text != text), text


def test_connection_string_keeps_user_and_host():
    result = redact("postgres://app:hunter2@db:5432/x")
    assert result == Redaction("postgres://app:[REDACTED]@db:5432/x", ("connection_string",))


def test_password_assignment_keeps_key():
    assert redact("password=hunter2").text == "password=[REDACTED]"


def test_api_key_keeps_key():
    result = redact("api_key: sk-proj-Fake0aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV1wX2yZ3")
    assert result.text == "api_key: [REDACTED]"
    assert result.kinds == ("openai_key",)


def test_bearer_keeps_scheme():
    jwt = (
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJmYWtlLXVzZXIiLCJuYW1lIjoiRmFrZSJ9."
        "ZmFrZS1zaWduYXR1cmUtZm9yLXRlc3Rz"
    )
    assert redact(f"Authorization: Bearer {jwt}").text == "Authorization: Bearer [REDACTED]"
    opaque = redact("Authorization: Bearer Fake0opaque1token2value")
    assert opaque.text == "Authorization: Bearer [REDACTED]"


def test_pem_block_is_replaced_whole():
    pem = (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAfake0key1material2\n"
        "FakeFake0123456789==\n-----END RSA PRIVATE KEY-----"
    )
    assert redact(f"key:\n{pem}\nend").text == "key:\n[REDACTED]\nend"


def test_quoted_value_keeps_quotes():
    assert redact('{"password": "Sup3r-Fake"}').text == '{"password": "[REDACTED]"}'


def test_chinese_key_keeps_context():
    assert redact("数据库密码：Fake#Pw2024，别外传").text == "数据库密码：[REDACTED]，别外传"


def test_kinds_in_order_of_appearance_without_duplicates():
    text = (
        "DB postgres://app:Fake-Pw-1@db:5432/app, key AKIAFAKEEXAMPLE12345, "
        "again postgres://ro:Fake-Pw-2@replica:5432/app"
    )
    result = redact(text)
    assert result.kinds == ("connection_string", "aws_access_key")
    assert result.text.count(REDACTED) == 3


def test_repeated_secret_is_removed_everywhere():
    result = redact("DB_PASSWORD=Zq8-Fake-Pw! then psql accepted Zq8-Fake-Pw!")
    assert result.text == "DB_PASSWORD=[REDACTED] then psql accepted [REDACTED]"


def test_publishable_stripe_key_is_kept():
    text = "pk_live_51FakeFAKEpublishableKEYonly0123456789abcdefGHIJ"
    assert redact(text) == Redaction(text, ())


@pytest.mark.parametrize("case", SECRETS, ids=[_case_id(c) for c in SECRETS])
def test_redaction_is_idempotent(case):
    once = redact(case["text"])
    twice = redact(once.text)
    assert twice.text == once.text
    assert twice.kinds == ()


def test_empty_string():
    assert redact("") == Redaction("", ())


def test_text_without_secrets_is_returned_unchanged():
    text = "Use pytest -q; the fixture lives in tests/conftest.py."
    assert redact(text) == Redaction(text, ())
