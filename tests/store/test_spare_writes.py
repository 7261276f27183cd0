"""``latest.yaml`` is replaced by writing its spare and swapping the two names (``atomic.write_atomic``,
``spare``): no inode allocated or freed per write, and still never a torn or lost version.

Why it exists (issue 21): a replace by temp file and rename allocates an inode and frees one per write;
on ext4 without a journal each allocation scans past every inode freed in the last minutes and each
free trims its block on the device, ~0.5 ms each under load: most of a 100-way fan-out's kernel time.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from killed_writer import kill_writer_once_ready

from dominds.store import atomic, commit
from dominds.store.dialog_store import DialogFiles
from dominds.store.fileio import load_model, save_model
from dominds.store.records import LatestState, RunState

WRITER = r"""
import sys
from pathlib import Path
from dominds.store.dialog_store import DialogFiles
from dominds.store.records import LatestState, RunState
files = DialogFiles(Path(sys.argv[1]))
i = int(sys.argv[2])
while True:
    i += 1
    # sizes on both sides of the spare's limit (one page): the spare and the temp-file path alternate
    size = (i * 397) % 5000
    files.write_latest(LatestState(current_course=i, last_modified="", run_state=RunState(detail=f"{i}:" + "x" * size)))
    if i == int(sys.argv[2]) + 2:
        print("ready", flush=True)
"""


def _version(state: LatestState) -> int:
    """The version a state holds; its detail says the same (a mix of two versions would not)."""
    number, _, filler = state.run_state.detail.partition(":")
    assert int(number) == state.current_course and filler == "x" * len(filler)
    return state.current_course


def test_latest_survives_repeated_sigkill_while_written_through_its_spare(tmp_path: Path) -> None:
    files = DialogFiles(tmp_path)
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    last_seen = 0
    for round_no in range(12):
        kill_writer_once_ready([str(script), str(tmp_path), str(last_seen)], 0.01 + 0.011 * (round_no % 5))
        on_disk = load_model(files.latest_yaml, LatestState)  # the file itself: always whole
        assert on_disk is not None
        read = files.read_latest()  # what a loader reads: the file, whole, so never the spare
        assert read is not None
        version = _version(read)
        assert version == _version(on_disk)
        assert version >= last_seen
        last_seen = version
    assert last_seen > 12, "the writer made progress between kills"
    assert atomic.spare_path(files.latest_yaml).exists(), "the spare path was taken"


def _state(number: int) -> LatestState:
    return LatestState(current_course=number, last_modified="", run_state=RunState(detail=f"{number}:xx"))


def test_a_spare_that_holds_the_last_durable_version_is_not_written_before_its_group_commits(tmp_path: Path) -> None:
    """The second write to a file within one group must not overwrite the version the disk may still
    name as the file (swapped out to the spare by the first write); after the commit it may."""
    files = DialogFiles(tmp_path)
    spare = atomic.spare_path(files.latest_yaml)

    async def scenario() -> None:
        group = commit.enable()
        assert group is not None
        try:
            files.write_latest(_state(1), fresh=True)
            await commit.durable()
            files.write_latest(_state(2))  # swapped: the spare holds version 1, the durable one
            durable_inode = spare.stat().st_ino
            files.write_latest(_state(3))  # same group: a temp file, the spare untouched
            assert spare.stat().st_ino == durable_inode
            assert _version(load_model(spare, LatestState) or _state(0)) == 1
            assert _version(files.read_latest() or _state(0)) == 3
            await commit.durable()
            inodes = {files.latest_yaml.stat().st_ino, spare.stat().st_ino}
            for number in (4, 5, 6):  # one write per group from now on: the same two inodes, reused
                files.write_latest(_state(number))
                await commit.durable()
                assert {files.latest_yaml.stat().st_ino, spare.stat().st_ino} == inodes
                assert _version(files.read_latest() or _state(0)) == number
        finally:
            await commit.disable()

    asyncio.run(scenario())


def _write_raw(path: Path, number: int) -> None:
    state = _state(number)
    state.last_modified = "2026-01-01T10:00:00.000+00:00"
    save_model(path, state)


@pytest.mark.parametrize(
    ("latest", "spare", "expected"),
    [
        (2, 1, 2),  # as written
        (1, 2, 1),  # a kill between the spare's write and the swap: the file, as recovery read it
        (None, 3, 3),  # the file torn by a power cut (the swap reached the disk, its bytes did not)
        (0, 3, 3),  # the file empty: a cut before a new spare's blocks were written (read as missing before)
        (2, None, 2),  # the spare cut mid-write
    ],
)
def test_the_file_is_read_and_its_spare_only_when_the_file_is_torn(
    tmp_path: Path, latest: int | None, spare: int | None, expected: int
) -> None:
    files = DialogFiles(tmp_path)
    for path, number in ((files.latest_yaml, latest), (atomic.spare_path(files.latest_yaml), spare)):
        if number is None:
            path.write_bytes(b"currentCourse: 3\nrunState: {kind: idl")
        elif number == 0:
            path.write_bytes(b"")
        else:
            _write_raw(path, number)
    read = files.read_latest()
    assert read is not None and _version(read) == expected


def test_a_clock_set_back_never_makes_the_replaced_version_the_one_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bug pinned here: the loader chose between ``latest.yaml`` and its spare by ``lastModified``. After
    the clock was set back (an NTP step, a VM resumed), the next write's stamp was earlier than the
    replaced version's, so the dialog was read back one version old: an accepted message, a settled
    run state lost without any crash. A readable ``latest.yaml`` is always the one read."""
    import dominds.store.dialog_store as dialog_store

    stamps = iter(["2026-01-01T10:00:05.000+00:00", "2026-01-01T10:00:09.000+00:00", "2026-01-01T10:00:01.000+00:00"])
    monkeypatch.setattr(dialog_store, "now_iso", lambda: next(stamps))
    files = DialogFiles(tmp_path)
    state = _state(1)
    files.write_latest(state, fresh=True)
    for number in (2, 3):  # the same in-memory state, as a loaded dialog saves it at every turn
        state.current_course = number
        state.run_state = RunState(detail=f"{number}:xx")
        files.write_latest(state)
    read = files.read_latest()
    assert read is not None and _version(read) == 3
    spare = load_model(atomic.spare_path(files.latest_yaml), LatestState)
    assert spare is not None and _version(spare) == 2 and spare.last_modified > read.last_modified


