"""What a generation sent, captured from the SDK clients' HTTP client (``llm/wire_capture.py``)."""

from __future__ import annotations

import httpx2

from dominds.llm.wire_capture import SentRequest, capturing, with_capture


async def test_the_body_is_kept_and_no_secret_of_the_url_or_headers() -> None:
    """Some gateways take the key in the query string; headers carry it always: neither is kept."""
    seen: list[bytes] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.content)
        return httpx2.Response(200, json={})

    client = with_capture(httpx2.AsyncClient(transport=httpx2.MockTransport(answer)))
    assert with_capture(client).event_hooks["request"].count(client.event_hooks["request"][0]) == 1, "added once"
    told: list[tuple[SentRequest, int]] = []
    async with client:
        await client.post("http://127.0.0.1:9/v1/messages", content=b"{}")  # not capturing: nothing kept
        with capturing(lambda sent, attempt: told.append((sent, attempt))) as capture:
            for _ in range(2):
                await client.post(
                    "http://user:pw-secret@127.0.0.1:9/v1/messages?key=q-secret",
                    content=b'{"messages":[]}',
                    headers={"x-api-key": "h-secret"},
                )
    assert capture.attempts == 2 and [attempt for _, attempt in told] == [1, 2]
    assert capture.last == SentRequest("POST", "http://127.0.0.1:9/v1/messages", b'{"messages":[]}')
    assert seen[-1] == capture.last.body
    assert "secret" not in repr(capture.last)
