"""Atomic file writes: readers see the old file or the whole new one, even after a crash."""

from __future__ import annotations

import errno
import os
import secrets
from collections.abc import Iterable
from typing import Any

__all__ = ["write_file_atomically"]

_WRITE_CHUNK = 1 << 20  # bounded writes: some platforms refuse single writes above 2 GiB


def _write_all(fd: int, data: Any) -> None:
    view = memoryview(data).cast("B")
    while view:
        written = os.write(fd, view[:_WRITE_CHUNK])
        view = view[written:]


def _fsync_directory(directory: str) -> None:
    """Make a rename durable: the directory entry lives in the directory's own blocks."""
    if not hasattr(os, "O_DIRECTORY"):
        return  # Windows: no directory handles to sync; the rename itself is atomic
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    except OSError as e:  # some file systems cannot sync directories; the rename stands
        if e.errno not in (errno.EINVAL, errno.EOPNOTSUPP):
            raise
    finally:
        os.close(fd)


def write_file_atomically(path: str | os.PathLike, chunks: Iterable[Any]) -> None:
    """Write `chunks` (bytes-like) to `path` so that readers see the old file or the whole new one.

    A temporary file in the same directory (so the rename stays on one file system) is written,
    flushed and fsynced, renamed over `path`, and the directory is fsynced. A process killed
    before the rename leaves `path` untouched and a stray `path.tmp-*` behind.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    tmp = f"{path}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    flags |= getattr(os, "O_BINARY", 0)
    fd = os.open(tmp, flags, 0o666)
    try:
        try:
            for chunk in chunks:
                _write_all(fd, chunk)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_directory(directory)
