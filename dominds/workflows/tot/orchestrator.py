"""The orchestrator: one ToT run from problem to verified answer, with its log folder.

Order (seed 000 "完整流程"): decompose_task → settings from the task-type table, the decomposer's
depth estimate and the user's overrides → initialize_search → the explorer's BFS/DFS →
search_complete → synthesize_solution → for a Game-24 problem the exact checker replaces whatever
verification the synthesizer claimed (confidence 1.0 only when verified, origin rule).

Failures of a role are reported, not raised: a failed decomposition falls back to the task-type
defaults, a failed synthesis to an answer built from the best path. Only a bug or a cancellation
ends a run early, and even then the log folder is completed (``status: failed`` / ``cancelled``).

A finished run is ``completed`` only when it is **solved**; otherwise it is ``unsolved``, with the
reason, in every place a user looks (task info, timeline, CLI, page). Solved means: for Game 24, the
exact checker accepts the answer; otherwise the search reached a solution (a terminal node scoring
at least 9.5) and the synthesizer verified its answer. An unsolved run's answer is never "verified"
whatever the synthesizer claimed, and a search that kept no thought at all has nothing to synthesize.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from dominds.driver.conductor import ConductorRun
from dominds.workflows.tot import game24
from dominds.workflows.tot.channel import Channel, ProtocolBug, RoleBackend
from dominds.workflows.tot.explorer import Explorer, SearchGoal, SearchOutcome, TreeObserver
from dominds.workflows.tot.logs import Clock, RunLogs, iso_ms, new_task_id, to_ms, utc_now
from dominds.workflows.tot.model import ThoughtNode, ThoughtTree
from dominds.workflows.tot.protocol import Message, message, reply_error
from dominds.workflows.tot.schemas import TASK_TYPES, message_errors
from dominds.workflows.tot.settings import (
    EARLY_STOP_SCORE,
    TASK_TYPE_DEFAULTS,
    SearchOverrides,
    SearchSettings,
    SettingsError,
    classify_task,
    resolve_settings,
)

MAX_PROBLEM_CHARS = 20_000
"""A longer problem is refused before anything runs: it would be sent to every role call of the search."""
UNVERIFIED_CONFIDENCE_CAP = 0.5
"""A Game-24 answer the checker rejects keeps at most this confidence, whatever the synthesizer said."""


@dataclass(frozen=True)
class TotRequest:
    problem: str
    task_type: str | None = None
    """``None`` = ``classify_task(problem)``."""
    overrides: SearchOverrides = field(default_factory=SearchOverrides)


@dataclass
class TotOutcome:
    task_id: str
    status: str
    """``completed`` (solved), ``unsolved``, ``failed``, ``cancelled`` or ``interrupted`` (its process stopped)
    (as written to ``00-task-info.json``)."""
    task_type: str
    settings: SearchSettings | None = None
    search: SearchOutcome | None = None
    solution: dict[str, Any] | None = None
    """The ``final_solution`` payload."""
    errors: list[dict[str, Any]] = field(default_factory=list)
    """Every error reply of the run ({agent, request, code, message, recoverable})."""
    log_dir: Path | None = None
    duration_ms: int = 0
    llm_calls: int = 0
    solved: bool = False
    unsolved_code: str | None = None
    """One of ``UNSOLVED_CODES`` when a finished run is not solved."""
    unsolved_reason: str | None = None
    """Why a finished run is not solved (``None`` when it is, or when it did not finish)."""

    @property
    def verified(self) -> bool:
        return bool(self.solution and self.solution["verification"]["is_valid"])


@dataclass(frozen=True)
class ResumePoint:
    """Where a run cut by a crash stopped, from its ``tot-run.json``: the search goes on from its tree
    (``Explorer`` reuses what was generated and scored) with its settings, and without a new decomposition
    when it was saved."""

    from_run: str
    tree: ThoughtTree
    settings: SearchSettings
    decomposition: dict[str, Any] | None
    """The decomposer's result; ``None`` for a record written before it was saved: it is asked again."""


def check_request(request: TotRequest) -> tuple[str, SearchSettings]:
    """The task type and the pre-decomposition settings, or ``SettingsError`` for bad input."""
    if not request.problem.strip():
        raise SettingsError("the problem is empty")
    if len(request.problem) > MAX_PROBLEM_CHARS:
        raise SettingsError(
            f"the problem is {len(request.problem):,} characters; at most {MAX_PROBLEM_CHARS:,} are accepted "
            "(it goes to every step of the search): put the long material in a file and ask about it"
        )
    task_type = request.task_type or classify_task(request.problem)
    if task_type not in TASK_TYPES:
        raise SettingsError(f"unknown task type {task_type!r} (known: {', '.join(TASK_TYPES)})")
    return task_type, resolve_settings(task_type, request.overrides)


