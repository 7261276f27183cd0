"""The pluggable embedders behind ``compare_positions``.

- ``WordLlamaEmbedder`` (the default when installed: ``pip install 'dominds[embeddings]'``): WordLlama's
  ``l2_supercat`` 256-dimension static token embeddings, mean-pooled. Its weights and tokenizer ship
  inside the ``wordllama`` wheel and are loaded from there with downloads disabled: it never touches
  the network. It runs in milliseconds on the CPU (numpy only). Trained on English; Chinese works
  on a compressed scale, which the calibration (calibration.py) accounts for.
- ``ProviderEmbedder``: any OpenAI-compatible ``/v1/embeddings`` (OpenAI, vLLM, Ollama, llama.cpp),
  through the ``openai`` SDK, with the base URL and key of a provider of ``.minds/llm.yaml``. A
  multilingual model there (bge-m3, text-embedding-3-small) is the best choice for Chinese debates.
  Its SDK client is made on the first call and kept (``sdk_clients.ClientPool``, on the process's one
  TLS context) until the debate run that built the embedder ends (``aclose``): a client per call paid a
  new HTTP client, TLS context and connection for every round's comparison.
- ``MiniLmOnnxEmbedder``: an all-MiniLM-L6-v2 ONNX export in a folder (``model_dir`` with
  ``model.onnx`` and ``tokenizer.json``), for users who have one; needs ``onnxruntime``,
  ``tokenizers`` and ``numpy``, imported only when it is chosen.
- no embedder: word overlap (Jaccard), flagged as the fallback (``similarity.PositionComparer``).

Nothing here downloads a model. A configured embedder that cannot load is never dropped silently:
``make_embedder`` returns why, and the run shows it (``session_start.warnings``, the report).
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dominds.llm.base import guard_real_llm
from dominds.llm.catalog import Catalog
from dominds.workflows.debate.settings import EmbedderSettings
from dominds.workflows.debate.similarity import Embedder

if TYPE_CHECKING:  # imported on use: a debate without this embedder never pays for the SDK
    import httpx2
    import openai

    from dominds.llm.sdk_clients import ClientPool

KEYLESS_API_KEY = "sk-no-key-required"
MINILM_HINT = (
    "set embedder.model_dir in .minds/debate.yaml to a folder holding an all-MiniLM-L6-v2 model.onnx and its "
    "tokenizer.json, and install onnxruntime, tokenizers and numpy"
)
EMBEDDINGS_HINT = (
    "install the embeddings extra (WordLlama, about 20 MB, offline): `pip install 'dominds[embeddings]'`, "
    "or in a checkout run by bin/dominds `.venv/bin/pip install -e '.[embeddings]'`"
)
WORDLLAMA_CONFIG = "l2_supercat"
WORDLLAMA_DIM = 256


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
        """The SDK's own retries (with its backoff); a failure after them falls back to Jaccard. Read when
        the client is made (the first call)."""
        from dominds.llm.sdk_clients import ClientPool

        self._clients: ClientPool[openai.AsyncOpenAI] = ClientPool(self._make_client)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        guard_real_llm(self.provider_key, self.base_url)
        client = self._clients.get(self.base_url, self._api_key or KEYLESS_API_KEY)
        response = await client.embeddings.create(model=self.model, input=list(texts), encoding_format="float")
        return [list(item.embedding) for item in sorted(response.data, key=lambda item: item.index)]

    async def aclose(self) -> None:
        """Close the SDK client (its connections); a later ``embed`` makes a new one."""
        await self._clients.aclose()

    def _make_client(self, base_url: str, api_key: str, http_client: httpx2.AsyncClient | None) -> openai.AsyncOpenAI:
        import openai

        from dominds.llm.sdk_clients import sdk_http_client

        return openai.AsyncOpenAI(
            api_key=api_key,
            base_url=base_url,
            max_retries=self.max_retries,
            timeout=self._timeout_s,
            http_client=http_client or sdk_http_client(openai, timeout=self._timeout_s),
        )


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
    """(model.onnx, tokenizer.json) from ``model_dir``."""
    if not model_dir:
        raise EmbedderUnavailable(f"the MiniLM embedder needs a model folder: {MINILM_HINT}")
    folder = Path(model_dir).expanduser()
    models = sorted(folder.rglob("*.onnx")) if folder.is_dir() else []
    tokenizers = sorted(folder.rglob("tokenizer.json")) if folder.is_dir() else []
    if models and tokenizers:
        return models[0], tokenizers[0]
    if models:
        raise EmbedderUnavailable(f"{folder} has {models[0].name} but no tokenizer.json: {MINILM_HINT}")
    raise EmbedderUnavailable(f"no MiniLM ONNX model found in {folder}: {MINILM_HINT}")


@lru_cache(maxsize=4)
def _minilm(model_path: Path, tokenizer_path: Path) -> MiniLmOnnxEmbedder:
    return MiniLmOnnxEmbedder(model_path, tokenizer_path)  # ~0.6 s to load: once per process


class WordLlamaEmbedder:
    """WordLlama's packaged model, loaded from the installed wheel with downloads disabled."""

    def __init__(self) -> None:
        try:
            wordllama = importlib.import_module("wordllama")
        except ImportError as exc:
            raise EmbedderUnavailable(f"no embedding model is installed: {EMBEDDINGS_HINT}") from exc
        package_dir = Path(str(wordllama.__file__)).resolve().parent
        # cache_dir = the package itself: its weights/ and tokenizers/ folders are where the loader
        # looks first, and disable_download makes a missing file an error instead of a fetch.
        self._model = wordllama.WordLlama.load(
            config=WORDLLAMA_CONFIG, dim=WORDLLAMA_DIM, cache_dir=package_dir, disable_download=True
        )
        self.name = f"wordllama:{WORDLLAMA_CONFIG}-{WORDLLAMA_DIM}"

    def embed_now(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = self._model.embed(list(texts), norm=True)
        return [[float(x) for x in row] for row in vectors]

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_now(texts)  # a few milliseconds: no thread needed


@lru_cache(maxsize=1)
def _wordllama() -> WordLlamaEmbedder:
    return WordLlamaEmbedder()  # ~0.3 s to load: once per process


def _load(kind: str, settings: EmbedderSettings) -> Embedder:
    try:
        if kind == "wordllama":
            return _wordllama()
        return _minilm(*locate_minilm(settings.model_dir))
    except EmbedderUnavailable:
        raise
    except Exception as exc:  # a broken model file or runtime: the same as a missing one, and said so
        raise EmbedderUnavailable(f"cannot load the {kind} model: {type(exc).__name__}: {exc}") from exc


def make_embedder(settings: EmbedderSettings, catalog: Catalog) -> tuple[Embedder | None, str | None]:
    """The configured embedder (``None`` = word overlap) and, when it is not the one asked for, why.

    ``auto`` is WordLlama when installed, else word overlap with a note saying so; an explicit choice
    that cannot work here also falls back to word overlap with its reason. The caller shows the note.
    """
    if settings.kind == "jaccard":
        return None, None
    try:
        if settings.kind == "provider":
            return provider_embedder(settings, catalog), None
        return _load("wordllama" if settings.kind == "auto" else settings.kind, settings), None
    except EmbedderUnavailable as exc:
        return None, f"using word overlap (Jaccard) instead of embeddings: {exc}"
