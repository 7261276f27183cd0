"""`dominds url`, the URL line of `dominds status`, and a token that survives restarts (issue 18, item 1).

The bug: each `dominds serve` made a new token (an open panel then showed "Token required"), and no
command printed the running daemon's URL with its token.
"""

from __future__ import annotations

import json
import stat
import urllib.error
import urllib.request
from pathlib import Path

from test_cli_kit import Daemon, dominds, write_workspace


def _status_code(url: str, token: str) -> int:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_url_prints_the_panel_url_and_the_token_survives_a_restart(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    none = dominds(ws, "url")
    assert none.returncode == 1 and "no daemon is serving" in none.stderr and "dominds serve" in none.stderr

    with Daemon(ws) as first:
        printed = dominds(ws, "url")
        assert printed.returncode == 0, printed.stderr
        assert printed.stdout.strip() == first.url == f"http://127.0.0.1:{first.port}/?auth={first.token}"
        token_file = ws / ".dominds" / "auth-token"
        assert token_file.read_text().strip() == first.token
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        status = dominds(ws, "status")
        assert f"panel: {first.url}" in status.stdout, "`dominds status` shows the URL"
        assert json.loads(dominds(ws, "status", "--json").stdout)["daemon"]["panel"] == first.url
        first.stop()
    with Daemon(ws) as second:
        assert second.token == first.token, "a restart keeps the token (open panels keep working)"

        rotated = dominds(ws, "url", "--rotate-token", "--json")
        assert rotated.returncode == 0, rotated.stderr
        shown = json.loads(rotated.stdout)
        new_token = shown["url"].split("?auth=", 1)[1]
        assert shown["rotated"] and new_token != first.token
        api = f"{second.http}/api/dialogs"
        assert _status_code(api, new_token) == 200, "the running daemon takes the new token at once"
        assert _status_code(api, first.token) == 401
        assert dominds(ws, "url").stdout.strip() == shown["url"], "daemon.json follows the rotation"
        assert dominds(ws, "status").returncode == 0