async def run_tot(
    request: TotRequest,
    backend: RoleBackend,
    *,
    logs_root: Path | None,
    task_id: str | None = None,
    run: ConductorRun | None = None,
    observer: TreeObserver | None = None,
    clock: Clock = utc_now,
    stopping: Callable[[], bool] | None = None,
    resume: ResumePoint | None = None,
) -> TotOutcome:
    """Run ToT on ``request`` with ``backend`` answering the LLM roles; logs go to ``logs_root/<task_id>``.

    A cancellation ends the run ``cancelled``, or ``interrupted`` when ``stopping()`` says that its
    process is stopping (the daemon's shutdown cancels the runs it drives; no user cancelled them)."""
    task_type, settings = check_request(request)
    started = to_ms(clock())  # duration_ms must equal end_time - start_time as written
    task_id = task_id or new_task_id(started)
    logs = RunLogs(logs_root / task_id if logs_root is not None else None, clock)
    channel = Channel(backend, logs)
    outcome = TotOutcome(task_id, "failed", task_type, settings, log_dir=logs.folder)
    info: dict[str, Any] = {
        "task_id": task_id, "problem": request.problem, "task_type": task_type, "status": "running",
        "start_time": iso_ms(started), "end_time": None, "duration_ms": None,
        "search_config": settings.search_config().to_dict(), "final_stats": None,
    }  # fmt: skip
    if run is not None:  # how the panel finds the run's snapshot (tot-run.json) from its id
        info["root_dialog_id"] = run.root_id
    logs.write_task_info(info)
    orchestrator_log = logs.agent("orchestrator")

    def notify(kind: str, data: dict[str, Any]) -> None:
        if observer is not None:
            observer(kind, data)
        text = _note_text(kind, data)
        if run is not None and text:
            run.note(text)

    try:
        orchestrator_log.log("info", f"📋 问题类型: {task_type}")
        if resume is not None and resume.decomposition is not None:
            orchestrator_log.log("info", f"♻️ 恢复运行 {resume.from_run}: 沿用其分解、配置与思维树 ({len(resume.tree.nodes)} 个节点)")
            decomposition = resume.decomposition
            settings = resume.settings
        else:
            decomposition = await _decompose(channel, task_id, request.problem, task_type, orchestrator_log.log)
            depth_estimate = float(decomposition["depth_estimate"]) if decomposition.get("depth_estimate") else None
            settings = resume.settings if resume is not None else resolve_settings(task_type, request.overrides, depth_estimate)
        outcome.settings = s = settings
        info["search_config"] = settings.search_config().to_dict()
        orchestrator_log.log("info", f"🔍 配置: {s.strategy}, 分支={s.branching_factor}, 深度={s.max_depth}, 阈值={s.pruning_threshold}", s.describe())
        init = message("initialize_search", "orchestrator", "explorer", task_id, {
            "problem": request.problem, "task_type": task_type,
            "search_config": s.search_config().to_dict(), "decomposition_result": decomposition,
        })  # fmt: skip
        _require_valid(init)
        if resume is not None:
            tree = resume.tree
            tree.task_id = task_id
        else:
            puzzle = game24.parse_puzzle(request.problem)
            root_metadata = {"left": [str(n) for n in puzzle]} if puzzle else {}
            tree = ThoughtTree.start(task_id, request.problem, task_type, s.search_config(), root_metadata)
        goal = SearchGoal(str(decomposition.get("success_criteria") or request.problem), list(decomposition.get("constraints") or []))
        notify("search_started", {"task_id": task_id, "settings": s.describe(), "tree": tree, "decomposition": decomposition})  # the live tree, read only
        outcome.search = search = await Explorer(tree, s, goal, channel, notify).run()
        complete = message("search_complete", "explorer", "orchestrator", task_id, {
            "best_path": [n.to_dict() for n in search.best_path], "tree": tree.to_dict(), "stats": search.stats(),
        })  # fmt: skip
        if search.error is not None:
            complete["error"] = search.error.to_dict()
        _require_valid(complete)
        orchestrator_log.log("progress", "✓ 搜索完成", {**search.stats(), "solved": search.solved})
        if len(search.best_path) > 1:
            outcome.solution = await _synthesize(channel, task_id, request.problem, task_type, search.best_path, orchestrator_log.log)
        else:
            orchestrator_log.log("warning", "⚠️ 没有保留任何思维, 不调用 synthesizer")
        outcome.solved, outcome.unsolved_code, outcome.unsolved_reason = _judge(request.problem, search, outcome.solution)
        if outcome.solution is not None:
            notify("solution", {"solution": outcome.solution, "solved": outcome.solved})
        outcome.status = "completed" if outcome.solved else "unsolved"
        if outcome.unsolved_reason:
            orchestrator_log.log("warning", f"⚠️ 未解决: {outcome.unsolved_reason}")
    except asyncio.CancelledError:
        interrupted = stopping is not None and stopping()
        outcome.status = "interrupted" if interrupted else "cancelled"
        orchestrator_log.log("warning", "⏹️ 任务已中断 (进程停止)" if interrupted else "⏹️ 任务已取消")
        raise
    except Exception as exc:  # a bug: recorded in the log folder, then raised to the caller
        orchestrator_log.log("error", f"❌ 内部错误: {type(exc).__name__}: {exc}")
        raise
    finally:
        _finish(outcome, info, logs, channel, started, clock)
        notify("run_done", {"status": outcome.status, "task_id": task_id, "solved": outcome.solved, "unsolved_reason": outcome.unsolved_reason})
    return outcome


