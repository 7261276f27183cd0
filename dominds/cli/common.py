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


_workspace_option: str | None = None
"""The ``-C DIR`` the user gave, as typed: printed commands carry it, so they work from the same shell."""


def remember_workspace_option(directory: str | None) -> None:
    global _workspace_option
    _workspace_option = directory


def workspace(must_exist: bool = True) -> Rtws:
    try:
        return find_rtws(Path.cwd(), must_exist=must_exist)
    except RtwsNotFound as exc:
        raise CliError(f"{exc}; {not_found_steps()}") from exc


def text_argument(value: str, what: str = "message") -> str:
    """A text given on the command line, or read from standard input when it is ``-`` (so a long
    message, problem or question can come from a file: ``… - < FILE``); refused when empty."""
    text = sys.stdin.read() if value == "-" else value
    if not text.strip():
        raise CliError(f"the {what} is empty", exit_code=2 if value != "-" else 1)
    return text


def not_found_steps() -> str:
    """What to do when no workspace was found: make one, point at one, or the demo's."""
    steps = f"`{program()} init` creates one here, -C DIR names another"
    return f"{steps}{_demo_hint()}"


def _demo_hint() -> str:
    """Where the demo workspace is, when there is one (the usual surprise: `serve --demo` ran elsewhere)."""
    from dominds.rtws import default_demo_dir, is_demo_workspace

    demo = default_demo_dir()
    if not is_demo_workspace(demo):
        return ""
    return f"; the demo workspace is {demo}: `{program()} -C {shlex.quote(str(demo))} status`"


def program() -> str:
    """How the user runs dominds: ``bin/dominds`` from a checkout (the script says so), else ``dominds``."""
    return os.environ.get("DOMINDS_PROG") or "dominds"


def command_name() -> str:
    """The start of a command we print for this workspace: the program, with the user's ``-C DIR`` if any."""
    if _workspace_option is None:
        return program()
    return f"{program()} -C {shlex.quote(_workspace_option)}"


def use_color(stream: object = sys.stdout) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())
