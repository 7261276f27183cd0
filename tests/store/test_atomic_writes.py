"""``write_atomic``'s own promises, read on disk: exact modes, no descriptor left open, no temp file left
behind a refused rename, and the spare used up to its exact size limit.

Each test holds a mutant the module-wide sample of ``store/atomic.py`` (issue 38, round 3) left alive:
the ``os.chmod`` after the temp file's write removed, an ``os.close`` removed (a descriptor leaked per
write: a daemon rewriting ``latest.yaml`` at every turn runs out of them), the temp file's unlink after
a failed rename removed, ``len(data) <= SPARE_MAX_BYTES`` made ``<``, the crash harness's ``swap`` and
restore steps removed, the restore's directory fsync removed, ``fdatasync`` called after a successful
``sync_file_range``, and ``write_fresh``'s fsync made or skipped regardless of the group.
"""

from __future__ import annotations

import asyncio
import os
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dominds.store import atomic, commit
from dominds.store.atomic import SPARE_MAX_BYTES, spare_path, write_atomic
from dominds.store.errors import WriteFailedError


def _open_descriptors() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


@pytest.fixture
def strict_umask() -> Iterator[None]:
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)


def test_an_explicit_mode_is_exact_whatever_the_umask(tmp_path: Path, strict_umask: None) -> None:
    target = tmp_path / "shared.json"
    write_atomic(target, "{}", mode=0o644)
    assert stat.S_IMODE(target.stat().st_mode) == 0o644, "the umask must not narrow an explicit mode"
    write_atomic(target, "{}", mode=0o600)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_no_descriptor_is_left_open_by_a_write_through_a_temp_file_or_a_spare(tmp_path: Path) -> None:
    target = tmp_path / "latest.yaml"
    write_atomic(target, "v: 0\n")  # warm up: imports and libc look-ups open what they open once
    write_atomic(target, "v: 0\n", spare=True)
    write_atomic(target, "v: 0\n", spare=True)
    before = _open_descriptors()
    for number in range(1, 6):
        write_atomic(tmp_path / "state.yaml", f"v: {number}\n")  # temp file and rename
        write_atomic(target, f"v: {number}\n", spare=True)  # written over the spare in place, then swapped
        write_atomic(tmp_path / f"new-{number}.yaml", "v: 1\n", spare=True)  # a spare created, then renamed
    assert _open_descriptors() == before
    assert target.read_text() == "v: 5\n" and spare_path(target).read_text() == "v: 4\n"


def test_a_refused_rename_leaves_no_temp_file_behind(tmp_path: Path) -> None:
    target = tmp_path / "latest.yaml"
    target.mkdir()
    (target / "keeps-it-non-empty").write_text("x")
    with pytest.raises(WriteFailedError) as raised:
        write_atomic(target, "v: 1\n")
    assert raised.value.path == target
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest.yaml"], "the temp file is removed"


@pytest.mark.skipif(not atomic._exchange_works, reason="this system cannot swap two names")
def test_a_version_of_exactly_the_spare_limit_is_still_written_through_the_spare(tmp_path: Path) -> None:
    target = tmp_path / "latest.yaml"
    first, second = b"a" * SPARE_MAX_BYTES, b"b" * SPARE_MAX_BYTES
    write_atomic(target, first, spare=True)
    write_atomic(target, second, spare=True)
    assert target.read_bytes() == second
    assert spare_path(target).read_bytes() == first, "the replaced version is kept as the spare"
    write_atomic(target, b"c" * (SPARE_MAX_BYTES + 1), spare=True)  # one byte more: a temp file
    assert spare_path(target).read_bytes() == first, "a larger version never touches the spare"


WRITER = r"""
import sys
from pathlib import Path
from dominds.store import atomic
target = Path(sys.argv[1])
for number in (1, 2, 3):
    atomic.write_atomic(target, f"v: {number}\n", spare=True)
if sys.argv[2] == "restore":
    target.write_text("v: torn")  # what a power cut can leave: the swap durable, the bytes not
    atomic.restore_spare(target)
"""


def _run_killed_at(step: int, target: Path, then: str) -> int:
    env = {**os.environ, "DOMINDS_CRASH_AT": str(step), "DOMINDS_FSYNC": "1"}
    return subprocess.run([sys.executable, "-c", WRITER, str(target), then], env=env, capture_output=True, timeout=60).returncode


