"""Token and Origin rules for ``/ws`` and ``/api/*``; ``--no-auth`` only on loopback."""

from __future__ import annotations

import pytest
from aiohttp import WSMsgType
from server_kit import TOKEN, ServeFactory

from dominds.server.auth import host_header_is_loopback, tokens_match
from dominds.server.listen import is_loopback_host
from dominds.server.run import ServerError, run_server


async def test_api_requires_the_bearer_token(serve: ServeFactory) -> None:
    served = await serve()
    missing = await served.client.get("/api/dialogs")
    assert missing.status == 401 and (await missing.json()) == {"error": "unauthorized"}
    assert missing.headers["WWW-Authenticate"] == "Bearer"
    wrong = await served.client.get("/api/dialogs", headers={"Authorization": "Bearer nope"})
    assert wrong.status == 401
    right = await served.client.get("/api/dialogs", headers={"Authorization": f"Bearer {TOKEN}"})
    assert right.status == 200
    health = await served.client.get("/api/health")
    assert health.status == 200 and (await health.json())["ok"] is True, "health is public"
    panel = await served.client.get("/")
    assert panel.status == 200 and "<script" in await panel.text(), "static files are public"
    assert "default-src 'self'" in panel.headers["Content-Security-Policy"]
    assert panel.headers["Referrer-Policy"] == "no-referrer", "?auth= must not leak through a Referer"
    script = await served.client.get("/static/app.js")
    assert script.status == 200 and "import" in await script.text()


@pytest.mark.parametrize("protocols", [(), ("dominds", "dominds-auth.wrong")])
async def test_websocket_without_a_valid_token_is_closed_with_4401(
    serve: ServeFactory, protocols: tuple[str, ...]
) -> None:
    served = await serve()
    ws = await served.client.ws_connect("/ws", protocols=protocols)
    msg = await ws.receive()
    assert msg.type == WSMsgType.CLOSE and msg.data == 4401 and msg.extra == "unauthorized"


async def test_websocket_accepts_subprotocol_or_bearer_header(serve: ServeFactory) -> None:
    served = await serve()
    via_protocol = await served.client.ws_connect("/ws", protocols=("dominds", f"dominds-auth.{TOKEN}"))
    assert via_protocol.protocol == "dominds"
    assert (await via_protocol.receive_json())["type"] == "welcome"
    await via_protocol.close()
    only_auth = await served.client.ws_connect("/ws", protocols=(f"dominds-auth.{TOKEN}",))
    assert (await only_auth.receive_json())["type"] == "welcome"
    await only_auth.close()
    via_header = await served.client.ws_connect("/ws", headers={"Authorization": f"Bearer {TOKEN}"})
    assert (await via_header.receive_json())["type"] == "welcome"
    await via_header.close()


async def test_foreign_origin_is_refused(serve: ServeFactory) -> None:
    served = await serve(allowed_origins=("http://localhost:9999",))
    auth = {"Authorization": f"Bearer {TOKEN}"}
    foreign = await served.client.get(
        "/ws",
        headers={**auth, "Origin": "http://evil.example", "Connection": "Upgrade", "Upgrade": "websocket"},
    )
    assert foreign.status == 403
    api = await served.client.get("/api/dialogs", headers={**auth, "Origin": "http://evil.example"})
    assert api.status == 403 and (await api.json())["error"] == "forbidden origin"
    own = f"http://{served.client.host}:{served.client.port}"
    same = await served.client.ws_connect("/ws", headers={**auth, "Origin": own})
    assert (await same.receive_json())["type"] == "welcome"
    await same.close()
    listed = await served.client.ws_connect("/ws", headers={**auth, "Origin": "http://localhost:9999"})
    assert (await listed.receive_json())["type"] == "welcome"
    await listed.close()


async def test_no_auth_serves_loopback_host_names_only(serve: ServeFactory) -> None:
    served = await serve(token=None)
    ok = await served.client.get("/api/dialogs")
    assert ok.status == 200
    rebinding = await served.client.get("/api/dialogs", headers={"Host": "attacker.example:5666"})
    assert rebinding.status == 403
    ws = await served.client.ws_connect("/ws")
    assert (await ws.receive_json())["type"] == "welcome"
    await ws.close()


async def test_no_auth_is_refused_off_loopback(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from dominds.driver.engine import Engine
    from dominds.rtws import Rtws

    engine = Engine(Rtws(tmp_path))
    with pytest.raises(ServerError, match="loopback"):
        await run_server(engine, "0.0.0.0", 0, token=None, on_ready=lambda url: None)


def test_helpers() -> None:
    assert tokens_match("abc", "abc") and not tokens_match("abd", "abc") and not tokens_match(None, "abc")
    assert all(is_loopback_host(h) for h in ("127.0.0.1", "::1", "[::1]", "localhost", "127.5.0.1"))
    assert not any(is_loopback_host(h) for h in ("0.0.0.0", "192.168.1.2", "example.com", ""))


def test_host_header_is_loopback_reads_the_requests_host() -> None:
    """The old check here was ``assert callable(host_header_is_loopback)``, which no mutant of the function
    could fail. The Host header decides: loopback names and addresses (with or without a port) pass; any
    other host, or one that does not parse, does not."""
    from aiohttp.test_utils import make_mocked_request

    def loopback(host: str) -> bool:
        return host_header_is_loopback(make_mocked_request("GET", "/api/dialogs", headers={"Host": host}))

    assert all(loopback(h) for h in ("127.0.0.1:8080", "localhost", "[::1]:9000", "127.9.9.9"))
    assert not any(loopback(h) for h in ("example.com", "evil.example:8080", "0.0.0.0:80", "192.168.1.2"))
    # a loopback name with a port that does not parse: refused (a sampled mutant answering True here survived)
    assert not any(loopback(h) for h in ("127.0.0.1:99999", "localhost:abc"))
