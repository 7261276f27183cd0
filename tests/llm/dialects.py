"""One provider-neutral reply script, spoken in each provider's wire format (for the contract suite).

A ``Script`` says what the model "answers" — thinking (with a signature), redacted thinking, text, tool
calls, in any order — how it ends (``end_turn`` or ``max_tokens``), its usage, and optionally how the
stream breaks after some content frames (an error event, a dropped connection, a malformed line).
Each ``Dialect`` renders it as the realistic SSE (or, for ``streaming: false``, the JSON body) of its
API, builds the generator under test, and says what the generator must report for it. The scripted
provider is a dialect too, where a case applies to it (its "wire" is the YAML response database).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from fake_servers import Reply, anthropic_event

from dominds.llm.anthropic_provider import AnthropicGenerator
from dominds.llm.base import GenerationRequest, Generator
from dominds.llm.openai_provider import OpenAiCompatibleGenerator
from dominds.llm.openai_responses import OpenAiResponsesGenerator
from dominds.llm.retry import RetryPolicy
from dominds.llm.scripted import ScriptedGenerator
from dominds.llm.sdk_clients import HttpClientFactory


@dataclass(frozen=True)
class Thinking:
    text: str
    signature: str = "sig-1"


@dataclass(frozen=True)
class Redacted:
    data: str = "opaque-encrypted-reasoning"


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Tool:
    call_id: str
    name: str
    arguments: dict[str, Any]


Block = Thinking | Redacted | Text | Tool


@dataclass(frozen=True)
class ScriptUsage:
    input: int = 20
    output: int = 9
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0


@dataclass(frozen=True)
class Script:
    blocks: tuple[Block, ...]
    finish: Literal["end", "max_tokens"] = "end"
    usage: ScriptUsage = field(default_factory=ScriptUsage)
    break_after: int | None = None
    """Break the stream after this many content frames (deltas), the way ``break_how`` says."""
    break_how: Literal["error", "disconnect", "malformed", "eof"] = "error"
    """``eof``: the body ends cleanly, mid-message (a proxy that closes the stream politely)."""


def pieces(text: str, size: int = 3) -> list[str]:
    """Small deltas, so every case exercises reassembly (also across a multi-byte character)."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def sse(name: str, data: dict[str, Any]) -> str:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n"


def malformed(event: str | None) -> str:
    """A content frame cut mid-JSON (a proxy that mangles a line), named as the API names its deltas."""
    return (f"event: {event}\n" if event else "") + 'data: {"type": "' + (event or "chunk") + '", "delta": {not json\n\n'


def _broken(frames: list[str], content: list[int], script: Script, error_frame: str, malformed_frame: str) -> Reply:
    """Cut ``frames`` after ``script.break_after`` content frames (indices in ``content``)."""
    assert script.break_after is not None
    cut = content[script.break_after - 1] + 1 if script.break_after else content[0]  # 0: before any content
    kept = frames[:cut]
    if script.break_how == "disconnect":
        return Reply(frames=kept, drop_after=len(kept))
    if script.break_how == "malformed":
        return Reply(frames=[*kept, malformed_frame])
    if script.break_how == "eof":
        return Reply(frames=kept)
    return Reply(frames=[*kept, error_frame])


