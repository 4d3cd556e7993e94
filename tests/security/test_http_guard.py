"""HTTP with a token: Host/Origin allow-list on any bind, long tokens only, constant-time, any-case scheme."""

from __future__ import annotations

import hmac
import os
import subprocess
from pathlib import Path
from typing import Any

import httpx2
import pytest

from memoryd.mcp import transport
from memoryd.mcp.transport import http_guard

from ..mcp.clients import HEADERS, INIT, SERVER, free_port, http_server

pytestmark = pytest.mark.anyio
TOKEN = "x9Kq2LmN4pR7sT1vW3yZ5bD8fH0jC6gA"  # 32 characters, for tests only


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize("token", ["x", "s3cret", "a" * 31])
def test_short_tokens_are_refused_at_start(tmp_path: Path, token: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    r = subprocess.run(
        [SERVER, "--transport", "http", "--host", "0.0.0.0", "--port", str(free_port())],
        env={**env, "MEMORYD_HOME": str(tmp_path), "MEMORYD_TOKEN": token}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode != 0
    assert f"MEMORYD_TOKEN is {len(token)} characters; use at least 32" in r.stderr


async def test_off_loopback_bind_checks_host_origin_token_and_scheme(tmp_path: Path) -> None:
    args = ("--profile", "hmg", "--allowed-host", "memoryd.lan")
    with http_server(tmp_path / "home", tmp_path, *args, host="0.0.0.0", MEMORYD_TOKEN=TOKEN) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        async with httpx2.AsyncClient() as client:

            async def post(**headers: str) -> httpx2.Response:
                return await client.post(url, json=INIT, headers={**HEADERS, **headers})

            good = {"Authorization": f"Bearer {TOKEN}"}
            assert (await post(**good)).status_code == 200
            for scheme in ("bearer", "BEARER", "BeArEr"):  # RFC 7235: the scheme is case-insensitive
                assert (await post(Authorization=f"{scheme} {TOKEN}")).status_code == 200, scheme
            for bad in ("", f"Basic {TOKEN}", f"Bearer {TOKEN[:-1]}", f"Bearer {TOKEN}x", "Bearer", f"Token {TOKEN}"):
                r = await post(Authorization=bad)
                assert r.status_code == 401 and r.json() == {"error": "unauthorized"}, bad
            for host in ("evil.example", "evil.example:80", "192.0.2.1"):
                r = await post(**good, Host=host)
                assert r.status_code == 403 and "is not allowed" in r.json()["message"], host
            assert (await post(**good, Host=f"memoryd.lan:{port}")).status_code == 200  # --allowed-host
            assert (await post(**good, Host=f"localhost:{port}")).status_code == 200
            r = await post(**good, Origin="http://evil.example")
            assert r.status_code == 403 and "Origin" in r.json()["message"]
            assert (await post(**good, Origin=f"http://localhost:{port}")).status_code == 200


async def test_token_comparison_is_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    guarded = http_guard(app, token=TOKEN, allowed_hosts={"testserver"})
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=guarded), base_url="http://testserver") as c:
        assert (await c.get("/mcp", headers={"Authorization": "Bearer wrong"})).status_code == 401
        assert (await c.get("/mcp", headers={"Authorization": f"bearer {TOKEN}"})).status_code == 204
    assert calls == [(b"wrong", TOKEN.encode()), (TOKEN.encode(), TOKEN.encode())]


async def test_bad_bodies_get_a_json_rpc_error(tmp_path: Path) -> None:
    with http_server(tmp_path / "home", tmp_path) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        call = (
            b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"mem_search","arguments":{"query":"%s"}}}'
        )
        async with httpx2.AsyncClient(timeout=20) as client:
            r = await client.post(url, content=call % b"a\xff\xfeb", headers=HEADERS)
            assert r.status_code == 400 and r.json()["error"]["code"] == -32700 and r.json()["id"] == 7
            assert "not valid UTF-8" in r.json()["error"]["message"]
            r = await client.post(url, content=call % b"a\\ud800b", headers=HEADERS)
            assert r.status_code == 400 and r.json()["error"]["code"] == -32602 and r.json()["id"] == 7
            assert "lone surrogate U+D800" in r.json()["error"]["message"]
            r = await client.post(url, content=b"{not json", headers=HEADERS)
            assert r.status_code == 400 and r.json()["error"]["code"] == -32700
            big = b"x" * (transport.MAX_BODY_BYTES + 1)
            r = await client.post(url, content=big, headers=HEADERS)
            assert r.status_code == 413 and "larger than" in r.json()["error"]["message"]


