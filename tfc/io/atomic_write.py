"""Atomic file writes: readers see the old file or the whole new one, even after a crash."""

from __future__ import annotations

import errno
import os
import re
import secrets
import threading
from collections.abc import Iterable
from typing import Any

__all__ = ["write_file_atomically", "remove_stale_temporaries"]

# "NAME.tmp-PID-X": this module's temporaries (X hex) and the C runtime's (X a counter)
_TEMPORARY = re.compile(r"^.+\.tmp-(\d+)-[0-9a-f]+$")
_in_flight: set[str] = set()  # this process's temporaries being written now
_in_flight_lock = threading.Lock()

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
    with _in_flight_lock:
        _in_flight.add(os.path.abspath(tmp))
    try:
        _write_and_rename(tmp, path, chunks, flags)
    finally:
        with _in_flight_lock:
            _in_flight.discard(os.path.abspath(tmp))
    _fsync_directory(directory)


def _write_and_rename(tmp: str, path: str, chunks: Iterable[Any], flags: int) -> None:
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


def _writer_gone(pid: int) -> bool:
    """Whether process `pid` has ended (another user's running process is not gone). This
    process counts as gone: its temporaries in flight are known, any other is a leftover of an
    earlier process that had the same pid."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def remove_stale_temporaries(directory: str | os.PathLike) -> list[str]:
    """Remove the temporary files of atomic writes in `directory` whose writer is gone: a
    process killed between creating and renaming one leaves it behind. Temporaries of running
    processes, this one's in flight among them, stay. The paths removed."""
    directory = os.fspath(directory)
    removed = []
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return removed
    for name in names:
        m = _TEMPORARY.match(name)
        if m is None:
            continue
        path = os.path.join(directory, name)
        pid = int(m.group(1))
        with _in_flight_lock:
            mine = os.path.abspath(path) in _in_flight
        if mine or not _writer_gone(pid):
            continue
        try:
            if os.path.isfile(path) and not os.path.islink(path):
                os.unlink(path)
                removed.append(path)
        except FileNotFoundError:
            pass
    return removed
