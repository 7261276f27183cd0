"""`dominds serve --demo`: one persistent demo workspace, offline whatever API keys are exported."""

from __future__ import annotations

import hashlib
import json
import shlex
import time
from pathlib import Path

from test_cli_kit import Daemon, cli_env, dominds

FAKE_KEYS = {"ANTHROPIC_API_KEY": "sk-ant-not-a-real-key", "OPENAI_API_KEY": "sk-not-a-real-key"}


def _env(tmp_path: Path, *, xdg: bool = True) -> dict[str, str]:
    env = cli_env(HOME=str(tmp_path / "home"), **FAKE_KEYS)
    env.pop("XDG_DATA_HOME", None)
    if xdg:
        env["XDG_DATA_HOME"] = str(tmp_path / "data")
    return env


def _elsewhere(tmp_path: Path) -> Path:
    here = tmp_path / "elsewhere"
    here.mkdir(exist_ok=True)
    return here


def _generations(ws: Path) -> list[dict[str, object]]:
    records = []
    for course in (ws / ".dialogs").rglob("course-*.jsonl"):
        for line in course.read_text().splitlines():
            record = json.loads(line)
            if record.get("type") == "gen_finish_record":
                records.append(record)
    return records


def test_the_demo_stays_on_the_scripted_provider_with_api_keys_exported(tmp_path: Path) -> None:
    """Bug: with OPENAI_API_KEY/ANTHROPIC_API_KEY exported, the "offline" demo switched members to real
    providers (here DOMINDS_FORBID_REAL_LLM would have failed every generation instead)."""
    env = _env(tmp_path)
    demo = tmp_path / "data" / "dominds" / "demo"
    with Daemon(_elsewhere(tmp_path), "--demo", env=env) as daemon:
        assert f"Demo workspace: {demo} (created from the template)\n" in daemon.lines
        assert any("whatever API keys are set" in line for line in daemon.lines)
        run = dominds(demo, "run", "--taskdoc", "tasks/demo.tsk", "Research the demo task", env=env)
        assert run.returncode == 0, run.stdout + run.stderr
        assert "Thanks, @researcher." in run.stdout
        daemon.stop()
    generations = _generations(demo)
    assert len(generations) == 3 and {g["provider"] for g in generations} == {"scripted"}, generations
    assert all(g["status"] == "ok" for g in generations)
    check = dominds(demo, "check", "--no-connect", env=env)
    assert "lead -> scripted/demo" in check.stdout and "coder -> scripted/demo" in check.stdout, check.stdout


def test_the_demo_workspace_is_kept_between_two_serve_runs(tmp_path: Path) -> None:
    """Bug: every `serve --demo` made a new temp `dominds-demo-XXXX` folder, so a restart showed an empty
    demo, and `dominds status` in the same shell said "no Dominds workspace" with no hint where it was."""
    env = _env(tmp_path, xdg=False)  # no XDG_DATA_HOME: ~/.local/share/dominds/demo
    demo = tmp_path / "home" / ".local" / "share" / "dominds" / "demo"
    with Daemon(_elsewhere(tmp_path), "--demo", env=env) as first:
        hint = f"  from another shell: dominds -C {shlex.quote(str(demo))} status\n"
        assert hint in first.lines, first.lines
        new = dominds(demo, "new", "--taskdoc", "tasks/demo.tsk", "Ask me a question", "--json", env=env)
        assert new.returncode == 0, new.stderr
        root_id = json.loads(new.stdout)["rootId"]
        first.stop()
    with Daemon(_elsewhere(tmp_path), "--demo", env=env) as second:
        assert f"Demo workspace: {demo} (kept from earlier runs: 1 dialog tree)\n" in second.lines
        status = json.loads(dominds(demo, "status", "--json", env=env).stdout)
        assert [root["selfId"] for root in status["roots"]] == [root_id]
        assert status["daemon"]["pid"] == second.pid
        _code, out, _err = second.stop()
    assert "`dominds serve --demo` resumes them" in out

    lost = dominds(_elsewhere(tmp_path), "status", env=env)
    assert lost.returncode == 1
    assert f"the demo workspace is {demo}: `dominds -C {shlex.quote(str(demo))} status`" in lost.stderr


def test_a_second_serve_demo_names_the_running_panel_and_touches_nothing(tmp_path: Path) -> None:
    """Bug: a second `serve --demo` (another terminal) laid the template over the workspace the first one
    served, printed the demo's banner as if it started, then failed with a bare "already served"."""
    env = _env(tmp_path)
    demo = tmp_path / "data" / "dominds" / "demo"
    with Daemon(_elsewhere(tmp_path), "--demo", env=env) as daemon:
        script = demo / ".minds" / "scripted" / "demo.yaml"
        marker = demo / ".dominds" / "demo.json"
        recorded = json.loads(marker.read_text())
        recorded["files"][".minds/scripted/demo.yaml"] = hashlib.sha256(b"as if an older template").hexdigest()
        marker.write_text(json.dumps(recorded))
        script.write_text("as if an older template")  # what a start would refresh from the template
        again = dominds(_elsewhere(tmp_path), "serve", "--demo", "--port", "0", env=env)
        daemon.stop()
    assert again.returncode == 1 and again.stdout == "", again.stdout
    assert again.stderr == f"dominds: already served by pid {daemon.pid} on port {daemon.port}: the panel is {daemon.url}\n"
    assert script.read_text() == "as if an older template", "nothing is written under a running daemon"