@pytest.mark.skipif(not atomic._exchange_works, reason="this system cannot swap two names")
def test_the_crash_harness_stops_a_spare_write_between_its_bytes_and_the_swap(tmp_path: Path) -> None:
    """Steps of three spare writes: (replace, swap) each. Killed right before the third swap, the file
    still holds the second version whole and the spare the third: the point the SIGKILL sweeps of
    ``DOMINDS_CRASH_AT`` must reach (the ``swap`` step removed, nothing could stop there)."""
    target = tmp_path / "latest.yaml"
    assert _run_killed_at(6, target, "") == -signal.SIGKILL
    assert target.read_text() == "v: 2\n" and spare_path(target).read_text() == "v: 3\n"


@pytest.mark.skipif(not atomic._exchange_works, reason="this system cannot swap two names")
def test_the_crash_harness_stops_a_restore_of_the_spare_before_it_is_made(tmp_path: Path) -> None:
    target = tmp_path / "latest.yaml"
    assert _run_killed_at(7, target, "restore") == -signal.SIGKILL, "the restore is a durable step"
    assert target.read_text() == "v: torn" and spare_path(target).read_text() == "v: 2\n"
    assert _run_killed_at(0, tmp_path / "other.yaml", "restore") == 0
    assert (tmp_path / "other.yaml").read_text() == "v: 2\n", "restored: the spare's version is the file again"


def test_a_restored_spare_is_durable_when_the_restore_returns(tmp_path: Path, synced: list[str]) -> None:
    """Outside a group the restore's new directory entries are fsynced before it returns (a power cut
    right after would otherwise bring the torn file back under its name)."""
    target = tmp_path / "latest.yaml"
    write_atomic(target, "v: 1\n", spare=True)
    write_atomic(target, "v: 2\n", spare=True)
    target.write_text("v: torn")
    synced.clear()  # only the restore's fsyncs
    atomic.restore_spare(target)
    assert target.read_text() == "v: 1\n"
    assert synced == [str(tmp_path)]


@pytest.mark.skipif(
    atomic.libc_function("sync_file_range", ("c_int", "c_longlong", "c_longlong", "c_uint")) is None,
    reason="this libc has no sync_file_range",
)
def test_a_spare_written_back_in_a_group_costs_no_cache_flush(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Within a group a spare written over in place is written back with ``sync_file_range`` (no flush of
    the device's cache, ~0.1 ms); ``fdatasync`` is only the fallback where that call is missing or fails."""
    flushed: list[int] = []
    real = os.fdatasync

    def fdatasync(fd: int) -> None:
        flushed.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fdatasync", fdatasync)
    monkeypatch.setattr(atomic, "_FSYNC", True)
    target = tmp_path / "latest.yaml"

    async def scenario() -> None:
        assert commit.enable() is not None
        try:
            for number in range(1, 5):
                write_atomic(target, f"v: {number}\n", spare=True)
                await commit.durable()
        finally:
            await commit.disable()

    asyncio.run(scenario())
    assert target.read_text() == "v: 4\n" and spare_path(target).read_text() == "v: 3\n"
    assert flushed == []


def test_a_fresh_file_is_fsynced_as_written_outside_a_group_and_with_its_directory_within_one(
    tmp_path: Path, synced: list[str]
) -> None:
    """``write_fresh`` (a dialog's first files, in a staging directory): outside a group the bytes are
    fsynced before it returns; within one nothing is fsynced until ``renamed_into_place`` hands the files to
    the group, which then fsyncs each once with the directories."""
    alone = tmp_path / "alone"
    alone.mkdir()
    atomic.write_fresh(alone / "course-001.jsonl", "{}\n")
    assert synced == [str(alone / "course-001.jsonl")]
    synced.clear()
    staging = tmp_path / ".staging"
    staging.mkdir()

    async def scenario() -> None:
        assert commit.enable() is not None
        try:
            atomic.write_fresh(staging / "course-001.jsonl", "{}\n")
            assert synced == [], "within a group nothing is fsynced while it is written"
            staging.rename(tmp_path / "dialog")
            atomic.renamed_into_place(tmp_path / "dialog", ["course-001.jsonl"])
            await commit.durable()
        finally:
            await commit.disable()

    asyncio.run(scenario())
    assert sorted(synced) == sorted([str(tmp_path / "dialog" / "course-001.jsonl"), str(tmp_path / "dialog"), str(tmp_path)])


def test_a_removal_is_durable_when_it_returns(tmp_path: Path, synced: list[str]) -> None:
    """Outside a group ``remove_file`` fsyncs the directory before it returns (a drained queue's log
    removed, then a power cut: the log must not come back with prompts already taken). Survivor of the
    second sample: the directory fsync removed, every other test green."""
    gone = tmp_path / "queue.jsonl"
    gone.write_text("{}\n")
    atomic.remove_file(gone)
    assert not gone.exists() and synced == [str(tmp_path)]
    atomic.remove_file(gone)  # already gone: nothing to make durable
    assert synced == [str(tmp_path)]
