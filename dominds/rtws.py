"""The runtime workspace (rtws): where `.minds/`, `.dialogs/` and Taskdoc packages live."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

DIALOG_STATUSES = ("run", "done", "archive")


class RtwsNotFound(Exception):
    """No workspace was found at or above the given directory."""


@dataclass(frozen=True)
class Rtws:
    """Paths of one workspace. All paths are absolute (each computed once: the driver asks for some at
    every generation)."""

    root: Path

    @cached_property
    def minds_dir(self) -> Path:
        return self.root / ".minds"

    @cached_property
    def team_yaml(self) -> Path:
        return self.minds_dir / "team.yaml"

    @cached_property
    def llm_yaml(self) -> Path:
        return self.minds_dir / "llm.yaml"

    @cached_property
    def mcp_yaml(self) -> Path:
        return self.minds_dir / "mcp.yaml"

    @cached_property
    def dialogs_dir(self) -> Path:
        return self.root / ".dialogs"

    def status_dir(self, status: str) -> Path:
        if status == "run":
            return self.run_dir
        if status not in DIALOG_STATUSES:
            raise ValueError(f"unknown dialog status {status!r}; expected one of {DIALOG_STATUSES}")
        return self.dialogs_dir / status

    @cached_property
    def run_dir(self) -> Path:
        return self.dialogs_dir / "run"

    @cached_property
    def done_dir(self) -> Path:
        return self.dialogs_dir / "done"

    @cached_property
    def archive_dir(self) -> Path:
        return self.dialogs_dir / "archive"

    @cached_property
    def lock_path(self) -> Path:
        """The lock file held by the daemon, or by a CLI command that writes without one."""
        return self.dialogs_dir / ".rtws.lock"

    @cached_property
    def daemon_json(self) -> Path:
        return self.dialogs_dir / "daemon.json"

    @cached_property
    def token_path(self) -> Path:
        """The daemon's access token (mode 0600), kept across restarts; see ``server/auth.py``."""
        return self.state_dir / "auth-token"

    @cached_property
    def cache_dir(self) -> Path:
        """What the daemon derives from other files to go faster (the dialog index, the kept prices):
        nothing in it is the only copy of anything, and it may be deleted at any time."""
        return self.state_dir / "cache"

    @cached_property
    def state_dir(self) -> Path:
        """Runtime state that is not a dialog (workflow sessions, caches)."""
        return self.root / ".dominds"

    def ensure_layout(self) -> None:
        """``.dialogs/`` with its status directories, and ``.dominds/``: private (``STATE_DIR_MODE``), and
        made so when an older version created them open to everyone (transcripts, the access token)."""
        for directory in (self.dialogs_dir, self.state_dir, *(self.status_dir(status) for status in DIALOG_STATUSES)):
            try:
                directory.mkdir(mode=STATE_DIR_MODE, parents=True)
            except FileExistsError:
                if PRIVATE_STATE and not directory.is_symlink() and directory.stat().st_mode & 0o077:
                    with contextlib.suppress(PermissionError):  # another user's workspace: theirs to set
                        os.chmod(directory, STATE_DIR_MODE)
        for directory in (self.dialogs_dir, *(self.status_dir(status) for status in DIALOG_STATUSES)):
            if directory.is_symlink():
                raise SymlinkedStorageError(directory)

    def relpath(self, path: Path) -> str:
        return path.resolve().relative_to(self.root).as_posix()


PRIVATE_STATE = os.environ.get("DOMINDS_PRIVATE_STATE", "1") != "0"
"""The workspace's state (``.dialogs/``, ``.dominds/``: transcripts, tokens, caches) is readable by its
owner only, unless ``DOMINDS_PRIVATE_STATE=0`` (then files and directories follow the umask, as the
workspace's own files always do)."""
STATE_FILE_MODE = 0o600 if PRIVATE_STATE else 0o644
STATE_DIR_MODE = 0o700 if PRIVATE_STATE else 0o777

DEMO_MARKER = Path(".dominds") / "demo.json"
"""Marks the demo workspace of ``dominds serve --demo`` (``cli/demo.py`` writes it)."""


def default_demo_dir() -> Path:
    """Where ``dominds serve --demo`` keeps its workspace: ``$XDG_DATA_HOME/dominds/demo``, with the XDG
    default ``~/.local/share`` when the variable is unset or not an absolute path."""
    data_home = os.environ.get("XDG_DATA_HOME", "")
    base = Path(data_home) if data_home and os.path.isabs(data_home) else Path.home() / ".local" / "share"
    return base / "dominds" / "demo"


def is_demo_workspace(path: Path) -> bool:
    return (path / DEMO_MARKER).is_file()


def is_rtws(path: Path) -> bool:
    return (path / ".minds").is_dir() or (path / ".dialogs").is_dir()


def find_rtws(start: Path | None = None, *, must_exist: bool = True) -> Rtws:
    """Find the workspace at ``start`` (default: cwd) or the nearest parent that has one.

    With ``must_exist=False`` the start directory itself is returned when nothing is found.
    """
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if is_rtws(candidate):
            return Rtws(candidate)
    if must_exist:
        raise RtwsNotFound(
            f"no Dominds workspace at or above {here} (no .minds/ or .dialogs/)"
        )
    return Rtws(here)


class SymlinkedStorageError(Exception):
    """``.dialogs/`` or one of its status directories is a symbolic link. Dialog storage is never followed
    through links: every dialog written there would land wherever the link points, outside the workspace."""

    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__(
            f"{path} is a symbolic link; dialog storage is never followed through links (its writes would go "
            "outside the workspace). Replace the link with the directory it points to."
        )
