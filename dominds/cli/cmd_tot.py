"""`dominds tot "problem"`: a Tree-of-Thoughts run, progress per layer, then the answer.

With teammates (the default) it runs on the daemon when one serves the workspace (through the API of
its ``/tot`` page, which shows the run too: ``workflow_daemon.py``), otherwise on an engine of its
own in this process, which holds the workspace lock while it runs. ``--symbolic``
answers Game-of-24 problems with the exact symbolic pair instead: no engine, no LLM, works anywhere.
Either way the run writes ``logs/tot-YYYYMMDD-HHMMSS-xxxxxx/`` in the workspace (or the current
directory outside one).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from dominds.cli.common import CliError, text_argument, workspace
from dominds.rtws import Rtws

STEP_TIMEOUT = 300.0
"""Seconds one teammate step may take (local runs; a daemon's runs use its own limit)."""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "tot",
        help="solve a problem with a Tree-of-Thoughts search",
        description="Run the Tree-of-Thoughts workflow: decompose, BFS/DFS over generated and scored thoughts, synthesize.",
    )
    p.add_argument("problem", nargs="?", help='the problem, e.g. "4 9 10 13" (Game of 24); `-` reads it from stdin')
    p.add_argument(
        "--resume", metavar="RUN_ID",
        help="go on with an interrupted run (its daemon stopped or crashed) from its saved tree, instead of a new problem",
    )
    p.add_argument("--task-type", choices=("math_reasoning", "creative_writing", "planning", "debugging", "architecture_design"))
    p.add_argument("--strategy", choices=("BFS", "DFS"), type=str.upper)
    p.add_argument("--depth", type=int, metavar="N", help="maximum depth (default: the decomposer's estimate)")
    p.add_argument("--branching", type=int, metavar="N", help="states kept: BFS beam width, DFS alternatives per node (max 3)")
    p.add_argument("--candidates", type=int, metavar="N", help="candidates generated per expanded node")
    p.add_argument("--threshold", type=float, metavar="X", help="prune candidates scoring below X (0-10)")
    p.add_argument("--generation", choices=("independent_sampling", "sequential_proposal"))
    p.add_argument("--evaluation", choices=("independent_scoring", "comparative_voting"))
    p.add_argument("--symbolic", action="store_true", help="use the exact symbolic Game-24 pair instead of LLM teammates")
    p.add_argument("--step-timeout", type=float, default=STEP_TIMEOUT, metavar="S", help="seconds one teammate step may take")
    p.add_argument("--json", action="store_true", help="print the outcome as JSON instead of text")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if args.resume is not None:
        if args.problem is not None or args.symbolic:
            raise CliError("--resume RUN_ID goes on with that run's problem and settings: give no problem and no --symbolic", 2)
        result = asyncio.run(_resume(args, _ProgressPrinter(quiet=args.json)))
        if args.json:
            print(json.dumps(result, ensure_ascii=False, indent=2))
        else:
            _print_result(result)
        return 0 if result["status"] == "completed" else 1
    if args.problem is None:
        raise CliError("give the problem (or --resume RUN_ID)", 2)
    args.problem = text_argument(args.problem, "problem")
    from dominds.workflows.tot.orchestrator import TotRequest
    from dominds.workflows.tot.settings import SearchOverrides

    overrides = SearchOverrides(
        strategy=args.strategy, max_depth=args.depth, branching_factor=args.branching, pruning_threshold=args.threshold,
        num_candidates=args.candidates, generation_strategy=args.generation, evaluation_strategy=args.evaluation,
    )  # fmt: skip
    request = TotRequest(args.problem, args.task_type, overrides)
    printer = _ProgressPrinter(quiet=args.json)
    if args.symbolic:
        result = asyncio.run(_symbolic(request, printer))
    else:
        result = asyncio.run(_on_daemon_or_here(args, request, printer))
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2))
    else:
        _print_result(result)
    return 0 if result["status"] == "completed" else 1


async def _symbolic(request: Any, printer: _ProgressPrinter) -> dict[str, Any]:
    from dominds.workflows.tot.orchestrator import run_tot
    from dominds.workflows.tot.settings import SettingsError
    from dominds.workflows.tot.symbolic import SymbolicGame24Backend, symbolic_request

    try:
        request = symbolic_request(request)
    except SettingsError as exc:
        raise CliError(str(exc), 2) from exc
    root = workspace(must_exist=False).root
    try:
        outcome = await run_tot(request, SymbolicGame24Backend(), logs_root=root / "logs", observer=printer)
    except SettingsError as exc:
        raise CliError(str(exc), 2) from exc
    return _result(outcome, None, None)


async def _on_daemon_or_here(args: argparse.Namespace, request: Any, printer: _ProgressPrinter) -> dict[str, Any]:
    """With a daemon serving the workspace, the run is the daemon's (its /tot page shows it too)."""
    from dominds.cli.client import find_daemon
    from dominds.cli.workflow_daemon import refuse_local_options, tot_on_daemon

    rtws = workspace()
    daemon = find_daemon(rtws)
    if daemon is None:
        return await _with_teammates(rtws, request, printer, args.step_timeout)
    refuse_local_options(
        {"--generation": bool(args.generation), "--evaluation": bool(args.evaluation), "--step-timeout": args.step_timeout != STEP_TIMEOUT},
        daemon,
    )
    body = {
        "problem": args.problem, "taskType": args.task_type, "strategy": args.strategy, "depth": args.depth,
        "branching": args.branching, "threshold": args.threshold, "candidates": args.candidates,
    }  # fmt: skip
    return await tot_on_daemon(daemon, body, quiet=args.json)


