"""`dominds show DIALOG --request GENSEQ`: the request generation GENSEQ sent to its provider.

The same view as the panel's Request view and ``GET /api/dialogs/{selfId}/requests/{genseq}``
(``driver/request_view.py``), read from the files (request logs and course files only grow, so no lock
is needed and a running daemon is not). ``--raw`` prints the body exactly as it was sent, byte for byte;
``--json`` the whole view as JSON; by default a summary, then the body indented.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from dominds.cli.common import CliError, workspace


def show_request(args: argparse.Namespace, self_id: str) -> int:
    from dominds.cli.offline import locate_dialog
    from dominds.driver.request_view import RequestNotFound, request_view
    from dominds.driver.usage import catalog_in_use
    from dominds.store.dialog_store import DialogStore
    from dominds.store.errors import StoreError

    if args.follow or args.all or args.before is not None:
        raise CliError("--request shows one generation's request; leave out --follow/--all/--before")
    if args.request < 1:
        raise CliError("--request takes a generation number (1 or more: the #N on a reply)")
    rtws = workspace()
    status, root_id = locate_dialog(rtws, self_id)
    files = DialogStore(rtws).files(status, root_id, self_id)
    try:
        shown = request_view(files, args.request, args.course, catalog_in_use(rtws))
    except RequestNotFound as exc:
        raise CliError(str(exc)) from exc
    except StoreError as exc:
        raise CliError(str(exc)) from exc
    if args.raw:
        sys.stdout.flush()
        sys.stdout.buffer.write(shown.body)
        sys.stdout.buffer.flush()
        return 0
    if args.json:
        json.dump(shown.view, sys.stdout, ensure_ascii=False, indent=1)
        sys.stdout.write("\n")
        return 0
    for line in summary_lines(shown.view):
        print(line)
    body = shown.view.get("body")
    print(json.dumps(body, ensure_ascii=False, indent=2) if body is not None else shown.body.decode("utf-8", "replace"))
    return 0


def _ms(value: Any) -> str:
    if not isinstance(value, int):
        return "-"
    return f"{value} ms" if value < 1000 else f"{value / 1000:.1f} s"


def summary_lines(view: dict[str, Any]) -> list[str]:
    """The figures above the body (the panel's Request view shows the same)."""
    attempts = int(view.get("attempts") or 1)
    lines = [
        f"generation #{view['genseq']} of course {view['course']}: {view['provider']}/{view['model']} ({view['apiType']})",
        f"  {view['method']} {view['url']}  {view['size']} bytes  sha256 {view['sha256'][:16]}…",
        f"  {attempts} attempt{'s' if attempts != 1 else ''} ({attempts - 1} retr{'ies' if attempts != 2 else 'y'})  "
        f"first output {_ms(view.get('firstOutputMs'))}  total {_ms(view.get('totalMs'))}",
    ]
    generation = view.get("generation") or {}
    usage = generation.get("usage")
    if generation:
        figures = f"  ended {generation.get('status')}"
        if generation.get("finishReason"):
            figures += f" ({generation['finishReason']})"
        if usage:
            figures += (
                f"  tokens: {usage['inputTokens']} in, {usage['cacheReadTokens']} cache read, "
                f"{usage['cacheWriteTokens']} cache write, {usage['outputTokens']} out"
            )
        if generation.get("costText"):
            figures += f"  cost {generation['costText']}"
        lines.append(figures)
    return lines
