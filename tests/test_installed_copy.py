"""Dominds installed as a Python tool (a built wheel in a venv outside any clone), as a new user gets it.

Bugs these hold: every installed copy failed its first two commands (`serve --demo`, `init`: "the
workspace template is missing", the template not being in the wheel; and copied into the package by
package-data globs it would have lost `.minds/` and `.gitignore`, dot-names being skipped), the help
pointed to `docs/*.md` an installed copy does not have, and the core install carried DuckDB and
python-pptx for Plan & Solve alone.

One venv serves the module, in the order of its tests: first the core install (`pip install WHEEL`),
then the same venv gets the extras (`pip install 'WHEEL[all]'`), which installs only what they add.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from install_kit import Built, Venv, build, make_venv, runtime_files, sdist_names, wheel_names

QUERY_DATA_ON_A_CORE_INSTALL = """
import asyncio
from dominds.tools.base import ToolError
from dominds.workflows.plan_solve.data_tool import QUERY_DATA
try:
    asyncio.run(QUERY_DATA.handler(None, {"sql": "SELECT 1"}))
except ToolError as exc:
    print(f"ToolError: {exc}")
"""

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]  # pip fills a venv: minutes on a busy machine


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return build(tmp_path_factory.mktemp("build"))


@pytest.fixture(scope="module")
def core(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    where = tmp_path_factory.mktemp("installed")
    venv = make_venv(where / "venv", where / "home")
    venv.pip_install(str(built.wheel))
    return venv


@pytest.fixture(scope="module")
def full(core: Venv, built: Built) -> Venv:
    core.pip_install(f"{built.wheel}[all]")
    return core


def test_the_sdist_and_the_wheel_carry_every_run_time_file(built: Built) -> None:
    """The wheel (built from the sdist) holds the template with its dot-files, the docs, the pages,
    the examples, the license; a file that is not there fails here by name."""
    names = wheel_names(built.wheel)
    missing = [name for name in runtime_files() if name not in names]
    assert not missing, f"run-time files missing from {built.wheel.name}: {missing}"
    assert {"dominds/_template/.gitignore", "dominds/_template/.minds/team.yaml", "dominds/_docs/install.md"} <= names
    assert any(re.fullmatch(r"dominds-[^/]+\.dist-info/licenses/LICENSE", n) for n in names), sorted(names)[-8:]
    assert not [n for n in names if "__pycache__" in n or n.startswith(("tests/", "bench/"))]
    sdist = sdist_names(built.sdist)
    assert {"LICENSE", "setup.py", "rtws-template/.minds/team.yaml", "rtws-template/.gitignore"} <= sdist


def test_the_core_install_runs_the_demo_team_and_refuses_plan_solve_with_the_install_hint(core: Venv, tmp_path: Path) -> None:
    """Without extras: no DuckDB nor python-pptx in the venv, the demo team answers, and Plan & Solve
    answers one line with the command that installs what it needs (CLI and panel page alike)."""
    assert core.run("--version", cwd=tmp_path).stdout.strip().startswith("dominds ")
    has = subprocess.run([str(core.python), "-c", "import duckdb"], capture_output=True, check=False)
    assert has.returncode != 0, "the core install brought DuckDB"

    refused = core.run("plan-solve", "example", "data2ppt", "--scripted", cwd=tmp_path)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    [line] = refused.stderr.splitlines()
    assert "dominds[plan-solve]" in line and "DuckDB and python-pptx" in line
    assert re.search(rf"install them with: {re.escape(str(core.root))}/bin/python3? -m pip install 'dominds\[plan-solve\]'$", line), line
    assert not list(tmp_path.glob("dominds-plan-solve-*")), "the refusal made no example workspace"
    # the agents' data tool answers the model with the same line (a team may list its toolset anywhere)
    tool = subprocess.run(
        [str(core.python), "-c", QUERY_DATA_ON_A_CORE_INSTALL], capture_output=True, text=True, check=False, cwd=tmp_path
    )
    assert tool.returncode == 0, tool.stdout + tool.stderr
    assert tool.stdout.startswith("ToolError: Plan & Solve needs the optional dependencies of dominds[plan-solve]")
    assert tool.stdout.rstrip().endswith("-m pip install 'dominds[plan-solve]'"), tool.stdout

    with Served(core, tmp_path) as served:
        answer = core.run("-C", str(served.demo), "run", "Research the demo task", cwd=tmp_path)
        assert answer.returncode == 0, answer.stdout + answer.stderr
        assert "Thanks, @researcher" in answer.stdout
        page = served.get("/plan-solve", expect=503)
        assert "dominds[plan-solve]" in page and "pip install" in page
        on_daemon = core.run("-C", str(served.demo), "plan-solve", "example", "data2ppt", cwd=tmp_path)
        assert on_daemon.returncode == 1 and "dominds[plan-solve]" in on_daemon.stderr, on_daemon.stderr


def test_with_every_extra_init_serve_demo_each_workflow_demo_and_tot_mcp_work(full: Venv, tmp_path: Path) -> None:
    """With `[all]`: `init` makes a workspace `check` accepts; `serve --demo` is healthy and a demo
    dialog is answered over its API; the three workflow demos run to the end on the daemon; `tot-mcp`
    answers initialize; `dominds docs` prints the shipped docs."""
    made = full.run("init", "my-ws", cwd=tmp_path)
    assert made.returncode == 0, made.stdout + made.stderr
    assert (tmp_path / "my-ws" / ".minds" / "team.yaml").is_file() and (tmp_path / "my-ws" / ".gitignore").is_file()
    checked = full.run("-C", "my-ws", "check", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr

    docs = full.run("docs", "install", cwd=tmp_path)
    assert docs.returncode == 0 and docs.stdout.startswith("# Installing Dominds"), docs.stdout[:200] + docs.stderr
    assert "dominds docs cli" in full.run("--help", cwd=tmp_path).stdout

    with Served(full, tmp_path) as served:
        assert json.loads(served.get("/api/health"))["ready"] is True
        created = served.post("/api/dialogs", {"agentId": "lead", "taskDocPath": "tasks/demo.tsk"})
        served.post(f"/api/dialogs/{created['selfId']}/messages", {"content": "Research the demo task"})
        served.wait_for_text(created["selfId"], "Thanks, @researcher")

        cli = ["-C", str(served.demo)]
        tot = full.run(*cli, "tot", "4 9 10 13", cwd=tmp_path, timeout=180)
        assert tot.returncode == 0 and "Answer: (10 - (13 - 9)) * 4 = 24" in tot.stdout, tot.stdout + tot.stderr
        debate = full.run(*cli, "debate", "Help me plan three months of IELTS preparation", "--out", str(tmp_path / "d.md"), cwd=tmp_path, timeout=180)
        assert debate.returncode == 0 and "final report: converged" in debate.stdout, debate.stdout + debate.stderr
        slides = full.run(*cli, "plan-solve", "example", "data2ppt", cwd=tmp_path, timeout=180)
        assert slides.returncode == 0, slides.stdout + slides.stderr
        assert "[aggregate.completed] PPT generation completed with 3 slides" in slides.stdout

    offline = full.run("plan-solve", "example", "data2ppt", "--scripted", "--workdir", str(tmp_path / "out"), cwd=tmp_path, timeout=180)
    assert offline.returncode == 0, offline.stdout + offline.stderr
    temp = re.search(r"Offline example workspace .*: (\S+)", offline.stderr)
    assert temp is not None and not Path(temp.group(1)).exists(), "the offline run's temporary workspace is removed"

    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}  # fmt: skip
    mcp = subprocess.run(
        [str(full.dominds), "tot-mcp", "--sessions-dir", str(tmp_path / "tot")],
        input=json.dumps(initialize) + "\n",
        capture_output=True,
        text=True,
        env=full.env(),
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    [reply] = [json.loads(line) for line in mcp.stdout.splitlines() if line.strip()]
    assert reply["id"] == 0 and reply["result"]["serverInfo"]["name"], mcp.stderr[-2000:]


class Served:
    """`dominds serve --demo --port 0` in the installed venv, until it prints the panel URL."""

    def __init__(self, venv: Venv, cwd: Path) -> None:
        self.venv, self.cwd = venv, cwd
        self.demo = venv.home / ".local" / "share" / "dominds" / "demo"

    def __enter__(self) -> Served:
        self.proc = subprocess.Popen(
            [str(self.venv.dominds), "serve", "--demo", "--port", "0"],
            cwd=self.cwd, env=self.venv.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        lines: list[str] = []
        while not any("panel: " in line for line in lines):
            line = self.proc.stdout.readline() if self.proc.stdout else ""
            if not line:
                raise AssertionError(f"serve ended: {lines} {self.proc.stderr.read() if self.proc.stderr else ''}")
            lines.append(line)
        url = next(line for line in lines if "panel: " in line).split("panel: ", 1)[1].strip()
        found = re.match(r"(http://[^/]+)/.*[?&]auth=([^&\s]+)", url)
        assert found is not None, url
        self.base, self.token = found.groups()
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.send_signal(signal.SIGINT)
        self.proc.communicate(timeout=60)

    def _open(self, request: urllib.request.Request) -> tuple[int, str]:
        request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def get(self, path: str, expect: int = 200) -> str:
        status, body = self._open(urllib.request.Request(self.base + path))
        assert status == expect, (path, status, body)
        return body

    def post(self, path: str, payload: dict[str, object]) -> dict[str, str]:
        request = urllib.request.Request(
            self.base + path, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"}, method="POST"
        )
        status, body = self._open(request)
        assert status in (200, 201, 202), (path, status, body)
        result: dict[str, str] = json.loads(body)
        return result

    def wait_for_text(self, self_id: str, text: str) -> None:
        """Until the dialog's events hold ``text``; polled, as a client without a websocket would."""
        deadline = time.monotonic() + 60
        while text not in self.get(f"/api/dialogs/{self_id}"):
            assert time.monotonic() < deadline, self.get(f"/api/dialogs/{self_id}")[-2000:]
            time.sleep(0.2)