async def _resume(args: argparse.Namespace, printer: _ProgressPrinter) -> dict[str, Any]:
    """An interrupted run resumed from its saved tree: on the daemon when one serves the workspace, else here."""
    from dominds.cli.client import find_daemon
    from dominds.cli.workflow_daemon import tot_on_daemon, workflow_engine
    from dominds.workflows.tot.runner import NotResumable, resume_tot_run
    from dominds.workflows.tot.web import stored_run

    rtws = workspace()
    daemon = find_daemon(rtws)
    if daemon is not None:
        return await tot_on_daemon(daemon, {}, quiet=args.json, resume=args.resume)
    async with workflow_engine(rtws) as engine:
        record = await asyncio.to_thread(stored_run, engine, args.resume)
        if record is None:
            raise CliError(f"no ToT run {args.resume!r} in this workspace")
        try:
            live = resume_tot_run(engine, record, record.status, step_timeout=args.step_timeout, observer=printer)
        except NotResumable as exc:
            raise CliError(str(exc)) from exc
        if not args.json:
            print(f"(resuming run {args.resume} as {live.task_id}; dialog {live.root_id})", flush=True)
        assert live.task is not None
        await live.task
        if live.outcome is None:
            raise CliError(f"the run failed: {live.failure}")
        return _result(live.outcome, live.root_id, live.usage)


async def _with_teammates(rtws: Rtws, request: Any, printer: _ProgressPrinter, step_timeout: float) -> dict[str, Any]:
    from dominds.cli.workflow_daemon import workflow_engine
    from dominds.workflows.tot.runner import start_tot_run
    from dominds.workflows.tot.settings import SettingsError

    async with workflow_engine(rtws) as engine:
        try:
            live = start_tot_run(engine, request, observer=printer, step_timeout=step_timeout)
            assert live.task is not None
            await live.task
            if live.outcome is None:
                raise CliError(f"the run failed: {live.failure}")
            return _result(live.outcome, live.root_id, live.usage)
        except SettingsError as exc:
            raise CliError(str(exc), 2) from exc


def _result(outcome: Any, root_id: str | None, usage: dict[str, Any] | None) -> dict[str, Any]:
    search = outcome.search
    return {
        "task_id": outcome.task_id,
        "status": outcome.status,
        "root_dialog": root_id,
        "solution": outcome.solution,
        "stats": search.stats() if search else None,
        "solved": outcome.solved,
        "unsolved_code": outcome.unsolved_code,
        "unsolved_reason": outcome.unsolved_reason,
        "errors": outcome.errors,
        "llm_calls": outcome.llm_calls,
        "duration_ms": outcome.duration_ms,
        "usage": usage,
        "log_dir": str(outcome.log_dir) if outcome.log_dir else None,
    }


class _ProgressPrinter:
    """Observer that prints one line per BFS layer / DFS expansion, and each backtrack."""

    def __init__(self, *, quiet: bool) -> None:
        self.quiet = quiet
        self.tree: Any = None

    def __call__(self, kind: str, data: dict[str, Any]) -> None:
        if self.quiet:
            return
        if kind == "search_started":
            self.tree = data["tree"]
            s = data["settings"]
            print(f"ToT {data['task_id']}: {s['strategy']}, keep b={s['branching_factor']}, generate k={s['num_candidates']}, "
                  f"depth {s['max_depth']}, prune below {s['pruning_threshold']}")  # fmt: skip
        elif kind == "layer_done":
            best = max(data["kept"], key=lambda i: self.tree.nodes[i].score or 0.0, default=None)
            best_text = f"best {self.tree.nodes[best].score:.2f}: {self.tree.nodes[best].content}" if best else "nothing kept"
            print(f"  depth {data['depth']}: {len(data['expanded'])} expanded, {len(data['candidates'])} candidates, "
                  f"kept {len(data['kept'])}, pruned {len(data['pruned'])}; {best_text}", flush=True)  # fmt: skip
        elif kind == "backtrack":
            print(f"  backtrack #{data['total_backtracks']}: left {data['node_id']} ({data['reason']})", flush=True)


def _print_result(result: dict[str, Any]) -> None:
    solution = result["solution"]
    print()
    if result["status"] == "unsolved":
        print(f"Unsolved: {result['unsolved_reason']}.")
    elif result["status"] != "completed":
        ended = {"cancelled": "was cancelled", "interrupted": "was interrupted (its daemon stopped while it ran)"}
        print(f"No answer: the run {ended.get(result['status'], result['status'])}.")
    if solution is not None:
        verification = solution["verification"]
        if result["solved"] and verification["is_valid"]:
            print(f"Answer: {solution['answer']}")
            print(f"  (verified; confidence {solution['confidence']})")
        else:
            errors = "; ".join(verification.get("validation_errors") or []) or "unverified"
            print(f"Best attempt (NOT verified: {errors}): {solution['answer']}")
            print(f"  (confidence {solution['confidence']})")
        print("Reasoning trace:")
        for line in solution["reasoning_trace"]:
            print(f"  {line}")
    stats = result["stats"] or {}
    usage = result["usage"]
    tokens = f", tokens in {usage['inputTokens']} / out {usage['outputTokens']}" if usage else ""
    print(f"Stats: {stats.get('total_nodes', 0)} nodes, {stats.get('total_backtracks', 0)} backtracks, "
          f"{result['llm_calls']} role calls ({stats.get('llm_calls', 0)} in the search){tokens}, {result['duration_ms']} ms")  # fmt: skip
    for error in result["errors"]:
        print(f"  {error['agent']} {error['request']}: {error['code']}: {error['message']}")
    if result["root_dialog"]:
        print(f"Dialog: {result['root_dialog']}")
    print(f"Logs: {result['log_dir']}")
