"""The long-run scripts answer ``--help`` and a bad count with their usage, before touching the venv.

Bug pinned here: ``bin/soak --help`` (or ``bin/soak abc``) ended in a Python traceback
(``ValueError: invalid literal for int()``) from the soak driver, and ``bin/fuzz --help`` started
pytest with ``DOMINDS_FUZZ_EXAMPLES=--help``, which failed every test module at collection.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(REPO / "bin" / script), *args], capture_output=True, text=True, timeout=30, check=False)


@pytest.mark.parametrize(("script", "what"), [("soak", "ROUNDS"), ("fuzz", "EXAMPLES")])
def test_help_prints_the_usage_and_a_bad_count_is_refused_with_it(script: str, what: str) -> None:
    shown = _run(script, "--help")
    assert shown.returncode == 0 and f"bin/{script} [" in shown.stdout and "Traceback" not in shown.stdout + shown.stderr
    for bad in ("abc", "0", "-5", "1e3"):
        refused = _run(script, bad)
        assert refused.returncode == 2, (bad, refused.stdout, refused.stderr)
        assert f"bin/{script}: {what} must be a whole number above 0, not '{bad}'" in refused.stderr
        assert f"bin/{script} [" in refused.stderr and "Traceback" not in refused.stderr
