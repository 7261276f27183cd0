"""Long texts come from standard input: ``-`` in place of a message, problem or question.

Bug: `dominds tot` and `dominds debate` took their problem or question only as an argument, so a long
one (a page of requirements) could not come from a file, unlike `run`, `tell` and `answer`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from test_cli_kit import cli_env


def _dominds(cwd: Path, *args: str, stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dominds", *args], cwd=cwd, input=stdin, capture_output=True,
                          text=True, timeout=60, check=False, env=cli_env())


def test_tot_reads_its_problem_from_stdin(tmp_path: Path) -> None:
    problem = tmp_path / "problem.txt"
    problem.write_text("4 9 10 13\n")
    done = _dominds(tmp_path, "tot", "-", "--symbolic", "--json", stdin=problem.read_text())
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["solved"] and result["solution"]["answer"] == "(9 - 13) * (4 - 10) = 24"


def test_an_empty_stdin_is_refused_with_what_was_empty(tmp_path: Path) -> None:
    for args, what in ((("tot", "-", "--symbolic"), "problem"), (("debate", "-"), "question"),
                       (("plan-solve", "example", "data2ppt", "--question", "-"), "question")):
        done = _dominds(tmp_path, *args, stdin="  \n")
        assert done.returncode == 1, (args, done.stdout, done.stderr)
        assert f"the {what} is empty" in done.stderr, done.stderr
