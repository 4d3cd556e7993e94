"""Issue 37: the team server's backoff over real HTTP, on PostgreSQL: many people behind one address (every test
client here comes from 127.0.0.1, as a company NAT or a reverse proxy makes it look), one of them failing.

- Failures from one address held back a colleague's valid, never-used token for 15-60 s; now a valid token
  is never refused for someone else's failures, while a flood of wrong tokens is still answered 429.
- Behind a trusted proxy (`MEMORYD_TRUSTED_PROXIES`), `X-Forwarded-For` names the client; from any other peer
  it is ignored, and what a client writes into it never chooses its address.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from memoryd.engine import Engine, HashEmbedder
from memoryd.shared.config import Settings

from ..mcp.clients import HEADERS, INIT, http_server

pytestmark = pytest.mark.anyio
SCOPE = json.dumps({"workspace": "acme", "repository": "api", "branch": "main"})


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def store(pg_server: Any, tmp_path: Path) -> Iterator[tuple[str, Path, dict[str, str]]]:
    dsn = pg_server.fresh_database()
    home = tmp_path / "home"
    with Engine.open(Settings(home=home, db=dsn), embedder=HashEmbedder(), authority="operator", cwd=home) as op:
        tokens = {name: op.create_token(name).token for name in ("alice", "bob", "carol", "dave", "erin", "p1", "p2")}
    yield dsn, home, tokens
    pg_server.drop_database(dsn)


def _wrong(token: str, i: int) -> str:
    tail = f"{i:04d}"
    return token[:-4] + (tail if not token.endswith(tail) else "ZZZZ")


def _made_up(i: int) -> str:
    return f"mdt_{'0' * 23}{i:03d}_{'Q' * 40}{i:03d}"  # an id no token has, a secret of its own


async def _flood(client: httpx2.AsyncClient, port: int, token: Any, **headers: str) -> list[int]:
    """Wrong tokens (`token(i)`) until the address is held for 4 s or more (the hold doubles with each failure
    that gets through: 1 s, 2 s, 4 s …); the answers' statuses."""
    statuses: list[int] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        r = await _post(client, port, token(len(statuses)), **headers)
        statuses.append(r.status_code)
        if r.status_code == 429 and int(r.headers["retry-after"]) >= 4:
            return statuses
    raise AssertionError(f"never held for 4 s: {statuses}")


async def _post(client: httpx2.AsyncClient, port: int, token: str, **headers: str) -> httpx2.Response:
    return await client.post(f"http://127.0.0.1:{port}/mcp", json=INIT,
                             headers={**HEADERS, "Authorization": f"Bearer {token}", "Memoryd-Scope": SCOPE, **headers})  # fmt: skip


@pytest.mark.slow
async def test_many_clients_behind_one_address_are_not_locked_out(store: tuple[str, Path, dict[str, str]]) -> None:
    dsn, home, tokens = store
    with http_server(home, home, "--team", MEMORYD_DB=dsn) as port:
        async with httpx2.AsyncClient(timeout=60) as client:
            assert (await _post(client, port, tokens["alice"])).status_code == 200  # alice worked before
            # someone behind the address: made-up ids, wrong secrets of colleagues' ids, until refused for a while
            # (the hold doubles with each failure that gets through: 1 s, 2 s, 4 s …)
            statuses = await _flood(
                client, port, lambda i: _made_up(i) if i % 2 else _wrong(tokens[("p1", "p2")[i % 4 // 2]], i)
            )
            assert statuses[:5] == [401] * 5 and statuses[-1] == 429, statuses
            # the flood is answered 429 the same way for a made-up id and for a real id's wrong secret
            made_up, real = await _post(client, port, _made_up(99)), await _post(client, port, _wrong(tokens["p1"], 99))
            for r in (made_up, real):
                assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1, r.text
                assert r.json()["error"] == "too_many_attempts"
                assert re.fullmatch(r"too many failed attempts with this token or from this address; retry in \d+ s",
                                    r.json()["message"])  # fmt: skip
            assert abs(int(made_up.headers["retry-after"]) - int(real.headers["retry-after"])) <= 1
            # the colleagues behind the same address, valid tokens never used before: served, at once (a person
            # whose own id was guessed there is the documented exception: test_tenancy, "frank")
            for name in ("carol", "dave", "erin", "bob", "alice"):
                r = await _post(client, port, tokens[name])
                assert r.status_code == 200 and '"serverInfo"' in r.text, (name, r.status_code, r.text)


@pytest.mark.slow
async def test_trusted_proxy_names_the_client(store: tuple[str, Path, dict[str, str]]) -> None:
    dsn, home, tokens = store
    for proxies in ("127.0.0.1", "10.0.0.0/8, 127.0.0.0/8"):  # an address, or networks
        with http_server(home, home, "--team", MEMORYD_DB=dsn, MEMORYD_TRUSTED_PROXIES=proxies) as port:
            async with httpx2.AsyncClient(timeout=60) as client:
                flooder = {"X-Forwarded-For": "203.0.113.9"}
                await _flood(client, port, _made_up, **flooder)
                assert (await _post(client, port, _made_up(120), **flooder)).status_code == 429
                # another client behind the proxy is not held back by the flooder's failures
                assert (
                    await _post(client, port, _made_up(121), **{"X-Forwarded-For": "203.0.113.10"})
                ).status_code == 401
                # the flooder cannot choose its address: what it writes comes before what the proxy appended
                spoofed = {"X-Forwarded-For": "203.0.113.10, 203.0.113.9"}
                assert (await _post(client, port, _made_up(122), **spoofed)).status_code == 429
                # proxies in a chain are skipped; the header may come as several lines
                chained = [("X-Forwarded-For", "203.0.113.9"), ("X-Forwarded-For", "10.1.2.3")]
                r = await client.post(f"http://127.0.0.1:{port}/mcp", json=INIT, headers=[
                    *HEADERS.items(), ("Authorization", f"Bearer {_made_up(123)}"), ("Memoryd-Scope", SCOPE), *chained])  # fmt: skip
                assert r.status_code == 429 if proxies != "127.0.0.1" else r.status_code == 401, (proxies, r.text)
    # without the setting, the header is ignored: every client is the peer, 127.0.0.1
    with http_server(home, home, "--team", MEMORYD_DB=dsn) as port:
        async with httpx2.AsyncClient(timeout=60) as client:
            await _flood(client, port, _made_up, **{"X-Forwarded-For": "203.0.113.1"})  # its own address, it says
            assert (await _post(client, port, _made_up(130), **{"X-Forwarded-For": "203.0.113.99"})).status_code == 429
            assert (
                await _post(client, port, tokens["carol"], **{"X-Forwarded-For": "203.0.113.99"})
            ).status_code == 200


def test_a_bad_trusted_proxy_setting_stops_the_server_at_start(tmp_path: Path) -> None:
    import subprocess

    from ..mcp.clients import SERVER, server_env

    r = subprocess.run([SERVER, "--transport", "http", "--team"], capture_output=True, text=True, timeout=60,
                       env=server_env(tmp_path, MEMORYD_TRUSTED_PROXIES="10.0.0.1, proxy.lan"))  # fmt: skip
    assert r.returncode != 0 and "MEMORYD_TRUSTED_PROXIES" in r.stderr, r.stderr
    assert "'proxy.lan' is not an IP address or network (CIDR, e.g. 10.0.0.0/8)" in r.stderr, r.stderr
