"""Errors a new user meets: a missing or rejected API key, a failed generation. Each says what failed and the
one next step that helps, for the way the command ran (here, or on a daemon); `check` judges keys live."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from test_cli_kit import RESPONSES, Daemon, cli_env, dominds, write_workspace

ANTHROPIC_TEAM = """\
member_defaults: {provider: anthropic, model: claude-sonnet-4-6, diligence_push_max: 0}
default_responder: lead
members:
  lead: {name: Lead, gofor: [plans]}
  coder: {name: Coder, gofor: [codes]}
"""
LOOPBACK_ANTHROPIC = """\
providers:
  anthropic:  # on loopback, so that a request that got past the key check could never leave the machine
    name: Anthropic
    apiType: anthropic
    baseUrl: http://127.0.0.1:9
    apiKeyEnvVar: ANTHROPIC_API_KEY
    models:
      claude-sonnet-4-6: {context_length: 200000}
"""
KEYED_LLM = """\
providers:
  scripted:
    name: Scripted with a key
    apiType: scripted
    baseUrl: .minds/scripted
    apiKeyEnvVar: DEMO_TEST_KEY
    models:
      test: {context_length: 200000}
"""
REJECTED = {"agent": "lead", "message": "hello", "error": {"kind": "rejected", "status": 401, "message": "the key was refused"}}


def _no_key_env(**extra: str) -> dict[str, str]:
    env = cli_env(**extra)
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "DEMO_TEST_KEY"):
        env.pop(name, None)
    return {**env, **extra}


def _anthropic_workspace(tmp_path: Path) -> Path:
    ws = write_workspace(tmp_path / "ws")
    (ws / ".minds" / "team.yaml").write_text(ANTHROPIC_TEAM)
    (ws / ".minds" / "llm.yaml").write_text(LOOPBACK_ANTHROPIC)
    return ws


def _roots(ws: Path) -> list[str]:
    return sorted(p.name for p in (ws / ".dialogs" / "run").iterdir())


def test_run_without_the_key_of_its_provider_fails_before_creating_a_dialog(tmp_path: Path) -> None:
    """Bug: a missing key printed "interrupted: interrupted", pointed at `dominds serve` after a `dominds run`
    and suggested a resume that could not help."""
    ws = _anthropic_workspace(tmp_path)
    done = dominds(ws, "run", "hello", env=_no_key_env())
    assert done.returncode == 1, done.stdout
    assert done.stderr == (  # what failed, then the one step that helps (and the other way out)
        "dominds: @lead answers with provider 'anthropic', which needs an API key, and ANTHROPIC_API_KEY is not set "
        "in this shell: export ANTHROPIC_API_KEY=<your key> and run this again (or choose another provider in "
        ".minds/team.yaml; `dominds check` shows each member's)\n"
    ), done.stderr
    assert "serve" not in done.stderr and "resume" not in done.stderr and "interrupted" not in done.stdout + done.stderr
    assert _roots(ws) == [], "nothing was created"
    follow = dominds(ws, "new", "--follow", "hello", env=_no_key_env())
    assert follow.returncode == 1 and "export ANTHROPIC_API_KEY" in follow.stderr and _roots(ws) == []


def test_a_missing_key_on_the_daemon_names_the_daemons_shell_and_check_forgets_it_once_exported(tmp_path: Path) -> None:
    """Bugs: `dominds check` said "no problems" while the chosen provider had no key, and after one failed
    run kept saying the key was missing after it had been exported (a cached verdict)."""
    ws = _anthropic_workspace(tmp_path)
    check = dominds(ws, "check", "--no-connect", env=_no_key_env())
    assert check.returncode == 1, check.stdout
    assert "provider anthropic: error: ANTHROPIC_API_KEY is not set in this environment, and @lead, @coder" in check.stdout
    assert "fuxi" not in check.stdout and "pangu" not in check.stdout and "hidden" not in check.stdout

    with Daemon(ws, env=_no_key_env()) as daemon:
        run = dominds(ws, "run", "hello", env=_no_key_env(ANTHROPIC_API_KEY="sk-ant-set-here-only"))
        here_only = dominds(ws, "check", "--no-connect", env=_no_key_env(ANTHROPIC_API_KEY="sk-ant-set-here-only"))
        daemon.stop()
    assert here_only.returncode == 1, "the daemon's requests use the daemon's environment, which has no key"
    assert f"provider anthropic (daemon pid {daemon.pid}): error: provider rejected the request: provider 'anthropic' needs an API key" in (
        here_only.stdout
    ), here_only.stdout
    assert run.returncode == 1, run.stdout + run.stderr
    [root] = _roots(ws)
    assert f"✗ dialog {root} stopped: provider 'anthropic' needs an API key, and ANTHROPIC_API_KEY is not set" in run.stdout
    assert (
        f"  next: export ANTHROPIC_API_KEY=<your key> in the shell of `dominds serve`, restart it, then `dominds resume {root}`"
        in run.stdout
    )
    assert "interrupted: interrupted" not in run.stdout

    exported = dominds(ws, "check", "--no-connect", env=_no_key_env(ANTHROPIC_API_KEY="sk-ant-now-exported"))
    assert exported.returncode == 0 and exported.stdout.endswith("no problems\n"), exported.stdout
    unset_again = dominds(ws, "check", "--no-connect", env=_no_key_env())
    assert unset_again.returncode == 1 and unset_again.stdout.count("ANTHROPIC_API_KEY is not set") == 1


def test_a_rejected_key_stays_reported_until_the_key_changes(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    (ws / ".minds" / "llm.yaml").write_text(KEYED_LLM)
    script = ws / ".minds" / "scripted" / "test.yaml"
    script.write_text(yaml.safe_dump({"responses": [REJECTED, *RESPONSES]}, sort_keys=False))
    first = dominds(ws, "run", "hello", env=_no_key_env(DEMO_TEST_KEY="first-key"))
    assert first.returncode == 1
    [root] = _roots(ws)
    assert f"✗ dialog {root} stopped: provider rejected the request: the key was refused" in first.stdout
    assert f"  next: fix that, then `dominds resume {root} --follow`" in first.stdout, first.stdout

    same = dominds(ws, "check", "--no-connect", env=_no_key_env(DEMO_TEST_KEY="first-key"))
    assert same.returncode == 1 and "provider scripted: error: provider rejected the request: the key was refused" in same.stdout
    changed = dominds(ws, "check", "--no-connect", env=_no_key_env(DEMO_TEST_KEY="second-key"))
    assert changed.returncode == 0 and "refused" not in changed.stdout, changed.stdout
    unset = dominds(ws, "check", "--no-connect", env=_no_key_env())
    assert "DEMO_TEST_KEY is not set in this environment" in unset.stdout and "refused" not in unset.stdout

    script.write_text(yaml.safe_dump({"responses": RESPONSES}, sort_keys=False))  # the cause is fixed
    resumed = dominds(ws, "resume", root[:12], "--follow", env=_no_key_env(DEMO_TEST_KEY="second-key"))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "Hello there!" in resumed.stdout and f"✓ idle: the dialog has answered (dialog {root})" in resumed.stdout
    assert dominds(ws, "check", "--no-connect", env=_no_key_env(DEMO_TEST_KEY="first-key")).returncode == 0, (
        "the provider worked since: its rejection is resolved"
    )


def test_resume_without_a_daemon_is_queued_for_the_next_serve_and_refuses_a_dialog_that_is_not_interrupted(
    tmp_path: Path,
) -> None:
    ws = write_workspace(tmp_path / "ws")
    script = ws / ".minds" / "scripted" / "test.yaml"
    script.write_text(yaml.safe_dump({"responses": [REJECTED, *RESPONSES]}, sort_keys=False))
    dominds(ws, "run", "hello")
    [root] = _roots(ws)
    script.write_text(yaml.safe_dump({"responses": RESPONSES}, sort_keys=False))
    queued = dominds(ws, "resume", root, "--json")
    assert queued.returncode == 0 and json.loads(queued.stdout) == {"selfId": root, "rootId": root, "queued": True}
    with Daemon(ws) as daemon:
        shown = dominds(ws, "show", root, "--follow")
        assert shown.returncode == 0 and "Hello there!" in shown.stdout, shown.stdout
        again = dominds(ws, "resume", root)
        assert again.returncode == 1 and "idle, not interrupted; nothing to resume" in again.stderr
        daemon.stop()
