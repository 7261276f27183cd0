"""Fixtures of the store's tests."""

from __future__ import annotations

import os

import pytest

from dominds.store import atomic


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths fsynced from now on, in order (every fsync on, whatever the suite set)."""
    paths: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        paths.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(atomic, "_FSYNC", True)
    return paths
