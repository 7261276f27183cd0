"""Embedders: the openai SDK against a fake /v1/embeddings on 127.0.0.1, MiniLM's import guard, settings."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from dominds.llm.catalog_yaml import load_catalog
from dominds.rtws import Rtws
from dominds.workflows.debate.embedders import (
    EmbedderUnavailable,
    ProviderEmbedder,
    WordLlamaEmbedder,
    _wordllama,
    locate_minilm,
    make_embedder,
)
from dominds.workflows.debate.settings import EmbedderSettings, load_settings, parse_settings
from dominds.workflows.debate.similarity import PositionComparer


class FakeEmbeddings:
    """POST /v1/embeddings: a 3-d vector per input, from its length; records each request."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.authorization: list[str | None] = []
        self.fail = False

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        self.authorization.append(request.headers.get("Authorization"))
        if self.fail:
            return web.json_response({"error": {"message": "model overloaded", "type": "server_error"}}, status=500)
        data = [{"object": "embedding", "index": i, "embedding": [float(len(t)), 1.0, 0.0]} for i, t in enumerate(body["input"])]
        data.reverse()  # servers may answer out of order; `index` is what counts
        return web.json_response({"object": "list", "data": data, "model": body["model"], "usage": {"prompt_tokens": 3, "total_tokens": 3}})


@pytest.fixture
async def fake_embeddings() -> AsyncIterator[tuple[FakeEmbeddings, str]]:
    fake = FakeEmbeddings()
    app = web.Application()
    app.router.add_post("/v1/embeddings", fake.handle)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    yield fake, f"http://127.0.0.1:{server.port}/v1"
    await server.close()


def workspace_with_provider(root: Path, base_url: str, key_env: str | None = None) -> Rtws:
    (root / ".minds").mkdir(parents=True)
    provider = {"name": "Local", "apiType": "openai-compatible", "baseUrl": base_url, "apiKeyEnvVar": key_env,
                "models": {"chat": {"context_length": 8000}}}
    (root / ".minds" / "llm.yaml").write_text(json.dumps({"providers": {"local": provider}}))
    return Rtws(root)


