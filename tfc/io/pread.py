"""Reading bytes at an offset of an open file into a buffer, in pieces the OS accepts."""

from __future__ import annotations

import os
from typing import Any

__all__ = ["read_at"]

_PIECE = 1 << 30  # one preadv call reads at most this much (some systems cap a read near 2 GiB)


def read_at(fd: int, offset: int, buffer: Any) -> int:
    """Fill `buffer` from byte `offset` of `fd`; returns the bytes read (fewer only at the end
    of the file)."""
    view = memoryview(buffer).cast("B")
    done = 0
    while done < len(view):
        got = os.preadv(fd, [view[done : done + _PIECE]], offset + done)
        if got == 0:
            break
        done += got
    return done
