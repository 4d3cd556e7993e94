from __future__ import annotations

from memoryd.search.tokenize import normalize, tokens


def test_two_character_chinese_words_match_across_scripts() -> None:
    assert "连线" in tokens("設定資料庫連線池")
    assert "连线" in tokens("连线", query=True)


def test_identifiers_keep_whole_form_and_parts() -> None:
    t = tokens("get_session() returns None in login.py on PostgreSQL 16")
    for term in ("get_session", "get", "session", "login.py", "login", "postgresql", "16"):
        assert term in t


def test_camel_case_and_alnum_split() -> None:
    t = tokens("getSession PG16")
    assert {"getsession", "get", "session", "pg16", "pg", "16"} <= set(t)


def test_query_drops_stopwords_but_index_keeps_words() -> None:
    assert "the" not in tokens("the cache", query=True)
    assert "cach" in tokens("the caches", query=True)  # stemmed like the index


def test_normalize_for_dedup() -> None:
    assert normalize("  Use   PostgreSQL\n16 ") == normalize("use postgresql 16")
    assert normalize("ＡＢＣ") == "abc"
