"""The engine's side of LLM providers: one generator per API type (loaded on first use; each keeps one
SDK client per endpoint and key, closed with the engine), and provider rejections kept as problems
until the provider works again."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import os
from types import ModuleType
from typing import Any

from dominds.dialog.model import Dialog
from dominds.driver.services import EngineServices
from dominds.ids import now_iso
from dominds.llm.base import Generator, LlmError
from dominds.llm.catalog import ProviderConfig
from dominds.llm.scripted import ScriptedGenerator
from dominds.problems import make_problem
from dominds.store import provider_problems
from dominds.store.errors import StoreError

_GENERATOR_CLASSES = {
    "anthropic": ("dominds.llm.anthropic_provider", "AnthropicGenerator"),
    "openai-compatible": ("dominds.llm.openai_provider", "OpenAiCompatibleGenerator"),
    "openai": ("dominds.llm.openai_provider", "OpenAiCompatibleGenerator"),
    "openai-responses": ("dominds.llm.openai_responses", "OpenAiResponsesGenerator"),
}


class Providers:
    def __init__(self, engine: EngineServices) -> None:
        self.engine = engine
        self._generators: dict[str, Generator] = {"scripted": ScriptedGenerator()}
        self._problems_cache: tuple[int, set[str]] | None = None
        self._loading: dict[str, asyncio.Future[ModuleType]] = {}
        """API type → its SDK's import, running in a worker thread."""

    async def generator_for(self, api_type: str) -> Generator:
        """The generator of an API type; the first call imports its SDK in a worker thread, so the event
        loop (every request, every other dialog) goes on meanwhile: on the loop, the import of
        ``anthropic`` held the HTTP API for ~1 s (20 s at load 30)."""
        generator = self._generators.get(api_type)
        if generator is not None:
            return generator
        loading = self._loading.get(api_type)
        if loading is None:
            loading = self._loading[api_type] = asyncio.ensure_future(asyncio.to_thread(_import_generator_module, api_type))
            # Every caller awaits it through a shield; if all of them were stopped and the import failed,
            # the failure is read here (the next caller still gets it: the future stays until awaited).
            loading.add_done_callback(lambda done: done.cancelled() or done.exception())
        try:
            module = await asyncio.shield(loading)
        finally:
            if loading.done():
                self._loading.pop(api_type, None)
        generator = self._generators.get(api_type)
        if generator is None:  # the first of the callers that waited on this import makes it
            generator = self._generators[api_type] = _make_generator(api_type, module)
        return generator

    async def close(self) -> None:
        """Close the SDK clients (their connection pools) of every generator loaded."""
        for generator in self._generators.values():
            close = getattr(generator, "aclose", None)
            if close is not None:
                with contextlib.suppress(Exception):  # a shutdown must not fail on a connection
                    await close()

    @staticmethod
    def config_dict(provider: ProviderConfig) -> dict[str, Any]:
        return {
            "key": provider.key,
            "name": provider.name,
            "apiType": provider.api_type,
            "baseUrl": provider.base_url,
            "apiKeyEnvVar": provider.api_key_env_var,
            "reasoningPassBack": provider.reasoning_pass_back,
            "retry": dict(provider.retry),
        }

    def report_problem(self, dialog: Dialog, provider: str, model: str | None, message: str) -> None:
        """A provider rejected a request: persisted (for `dominds check`) and published (for panels)."""
        rtws = self.engine.rtws
        key = provider_problems.key_fingerprint(self._key_env_var(provider), os.environ)
        with contextlib.suppress(StoreError):  # reporting must not fail the dialog a second time
            provider_problems.record(
                rtws,
                provider_problems.ProviderProblem(provider=provider, model=model, message=message, at=now_iso(), key=key),
            )
        self.publish_problems()

    def worked(self, provider: str) -> None:
        """A generation with ``provider`` succeeded: its recorded rejection, if any, is resolved."""
        if provider in self._rejected():
            with contextlib.suppress(StoreError):
                provider_problems.clear(self.engine.rtws, provider)
            self.publish_problems()

    def _rejected(self) -> set[str]:
        path = provider_problems.path(self.engine.rtws)
        if self._problems_cache is None or self._problems_cache[0] != _mtime(path):
            self._problems_cache = (_mtime(path), {p.provider for p in provider_problems.load(self.engine.rtws)})
        return self._problems_cache[1]

    def _key_env_var(self, provider: str) -> str | None:
        config = self.engine.config.get().catalog.provider(provider)
        return config.api_key_env_var if config is not None else None

    def current_rejections(self) -> list[provider_problems.ProviderProblem]:
        """Recorded rejections that still hold: one recorded with another key than this process has is stale."""
        return [
            p
            for p in provider_problems.load(self.engine.rtws)
            if provider_problems.is_current(p, self._key_env_var(p.provider), os.environ)
        ]

    def publish_problems(self) -> None:
        self.engine.pubchan.publish(None, {"type": "problems_snapshot", "problems": self.problems_payload()})

    def problems_payload(self) -> list[dict[str, Any]]:
        engine = self.engine
        runtime = [
            make_problem("llm_provider_rejected_request", f"provider {p.provider}", None, p.message)
            for p in self.current_rejections()
        ]
        problems = [*engine.config.get().problems, *runtime, *engine.config.mcp.runtime_problems()]
        return [
            {"kind": p.kind, "source": p.source, "line": p.line, "severity": p.severity, "message": p.message, "id": p.id}
            for p in problems
        ]


def _mtime(path: Any) -> int:
    try:
        return int(os.stat(path).st_mtime_ns)
    except OSError:
        return -1


def _import_generator_module(api_type: str) -> ModuleType:
    """In a worker thread. Imported on first use: the SDKs are heavy and a scripted-only workspace never needs them."""
    spec = _GENERATOR_CLASSES.get(api_type)
    if spec is None:
        raise LlmError(f"unknown provider apiType {api_type!r} (known: scripted, {', '.join(_GENERATOR_CLASSES)})")
    try:
        return importlib.import_module(spec[0])
    except ImportError as exc:
        raise LlmError(f"provider type {api_type!r} is not available: {exc}") from exc


def _make_generator(api_type: str, module: ModuleType) -> Generator:
    """On the event loop, once the import is done."""
    if gc.get_freeze_count() and api_type not in _FROZEN:
        _FROZEN.add(api_type)
        _freeze_the_sdk()
    generator: Generator = getattr(module, _GENERATOR_CLASSES[api_type][1])()
    return generator


_FROZEN: set[str] = set()
"""API types whose SDK was frozen out of the collector's sight (once per process)."""


def _freeze_the_sdk() -> None:
    """Out of the cycle collector's sight, like the daemon's other imports.

    ``dominds serve`` freezes its imports' objects once they are loaded (``gc.freeze``,
    cli/cmd_serve.py), so the full collection after each sweep that unloads resting trees
    (server/resting.py) walks only what came since; an SDK imported here, on the first turn of a
    member on its provider, came later: ~120,000 objects for ``anthropic``, ~45,000 for ``openai``,
    and each such collection took 80–120 ms instead of 4–13 (docs/performance.md, Memory). Only a
    process that froze its imports does this (tests and other hosts keep their collector as it is).
    What else is alive now is frozen with the SDK: a cycle among those objects that dies later (the
    tree being driven, once unloaded) stays: once per provider module and process (three at most).
    """
    gc.collect()
    gc.freeze()
