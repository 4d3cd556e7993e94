"""Supersede judgment and topic keys: labelled-pair accuracy, bands, and the LLM path against a
real local OpenAI-compatible HTTP server (no mocks of memoryd code)."""

from __future__ import annotations

import json
import re
import socket
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from memoryd.text.judge import Judgment, band, judge, judge_heuristic, suggest_topic_key
from memoryd.text.llm import LLMError, llm_from_env

DATA = Path(__file__).parent / "data" / "judge_pairs.jsonl"
TYPES = ("supersedes", "contradicts", "duplicates", "refines", "unrelated")
HELD_OUT = 12  # the last rows were labelled with the rest but never used to tune the rules


def _rows() -> list[dict[str, str]]:
    return [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]


# ---------------------------------------------------------------- labelled pairs


def test_labelled_pairs_are_large_and_balanced() -> None:
    rows = _rows()
    assert len(rows) >= 40
    assert len({(r["new"], r["old"]) for r in rows}) == len(rows)
    assert all(r["type"] in TYPES and r["lang"] in {"zh-Hans", "zh-Hant", "en", "mixed"} for r in rows)
    counts = Counter(r["type"] for r in rows)
    assert min(counts.values()) >= 8, counts
    assert sum(r["lang"].startswith("zh") for r in rows) >= 15
    assert sum(r["lang"] == "en" for r in rows) >= 15
    assert set(Counter(r["type"] for r in rows[-HELD_OUT:])) == set(TYPES)


def _confusion(rows: list[dict[str, str]], title: str) -> float:
    table: Counter[tuple[str, str]] = Counter()
    misses = []
    for r in rows:
        got = judge_heuristic(r["new"], r["old"])
        table[r["type"], got.type] += 1
        if got.type != r["type"]:
            misses.append(f"  {r['type']} → {got.type}: {r['new']!r} vs {r['old']!r} ({got.reason})")
    correct = sum(n for (want, got), n in table.items() if want == got)
    accuracy = correct / len(rows)
    short = {t: t[:5] for t in TYPES}
    print(f"\n{title}: {correct}/{len(rows)} = {accuracy:.2f}   (rows: label, columns: heuristic)")
    print(f"{'':>12}" + "".join(f"{short[t]:>7}" for t in TYPES))
    for want in TYPES:
        print(f"{want:>12}" + "".join(f"{table[want, got]:>7}" for got in TYPES))
    print("\n".join(misses))
    return accuracy


def test_heuristic_accuracy_on_labelled_pairs() -> None:
    rows = _rows()
    tuned = _confusion(rows[:-HELD_OUT], "tuned part")
    held_out = _confusion(rows[-HELD_OUT:], "held-out part")
    overall = _confusion(rows, "all pairs")
    print(f"tuned {tuned:.2f}, held-out {held_out:.2f}, overall {overall:.2f}")
    assert overall >= 0.75


def test_heuristic_judgments_are_well_formed_and_deterministic() -> None:
    for r in _rows():
        got = judge_heuristic(r["new"], r["old"])
        assert got.source == "heuristic"
        assert 0.0 <= got.confidence <= 1.0
        assert got.reason.strip() and got.reason.endswith(".")
        assert judge_heuristic(r["new"], r["old"]) == got


def test_spec_examples() -> None:
    solid = judge_heuristic("现在用 Solid", "前端用 React")
    assert solid.type == "supersedes" and "现在用" in solid.reason
    mongo = judge_heuristic("We don't use MongoDB", "We use MongoDB")
    assert mongo.type == "contradicts" and band(mongo.confidence, mongo.type) == "auto"
    pool = judge_heuristic("PostgreSQL 16 连接池设为 20", "用 PostgreSQL 16")
    assert pool.type == "refines" and "连接池" in pool.reason
    assert judge_heuristic("前端用 React 18", "前端用React 18。").type == "duplicates"
    assert judge_heuristic("部署用 Kubernetes", "測試用 pytest").type == "unrelated"


def test_traditional_cues_fold_like_simplified() -> None:
    for new in ("資料庫遷移到 PostgreSQL 16", "資料庫換成 PostgreSQL 16", "資料庫現在用 PostgreSQL 16"):
        got = judge_heuristic(new, "資料庫用 MySQL 8")
        assert got.type == "supersedes", (new, got)


def test_opposite_polarity_without_shared_topic_is_not_a_contradiction() -> None:
    got = judge_heuristic("Don't store secrets in Redis", "Redis is used as the session cache")
    assert got.type != "contradicts"
    assert band(got.confidence, got.type) != "auto"


