"""A broken ``team.yaml`` while its last good version is in use, through `run`, `status` and `check`.

Bugs (issue 36, item 11): `run` went on with the last good team and `status` listed the dialogs without
a word that the team on disk was not the one in use; `check` counted one YAML error as two (the error and
the note that the last good version is in use) and its YAML error said "the whole file is ignored" next
to "the last good version stays in use". Now `run` and `status` warn on stderr, with a daemon or without,
and one YAML error is one error.
"""

from __future__ import annotations

import json
from pathlib import Path

from test_cli_kit import Daemon, dominds, write_workspace

NOTICE = "warning: .minds/team.yaml: team.yaml has errors: the last good version (saved "


def _break_team(ws: Path) -> None:
    team = ws / ".minds" / "team.yaml"
    team.write_text(team.read_text().replace("members:\n", "members:\n  oops: [unclosed\n", 1))


def test_run_status_and_check_say_the_last_good_team_is_in_use(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    first = dominds(ws, "run", "--taskdoc", "tasks/t.tsk", "hello")
    assert first.returncode == 0 and "warning" not in first.stderr, first.stderr  # good: the copy is kept
    quiet = dominds(ws, "status")
    assert quiet.returncode == 0 and "warning" not in quiet.stderr, "nothing to say while the files are good"
    _break_team(ws)

    run = dominds(ws, "run", "--taskdoc", "tasks/t.tsk", "hello")
    assert run.returncode == 0 and "Hello there!" in run.stdout, run.stdout + run.stderr  # the last good team answers
    assert NOTICE in run.stderr and "stays in use until they are fixed (`dominds check` lists the errors)" in run.stderr
    assert run.stderr.count(NOTICE) == 1

    status = dominds(ws, "status")
    assert status.returncode == 0 and status.stderr.count(NOTICE) == 1, status.stderr
    as_json = dominds(ws, "status", "--json")
    assert NOTICE in as_json.stderr and json.loads(as_json.stdout)["roots"], "stdout stays one JSON document"

    check = dominds(ws, "check", "--no-connect")
    assert check.returncode == 1
    assert "1 error(s), 0 warning(s)" in check.stdout, "one YAML error is one error: " + check.stdout
    assert "last good version" in check.stdout and "whole file is ignored" not in check.stdout, check.stdout

    with Daemon(ws) as daemon:  # the daemon's view, asked over its API
        status = dominds(ws, "status")
        assert status.stderr.count(NOTICE) == 1, status.stderr
        run = dominds(ws, "run", "--taskdoc", "tasks/t.tsk", "hello")
        assert run.stderr.count(NOTICE) == 1 and "Hello there!" in run.stdout, run.stdout + run.stderr
        assert "on the daemon" in run.stdout
        (ws / ".minds" / "team.yaml").write_text((ws / ".minds" / "team.yaml").read_text().replace("  oops: [unclosed\n", ""))
        fixed = dominds(ws, "status")
        assert "warning" not in fixed.stderr, "the fixed file is read again (the daemon reloads at once)"
        daemon.stop()
    fixed = dominds(ws, "status")
    assert "warning" not in fixed.stderr, fixed.stderr
