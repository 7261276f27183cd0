"""Hand edits picked up live: ``.minds/`` and Taskdoc packages (``*.tsk/``) watched with watchfiles.

What is watched: ``.minds/`` and each Taskdoc package found by ``discover_taskdocs`` — not the whole
workspace. inotify needs one watch per directory, and ``.dialogs/`` alone has one per dialog (tens of
thousands in a big workspace) and is written on every turn; ``.git``, ``.venv`` and ``node_modules``
are no better. A package created later is picked up by a rescan every ``rescan_seconds`` or when
``rescan_soon()`` is called (the daemon calls it when a dialog is created).

Editors save in bursts and through temp files (write ``.x.swp``/``x~``/``x.tmp``, then rename over the
target). Temp and backup names are filtered out, and watchfiles groups the changes of a burst until
``debounce_ms`` pass without a new one, so one save yields one callback per package.
``.minds/memory/`` is left out on purpose: agents write their memories there all the time, and those are
not configuration.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Callable, Iterable
from pathlib import Path

log = logging.getLogger("dominds.watch")

MINDS_DIR = ".minds"
MINDS_NOT_CONFIG = frozenset({"memory"})
"""First-level directories of ``.minds/`` whose changes are not configuration."""
_TEMP_NAME = re.compile(
    r"""^(\..*\.tmp|.*~|.*\.sw[a-z]|\.\#.*|\#.*\#|4913|.*___jb_(tmp|old)___|\.DS_Store|.*\.crswap|.*\.part|\.goutputstream-.*)$"""
)
"""Temp and backup files of our own atomic writes and of common editors (vim, emacs, JetBrains, gedit)."""


def is_temp_name(name: str) -> bool:
    return bool(_TEMP_NAME.match(name))


def classify(root: Path, paths: Iterable[str]) -> tuple[list[str], list[str]]:
    """Split changed absolute paths into (changed ``.minds`` files, changed Taskdoc packages), rtws-relative."""
    minds: set[str] = set()
    taskdocs: set[str] = set()
    for raw in paths:
        try:
            rel = Path(raw).relative_to(root)
        except ValueError:
            continue
        parts = rel.parts
        if not parts or is_temp_name(parts[-1]) or "__pycache__" in parts:
            continue
        if parts[0] == MINDS_DIR:
            if len(parts) > 1 and parts[1] in MINDS_NOT_CONFIG:
                continue
            minds.add(rel.as_posix())
            continue
        for index, part in enumerate(parts):
            if part.endswith(".tsk") and part != ".tsk":
                taskdocs.add("/".join(parts[: index + 1]))
                break
    return sorted(minds), sorted(taskdocs)


class WorkspaceWatcher:
    """Calls ``on_minds_changed(paths)`` and ``on_taskdoc_changed(taskdoc_path)`` once per burst of edits."""

    def __init__(
        self,
        root: Path,
        *,
        on_minds_changed: Callable[[list[str]], None],
        on_taskdoc_changed: Callable[[str], None],
        debounce_ms: int = 100,
        rescan_seconds: float = 10.0,
    ) -> None:
        self.root = root.resolve()
        self.on_minds_changed = on_minds_changed
        self.on_taskdoc_changed = on_taskdoc_changed
        self.debounce_ms = debounce_ms
        self.rescan_seconds = rescan_seconds
        self.watching: list[Path] = []
        """The directories watched right now."""
        self.ready = asyncio.Event()
        """Set once the first set of watches is in place (tests wait for it before editing)."""
        self.in_place: list[Path] = []
        """The directories whose watches are in place now (``watching`` once the new watches answer)."""
        self._rescan = asyncio.Event()

    def watched_paths(self) -> list[Path]:
        from dominds.taskdoc_discovery import discover_taskdocs

        paths = [self.root / MINDS_DIR] if (self.root / MINDS_DIR).is_dir() else []
        paths += [self.root / rel for rel in discover_taskdocs(self.root)]
        return paths

    def rescan_soon(self) -> None:
        """Look for new Taskdoc packages now (a dialog may name one created after the last scan)."""
        self._rescan.set()

    async def run(self) -> None:
        """Watch until cancelled. A failing watch is logged and retried at the next rescan."""
        while True:
            try:
                paths = await asyncio.to_thread(self.watched_paths)
            except Exception as exc:  # e.g. a directory unreadable for a moment: watched again at the next rescan
                log.warning("listing what to watch in %s failed: %s", self.root, exc)
                self.ready.set()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._rescan.wait(), self.rescan_seconds)
                self._rescan.clear()
                continue
            self.watching = paths
            restart = asyncio.Event()
            rescanner = asyncio.create_task(self._restart_when_paths_change(paths, restart))
            try:
                if paths:
                    await self._watch(paths, restart)
                else:
                    self.in_place = paths
                    self.ready.set()
                    await restart.wait()
            except (OSError, RuntimeError) as exc:  # e.g. the inotify watch limit; pickup resumes later
                log.warning("watching %s failed: %s", self.root, exc)
                self.ready.set()
                await restart.wait()
            finally:
                rescanner.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await rescanner

    async def _watch(self, paths: list[Path], restart: asyncio.Event) -> None:
        import watchfiles

        def wanted(change: watchfiles.Change, path: str) -> bool:
            return not is_temp_name(Path(path).name)

        watcher = watchfiles.awatch(
            *paths,
            watch_filter=wanted,
            step=self.debounce_ms,
            debounce=max(1600, self.debounce_ms * 4),
            stop_event=restart,
            rust_timeout=200,  # an empty yield after 200 ms tells that the watches are in place
            yield_on_timeout=True,
        )
        async for changes in watcher:
            # the first (possibly empty) yield comes once the watches are in place
            self.in_place = paths
            self.ready.set()
            if changes:
                self.dispatch(path for _change, path in changes)

    def dispatch(self, paths: Iterable[str]) -> None:
        minds, taskdocs = classify(self.root, paths)
        if minds:
            self._call(self.on_minds_changed, minds)
        for taskdoc in taskdocs:
            self._call(self.on_taskdoc_changed, taskdoc)
        if any(Path(p).name == MINDS_DIR for p in minds) or taskdocs:
            self.rescan_soon()  # a package dir may have been replaced (new inode): watch it afresh

    @staticmethod
    def _call(callback: Callable[..., None], argument: object) -> None:
        try:
            callback(argument)
        except Exception:  # one bad listener must not stop the pickup of later edits
            log.exception("a watch callback failed")

    async def _restart_when_paths_change(self, paths: list[Path], restart: asyncio.Event) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._rescan.wait(), self.rescan_seconds)
            self._rescan.clear()
            try:
                now = await asyncio.to_thread(self.watched_paths)
            except Exception as exc:  # the next rescan tries again; the watches in place stay
                log.warning("listing what to watch in %s failed: %s", self.root, exc)
                continue
            if now != paths:
                restart.set()
                return
