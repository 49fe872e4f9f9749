"""Keeping a long run's memory flat where the C allocator would let it creep.

glibc gives threads that allocate at the same time malloc arenas of their own (up to eight per
core), and an arena keeps what was freed in it for reuse by its threads. umni's worker threads
(images encoded and written, the store's writer) allocate and free image-sized buffers all run
long, so a 20,000-case UmniBench run grew by about 3.7 KB a case and started 17 MB higher than
with two arenas (1.4 KB a case; measured in one run each, 4,000 cases, same machine; no change in
speed). The command line asks for two arenas at its start, before any thread exists; a Python
program running large evaluations can call `limit_malloc_arenas` itself.
"""

from __future__ import annotations

import ctypes
import os
import sys

#: glibc's `mallopt` parameter for the most arenas (malloc.h: M_ARENA_MAX).
_M_ARENA_MAX = -8
#: Arenas umni asks for: the main one and one its threads share.
ARENAS = 2


def limit_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Ask glibc for at most `arenas` malloc arenas; True when it agreed. Nothing is changed on
    other systems and C libraries, nor when the user set ``MALLOC_ARENA_MAX`` (theirs wins, and
    glibc has already read it). Arenas made before the call stay: call it before starting threads."""
    if os.environ.get("MALLOC_ARENA_MAX") or not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (musl has no such knob)
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_ARENA_MAX, arenas))
