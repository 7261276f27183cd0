"""Game of 24, exactly: puzzles, step text, an exact solver, the answer checker, the ToT value labels.

Arithmetic is rational (``fractions.Fraction``), never float, so ``8 / (3 - 8 / 3)`` is exactly 24.
A *state* is the multiset of numbers still to combine; a *step* combines two of them with one of
``+ - * /`` and is written the way the ToT paper's prompts write it: ``13 - 9 = 4 (left: 4 4 10)``.
"""

from __future__ import annotations

import ast
import csv
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Literal

TARGET = 24
PUZZLE_SIZE = 4
MAX_NEXT_STEPS = 36
"""Most distinct next steps a 4-number state can have: 6 pairs x 6 ordered operations."""
TEST_SPLIT = range(900, 1000)
"""The ToT paper's test puzzles: 0-based row indices 900-999 of 24.csv (Rank 901-1000)."""

ValueLabel = Literal["sure", "likely", "impossible"]
LABEL_WEIGHTS: dict[ValueLabel, float] = {"impossible": 0.001, "likely": 1.0, "sure": 20.0}
"""The paper's value weights (tree-of-thought-llm ``value_outputs_unwrap``), summed over samples."""

State = tuple[Fraction, ...]
_OP_NAMES = {"+": "addition", "-": "subtraction", "*": "multiplication", "/": "division"}


def parse_puzzle(problem: str) -> tuple[int, ...] | None:
    """The four numbers of a Game-of-24 problem (``"4 9 10 13"``, ``"用4、9、10、13得到24"``), else None."""
    numbers = [int(n) for n in re.findall(r"\d+", problem)]
    if len(numbers) == PUZZLE_SIZE + 1 and numbers[-1] == TARGET:
        numbers = numbers[:-1]  # "... make 24": the target is not a puzzle number
    if len(numbers) != PUZZLE_SIZE or not all(1 <= n <= 13 for n in numbers):
        return None
    return tuple(sorted(numbers))


