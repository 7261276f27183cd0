"""How many SDK clients and TLS contexts the engine builds for the dialogs it drives.

Turns of four members on four SDK endpoints-and-keys (Anthropic with two keys, OpenAI Chat Completions,
OpenAI Responses), several rounds, through the real SDKs against the fake server.
"""

from __future__ import annotations

import asyncio
import gc
import json
import ssl
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anthropic
import openai
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))  # tests/llm is not a package
from dialects import AnthropicDialect, OpenAiChatDialect, OpenAiResponsesDialect, Script, Text
from fake_servers import FakeLlmServer, RecordedRequest, Reply, running_fake_server

from dominds.driver.engine import Engine
from dominds.rtws import Rtws

TEAM_YAML = """\
member_defaults: {model: fake-model, diligence_push_max: 0}
default_responder: ann
members:
  ann: {name: Ann, provider: anthropic-a}
  bob: {name: Bob, provider: anthropic-b}
  cat: {name: Cat, provider: chat}
  dan: {name: Dan, provider: responses}
"""
LLM_YAML = """\
providers:
  anthropic-a: {{apiType: anthropic, baseUrl: "{url}", apiKeyEnvVar: FAKE_CLIENTS_KEY_A, models: {{fake-model: {{}}}}}}
  anthropic-b: {{apiType: anthropic, baseUrl: "{url}", apiKeyEnvVar: FAKE_CLIENTS_KEY_B, models: {{fake-model: {{}}}}}}
  chat: {{apiType: openai-compatible, baseUrl: "{url}/v1", apiKeyEnvVar: null, models: {{fake-model: {{}}}}}}
  responses: {{apiType: openai-responses, baseUrl: "{url}/v1", apiKeyEnvVar: null, models: {{fake-model: {{}}}}}}
"""
MEMBERS = ("ann", "bob", "cat", "dan")


def answer(request: RecordedRequest) -> Reply:
    dialect = {"/v1/messages": AnthropicDialect(), "/v1/chat/completions": OpenAiChatDialect()}.get(
        request.path, OpenAiResponsesDialect()
    )
    return dialect.reply(Script((Text("ok"),)))


@pytest.fixture
async def fake(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeLlmServer]:
    monkeypatch.setenv("FAKE_CLIENTS_KEY_A", "sk-ant-clients-a-not-real")
    monkeypatch.setenv("FAKE_CLIENTS_KEY_B", "sk-ant-clients-b-not-real")
    async with running_fake_server() as server:
        server.responder = answer
        yield server


def _workspace(tmp_path: Path, url: str) -> Rtws:
    """The four members on their providers, all pointed at the fake server."""
    rtws = Rtws(tmp_path / "ws")
    rtws.minds_dir.mkdir(parents=True)
    rtws.team_yaml.write_text(TEAM_YAML)
    rtws.llm_yaml.write_text(LLM_YAML.format(url=url))
    (rtws.root / "tasks" / "t.tsk").mkdir(parents=True)
    rtws.ensure_layout()
    return rtws


def live(kind: type) -> int:
    gc.collect()
    return sum(isinstance(o, kind) for o in gc.get_objects())


async def test_every_sdk_client_is_kept_per_endpoint_and_key_and_all_share_one_tls_context(
    tmp_path: Path, fake: FakeLlmServer
) -> None:
    """Each SDK client built its own TLS context, parsing the system's CA certificates again (~0.8 MiB
    and a few ms each, and one more per proxy set in the environment): a daemon whose members use
    several providers, endpoints or keys held one per client. All of them now share one."""
    rtws = _workspace(tmp_path, fake.url)
    clients_before = live(anthropic.AsyncAnthropic) + live(openai.AsyncOpenAI)
    contexts_before = live(ssl.SSLContext)
    engine = Engine(rtws)
    await engine.start()
    try:
        rounds = 2
        for _ in range(rounds):
            for member in MEMBERS:
                dialog = engine.create_dialog(member, "tasks/t.tsk")
                engine.submit_user_message(dialog, "hello")
            await engine.wait_idle(timeout=30)
        assert len(fake.requests) == rounds * len(MEMBERS), "every turn went through its SDK"
        keys = {r.headers.get("authorization") for r in fake.requests if r.path == "/v1/messages"}
        assert keys == {"Bearer sk-ant-clients-a-not-real", "Bearer sk-ant-clients-b-not-real"}
        clients = live(anthropic.AsyncAnthropic) + live(openai.AsyncOpenAI) - clients_before
        assert clients == 4, "one client per endpoint and key (two keys, chat, responses), not per turn"
        assert live(ssl.SSLContext) - contexts_before <= 1, "the four clients share one TLS context"
    finally:
        await engine.close()


IN_A_DAEMON = """
import asyncio, gc, json, sys
from pathlib import Path

from dominds.driver.engine import Engine
from dominds.rtws import Rtws

async def main() -> None:
    gc.collect()
    gc.freeze()  # as `dominds serve` does once its imports are loaded (cli/cmd_serve.py)
    engine = Engine(Rtws(Path(sys.argv[1])))
    await engine.start()
    try:
        dialog = engine.create_dialog("ann", "tasks/t.tsk")
        engine.submit_user_message(dialog, "hello")
        await engine.wait_idle(timeout=60)
    finally:
        await engine.close()
    gc.collect()
    sdk = [m for name, m in list(sys.modules.items()) if name == "anthropic" or name.startswith("anthropic.")]
    defined = {id(v) for m in sdk for v in vars(m).values() if isinstance(v, type) and v.__module__.startswith("anthropic")}
    walked = sum(1 for o in gc.get_objects() if id(o) in defined)
    print(json.dumps({"defined": len(defined), "walked": walked}))

asyncio.run(main())
"""


async def test_the_sdk_a_daemon_imports_on_first_use_is_frozen_like_its_other_imports(
    tmp_path: Path, fake: FakeLlmServer
) -> None:
    """`dominds serve` freezes its imports' objects (gc.freeze) so the full collection after each sweep
    that unloads resting trees walks only what was created since; the SDK, imported on the first turn
    of a member on its provider, came later: with the Anthropic SDK's ~120,000 objects every such
    collection took 80–120 ms (4–13 without), the event loop blocked, every half second in a busy
    daemon. Driven in a fresh interpreter that froze its imports as serve does."""
    rtws = _workspace(tmp_path, fake.url)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", IN_A_DAEMON, str(rtws.root), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()
    assert [r.path for r in fake.requests] == ["/v1/messages"], "the turn went through the Anthropic SDK"
    counts = json.loads(out.decode().strip().splitlines()[-1])
    assert counts["defined"] > 1000, counts
    assert counts["walked"] == 0, f"the SDK's classes are out of the collector's sight: {counts}"
