"""A local fake LLM server for the benches: the real OpenAI and Anthropic SDKs of the daemon talk to it.

It answers every ``POST /v1/chat/completions`` (OpenAI-compatible) and ``POST /v1/messages``
(Anthropic) with the same short streamed reply and its usage, at once, on ``http://127.0.0.1`` (no
TLS, no internet), from an event loop of its own thread. The SSE payloads are the ones the SDKs accept
(``reference/tooling.md``, §2). ``provider_workspace`` writes a bench workspace whose members use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import queue
import threading
from collections.abc import Iterator
from typing import Any

from aiohttp import web

from dominds.rtws import Rtws

REPLY = "Hello! This is a **fake** provider's reply."
PROVIDERS = ("openai", "anthropic")
"""The ``--provider`` choices besides ``scripted``: each is an ``apiType`` of the daemon."""

TEAM = """\
member_defaults: {{provider: fake, model: bench, diligence_push_max: 0}}
default_responder: lead
members:
  lead: {{name: Lead}}
  worker: {{name: Worker}}
"""
LLM = """\
providers:
  fake:
    name: Fake {api_type}
    apiType: {api_type}
    baseUrl: {base_url}
    apiKeyEnvVar: null
    models: {{bench: {{context_length: 200000}}}}
"""


def provider_workspace(rtws: Rtws, provider: str, url: str) -> None:
    """Point the members of a bench workspace (``_common.make_workspace``) at the fake server."""
    if provider not in PROVIDERS:
        raise ValueError(f"unknown provider {provider!r} (known: {', '.join(PROVIDERS)})")
    base_url = f"{url}/v1" if provider == "openai" else url  # the OpenAI SDK appends paths to /v1
    rtws.team_yaml.write_text(TEAM.format())
    rtws.llm_yaml.write_text(LLM.format(api_type=provider, base_url=base_url))


def _openai_frames() -> list[str]:
    def chunk(choices: list[dict[str, Any]], **extra: Any) -> str:
        return f"data: {json.dumps({'object': 'chat.completion.chunk', 'model': 'fake-gpt', 'choices': choices, **extra})}\n\n"

    half = len(REPLY) // 2
    return [
        chunk([{"index": 0, "delta": {"role": "assistant", "content": REPLY[:half]}}]),
        chunk([{"index": 0, "delta": {"content": REPLY[half:]}}]),
        chunk([{"index": 0, "delta": {}, "finish_reason": "stop"}]),
        chunk([], usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}),
        "data: [DONE]\n\n",
    ]


def _anthropic_frames() -> list[str]:
    def event(data: dict[str, Any]) -> str:
        return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n"

    half = len(REPLY) // 2
    start = {"id": "m", "model": "fake-claude", "role": "assistant", "content": [], "usage": {"input_tokens": 10, "output_tokens": 0}}
    return [
        event({"type": "message_start", "message": start}),
        event({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        event({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": REPLY[:half]}}),
        event({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": REPLY[half:]}}),
        event({"type": "content_block_stop", "index": 0}),
        event({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}}),
        event({"type": "message_stop"}),
    ]


class FakeLlm:
    """Counts the requests it answered (``requests``) by path."""

    def __init__(self) -> None:
        self.url = ""
        self.requests: dict[str, int] = {}
        self._frames = {
            "/v1/chat/completions": "".join(_openai_frames()).encode(),
            "/v1/messages": "".join(_anthropic_frames()).encode(),
        }

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        self.requests[request.path] = self.requests.get(request.path, 0) + 1
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(self._frames[request.path])
        await response.write_eof()
        return response

    def app(self) -> web.Application:
        app = web.Application()
        for path in self._frames:
            app.router.add_post(path, self._handle)
        return app


@contextlib.contextmanager
def fake_llm() -> Iterator[FakeLlm]:
    """The fake server on ``127.0.0.1:<free port>`` for the ``with`` block."""
    loop = asyncio.new_event_loop()
    started: queue.Queue[FakeLlm | BaseException] = queue.Queue()
    stop = asyncio.Event()

    async def serve() -> None:
        server = FakeLlm()
        runner = web.AppRunner(server.app(), shutdown_timeout=0.5)
        try:
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            server.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
            started.put(server)
            await stop.wait()
        except BaseException as exc:  # a failed start must not leave the bench waiting
            started.put(exc)
        finally:
            await runner.cleanup()

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    server = started.get(timeout=30)
    if isinstance(server, BaseException):
        raise server
    try:
        yield server
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=30)
        loop.close()


if __name__ == "__main__":  # a manual check: serve until interrupted
    with fake_llm() as running:
        print(running.url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
