"""The LLM roles as teammates: every step is a subdialog of the run's root dialog (persisted, costed,
visible), replies are read back as the seed's JSON, and bad replies end as the seed's error codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tot_wf_kit import GAME_RESPONSES, scripted_engine

from dominds.store.course_records import HumanTextRecord, SubdialogCreatedRecord, TeammateResponseRecord
from dominds.workflows.tot.orchestrator import TotRequest
from dominds.workflows.tot.roles import ensure_role_members
from dominds.workflows.tot.runner import start_tot_run
from dominds.workflows.tot.settings import SearchOverrides

VOTING = SearchOverrides(branching_factor=1, num_candidates=2, evaluation_strategy="comparative_voting")
"""b=1, k=2, one vote per layer: the shape GAME_RESPONSES answers."""


async def test_a_run_with_teammates_asks_each_role_as_a_subdialog_of_its_root(tmp_path: Path) -> None:
    async with scripted_engine(tmp_path / "ws", GAME_RESPONSES) as engine:
        events: list[dict[str, Any]] = []
        engine.pubchan.subscribe(events.append)
        live = start_tot_run(engine, TotRequest("4 9 10 13", overrides=VOTING))
        assert live.task is not None
        await live.task
        outcome = live.outcome
        assert outcome is not None and outcome.status == "completed" and outcome.errors == []
        assert outcome.verified and outcome.solution is not None and outcome.solution["answer"] == "(10 - (13 - 9)) * 4 = 24"
        assert outcome.search is not None and outcome.search.solved
        assert [n.content for n in outcome.search.best_path][-1] == "4 * 6 = 24 (left: 24)"
        root = engine.get_dialog(live.root_id)
        records = root.files.read_course(root.latest.current_course)
        created = [r for r in records if isinstance(r, SubdialogCreatedRecord)]
        assert [r.target_agent_id for r in created] == ["tot-decomposer"] + ["tot-generator", "tot-evaluator"] * 3 + ["tot-synthesizer"]
        assert len([r for r in records if isinstance(r, TeammateResponseRecord)]) == 8 == outcome.llm_calls
        notes = [r.content for r in records if isinstance(r, HumanTextRecord)]
        assert any(n.startswith("depth 3:") for n in notes) and any("verified" in n for n in notes)
        assert live.usage is not None and (live.usage["inputTokens"], live.usage["outputTokens"]) == (80, 40)
        assert root.meta.conductor == "tot" and root.meta.agent_id == "tot-orchestrator"
        tree_events = [e for e in events if e.get("type") == "tot_tree_evt" and e["runId"] == live.task_id]
        assert {e["event"] for e in tree_events} >= {"search_started", "expanded", "evaluated", "layer_done", "solution", "run_done"}
        json.dumps(tree_events)  # everything published is JSON
        info = json.loads((tmp_path / "ws" / "logs" / live.task_id / "00-task-info.json").read_text())
        assert info["status"] == "completed" and info["final_stats"]["llm_calls"] == 8
        assert (tmp_path / "ws" / "tasks" / "tot" / f"{live.task_id}.tsk" / "goals.md").read_text().endswith("4 9 10 13\n")


async def test_garbage_from_a_teammate_is_retried_then_reported_with_the_seeds_codes(tmp_path: Path) -> None:
    responses = [
        *GAME_RESPONSES[:2],
        {"agent": "tot-evaluator", "contains": "evaluate_thoughts", "response": "Both are fine, I guess."},
        *GAME_RESPONSES[-1:],
    ]
    async with scripted_engine(tmp_path / "ws", responses) as engine:
        live = start_tot_run(engine, TotRequest("4 9 10 13", overrides=VOTING))
        assert live.task is not None
        await live.task
        outcome = live.outcome
        assert outcome is not None and outcome.status == "unsolved" and not outcome.solved
        assert [(e["agent"], e["code"]) for e in outcome.errors] == [("evaluator", "INVALID_FORMAT")]
        assert outcome.search is not None and outcome.search.error is not None and outcome.search.error.code == "SEARCH_EXHAUSTED"
        root = engine.get_dialog(live.root_id)
        asked = [r.target_agent_id for r in root.files.read_course(1) if isinstance(r, SubdialogCreatedRecord)]
        assert asked.count("tot-evaluator") == 2, "one retry"
        retry = [r for r in root.files.read_course(1) if isinstance(r, SubdialogCreatedRecord)][3]
        assert "previous reply could not be used" in retry.tellask_body


async def test_a_teammate_that_does_not_answer_in_time_is_an_evaluation_timeout(tmp_path: Path) -> None:
    slow = {"agent": "tot-evaluator", "contains": "evaluate_thoughts", "response": "x " * 300, "chunk_chars": 2, "delay_ms": 5}
    async with scripted_engine(tmp_path / "ws", [*GAME_RESPONSES[:2], slow, *GAME_RESPONSES[-1:]]) as engine:
        live = start_tot_run(engine, TotRequest("4 9 10 13", overrides=VOTING), step_timeout=0.2)
        assert live.task is not None
        await live.task
        assert live.outcome is not None and [e["code"] for e in live.outcome.errors] == ["EVALUATION_TIMEOUT"]
        await engine.wait_idle()
        dead = [engine.get_dialog(live.root_id, s) for s in engine.store.subdialog_ids("run", live.root_id)]
        assert [d.agent_id for d in dead if d.latest.run_state.kind == "dead"] == ["tot-evaluator"]


def test_importing_the_workflow_does_not_change_any_team() -> None:
    code = (
        "import dominds.workflows.tot.web, dominds.workflows.tot.runner, dominds.cli.cmd_tot\n"
        "from dominds.team import bootstrap_team\n"
        "print(sorted(m for m in bootstrap_team().members if m.startswith('tot-')))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


async def test_the_roles_are_hidden_tool_less_members_on_the_workspace_defaults(tmp_path: Path) -> None:
    async with scripted_engine(tmp_path / "ws", []) as engine:
        ensure_role_members(engine)
        team = engine.config.get().team
        for member_id in ("tot-decomposer", "tot-generator", "tot-evaluator", "tot-synthesizer"):
            member = team.member(member_id)
            assert member is not None and member.hidden and member.toolsets == ()
            assert (member.provider, member.model) == ("scripted", "test"), "member_defaults apply"
        assert "JSON" in (engine.config.persona("tot-evaluator") or "")
        assert team.member("tot-orchestrator") is None, "the orchestrator is code, not a member"
