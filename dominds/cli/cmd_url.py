"""`dominds url`: the running daemon's panel URL with its access token (and token rotation).

The token is kept in ``.dominds/auth-token`` (mode 0600) and survives restarts, so a printed URL, an
open panel and its session cookie stay valid until the token is rotated on purpose. A rotation takes
effect in a running daemon at its next request (it re-reads the file) and ``.dialogs/daemon.json`` is
updated, so the other commands keep reaching the daemon.
"""

from __future__ import annotations

import argparse
import json
import sys

from dominds.cli.common import CliError, command_name, workspace
from dominds.rtws import Rtws

EPILOG = """\
examples:
  dominds url                    print the panel URL (open it in a browser)
  dominds url --rotate-token     a new token: every open panel must be opened again with the new URL
  dominds url --json
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "url",
        help="print the web panel's URL with its access token",
        description="Print the URL of the web panel of the daemon serving this workspace, with its access "
        "token (`?auth=`). The token is kept in .dominds/auth-token across restarts; --rotate-token replaces "
        "it (panels opened with the old one are asked for the new URL).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--rotate-token", action="store_true", help="replace the access token with a new one")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_url)


def _url(args: argparse.Namespace) -> int:
    from dominds.cli.client import find_daemon
    from dominds.server.auth import rotate_token
    from dominds.server.run import panel_url

    rtws = workspace()
    daemon = find_daemon(rtws)
    rotated = False
    token = daemon.token if daemon is not None else None
    if args.rotate_token:
        if daemon is not None and daemon.token is None:
            raise CliError("the daemon runs with --no-auth: there is no token to rotate")
        token = rotate_token(rtws.token_path)
        rotated = True
        if daemon is not None:
            _update_daemon_json(rtws, token, panel_url(daemon.host, daemon.port, token))
    if daemon is None:
        if rotated:
            print(f"New token saved in {rtws.relpath(rtws.token_path)}; the next `{command_name()} serve` uses it.")
            return 0
        raise CliError(f"no daemon is serving {rtws.root}; start one with `{command_name()} serve`")
    url = panel_url(daemon.host, daemon.port, token)
    if args.json:
        sys.stdout.write(json.dumps({"url": url, "pid": daemon.pid, "port": daemon.port, "rotated": rotated}) + "\n")
    else:
        print(url)
        if rotated:
            print("The token was rotated: panels opened with the old one ask for this URL.", file=sys.stderr)
    return 0


def _update_daemon_json(rtws: Rtws, token: str, url: str) -> None:
    """Keep ``daemon.json`` naming the token in force (other commands authenticate with it)."""
    from dominds.store.atomic import write_atomic

    try:
        raw = json.loads(rtws.daemon_json.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if isinstance(raw, dict):
        raw.update(token=token, url=url)
        write_atomic(rtws.daemon_json, json.dumps(raw, indent=2) + "\n", mode=0o600)
