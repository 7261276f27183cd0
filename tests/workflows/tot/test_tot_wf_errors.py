"""Role failures become the seed's error codes and a finished log folder, never a crash."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from dominds.workflows.tot.channel import RoleAnswer
from dominds.workflows.tot.orchestrator import TotRequest, run_tot
from dominds.workflows.tot.protocol import Message, error_reply, reply_from_text
from dominds.workflows.tot.symbolic import SymbolicGame24Backend, symbolic_request


@dataclass
class OneBadRole:
    """The symbolic pair, except that ``agent`` answers with ``text`` (or the ``error`` code, or raises)."""

    agent: str
    text: str = ""
    error: str | None = None
    raises: BaseException | None = None
    seen: list[Message] = field(default_factory=list)
    inner: SymbolicGame24Backend = field(default_factory=SymbolicGame24Backend)

    async def answer(self, request: Message, correction: str | None) -> RoleAnswer:
        if request["to"] != self.agent:
            return await self.inner.answer(request, correction)
        self.seen.append({"request": request, "correction": correction})
        if self.raises is not None:
            raise self.raises
        if self.error is not None:
            return RoleAnswer(error_reply(request, self.error, "scripted"))
        return RoleAnswer(reply_from_text(request, self.text))


def task_info(outcome: Any) -> dict[str, Any]:
    info: dict[str, Any] = json.loads((outcome.log_dir / "00-task-info.json").read_text(encoding="utf-8"))
    return info


def log_lines(outcome: Any, name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (outcome.log_dir / f"{name}.log").read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize(
    "garbage",
    [
        "They all look great to me!",  # no JSON at all
        '{"evaluations": [{"node_id": "node_1", "score": "high"}]}',  # JSON, wrong schema
    ],
)
async def test_an_evaluator_returning_garbage_leads_to_the_seeds_error_codes(tmp_path: Path, garbage: str) -> None:
    backend = OneBadRole("evaluator", garbage)
    request = symbolic_request(TotRequest("4 9 10 13"))
    outcome = await run_tot(request, backend, logs_root=tmp_path)
    assert outcome.status == "unsolved" and outcome.search is not None and not outcome.verified and outcome.solution is None
    codes = {(e["agent"], e["code"]) for e in outcome.errors}
    assert codes == {("evaluator", "INVALID_FORMAT")}
    assert outcome.search.error is not None and outcome.search.error.code == "SEARCH_EXHAUSTED"
    assert all(n.metadata.get("prune_reason") == "evaluation_failed" for n in outcome.search.tree.nodes.values() if n.depth)
    assert backend.seen[1]["correction"], "the second attempt says what was wrong with the first"
    assert len(backend.seen) == 2 * 36, "one retry per request, then INVALID_FORMAT"
    assert task_info(outcome)["error"] == {"code": "SEARCH_EXHAUSTED", "message": "no candidate survived to a complete path", "recoverable": False}
    levels = [e["level"] for e in log_lines(outcome, "05-evaluator-round1")]
    assert levels.count("warning") == 72 and levels.count("error") == 36


async def test_an_evaluator_timeout_is_reported_without_a_retry(tmp_path: Path) -> None:
    backend = OneBadRole("evaluator", error="EVALUATION_TIMEOUT")
    outcome = await run_tot(symbolic_request(TotRequest("4 9 10 13")), backend, logs_root=tmp_path)
    assert {e["code"] for e in outcome.errors} == {"EVALUATION_TIMEOUT"} and len(backend.seen) == 36


async def test_a_failed_decomposition_falls_back_to_the_task_type_defaults(tmp_path: Path) -> None:
    outcome = await run_tot(symbolic_request(TotRequest("4 9 10 13")), OneBadRole("decomposer", "no idea"), logs_root=tmp_path)
    assert outcome.verified and outcome.settings is not None and outcome.settings.max_depth == 3
    assert [e["code"] for e in outcome.errors] == ["INVALID_FORMAT"]
    assert any("默认配置" in e["msg"] for e in log_lines(outcome, "01-orchestrator"))


async def test_a_failed_synthesis_is_replaced_by_the_best_path_and_still_checked(tmp_path: Path) -> None:
    outcome = await run_tot(symbolic_request(TotRequest("4 9 10 13")), OneBadRole("synthesizer", error="GENERATION_FAILED"), logs_root=tmp_path)
    assert outcome.solution is not None and outcome.solution["answer"] == "(9 - 13) * (4 - 10) = 24"
    assert outcome.verified and outcome.solution["confidence"] == 0.0, "verified by the checker, not claimed by a synthesizer"


async def test_a_wrong_answer_is_not_verified_whatever_the_synthesizer_claims(tmp_path: Path) -> None:
    claim = {"answer": "4 * 6 = 24", "reasoning_trace": [], "confidence": 1.0, "verification": {"is_valid": True}}
    outcome = await run_tot(symbolic_request(TotRequest("4 9 10 13")), OneBadRole("synthesizer", json.dumps(claim)), logs_root=tmp_path)
    assert outcome.solution is not None and not outcome.verified
    assert outcome.solution["confidence"] == 0.5 and "uses the numbers" in outcome.solution["verification"]["validation_errors"][0]


async def test_a_bug_or_a_cancellation_still_finishes_the_log_folder(tmp_path: Path) -> None:
    with pytest.raises(ZeroDivisionError):
        await run_tot(symbolic_request(TotRequest("4 9 10 13")), OneBadRole("generator", raises=ZeroDivisionError()), logs_root=tmp_path / "bug")
    [bug] = (tmp_path / "bug").iterdir()
    assert json.loads((bug / "00-task-info.json").read_text())["status"] == "failed"
    assert (bug / "99-merged-timeline.log").exists()

    class Slow(SymbolicGame24Backend):
        async def answer(self, request: Message, correction: str | None) -> RoleAnswer:
            await asyncio.sleep(10)
            raise AssertionError("cancelled before")

    task = asyncio.create_task(run_tot(symbolic_request(TotRequest("4 9 10 13")), Slow(), logs_root=tmp_path / "cancel"))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    [cancelled] = (tmp_path / "cancel").iterdir()
    assert json.loads((cancelled / "00-task-info.json").read_text())["status"] == "cancelled"
