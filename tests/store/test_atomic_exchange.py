"""How ``store/atomic.py`` reads the kernel's answer to ``renameat2(RENAME_EXCHANGE)``, with real syscalls.

The mutation audit (issue 38) left the error classification untested: every mutant of it survived. The
classification decides what a write does next: swapped (True), the second name missing so a plain rename
follows (False), the swap unsupported here so a temp file and ``os.replace`` follow (None), or a real
error the caller must report (``OSError``). Each test below fails on one class of mutant: ENOENT read as
"unsupported" or as "missing" when it is the FIRST name that is missing, EXDEV read as an error, and an
unrelated error (ENOTDIR) swallowed as "unsupported".
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from dominds.store import atomic

SHM = Path("/dev/shm")


def _supported() -> bool:
    return atomic.libc_function("renameat2", ("c_int", "c_char_p", "c_int", "c_char_p", "c_uint")) is not None


pytestmark = pytest.mark.skipif(not _supported(), reason="this libc has no renameat2")


def test_two_existing_names_are_swapped(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.write_text("A")
    second.write_text("B")
    assert atomic._exchange(str(first), str(second)) is True
    assert (first.read_text(), second.read_text()) == ("B", "A")


def test_a_missing_second_name_is_reported_missing_not_unsupported(tmp_path: Path) -> None:
    first = tmp_path / "spare"
    first.write_text("A")
    assert atomic._exchange(str(first), str(tmp_path / "absent")) is False
    assert first.read_text() == "A", "nothing moved"


def test_a_missing_first_name_is_an_error_not_a_missing_second(tmp_path: Path) -> None:
    second = tmp_path / "file"
    second.write_text("B")
    with pytest.raises(OSError) as raised:
        atomic._exchange(str(tmp_path / "absent"), str(second))
    assert raised.value.errno == errno.ENOENT and raised.value.filename == str(second)
    assert second.read_text() == "B"


def test_an_unrelated_error_is_raised_with_its_code_not_read_as_unsupported(tmp_path: Path) -> None:
    first = tmp_path / "a"
    first.write_text("A")
    a_file = tmp_path / "plain"
    a_file.write_text("x")
    with pytest.raises(OSError) as raised:
        atomic._exchange(str(first), str(a_file / "under-a-file"))
    assert raised.value.errno == errno.ENOTDIR


@pytest.mark.skipif(not SHM.is_dir() or not os.access(SHM, os.W_OK), reason="no writable /dev/shm")
def test_names_on_two_file_systems_are_unsupported_so_the_caller_falls_back(tmp_path: Path) -> None:
    if os.stat(SHM).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("/dev/shm and the temp directory are one file system here")
    first = tmp_path / "a"
    first.write_text("A")
    other = SHM / f"dominds-exchange-{os.getpid()}"
    other.write_text("B")
    try:
        assert atomic._exchange(str(first), str(other)) is None  # EXDEV: a temp file and os.replace follow
        assert (first.read_text(), other.read_text()) == ("A", "B")
    finally:
        other.unlink()
