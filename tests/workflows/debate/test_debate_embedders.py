"""Embedders: the openai SDK against a fake /v1/embeddings on 127.0.0.1, MiniLM's import guard, settings."""

from __future__ import annotations

import asyncio
import json
import ssl
import sys
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
import yaml
from aiohttp import web
from aiohttp.test_utils import TestServer
from test_debate_kit import (
    AngleEmbedder,
    critic_answer,
    planner_answer,
    reporter_answer,
    started_engine,
    step,
    write_workspace,
)

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
from dominds.workflows.debate.launch import open_debate
from dominds.workflows.debate.settings import EmbedderSettings, load_settings, parse_settings
from dominds.workflows.debate.similarity import PositionComparer


async def length_vectors(texts: Sequence[str]) -> list[list[float]]:
    return [[float(len(t)), 1.0, 0.0] for t in texts]


class FakeEmbeddings:
    """POST /v1/embeddings: a vector per input (3-d, from its length, unless ``vectors`` says otherwise);
    records each request and the TCP connection it came on."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.authorization: list[str | None] = []
        self.fail = False
        self.vectors: Callable[[Sequence[str]], Awaitable[list[list[float]]]] = length_vectors
        self.connections: dict[Any, asyncio.BaseTransport] = {}
        """By the client's address: one entry per TCP connection a client opened."""

    def open_connections(self) -> int:
        return sum(not transport.is_closing() for transport in self.connections.values())

    async def handle(self, request: web.Request) -> web.Response:
        assert request.transport is not None
        self.connections[request.transport.get_extra_info("peername")] = request.transport
        body = await request.json()
        self.requests.append(body)
        self.authorization.append(request.headers.get("Authorization"))
        if self.fail:
            return web.json_response({"error": {"message": "model overloaded", "type": "server_error"}}, status=500)
        vectors = await self.vectors(body["input"])
        data = [{"object": "embedding", "index": i, "embedding": vector} for i, vector in enumerate(vectors)]
        data.reverse()  # servers may answer out of order; `index` is what counts
        return web.json_response({"object": "list", "data": data, "model": body["model"], "usage": {"prompt_tokens": 3, "total_tokens": 3}})


async def serve_embeddings() -> tuple[FakeEmbeddings, str, TestServer]:
    fake = FakeEmbeddings()
    app = web.Application()
    app.router.add_post("/v1/embeddings", fake.handle)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    return fake, f"http://127.0.0.1:{server.port}/v1", server


