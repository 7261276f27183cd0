"""`dominds --version` and `dominds --help` import no more than they need (counted, not timed).

Bug: `--version` registered every command, importing each command module and what those import
(0.52 s); `--help` imported the store, the Tellask parser and the debate's settings to list commands.
"""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import contextlib, io, json, sys
from dominds.cli.main import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    try:
        main({argv!r})
    except SystemExit:
        pass
print(json.dumps({{"out": out.getvalue(), "modules": sorted(m for m in sys.modules if m.startswith("dominds"))}}))
"""


def _imported(argv: list[str]) -> tuple[str, list[str]]:
    done = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv)], capture_output=True, text=True, check=True)
    result = json.loads(done.stdout.splitlines()[-1])
    return result["out"], result["modules"]


def test_version_imports_no_command() -> None:
    out, modules = _imported(["--version"])
    assert out.startswith("dominds ")
    assert not [m for m in modules if m.startswith("dominds.cli.cmd_")], modules
    assert len(modules) <= 6, modules


def test_help_lists_every_command_without_the_store_the_engine_or_the_workflows() -> None:
    out, modules = _imported(["--help"])
    assert "serve" in out and "docs" in out and "plan-solve" in out
    heavy = ("dominds.store", "dominds.driver", "dominds.server", "dominds.llm", "dominds.tellask", "dominds.workflows.debate.settings")
    assert not [m for m in modules if m.startswith(heavy)], [m for m in modules if m.startswith(heavy)]
