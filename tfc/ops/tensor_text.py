"""Tensor values as TensorFlow writes them in text (Tensor::SummarizeValue), in two styles.

Style "v1" (tf.Print, tf.Assert): the first `limit` values in row-major order inside nested
brackets, "..." where the text stops early. Style "v2" (tf.print, tf.strings.format): numpy-like,
the first and last `summarize` entries of every dimension, rows on lines of their own, strings
quoted. Elements are written as TF's StrCat writes them: floats with "%.6g" (doubles "%.15g"),
or with 9 (17) digits when fewer do not read back as the same number; bools as 1 and 0. The
runtime's tfc_text.h writes the same text in generated code (the kernels of Print, Assert and
print); these functions are the references and write constant parts at compile time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tfc.ir import errors


def element_text(value: Any, v2: bool = False) -> str:
    """One element as TF's PrintOneElement writes it."""
    if isinstance(value, (bytes, str)):
        data = value.encode("utf-8") if isinstance(value, str) else value
        if not v2:
            return data.decode("utf-8", errors="surrogateescape")
        return '"' + _c_escape(data) + '"'
    if isinstance(value, (bool, np.bool_)):
        return "1" if value else "0"
    if isinstance(value, (np.floating, float)):
        return _float_text(value)
    if isinstance(value, (np.complexfloating, complex)):
        return "?"  # TF's summaries have no text for complex numbers
    return str(int(value))


def _float_text(value: Any) -> str:
    """StrCat of a float (FloatToBuffer) or double (DoubleToBuffer)."""
    single = isinstance(value, np.float32)
    x = float(value)
    if np.isnan(x):
        return "-nan" if np.signbit(x) else "nan"
    digits, more = (6, 9) if single else (15, 17)
    text = f"{x:.{digits}g}"
    back = np.float32(float(text)) if single else float(text)
    if back != (np.float32(x) if single else x):
        text = f"{x:.{more}g}"
    return text


def _c_escape(data: bytes) -> str:
    """CEscape as TF applies it to printed strings: quotes, backslashes and control characters
    escaped (octal for the unnamed ones); bytes of multi-byte characters kept."""
    named = {9: b"\\t", 10: b"\\n", 13: b"\\r", 34: b'\\"', 39: b"\\'", 92: b"\\\\"}
    out = bytearray()
    for b in data:
        if b in named:
            out += named[b]
        elif b < 0x20 or b == 0x7F:
            out += b"\\%03o" % b
        else:
            out.append(b)
    return out.decode("utf-8", errors="surrogateescape")


def summarize_v1(array: np.ndarray, summarize: int) -> str:
    """SummarizeValue(summarize) of style v1 (tf.Print, tf.Assert); summarize < 0: all."""
    array = np.asarray(array)
    count = array.size
    limit = count if summarize < 0 else min(summarize, count)
    flat = array.reshape(-1)
    if array.ndim == 0:
        text = " ".join(element_text(flat[i]) for i in range(limit))
        return text + ("..." if count > limit else "")
    out: list[str] = []
    position = [0]

    def dim(d: int) -> None:
        if position[0] >= limit:
            return
        n = array.shape[d]
        if d == array.ndim - 1:
            for i in range(n):
                if position[0] >= limit:
                    if d != 0:
                        out.append("...")
                    return
                if i > 0:
                    out.append(" ")
                out.append(element_text(flat[position[0]]))
                position[0] += 1
            return
        for _ in range(n):
            opened = position[0] < limit
            if opened:
                out.append("[")
            dim(d + 1)
            if position[0] < limit or opened:
                out.append("]")

    dim(0)
    if count > limit:
        out.append("...")
    return "".join(out)


def summarize_v2(array: np.ndarray, summarize: int) -> str:
    """SummarizeValue(summarize, print_v2=true) (tf.print, tf.strings.format); summarize < 0:
    all."""
    array = np.asarray(array)
    count = array.size
    limit = count if summarize < 0 else min(summarize, count)
    flat = array.reshape(-1)
    if array.ndim == 0:
        text = " ".join(element_text(flat[i], True) for i in range(limit))
        return text + ("..." if count > limit else "")
    rank, shape = array.ndim, array.shape
    out: list[str] = []

    def spacing(d: int) -> None:
        if d == rank - 1:
            out.append(" ")
        else:
            out.append("\n" * (rank - d - 1) + " " * (d + 1))

    def dim(d: int, start: int) -> None:
        if d == rank:
            out.append(element_text(flat[start], True))
            return
        out.append("[")
        n = shape[d]
        start_of_end = max(limit, n - limit)
        step = int(np.prod(shape[d + 1 :], dtype=np.int64))
        for i in range(min(limit, n)):
            if i > 0:
                spacing(d)
            dim(d + 1, start + step * i)
        if n > 2 * limit:
            spacing(d)
            out.append("...")
        for i in range(start_of_end, n):
            spacing(d)
            dim(d + 1, start + step * i)
        out.append("]")

    dim(0, 0)
    return "".join(out)


def format_template(template: str, placeholder: str, values: Sequence[Any], summarize: int) -> str:
    """TF's StringFormat: each `placeholder` of `template` replaced by the next value's text
    in style v2."""
    pieces = template.split(placeholder)
    if len(pieces) != len(values) + 1:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"num placeholders in template and num inputs must match: {len(pieces) - 1} vs. "
            f"{len(values)}",
        )
    out = [pieces[0]]
    for value, piece in zip(values, pieces[1:]):
        out += [summarize_v2(value, summarize), piece]
    return "".join(out)
