"""The retry policy shared by the network providers, and the wire helpers both of them need.

A generation is retried only while nothing has reached the receiver yet (reference §3.4): once a
segment or a function call was streamed, the transcript already shows it and a second attempt would
duplicate it, so a later failure is a ``StreamBroken``. Retriable are 408, 429 (honouring
``retry-after``), 5xx, 529/overload and connection failures; the wait is capped exponential backoff
with full jitter, for as long as the retry window lasts (30 minutes by default, ``retry:`` of a provider
in ``.minds/llm.yaml``): an unattended team waits out an outage rather than stopping for a human after a
few seconds. Each wait is announced (``on_retry``, then ``None`` when the next attempt starts) so the dialog shows
"retrying" and Stop can end it. Other 4xx answers become ``ProviderRejected`` with a hint a person can act on — and so
does an account out of credit or over its spend limit, whatever status it comes with: OpenAI sends
``insufficient_quota`` as a 429 and Anthropic its spend limits as a 429 ``rate_limit_error``, but no wait
fixes billing, so retrying them only delayed the reason by a minute of backoff.
Every message that leaves this module has the API key redacted.

Each provider turns its SDK's exceptions into an ``AttemptFailure`` (``classify``); this module never
imports an SDK.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import email.utils
import logging
import math
import os
import random
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from dominds.llm.base import (  # RetryNotice lives beside the request that carries its hook
    ContextOverflow,
    ForwardingReceiver,
    GenerationReceiver,
    GenerationRequest,
    LlmError,
    ProviderRejected,
    ProviderUnavailable,
    RetryNotice,
    StreamBroken,
    guard_real_llm,
)
from dominds.llm.params import api_mistakes, model_problems

log = logging.getLogger("dominds.llm")

T = TypeVar("T")

RETRIABLE_STATUSES = frozenset({408, 429})
"""Besides every 5xx (529 = Anthropic "overloaded" included) and connection failures (status ``None``)."""

BILLING_ERROR_CODES = frozenset({
    # OpenAI (``error.code`` / ``error.type``; HTTP 429, or an error event inside the stream)
    "insufficient_quota", "billing_not_active", "billing_hard_limit_reached",
    # Anthropic (``error.type``, or ``error.details.error_code`` of a 429 / 402)
    "billing_error", "enforced_spend_limit_reached", "contract_spend_limit_reached",
    "linked_organization_spend_limit_reached", "linked_organization_billing_unavailable",
})  # fmt: skip
"""Error codes that mean the account cannot pay for the request: not retried, whatever the status."""

BILLING_MESSAGES = ("credit balance is too low", "exceeded your current quota", "reached your specified api usage limits")
"""The same, for answers that carry no code (Anthropic's low-balance 400, OpenAI-compatible proxies)."""


CONTEXT_OVERFLOW_MESSAGES = (
    "prompt is too long",  # Anthropic: "prompt is too long: 215023 tokens > 200000 maximum"
    "maximum context length",  # OpenAI Chat Completions, vLLM and other compatible servers
    "context_length_exceeded",  # OpenAI's error code (the Responses API puts it in the message)
    "exceeds the context window",  # OpenAI Responses
    "longer than the maximum model length",  # vLLM: "The decoder prompt (length 9000) is longer than …"
    "exceed_context_size_error",  # llama.cpp server's error type
    "exceeds the available context size",  # llama.cpp: "the request exceeds the available context size"
    "prompt too long",  # Ollama: "prompt too long; exceeded max context length by 12 tokens"
    "exceeds the context length",  # Ollama: "input length exceeds the context length"
    "exceeds the maximum number of tokens allowed",  # OpenAI-compatible proxies
)
"""How a provider says the prompt is longer than the model's context window, whatever the status (a 400
with no code of its own on Anthropic; an error event inside a 200 stream or a 500 on some local servers),
so the message is what tells it apart."""

CHARS_PER_TOKEN_ESTIMATE = 4
"""For the one place we estimate a prompt's size without the provider's count: an empty reply."""


class EmptyReply(Exception):
    """The server answered 200 with a stream (or body) that carried nothing at all. llama.cpp's
    OpenAI-compatible server answers so when the prompt is longer than its window."""


def estimated_prompt_tokens(request: GenerationRequest) -> int:
    """A rough size of the prompt (characters / 4) of every text the request carries."""
    chars = len(request.system_prompt) + sum(len(t.description) + len(str(t.parameters)) for t in request.tools)
    for message in request.messages:
        chars += len(message.content) + len(str(message.arguments or ""))
    return chars // CHARS_PER_TOKEN_ESTIMATE


def empty_reply_overflow(request: GenerationRequest) -> ContextOverflow | None:
    """An empty reply to a prompt the catalog says is longer than the model's window: an overflow."""
    window = request.model_info.get("context_length")
    estimate = estimated_prompt_tokens(request)
    if not isinstance(window, int) or estimate <= window:
        return None
    return ContextOverflow(
        f"{request.provider_key} answered with an empty reply to a prompt of about {estimate} tokens, longer "
        f"than the context window of {request.model_name!r} ({window} tokens in the catalog)",
        status=200,
        fix_hint=OVERFLOW_HINT,
    )


OVERFLOW_HINT = (
    "the runtime starts a new course when the course so far is what overflows; if a single message, "
    "tool result or the Taskdoc is larger than the window, shorten it or choose a model with a larger context"
)


def is_context_overflow(message: str) -> bool:
    text = message.lower()
    return any(m in text for m in CONTEXT_OVERFLOW_MESSAGES)


def is_billing_error(codes: tuple[object, ...], message: str) -> bool:
    """Whether an error's codes (any of type, code, details' code) or its message say billing."""
    text = message.lower()
    return any(str(c) in BILLING_ERROR_CODES for c in codes if c) or any(m in text for m in BILLING_MESSAGES)


DEFAULT_RETRY_WINDOW_S = 1800.0
"""How long transient failures are retried before the dialog is interrupted (an outage of half an hour
is waited out without a human)."""


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry. Tests inject ``sleep``/``clock`` and shrink the limits."""

    attempts: int | None = None
    """Total attempts, the first one included; ``None``: as many as fit in ``window``."""
    base_delay: float = 1.0
    max_delay: float = 120.0
    """Cap of the exponential backoff (before jitter)."""
    max_retry_after: float = 600.0
    """Cap of a server's ``retry-after`` so a bad header cannot park a dialog for hours."""
    window: float = DEFAULT_RETRY_WINDOW_S
    """Seconds from the first failure after which no further attempt is made."""
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    jitter: Callable[[], float] = random.random
    """Uniform in [0, 1): full jitter spreads retries of many dialogs hitting one rate limit."""
    clock: Callable[[], float] = time.monotonic

    def delay(self, retry_index: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return max(0.0, min(retry_after, self.max_retry_after))
        return self.jitter() * min(self.max_delay, self.base_delay * 2.0 ** min(retry_index, 60))

    def configured(self, settings: Mapping[str, Any] | None) -> RetryPolicy:
        """This policy with a provider's ``retry:`` settings (``RETRY_SETTINGS`` names) applied."""
        if not settings:
            return self
        def setting(name: str, default: float) -> float:
            value = settings.get(name)
            return float(value) if isinstance(value, int | float) and value > 0 else default

        return dataclasses.replace(
            self,
            window=setting("window_s", self.window),
            base_delay=setting("base_delay_s", self.base_delay),
            max_delay=setting("max_delay_s", self.max_delay),
            max_retry_after=setting("max_retry_after_s", self.max_retry_after),
        )


RETRY_SETTINGS = ("window_s", "base_delay_s", "max_delay_s", "max_retry_after_s")
"""``retry:`` keys of a provider in ``.minds/llm.yaml`` (all positive seconds; see ``RetryPolicy.configured``)."""


@dataclass(frozen=True)
class AttemptFailure:
    """One failed attempt in provider-neutral terms."""

    status: int | None
    """HTTP status, or the status an in-stream error type stands for; ``None`` = no answer (network)."""
    detail: str
    """The provider's own explanation (may still contain a secret: redacted before use)."""
    retry_after: float | None = None
    """Seconds the server asked us to wait."""
    billing: bool = False
    """The account is out of credit or over its spend limit (``is_billing_error``): never retriable."""
    unreached: bool = False
    """No connection was made (name lookup, refused, TLS): the end message says what to look at."""

    @property
    def retriable(self) -> bool:
        if self.billing or self.status == 402 or is_context_overflow(self.detail):
            return False
        return self.status is None or self.status in RETRIABLE_STATUSES or self.status >= 500

    def describe(self) -> str:
        return f"HTTP {self.status}: {self.detail}" if self.status is not None else self.detail


def connection_failure(exc: BaseException) -> AttemptFailure:
    """A failed connection with its cause: the SDKs say only "Connection error." and keep the reason
    ("[Errno -2] Name or service not known", "Connection refused") in the exceptions it wraps."""
    return AttemptFailure(None, f"connection failed: {connection_cause(exc)}", unreached=True)


def connection_cause(exc: BaseException) -> str:
    """``exc``'s text followed by its innermost cause's, each once: ``Connection error. ([Errno 111] Connection refused)``."""
    texts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        text = " ".join(str(current).split()) or type(current).__name__
        if text not in texts:
            texts.append(text)
        current = current.__cause__ or current.__context__
    if len(texts) == 1:
        return texts[0][:300]
    return f"{texts[0]} ({texts[-1]})"[:300]


def unreachable_hint(base_url: str) -> str:
    """What to look at when a provider cannot be reached: a server on this machine is probably not
    running; a hosted one probably not reachable from here."""
    from urllib.parse import urlsplit

    if urlsplit(base_url).hostname in ("127.0.0.1", "localhost", "::1"):
        return "is the server running? its address is baseUrl in .minds/llm.yaml"
    return "is this machine offline, or behind a proxy?"


@dataclass(frozen=True)
class ProviderTarget:
    """Who we talk to, for messages: never holds more than the key it must redact."""

    provider_key: str
    model: str
    base_url: str
    api_key_env_var: str | None
    secret: str | None = field(default=None, repr=False)


def resolve_target(request: GenerationRequest, default_base_url: str) -> ProviderTarget:
    """Where a generation goes and with which key; refuses before any request is made.

    A provider whose ``apiKeyEnvVar`` is null is keyless (local servers): the caller sends a dummy key.
    """
    base_url = str(request.provider_config.get("baseUrl") or default_base_url)
    guard_real_llm(request.provider_key, base_url)
    env_var = request.provider_config.get("apiKeyEnvVar") or None
    secret = None
    if env_var is not None:
        secret = os.environ.get(str(env_var), "").strip()
        if not secret:
            raise ProviderRejected(
                f"provider {request.provider_key!r} needs an API key but {env_var} is not set",
                status=None,
                fix_hint=f"export {env_var}=<your key> in the environment of `dominds serve` "
                f"(or set `apiKeyEnvVar: null` in .minds/llm.yaml for a keyless server)",
            )
    return ProviderTarget(request.provider_key, request.model_name, base_url, env_var, secret)


class StreamTracker(ForwardingReceiver):
    """A receiver wrapper that remembers whether anything was streamed (then retrying is unsafe)."""

    def __init__(self, inner: GenerationReceiver) -> None:
        super().__init__(inner)
        self.started = False

    def output_started(self) -> None:
        self.started = True


async def generate_with_retries(
    attempt: Callable[[GenerationReceiver], Awaitable[T]],
    receiver: GenerationReceiver,
    *,
    classify: Callable[[Exception], AttemptFailure | None],
    target: ProviderTarget,
    policy: RetryPolicy,
    on_retry: Callable[[RetryNotice | None], Awaitable[None]] | None = None,
) -> T:
    """Run ``attempt`` until it succeeds, is rejected, breaks mid-stream or the retry window is spent."""
    last: AttemptFailure | None = None
    first_failure_at: float | None = None
    index = 0
    while True:
        tracker = StreamTracker(receiver)
        try:
            return await attempt(tracker)
        except LlmError:
            raise  # ours already (a protocol violation from the receiver, a missing key): pass it on
        except Exception as exc:
            failure = classify(exc)
            if failure is None:  # a malformed response or an SDK surprise: retrying would not help
                what = f"unexpected {type(exc).__name__}: {exc}"
                if tracker.started:
                    detail = f"{target.provider_key} stream broke after output began: {what}"
                    raise StreamBroken(redact(detail, target.secret)) from None
                raise LlmError(redact(f"{target.provider_key}: {what}", target.secret)) from None
            if tracker.started:
                raise StreamBroken(
                    redact(
                        f"{target.provider_key} stream broke after output began: {failure.describe()}",
                        target.secret,
                    )
                ) from None
            if not failure.retriable:
                raise rejection(failure, target) from None
            last = failure
        index += 1
        now = policy.clock()
        first_failure_at = now if first_failure_at is None else first_failure_at
        left = policy.window - (now - first_failure_at)
        if (policy.attempts is not None and index >= policy.attempts) or left <= 0:
            break
        wait = min(policy.delay(index - 1, last.retry_after), left)
        reason = redact(last.describe(), target.secret)
        log.warning(
            "%s: %s; attempt %d in %.1f s (retry window %.0f s left)",
            target.provider_key, reason, index + 1, wait, left,
        )  # fmt: skip
        if on_retry is not None:
            await on_retry(RetryNotice(attempt=index + 1, wait_s=wait, reason=reason))
        await policy.sleep(wait)
        if on_retry is not None:
            await on_retry(None)  # the wait is over: the next attempt runs
    assert last is not None and first_failure_at is not None
    spent = policy.clock() - first_failure_at
    raise ProviderUnavailable(
        redact(
            f"{target.provider_key} ({target.base_url}) unavailable after {index} attempts over {spent:.0f} s; "
            f"last error: {last.describe()}" + (f" ({unreachable_hint(target.base_url)})" if last.unreached else ""),
            target.secret,
        )
    )


def rejection(failure: AttemptFailure, target: ProviderTarget) -> ProviderRejected:
    """A 4xx answer as an error that says what to fix."""
    detail = redact(failure.describe(), target.secret)
    where = f"{target.provider_key} ({target.base_url})"
    if failure.billing or failure.status == 402:
        key = f" for the key in {target.api_key_env_var}" if target.api_key_env_var else ""
        return ProviderRejected(
            f"{where} refused the request: the account is out of credit or over its spend limit ({detail})",
            status=failure.status,
            fix_hint=f"add credit or raise the spend limit in the provider's billing settings{key}, "
            "then resume the dialog (waiting does not help; it was not retried)",
        )
    if is_context_overflow(failure.detail):
        return ContextOverflow(
            f"{where} refused the request: the prompt is longer than the context window of {target.model!r} ({detail})",
            status=failure.status,
            fix_hint=OVERFLOW_HINT,
        )
    if failure.status in (401, 403):
        if target.api_key_env_var:
            hint = f"check {target.api_key_env_var}: it must hold a valid API key for {target.base_url}"
        else:
            hint = f"provider {target.provider_key!r} is keyless (apiKeyEnvVar: null); set apiKeyEnvVar in .minds/llm.yaml"
        return ProviderRejected(
            f"{where} refused the credentials ({detail})", status=failure.status, fix_hint=hint
        )
    if failure.status == 404 or _names_unknown_model(failure.detail):
        return ProviderRejected(
            f"model {target.model!r} unknown to {where} ({detail})",
            status=failure.status,
            fix_hint="fix `.minds/llm.yaml` or the member's `model` in `.minds/team.yaml` (or the provider's baseUrl)",
        )
    return ProviderRejected(
        f"{where} rejected the request ({detail})",
        status=failure.status,
        fix_hint="check the member's `model_params` and the provider entry in `.minds/llm.yaml`",
    )


def _names_unknown_model(detail: str) -> bool:
    text = detail.lower()
    return "model" in text and any(
        s in text for s in ("not found", "does not exist", "unknown", "invalid model")
    )


_KEY_SHAPES = re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}")
"""OpenAI (``sk-…``) and Anthropic (``sk-ant-…``) key shapes."""


def redact(text: str, secret: str | None) -> str:
    """``text`` without the API key (some proxies echo it) nor anything shaped like one."""
    if secret and len(secret) >= 6:
        text = text.replace(secret, "[redacted]")
    return _KEY_SHAPES.sub("[redacted]", text)


def retry_after_seconds(headers: Any) -> float | None:
    """``retry-after-ms`` / ``retry-after`` (seconds or an HTTP date) of a response, if any."""
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            seconds = float(millis) / 1000
        except ValueError:
            seconds = -1.0
        if math.isfinite(seconds) and seconds >= 0:
            return seconds
        log.warning("ignoring a retry-after-ms header that is not a usable number: %r", millis)
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (ValueError, TypeError):
            parsed = None
        if parsed is None:
            log.warning("ignoring a retry-after header that is neither seconds nor an HTTP date: %r", value)
            return None
        if parsed.tzinfo is None:  # "-0000": UTC with no source zone said
            parsed = parsed.replace(tzinfo=datetime.UTC)
        return max(0.0, parsed.timestamp() - time.time())
    if not math.isfinite(seconds) or seconds < 0:
        log.warning("ignoring a retry-after header that is not a usable number of seconds: %r", value)
        return None
    return seconds


def refuse_bad_params(request: GenerationRequest, api_type: str) -> None:
    """Refuse, before any request, ``model_params`` the API (or the catalog's model entry) would refuse."""
    refused, _ignored = api_mistakes(request.model_params, api_type)
    refused += model_problems(request.model_params, api_type, request.model_key, request.model_info)
    if refused:
        raise ProviderRejected(
            f"{request.provider_key}: the member's model_params would be refused: {'; '.join(refused)}",
            status=None,
            fix_hint="fix `model_params` of the member (or member_defaults) in .minds/team.yaml; "
            "`dominds check` lists every such problem",
        )