@pytest.mark.parametrize(
    ("confidence", "type_", "expected"),
    [
        (0.95, "supersedes", "auto"),
        (0.85, "contradicts", "auto"),
        (0.849, "duplicates", "review"),
        (0.5, "refines", "review"),
        (0.49, "supersedes", "ignore"),
        (0.0, "refines", "ignore"),
        (0.99, "unrelated", "ignore"),
        (0.6, "unrelated", "ignore"),
    ],
)
def test_band(confidence: float, type_: str, expected: str) -> None:
    assert band(confidence, type_) == expected


def test_judge_without_llm_is_the_heuristic() -> None:
    got = judge("We switched from Jest to Vitest", "Unit tests run with Jest", llm=None)
    assert got == judge_heuristic("We switched from Jest to Vitest", "Unit tests run with Jest")
    assert got.source == "heuristic" and got.type == "supersedes"


# ---------------------------------------------------------------- topic keys

KEY = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
CONTENTS = [
    "React → Solid 的切换决策",
    "前端现在用 Solid，不再用 React",
    "PostgreSQL 16 连接池设为 20",
    "We switched from Jest to Vitest for unit tests",
    "Always run `make lint` before pushing",
    "部署前要先跑資料庫遷移",
    "日誌統一用 structlog 輸出",
    "我们周五下午喝茶",
    "The login.py handler hashes passwords with bcrypt, cost factor 12",
    "",
]


@pytest.mark.parametrize("content", CONTENTS)
def test_topic_key_shape_and_stability(content: str) -> None:
    key, source = suggest_topic_key(content, llm=None)
    assert source == "heuristic"
    assert KEY.fullmatch(key) and key.isascii(), key
    assert len(key.split("-")) <= 5, key
    assert all(suggest_topic_key(content, llm=None) == (key, "heuristic") for _ in range(3))


def test_topic_keys_follow_the_content() -> None:
    keys = [suggest_topic_key(c, llm=None)[0] for c in CONTENTS]
    assert len(set(keys)) == len(keys), keys
    react = suggest_topic_key("React → Solid 的切换决策", llm=None)[0]
    assert {"react", "solid", "migration"} <= set(react.split("-")), react


def test_topic_key_glossary_for_chinese_only_content() -> None:
    assert suggest_topic_key("資料庫連線池設為 20", llm=None)[0] == "database-connection-pool"
    assert suggest_topic_key("数据库连接池设为 20", llm=None)[0] == "database-connection-pool"
    assert suggest_topic_key("日志和权限的决策", llm=None)[0] == "logging-auth-decision"
    assert suggest_topic_key("前端快取策略", llm=None)[0].startswith("frontend-cache")
    unmapped = suggest_topic_key("我们周五下午喝茶", llm=None)[0]
    assert re.fullmatch(r"topic-[0-9a-f]{6}", unmapped)
    assert suggest_topic_key("我們週五下午喝茶", llm=None)[0] == unmapped  # script does not matter
    assert suggest_topic_key("我们周一上午开会", llm=None)[0] != unmapped


# ---------------------------------------------------------------- LLM configuration


def test_llm_from_env_without_configuration_is_none() -> None:
    assert llm_from_env({}) is None
    assert llm_from_env({"MEMORYD_LLM_MODEL": "x", "ANTHROPIC_API_KEY": ""}) is None


def test_base_url_without_model_is_a_clear_error() -> None:
    with pytest.raises(LLMError, match="MEMORYD_LLM_MODEL") as info:
        llm_from_env({"MEMORYD_LLM_BASE_URL": "http://127.0.0.1:9/v1"})
    assert info.value.code == "llm_error"


def test_anthropic_is_chosen_first() -> None:
    env = {"ANTHROPIC_API_KEY": "sk-test", "MEMORYD_LLM_BASE_URL": "http://127.0.0.1:9/v1"}
    llm = llm_from_env(env)
    assert llm is not None and llm.name.startswith("anthropic:claude-")
    named = llm_from_env({**env, "MEMORYD_LLM_MODEL": "claude-x"})
    assert named is not None and named.name == "anthropic:claude-x"


# ---------------------------------------------------------------- LLM path, real HTTP server


class _Server:
    """A tiny OpenAI-compatible server: answers each POST with the next canned reply."""

    def __init__(self) -> None:
        self.replies: list[tuple[int, str]] = []
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server API)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
                status, payload = server.replies.pop(0) if server.replies else (500, "no reply queued")
                data = payload.encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def chat(self, content: str, status: int = 200) -> None:
        completion = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "tiny",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        }
        self.replies.append((status, json.dumps(completion)))


