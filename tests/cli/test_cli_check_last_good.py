"""`dominds check` with a broken team.yaml reports the team the daemon goes on with.

The bug: with a YAML error in team.yaml, `check` said "0 members, default responder fuxi" while `run`
silently went on with the last good team; now `check` names the last good version and its members."""

from __future__ import annotations

from pathlib import Path

from test_cli_kit import cli_env, dominds


def test_check_with_a_broken_team_shows_the_last_good_team_in_use(tmp_path: Path) -> None:
    env = {k: v for k, v in cli_env().items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    assert dominds(tmp_path, "init", "demo", env=env).returncode == 0
    ws = tmp_path / "demo"
    ran = dominds(ws, "run", "hello", timeout=120, env=env)  # a daemon's run keeps the last good copy
    assert (ws / ".dominds" / "last-good" / ".minds" / "team.yaml").is_file(), ran.stdout + ran.stderr
    (ws / ".minds" / "team.yaml").write_text("members:\n  lead: {name: Lead\n")
    checked = dominds(ws, "check", "--no-connect", env=env)
    assert checked.returncode == 1
    assert "team.yaml has errors: the last good version (saved " in checked.stdout
    assert "team: 3 member(s) (lead, researcher, coder); default responder: lead" in checked.stdout, checked.stdout
