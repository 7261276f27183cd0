"""Helpers shared by CLI commands."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from dominds.rtws import Rtws, RtwsNotFound, find_rtws


class CliError(Exception):
    """An error the user can act on; printed as one line with a non-zero exit."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def workspace(must_exist: bool = True) -> Rtws:
    try:
        return find_rtws(Path.cwd(), must_exist=must_exist)
    except RtwsNotFound as exc:
        raise CliError(f"{exc}{_demo_hint()}") from exc


def _demo_hint() -> str:
    """Where the demo workspace is, when there is one (the usual surprise: `serve --demo` ran elsewhere)."""
    from dominds.rtws import default_demo_dir, is_demo_workspace

    demo = default_demo_dir()
    if not is_demo_workspace(demo):
        return ""
    return f"; the demo workspace is {demo}: `{command_name()} -C {shlex.quote(str(demo))} status`"


def command_name() -> str:
    """How the user runs dominds, for commands we print: ``bin/dominds`` from a checkout, else ``dominds``."""
    return os.environ.get("DOMINDS_PROG") or "dominds"


def use_color(stream: object = sys.stdout) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())
