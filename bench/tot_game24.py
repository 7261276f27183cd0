"""Game of 24 with the ToT workflow on the ToT paper's test puzzles (rows 900-999 of 24.csv).

    python bench/tot_game24.py                      # the symbolic pair: no LLM, expected 100%
    python bench/tot_game24.py --workspace WS       # teammates as configured in WS/.minds/team.yaml
    python bench/tot_game24.py --workspace WS --provider openai --model gpt-4o   # any catalog provider

Prints, per puzzle, whether the answer passed the exact checker, the role calls, the tokens and the
time; then the success rate and totals. The search is the paper's setting: BFS, depth 3, keep b=5
per layer (``--n_select_sample 5``), one proposal call per state, value prompts scored
independently 3 times (``--n_evaluate_sample 3``), greedy selection, no threshold pruning (the
paper only keeps the top b). The symbolic pair lists every next step and labels states exactly,
so its figures check the search code; they are not, and must never be reported as, LLM results.
The paper reports 74% for GPT-4 (ToT, b=5); its committed re-run log scored 69%.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from dominds.driver.engine import Engine
from dominds.rtws import Rtws
from dominds.workflows.tot import game24
from dominds.workflows.tot.orchestrator import TotOutcome, TotRequest, run_tot
from dominds.workflows.tot.roles import ROLE_MEMBERS
from dominds.workflows.tot.runner import start_tot_run
from dominds.workflows.tot.settings import SearchOverrides
from dominds.workflows.tot.symbolic import SymbolicGame24Backend, symbolic_request

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CSV = REPO.parent / "shared" / "data" / "game24" / "24.csv"
FALLBACK_CSV = REPO / "tests" / "workflows" / "tot" / "data" / "24-test-900-999.csv"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workspace", type=Path, help="run the roles as teammates of this workspace (default: the symbolic pair)")
    p.add_argument("--provider", help="with --workspace: put every ToT role on this catalog provider (a temp copy of the workspace)")
    p.add_argument("--model", help="with --provider: the model key")
    p.add_argument("--csv", type=Path, help=f"24.csv (default: {DEFAULT_CSV})")
    p.add_argument("--start", type=int, default=900)
    p.add_argument("--end", type=int, default=1000, help="exclusive")
    p.add_argument("--b", type=int, default=5, help="states kept per layer (the paper's n_select_sample)")
    p.add_argument("--k", type=int, help="proposals asked per state (default: 8 for teammates, all 36 for the symbolic pair)")
    p.add_argument("--samples", type=int, help="value samples per candidate (default: 3 for teammates, 1 for the symbolic pair)")
    p.add_argument("--threshold", type=float, default=0.0, help="prune below this score (the paper: none)")
    p.add_argument("--logs", type=Path, help="symbolic pair: write each run's log folder here (teammates: always WS/logs)")
    p.add_argument("--step-timeout", type=float, default=300.0)
    return p.parse_args(argv)


def puzzles(args: argparse.Namespace) -> list[tuple[int, str]]:
    if args.csv is not None:
        rows = game24.load_puzzles(args.csv)
        return list(enumerate(rows))[args.start : args.end]
    if DEFAULT_CSV.exists():
        return list(enumerate(game24.load_puzzles(DEFAULT_CSV)))[args.start : args.end]
    if (args.start, args.end) != (900, 1000):
        sys.exit(f"{DEFAULT_CSV} is missing; the bundled copy only has rows 900-999")
    return list(zip(range(900, 1000), game24.load_puzzles(FALLBACK_CSV), strict=True))


def overrides(args: argparse.Namespace, symbolic: bool) -> SearchOverrides:
    return SearchOverrides(
        strategy="BFS", max_depth=3, branching_factor=args.b, pruning_threshold=args.threshold,
        num_candidates=args.k or (game24.MAX_NEXT_STEPS if symbolic else 8),
        generation_strategy="sequential_proposal", evaluation_strategy="independent_scoring",
        evaluation_samples=args.samples or (1 if symbolic else 3),
    )  # fmt: skip


def prepare_workspace(args: argparse.Namespace) -> tuple[Rtws, Path | None]:
    """The workspace to run in; with ``--provider`` a temp copy whose team puts the roles on it."""
    source = Rtws(args.workspace.resolve())
    if not args.provider:
        return source, None
    temp = Path(tempfile.mkdtemp(prefix="dominds-tot-bench-"))
    shutil.copytree(source.minds_dir, temp / ".minds", ignore=shutil.ignore_patterns("team.yaml"))
    role = {"provider": args.provider, **({"model": args.model} if args.model else {})}
    team = {"members": {member_id: dict(role) for member_id in ROLE_MEMBERS.values()}}
    (temp / ".minds" / "team.yaml").write_text(yaml.safe_dump(team, sort_keys=False))
    rtws = Rtws(temp)
    rtws.ensure_layout()
    return rtws, temp


async def run_symbolic(args: argparse.Namespace, items: list[tuple[int, str]]) -> list[dict[str, Any]]:
    backend = SymbolicGame24Backend()
    rows = []
    for index, puzzle in items:
        started = time.perf_counter()
        request = symbolic_request(TotRequest(puzzle, "math_reasoning", overrides(args, True)))
        outcome = await run_tot(request, backend, logs_root=args.logs)
        rows.append(row(index, puzzle, outcome, None, time.perf_counter() - started))
    return rows


async def run_teammates(args: argparse.Namespace, items: list[tuple[int, str]]) -> list[dict[str, Any]]:
    rtws, temp = prepare_workspace(args)
    engine = Engine(rtws)
    await engine.start()
    rows = []
    try:
        for index, puzzle in items:
            started = time.perf_counter()
            live = start_tot_run(engine, TotRequest(puzzle, "math_reasoning", overrides(args, False)), step_timeout=args.step_timeout)
            assert live.task is not None
            await live.task
            if live.outcome is None:
                print(f"{index}: the run failed: {live.failure}", file=sys.stderr)
                continue
            rows.append(row(index, puzzle, live.outcome, live.usage, time.perf_counter() - started))
    finally:
        await engine.close()
        if temp is not None:
            print(f"(temp workspace with the logs: {temp})")
    return rows


def row(index: int, puzzle: str, outcome: TotOutcome, usage: dict[str, Any] | None, seconds: float) -> dict[str, Any]:
    return {
        "index": index, "puzzle": puzzle, "ok": outcome.verified, "calls": outcome.llm_calls,
        "tokens_in": int(usage["inputTokens"]) if usage else 0, "tokens_out": int(usage["outputTokens"]) if usage else 0,
        "ms": seconds * 1000, "answer": outcome.solution["answer"] if outcome.solution else "",
    }  # fmt: skip


def report(args: argparse.Namespace, rows: list[dict[str, Any]], label: str) -> None:
    print(f"{'idx':>4}  {'puzzle':<12} {'ok':<3} {'calls':>5} {'tok_in':>8} {'tok_out':>8} {'ms':>8}  answer")
    for r in rows:
        print(f"{r['index']:>4}  {r['puzzle']:<12} {'yes' if r['ok'] else 'no':<3} {r['calls']:>5} {r['tokens_in']:>8} "
              f"{r['tokens_out']:>8} {r['ms']:>8.1f}  {r['answer']}")  # fmt: skip
    if not rows:
        return
    solved = sum(r["ok"] for r in rows)
    times = sorted(r["ms"] for r in rows)
    print()
    print(f"{label}: success {solved}/{len(rows)} = {100 * solved / len(rows):.1f}%")
    print(f"role calls per puzzle: mean {statistics.fmean(r['calls'] for r in rows):.1f}, total {sum(r['calls'] for r in rows)}")
    print(f"tokens per puzzle: in {statistics.fmean(r['tokens_in'] for r in rows):.0f}, out {statistics.fmean(r['tokens_out'] for r in rows):.0f} "
          f"(totals {sum(r['tokens_in'] for r in rows)} / {sum(r['tokens_out'] for r in rows)})")  # fmt: skip
    print(f"time per puzzle: mean {statistics.fmean(times):.1f} ms, median {statistics.median(times):.1f} ms, "
          f"max {times[-1]:.1f} ms, total {sum(times) / 1000:.2f} s")  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    items = puzzles(args)
    symbolic = args.workspace is None
    settings = overrides(args, symbolic)
    label = "symbolic pair (exact solver, NOT an LLM)" if symbolic else f"teammates of {args.workspace}" + (
        f" on {args.provider}/{args.model or 'default model'}" if args.provider else ""
    )
    print(f"Game of 24, puzzles {args.start}-{args.end - 1}, {label}")
    print(f"BFS depth 3, keep b={settings.branching_factor}, propose k={settings.num_candidates}, "
          f"{settings.evaluation_samples} value sample(s), threshold {settings.pruning_threshold}")  # fmt: skip
    rows = asyncio.run(run_symbolic(args, items) if symbolic else run_teammates(args, items))
    report(args, rows, label)


if __name__ == "__main__":
    main()