@contextmanager
def serving() -> Iterator[_Server]:
    """A `_Server` answering on a thread until the block ends."""
    s = _Server()
    thread = threading.Thread(target=s.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield s
    finally:
        s.httpd.shutdown()
        s.httpd.server_close()


@pytest.fixture
def server() -> Iterator[_Server]:
    with serving() as s:
        yield s


def _llm(server: _Server):  # type: ignore[no-untyped-def]
    env = {"MEMORYD_LLM_BASE_URL": server.url, "MEMORYD_LLM_MODEL": "tiny", "MEMORYD_LLM_API_KEY": "k-1"}
    llm = llm_from_env(env)
    assert llm is not None and llm.name == f"openai-compatible:tiny@{server.url}"
    return llm


NEW, OLD = "前端现在用 Solid", "前端用 React 18"


def test_llm_judgment_is_used(server: _Server) -> None:
    server.chat(json.dumps({"type": "supersedes", "confidence": 0.93, "reason": "现在用 marks a switch."}))
    got = judge(NEW, OLD, llm=_llm(server))
    assert got == Judgment(type="supersedes", confidence=0.93, reason="现在用 marks a switch.", source="llm")
    request = server.requests[0]
    assert request["path"] == "/v1/chat/completions" and request["auth"] == "Bearer k-1"
    assert request["model"] == "tiny" and request["response_format"] == {"type": "json_object"}
    assert [m["role"] for m in request["messages"]] == ["system", "user"]
    assert NEW in request["messages"][1]["content"] and OLD in request["messages"][1]["content"]


def test_llm_answer_in_prose_is_parsed_and_confidence_clipped(server: _Server) -> None:
    server.chat('Sure!\n```json\n{"type": "refines", "confidence": 1.7, "reason": "adds detail"}\n```')
    got = judge(NEW, OLD, llm=_llm(server))
    assert (got.source, got.type, got.confidence) == ("llm", "refines", 1.0)


@pytest.mark.parametrize(
    "content",
    [
        "I think they are related.",
        json.dumps({"type": "maybe", "confidence": 0.9, "reason": "?"}),
        json.dumps({"type": "duplicates", "confidence": "high", "reason": "?"}),
        json.dumps(["supersedes", 0.9]),
    ],
)
def test_garbage_llm_answer_falls_back_to_heuristic(server: _Server, content: str) -> None:
    server.chat(content)
    got = judge(NEW, OLD, llm=_llm(server))
    expected = judge_heuristic(NEW, OLD)
    assert (got.source, got.type, got.confidence) == ("heuristic", expected.type, expected.confidence)
    assert got.reason.startswith(expected.reason) and "[LLM fallback: openai-compatible:tiny@" in got.reason
    assert "unusable judgment" in got.reason or "no JSON object" in got.reason


def test_llm_http_error_falls_back_to_heuristic(server: _Server) -> None:
    server.replies.append((500, '{"error": "boom"}'))
    llm = _llm(server)
    got = judge(NEW, OLD, llm=llm)
    assert got.source == "heuristic" and got.type == judge_heuristic(NEW, OLD).type
    assert "LLM fallback" in got.reason and "HTTP 500" in got.reason
    server.replies.append((500, '{"error": "boom"}'))
    with pytest.raises(LLMError, match="HTTP 500"):
        llm.complete_json("s", "u")


def test_unreachable_llm_falls_back_to_heuristic() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: connection refused
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    llm = llm_from_env({"MEMORYD_LLM_BASE_URL": f"http://127.0.0.1:{port}/v1", "MEMORYD_LLM_MODEL": "m"})
    got = judge(NEW, OLD, llm=llm)
    assert got.source == "heuristic" and "LLM fallback" in got.reason


def test_llm_topic_key(server: _Server) -> None:
    llm = _llm(server)
    server.chat(json.dumps({"topic_key": "frontend-react-solid"}))
    assert suggest_topic_key("前端从 React 换成 Solid", llm=llm) == ("frontend-react-solid", "llm")
    server.chat(json.dumps({"topic_key": "Frontend: React → Solid!"}))
    key, source = suggest_topic_key("前端从 React 换成 Solid", llm=llm)
    assert source == "heuristic" and key == suggest_topic_key("前端从 React 换成 Solid", llm=None)[0]
    server.replies.append((500, "{}"))
    assert suggest_topic_key("前端从 React 换成 Solid", llm=llm)[1] == "heuristic"
