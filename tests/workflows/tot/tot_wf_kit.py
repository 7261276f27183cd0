"""Helpers for the ToT workflow tests: test puzzles, a table-driven role backend, a fake clock,
and a scripted workspace with a running engine."""

from __future__ import annotations

import contextlib
import json
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from cli.test_cli_kit import Daemon
from workspace_kit import LLM_YAML, team_yaml

from dominds.driver.engine import Engine
from dominds.rtws import Rtws
from dominds.workflows.tot import game24
from dominds.workflows.tot.channel import Channel, RoleAnswer
from dominds.workflows.tot.explorer import Explorer, SearchGoal, SearchOutcome
from dominds.workflows.tot.logs import RunLogs
from dominds.workflows.tot.model import ThoughtTree
from dominds.workflows.tot.protocol import Message, error_reply, reply_to
from dominds.workflows.tot.schemas import GENERATION_FAILED
from dominds.workflows.tot.settings import SearchSettings

REPO_ROOT = Path(__file__).resolve().parents[3]
SHARED_CSV = REPO_ROOT.parent / "shared" / "data" / "game24" / "24.csv"
LOCAL_TEST_CSV = Path(__file__).resolve().parent / "data" / "24-test-900-999.csv"


def test_puzzles() -> list[str]:
    """The paper's 100 test puzzles (rows 900-999): from the shared 24.csv, else the local copy."""
    if SHARED_CSV.exists():
        return game24.load_puzzles(SHARED_CSV)[900:1000]
    return game24.load_puzzles(LOCAL_TEST_CSV)


test_puzzles.__test__ = False  # type: ignore[attr-defined]  # not a test, despite the name


class FakeClock:
    """Advances 1 ms per reading, from the seed's example start time: byte-identical log folders."""

    def __init__(self, start: datetime = datetime(2025, 10, 30, 14, 30, 56, 123000, tzinfo=UTC)) -> None:
        self.now = start

    def __call__(self) -> datetime:
        current = self.now
        self.now += timedelta(milliseconds=1)
        return current


@dataclass
class TableBackend:
    """Generator and evaluator answering from tables, recording every request.

    ``candidates``: parent content → candidate contents (a content in ``terminal`` is marked terminal).
    ``scores``: content → score. Independent sampling hands out a parent's candidates one per call.
    """

    candidates: dict[str, list[str]]
    scores: dict[str, float]
    terminal: set[str] = field(default_factory=set)
    confidence: dict[str, float] = field(default_factory=dict)
    suggest: set[str] = field(default_factory=set)
    """Contents the evaluator suggests pruning."""
    fail_generation_for: dict[str, int] = field(default_factory=dict)
    """Parent content → how many generate calls for it fail first."""
    requests: list[Message] = field(default_factory=list)
    _handed_out: dict[str, int] = field(default_factory=dict)

    async def answer(self, request: Message, correction: str | None) -> RoleAnswer:
        self.requests.append(request)
        payload = request["payload"]
        if request["type"] == "generate_thoughts":
            parent = payload["parent_node"]["content"]
            if self.fail_generation_for.get(parent, 0) > 0:
                self.fail_generation_for[parent] -= 1
                return RoleAnswer(error_reply(request, GENERATION_FAILED, "scripted failure"))
            pool = self.candidates.get(parent, [])
            if payload["generation_strategy"] == "independent_sampling":
                start = self._handed_out.get(parent, 0)
                self._handed_out[parent] = start + 1
                chosen = pool[start : start + 1]
            else:
                chosen = pool[: payload["num_candidates"]]
            cands = [
                {"temp_id": f"cand_{i}", "content": c, "action_type": "step", "metadata": {"terminal": c in self.terminal}}
                for i, c in enumerate(chosen, start=1)
            ]
            return RoleAnswer(reply_to(request, {"candidates": cands}))
        evaluations = [
            {
                "node_id": node["id"],
                "score": self.scores[node["content"]],
                "confidence": self.confidence.get(node["content"], 1.0),
                "reasoning": "table",
            }
            for node in payload["candidates"]
        ]
        suggested = [node["id"] for node in payload["candidates"] if node["content"] in self.suggest]
        return RoleAnswer(reply_to(request, {"evaluations": evaluations, "ranking": [], "pruning_suggestions": suggested}))

    def of_type(self, kind: str) -> list[Message]:
        return [r for r in self.requests if r["type"] == kind]


async def explore(backend: Any, settings: SearchSettings, problem: str = "P") -> tuple[SearchOutcome, ThoughtTree]:
    """Run the explorer alone on ``problem`` (the root's content)."""
    tree = ThoughtTree.start("tot-test", problem, "planning", settings.search_config(), {})
    channel = Channel(backend, RunLogs(None, FakeClock()))
    outcome = await Explorer(tree, settings, SearchGoal("reach the goal", []), channel).run()
    return outcome, tree


# ---------------------------------------------------------------- a scripted workspace

TEAM_YAML = team_yaml({"lead": "plans"}, fbr_effort=0)