def _finish(outcome: TotOutcome, info: dict[str, Any], logs: RunLogs, channel: Channel, started: datetime, clock: Clock) -> None:
    logs.agent("orchestrator").log("info", f"🏁 任务结束: {outcome.status}")  # before end_time: no entry after the end
    ended = to_ms(clock())
    outcome.duration_ms = int((ended - started).total_seconds() * 1000)
    outcome.llm_calls = channel.calls
    outcome.errors = list(channel.errors)
    best = outcome.search.best_path[-1] if outcome.search else None
    info.update(
        status=outcome.status,
        solved=outcome.solved,
        end_time=iso_ms(ended),
        duration_ms=outcome.duration_ms,
        final_stats={
            "total_nodes": len(outcome.search.tree.nodes) if outcome.search else 1,
            "llm_calls": channel.calls,
            "best_score": best.score if best is not None else None,
        },
    )
    if outcome.search is not None and outcome.search.error is not None:
        info["error"] = outcome.search.error.to_dict()
    if outcome.unsolved_reason:
        info["unsolved_code"], info["unsolved_reason"] = outcome.unsolved_code, outcome.unsolved_reason
    logs.write_agent_logs()
    # an agent call = one role log file (decomposer, each generator/evaluator round, synthesizer), as in the origin
    agent_calls = sum(1 for log in logs.agent_logs if not log.name.endswith(("orchestrator", "explorer")))
    logs.write_timeline(info, agent_calls)
    logs.write_task_info(info)


async def _decompose(channel: Channel, task_id: str, problem: str, task_type: str, log: Any) -> dict[str, Any]:
    request = message("decompose_task", "orchestrator", "decomposer", task_id, {"problem": problem, "task_type": task_type})
    reply = await channel.exchange(request)
    error = reply_error(reply)
    if error is None:
        payload: dict[str, Any] = reply["payload"]
        return payload
    log("warning", f"⚠️ 分解失败 ({error.code}), 使用 {task_type} 的默认配置")
    defaults = TASK_TYPE_DEFAULTS[task_type]
    return {
        "thought_granularity": defaults.thought_granularity,
        "intermediate_steps": [],
        "depth_estimate": defaults.max_depth,
        "constraints": [],
        "success_criteria": "",
    }


async def _synthesize(
    channel: Channel, task_id: str, problem: str, task_type: str, best_path: list[ThoughtNode], log: Any
) -> dict[str, Any]:
    path = [n.to_dict() for n in best_path]
    request = message("synthesize_solution", "explorer", "synthesizer", task_id, {"best_path": path, "problem": problem, "task_type": task_type})
    reply = await channel.exchange(request)
    error = reply_error(reply)
    solution = dict(reply["payload"]) if error is None else _fallback_solution(problem, best_path, f"{error.code}: {error.message}")
    puzzle = game24.parse_puzzle(problem)
    if puzzle is not None:
        check = game24.check_answer(str(solution["answer"]), puzzle)
        solution["verification"] = {"is_valid": check.is_valid, "validation_errors": list(check.errors)}
        if not check.is_valid:
            solution["confidence"] = min(float(solution["confidence"]), UNVERIFIED_CONFIDENCE_CAP)
        log("info", f"🔎 精确校验: {'通过' if check.is_valid else '未通过'}", {"answer": solution["answer"], "errors": list(check.errors)})
    return solution


