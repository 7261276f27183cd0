"""Typed store errors. Each names the file and the problem, so callers never show a bare traceback."""

from __future__ import annotations

from pathlib import Path


class StoreError(Exception):
    """Base class for every error raised by the store."""


class CorruptFileError(StoreError):
    """A state or course file exists but cannot be parsed or does not match its record type."""

    def __init__(self, path: Path, problem: str, *, line: int | None = None) -> None:
        self.path = path
        self.problem = problem
        self.line = line
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {problem}")


class UnreadableFileError(StoreError):
    """A file could not be read (permissions, I/O error)."""

    def __init__(self, path: Path, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


class WriteFailedError(StoreError):
    """A write did not reach the disk (disk full, permissions). Nothing was replaced."""

    def __init__(self, path: Path, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"cannot write {path}: {problem}")


STORAGE_PAUSE = "storage failure (paused until the disk takes writes again)"


def storage_pause(exc: StoreError) -> str:
    """What a dialog paused by a refused write shows until the disk takes writes again (its ``load_error``);
    the scheduler and recovery pause dialogs, ``driver/storage_watch.py`` resumes them."""
    return f"{STORAGE_PAUSE}: {exc}"


def is_storage_pause(load_error: str | None) -> bool:
    """Is this ``load_error`` a pause the storage watcher ends (not a dialog that failed to load)?"""
    return load_error is not None and load_error.startswith(STORAGE_PAUSE)


class DialogNotFoundError(StoreError):
    """No dialog with that id exists in the workspace."""
