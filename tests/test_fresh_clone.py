"""The README's quick start on a fresh copy of the repository, as a new user meets it: API keys exported,
nothing of ours in the environment, `bin/dominds serve --demo` twice.

The copy holds what a clone holds (git's tracked files, plus new files not yet committed, so a change
is tested before it is committed). Its ``.venv`` borrows this venv's packages through a ``.pth`` file
and is stamped as bin/dominds stamps a runtime install, so the test needs neither the network nor a
minute of pip: what `_venv.sh` decides is tested in ``test_venv_script.py``, and CI (``.ci/run``) runs
bin/test on a real fresh clone. Everything else is the real thing: the script, the demo folder in
``$HOME``, the daemon on the README's port (or the next free one), and the printed commands.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()


def _copy_like_a_clone(target: Path) -> None:
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=False,
    )
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    for rel in filter(None, listed.stdout.decode().split("\0")):
        source = REPO / rel
        if source.is_file():
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / rel)


def _borrowed_venv(clone: Path) -> None:
    """A .venv for the clone that imports the clone's `dominds` and this venv's other packages."""
    venv = clone / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "_dominds_clone.pth").write_text(f"{clone}\n{sysconfig.get_paths()['purelib']}\n")
    script = venv / "bin" / "dominds"
    script.write_text(f"#!{venv}/bin/python\nimport sys\nfrom dominds.cli.main import main\nsys.exit(main())\n")
    script.chmod(0o755)
    digest = hashlib.sha256((clone / "pyproject.toml").read_bytes()).hexdigest()
    (venv / ".dominds-stamp").write_text(f"v2 {digest} all\n")  # what bin/dominds writes after its install


def _tree(clone: Path) -> list[str]:
    return sorted(str(p.relative_to(clone)) for p in clone.rglob("*") if not {".venv", "__pycache__"} & set(p.parts))


def _clean_env(home: Path) -> dict[str, str]:
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "ANTHROPIC_API_KEY": "sk-ant-exported-but-the-demo-must-not-use-it",
        "OPENAI_API_KEY": "sk-exported-but-the-demo-must-not-use-it",
        "DOMINDS_FORBID_REAL_LLM": "1",  # a real provider would fail every generation, never reach the network
    }


def _every_workflow_page_gives_a_complete_run(clone: Path, env: dict[str, str], cli: list[str], demo: Path, tmp: Path) -> None:
    """The demo panel links Tree of Thoughts, Debate and Plan & Solve: each runs its demo to the end offline,
    on the daemon (through the API its page uses) while `serve --demo` holds the workspace.

    Bugs: ToT ended "completed" with an empty answer and exit 0, the debate reported consensus 0.85 over
    "Scripted response not found" texts, and the CLI commands refused to run while `serve` held the
    workspace."""

    panel = (clone / "dominds" / "static" / "index.html").read_text()
    assert re.findall(r'class="workflow-link" href="(/[a-z-]+)"', panel) == ["/tot", "/debate", "/plan-solve"]
    report = tmp / "debate.md"
    commands = {
        "tot": ["tot", "4 9 10 13"],
        "debate": ["debate", "Help me plan three months of IELTS preparation", "--out", str(report)],
        "slides": ["plan-solve", "example", "data2ppt"],
    }
    running = {  # at once, as three browser tabs would: the daemon runs them side by side
        name: subprocess.Popen([*cli, *args], cwd=clone, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for name, args in commands.items()
    }
    done = {name: (proc.communicate(timeout=180), proc.returncode) for name, proc in running.items()}
    for name, ((stdout, stderr), code) in done.items():
        assert code == 0, f"{name}: {stdout}{stderr}"
    tot, debate, slides = (subprocess.CompletedProcess([], 0, done[n][0][0], done[n][0][1]) for n in commands)
    assert "on the daemon" in tot.stdout and "Answer: (10 - (13 - 9)) * 4 = 24\n  (verified; confidence 1.0)" in tot.stdout
    assert "final report: converged after 2 round(s)" in debate.stdout
    assert report.read_text().startswith("# IELTS in four months") and "not found" not in report.read_text()
    assert "[aggregate.completed] PPT generation completed with 3 slides" in slides.stdout
    [deck] = list((demo / "workdir" / "ppt").glob("*/presentation.pptx"))
    assert deck.stat().st_size > 10_000, "the deck is written inside the demo workspace"
    assert f"; deck: {deck}\n" in slides.stdout, "where the deck is, in full: `./workdir/…` is not in the user's shell"


class Serve:
    """The README's first command, until it prints the panel URL."""

    def __init__(self, clone: Path, env: dict[str, str], command: list[str]) -> None:
        self.proc = subprocess.Popen(command, cwd=clone, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        deadline = time.monotonic() + 60
        while not any("panel: " in line for line in self.lines):
            line = self.proc.stdout.readline() if self.proc.stdout else ""
            if not line:
                raise AssertionError(f"serve ended: {self.lines} {self.proc.stderr.read() if self.proc.stderr else ''}")
            self.lines.append(line)
            assert time.monotonic() < deadline, self.lines

    def stop(self) -> str:
        self.proc.send_signal(signal.SIGINT)
        out, err = self.proc.communicate(timeout=30)
        assert self.proc.returncode == 0, err
        return "".join(self.lines) + out


def test_the_readme_quick_start_on_a_fresh_clone_serves_a_scripted_demo_that_persists(tmp_path: Path) -> None:
    """Bugs: the demo went to real providers when keys were exported, and each `serve --demo` started
    over in a new temp folder that nothing else could find."""
    commands = re.search(r"## Quick start\n\n```sh\n(.*?)```", README, re.S)
    assert commands is not None
    serve_line, test_line = commands.group(1).splitlines()
    assert (serve_line, test_line) == ("bin/dominds serve --demo", "bin/test")
    assert re.search(r"Python ≥ ?3\.11", README), "the README says which Python it needs"

    clone, home = tmp_path / "clone", tmp_path / "home"
    clone.mkdir()
    home.mkdir()
    _copy_like_a_clone(clone)
    _borrowed_venv(clone)
    files_before = _tree(clone)
    env = _clean_env(home)
    demo = home / ".local" / "share" / "dominds" / "demo"

    first = Serve(clone, env, shlex.split(serve_line))
    assert f"Demo workspace: {demo} (created from the template)\n" in first.lines, first.lines
    hint = next(line for line in first.lines if "from another shell:" in line).split(": ", 1)[1].strip()
    assert hint == f"bin/dominds -C {demo} status"
    status = subprocess.run(shlex.split(hint), cwd=clone, env=env, capture_output=True, text=True, check=False)
    assert status.returncode == 0 and "no dialogs yet" in status.stdout, status.stdout + status.stderr
    ask = shlex.split(hint)[:-1] + ["run", "Ask me a question"]
    asked = subprocess.run(ask, cwd=clone, env=env, capture_output=True, text=True, check=False, timeout=60)
    assert asked.returncode == 3, asked.stdout + asked.stderr
    assert "Which format should the final summary have?" in asked.stdout
    printed = f'  bin/dominds -C {demo} answer "your answer"\n'
    assert printed in asked.stdout, "printed commands name the script the user ran, and the workspace"
    first.stop()

    second = Serve(clone, env, shlex.split(serve_line))
    assert f"Demo workspace: {demo} (kept from earlier runs: 1 dialog tree)\n" in second.lines, second.lines
    answer = shlex.split(printed.replace("your answer", "markdown report")) + ["--follow"]  # typed as printed
    answered = subprocess.run(answer, cwd=clone, env=env, capture_output=True, text=True, check=False, timeout=60)
    assert answered.returncode == 0, answered.stdout + answered.stderr
    assert "I'll use that format" in answered.stdout, "the question asked before the restart was answered"
    _every_workflow_page_gives_a_complete_run(clone, env, shlex.split(hint)[:-1], demo, tmp_path)
    out = second.stop()
    assert "`bin/dominds serve --demo` resumes them" in out

    records = [json.loads(line) for course in demo.rglob("course-*.jsonl") for line in course.read_text().splitlines()]
    generations = [r for r in records if r["type"] == "gen_finish_record"]
    assert generations and {g["provider"] for g in generations} == {"scripted"}, generations
    assert all(g["status"] == "ok" for g in generations), generations
    assert _tree(clone) == files_before, "the demo lives in $HOME, not in the checkout"
    assert not any(name.startswith("dominds-demo-") for name in os.listdir(tmp_path)), "no temp demo folders"
