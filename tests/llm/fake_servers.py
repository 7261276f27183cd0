"""A fake LLM HTTP server on 127.0.0.1 speaking the Anthropic and OpenAI wire formats.

The real SDKs talk to it (payloads as in ``reference/tooling.md`` §2). Each test scripts it with a
queue of ``Reply``s or a ``responder`` function; it records every request body and notices when a
client hangs up in the middle of a slow stream. Also here: ``RecordingReceiver``, a receiver that
keeps what a provider streamed and enforces the no-overlap rule like the driver's does.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import queue
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from dominds.llm.base import StreamProtocolError
from dominds.store.course_records import Usage


@dataclass
class Reply:
    """One scripted HTTP answer: a JSON body, or a list of SSE frames."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    frames: list[str] = field(default_factory=list)
    delay_s: float = 0.0
    """Pause before each frame (a slow stream)."""
    drop_after: int | None = None
    """Close the TCP connection abruptly after this many frames (no SSE error, no EOF)."""


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    """Lower-cased names."""
    body: dict[str, Any]
    raw: bytes = b""
    """The body exactly as it arrived."""


class FakeLlmServer:
    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.responder: Callable[[RecordedRequest], Reply] | None = None
        self.requests: list[RecordedRequest] = []
        self.disconnects: list[float] = []
        """``time.monotonic()`` when a client hung up during a stream."""
        self._hung_up = asyncio.Event()
        self.strict_tool_history = False
        """Refuse (400) a request whose tool calls a real server refuses (``tool_history_problems``)."""
        self.url = ""
        """``http://127.0.0.1:<port>`` once running (OpenAI clients append ``/v1``)."""
        self.validate_tool_history = False
        """Refuse (400, as the real APIs do) a request whose tool calls and results do not pair up."""
        self.history_problems: list[str] = []
        """What ``validate_tool_history`` found, one line per problem (the request number first)."""

    def queue(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    async def first_disconnect(self, within_s: float = 2.0) -> float | None:
        """When a client first hung up mid-stream, waiting up to ``within_s`` for it to happen."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._hung_up.wait(), within_s)
        return self.disconnects[0] if self.disconnects else None

    def _note_hang_up(self) -> None:
        self.disconnects.append(time.monotonic())
        self._hung_up.set()

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/messages", self._handle)
        app.router.add_post("/v1/chat/completions", self._handle)
        app.router.add_post("/v1/responses", self._handle)
        return app

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        headers = {k.lower(): v for k, v in request.headers.items()}
        raw = await request.read()
        recorded = RecordedRequest(request.path, headers, json.loads(raw), raw)
        self.requests.append(recorded)
        problems = tool_history_problems(request.path, recorded.body) if self.strict_tool_history else []
        if self.validate_tool_history:
            problems = tool_history_problems(request.path, recorded.body) + tool_pairing_problems(recorded)
            self.history_problems += [f"request {len(self.requests)} ({request.path}): {p}" for p in problems]
        if problems:
            error = {"type": "invalid_request_error", "message": "; ".join(problems)}
            return web.json_response({"type": "error", "error": error}, status=400)
        if self.responder is not None:
            reply = self.responder(recorded)
        elif self.replies:
            reply = self.replies.popleft()
        else:
            reply = Reply(
                status=500, body={"error": {"type": "api_error", "message": "no scripted reply left"}}
            )
        if not reply.frames:
            return web.json_response(reply.body, status=reply.status, headers=reply.headers)
        response = web.StreamResponse(
            status=reply.status, headers={"Content-Type": "text/event-stream", **reply.headers}
        )
        await response.prepare(request)
        try:
            for index, frame in enumerate([*reply.frames, None]):
                if reply.drop_after is not None and index == reply.drop_after:
                    assert request.transport is not None
                    request.transport.close()
                    return response
                if frame is None:
                    break
                if reply.delay_s:
                    await asyncio.sleep(reply.delay_s)
                await response.write(frame.encode())
            await response.write_eof()
        except ConnectionResetError:  # the client hung up: what the cancellation tests look for
            self._note_hang_up()
        except asyncio.CancelledError:
            self._note_hang_up()
            raise
        return response


def tool_history_problems(path: str, body: dict[str, Any]) -> list[str]:
    """What a strict server (Anthropic, OpenAI, vLLM's chat templates) refuses in a request's tool calls:
    a call with no name, an id used twice, arguments that are not a JSON object, a result of no call."""
    calls: list[tuple[str, str, Any]] = []
    """(id, name, arguments: a dict, or the JSON text for the OpenAI APIs)"""
    results: list[str] = []
    if path == "/v1/messages":
        for message in body.get("messages") or []:
            for block in message["content"] if isinstance(message["content"], list) else []:
                if block.get("type") == "tool_use":
                    calls.append((block.get("id", ""), block.get("name", ""), block.get("input")))
                elif block.get("type") == "tool_result":
                    results.append(block.get("tool_use_id", ""))
    elif path == "/v1/chat/completions":
        for message in body.get("messages") or []:
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                calls.append((call.get("id", ""), function.get("name", ""), function.get("arguments")))
            if message.get("role") == "tool":
                results.append(message.get("tool_call_id", ""))
    else:
        for item in body.get("input") or []:
            if item.get("type") == "function_call":
                calls.append((item.get("call_id", ""), item.get("name", ""), item.get("arguments")))
            elif item.get("type") == "function_call_output":
                results.append(item.get("call_id", ""))
    problems: list[str] = []
    ids = [call_id for call_id, _, _ in calls]
    for call_id, name, arguments in calls:
        if not name:
            problems.append(f"tool call {call_id!r} has an empty function name")
        if ids.count(call_id) > 1:
            problems.append(f"tool call id {call_id!r} is not unique")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                problems.append(f"arguments of tool call {call_id!r} are not valid JSON")
                continue
        if not isinstance(arguments, dict):
            problems.append(f"arguments of tool call {call_id!r} are not an object")
    problems += [f"tool result {r!r} answers no tool call" for r in results if r not in ids]
    return problems


def tool_pairing_problems(request: RecordedRequest) -> list[str]:
    """Where a request's history breaks the API's tool-call rules: every call answered exactly once, by a
    result with its id, where the API wants it (Anthropic: the very next user turn, results first; Chat
    Completions: the tool messages right after the assistant message; Responses: a later output item)."""
    if request.path == "/v1/messages":
        return _anthropic_tool_problems(request.body.get("messages", []))
    if request.path == "/v1/chat/completions":
        return _chat_tool_problems(request.body.get("messages", []))
    return _responses_tool_problems(request.body.get("input", []))


def _anthropic_tool_problems(messages: list[dict[str, Any]]) -> list[str]:
    problems: list[str] = []
    seen: set[str] = set()
    for index, message in enumerate(messages):
        if index and message["role"] == messages[index - 1]["role"]:
            problems.append(f"messages {index - 1} and {index} are both {message['role']}")
        blocks = message["content"] if isinstance(message["content"], list) else [{"type": "text"}]
        results = [b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"]
        calls = [b["id"] for b in blocks if b.get("type") == "tool_use"]
        if results:
            before = messages[index - 1]["content"] if index else []
            wanted = [b["id"] for b in before if isinstance(before, list) and b.get("type") == "tool_use"]
            if sorted(results) != sorted(wanted):
                problems.append(f"message {index}: tool results {results} do not answer the calls {wanted}")
            kinds = [b.get("type") for b in blocks]
            if kinds[: len(results)] != ["tool_result"] * len(results):
                problems.append(f"message {index}: text before the tool results")
        for call_id in calls:
            if call_id in seen:
                problems.append(f"message {index}: tool call id {call_id} used twice")
            seen.add(call_id)
            following = messages[index + 1]["content"] if index + 1 < len(messages) else []
            answers = [b for b in following if isinstance(following, list) and b.get("tool_use_id") == call_id]
            if len(answers) != 1:
                problems.append(f"message {index}: tool call {call_id} answered {len(answers)} times in the next turn")
    return problems


def _chat_tool_problems(messages: list[dict[str, Any]]) -> list[str]:
    problems: list[str] = []
    open_calls: list[str] = []
    seen: set[str] = set()
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in open_calls:
                problems.append(f"message {index}: tool result {call_id} answers no open call")
            else:
                open_calls.remove(call_id)
            continue
        if open_calls:
            problems.append(f"message {index}: {role} message before the results of {open_calls}")
            open_calls = []
        for call in message.get("tool_calls") or []:
            if call["id"] in seen:
                problems.append(f"message {index}: tool call id {call['id']} used twice")
            seen.add(call["id"])
            open_calls.append(call["id"])
    if open_calls:
        problems.append(f"calls {open_calls} are never answered")
    return problems


def _responses_tool_problems(items: list[dict[str, Any]]) -> list[str]:
    problems: list[str] = []
    calls: list[str] = []
    answered: list[str] = []
    for index, item in enumerate(items):
        if item.get("type") == "function_call":
            if item["call_id"] in calls:
                problems.append(f"item {index}: call id {item['call_id']} used twice")
            calls.append(item["call_id"])
        elif item.get("type") == "function_call_output":
            if item["call_id"] not in calls:
                problems.append(f"item {index}: output {item['call_id']} answers no earlier call")
            if item["call_id"] in answered:
                problems.append(f"item {index}: call {item['call_id']} answered twice")
            answered.append(item["call_id"])
    missing = [c for c in calls if c not in answered]
    if missing:
        problems.append(f"calls {missing} are never answered")
    return problems


@contextlib.contextmanager
def fake_server_in_thread() -> Iterator[FakeLlmServer]:
    """The fake server on an event loop of its own thread, for tests that block (subprocesses, a daemon)."""
    loop = asyncio.new_event_loop()
    ready: queue.Queue[FakeLlmServer | BaseException] = queue.Queue()
    done = asyncio.Event()

    async def serve() -> None:
        try:
            async with running_fake_server() as server:
                ready.put(server)
                await done.wait()
        except BaseException as exc:  # a failed start must not leave the test waiting forever
            ready.put(exc)

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    started = ready.get(timeout=10)
    if isinstance(started, BaseException):
        raise started
    try:
        yield started
    finally:
        loop.call_soon_threadsafe(done.set)
        thread.join(timeout=10)
        loop.close()


@contextlib.asynccontextmanager
async def running_fake_server() -> AsyncIterator[FakeLlmServer]:
    server = FakeLlmServer()
    runner = web.AppRunner(server.app(), shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    server.url = f"http://127.0.0.1:{port}"
    try:
        yield server
    finally:
        await runner.cleanup()


# ---------------------------------------------------------------- Anthropic prompt cache


class AnthropicPromptCache:
    """The Messages API's prompt cache, simulated for the usage a fake reply reports.

    A request's prompt is its tools, then its system blocks, then every message block, in order. A
    ``cache_control`` breakpoint writes the prefix up to its block to the cache; a later request reads
    the longest cached prefix that ends at one of its breakpoints or up to ``LOOKBACK`` blocks before
    one (as the API checks). Tokens are estimated at four characters each. ``usage(body)`` returns
    ``(input_tokens, cache_read, cache_write)`` as the API counts them (input excludes both).
    """

    LOOKBACK = 20

    def __init__(self) -> None:
        self.entries: set[str] = set()

    def usage(self, body: dict[str, Any]) -> tuple[int, int, int]:
        blocks: list[tuple[dict[str, Any], str]] = []
        for tool in body.get("tools") or []:
            blocks.append((tool, "tool"))
        system = body.get("system") or []
        for block in [{"type": "text", "text": system}] if isinstance(system, str) else system:
            blocks.append((block, "system"))
        for message in body.get("messages") or []:
            content = message["content"]
            for block in [{"type": "text", "text": content}] if isinstance(content, str) else content:
                blocks.append((block, message["role"]))
        digest = hashlib.sha256()
        prefixes: list[str] = []
        tokens: list[int] = []
        total = 0
        for block, role in blocks:
            plain = {k: v for k, v in block.items() if k != "cache_control"}
            text = json.dumps([role, plain], sort_keys=True)
            digest.update(text.encode())
            prefixes.append(digest.hexdigest())
            total += max(1, len(text) // 4)
            tokens.append(total)
        breakpoints = [i for i, (block, _) in enumerate(blocks) if "cache_control" in block]
        read_at = -1
        for point in breakpoints:
            for i in range(point, max(point - self.LOOKBACK, 0) - 1, -1):
                if prefixes[i] in self.entries and i > read_at:
                    read_at = i
                    break
        read = tokens[read_at] if read_at >= 0 else 0
        last = breakpoints[-1] if breakpoints else -1
        written = max(tokens[last] - read, 0) if last > read_at else 0
        for point in breakpoints:
            self.entries.add(prefixes[point])
        return total - read - written, read, written


# ---------------------------------------------------------------- Anthropic wire format


def anthropic_event(data: dict[str, Any], name: str | None = None) -> str:
    return f"event: {name or data['type']}\ndata: {json.dumps(data)}\n\n"


def anthropic_frames(
    blocks: list[dict[str, Any]],
    *,
    input_tokens: int = 11,
    output_tokens: int = 42,
    cache_read: int | None = None,
    cache_write: int | None = None,
    error_after: int | None = None,
    error_type: str = "overloaded_error",
    stop_reason: str | None = None,
) -> list[str]:
    """A message stream. Blocks: ``{"thinking": t, "signature": s}``, ``{"text": t}``,
    ``{"tool_use": {"id", "name", "input"}}``. ``error_after``: an ``event: error`` after that many blocks."""
    usage: dict[str, Any] = {"input_tokens": input_tokens, "output_tokens": 0}
    if cache_read is not None:
        usage["cache_read_input_tokens"] = cache_read
    if cache_write is not None:
        usage["cache_creation_input_tokens"] = cache_write
    frames = [
        anthropic_event(
            {
                "type": "message_start",
                "message": {"id": "m", "model": "fake-claude", "content": [], "usage": usage},
            }
        )
    ]
    default_stop = "end_turn"
    for index, block in enumerate(blocks):
        if error_after == index:
            frames.append(anthropic_error_frame(error_type, "the fake server broke the stream"))
            return frames
        frames.extend(_anthropic_block(index, block))
        if "tool_use" in block:
            default_stop = "tool_use"
    if error_after == len(blocks):
        frames.append(anthropic_error_frame(error_type, "the fake server broke the stream"))
        return frames
    frames.append(
        anthropic_event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason or default_stop},
                "usage": {"output_tokens": output_tokens},
            }
        )
    )
    frames.append(anthropic_event({"type": "message_stop"}))
    return frames


def _anthropic_block(index: int, block: dict[str, Any]) -> list[str]:
    def delta(payload: dict[str, Any]) -> str:
        return anthropic_event({"type": "content_block_delta", "index": index, "delta": payload})

    frames = []
    start: dict[str, Any]
    if "thinking" in block:
        start = {"type": "thinking", "thinking": ""}
        deltas = [delta({"type": "thinking_delta", "thinking": part}) for part in _halves(block["thinking"])]
        if block.get("signature"):
            deltas.append(delta({"type": "signature_delta", "signature": block["signature"]}))
    elif "text" in block:
        start = {"type": "text", "text": ""}
        deltas = [delta({"type": "text_delta", "text": part}) for part in _halves(block["text"])]
    else:
        call = block["tool_use"]
        start = {"type": "tool_use", "id": call["id"], "name": call["name"], "input": {}}
        arguments = json.dumps(call["input"])
        deltas = [delta({"type": "input_json_delta", "partial_json": part}) for part in _halves(arguments)]
    frames.append(anthropic_event({"type": "content_block_start", "index": index, "content_block": start}))
    frames.extend(deltas)
    frames.append(anthropic_event({"type": "content_block_stop", "index": index}))
    return frames


def anthropic_error_frame(error_type: str, message: str) -> str:
    return anthropic_event({"type": "error", "error": {"type": error_type, "message": message}}, "error")


def anthropic_error(
    status: int, error_type: str, message: str, headers: dict[str, str] | None = None
) -> Reply:
    return Reply(
        status=status,
        headers=headers or {},
        body={"type": "error", "error": {"type": error_type, "message": message}},
    )


# ---------------------------------------------------------------- OpenAI wire format


def openai_chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
    choice: dict[str, Any] = {"index": 0, "delta": delta}
    if finish_reason:
        choice["finish_reason"] = finish_reason
    chunk = {"object": "chat.completion.chunk", "model": "fake-gpt", "choices": [choice]}
    return f"data: {json.dumps(chunk)}\n\n"


def openai_frames(
    *,
    reasoning: str | None = None,
    reasoning_key: str = "reasoning_content",
    content: str | None = None,
    tool_calls: list[tuple[str, str, dict[str, Any]]] | None = None,
    prompt_tokens: int = 13,
    completion_tokens: int = 7,
    cached_tokens: int | None = None,
    error_after_content: bool = False,
) -> list[str]:
    """A chat-completions stream: reasoning deltas, content deltas, tool-call fragments, then usage."""
    frames = [openai_chunk({"role": "assistant", "content": ""})]
    frames += [openai_chunk({reasoning_key: part}) for part in _halves(reasoning or "")]
    frames += [openai_chunk({"content": part}) for part in _halves(content or "")]
    if error_after_content:
        error = {"error": {"message": "the fake server broke the stream", "type": "server_error"}}
        return [*frames, f"data: {json.dumps(error)}\n\n"]
    for index, (call_id, name, arguments) in enumerate(tool_calls or []):
        text = json.dumps(arguments)
        head, tail = _halves(text) if len(text) > 1 else (text, "")
        first = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": head},
        }
        frames.append(openai_chunk({"tool_calls": [first]}))
        frames.append(openai_chunk({"tool_calls": [{"index": index, "function": {"arguments": tail}}]}))
    frames.append(openai_chunk({}, "tool_calls" if tool_calls else "stop"))
    usage: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    frames.append(
        f"data: {json.dumps({'object': 'chat.completion.chunk', 'choices': [], 'usage': usage})}\n\n"
    )
    frames.append("data: [DONE]\n\n")
    return frames


def openai_error(status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
    return Reply(
        status=status,
        headers=headers or {},
        body={"error": {"message": message, "type": "invalid_request_error"}},
    )


def _halves(text: str) -> list[str]:
    """Split into two deltas so every test exercises reassembly."""
    if not text:
        return []
    middle = max(1, len(text) // 2)
    return [part for part in (text[:middle], text[middle:]) if part]


# ---------------------------------------------------------------- receiver


class RecordingReceiver:
    """Keeps every callback as a tuple; raises ``StreamProtocolError`` on overlap like the driver."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []
        self.usage: Usage | None = None
        """The last usage the provider reported while streaming."""
        self.first_event = asyncio.Event()
        self._open: str | None = None

    def _record(self, *event: Any) -> None:
        self.events.append(event)
        self.first_event.set()

    def _begin(self, kind: str) -> None:
        if self._open is not None:
            raise StreamProtocolError(f"{kind} started while {self._open} is open")
        self._open = kind

    def _end(self, kind: str) -> None:
        if self._open != kind:
            raise StreamProtocolError(f"{kind} finished while {self._open} is open")
        self._open = None

    async def thinking_start(self) -> None:
        self._begin("thinking")
        self._record("thinking_start")

    async def thinking_chunk(self, text: str) -> None:
        assert self._open == "thinking"
        self._record("thinking_chunk", text)

    async def thinking_finish(self, provider_data: dict[str, Any] | None = None) -> None:
        self._end("thinking")
        self._record("thinking_finish", provider_data)

    async def saying_start(self) -> None:
        self._begin("saying")
        self._record("saying_start")

    async def saying_chunk(self, text: str) -> None:
        assert self._open == "saying"
        self._record("saying_chunk", text)

    async def saying_finish(self) -> None:
        self._end("saying")
        self._record("saying_finish")

    async def func_call(self, call_id: str, name: str, arguments_json: str) -> None:
        assert self._open is None
        self._record("func_call", call_id, name, json.loads(arguments_json))

    async def usage_so_far(self, usage: Usage) -> None:
        self.usage = usage

    def text(self, kind: str) -> str:
        return "".join(e[1] for e in self.events if e[0] == f"{kind}_chunk")

    def kinds(self) -> list[str]:
        return [e[0] for e in self.events if not e[0].endswith("_chunk")]