async def test_provider_embeddings_through_the_openai_sdk(tmp_path: Path, fake_embeddings: tuple[FakeEmbeddings, str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    fake, base_url = fake_embeddings
    monkeypatch.setenv("LOCAL_EMBED_KEY", "sk-test")
    rtws = workspace_with_provider(tmp_path / "ws", base_url, "LOCAL_EMBED_KEY")
    embedder, note = make_embedder(EmbedderSettings("provider", "local", "nomic-embed"), load_catalog(rtws)[0])
    assert isinstance(embedder, ProviderEmbedder) and note is None and embedder.name == "local/nomic-embed"
    comparer = PositionComparer(embedder)
    comparison = await comparer.compare(["aaaa", "aa"])
    assert comparison.method == "embedding:local/nomic-embed" and not comparison.fallback
    assert comparison.embeddings == [[4.0, 1.0, 0.0], [2.0, 1.0, 0.0]]
    assert fake.requests == [{"input": ["aaaa", "aa"], "model": "nomic-embed", "encoding_format": "float"}]
    assert fake.authorization == ["Bearer sk-test"]
    await comparer.compare(["aa", "aaaa"])
    assert len(fake.requests) == 1, "cached embeddings are not requested again"
    fake.fail = True
    embedder.max_retries = 0  # the SDK's backoff would only slow the test down
    failed = await comparer.compare(["aa", "bbb"])
    assert failed.fallback and failed.method == "jaccard_fallback" and "500" in (failed.error or "")


def test_provider_embedder_needs_a_usable_provider(tmp_path: Path) -> None:
    rtws = workspace_with_provider(tmp_path / "ws", "http://127.0.0.1:9/v1", "MISSING_KEY_VAR")
    catalog = load_catalog(rtws)[0]
    for settings, why in [
        (EmbedderSettings("provider", "local", "m"), "MISSING_KEY_VAR"),
        (EmbedderSettings("provider", "nowhere", "m"), "not in"),
        (EmbedderSettings("provider"), "needs `provider` and `model`"),
    ]:
        embedder, note = make_embedder(settings, catalog)
        assert embedder is None and note is not None and why in note and note.startswith("using word overlap")


async def test_a_real_endpoint_is_refused_in_tests_and_falls_back() -> None:
    comparer = PositionComparer(ProviderEmbedder("openai", "https://api.openai.com/v1", "text-embedding-3-small", "sk"))
    comparison = await comparer.compare(["plan a", "plan b"])
    assert comparison.fallback and "RealLlmForbidden" in (comparison.error or "")


def test_minilm_needs_a_model_folder_and_says_so(tmp_path: Path) -> None:
    """The old extra searched an installed package that has no tokenizer, failed, and fell back silently."""
    catalog = load_catalog(Rtws(tmp_path))[0]
    embedder, note = make_embedder(EmbedderSettings("minilm"), catalog)
    assert embedder is None and note is not None and "model folder" in note
    assert make_embedder(EmbedderSettings("jaccard"), catalog) == (None, None), "asked for word overlap: no note"
    (tmp_path / "model.onnx").write_bytes(b"not really a model")
    with pytest.raises(EmbedderUnavailable, match="no tokenizer.json"):
        locate_minilm(str(tmp_path))
    (tmp_path / "tokenizer.json").write_text("{}")
    assert locate_minilm(str(tmp_path)) == (tmp_path / "model.onnx", tmp_path / "tokenizer.json")
    embedder, note = make_embedder(EmbedderSettings("minilm", model_dir=str(tmp_path)), catalog)
    assert embedder is None and note is not None and "MiniLM" in note  # onnxruntime missing, or the file is junk


def test_auto_is_wordllama_loaded_offline_from_its_wheel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default embedder when installed; loading it must not touch the network."""
    import socket

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("the embedder tried to use the network")

    _wordllama.cache_clear()
    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    embedder, note = make_embedder(EmbedderSettings("auto"), load_catalog(Rtws(tmp_path))[0])
    assert isinstance(embedder, WordLlamaEmbedder) and note is None
    assert embedder.name == "wordllama:l2_supercat-256"
    vectors = embedder.embed_now(["A phased plan", "一个分阶段的计划"])
    assert len(vectors) == 2 and len(vectors[0]) == 256
    assert abs(sum(x * x for x in vectors[1]) - 1.0) < 1e-4, "unit vectors"


def test_auto_without_the_extra_says_it_compares_word_overlap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "wordllama", None)  # as if the extra were not installed
    _wordllama.cache_clear()
    try:
        embedder, note = make_embedder(EmbedderSettings("auto"), load_catalog(Rtws(tmp_path))[0])
    finally:
        _wordllama.cache_clear()
    assert embedder is None and note is not None
    assert "no embedding model is installed" in note and "dominds[embeddings]" in note
    assert ".venv/bin/pip install -e '.[embeddings]'" in note, "bin/dominds users have no `dominds` package to pip-install"


def test_settings_file_values_and_problems(tmp_path: Path) -> None:
    assert load_settings(Rtws(tmp_path)).max_rounds == 5
    settings = parse_settings({
        "max_rounds": 3, "agent_timeout_s": 20, "run_token_budget": 1000, "timezone": "UTC", "keepalive_s": 1,
        "embedder": {"kind": "provider", "provider": "local", "model": "m"},
    })
    assert (settings.max_rounds, settings.agent_timeout_s, settings.run_token_budget, settings.timezone) == (3, 20.0, 1000, "UTC")
    assert settings.embedder == EmbedderSettings("provider", "local", "m") and settings.problems == ()
    bad = parse_settings({"max_rounds": 9, "colour": "red", "timezone": "", "embedder": {"kind": "word2vec"}})
    assert bad.max_rounds == 5 and bad.embedder.kind == "auto"
    assert len(bad.problems) == 4 and any("1..5" in p for p in bad.problems)
    (tmp_path / ".minds").mkdir()
    (tmp_path / ".minds" / "debate.yaml").write_text("max_rounds: [\n")
    assert load_settings(Rtws(tmp_path)).problems[0].startswith("debate.yaml: not valid YAML")
