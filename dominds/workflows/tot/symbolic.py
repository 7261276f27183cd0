"""A symbolic Game-of-24 role backend: exact Python answers to the seed's requests, no LLM anywhere.

This is a **baseline and a test fixture**, not a model. Its generator lists the valid next steps
of a state (what the ToT paper's "propose" prompt asks a model for); its evaluator labels each
state ``sure`` / ``likely`` / ``impossible`` with the exact solver (see ``game24.state_label``) and
scores it with the paper's label weights; its synthesizer replays the path into one expression and
verifies it with the exact checker. Figures from it say the search code is correct; they say
nothing about how well an LLM plays the game.

It answers through the same seed messages as a teammate would, so every request and reply is
schema-checked by the channel, and it counts the role calls it answers.
"""

from __future__ import annotations

import random
from dataclasses import replace
from fractions import Fraction
from typing import Any

from dominds.workflows.tot import game24
from dominds.workflows.tot.channel import RoleAnswer
from dominds.workflows.tot.orchestrator import TotRequest
from dominds.workflows.tot.protocol import Message, error_reply, reply_to
from dominds.workflows.tot.schemas import GENERATION_FAILED, INVALID_FORMAT
from dominds.workflows.tot.settings import SettingsError


class SymbolicGame24Backend:
    """Answers decompose/generate/evaluate/synthesize requests for Game-of-24 problems."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        """Seeds independent sampling (one random valid step per call), so runs repeat exactly."""
        self.calls = 0
        self._sample_counter = 0

    async def answer(self, request: Message, correction: str | None) -> RoleAnswer:
        self.calls += 1
        handler = {
            "decompose_task": self._decompose,
            "generate_thoughts": self._generate,
            "evaluate_thoughts": self._evaluate,
            "synthesize_solution": self._synthesize,
        }.get(request["type"])
        if handler is None:
            return RoleAnswer(error_reply(request, INVALID_FORMAT, f"no symbolic {request['to']} for {request['type']}", recoverable=False))
        return RoleAnswer(handler(request))

    def _puzzle(self, request: Message) -> tuple[int, ...] | None:
        return game24.parse_puzzle(str(request["payload"].get("problem") or request["payload"].get("context", {}).get("problem", "")))

    def _decompose(self, request: Message) -> Message:
        numbers = self._puzzle(request)
        if numbers is None:
            return error_reply(request, INVALID_FORMAT, "the symbolic pair only solves Game-of-24 problems (four numbers 1-13)", recoverable=False)
        return reply_to(
            request,
            {
                "thought_granularity": "equation",
                "intermediate_steps": [
                    "Step 1: combine two numbers with + - * /",
                    "Step 2: combine the result with a remaining number",
                    "Step 3: combine the last two numbers into 24",
                ],
                "depth_estimate": 3,
                "constraints": ["use every number exactly once", "only + - * / and parentheses"],
                "success_criteria": "the final expression equals 24",
            },
        )

    def _generate(self, request: Message) -> Message:
        payload = request["payload"]
        parent = payload["parent_node"]
        state = _state_of(parent)
        if state is None:
            return error_reply(request, GENERATION_FAILED, f"cannot read a Game-24 state from {parent['content']!r}")
        steps = game24.next_steps(state)
        wanted = int(payload["num_candidates"])
        if payload["generation_strategy"] == "independent_sampling":
            # one independent sample per call, as from a model at temperature > 0; seeded, so repeatable
            self._sample_counter += 1
            rng = random.Random(f"{self.seed}:{parent['id']}:{self._sample_counter}")
            steps = [rng.choice(steps)] if steps else []
        candidates = [
            {
                "temp_id": f"cand_{i}",
                "content": step.content,
                "action_type": step.action_type,
                "metadata": {"left": [game24.fmt(v) for v in step.remaining], "terminal": len(step.remaining) == 1},
            }
            for i, step in enumerate(steps[:wanted], start=1)
        ]
        return reply_to(request, {"candidates": candidates})

    def _evaluate(self, request: Message) -> Message:
        evaluations: list[dict[str, Any]] = []
        for node in request["payload"]["candidates"]:
            state = _state_of(node)
            label = game24.state_label(state) if state else "impossible"
            left = game24.state_text(state) if state else "?"
            evaluations.append(
                {
                    "node_id": node["id"],
                    "score": game24.score_from_labels([label]),
                    "confidence": 1.0,
                    "reasoning": f"{left}: {label} (exact solver)",
                    "label": label,
                    "dimension_scores": {
                        "correctness": 10.0 if state else 0.0,
                        "progress": round(10 * (game24.PUZZLE_SIZE - len(state or ())) / (game24.PUZZLE_SIZE - 1), 2),
                        "feasibility": game24.score_from_labels([label]),
                    },
                }
            )
        ranking = [e["node_id"] for e in sorted(evaluations, key=lambda e: -e["score"])]
        pruning = [e["node_id"] for e in evaluations if e["label"] == "impossible"]
        return reply_to(request, {"evaluations": evaluations, "ranking": ranking, "pruning_suggestions": pruning})

    def _synthesize(self, request: Message) -> Message:
        numbers = self._puzzle(request)
        path = request["payload"]["best_path"]
        steps = [game24.parse_step(node["content"]) for node in path[1:]]
        expression = None
        if numbers is not None and all(s is not None for s in steps):
            expression = game24.expression_from_steps(numbers, [s for s in steps if s is not None])
        answer = f"{expression} = {game24.TARGET}" if expression else (path[-1]["content"] if path else "")
        check = game24.check_answer(answer, numbers) if numbers and expression else None
        errors = list(check.errors) if check else ["the best path does not reach a single number"]
        trace = [f"Step {i}: {node['content']}" for i, node in enumerate(path[1:], start=1)]
        valid = bool(check and check.is_valid)
        return reply_to(
            request,
            {
                "answer": answer,
                "reasoning_trace": trace,
                "confidence": 1.0 if valid else 0.0,
                "verification": {"is_valid": valid, "validation_errors": [] if valid else errors},
                "alternative_solutions": [],
            },
        )


def _state_of(node: dict[str, Any]) -> tuple[Fraction, ...] | None:
    """The numbers left at ``node``: the puzzle itself at the root, else the step's ``(left: ...)``."""
    if node.get("parent_id") is None:
        numbers = game24.parse_puzzle(str(node["content"]))
        return tuple(Fraction(n) for n in numbers) if numbers else None
    step = game24.parse_step(str(node["content"]))
    return step.remaining if step else None


def symbolic_request(request: TotRequest) -> TotRequest:
    """``request`` made ready for the symbolic pair: a Game-24 problem, and every next step proposed.

    The pair's generator enumerates; capping it at the LLM default of 8 proposals would hide
    solutions behind the enumeration order, so unless the user chose ``k`` it lists all of them.
    """
    if game24.parse_puzzle(request.problem) is None:
        raise SettingsError("the symbolic pair only solves Game-of-24 problems (four numbers from 1 to 13)")
    if request.overrides.num_candidates is not None:
        return request
    return replace(request, overrides=replace(request.overrides, num_candidates=game24.MAX_NEXT_STEPS))
