"""`dominds init` and `dominds check`, run as real subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from dominds.cli.cmd_init import template_dir

REPO_ROOT = Path(__file__).resolve().parents[2]


def dominds(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # The conftest guard has removed API keys from os.environ, which the child inherits.
    return subprocess.run(
        [sys.executable, "-m", "dominds", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
        check=False,
    )


def test_template_dir_is_the_repo_template() -> None:
    assert template_dir() == REPO_ROOT / "rtws-template"


def test_init_then_check_passes(tmp_path: Path) -> None:
    init = dominds("init", "ws", cwd=tmp_path)
    assert init.returncode == 0, init.stderr
    ws = tmp_path / "ws"
    for rel in [
        ".minds/team.yaml",
        ".minds/llm.yaml",
        ".minds/scripted/demo.yaml",
        ".minds/team/lead/persona.md",
    ]:
        assert (ws / rel).is_file() and f"+ {rel}" in init.stdout
    for rel in ["tasks/demo.tsk/goals.md", "tasks/demo.tsk/constraints.md", "tasks/demo.tsk/progress.md"]:
        assert (ws / rel).read_text() == (REPO_ROOT / "rtws-template" / rel).read_text()
    assert all((ws / ".dialogs" / status).is_dir() for status in ("run", "done", "archive"))
    assert init.stdout.endswith(f"Next: dominds -C {ws} check && dominds -C {ws} serve\n"), init.stdout

    check = dominds("check", cwd=ws)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "no problems" in check.stdout
    assert "default responder: lead" in check.stdout and "lead -> scripted/demo" in check.stdout

    as_json = dominds("-C", str(ws), "check", "--json", cwd=tmp_path)
    assert as_json.returncode == 0 and json.loads(as_json.stdout) == []


def test_init_in_current_directory_keeps_existing_files(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("mine\n")
    init = dominds("init", cwd=tmp_path)
    assert init.returncode == 0, init.stderr
    assert (tmp_path / ".gitignore").read_text() == "mine\n"
    assert "= .gitignore (exists, kept)" in init.stdout
    assert (tmp_path / ".minds" / "team.yaml").is_file()
    assert "Next: dominds check" in init.stdout  # already in the workspace: no `cd`


def test_init_refuses_an_existing_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".dialogs").mkdir(parents=True)
    refused = dominds("init", str(ws), cwd=tmp_path)
    assert refused.returncode == 1
    assert refused.stdout == ""
    assert refused.stderr.count("\n") == 1 and "already a Dominds workspace" in refused.stderr
    assert sorted(p.name for p in ws.iterdir()) == [".dialogs"]  # nothing was added


def test_check_reports_problems_with_lines_and_exits_1(tmp_path: Path) -> None:
    assert dominds("init", "ws", cwd=tmp_path).returncode == 0
    ws = tmp_path / "ws"
    (ws / ".minds" / "team.yaml").write_text(
        "default_responder: nobody\n"  # 1
        "members:\n"  # 2
        "  lead:\n"  # 3
        "    provider: nowhere\n"  # 4
        "  helper:\n"  # 5
        "    model: gpt-5\n"  # 6: exists under openai, but no key is set so `scripted` is chosen
        "  odd: 3\n"  # 7
    )
    check = dominds("check", cwd=ws)
    assert check.returncode == 1
    lines = check.stdout.splitlines()
    assert lines[0].startswith(".minds/team.yaml:1: error: `default_responder` 'nobody' is not a member")
    assert lines[1].startswith(".minds/team.yaml:4: error: member 'lead': unknown provider 'nowhere'")
    assert lines[2].startswith(".minds/team.yaml:6: error: member 'helper': provider 'scripted'")
    assert lines[3].startswith(".minds/team.yaml:7: error: member 'odd' must be a mapping of settings")
    assert len([line for line in lines if ": error: " in line]) == 4  # lead's provider is reported once
    assert "4 error(s), 0 warning(s)" in check.stdout

    as_json = dominds("check", "--json", cwd=ws)
    problems = json.loads(as_json.stdout)
    assert as_json.returncode == 1
    assert [(p["source"], p["line"], p["severity"]) for p in problems] == [
        (".minds/team.yaml", n, "error") for n in (1, 4, 6, 7)
    ]
    assert {p["kind"] for p in problems} == {"team_workspace_config_error"}
    assert len({p["id"] for p in problems}) == 4


def test_check_reports_llm_yaml_problems(tmp_path: Path) -> None:
    assert dominds("init", "ws", cwd=tmp_path).returncode == 0
    ws = tmp_path / "ws"
    (ws / ".minds" / "llm.yaml").write_text("providers:\n  broken: {apiType: scripted\n")
    check = dominds("check", cwd=ws)
    assert check.returncode == 1
    assert check.stdout.startswith(".minds/llm.yaml:3: error: YAML syntax error")


def test_check_outside_a_workspace_says_so(tmp_path: Path) -> None:
    check = dominds("check", cwd=tmp_path)
    assert check.returncode == 1
    assert "no Dominds workspace" in check.stderr and "dominds init" in check.stderr