def write_workspace(root: Path, responses: list[dict[str, Any]]) -> Rtws:
    """A workspace whose team names no ToT role: the roles must come from the workflow's registration."""
    rtws = Rtws(root)
    (root / ".minds" / "scripted").mkdir(parents=True, exist_ok=True)
    rtws.team_yaml.write_text(TEAM_YAML)
    rtws.llm_yaml.write_text(LLM_YAML)
    (root / ".minds" / "scripted" / "test.yaml").write_text(
        yaml.safe_dump({"responses": responses}, allow_unicode=True, sort_keys=False)
    )
    rtws.ensure_layout()
    return rtws


@contextlib.asynccontextmanager
async def scripted_engine(root: Path, responses: list[dict[str, Any]]) -> AsyncIterator[Engine]:
    engine = Engine(write_workspace(root, responses))
    await engine.start()
    try:
        yield engine
    finally:
        await engine.close()


def json_reply(agent: str, contains: str, payload: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A scripted response: ``agent`` answers a request containing ``contains`` with a bare JSON payload."""
    return {"agent": agent, "contains": contains, "response": json.dumps(payload, ensure_ascii=False), **extra}


USAGE = {"usage": {"input_tokens": 10, "output_tokens": 5}}
DECOMPOSITION = {
    "thought_granularity": "equation", "intermediate_steps": ["a", "b", "c"], "depth_estimate": 3,
    "constraints": ["each number once"], "success_criteria": "the expression equals 24",
}  # fmt: skip


def candidates(*contents: str) -> dict[str, Any]:
    return {"candidates": [{"temp_id": f"cand_{i}", "content": c, "action_type": "arithmetic"} for i, c in enumerate(contents, 1)]}


def votes(*scored: tuple[str, float, str]) -> dict[str, Any]:
    evaluations = [{"node_id": n, "score": s, "confidence": 0.9, "reasoning": label, "label": label} for n, s, label in scored]
    return {"evaluations": evaluations, "ranking": [n for n, _, _ in scored], "pruning_suggestions": []}


GAME_RESPONSES = [
    json_reply("tot-decomposer", "decompose_task", DECOMPOSITION, **USAGE),
    json_reply("tot-generator", '"id": "root"', candidates("13 - 9 = 4 (left: 4 4 10)", "9 + 4 = 13 (left: 10 13 13)"), **USAGE),
    json_reply("tot-generator", '"id": "node_1"', candidates("10 - 4 = 6 (left: 4 6)", "4 * 4 = 16 (left: 10 16)"), **USAGE),
    json_reply("tot-generator", '"id": "node_1_1"', candidates("4 * 6 = 24 (left: 24)", "6 - 4 = 2 (left: 2)"), **USAGE),
    json_reply("tot-evaluator", "(left: 4 4 10)", votes(("node_1", 10, "sure"), ("node_2", 0, "impossible")), **USAGE),
    json_reply("tot-evaluator", "(left: 4 6)", votes(("node_1_1", 10, "sure"), ("node_1_2", 0, "impossible")), **USAGE),
    json_reply("tot-evaluator", "(left: 24)", votes(("node_1_1_1", 10, "sure"), ("node_1_1_2", 0, "impossible")), **USAGE),
    {
        "agent": "tot-synthesizer",
        "contains": "synthesize_solution",
        "response": 'Done:\n```json\n{"answer": "(10 - (13 - 9)) * 4 = 24", "reasoning_trace": ["13-9=4", "10-4=6", "6*4=24"], '
        '"confidence": 0.9, "verification": {"is_valid": true}}\n```',
        **USAGE,
    },
]
"""Teammate answers for `4 9 10 13` searched with b=1, k=2 and comparative voting (one vote per layer):
8 role calls, 10 input and 5 output tokens each, ending in a verified answer."""


# ---------------------------------------------------------------- runs on a real daemon process

SLOW_EVALUATOR = [
    json_reply("tot-decomposer", "decompose_task", {
        "thought_granularity": "equation", "intermediate_steps": [], "depth_estimate": 3, "constraints": [], "success_criteria": "24",
    }),
    json_reply("tot-generator", "generate_thoughts", {"candidates": [{"temp_id": "c", "content": "13 - 9 = 4 (left: 4 4 10)", "action_type": "-"}]}),
    # still scoring when the daemon is killed (minutes at this pace); the kill never waits for it
    {"agent": "tot-evaluator", "contains": "evaluate_thoughts", "response": "x " * 5000, "chunk_chars": 2, "delay_ms": 50},
]  # fmt: skip


def daemon_call(daemon: Daemon, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    """(status, JSON body) of one request to a `dominds serve` process, with its token."""
    data = None if body is None else json.dumps(body).encode()
    headers = {**daemon.headers(), "Content-Type": "application/json"}
    request = urllib.request.Request(f"{daemon.http}{path}", data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def stored_tree(ws: Path, root_id: str) -> dict[str, Any]:
    """The ThoughtTree a run's ``tot-run.json`` holds ({} before there is one)."""
    path = ws / ".dialogs" / "run" / root_id / "tot-run.json"
    return (json.loads(path.read_text()).get("tree") or {}) if path.exists() else {}
