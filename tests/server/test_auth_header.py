"""The ``Authorization`` header rule of ``server/auth.py`` through the daemon's HTTP API: only the
``Bearer`` scheme carries the token (mutants of a module-wide ``bin/mutate dominds.server.auth`` sample)."""

from __future__ import annotations

from server_kit import TOKEN, ServeFactory


async def test_the_token_under_another_scheme_or_an_empty_bearer_is_refused(serve: ServeFactory) -> None:
    """Mutant held: in ``bearer_token``, ``scheme.lower() == "bearer" and value.strip()`` with ``and`` made
    ``or``: the token sent as ``Basic <token>`` (or any other scheme) was accepted as a bearer token."""
    served = await serve()
    for header in (f"Basic {TOKEN}", f"Token {TOKEN}", "Bearer ", "Bearer"):
        refused = await served.client.get("/api/dialogs", headers={"Authorization": header})
        assert refused.status == 401, header
    for header in (f"Bearer {TOKEN}", f"bearer {TOKEN}", f"BEARER   {TOKEN}  "):
        accepted = await served.client.get("/api/dialogs", headers={"Authorization": header})
        assert accepted.status == 200, header


async def test_the_websocket_selects_the_panel_subprotocol_first_and_always_one_when_offered(serve: ServeFactory) -> None:
    """A browser fails the handshake when it offered subprotocols and the server selects none, and the
    token offered as a subprotocol should not be echoed back when ``dominds`` is there to select.
    Mutants held in ``choose_subprotocol``: ``if PANEL_SUBPROTOCOL in offered`` negated (the token was
    selected ahead of ``dominds`` offered second), and ``return offered[0] ...`` made ``return None`` (a
    client offering only the token subprotocol got none selected)."""
    served = await serve()
    token_first = await served.client.ws_connect("/ws", protocols=(f"dominds-auth.{TOKEN}", "dominds"))
    assert token_first.protocol == "dominds"
    assert (await token_first.receive_json())["type"] == "welcome"
    await token_first.close()
    only_auth = await served.client.ws_connect("/ws", protocols=(f"dominds-auth.{TOKEN}",))
    assert only_auth.protocol == f"dominds-auth.{TOKEN}"
    await only_auth.close()
