"""A workflow's own Taskdoc is no choice for a normal dialog.

The bug: after any workflow run, `dominds run` without `--taskdoc` attached the new dialog to the
workflow's internal Taskdoc ("the Taskdoc of the newest dialog": `tasks/tot/<id>.tsk`,
`tasks/plan-solve.tsk`), while the panel's New-dialog form defaulted to the first Taskdoc of its list,
and that list (`GET /api/taskdocs`) offered the workflow-internal Taskdocs for normal dialogs.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from test_cli_kit import Daemon, cli_env, dominds


def test_after_a_workflow_run_new_dialogs_default_to_the_users_taskdoc(tmp_path: Path) -> None:
    env = {k: v for k, v in cli_env().items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    made = dominds(tmp_path, "init", "demo", env=env)
    assert made.returncode == 0, made.stderr
    ws = tmp_path / "demo"
    tot = dominds(ws, "tot", "4 9 10 13", "--json", timeout=120, env=env)
    assert tot.returncode == 0 and json.loads(tot.stdout)["solved"], tot.stdout[-2000:] + tot.stderr[-2000:]
    run = dominds(ws, "run", "hello", env=env)
    assert run.stdout.startswith("(Taskdoc tasks/demo.tsk: the workspace's only Taskdoc; --taskdoc chooses another)"), run.stdout
    internal = [p.parent.relative_to(ws).as_posix() for p in (ws / "tasks").rglob(".workflow")]
    assert len(internal) == 1 and internal[0].startswith("tasks/tot/"), "the run marked its own Taskdoc"
    with Daemon(ws, env=env) as daemon:
        request = urllib.request.Request(daemon.http + "/api/taskdocs", headers=daemon.headers())
        with urllib.request.urlopen(request, timeout=30) as response:
            assert json.loads(response.read())["taskdocs"] == ["tasks/demo.tsk"]
        daemon.stop()
