"""Helpers shared by CLI commands."""

from __future__ import annotations

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
        raise CliError(str(exc)) from exc


def use_color(stream: object = sys.stdout) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())
