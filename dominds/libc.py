"""Functions of the C library that the standard library does not wrap (glibc's ``renameat2``,
``sync_file_range``, ``malloc_trim``), each looked up once, on first use: ``ctypes`` alone costs
0.3 MiB, and the start-up and ``dominds status`` never need it."""

from __future__ import annotations

from functools import cache
from typing import Any


@cache
def libc_function(name: str, argtypes: tuple[str, ...], restype: str = "c_int") -> Any | None:
    """The C library's ``name``, its argument and result types named as ``ctypes`` names them
    (``"c_int"``…), keeping ``errno`` for ``libc_errno``; None where the library has no such function
    (musl, macOS, an old glibc)."""
    import ctypes

    try:
        function = getattr(ctypes.CDLL(None, use_errno=True), name)
    except (AttributeError, OSError):
        return None
    function.argtypes = tuple(getattr(ctypes, type_name) for type_name in argtypes)
    function.restype = getattr(ctypes, restype)
    return function


def libc_errno() -> int:
    """``errno`` as the last call of a ``libc_function`` left it."""
    import ctypes

    return ctypes.get_errno()