def test_a_hard_linked_spare_is_never_written_over(tmp_path: Path) -> None:
    """A backup made with hard links (``cp -al``, rsnapshot) must keep the bytes it linked."""
    files = DialogFiles(tmp_path / "d")
    files.dir.mkdir()
    files.write_latest(_state(1), fresh=True)
    files.write_latest(_state(2))
    spare = atomic.spare_path(files.latest_yaml)
    backup = tmp_path / "backup.yaml"
    os.link(spare, backup)
    before = backup.read_bytes()
    for number in (3, 4):
        files.write_latest(_state(number))
    assert backup.read_bytes() == before
    assert _version(files.read_latest() or _state(0)) == 4


def test_an_odd_spare_is_left_alone_and_never_blocks(tmp_path: Path) -> None:
    files = DialogFiles(tmp_path)
    files.write_latest(_state(1), fresh=True)
    spare = atomic.spare_path(files.latest_yaml)
    os.mkfifo(spare)  # opening a FIFO to write would wait for a reader
    files.write_latest(_state(2))
    assert _version(files.read_latest() or _state(0)) == 2
    spare.unlink()
    spare.symlink_to(tmp_path / "elsewhere")
    files.write_latest(_state(3))
    assert not (tmp_path / "elsewhere").exists() and _version(files.read_latest() or _state(0)) == 3


def test_where_names_cannot_be_swapped_a_temp_file_replaces_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(atomic, "_exchange", lambda first, second: None)
    monkeypatch.setattr(atomic, "_exchange_works", True)
    files = DialogFiles(tmp_path)
    files.write_latest(_state(1), fresh=True)
    files.write_latest(_state(2))
    assert atomic._exchange_works is False
    files.write_latest(_state(3))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest.yaml"]
    assert _version(files.read_latest() or _state(0)) == 3


