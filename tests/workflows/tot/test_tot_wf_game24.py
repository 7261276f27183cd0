"""Game of 24 done exactly: the checker, steps, the solver, the value labels, and the symbolic pair
solving every one of the paper's 100 test puzzles through the whole workflow."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
from tot_wf_kit import LOCAL_TEST_CSV, SHARED_CSV, test_puzzles

from dominds.workflows.tot import game24
from dominds.workflows.tot.orchestrator import TotRequest, run_tot
from dominds.workflows.tot.symbolic import SymbolicGame24Backend, symbolic_request

LABELS: tuple[game24.ValueLabel, ...] = ("sure", "likely", "impossible")


def state(*numbers: int) -> tuple[Fraction, ...]:
    return tuple(Fraction(n) for n in numbers)


@pytest.mark.parametrize(
    ("answer", "valid"),
    [
        ("(10 - (13 - 9)) × 4 = 24", True),  # the seed's example, with its × sign
        ("Answer: (10 - (13 - 9)) * 4", True),  # the paper's answer line
        ("8 / (3 - 8 / 3)", False),  # wrong numbers for this puzzle (checked below for 3 3 8 8)
        ("(10 - 13 - 9) * 4", False),  # = -48
        ("4 * 6", False),  # not the puzzle's numbers
        ("(10 - (13 - 9)) * 4 * 1", False),  # an extra number
        ("(10 - (13 - 9)) * 4 = 25", False),  # claims another target
        ("(10 - (13 - 9)) ** 4", False),  # not an allowed operator
        ("-(4 - 10) * (13 - 9)", False),  # unary minus is not an operation of the game
        ("(10 - (13 - 9)) * 4.0", False),  # numbers are whole
        ("import os", False),
    ],
)
def test_the_checker_wants_the_same_multiset_and_exactly_24(answer: str, valid: bool) -> None:
    result = game24.check_answer(answer, [4, 9, 10, 13])
    assert result.is_valid is valid and bool(result.errors) is not valid


def test_the_checker_uses_rational_arithmetic() -> None:
    assert game24.check_answer("8 / (3 - 8 / 3)", [3, 3, 8, 8]).is_valid  # 8 / (1/3) = 24 exactly
    assert game24.check_answer("4 / (1 - 5 / 6)", [1, 4, 5, 6]).is_valid
    result = game24.check_answer("(1 + 2) / 0 + 24 - 4", [0, 1, 2, 4])
    assert not result.is_valid and "divides by zero" in result.errors[0]


def test_puzzles_are_read_from_problem_text() -> None:
    assert game24.parse_puzzle("用4、9、10、13得到24") == (4, 9, 10, 13)
    assert game24.parse_puzzle("Use 13 9 10 4 to make 24") == (4, 9, 10, 13)
    assert game24.parse_puzzle("4 9 10") is None and game24.parse_puzzle("4 9 10 14") is None


def test_steps_round_trip_and_enumerate_every_distinct_move() -> None:
    step = game24.parse_step("13 - 9 = 4 (left: 4 4 10)")
    assert step is not None and step.remaining == state(4, 4, 10) and step.content == "13 - 9 = 4 (left: 4 4 10)"
    assert game24.parse_step("8 ÷ 1/3 = 24 (left: 24)") == game24.Step(Fraction(8), "/", Fraction(1, 3), Fraction(24), (Fraction(24),))
    assert game24.parse_step("I would subtract 9 from 13") is None
    steps = game24.next_steps([Fraction(n) for n in (4, 9, 10, 13)])
    assert len(steps) == game24.MAX_NEXT_STEPS == len({s.content for s in steps})
    assert all(game24.parse_step(s.content) == s for s in steps)
    assert len(game24.next_steps([Fraction(n) for n in (5, 5, 5, 5)])) == 4, "5+5, 5*5, 5-5, 5/5 once each"


def test_state_labels_come_from_the_exact_solver() -> None:
    assert game24.state_label(state(4, 4, 10)) == "sure"
    assert game24.state_label(state(1, 5, 5, 5)) == "likely", "solvable only through 1/5"
    assert game24.state_label(state(1, 1, 1)) == "impossible"
    assert game24.state_label(state(24)) == "sure" and game24.state_label(state(23)) == "impossible"


def test_scores_rank_like_the_papers_summed_label_values() -> None:
    combos = list(itertools.combinations_with_replacement(LABELS, 3))
    by_value = sorted(combos, key=lambda c: sum(game24.LABEL_WEIGHTS[label] for label in c))
    by_score = sorted(combos, key=lambda c: game24.score_from_labels(list(c)))
    assert by_value == by_score
    assert (game24.score_from_labels(["sure"]), game24.score_from_labels(["impossible"])) == (10.0, 0.0)
    assert 5.0 < game24.score_from_labels(["likely"]) < 7.5, "likely survives the default threshold"


def test_the_solver_solves_the_test_split_and_its_answers_pass_the_checker() -> None:
    puzzles = test_puzzles()
    assert len(puzzles) == 100 and (puzzles[0], puzzles[-1]) == ("4 5 6 10", "4 9 10 13")
    for puzzle in puzzles:
        numbers = game24.parse_puzzle(puzzle)
        assert numbers is not None
        answer = game24.solve(numbers)
        assert answer is not None and game24.check_answer(answer, numbers).is_valid, puzzle
        changed = [numbers[0] + 1, *numbers[1:]]
        assert not game24.check_answer(answer, changed).is_valid


def test_the_local_copy_of_the_test_split_matches_the_shared_file() -> None:
    if not SHARED_CSV.exists():
        pytest.skip("../shared/data/game24/24.csv is not on this checkout")
    assert game24.load_puzzles(LOCAL_TEST_CSV) == game24.load_puzzles(SHARED_CSV)[900:1000]


async def test_the_symbolic_pair_solves_all_100_test_puzzles() -> None:
    backend = SymbolicGame24Backend()
    failures = []
    for puzzle in test_puzzles():
        outcome = await run_tot(symbolic_request(TotRequest(puzzle)), backend, logs_root=None)
        if not (outcome.status == "completed" and outcome.verified and outcome.search and outcome.search.solved):
            failures.append(puzzle)
    assert failures == []
