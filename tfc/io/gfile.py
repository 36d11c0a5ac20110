"""`tf.gfile`: TensorFlow's file functions, on the local file system.

GFile (also `Open`, `FastGFile`) opens files in text or binary mode; the functions raise
NotFoundError and friends, as TensorFlow's do, naming the path.
"""

from __future__ import annotations

import glob as _glob
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tfc.ir import errors

__all__ = [
    "GFile",
    "FastGFile",
    "Open",
    "Exists",
    "IsDirectory",
    "MakeDirs",
    "MkDir",
    "ListDirectory",
    "Glob",
    "Remove",
    "Rename",
    "Copy",
    "DeleteRecursively",
    "Stat",
    "FileStatistics",
    "Walk",
]


def _not_found(path: str, what: str = "No such file or directory") -> errors.OpError:
    return errors.NotFoundError(None, None, f"{path}; {what}")


class GFile:
    """`tf.gfile.GFile(name, mode)`: a file; "r"/"w"/"a" read and write text, with "b" bytes."""

    def __init__(self, name: str | os.PathLike, mode: str = "r") -> None:
        self.name = os.fspath(name)
        self.mode = mode
        if "r" in mode and not os.path.exists(self.name):
            raise _not_found(self.name)
        try:
            encoding = None if "b" in mode else "utf-8"
            self._f = open(self.name, mode, encoding=encoding)  # noqa: SIM115 - closed by close()
        except FileNotFoundError:
            raise _not_found(self.name) from None
        except IsADirectoryError:
            raise errors.FailedPreconditionError(
                None, None, f"{self.name}; Is a directory"
            ) from None

    def read(self, n: int = -1) -> Any:
        return self._f.read(n)

    def readline(self) -> Any:
        return self._f.readline()

    def readlines(self) -> list:
        return self._f.readlines()

    def write(self, data: Any) -> None:
        self._f.write(data)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._f.seek(offset, whence)

    def tell(self) -> int:
        return self._f.tell()

    def size(self) -> int:
        return os.path.getsize(self.name)

    def flush(self) -> None:
        self._f.flush()

    def close(self) -> None:
        self._f.close()

    def __iter__(self) -> Iterator:
        return iter(self._f)

    def __next__(self) -> Any:
        return next(self._f)

    def __enter__(self) -> GFile:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


FastGFile = GFile
Open = GFile


def Exists(filename: str) -> bool:  # noqa: N802 - TensorFlow's names
    return os.path.exists(filename)


def IsDirectory(dirname: str) -> bool:  # noqa: N802
    return os.path.isdir(dirname)


def MakeDirs(dirname: str) -> None:  # noqa: N802
    os.makedirs(dirname, exist_ok=True)


def MkDir(dirname: str) -> None:  # noqa: N802
    try:
        os.mkdir(dirname)
    except FileExistsError:
        raise errors.AlreadyExistsError(None, None, f"{dirname}; File exists") from None
    except FileNotFoundError:
        raise _not_found(dirname) from None


def ListDirectory(dirname: str) -> list[str]:  # noqa: N802
    if not os.path.isdir(dirname):
        raise _not_found(dirname, "Could not find directory")
    return sorted(os.listdir(dirname))


def Glob(filename: str) -> list[str]:  # noqa: N802
    return sorted(_glob.glob(filename))


def Remove(filename: str) -> None:  # noqa: N802
    try:
        os.remove(filename)
    except FileNotFoundError:
        raise _not_found(filename) from None


def Rename(oldname: str, newname: str, overwrite: bool = False) -> None:  # noqa: N802
    if not os.path.exists(oldname):
        raise _not_found(oldname)
    if os.path.exists(newname) and not overwrite:
        raise errors.AlreadyExistsError(None, None, f"{newname}; File already exists")
    os.replace(oldname, newname)


def Copy(oldpath: str, newpath: str, overwrite: bool = False) -> None:  # noqa: N802
    if not os.path.exists(oldpath):
        raise _not_found(oldpath)
    if os.path.exists(newpath) and not overwrite:
        raise errors.AlreadyExistsError(None, None, f"{newpath}; File already exists")
    shutil.copyfile(oldpath, newpath)


def DeleteRecursively(dirname: str) -> None:  # noqa: N802
    if not os.path.exists(dirname):
        raise _not_found(dirname)
    if os.path.isdir(dirname):
        shutil.rmtree(dirname)
    else:
        os.remove(dirname)


@dataclass(frozen=True)
class FileStatistics:
    length: int
    mtime_nsec: int
    is_directory: bool


def Stat(filename: str) -> FileStatistics:  # noqa: N802
    try:
        st = os.stat(filename)
    except FileNotFoundError:
        raise _not_found(filename) from None
    return FileStatistics(st.st_size, st.st_mtime_ns, os.path.isdir(filename))


def Walk(top: str, in_order: bool = True) -> Iterator[tuple[str, list[str], list[str]]]:  # noqa: N802
    """(directory, subdirectories, files) of every directory under `top`; parents first when
    `in_order`, else children first."""
    for dirpath, dirnames, filenames in os.walk(top, topdown=in_order):
        yield dirpath, sorted(dirnames), sorted(filenames)