def _power_cut_leftover(files: DialogFiles) -> None:
    """What a power cut can leave: the swap reached the disk, the spare's new bytes only in part, so the
    file is torn while the last durable version (version 2) sits under the spare's name."""
    files.latest_yaml.write_bytes(b"currentCourse: 3\nrunState: {kind: idl")
    _write_raw(atomic.spare_path(files.latest_yaml), 2)


def test_a_reader_that_does_not_write_leaves_the_files_as_they_are(tmp_path: Path) -> None:
    files = DialogFiles(tmp_path)
    _power_cut_leftover(files)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert _version(files.read_latest() or _state(0)) == 2
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_the_loader_makes_the_later_spare_the_file_again_before_anything_is_written_over_it(tmp_path: Path) -> None:
    """Bug this holds: after a power cut the loader ran with the spare's version (the file torn), and the next save wrote
    the next version into the spare, in place: over the only copy of the version in use (a second cut
    before that save's commit lost it). Restored, the next save goes over the version that lost."""
    files = DialogFiles(tmp_path)
    spare = atomic.spare_path(files.latest_yaml)
    _power_cut_leftover(files)

    async def scenario() -> None:
        group = commit.enable()
        assert group is not None
        try:
            state = files.read_latest(restore=True)
            assert state is not None and _version(state) == 2
            assert _version(load_model(files.latest_yaml, LatestState) or _state(0)) == 2  # every reader agrees
            in_use = os.open(files.latest_yaml, os.O_RDONLY)  # the inode of the version in use, held open
            try:
                for number in (3, 4):  # the same group: its bytes are never written over
                    state.current_course, state.run_state = number, RunState(detail=f"{number}:xx")
                    files.write_latest(state)  # as the engine saves the state it loaded
                    assert b"2:xx" in os.pread(in_use, 65536, 0)
            finally:
                os.close(in_use)
            assert spare.exists()
            await commit.durable()
        finally:
            await commit.disable()

    asyncio.run(scenario())
    assert _version(files.read_latest() or _state(0)) == 4


def test_a_spare_written_over_in_a_group_reaches_the_device_before_the_swap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bug this holds: a spare's new bytes go over blocks already allocated, which no filesystem orders
    before the swap of the names; a journal committing the swap first (another file's fsync, its timer)
    and a power cut before the group's fsyncs left ``latest.yaml`` naming the version before the last,
    whole: the dialog one committed version back. The bytes are written back before the swap is made."""
    steps: list[str] = []
    real_write_back, real_exchange = atomic._write_back, atomic._exchange

    def write_back(fd: int) -> None:
        steps.append("write back")
        real_write_back(fd)

    def exchange(first: str, second: str) -> bool | None:
        steps.append("swap")
        return real_exchange(first, second)

    monkeypatch.setattr(atomic, "_write_back", write_back)
    monkeypatch.setattr(atomic, "_exchange", exchange)
    monkeypatch.setattr(atomic, "_FSYNC", True)
    files = DialogFiles(tmp_path)

    async def scenario() -> None:
        assert commit.enable() is not None
        try:
            files.write_latest(_state(1), fresh=True)
            await commit.durable()
            files.write_latest(_state(2))  # a new spare: a cut before its bytes leaves the file empty at worst, never read
            await commit.durable()
            assert steps == ["swap"]
            files.write_latest(_state(3))  # the spare written over in place
            assert steps == ["swap", "write back", "swap"]
            await commit.durable()
        finally:
            await commit.disable()

    asyncio.run(scenario())
    assert _version(files.read_latest() or _state(0)) == 3


def test_the_dialog_index_names_the_spare_as_the_writer_does() -> None:
    """``dialog_facts`` names the spare itself (``dominds status`` imports no writer): the two must agree."""
    from dominds.store.dialog_facts import LATEST_SPARE

    assert atomic.spare_path(Path("d") / "latest.yaml").name == LATEST_SPARE
