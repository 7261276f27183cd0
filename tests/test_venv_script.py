"""bin/_venv.sh decides what to install: the runtime for bin/dominds, the dev tools on top for bin/test.

Run against a stand-in Python that records what it is asked to do (pip never runs), so each decision
is checked in milliseconds: nothing is reinstalled when switching between bin/dominds and bin/test.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

STAND_IN = """#!/usr/bin/env bash
# Records its arguments (and PYTHONWARNINGS, when set); makes a venv whose python is this script; runs `python -` for real.
if [ -n "${{PYTHONWARNINGS:-}}" ]; then echo "PYTHONWARNINGS=$PYTHONWARNINGS" >> "{log}"; fi
echo "$*" >> "{log}"
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
    mkdir -p "$3/bin" && cp "$0" "$3/bin/python" && chmod +x "$3/bin/python"
elif [ "$1" = "-" ]; then
    exec "{real}" "$@"
fi
"""


def _root(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    root = tmp_path / "checkout"
    (root / "bin").mkdir(parents=True)
    shutil.copy(REPO / "bin" / "_venv.sh", root / "bin" / "_venv.sh")
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    log = tmp_path / "calls.log"
    python = tmp_path / "python3"
    python.write_text(STAND_IN.format(log=log, real=sys.executable))
    python.chmod(0o755)
    # DOMINDS_VENV is set when bin/test-python runs this suite: the stand-in checkout's .venv is meant here
    inherited = ("DOMINDS_VENV", "DOMINDS_VENV_EXTRAS", "PYTHONWARNINGS")
    env = {k: v for k, v in os.environ.items() if k not in inherited} | {"PYTHON": str(python)}
    return root, log, env


def _source(root: Path, env: dict[str, str], extras: str | None, log: Path) -> list[str]:
    """Source _venv.sh as bin/dominds ("") or bin/test ("dev") do; the calls it made."""
    if log.exists():
        log.unlink()
    run_env = dict(env) if extras is None else {**env, "DOMINDS_VENV_EXTRAS": extras}
    done = subprocess.run(
        ["bash", "-c", f'source "{root}/bin/_venv.sh"'], env=run_env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return log.read_text().splitlines() if log.exists() else []


def test_runtime_first_then_dev_tools_then_switching_back_installs_only_what_is_missing(tmp_path: Path) -> None:
    """Bug: bin/dominds installed the dev tools too (a 473 MB .venv and ~51 s before the demo started)."""
    root, log, env = _root(tmp_path)
    stamp = root / ".venv" / ".dominds-stamp"
    digest = hashlib.sha256((root / "pyproject.toml").read_bytes()).hexdigest()

    first = _source(root, env, "all", log)  # bin/dominds on a fresh clone: the runtime and what the demo uses
    assert first[0] == f"-m venv {root}/.venv"
    assert first[-2:] == ["PYTHONWARNINGS=ignore:Editable installation", f"-m pip install --quiet -e {root}[all]"], (
        "setuptools' page-long editable-install warning about the checkout itself is not shown to a newcomer"
    )
    assert stamp.read_text() == f"v2 {digest} all\n"

    dev = _source(root, env, "dev", log)  # then bin/test: the dev extra's packages only, no rebuild
    assert dev[-1] == f"-m pip install --quiet -r {root}/.venv/.dominds-extra-requirements.txt", dev
    assert not any("-e" in call.split() for call in dev)
    requirements = (root / ".venv" / ".dominds-extra-requirements.txt").read_text().splitlines()
    assert "pytest>=8.0" in requirements and any(r.startswith("mypy") for r in requirements)
    assert not any(r.startswith("aiohttp") for r in requirements), "the runtime is installed already"
    assert "duckdb>=1.1" in requirements and not any(r.startswith("dominds") for r in requirements), (
        "dev names the project's own extras (`dominds[all]`): their packages are listed, not the project"
    )
    assert stamp.read_text() == f"v2 {digest} all,dev\n"

    assert _source(root, env, "all", log) == [], "bin/dominds after bin/test: nothing to do"
    assert _source(root, env, "", log) == []
    assert _source(root, env, "dev", log) == []
    assert _source(root, env, None, log) == [], "bin/bench and friends want dev too"

    with open(root / "pyproject.toml", "a") as handle:
        handle.write("\n# a change\n")
    changed = _source(root, env, "all", log)
    assert changed == ["PYTHONWARNINGS=ignore:Editable installation", f"-m pip install --quiet -e {root}[all,dev]"], (
        "refreshed, and the dev tools are kept"
    )

    new_digest = hashlib.sha256((root / "pyproject.toml").read_bytes()).hexdigest()
    stamp.write_text(f"{new_digest}-dev\n")  # the stamp an earlier _venv.sh wrote
    assert _source(root, env, "dev", log) == [] and _source(root, env, "", log) == []
