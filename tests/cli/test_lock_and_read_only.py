"""The workspace lock on real filesystems: matched by device and inode; a read-only workspace is read.

Both need a second filesystem or a read-only one: tmpfs mounts, where the test runs as root (skipped
elsewhere, with the reason).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from test_cli_kit import Daemon, dominds, write_workspace
from tmpfs import tmpfs

from dominds.rtws import Rtws


def test_a_daemon_on_another_filesystem_does_not_hold_this_workspace(tmp_path: Path) -> None:
    """Bug (issue 34): ``lock_holders`` matched ``/proc/locks`` by inode only; inode numbers repeat across
    filesystems, so a daemon serving a workspace on one tmpfs "held" the same-shaped workspace on another:
    ``serve`` refused it, and ``status``/``show`` took its dialogs as driven."""
    with tmpfs(tmp_path / "one", "8m") as one, tmpfs(tmp_path / "two", "8m") as two:
        first, second = Rtws(write_workspace(one / "ws")), Rtws(write_workspace(two / "ws"))
        for rtws in (first, second):
            rtws.ensure_layout()
            rtws.lock_path.touch()
        assert os.stat(first.lock_path).st_ino == os.stat(second.lock_path).st_ino, "the premise: the same inode"
        assert os.stat(first.lock_path).st_dev != os.stat(second.lock_path).st_dev
        with Daemon(first.root):
            status = dominds(second.root, "status")
            assert status.returncode == 0 and "no daemon running" in status.stdout, status.stdout + status.stderr
            with Daemon(second.root) as served_too:
                assert served_too.proc.poll() is None, "the second workspace is served"
            # The lock of the workspace a daemon does serve is still seen, by its device and inode.
            refused = subprocess.run(
                [*dominds_argv(), "-C", str(first.root), "serve", "--port", "0"], capture_output=True, text=True, timeout=60
            )
            assert refused.returncode != 0 and "already served" in refused.stderr


def dominds_argv() -> list[str]:
    import sys

    return [sys.executable, "-m", "dominds"]


def test_status_and_show_read_a_read_only_workspace(tmp_path: Path) -> None:
    """Bug (issue 34): `dominds status` failed on a read-only workspace: it opened (creating) the lock file
    for writing ("Read-only file system")."""
    with tmpfs(tmp_path / "ro", "8m") as mount:
        ws = write_workspace(mount / "ws")
        created = dominds(ws, "new", "--agent", "lead", "--taskdoc", "tasks/t.tsk", "hello")
        assert created.returncode == 0, created.stderr
        root_id = created.stdout.split()[3]
        for leftover in (ws / ".dialogs" / ".rtws.lock", ws / ".dominds" / "cache"):
            subprocess.run(["rm", "-rf", str(leftover)], check=True)
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        status = dominds(ws, "status")
        assert status.returncode == 0 and root_id in status.stdout and "hello" in status.stdout, status.stderr
        shown = dominds(ws, "show", root_id)
        assert shown.returncode == 0 and root_id in shown.stdout, shown.stderr
        assert not (ws / ".dialogs" / ".rtws.lock").exists(), "a reader created nothing"