class Dialect:
    name = ""
    http = True
    """Talks HTTP to the fake server (retries, disconnects, malformed lines apply)."""
    signs_thinking = False
    """Thinking comes back with data the next request must carry (a signature, a reasoning item)."""
    redacts = False
    reports_cache_write = True
    reports_reasoning_tokens = False
    partial_input_known = False
    """The input tokens are known from the first event (kept when the stream breaks)."""
    tools_at_end = False
    """Tool calls are emitted after all text (Chat Completions assembles them from fragments)."""
    delta_event: str | None = None
    """The SSE ``event:`` name of a content delta (Chat Completions sends none)."""

    def generator(self, policy: RetryPolicy, http_client: HttpClientFactory | None = None) -> Generator:
        raise NotImplementedError

    def provider_config(self, url: str, key_var: str | None) -> dict[str, Any]:
        raise NotImplementedError

    def reply(self, script: Script) -> Reply:
        raise NotImplementedError

    def json_reply(self, script: Script) -> Reply:
        raise NotImplementedError

    def error(self, status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
        raise NotImplementedError

    def thinking_data(self, block: Thinking | Redacted) -> dict[str, Any] | None:
        """The ``provider_data`` a thinking segment of ``block`` must finish with."""
        return None

    def billing_errors(self) -> dict[str, Reply]:
        """How this API says the account is out of credit or over its spend limit (as the provider sends it)."""
        raise NotImplementedError

    def context_overflow_errors(self) -> dict[str, Reply]:
        """How this API refuses a prompt longer than the model's context window (as the provider sends it)."""
        raise NotImplementedError


# ---------------------------------------------------------------- Anthropic Messages


class AnthropicDialect(Dialect):
    name = "anthropic"
    delta_event = "content_block_delta"
    signs_thinking = True
    redacts = True
    partial_input_known = True

    def generator(self, policy: RetryPolicy, http_client: HttpClientFactory | None = None) -> Generator:
        return AnthropicGenerator(policy, http_client)

    def provider_config(self, url: str, key_var: str | None) -> dict[str, Any]:
        return {"apiType": "anthropic", "baseUrl": url, "apiKeyEnvVar": key_var}

    def thinking_data(self, block: Thinking | Redacted) -> dict[str, Any] | None:
        return {"signature": block.signature} if isinstance(block, Thinking) else {"redacted_data": block.data}

    def _usage(self, script: Script) -> dict[str, Any]:
        u = script.usage
        return {"input_tokens": u.input, "output_tokens": 1, "cache_read_input_tokens": u.cache_read,
                "cache_creation_input_tokens": u.cache_write}  # fmt: skip

    def reply(self, script: Script) -> Reply:
        frames = [anthropic_event({"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "fake-claude", "content": [],
            "stop_reason": None, "usage": self._usage(script)}})]  # fmt: skip
        frames.append(anthropic_event({"type": "ping"}))
        content: list[int] = []
        for index, block in enumerate(script.blocks):
            for frame, is_content in self._block(index, block):
                frames.append(frame)
                if is_content:
                    content.append(len(frames) - 1)
        stop = "max_tokens" if script.finish == "max_tokens" else (
            "tool_use" if any(isinstance(b, Tool) for b in script.blocks) else "end_turn")  # fmt: skip
        frames.append(anthropic_event({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                       "usage": {"output_tokens": script.usage.output}}))  # fmt: skip
        frames.append(anthropic_event({"type": "message_stop"}))
        if script.break_after is not None:
            error = anthropic_event({"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}, "error")
            return _broken(frames, content, script, error, malformed(self.delta_event))
        return Reply(frames=frames)

    def _block(self, index: int, block: Block) -> list[tuple[str, bool]]:
        def event(kind: str, **data: Any) -> str:
            return anthropic_event({"type": kind, "index": index, **data})

        def delta(payload: dict[str, Any]) -> tuple[str, bool]:
            return event("content_block_delta", delta=payload), True

        if isinstance(block, Thinking):
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [delta({"type": "thinking_delta", "thinking": p}) for p in pieces(block.text)]
            deltas.append(delta({"type": "signature_delta", "signature": block.signature}))
        elif isinstance(block, Redacted):
            start, deltas = {"type": "redacted_thinking", "data": block.data}, []
        elif isinstance(block, Text):
            start = {"type": "text", "text": ""}
            deltas = [delta({"type": "text_delta", "text": p}) for p in pieces(block.text)]
        else:
            start = {"type": "tool_use", "id": block.call_id, "name": block.name, "input": {}}
            deltas = [delta({"type": "input_json_delta", "partial_json": p}) for p in pieces(json.dumps(block.arguments))]
        return [(event("content_block_start", content_block=start), False), *deltas, (event("content_block_stop"), False)]

    def json_reply(self, script: Script) -> Reply:
        content: list[dict[str, Any]] = []
        for block in script.blocks:
            if isinstance(block, Thinking):
                content.append({"type": "thinking", "thinking": block.text, "signature": block.signature})
            elif isinstance(block, Redacted):
                content.append({"type": "redacted_thinking", "data": block.data})
            elif isinstance(block, Text):
                content.append({"type": "text", "text": block.text})
            else:
                content.append({"type": "tool_use", "id": block.call_id, "name": block.name, "input": block.arguments})
        stop = "max_tokens" if script.finish == "max_tokens" else (
            "tool_use" if any(isinstance(b, Tool) for b in script.blocks) else "end_turn")  # fmt: skip
        usage = {**self._usage(script), "output_tokens": script.usage.output}
        return Reply(body={"id": "msg_1", "type": "message", "role": "assistant", "model": "fake-claude",
                           "content": content, "stop_reason": stop, "usage": usage})  # fmt: skip

    def error(self, status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
        kind = {429: "rate_limit_error", 529: "overloaded_error", 401: "authentication_error", 404: "not_found_error",
                400: "invalid_request_error"}.get(status, "api_error")  # fmt: skip
        return Reply(status=status, headers=headers or {}, body={"type": "error", "error": {"type": kind, "message": message}})

    def billing_errors(self) -> dict[str, Reply]:
        def body(kind: str, message: str, code: str | None = None) -> dict[str, Any]:
            error: dict[str, Any] = {"type": kind, "message": message}
            if code is not None:
                error["details"] = {"error_code": code}
            return {"type": "error", "error": error}

        spend = "You have reached your monthly spend limit."
        in_stream = anthropic_event(body("billing_error", "Your credit balance is too low."), "error")
        return {
            # a 429 like a rate limit, told apart only by its error code (and a retry-after that would not help)
            "spend-limit-429": Reply(status=429, headers={"retry-after": "30"},
                                     body=body("rate_limit_error", spend, "enforced_spend_limit_reached")),  # fmt: skip
            "contract-limit-429": Reply(status=429, body=body("rate_limit_error", spend, "contract_spend_limit_reached")),
            "billing-402": Reply(status=402, body=body("billing_error", "Payment required.")),
            "credit-balance-400": Reply(status=400, body=body(
                "invalid_request_error",
                "Your credit balance is too low to access the Anthropic API. "
                "Please go to Plans & Billing to upgrade or purchase credits.")),  # fmt: skip
            "in-stream": Reply(frames=[*self.reply(Script((Text("x"),))).frames[:2], in_stream]),
        }


    def context_overflow_errors(self) -> dict[str, Reply]:
        body = {"type": "error", "error": {"type": "invalid_request_error",
                                           "message": "prompt is too long: 215023 tokens > 200000 maximum"}}  # fmt: skip
        return {"prompt-too-long-400": Reply(status=400, body=body)}


# ---------------------------------------------------------------- OpenAI Chat Completions


class OpenAiChatDialect(Dialect):
    name = "openai-chat"
    reports_reasoning_tokens = True
    tools_at_end = True

    def generator(self, policy: RetryPolicy, http_client: HttpClientFactory | None = None) -> Generator:
        return OpenAiCompatibleGenerator(policy, http_client)

    def provider_config(self, url: str, key_var: str | None) -> dict[str, Any]:
        return {"apiType": "openai-compatible", "baseUrl": f"{url}/v1", "apiKeyEnvVar": key_var}

    def _usage(self, script: Script) -> dict[str, Any]:
        u = script.usage
        prompt = u.input + u.cache_read + u.cache_write
        return {"prompt_tokens": prompt, "completion_tokens": u.output, "total_tokens": prompt + u.output,
                "prompt_tokens_details": {"cached_tokens": u.cache_read, "cache_write_tokens": u.cache_write},
                "completion_tokens_details": {"reasoning_tokens": u.reasoning}}  # fmt: skip

    @staticmethod
    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": finish}
        return "data: " + json.dumps({"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "fake-gpt",
                                      "choices": [choice]}) + "\n\n"  # fmt: skip

    def reply(self, script: Script) -> Reply:
        frames = [self.chunk({"role": "assistant", "content": ""})]
        content: list[int] = []
        tools = [b for b in script.blocks if isinstance(b, Tool)]
        for block in script.blocks:
            if isinstance(block, Thinking):
                parts = [self.chunk({"reasoning_content": p}) for p in pieces(block.text)]
            elif isinstance(block, Text):
                parts = [self.chunk({"content": p}) for p in pieces(block.text)]
            else:
                continue
            for frame in parts:
                frames.append(frame)
                content.append(len(frames) - 1)
        for index, tool in enumerate(tools):
            arguments = pieces(json.dumps(tool.arguments))
            first = {"index": index, "id": tool.call_id, "type": "function", "function": {"name": tool.name, "arguments": arguments[0]}}
            frames.append(self.chunk({"tool_calls": [first]}))
            content.append(len(frames) - 1)
            for part in arguments[1:]:
                frames.append(self.chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]}))
                content.append(len(frames) - 1)
        finish = "length" if script.finish == "max_tokens" else "tool_calls" if tools else "stop"
        frames.append(self.chunk({}, finish))
        frames.append("data: " + json.dumps({"id": "c1", "object": "chat.completion.chunk", "created": 0,
                                             "model": "fake-gpt", "choices": [], "usage": self._usage(script)}) + "\n\n")  # fmt: skip
        frames.append("data: [DONE]\n\n")
        if script.break_after is not None:
            error = "data: " + json.dumps({"error": {"message": "The server had an error", "type": "server_error"}}) + "\n\n"
            return _broken(frames, content, script, error, malformed(self.delta_event))
        return Reply(frames=frames)

    def json_reply(self, script: Script) -> Reply:
        tools = [b for b in script.blocks if isinstance(b, Tool)]
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(b.text for b in script.blocks if isinstance(b, Text)) or None,
        }
        reasoning = "".join(b.text for b in script.blocks if isinstance(b, Thinking))
        if reasoning:
            message["reasoning_content"] = reasoning
        if tools:
            message["tool_calls"] = [{"id": t.call_id, "type": "function",
                                      "function": {"name": t.name, "arguments": json.dumps(t.arguments)}} for t in tools]  # fmt: skip
        finish = "length" if script.finish == "max_tokens" else "tool_calls" if tools else "stop"
        return Reply(body={"id": "c1", "object": "chat.completion", "created": 0, "model": "fake-gpt",
                           "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                           "usage": self._usage(script)})  # fmt: skip

    def error(self, status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
        return Reply(status=status, headers=headers or {}, body={"error": {"message": message, "type": "server_error"}})

    QUOTA_MESSAGE = ("You exceeded your current quota, please check your plan and billing details. For more "
                     "information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.")  # fmt: skip

    def _quota_error(self, code: str = "insufficient_quota") -> dict[str, Any]:
        return {"message": self.QUOTA_MESSAGE, "type": code, "param": None, "code": code}

    def billing_errors(self) -> dict[str, Reply]:
        return {
            "insufficient-quota-429": Reply(status=429, headers={"retry-after": "20"}, body={"error": self._quota_error()}),
            "billing-not-active-429": Reply(status=429, body={"error": self._quota_error("billing_not_active")}),
            "in-stream": Reply(frames=[self.chunk({"role": "assistant", "content": ""}),
                                       "data: " + json.dumps({"error": self._quota_error()}) + "\n\n"]),  # fmt: skip
        }


    def context_overflow_errors(self) -> dict[str, Reply]:
        error = {"message": "This model's maximum context length is 128000 tokens. However, your messages resulted in "
                            "130412 tokens. Please reduce the length of the messages.",
                 "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}  # fmt: skip
        return {"context-length-exceeded-400": Reply(status=400, body={"error": error})}


# ---------------------------------------------------------------- OpenAI Responses


class OpenAiResponsesDialect(OpenAiChatDialect):
    name = "openai-responses"
    delta_event = "response.output_text.delta"
    signs_thinking = True
    redacts = True
    tools_at_end = False

    def generator(self, policy: RetryPolicy, http_client: HttpClientFactory | None = None) -> Generator:
        return OpenAiResponsesGenerator(policy, http_client)

    def provider_config(self, url: str, key_var: str | None) -> dict[str, Any]:
        return {"apiType": "openai-responses", "baseUrl": f"{url}/v1", "apiKeyEnvVar": key_var}

    def thinking_data(self, block: Thinking | Redacted) -> dict[str, Any] | None:
        if isinstance(block, Thinking):
            return {"openai_reasoning": {"id": f"rs_{block.signature}", "summary": [block.text],
                                         "encrypted_content": f"enc-{block.signature}"}}  # fmt: skip
        return {"openai_reasoning": {"id": "rs_redacted", "summary": [], "encrypted_content": block.data}}

    def _usage(self, script: Script) -> dict[str, Any]:
        u = script.usage
        prompt = u.input + u.cache_read + u.cache_write
        return {"input_tokens": prompt, "output_tokens": u.output, "total_tokens": prompt + u.output,
                "input_tokens_details": {"cached_tokens": u.cache_read, "cache_write_tokens": u.cache_write},
                "output_tokens_details": {"reasoning_tokens": u.reasoning}}  # fmt: skip

    def _items(self, script: Script) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for index, block in enumerate(script.blocks):
            if isinstance(block, Thinking | Redacted):
                data = self.thinking_data(block)
                assert data is not None
                reasoning = data["openai_reasoning"]
                items.append({"type": "reasoning", "id": reasoning["id"], "encrypted_content": reasoning["encrypted_content"],
                              "summary": [{"type": "summary_text", "text": t} for t in reasoning["summary"]]})  # fmt: skip
            elif isinstance(block, Text):
                items.append({"type": "message", "id": f"msg_{index}", "role": "assistant", "status": "completed",
                              "content": [{"type": "output_text", "text": block.text, "annotations": []}]})  # fmt: skip
            else:
                items.append({"type": "function_call", "id": f"fc_{index}", "call_id": block.call_id, "name": block.name,
                              "arguments": json.dumps(block.arguments), "status": "completed"})  # fmt: skip
        return items

    def _response(self, script: Script, status: str, output: list[dict[str, Any]], usage: bool) -> dict[str, Any]:
        response: dict[str, Any] = {"id": "resp_1", "object": "response", "created_at": 0, "model": "fake-gpt",
                                    "status": status, "output": output, "parallel_tool_calls": True,
                                    "tool_choice": "auto", "tools": [], "usage": self._usage(script) if usage else None}  # fmt: skip
        if status == "incomplete":
            response["incomplete_details"] = {"reason": "max_output_tokens"}
        return response

    def reply(self, script: Script) -> Reply:
        seq = iter(range(10_000))

        def event(kind: str, **data: Any) -> str:
            return sse(kind, {"type": kind, "sequence_number": next(seq), **data})

        frames = [event("response.created", response=self._response(script, "in_progress", [], False)),
                  event("response.in_progress", response=self._response(script, "in_progress", [], False))]  # fmt: skip
        content: list[int] = []
        items = self._items(script)
        for index, item in enumerate(items):
            started = {**item, "status": "in_progress"}
            if item["type"] == "message":
                started["content"] = []
            elif item["type"] == "function_call":
                started["arguments"] = ""
            elif item["type"] == "reasoning":
                started = {"type": "reasoning", "id": item["id"], "summary": []}
            frames.append(event("response.output_item.added", output_index=index, item=started))
            deltas: list[str] = []
            if item["type"] == "reasoning":
                for s_index, summary in enumerate(item["summary"]):
                    frames.append(event("response.reasoning_summary_part.added", item_id=item["id"], output_index=index,
                                        summary_index=s_index, part={"type": "summary_text", "text": ""}))  # fmt: skip
                    deltas += [event("response.reasoning_summary_text.delta", item_id=item["id"], output_index=index,
                                     summary_index=s_index, delta=p) for p in pieces(summary["text"])]  # fmt: skip
            elif item["type"] == "message":
                frames.append(event("response.content_part.added", item_id=item["id"], output_index=index, content_index=0,
                                    part={"type": "output_text", "text": "", "annotations": []}))  # fmt: skip
                deltas = [event("response.output_text.delta", item_id=item["id"], output_index=index, content_index=0,
                                delta=p, logprobs=[]) for p in pieces(item["content"][0]["text"])]  # fmt: skip
            else:
                deltas = [event("response.function_call_arguments.delta", item_id=item["id"], output_index=index, delta=p)
                          for p in pieces(item["arguments"])]  # fmt: skip
            for frame in deltas:
                frames.append(frame)
                content.append(len(frames) - 1)
            frames.append(event("response.output_item.done", output_index=index, item=item))
        status = "incomplete" if script.finish == "max_tokens" else "completed"
        frames.append(event(f"response.{status}", response=self._response(script, status, items, True)))
        if script.break_after is not None:
            error = sse("error", {"type": "error", "sequence_number": 9999, "code": "server_error",
                                  "message": "The server had an error while processing your request.", "param": None})  # fmt: skip
            return _broken(frames, content, script, error, malformed(self.delta_event))
        return Reply(frames=frames)

    def json_reply(self, script: Script) -> Reply:
        status = "incomplete" if script.finish == "max_tokens" else "completed"
        return Reply(body=self._response(script, status, self._items(script), True))

    def billing_errors(self) -> dict[str, Reply]:
        created = self.reply(Script((Text("x"),))).frames[:2]
        failed = {**self._response(Script(()), "failed", [], False),
                  "error": {"code": "insufficient_quota", "message": self.QUOTA_MESSAGE}}  # fmt: skip
        return {
            "insufficient-quota-429": Reply(status=429, headers={"retry-after": "20"}, body={"error": self._quota_error()}),
            "error-event": Reply(frames=[*created, sse("error", {"type": "error", "sequence_number": 2,
                                                               "code": "insufficient_quota",
                                                               "message": self.QUOTA_MESSAGE, "param": None})]),  # fmt: skip
            "response-failed": Reply(frames=[*created, sse("response.failed", {"type": "response.failed",
                                                                              "sequence_number": 2, "response": failed})]),  # fmt: skip
        }


    def context_overflow_errors(self) -> dict[str, Reply]:
        message = "Your input exceeds the context window of this model. Please adjust your input and try again."
        error = {"message": message, "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}
        created = self.reply(Script((Text("x"),))).frames[:2]
        failed = {**self._response(Script(()), "failed", [], False),
                  "error": {"code": "context_length_exceeded", "message": message}}  # fmt: skip
        return {
            "context-length-exceeded-400": Reply(status=400, body={"error": error}),
            "response-failed": Reply(frames=[*created, sse("response.failed", {"type": "response.failed",
                                                                              "sequence_number": 2, "response": failed})]),  # fmt: skip
        }


# ---------------------------------------------------------------- scripted


class ScriptedDialect(Dialect):
    """The offline provider: the script becomes one entry of its YAML response database."""

    name = "scripted"
    http = False
    reports_cache_write = True

    def __init__(self) -> None:
        self.root: Path | None = None

    def generator(self, policy: RetryPolicy, http_client: HttpClientFactory | None = None) -> Generator:
        return ScriptedGenerator()

    def provider_config(self, url: str, key_var: str | None) -> dict[str, Any]:
        return {"apiType": "scripted", "baseUrl": ".minds/scripted"}

    def install(self, request: GenerationRequest, script: Script, *, delay_ms: int = 0) -> None:
        stream: list[dict[str, Any]] = []
        for block in script.blocks:
            if isinstance(block, Thinking):
                stream.append({"thinking": block.text})
            elif isinstance(block, Text):
                stream.append({"saying": block.text})
            elif isinstance(block, Tool):
                stream.append({"func_call": {"id": block.call_id, "name": block.name, "arguments": block.arguments}})
        u = script.usage
        entry: dict[str, Any] = {
            "stream": stream,
            "chunk_chars": 3,
            "delay_ms": delay_ms,
            "usage": {"input_tokens": u.input, "output_tokens": u.output, "cache_read_tokens": u.cache_read,
                      "cache_write_tokens": u.cache_write, "reasoning_tokens": u.reasoning},  # fmt: skip
        }
        if script.finish == "max_tokens":
            entry["finish_reason"] = "max_tokens"
        path = Path(request.rtws_root) / ".minds" / "scripted" / f"{request.model_key}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump({"responses": [entry]}, sort_keys=False))


DIALECTS: list[Dialect] = [AnthropicDialect(), OpenAiChatDialect(), OpenAiResponsesDialect(), ScriptedDialect()]
HTTP_DIALECTS = [d for d in DIALECTS if d.http]
