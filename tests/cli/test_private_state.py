"""The workspace's state is private: `.dialogs/` and `.dominds/` 0700, their files 0600 (issue 34, item 10)."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path

from test_cli_kit import cli_env, dominds, write_workspace

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")


def modes(root: Path) -> dict[str, int]:
    found = {}
    for top in (root / ".dialogs", root / ".dominds"):
        for path in [top, *top.rglob("*")]:
            if not path.is_symlink():
                found[str(path.relative_to(root))] = stat.S_IMODE(path.stat().st_mode)
    return found


def test_a_run_leaves_no_state_readable_by_other_users(tmp_path: Path) -> None:
    """Bug (issue 34): files were created 0644 and directories 0755: every other local user could read every
    transcript. A workspace an older version created open is closed when it is next used."""
    ws = write_workspace(tmp_path / "ws")
    (ws / ".dialogs" / "run").mkdir(parents=True, exist_ok=True)
    for older in (ws / ".dialogs", ws / ".dialogs" / "run"):
        os.chmod(older, 0o755)  # as an older version left it
    done = dominds(ws, "run", "--agent", "lead", "--taskdoc", "tasks/t.tsk", "hello", env=cli_env())
    assert done.returncode == 0, done.stderr
    found = modes(ws)
    assert any(name.endswith("course-001.jsonl") for name in found) and any(name.endswith("latest.yaml") for name in found)
    assert os.stat(ws / ".dialogs").st_mode & 0o077 == 0 and os.stat(ws / ".dominds").st_mode & 0o077 == 0
    # Every dialog file and directory is private itself; the daemon's caches in `.dominds/` follow the umask
    # behind a directory no other user can enter.
    open_to_others = {name: oct(mode) for name, mode in found.items() if mode & 0o077 and name.startswith(".dialogs")}
    assert not open_to_others, open_to_others


def test_the_user_can_keep_state_shared(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    done = dominds(ws, "run", "--agent", "lead", "--taskdoc", "tasks/t.tsk", "hello", env=cli_env(DOMINDS_PRIVATE_STATE="0"))
    assert done.returncode == 0, done.stderr
    latest = next((ws / ".dialogs" / "run").glob("*/latest.yaml"))
    assert stat.S_IMODE(latest.stat().st_mode) == 0o666 & ~current_umask()


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_an_attached_image_is_as_private_as_the_dialogs_other_files(tmp_path: Path) -> None:
    """Bug (found verifying issue 34, item 10): dialog artifacts (an image attached with ``--image``, pasted in
    the panel, returned by an MCP tool or copied by ``read_picture``) were written 0644 in an ``artifacts/``
    directory made 0755, although every other dialog file is 0600 in 0700 directories."""
    ws = write_workspace(tmp_path / "ws")
    script = ws / ".minds" / "scripted" / "test.yaml"
    script.write_text(script.read_text().replace("responses:\n", "responses:\n- {agent: lead, contains: saved as artifact, response: A pixel.}\n", 1))
    (ws / "shot.png").write_bytes(PNG)
    done = dominds(ws, "run", "--agent", "lead", "--taskdoc", "tasks/t.tsk", "--image", "shot.png", "look", env=cli_env())
    assert done.returncode == 0, done.stderr
    found = modes(ws)
    artifacts = {name: oct(mode) for name, mode in found.items() if "/artifacts" in name}
    assert any(name.endswith(".png") for name in artifacts), found
    open_to_others = {name: mode for name, mode in artifacts.items() if int(mode, 8) & 0o077}
    assert not open_to_others, open_to_others
