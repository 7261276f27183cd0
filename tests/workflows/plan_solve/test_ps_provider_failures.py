"""Provider failures reach the client at once, with the reason, as the run's ``agent.error`` (seed §6).

The provider is a real OpenAI-compatible HTTP server on 127.0.0.1 (tests/llm/fake_servers.py) spoken to by
the real SDK; the step timeout stays at its 600 s default, so a run that waits for it fails the test's
own short deadline. The bug pinned here: a provider failure during planning sent nothing, and the client
waited for the step timeout.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from llm_fakes import RecordedRequest, Reply, openai_error, openai_frames, running_fake_server
from ps_kit import PsClient, names, plan_json, slide_json

from dominds.driver.engine import Engine
from dominds.rtws import Rtws
from dominds.workflows.plan_solve.settings import PlanSolveSettings
from dominds.workflows.plan_solve.web import WS_PATH, make_standalone_app

DEADLINE_S = 30.0
"""Far below the 600 s step timeout: an answer within it came from the failure, not from the timeout."""
LLM_YAML = """\
providers:
  fake:
    apiType: openai-compatible
    baseUrl: {url}/v1
    apiKeyEnvVar: {key}
    models:
      known-model: {{context_length: 100000}}
"""
Responder = Callable[[RecordedRequest], Reply]


def role_of(request: RecordedRequest) -> str:
    system = json.dumps(request.body.get("messages", [])[:1])
    return "planner" if "planner of a data-to-slides" in system else "solver"


def plan_ok(then: Responder) -> Responder:
    def respond(request: RecordedRequest) -> Reply:
        if role_of(request) == "planner":
            return Reply(frames=openai_frames(content=plan_json([1, 2])))
        return then(request)

    return respond


async def run_against(
    tmp_path: Path, aiohttp_client: Any, respond: Responder, *, model: str = "known-model", key: str = "null", **settings: Any
) -> tuple[list[dict[str, Any]], float]:
    async with running_fake_server() as fake:
        fake.responder = respond
        rtws = Rtws(tmp_path / "ws")
        rtws.minds_dir.mkdir(parents=True)
        rtws.team_yaml.write_text(f"member_defaults: {{provider: fake, model: {model}, diligence_push_max: 0}}\n")
        rtws.llm_yaml.write_text(LLM_YAML.format(url=fake.url, key=key))
        rtws.ensure_layout()
        engine = Engine(rtws)
        await engine.start()
        client: TestClient[Any, Any] | None = None
        try:
            settings.setdefault("workdir", tmp_path / "out")
            client = await aiohttp_client(make_standalone_app(engine, PlanSolveSettings(**settings)))
            sock = PsClient(await client.ws_connect(WS_PATH))
            await sock.create_session()
            started = time.monotonic()
            await sock.ask("Make two slides")
            events = await sock.finish(timeout=DEADLINE_S)
            return events, time.monotonic() - started
        finally:
            if client is not None:
                await client.close()
            await engine.close()


PLANNING_FAILURES = {
    "http-400": (openai_error(400, "Invalid 'messages[0]': bad request body"), "HTTP 400"),
    "bad-key": (openai_error(401, "Incorrect API key provided"), "HTTP 401"),
    "unknown-model-at-provider": (openai_error(404, "The model `known-model` does not exist"), "does not exist"),
    "quota": (
        openai_error(429, "You exceeded your current quota (insufficient_quota)", {"retry-after": "0"}),
        "exceeded your current quota",
    ),
}


@pytest.mark.parametrize("case", PLANNING_FAILURES)
async def test_a_provider_failure_during_planning_is_an_agent_error_at_once(
    tmp_path: Path, aiohttp_client: Any, case: str
) -> None:
    reply, reason = PLANNING_FAILURES[case]
    events, took = await run_against(tmp_path, aiohttp_client, lambda request: reply)
    assert names(events) == ["plan.start", "agent.error"], names(events)
    error = events[-1]
    assert "metadata" not in error or "event" not in error["metadata"], "the run's failure, not a refused request"
    assert "planner failed" in error["content"] and reason in error["content"], error["content"]
    assert took < DEADLINE_S


async def test_configuration_failures_before_any_request_are_agent_errors_at_once(
    tmp_path: Path, aiohttp_client: Any
) -> None:
    never: Responder = lambda request: Reply(frames=openai_frames(content="unreachable"))  # noqa: E731
    events, _ = await run_against(tmp_path / "a", aiohttp_client, never, model="no-such-model")
    assert names(events) == ["plan.start", "agent.error"]
    assert "has no model 'no-such-model'" in events[-1]["content"]
    events, _ = await run_against(tmp_path / "b", aiohttp_client, never, key="PS_TEST_UNSET_KEY_VAR")
    assert names(events) == ["plan.start", "agent.error"]
    assert "PS_TEST_UNSET_KEY_VAR is not set" in events[-1]["content"]


async def test_when_every_solver_fails_the_run_is_an_agent_error_naming_each_reason(
    tmp_path: Path, aiohttp_client: Any
) -> None:
    """Bug pinned: every slide failing ended as a 'final answer' ("No slides were produced")."""
    events, took = await run_against(
        tmp_path, aiohttp_client, plan_ok(lambda request: openai_error(401, "Incorrect API key provided"))
    )
    failed = [e for e in events if e["event"] == "solver.failed"]
    assert sorted(e["content"]["task"]["id"] for e in failed) == [1, 2]
    assert all("HTTP 401" in e["content"]["error"] for e in failed)
    assert events[-1]["event"] == "agent.error" and "aggregate.start" not in names(events)
    assert "slide 1" in events[-1]["content"] and "HTTP 401" in events[-1]["content"]
    assert took < DEADLINE_S


async def test_one_failing_solver_is_reported_and_the_other_slides_make_the_deck(
    tmp_path: Path, aiohttp_client: Any
) -> None:
    def solver(request: RecordedRequest) -> Reply:
        if "Slide task #2:" in json.dumps(request.body["messages"]):
            return openai_error(400, "context too long for slide 2")
        return Reply(frames=openai_frames(content=slide_json(1)))

    events, _ = await run_against(tmp_path, aiohttp_client, plan_ok(solver))
    [failed] = [e for e in events if e["event"] == "solver.failed"]
    assert failed["content"]["task"]["id"] == 2 and "context too long" in failed["content"]["error"]
    assert events[-1]["event"] == "agent.final_answer"
    assert "failed: 2" in events[-1]["content"]
    [aggregated] = [e for e in events if e["event"] == "aggregate.completed"]
    assert [s["id"] for s in aggregated["content"]["output"]["slides"]] == [1]


async def test_a_failure_while_writing_the_deck_is_an_agent_error_at_once(tmp_path: Path, aiohttp_client: Any) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the output folder should be")

    def solver(request: RecordedRequest) -> Reply:
        text = json.dumps(request.body["messages"])
        return Reply(frames=openai_frames(content=slide_json(1 if "Slide task #1:" in text else 2)))

    events, took = await run_against(tmp_path, aiohttp_client, plan_ok(solver), workdir=blocked)
    assert names(events)[-2:] == ["aggregate.start", "agent.error"]
    assert "not-a-folder" in events[-1]["content"]
    assert took < DEADLINE_S


@pytest.fixture(autouse=True)
def _no_key_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PS_TEST_UNSET_KEY_VAR", raising=False)
