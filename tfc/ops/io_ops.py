"""File ops: tf.read_file, tf.write_file, tf.matching_files (ReadFile, WriteFile, MatchingFiles).

They read and write the files when the graph runs, in a Session's Python stage (their values
are tf.string), never when it is built: they are stateful, so nothing folds them into
constants. Errors are TF's: NotFoundError "<name>; No such file or directory".
"""

from __future__ import annotations

import fnmatch
import glob
import os
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import Operation, Tensor
from tfc.ops.constant import convert_to_tensor
from tfc.ops.registry import STRING_REASON, OpContext, OpDef, apply_op, check_dtype, register

__all__ = ["read_file", "write_file", "matching_files"]


def _filename(value: np.ndarray) -> str:
    return bytes(np.asarray(value)[()]).decode("utf-8", "surrogateescape")


def _scalar(ctx: OpContext, i: int, what: str) -> None:
    check_dtype(ctx, i, [_dt.string], what)
    shape = ctx.in_shapes[i]
    if shape is not None and len(shape) != 0:
        raise ctx.error(f"Shape must be rank 0 but is rank {len(shape)}")


def read_bytes(path: str) -> bytes:
    """The bytes of file `path`, or TF's errors for what is not a readable file."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"{path}; No such file or directory") from None
    except IsADirectoryError:
        raise errors.FailedPreconditionError(None, None, f"{path}; Is a directory") from None
    except PermissionError:
        raise errors.PermissionDeniedError(None, None, f"{path}; Permission denied") from None


# -- ReadFile -------------------------------------------------------------------------------------
def _read_file_infer(ctx: OpContext) -> list:
    _scalar(ctx, 0, "filename")
    return [(_dt.string, ())]


def _read_file_reference(ctx: OpContext, filename: np.ndarray) -> np.ndarray:
    return np.array(read_bytes(_filename(filename)), dtype=object)


register(
    OpDef(
        "ReadFile",
        infer=_read_file_infer,
        reference=_read_file_reference,
        differentiable=False,
        stateful=True,  # the file is read when the graph runs, never folded into a constant
        in_python=STRING_REASON,
    )
)


def read_file(filename: Any, name: str | None = None) -> Tensor:
    """`tf.read_file` (tf.io.read_file): the contents of the file `filename`, as a string."""
    x = convert_to_tensor(filename, dtype=_dt.string)
    return apply_op("ReadFile", [x], name=name or "ReadFile").outputs[0]


# -- WriteFile ------------------------------------------------------------------------------------
def _write_file_infer(ctx: OpContext) -> list:
    _scalar(ctx, 0, "filename")
    _scalar(ctx, 1, "contents")
    return []


def _write_file_reference(ctx: OpContext, filename: np.ndarray, contents: np.ndarray) -> list:
    path = _filename(filename)
    directory = os.path.dirname(path)
    try:
        if directory:
            os.makedirs(directory, exist_ok=True)  # TF's WriteFile creates the directory
        with open(path, "wb") as f:
            f.write(bytes(np.asarray(contents)[()]))
    except (FileNotFoundError, NotADirectoryError) as e:
        raise errors.NotFoundError(None, None, f"{path}; {e.strerror}") from None
    except PermissionError:
        raise errors.PermissionDeniedError(None, None, f"{path}; Permission denied") from None
    except IsADirectoryError:
        raise errors.FailedPreconditionError(None, None, f"{path}; Is a directory") from None
    return []


register(
    OpDef(
        "WriteFile",
        infer=_write_file_infer,
        reference=_write_file_reference,
        differentiable=False,
        stateful=True,
        in_python=STRING_REASON,
    )
)


def write_file(filename: Any, contents: Any, name: str | None = None) -> Operation:
    """`tf.write_file` (tf.io.write_file): an op writing `contents` to the file `filename`
    (its directory created), replacing what was there."""
    f = convert_to_tensor(filename, dtype=_dt.string)
    c = convert_to_tensor(contents, dtype=_dt.string)
    return apply_op("WriteFile", [f, c], name=name or "WriteFile")


# -- MatchingFiles --------------------------------------------------------------------------------
def _matching_files_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, [_dt.string], "pattern")
    shape = ctx.in_shapes[0]
    if shape is not None and len(shape) > 1:
        raise ctx.error(f"Shape must be at most rank 1 but is rank {len(shape)}")
    return [(_dt.string, (None,))]


def match_files(pattern: str) -> list[str]:
    """The files matching a glob pattern, sorted, as TF's GetMatchingPaths finds them: `*`,
    `?` and `[...]` within one path component; a leading dot is matched like any character."""
    parts = pattern.split(os.sep)
    first = next((i for i, p in enumerate(parts) if glob.has_magic(p)), None)
    if first is None:
        return [pattern] if os.path.exists(pattern) else []
    found = [os.sep.join(parts[:first]) or ("" if not pattern.startswith(os.sep) else os.sep)]
    for part in parts[first:]:
        step = []
        for base in found:
            if not glob.has_magic(part):
                candidate = os.path.join(base, part)
                step += [candidate] if os.path.lexists(candidate) else []
                continue
            try:
                names = os.listdir(base or ".")
            except OSError:
                continue
            step += [os.path.join(base, n) for n in names if fnmatch.fnmatchcase(n, part)]
        found = step
    return sorted(found)


def _matching_files_reference(ctx: OpContext, pattern: np.ndarray) -> np.ndarray:
    names: list[str] = []
    for p in np.asarray(pattern).reshape(-1):
        names += match_files(bytes(p).decode("utf-8", "surrogateescape"))
    return _dt.string_array(np.array(sorted(names), dtype=object).reshape(-1)) if names else (
        np.zeros([0], dtype=object)
    )  # fmt: skip


register(
    OpDef(
        "MatchingFiles",
        infer=_matching_files_infer,
        reference=_matching_files_reference,
        differentiable=False,
        stateful=True,  # which files exist is known when the graph runs
        in_python=STRING_REASON,
    )
)


def matching_files(pattern: Any, name: str | None = None) -> Tensor:
    """`tf.matching_files` (tf.io.matching_files): the sorted names of the files matching a
    glob pattern (or any of a vector of patterns)."""
    x = convert_to_tensor(pattern, dtype=_dt.string)
    return apply_op("MatchingFiles", [x], name=name or "MatchingFiles").outputs[0]
