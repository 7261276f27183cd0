"""`dominds tot-mcp`: serve the Tree-of-Thoughts tools to an MCP client over stdio or streamable HTTP.

Sessions go to ``<workspace>/.dominds/tot`` when started inside a Dominds workspace (so the team's
``tot`` toolset sees the same investigations), otherwise to the per-user data directory
(``$XDG_DATA_HOME/dominds/tot``, ``~/.local/share/dominds/tot``), never to a ``.dominds/`` folder of
whatever directory an MCP client started it in; ``--sessions-dir`` overrides both. Over stdio, stdout
carries the protocol, so nothing else may be printed there. ``--http`` follows ``dominds serve``'s
rules: a token (``$DOMINDS_MCP_TOKEN`` or a fresh one, printed), loopback only without one, and
foreign browser origins refused.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from dominds.cli.common import workspace


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "tot-mcp",
        help="serve the Tree-of-Thoughts tools as an MCP server (stdio, or streamable HTTP with --http)",
        description="Serve tot_start/propose/commit/reclassify/status/end to an MCP client over stdio or HTTP.",
    )
    p.add_argument(
        "--sessions-dir",
        type=Path,
        metavar="DIR",
        help="where session files live (default: <workspace>/.dominds/tot inside a workspace, "
        "else the per-user data directory, e.g. ~/.local/share/dominds/tot)",
    )
    p.add_argument("--http", action="store_true", help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio")
    p.add_argument("--host", default="127.0.0.1", help="address to bind with --http (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=5667, help="port with --http (default 5667; 0 = any free port, printed)")
    p.add_argument("--no-auth", action="store_true", help="with --http: no token (only allowed on a loopback address)")
    p.set_defaults(func=_run)


def default_sessions_dir() -> Path:
    from dominds.mcp.http_serve import user_data_dir
    from dominds.rtws import is_rtws

    rtws = workspace(must_exist=False)
    if is_rtws(rtws.root):
        return rtws.root / ".dominds" / "tot"
    return user_data_dir() / "tot"


def _run(args: argparse.Namespace) -> int:
    # imported here so that other commands (and `dominds --help`) do not pay for loading the MCP SDK
    from dominds.workflows.tot_mcp.server import run_http, run_stdio

    sessions_dir = args.sessions_dir.resolve() if args.sessions_dir is not None else default_sessions_dir()
    if args.http:
        from dominds.mcp.http_serve import pick_token

        run_http(sessions_dir, args.host, args.port, pick_token(args.no_auth))
    else:
        run_stdio(sessions_dir)
    return 0
