"""Whether a provider takes a key, asked now: one cheap authenticated request, for `dominds check`.

The request is the provider's model list (Anthropic ``GET /v1/models``, OpenAI and compatible servers
``GET /models``): it needs the key and costs no tokens. It is made with the key in the environment at
the time of the check and nothing is remembered, so a key just exported or fixed is judged as it is.
A server without a model list (some compatible servers) cannot say: that is no problem of the key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from dominds.llm.base import RealLlmForbidden, guard_real_llm
from dominds.llm.catalog import ProviderConfig

PROBE_TIMEOUT_SECONDS = 10.0
KEYLESS = "none"
"""What a keyless provider (``apiKeyEnvVar: null``, a local server) is sent, as the generators do."""


@dataclass(frozen=True)
class KeyVerdict:
    kind: Literal["accepted", "refused", "unreachable", "unknown"]
    detail: str = ""


async def probe_key(provider: ProviderConfig, api_key: str | None, *, timeout: float = PROBE_TIMEOUT_SECONDS) -> KeyVerdict:
    """Ask ``provider`` (an ``anthropic`` or OpenAI-style one) whether it takes ``api_key``."""
    from dominds.llm.anthropic_provider import DEFAULT_BASE_URL as ANTHROPIC_URL
    from dominds.llm.openai_provider import DEFAULT_BASE_URL as OPENAI_URL

    if provider.api_type == "anthropic":
        base_url = provider.base_url or ANTHROPIC_URL
    elif provider.api_type in ("openai", "openai-compatible", "openai-responses"):
        base_url = provider.base_url or OPENAI_URL
    else:
        return KeyVerdict("unknown", f"no key check for apiType {provider.api_type}")
    try:
        guard_real_llm(provider.key, base_url)
    except RealLlmForbidden as exc:
        return KeyVerdict("unknown", str(exc))
    from dominds.llm.sdk_clients import sdk_http_client

    key = api_key or KEYLESS
    sdk: Any  # the two SDKs name their errors alike
    if provider.api_type == "anthropic":
        import anthropic as sdk

        client: Any = sdk.AsyncAnthropic(api_key=key, base_url=base_url, max_retries=0, timeout=timeout, http_client=sdk_http_client(sdk))
        listing = client.models.list(limit=1)
    else:
        import openai as sdk

        client = sdk.AsyncOpenAI(api_key=key, base_url=base_url, max_retries=0, timeout=timeout, http_client=sdk_http_client(sdk))
        listing = client.models.list()
    try:
        await listing
    except (sdk.AuthenticationError, sdk.PermissionDeniedError) as exc:
        return KeyVerdict("refused", _status_text(exc.status_code, exc.body, exc.message))
    except sdk.NotFoundError:
        return KeyVerdict("unknown", "the server has no model list")
    except sdk.APIStatusError as exc:
        return KeyVerdict("unknown", _status_text(exc.status_code, exc.body, exc.message))
    except sdk.APIConnectionError as exc:  # timeouts included
        return KeyVerdict("unreachable", _connection_text(exc, base_url))
    finally:
        await client.close()
    return KeyVerdict("accepted")


def _status_text(status: int, body: Any, fallback: str) -> str:
    """``HTTP 401: invalid x-api-key`` from an SDK error (its body's message, not the whole JSON)."""
    message = None
    if isinstance(body, dict):
        error = body.get("error")
        message = error.get("message") if isinstance(error, dict) else body.get("message")
    text = " ".join(str(message or fallback).split())
    return f"HTTP {status}: {text[:200]}"


def _connection_text(exc: Exception, base_url: str) -> str:
    from dominds.llm.retry import connection_cause

    return f"no answer from {base_url}: {connection_cause(exc)}"