def test_demo_dir_is_refreshed_from_the_template_and_foreign_folders_are_refused(tmp_path: Path) -> None:
    env = _env(tmp_path)
    demo = tmp_path / "my demo"
    with Daemon(_elsewhere(tmp_path), "--demo", str(demo), env=env) as daemon:
        assert f"Demo workspace: {demo} (created from the template)\n" in daemon.lines
        daemon.stop()
    script = demo / ".minds" / "scripted" / "demo.yaml"
    current = script.read_text()
    # As if an older template had been copied: the file differs from the template but is as copied.
    old = current.replace("Research the demo task", "An older prompt")
    script.write_text(old)
    marker = demo / ".dominds" / "demo.json"
    recorded = json.loads(marker.read_text())
    recorded["files"][".minds/scripted/demo.yaml"] = hashlib.sha256(old.encode()).hexdigest()
    marker.write_text(json.dumps(recorded))
    persona = demo / ".minds" / "team" / "lead" / "persona.md"
    persona.write_text("My own lead.\n")  # a person's edit: never overwritten
    with Daemon(_elsewhere(tmp_path), "--demo", str(demo), env=env) as daemon:
        assert "  updated from the template: .minds/scripted/demo.yaml\n" in daemon.lines
        # issue 36, item 16: the template did not change, so no "the template has a newer version"
        assert "  edited here, kept: .minds/team/lead/persona.md\n" in daemon.lines, daemon.lines
        assert not any("newer version" in line for line in daemon.lines), daemon.lines
        daemon.stop()
    assert script.read_text() == current and persona.read_text() == "My own lead.\n"
    recorded = json.loads(marker.read_text())
    recorded["files"][".minds/team/lead/persona.md"] = hashlib.sha256(b"an older template's persona").hexdigest()
    marker.write_text(json.dumps(recorded))  # as if the template's persona changed since it was copied
    with Daemon(_elsewhere(tmp_path), "--demo", str(demo), env=env) as daemon:
        assert "  edited here, kept (the template has a newer version): .minds/team/lead/persona.md\n" in daemon.lines
        daemon.stop()
    assert persona.read_text() == "My own lead.\n"

    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine\n")
    refused = dominds(_elsewhere(tmp_path), "serve", "--demo", str(busy), "--port", "0", env=env)
    assert refused.returncode == 1 and "not empty" in refused.stderr and not (busy / ".minds").exists()
    other = tmp_path / "ws"
    (other / ".minds").mkdir(parents=True)
    refused = dominds(_elsewhere(tmp_path), "serve", "--demo", str(other), "--port", "0", env=env)
    assert refused.returncode == 1 and "not the demo one" in refused.stderr
    assert f"dominds -C {other} serve" in refused.stderr
    assert not (other / ".minds" / "team.yaml").exists()


def test_the_demo_streams_at_a_pace_a_person_can_watch(tmp_path: Path) -> None:
    """Bug: the demo answered in under 250 ms, so nobody saw a reply stream in. Its database now sets
    `pace:` (4 characters every 25 ms); only DOMINDS_SCRIPTED_PACE=0, which the other tests set, drops it."""
    env = _env(tmp_path)
    env.pop("DOMINDS_SCRIPTED_PACE", None)
    demo = tmp_path / "data" / "dominds" / "demo"
    with Daemon(_elsewhere(tmp_path), "--demo", env=env) as daemon:
        started = time.monotonic()
        run = dominds(demo, "run", "--json", "Ask me a question", env=env)
        elapsed = time.monotonic() - started
        daemon.stop()
    assert run.returncode == 3, run.stdout + run.stderr
    events = [json.loads(line) for line in run.stdout.splitlines()]
    chunks = [e for e in events if e["type"].endswith("_chunk_evt")]
    streamed = "".join(e["chunk"] for e in chunks)
    assert "Which format should the final summary have?" in streamed
    assert len(chunks) >= len(streamed) // 4 >= 30, len(chunks)
    assert elapsed >= 0.025 * (len(chunks) - 1), "each chunk waits its turn: a person sees the reply arrive"


def test_the_demo_taskdoc_speaks_of_the_demo_not_of_keys_or_init(tmp_path: Path) -> None:
    """Bug (issue 36, item 16): the demo's Taskdoc was the template's, written for `dominds init`: "Runs
    offline on the `scripted` provider unless an API key … is set" and "Workspace created with `dominds
    init`", both false in the demo, which never uses a key and was made by `serve --demo`."""
    env = _env(tmp_path)
    demo = tmp_path / "demo"
    with Daemon(_elsewhere(tmp_path), "--demo", str(demo), env=env) as daemon:
        daemon.stop()
    taskdoc = demo / "tasks" / "demo.tsk"
    text = "".join((taskdoc / name).read_text() for name in ("goals.md", "constraints.md", "progress.md"))
    assert "API key" not in text and "dominds init" not in text, text
    assert "`dominds serve --demo`" in (taskdoc / "constraints.md").read_text()
    assert "offline" in (taskdoc / "constraints.md").read_text()
    assert "created by `dominds serve --demo`" in (taskdoc / "progress.md").read_text()