@pytest.fixture
async def fake_embeddings() -> AsyncIterator[tuple[FakeEmbeddings, str]]:
    fake, base_url, server = await serve_embeddings()
    yield fake, base_url
    await server.close()


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many SDK clients, HTTP clients and TLS contexts were constructed from now on."""
    counts: Counter[str] = Counter()

    def counting(what: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def construct(*args: Any, **kwargs: Any) -> Any:
            counts[what] += 1
            return original(*args, **kwargs)

        return construct

    monkeypatch.setattr(openai.AsyncOpenAI, "__init__", counting("sdk", openai.AsyncOpenAI.__init__))
    monkeypatch.setattr(httpx2.AsyncClient, "__init__", counting("http", httpx2.AsyncClient.__init__))
    monkeypatch.setattr(ssl.SSLContext, "__new__", counting("tls", ssl.SSLContext.__new__))
    return counts


async def all_closed(fake: FakeEmbeddings) -> bool:
    """Whether every connection to ``fake`` is closed, once the server has seen the last one go (≤ 5 s)."""
    for _ in range(500):
        if fake.open_connections() == 0:
            return True
        await asyncio.sleep(0.01)
    return False


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
    embedder.max_retries = 0  # the SDK's backoff would only slow the failure below down
    comparer = PositionComparer(embedder)
    comparison = await comparer.compare(["aaaa", "aa"])
    assert comparison.method == "embedding:local/nomic-embed" and not comparison.fallback
    assert comparison.embeddings == [[4.0, 1.0, 0.0], [2.0, 1.0, 0.0]]
    assert fake.requests == [{"input": ["aaaa", "aa"], "model": "nomic-embed", "encoding_format": "float"}]
    assert fake.authorization == ["Bearer sk-test"]
    await comparer.compare(["aa", "aaaa"])
    assert len(fake.requests) == 1, "cached embeddings are not requested again"
    fake.fail = True
    failed = await comparer.compare(["aa", "bbb"])
    assert failed.fallback and failed.method == "jaccard_fallback" and "500" in (failed.error or "")
    await comparer.aclose()


async def test_embed_calls_share_one_sdk_client_per_endpoint_and_key(
    fake_embeddings: tuple[FakeEmbeddings, str], built: Counter[str]
) -> None:
    """The bug: every ``ProviderEmbedder.embed`` built a new ``AsyncOpenAI`` and closed it after its one
    request. Each new client built its own HTTP client and TLS context (parsing the system's CA
    certificates again: ~0.8 MiB and a few ms of CPU) and opened a new connection, so a debate that
    embeds every round paid all three per call. Now one client per endpoint and key serves every call
    of the embedder, on the process's one TLS context, and closing the embedder closes its connections."""
    fake, base_url = fake_embeddings
    other, other_url, other_server = await serve_embeddings()
    embedders = [
        ProviderEmbedder("local", base_url, "m", "sk-a"),
        ProviderEmbedder("local", base_url, "m", "sk-b"),  # another key, same endpoint
        ProviderEmbedder("other", other_url, "m", "sk-a"),  # another endpoint, same key
    ]
    try:
        calls = 4
        for i in range(calls):
            assert await embedders[0].embed([f"text {i}", "ab"]) == [[float(len(f"text {i}")), 1.0, 0.0], [2.0, 1.0, 0.0]]
        assert len(fake.requests) == calls
        assert (built["sdk"], built["http"]) == (1, 1), f"one SDK client and one HTTP client for {calls} calls: {built}"
        assert built["tls"] <= 1, f"at most the process's one TLS context: {built}"
        assert len(fake.connections) == 1, "every request on the one kept-alive connection"
        for i in range(calls):
            for embedder in embedders[1:]:
                await embedder.embed([f"text {i}"])
        assert (built["sdk"], built["http"]) == (3, 3), f"one client per endpoint and key: {built}"
        assert built["tls"] <= 1, f"the three clients share one TLS context: {built}"
        assert fake.authorization[calls:] == ["Bearer sk-b"] * calls
        assert len(fake.connections) == 2 and len(other.connections) == 1
    finally:
        for embedder in embedders:
            await embedder.aclose()
        closed = await all_closed(fake) and await all_closed(other)
        await other_server.close()
    assert closed, "closing the embedders closed their connections"


async def test_a_debate_run_embeds_on_one_connection_and_closes_it_when_it_ends(
    tmp_path: Path, fake_embeddings: tuple[FakeEmbeddings, str], built: Counter[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A two-round debate with the provider embedder configured in debate.yaml: each round's comparison
    went through a client of its own (see the test above); the run now keeps one and closes it when it
    ends, so no connection outlives the run."""
    fake, base_url = fake_embeddings
    fake.vectors = AngleEmbedder().embed  # the positions' angles decide: round 1 continues, round 2 converges
    monkeypatch.setenv("LOCAL_EMBED_KEY", "sk-test")
    rtws = write_workspace(tmp_path / "ws", [
        step("planner", 1, planner_answer(1, 0)),
        step("critic", 1, critic_answer(1, 30)),
        step("planner", 2, planner_answer(2, 0)),
        step("critic", 2, critic_answer(2, 5)),
        step("reporter", 1, reporter_answer()),
    ], debate_yaml="embedder: {kind: provider, provider: local, model: m}\n")  # fmt: skip
    local = {"apiType": "openai-compatible", "baseUrl": base_url, "apiKeyEnvVar": "LOCAL_EMBED_KEY", "models": {"m": {}}}
    llm = yaml.safe_load(rtws.llm_yaml.read_text())
    rtws.llm_yaml.write_text(yaml.safe_dump({"providers": {**llm["providers"], "local": local}}))
    async with started_engine(rtws) as engine:
        events: list[dict[str, Any]] = []
        session = await open_debate(engine, emit=events.append, question="IELTS plan?")
        assert session.comparer.method == "embedding:local/m"
        state = await session.run_to_end()
        assert state.status == "converged" and state.current_round == 2, events
        decisions = [e for e in events if e["type"] == "host_decision"]
        assert [d["similarity_method"] for d in decisions] == ["embedding:local/m"] * 2, "no fallback to word overlap"
        assert len(fake.requests) >= 2 and set(fake.authorization) == {"Bearer sk-test"}
        assert (built["sdk"], built["http"]) == (1, 1), f"one client for the run's {len(fake.requests)} calls: {built}"
        assert len(fake.connections) == 1, "the run's requests share one connection"
        assert await all_closed(fake), "the run closed its connection when it ended"


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
