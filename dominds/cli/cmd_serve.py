"""`dominds serve`: run the daemon (arrives with the server issue)."""

from __future__ import annotations

import argparse

from dominds.cli.common import CliError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("serve", help="run the daemon and web panel for this workspace")
    p.add_argument("--demo", action="store_true", help="serve the demo team on the offline scripted provider")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=5666)
    p.add_argument("--no-auth", action="store_true")
    p.add_argument("--no-resume", action="store_true")
    p.set_defaults(func=_serve)


def _serve(args: argparse.Namespace) -> int:
    raise CliError("`serve` is not built yet: the server arrives with a later issue")
