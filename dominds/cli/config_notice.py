"""The warning `run` and `status` print on stderr while a ``.minds/`` file has errors and the daemon (or
this process) goes on with its last good version (``driver/last_good.py``).

Bug: with a broken ``team.yaml``, ``run`` went on with the last good team and ``status`` showed the
dialogs without a word: only ``check`` and the panel said that the file in use was not the one on disk.
Stdout is left alone (``--json`` stays one document).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dominds.cli.common import command_name

if TYPE_CHECKING:
    from dominds.cli.client import DaemonClient
    from dominds.problems import Problem
    from dominds.rtws import Rtws

CONFIG_FALLBACK = "config_fallback"  # = driver.last_good.CONFIG_FALLBACK, not imported: `status` stays light


def warn(problems: Iterable[Problem | Mapping[str, Any]]) -> None:
    """Print one warning per ``config_fallback`` problem among ``problems`` (objects or their JSON)."""
    for problem in problems:
        fields = problem if isinstance(problem, Mapping) else problem.to_json()
        if fields.get("kind") == CONFIG_FALLBACK:
            print(
                f"warning: {fields['source']}: {fields['message']} (`{command_name()} check` lists the errors)",
                file=sys.stderr,
                flush=True,
            )


async def warn_from_daemon(client: DaemonClient) -> None:
    """The daemon's own view: its problems are those of the files it loaded."""
    try:
        answer = await client.get("/api/problems")
    except Exception:  # an older or busy daemon: the warning is a courtesy, never a reason to fail
        return
    warn(p for p in answer.get("problems", []) if isinstance(p, Mapping))


def warn_from_files(rtws: Rtws) -> None:
    """Without a daemon: the files read as a daemon would read them. A file identical to its last good
    copy loaded cleanly before, so the usual case (nothing edited since) costs a read per file."""
    from dominds.driver.last_good import LastGood

    last_good = LastGood(rtws)
    lives = (rtws.team_yaml, rtws.llm_yaml, rtws.mcp_yaml)
    if all(_same(live, last_good.copy_of(live)) for live in lives):
        return
    from dominds.driver.config import ConfigCache
    from dominds.driver.extensions import with_builtins
    from dominds.workflows.mount import workflow_extensions

    warn(ConfigCache(rtws, with_builtins(workflow_extensions())).get().problems)


def _same(live: Path, copy: Path) -> bool:
    try:
        return live.read_bytes() == copy.read_bytes()
    except FileNotFoundError:
        return not live.exists() and not copy.exists()
    except OSError:
        return False
