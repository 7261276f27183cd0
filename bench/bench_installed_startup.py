"""Start-up of an installed copy (a wheel in a venv), with and without a bytecode cache.

A fresh ``uv tool install`` or ``pip install --no-compile``, or a read-only install, has no ``.pyc``
files: every start compiles each module it imports. This bench runs the installed ``dominds`` of VENV
(install it with ``pip install --no-compile`` so the venv holds no cache of its own) in two ways:

- *no cache*: ``PYTHONDONTWRITEBYTECODE=1``, nothing cached anywhere: each run compiles;
- *cached*: ``PYTHONPYCACHEPREFIX`` pointing at a folder filled by a first, unmeasured run.

For each: ``dominds --version``, ``dominds --help``, ``dominds status`` in a fresh ``dominds init``
workspace, and ``dominds serve`` until it prints the panel URL (then stopped). Median of RUNS.

    python bench/bench_installed_startup.py VENV [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path


def _timed(command: list[str], env: dict[str, str], cwd: Path, until: str | None = None) -> float:
    started = time.perf_counter()
    if until is None:
        subprocess.run(command, env=env, cwd=cwd, capture_output=True, check=False)
        return time.perf_counter() - started
    proc = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if until in line:
            break
    took = time.perf_counter() - started
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("venv", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    dominds = str(args.venv.resolve() / "bin" / "dominds")
    with tempfile.TemporaryDirectory(prefix="dominds-bench-") as tmp:
        work = Path(tmp)
        base = {"PATH": os.environ["PATH"], "HOME": str(work), "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1"}
        subprocess.run([dominds, "init", "ws"], env=base, cwd=work, capture_output=True, check=True)
        commands = {
            "--version": ([dominds, "--version"], None),
            "--help": ([dominds, "--help"], None),
            "status": ([dominds, "-C", "ws", "status"], None),
            "serve (to its URL)": ([dominds, "-C", "ws", "serve", "--port", "0"], "panel: "),
        }
        modes = {
            "no cache": {**base, "PYTHONDONTWRITEBYTECODE": "1"},
            "cached": {**base, "PYTHONPYCACHEPREFIX": str(work / "pycache")},
        }
        print(f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}, load {os.getloadavg()[0]:.1f}")
        for name, (command, until) in commands.items():
            _timed(command, modes["cached"], work, until)  # fills the cache of the cached mode
            row = []
            for mode, env in modes.items():
                times = [_timed(command, env, work, until) for _ in range(args.runs)]
                row.append(f"{mode} {statistics.median(times):.2f} s")
            print(f"{name:20} " + ", ".join(row))
        print(f"load {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