UNSOLVED_CODES = ("search_exhausted", "depth_limit", "no_solution", "answer_rejected", "not_verified")
"""Why a finished run is unsolved, as a stable code (pages translate it; ``unsolved_reason`` has the detail)."""


def _judge(problem: str, search: SearchOutcome, solution: dict[str, Any] | None) -> tuple[bool, str | None, str | None]:
    """(solved, code, reason): an unsolved answer loses any claim of verification."""
    puzzle = game24.parse_puzzle(problem)
    if puzzle is not None and solution is not None and solution["verification"]["is_valid"]:
        return True, None, None  # the exact checker's verdict, whatever the search found
    if search.error is not None:
        code, why = "search_exhausted", f"{search.error.code}: {search.error.message}"
    elif search.depth_limited and (puzzle is not None or not search.solved):
        # a Game-24 path cut with numbers left never ends, whatever its score; elsewhere the depth is
        # where paths end, and a cut one is said only when nothing scored as a solution
        depth = search.tree.search_config.max_depth
        code, why = "depth_limit", (
            f"the depth limit ({depth}) was reached before a solution: a larger depth (--depth) searches further"
            if puzzle is not None
            else f"no final step scored at least {EARLY_STOP_SCORE} within the depth limit ({depth}): a larger depth (--depth) searches further"
        )
    elif puzzle is not None and solution is not None:
        code, why = "answer_rejected", "the answer failed the exact check: " + "; ".join(solution["verification"].get("validation_errors") or [])
    elif not search.solved:
        code, why = "no_solution", f"no final step scored at least {EARLY_STOP_SCORE}"
    elif solution is None or not solution["verification"]["is_valid"]:
        errors = (solution or {}).get("verification", {}).get("validation_errors") or ["no answer"]
        code, why = "not_verified", "the synthesizer did not verify its answer: " + "; ".join(errors)
    else:
        return True, None, None
    if solution is not None and solution["verification"]["is_valid"]:
        errors = [f"no thought reached a solution: {why}", *(solution["verification"].get("validation_errors") or [])]
        solution["verification"] = {"is_valid": False, "validation_errors": errors}
    if solution is not None:
        solution["confidence"] = min(float(solution["confidence"]), UNVERIFIED_CONFIDENCE_CAP)
    return False, code, why


def _fallback_solution(problem: str, best_path: list[ThoughtNode], why: str) -> dict[str, Any]:
    """An answer written from the best path when the synthesizer gave none."""
    puzzle = game24.parse_puzzle(problem)
    steps = [game24.parse_step(n.content) for n in best_path[1:]]
    expression = None
    if puzzle is not None and steps and all(s is not None for s in steps):
        expression = game24.expression_from_steps(puzzle, [s for s in steps if s is not None])
    answer = f"{expression} = {game24.TARGET}" if expression else (best_path[-1].content if len(best_path) > 1 else "")
    return {
        "answer": answer,
        "reasoning_trace": [f"Step {i}: {n.content}" for i, n in enumerate(best_path[1:], start=1)],
        "confidence": 0.0,
        "verification": {"is_valid": False, "validation_errors": [f"the synthesizer failed ({why})"]},
        "alternative_solutions": [],
    }


def _require_valid(msg: Message) -> None:
    problems = message_errors(msg)
    if problems:
        raise ProtocolBug(f"invalid {msg['type']} message: {problems[0]}")


def _note_text(kind: str, data: dict[str, Any]) -> str | None:
    """The progress line a run's root dialog shows for an event (None = not worth a line)."""
    if kind == "search_started":
        s = data["settings"]
        return f"ToT {data['task_id']}: {s['strategy']}, b={s['branching_factor']}, k={s['num_candidates']}, depth={s['max_depth']}, threshold={s['pruning_threshold']}"
    if kind == "layer_done":
        best = data["best_score"]
        return f"depth {data['depth']}: {len(data['candidates'])} candidates, kept {len(data['kept'])}, pruned {len(data['pruned'])}, best score {best if best is not None else '-'}"
    if kind == "solution":
        solution = data["solution"]
        return f"answer: {solution['answer']} ({'verified' if solution['verification']['is_valid'] else 'not verified'})"
    if kind == "run_done" and data["status"] != "completed":
        return f"{data['status']}: {data['unsolved_reason']}" if data.get("unsolved_reason") else f"run {data['status']}"
    return None
