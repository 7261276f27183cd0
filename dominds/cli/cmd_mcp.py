"""`dominds mcp`: Dominds as an MCP server (stdio, or streamable HTTP with --http) over the running daemon.

See ``dominds/cli/mcp_server.py`` for the tools and docs/mcp.md for client configurations.
"""

from __future__ import annotations

import argparse

from dominds.cli.common import workspace


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "mcp",
        help="serve Dominds to an MCP client: start dialogs, answer questions, read answers (needs `dominds serve`)",
        description="An MCP server over the running daemon's API: list_dialogs, list_questions, start_dialog, "
        "tell, answer_question, read_answer. Stdio by default; --http serves streamable HTTP.",
    )
    p.add_argument("--http", action="store_true", help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio")
    p.add_argument("--host", default="127.0.0.1", help="address to bind with --http (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=5668, help="port with --http (default 5668; 0 = any free port, printed)")
    p.add_argument("--no-auth", action="store_true", help="with --http: no token (only allowed on a loopback address)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    # imported here so that other commands do not pay for loading the MCP SDK
    import anyio

    from dominds.cli.mcp_server import build_server

    server = build_server(workspace())
    if not args.http:
        from dominds.mcp.stdio_serve import serve_stdio

        anyio.run(serve_stdio, server)  # answers every request read, even after stdin closes
        return 0
    from dominds.mcp.http_serve import pick_token, serve_http

    token = pick_token(args.no_auth)
    try:
        anyio.run(lambda: serve_http(server, args.host, args.port, token, name="dominds mcp"))
    except KeyboardInterrupt:
        pass
    return 0
