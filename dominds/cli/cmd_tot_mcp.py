"""`dominds tot-mcp`: serve the Tree-of-Thoughts tools to an MCP client over stdio.

Works in any directory: sessions go to ``<workspace>/.dominds/tot`` for the workspace at or above
the current directory, or to ``./.dominds/tot`` when there is none, unless ``--sessions-dir`` says
otherwise. Stdout carries the protocol, so nothing else may be printed there.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from dominds.cli.common import workspace


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "tot-mcp",
        help="serve the Tree-of-Thoughts tools as an MCP server over stdio",
        description="Serve tot_start/propose/commit/reclassify/status/end to an MCP client over stdio.",
    )
    p.add_argument(
        "--sessions-dir",
        type=Path,
        metavar="DIR",
        help="where session files live (default: <workspace>/.dominds/tot, or ./.dominds/tot outside a workspace)",
    )
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    # imported here so that other commands (and `dominds --help`) do not pay for loading the MCP SDK
    from dominds.workflows.tot_mcp.server import run_stdio

    sessions_dir = args.sessions_dir.resolve() if args.sessions_dir is not None else None
    run_stdio(workspace(must_exist=False).root, sessions_dir=sessions_dir)
    return 0
