"""Helpers for the debate tests: a scripted workspace, an engine, agent answers, and an angle embedder.

``AngleEmbedder`` maps a text containing ``angle=<degrees>`` to the unit vector at that angle, so the
cosine of two positions is cos(difference): 10° apart → 0.985 (converge), 30° → 0.866 (continue),
60° → 0.5 (force_opposition). A text without an angle makes it fail, like a broken endpoint.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import yaml

from dominds.driver.engine import Engine
from dominds.rtws import Rtws
from dominds.workflows.debate.members import debate_extensions
from dominds.workflows.debate.protocol import MEMBER_IDS

TEAM_YAML = """\
member_defaults:
  provider: scripted
  model: test
  diligence_push_max: 0
default_responder: lead
members:
  lead: {name: Lead}
"""

LLM_YAML = """\
providers:
  scripted:
    name: Scripted
    apiType: scripted
    baseUrl: .minds/scripted
    apiKeyEnvVar: null
    models:
      test: {context_length: 200000}
"""

_ANGLE = re.compile(r"angle=(-?\d+(?:\.\d+)?)")


class AngleEmbedder:
    name = "angle"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        vectors = []
        for text in texts:
            match = _ANGLE.search(text)
            if match is None:
                raise ValueError(f"no angle in {text[:40]!r}")
            radians = math.radians(float(match.group(1)))
            vectors.append([math.cos(radians), math.sin(radians)])
        return vectors


def write_workspace(root: Path, responses: list[dict[str, Any]], debate_yaml: str | None = None) -> Rtws:
    rtws = Rtws(root)
    (root / ".minds" / "scripted").mkdir(parents=True, exist_ok=True)
    rtws.team_yaml.write_text(TEAM_YAML)
    rtws.llm_yaml.write_text(LLM_YAML)
    if debate_yaml is not None:
        (rtws.minds_dir / "debate.yaml").write_text(debate_yaml)
    set_responses(rtws, responses)
    rtws.ensure_layout()
    return rtws


def set_responses(rtws: Rtws, responses: list[dict[str, Any]]) -> None:
    path = rtws.minds_dir / "scripted" / "test.yaml"
    path.write_text(yaml.safe_dump({"responses": responses}, allow_unicode=True, sort_keys=False))


@asynccontextmanager
async def started_engine(rtws: Rtws) -> AsyncIterator[Engine]:
    engine = Engine(rtws, extensions=debate_extensions())
    await engine.start()
    try:
        yield engine
    finally:
        await engine.close()


def position(angle: float, conclusion: str = "", confidence: float = 0.8) -> dict[str, Any]:
    return {
        "conclusion": f"{conclusion or 'A three-phase plan'} angle={angle}",
        "key_reasons": ["vocabulary first", "mock tests last"],
        "assumptions": ["two hours a day"],
        "confidence": confidence,
    }


def planner_answer(round_no: int, angle: float, **extra: Any) -> str:
    body = {
        "agent_id": "planner",
        "round": round_no,
        "output_type": "plan",
        "content": f"Plan of round {round_no}.",
        "metadata": {
            "position": position(angle),
            "plan": {"title": "IELTS in 3 months", "goal": "7.0", "phases": [{"phase_name": "Basics", "duration": "6 weeks",
                     "tasks": [{"title": "Vocabulary", "estimated_hours": 42, "deadline": "2026-01-15"}]}],
                     "total_estimated_hours": 180},
        },
        **extra,
    }
    return "Here is my plan.\n```json\n" + json.dumps(body, ensure_ascii=False) + "\n```"


def critic_answer(round_no: int, angle: float) -> str:
    body = {
        "agent_id": "critic",
        "round": round_no,
        "output_type": "critique",
        "content": f"Critique of round {round_no}.",
        "metadata": {
            "position": position(angle, "Feasible but writing needs more time"),
            "critique": {
                "target_agent": "planner",
                "target_round": round_no,
                "risks": [{"risk": "slow writing progress", "severity": "high", "impact": "writing below 6.5"}],
                "suggestions": [{"issue": "too little writing practice", "solution": "two timed essays a week", "priority": "high"}],
                "validity_check": {"feasible": True, "realistic": True, "complete": False},
            },
        },
    }
    return json.dumps(body, ensure_ascii=False)  # bare JSON, no fence


def reporter_answer(title: str = "IELTS plan") -> str:
    body = {
        "agent_id": "reporter",
        "round": 9,
        "output_type": "report",
        "content": f"# {title}\n\nThree phases, two timed essays a week.",
        "metadata": {
            "final_plan": {"title": title, "goal": "7.0", "plan": {"phases": []}},
            "summary": {"key_agreements": ["three phases"], "resolved_concerns": [], "remaining_uncertainties": ["time"]},
        },
    }
    return "```json\n" + json.dumps(body, ensure_ascii=False) + "\n```"


def step(role: str, round_no: int, answer: str, max_rounds: int = 5, *, also: str = "", **extra: Any) -> dict[str, Any]:
    """A scripted entry answering ``role`` in ``round_no`` (and only when the request also holds ``also``)."""
    head = re.escape(f"[debate round {round_no} of {max_rounds}, {role}]")
    regex = head + (r"[\s\S]*" + re.escape(also) if also else "")
    return {"agent": MEMBER_IDS[role], "regex": regex, "response": answer, "usage": {"input_tokens": 100, "output_tokens": 50}, **extra}


def parse_sse(raw: str) -> tuple[list[dict[str, Any]], list[str], bool]:
    """(events, comments, saw [DONE] last) of an SSE body; checks the framing on the way."""
    events: list[dict[str, Any]] = []
    comments: list[str] = []
    frames = [f for f in raw.split("\n\n") if f]
    done_last = bool(frames) and frames[-1] == "data: [DONE]"
    for frame in frames:
        assert "\n" not in frame, f"one line per frame expected: {frame!r}"
        if frame.startswith(":"):
            comments.append(frame[1:].strip())
        elif frame != "data: [DONE]":
            assert frame.startswith("data: "), frame
            events.append(json.loads(frame[len("data: ") :]))
    return events, comments, done_last