def fmt(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def _state(values: Sequence[Fraction]) -> State:
    return tuple(sorted(values))


def state_text(values: Sequence[Fraction]) -> str:
    return " ".join(fmt(v) for v in _state(values))


@dataclass(frozen=True)
class Step:
    """One move: ``left op right = result``, and the numbers left afterwards."""

    left: Fraction
    op: str
    right: Fraction
    result: Fraction
    remaining: State

    @property
    def content(self) -> str:
        return f"{fmt(self.left)} {self.op} {fmt(self.right)} = {fmt(self.result)} (left: {state_text(self.remaining)})"

    @property
    def action_type(self) -> str:
        return _OP_NAMES[self.op]


_STEP_RE = re.compile(
    r"^\s*(-?\d+(?:/\d+)?)\s*([-+*/×÷x])\s*(-?\d+(?:/\d+)?)\s*=\s*(-?\d+(?:/\d+)?)\s*\(\s*left\s*:\s*([^)]*)\)\s*$",
    re.IGNORECASE,
)
_ASCII_OPS = {"×": "*", "x": "*", "X": "*", "÷": "/"}


def parse_step(content: str) -> Step | None:
    """A step written as ``a op b = c (left: ...)``; None when the text is not one."""
    match = _STEP_RE.match(content)
    if match is None:
        return None
    try:
        left, right, result = (Fraction(match.group(i)) for i in (1, 3, 4))
        remaining = _state([Fraction(tok) for tok in match.group(5).replace(",", " ").split()])
    except (ValueError, ZeroDivisionError):
        return None
    op = _ASCII_OPS.get(match.group(2), match.group(2))
    return Step(left, op, right, result, remaining) if remaining else None


def _combinations(a: Fraction, b: Fraction) -> list[tuple[bool, str, Fraction]]:
    """Every ``x op y = z`` over the pair as (swapped, op, z): ``swapped`` means ``b op a``.

    Commutative operations are written larger-first, as the paper's prompts do.
    """
    out = [(b > a, "+", a + b), (b > a, "*", a * b), (False, "-", a - b), (True, "-", b - a)]
    if b != 0:
        out.append((False, "/", a / b))
    if a != 0:
        out.append((True, "/", b / a))
    return out


def next_steps(values: Sequence[Fraction]) -> list[Step]:
    """Every distinct step from ``values``, in a fixed order (pairs left to right, then + * - /)."""
    state = _state(values)
    steps: list[Step] = []
    seen: set[str] = set()
    for i in range(len(state)):
        for j in range(i + 1, len(state)):
            rest = state[:i] + state[i + 1 : j] + state[j + 1 :]
            for swapped, op, result in _combinations(state[i], state[j]):
                left, right = (state[j], state[i]) if swapped else (state[i], state[j])
                step = Step(left, op, right, result, _state((*rest, result)))
                if step.content not in seen:
                    seen.add(step.content)
                    steps.append(step)
    return steps


@lru_cache(maxsize=200_000)
def _reachable(state: State, integers_only: bool) -> bool:
    if len(state) == 1:
        return state[0] == TARGET
    for i in range(len(state)):
        for j in range(i + 1, len(state)):
            rest = state[:i] + state[i + 1 : j] + state[j + 1 :]
            for _, _, result in _combinations(state[i], state[j]):
                if integers_only and result.denominator != 1:
                    continue
                if _reachable(_state((*rest, result)), integers_only):
                    return True
    return False


def reachable(values: Sequence[Fraction], *, integers_only: bool = False) -> bool:
    """Whether ``values`` can still make 24 (exact search; memoised per state)."""
    return bool(values) and _reachable(_state(values), integers_only)


def state_label(values: Sequence[Fraction]) -> ValueLabel:
    """The symbolic evaluator's verdict on a state, from the exact solver.

    ``sure``: 24 is reachable with whole-number intermediates (what a careful person confirms);
    ``likely``: reachable, but only through a fraction (e.g. ``1 5 5 5``); ``impossible``: not reachable.
    """
    if reachable(values, integers_only=True):
        return "sure"
    return "likely" if reachable(values) else "impossible"


def score_from_labels(labels: Sequence[ValueLabel]) -> float:
    """The paper's value (mean label weight) on the protocol's 0-10 scale, log-scaled.

    ``sure`` = 10, ``likely`` ~ 6.98, ``impossible`` = 0. The map is monotone, so ranking by score is
    ranking by the paper's summed value; the log keeps ``likely`` above the default pruning threshold
    (5.0) where a linear map would put it at 0.5.
    """
    if not labels:
        return 0.0
    mean = sum(LABEL_WEIGHTS[label] for label in labels) / len(labels)
    low, high = LABEL_WEIGHTS["impossible"], LABEL_WEIGHTS["sure"]
    return round(10 * math.log(mean / low) / math.log(high / low), 2)


def solve(numbers: Sequence[int | Fraction]) -> str | None:
    """One expression over ``numbers`` that equals 24, or None."""
    items = [(Fraction(n), fmt(Fraction(n))) for n in numbers]

    def search(items: list[tuple[Fraction, str]]) -> str | None:
        if len(items) == 1:
            return items[0][1] if items[0][0] == TARGET else None
        if not reachable([v for v, _ in items]):
            return None
        for i in range(len(items)):
            for j in range(i + 1, len(items)):
                rest = items[:i] + items[i + 1 : j] + items[j + 1 :]
                (a, ea), (b, eb) = items[i], items[j]
                for swapped, op, result in _combinations(a, b):
                    ex, ey = (eb, ea) if swapped else (ea, eb)
                    found = search([*rest, (result, f"({ex} {op} {ey})")])
                    if found:
                        return found
        return None

    found = search(items)
    return _strip_outer(found) if found else None


def _strip_outer(expr: str) -> str:
    return expr[1:-1] if expr.startswith("(") and expr.endswith(")") else expr


def expression_from_steps(numbers: Sequence[int], steps: Sequence[Step]) -> str | None:
    """Replay ``steps`` on the puzzle and write the single expression they build, or None if they don't apply."""
    pool: list[tuple[Fraction, str]] = [(Fraction(n), str(n)) for n in numbers]
    for step in steps:
        taken: list[str] = []
        for operand in (step.left, step.right):
            index = next((k for k, (v, _) in enumerate(pool) if v == operand), None)
            if index is None:
                return None
            taken.append(pool.pop(index)[1])
        try:
            value = _apply(step.left, step.op, step.right)
        except ZeroDivisionError:
            return None
        if value != step.result:
            return None
        pool.append((value, f"({taken[0]} {step.op} {taken[1]})"))
    return _strip_outer(pool[0][1]) if len(pool) == 1 else None


def _apply(a: Fraction, op: str, b: Fraction) -> Fraction:
    return {"+": a + b, "-": a - b, "*": a * b}[op] if op != "/" else a / b


@dataclass(frozen=True)
class CheckResult:
    is_valid: bool
    errors: tuple[str, ...] = ()


def check_answer(answer: str, numbers: Sequence[int]) -> CheckResult:
    """Whether ``answer`` uses exactly the puzzle's numbers, each once, with + - * / and equals 24."""
    text = re.sub(r"^\s*answer\s*:", "", answer.strip(), flags=re.IGNORECASE)
    for symbol, ascii_op in (("×", "*"), ("÷", "/"), ("−", "-")):
        text = text.replace(symbol, ascii_op)
    left, _, right = text.partition("=")
    if right.strip() and right.strip() != str(TARGET):
        return CheckResult(False, (f"the answer claims = {right.strip()}, the target is {TARGET}",))
    try:
        tree = ast.parse(left.strip(), mode="eval")
        used: list[int] = []
        value = _evaluate(tree.body, used)
    except (SyntaxError, ValueError) as exc:
        return CheckResult(False, (f"not an arithmetic expression over the numbers: {exc}",))
    except ZeroDivisionError:
        return CheckResult(False, ("the expression divides by zero",))
    errors = []
    if sorted(used) != sorted(numbers):
        errors.append(f"uses the numbers {sorted(used)}, the puzzle has {sorted(numbers)} (each exactly once)")
    if value != TARGET:
        errors.append(f"evaluates to {fmt(value)}, not {TARGET}")
    return CheckResult(not errors, tuple(errors))


def _evaluate(node: ast.expr, used: list[int]) -> Fraction:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        used.append(node.value)
        return Fraction(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in (ast.Add, ast.Sub, ast.Mult, ast.Div):
        a, b = _evaluate(node.left, used), _evaluate(node.right, used)
        op = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}[type(node.op)]
        return _apply(a, op, b)
    raise ValueError(f"{ast.unparse(node)!r} is not allowed (only whole numbers and + - * /)")


def load_puzzles(csv_path: Path) -> list[str]:
    """The ``Puzzles`` column of 24.csv, in file order (row index = the paper's task index)."""
    with csv_path.open(encoding="utf-8", newline="") as handle:
        return [row["Puzzles"] for row in csv.DictReader(handle)]