async def test_the_console_and_the_transport_decide_alike() -> None:
    """One implementation (memoryd.shared.http_security): the same Host/Origin/token decisions on both surfaces;
    the console adds its cookie, CSRF and same-origin (port included) checks on top."""
    from memoryd.shared.http_security import allowed_names, origins
    from memoryd.ui.security import ConsoleGuard

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    names = allowed_names("0.0.0.0", ["memoryd.lan"])
    surfaces = {
        "transport": http_guard(app, token=TOKEN, allowed_hosts=names),
        "console": ConsoleGuard(app, token=TOKEN, hosts=origins(names, 8766)),
    }
    cases = [  # (Host, Origin, Authorization) -> allowed?
        ("localhost:8766", None, f"Bearer {TOKEN}", True),
        ("memoryd.lan:8766", "http://memoryd.lan:8766", f"bEaReR {TOKEN}", True),
        ("[::1]:8766", None, f"BEARER {TOKEN}", True),
        ("evil.example:8766", None, f"Bearer {TOKEN}", False),
        ("localhost:8766", "http://evil.example", f"Bearer {TOKEN}", False),
        ("localhost:8766", None, f"Bearer {TOKEN[:-1]}", False),
        ("localhost:8766", None, f"Basic {TOKEN}", False),
        ("localhost:8766", None, None, False),
    ]
    for name, guarded in surfaces.items():
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=guarded), base_url="http://x") as c:
            for host, origin, auth, allowed in cases:
                headers = {
                    "Host": host,
                    **({"Origin": origin} if origin else {}),
                    **({"Authorization": auth} if auth else {}),
                }
                r = await c.get("/health", headers=headers)
                assert (r.status_code < 400) == allowed, (name, host, origin, auth, r.status_code)
                if not allowed and "evil" in host + (origin or ""):
                    assert r.status_code == 403 and "is not allowed" in r.text, (name, r.text)


def test_memoryd_ui_and_memoryd_mcp_refuse_the_same_tokens(tmp_path: Path) -> None:
    from memoryd.shared.http_security import TokenError, server_token

    for host, token in (("0.0.0.0", None), ("0.0.0.0", ""), ("127.0.0.1", "a" * 31), ("192.0.2.1", "x")):
        with pytest.raises(TokenError):
            server_token(host, token)
    assert server_token("127.0.0.1", None) is None and server_token("0.0.0.0", TOKEN) == TOKEN
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env.update(MEMORYD_HOME=str(tmp_path), MEMORYD_TOKEN="short", MEMORYD_EMBEDDER="hash")
    mcp = subprocess.run([SERVER, "--transport", "http", "--port", str(free_port())], env=env, capture_output=True,
                         text=True, timeout=60)  # fmt: skip
    ui = subprocess.run([str(Path(SERVER).with_name("memoryd")), "ui", "--no-browser", "--port", "0"], env=env,
                        capture_output=True, text=True, timeout=60)  # fmt: skip
    for r in (mcp, ui):
        assert r.returncode != 0 and "MEMORYD_TOKEN is 5 characters; use at least 32 random characters" in r.stderr


@pytest.mark.parametrize(
    ("peer", "forwarded", "trusted", "client"),
    [
        ("10.0.0.5", [b"203.0.113.9"], "", "10.0.0.5"),  # no trusted proxy: the header is ignored
        ("198.51.100.1", [b"203.0.113.9"], "10.0.0.5", "198.51.100.1"),  # a peer that is no proxy: ignored
        ("10.0.0.5", [b"203.0.113.9"], "10.0.0.5", "203.0.113.9"),
        ("10.0.0.5", [b"1.1.1.1, 203.0.113.9"], "10.0.0.5", "203.0.113.9"),  # the client's own text is left of it
        ("10.0.0.5", [b"203.0.113.9, 10.1.2.3"], "10.0.0.5,10.1.0.0/16", "203.0.113.9"),  # a chain of proxies
        ("10.0.0.5", [b"203.0.113.9", b"10.1.2.3"], "10.0.0.0/8", "203.0.113.9"),  # the header on two lines
        ("10.0.0.5", [b"10.1.2.3"], "10.0.0.0/8", "10.1.2.3"),  # proxies only: the farthest one
        ("10.0.0.5", [], "10.0.0.5", "10.0.0.5"),  # no header: the proxy itself
        ("10.0.0.5", [b"unknown"], "10.0.0.5", "10.0.0.5"),  # not an address: the last proxy reached
        ("10.0.0.5", [b"203.0.113.9:4711"], "10.0.0.5", "203.0.113.9"),  # a port, as some proxies add
        ("10.0.0.5", [b"[2001:db8::7]:443"], "10.0.0.5", "2001:db8::7"),
        ("::1", [b"2001:db8::7"], "::1", "2001:db8::7"),
        (None, [b"203.0.113.9"], "10.0.0.5", None),
    ],
)
def test_client_address_believes_only_trusted_proxies(
    peer: str | None, forwarded: list[bytes], trusted: str, client: str | None
) -> None:
    from memoryd.shared.http_security import client_address, parse_networks

    assert client_address(peer, forwarded, parse_networks(trusted)) == client


def test_trusted_proxies_setting_names_a_bad_entry() -> None:
    from pydantic import ValidationError

    from memoryd.shared.config import Settings
    from memoryd.shared.http_security import parse_networks

    assert [str(n) for n in parse_networks(" 10.0.0.5, 10.1.0.0/16 ,::1,")] == ["10.0.0.5/32", "10.1.0.0/16", "::1/128"]
    with pytest.raises(
        ValidationError, match=r"'proxy\.lan' is not an IP address or network \(CIDR, e\.g\. 10\.0\.0\.0/8\)"
    ):
        Settings(trusted_proxies="10.0.0.1, proxy.lan")
