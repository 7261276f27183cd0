"""The token that survives restarts, the panel's session cookie, and token rotation (issue 18, item 1).

The bug: every daemon start made a new token, so an open panel answered "Token required" with a native
``prompt()`` after each restart. Now the token is kept in ``.dominds/auth-token`` and a page opened with
``?auth=`` gets a cookie derived from it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from aiohttp import WSMsgType
from server_kit import TOKEN, ServeFactory

from dominds.server.auth import AccessToken, load_or_create_token, rotate_token, session_value


def _cookie_header(served_port: int | None, token: str) -> dict[str, str]:
    return {"Cookie": f"dominds_session_{served_port}={session_value(token)}"}


async def test_a_link_with_the_token_sets_the_session_cookie_and_leaves_the_address_bar(serve: ServeFactory) -> None:
    served = await serve()
    client = served.client
    entered = await client.get(f"/?auth={TOKEN}&dialog=x", allow_redirects=False)
    assert entered.status == 303
    assert entered.headers["Location"] == "/?dialog=x", "the token leaves the URL, the rest stays"
    cookie = entered.cookies[f"dominds_session_{client.port}"]
    assert cookie.value == session_value(TOKEN) and TOKEN not in cookie.value
    assert cookie["httponly"] and cookie["samesite"] == "Strict" and cookie["path"] == "/"
    # the session lasts 30 days (docs/panel.md); an untested Max-Age could change with every test green
    assert cookie["max-age"] == str(30 * 24 * 3600)
    client.session.cookie_jar.clear()  # from here on each request names its cookie explicitly

    headers = _cookie_header(client.port, TOKEN)
    listed = await client.get("/api/dialogs", headers=headers)
    assert listed.status == 200, "the cookie authenticates the API"
    ws = await client.ws_connect("/ws", protocols=("dominds",), headers=headers)
    assert (await ws.receive_json())["type"] == "welcome", "and the websocket"
    await ws.close()

    cross = await client.get("/api/dialogs", headers={**headers, "Sec-Fetch-Site": "same-site"})
    assert cross.status == 401, "another port of the same host gets the cookie too: it must not count there"
    forged = await client.get("/api/dialogs", headers=_cookie_header(client.port, "not-the-token-at-all"))
    assert forged.status == 401


async def test_a_wrong_token_in_the_link_is_dropped_and_flagged(serve: ServeFactory) -> None:
    served = await serve()
    entered = await served.client.get("/?auth=wrong", allow_redirects=False)
    assert entered.status == 303 and entered.headers["Location"] == "/?authFailed=1"
    assert not entered.cookies, "no cookie for a wrong token"


async def test_the_session_endpoint_sets_and_clears_the_cookie(serve: ServeFactory) -> None:
    served = await serve()
    refused = await served.client.post("/api/session", headers={"Authorization": "Bearer nope"})
    assert refused.status == 401
    accepted = await served.client.post("/api/session", headers={"Authorization": f"Bearer {TOKEN}"})
    assert accepted.status == 200
    assert accepted.cookies[f"dominds_session_{served.client.port}"].value == session_value(TOKEN)
    served.client.session.cookie_jar.clear()
    cleared = await served.client.delete("/api/session", headers={"Authorization": f"Bearer {TOKEN}"})
    assert cleared.status == 200 and cleared.cookies[f"dominds_session_{served.client.port}"].value == ""


def test_the_token_file_is_created_once_kept_private_and_reused(tmp_path: Path) -> None:
    path = tmp_path / ".dominds" / "auth-token"
    first = load_or_create_token(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_or_create_token(path) == first, "a restart keeps the token"
    os.chmod(path, 0o644)
    assert load_or_create_token(path) == first and stat.S_IMODE(path.stat().st_mode) == 0o600
    path.write_text("short\n")
    replaced = load_or_create_token(path)
    assert replaced != "short" and len(replaced) >= 32, "an unusable token file gets a fresh token"


async def test_a_rotated_token_applies_at_once_and_a_lost_file_keeps_auth_on(
    serve: ServeFactory, tmp_path: Path
) -> None:
    path = tmp_path / "token"
    old = load_or_create_token(path)
    served = await serve(token=AccessToken(old, path))
    client = served.client
    client.session.cookie_jar.clear()
    assert (await client.get("/api/dialogs", headers={"Authorization": f"Bearer {old}"})).status == 200
    new = rotate_token(path)
    assert (await client.get("/api/dialogs", headers={"Authorization": f"Bearer {old}"})).status == 401
    assert (await client.get("/api/dialogs", headers=_cookie_header(client.port, old))).status == 401, (
        "the old cookie dies with the old token"
    )
    assert (await client.get("/api/dialogs", headers={"Authorization": f"Bearer {new}"})).status == 200
    assert "[redacted" in served.engine.secrets.redact(f"token {new}", []), "the new token is a secret too"
    path.unlink()
    assert (await client.get("/api/dialogs")).status == 401, "no file: the last token stays in force"
    assert (await client.get("/api/dialogs", headers={"Authorization": f"Bearer {new}"})).status == 200
    ws = await client.ws_connect("/ws", protocols=("dominds", f"dominds-auth.{old}"))
    assert (await ws.receive()).type == WSMsgType.CLOSE
