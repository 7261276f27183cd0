"""The commands the CLI prints for the next step work when typed in the shell they were printed in.

Bugs: with `-C DIR` (as the demo's own hint `bin/dominds -C … status` has a newcomer type), every printed
next step (`answer "…"`, `tell … --follow`, `show … --follow`, `serve`) left the `-C` out, so typed as
printed it failed with "no Dominds workspace"; some named a bare `dominds` after `bin/dominds`; `status`
of an empty workspace pointed at `dominds serve` while a daemon served it, and at a Taskdoc that does
not exist; `init DIR` said `cd DIR && dominds check`, which breaks a relative `bin/dominds`.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from test_cli_kit import Daemon, cli_env, write_workspace


def _typed(cwd: Path, *args: str, prog: str = "dominds") -> subprocess.CompletedProcess[str]:
    """`PROG ARGS` typed in ``cwd``; PROG is what the commands print (bin/dominds sets DOMINDS_PROG)."""
    return subprocess.run(
        [sys.executable, "-m", "dominds", *args], cwd=cwd, env=cli_env(DOMINDS_PROG=prog), capture_output=True, text=True,
        timeout=60, check=False,
    )


def _type_printed(cwd: Path, line: str, prog: str = "dominds") -> subprocess.CompletedProcess[str]:
    """Type a printed command (a line ending in it, or the command between backquotes) as printed."""
    command = line.split("`")[1] if "`" in line else line.split(": ", 1)[-1]
    words = shlex.split(command)
    assert words[0] == prog, command
    return _typed(cwd, *words[1:], prog=prog)


def _line(output: str, marker: str) -> str:
    return next(line for line in output.splitlines() if marker in line)


def test_printed_next_steps_carry_the_workspace_option_and_work_as_typed(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "my ws")
    shell = tmp_path / "elsewhere"
    shell.mkdir()
    given = str(ws)
    me = f"bin/dominds -C {shlex.quote(given)}"

    asked = _typed(shell, "-C", given, "run", "paint", prog="bin/dominds")
    assert asked.returncode == 3, asked.stdout + asked.stderr
    answer = _line(asked.stdout, " answer ")
    assert answer.strip() == f'{me} answer "your answer"', asked.stdout
    answered = _type_printed(shell, answer.strip().replace('"your answer"', "blue --follow"), prog="bin/dominds")
    assert answered.returncode == 0 and "Painting it blue." in answered.stdout, answered.stdout + answered.stderr
    go_on = _line(answered.stdout, "go on:")
    root = go_on.split(" tell ")[1].split()[0]
    assert go_on.strip() == f'go on: {me} tell {root} "…" --follow'

    queued = _typed(shell, "-C", given, "tell", root[:9], "hello", prog="bin/dominds")
    assert queued.returncode == 0, queued.stderr
    assert f"no daemon is running: `{me} serve` drives it" in queued.stdout, queued.stdout
    with Daemon(ws) as daemon:
        served = _typed(shell, "-C", given, "tell", root[:9], "hello", prog="bin/dominds")
        watch = _line(served.stdout, "watch it with")
        assert f"`{me} show {root} --follow`" in watch, served.stdout
        shown = _type_printed(shell, watch, prog="bin/dominds")
        assert shown.returncode == 0 and "Hello there!" in shown.stdout, shown.stdout + shown.stderr
        unknown = _typed(shell, "-C", given, "show", "zzz", prog="bin/dominds")
        assert f"see `{me} status --all`" in unknown.stderr, unknown.stderr
        daemon.stop()

    empty = write_workspace(tmp_path / "empty")
    with Daemon(empty) as daemon:
        status = _typed(shell, "-C", str(empty), "status")
        assert status.returncode == 0, status.stderr
        assert status.stdout.rstrip().endswith(f'no dialogs yet: start one with `dominds -C {empty} run "…"` or in the panel above')
        daemon.stop()
    offline = _typed(empty, "status")
    assert offline.stdout.rstrip().endswith('no dialogs yet: start one with `dominds run "…"` or in the panel of `dominds serve`')


def test_no_workspace_and_init_name_the_program_and_the_folder(tmp_path: Path) -> None:
    shell = tmp_path / "shell"
    shell.mkdir()
    env_home = {"HOME": str(tmp_path / "home"), "XDG_DATA_HOME": str(tmp_path / "data")}  # no demo workspace there
    lost = subprocess.run(
        [sys.executable, "-m", "dominds", "status"], cwd=shell, env=cli_env(DOMINDS_PROG="bin/dominds", **env_home),
        capture_output=True, text=True, timeout=30, check=False,
    )
    assert lost.returncode == 1 and lost.stderr.count("\n") == 1, lost.stderr
    assert lost.stderr.endswith("; `bin/dominds init` creates one here, -C DIR names another\n"), lost.stderr

    usage = _typed(shell, "resume", prog="bin/dominds")
    assert usage.returncode == 2 and usage.stderr.startswith("usage: bin/dominds resume "), usage.stderr

    created = _typed(shell, "init", "team ws", prog="bin/dominds")
    assert created.returncode == 0, created.stderr
    target = shlex.quote(str(shell / "team ws"))
    assert created.stdout.endswith(f"Next: bin/dominds -C {target} check && bin/dominds -C {target} serve\n"), created.stdout
    check = _type_printed(shell, f"x: bin/dominds -C {target} check", prog="bin/dominds")
    assert check.returncode == 0 and check.stdout.endswith("no problems\n"), check.stdout
