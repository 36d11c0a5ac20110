"""tf.Print, tf.print and tf.Assert: ops whose effect is text, on a stream or in a failed run.

They compile: each lowers to a host kernel (kinds "print" and "assert", runtime tfc_text.h)
that writes its tensors as TensorFlow does (tfc/ops/tensor_text.py is the reference), so they
work in native executables too. Constant parts (the message, tf.Assert's strings, constant
tensors) are written into the kernel when compiling. A node that reads a string computed at
run time, or prints to a Python logging stream or a file, runs in Python instead
(OpDef.in_python): a Session evaluates it in a Python stage, native builds refuse it.
"""

from __future__ import annotations

import logging
import os
import pprint
import sys
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import Operation, Tensor, name_scope
from tfc.ir.tensor_shape import shape_str
from tfc.ops.constant import convert_to_tensor, is_tensor_like
from tfc.ops.kernels import Kernel, Param, TextPart, TextSpec
from tfc.ops.registry import (
    STRING_REASON,
    OpContext,
    OpDef,
    apply_op,
    check_dtype,
    register,
    same_as_input,
)
from tfc.ops.tensor_text import format_template, summarize_v1, summarize_v2

__all__ = ["Print", "print", "Assert"]

# the dtypes the text kernels of tfc_text.h write
NATIVE_TEXT_DTYPES = (*_dt.FLOATS, *_dt.INTEGERS, _dt.bool_)
_STREAMS = {"stdout": 1, "stderr": 2}


def _text_reason(ctx: OpContext, first: int = 0) -> str:
    """Why a text op must run in Python: a string only known at run time (a Const's text is
    written into the kernel), or values the runtime's text functions cannot write."""
    for i in range(first, len(ctx.in_dtypes)):
        dtype = ctx.in_dtypes[i]
        constant = ctx.graph is not None and ctx.graph.op_type(ctx.inputs[i][0]) == "Const"
        if dtype.is_string and not constant:
            return STRING_REASON
        if not dtype.is_string and dtype not in NATIVE_TEXT_DTYPES:
            return f"tfc's native kernels do not write {dtype.name} values as text"
    return ""


def _text_part(ctx: OpContext, i: int, style: str, summarize: int) -> TextPart:
    """Input i as a part of a kernel's text: its values, or their text when constant."""
    value = ctx.const(i)
    if value is not None:
        dtype = ctx.in_dtypes[i]
        value = _dt.to_float32(value, dtype) if dtype.kind == "h" else value
        text = (summarize_v1 if style == "v1" else summarize_v2)(value, summarize)
        return TextPart(text=text)
    return TextPart(param=f"x{i}", dtype=ctx.in_dtypes[i], shape=tuple(ctx.in_shapes[i]))


def _text_params(ctx: OpContext, parts: Sequence[TextPart]) -> list[Param]:
    return [
        Param(p.param, p.dtype.c_type, True, f"in{p.param[1:]}")
        for p in parts
        if p.param and p.dtype is not None
    ]


def _write(stream: str, text: str) -> None:
    """`text` to a stream as TF's PrintV2 names it: stdout, stderr, a log level, a file."""
    if stream in _STREAMS:
        out = sys.stdout if stream == "stdout" else sys.stderr
        out.write(text)
        out.flush()  # the text before a C kernel's, or a failing run's, output
    elif stream.startswith("file://"):
        with open(stream[len("file://") :], "a", encoding="utf-8", errors="surrogateescape") as f:
            f.write(text)
    else:
        level = {"log(info)": logging.INFO, "log(warning)": logging.WARNING}.get(
            stream, logging.ERROR
        )
        logging.getLogger("tfc").log(level, "%s", text.rstrip("\n"))


# first_n: how many times each node printed, per interpreter state or Python stage graph
_PRINTED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _may_print(ctx: OpContext, first_n: int) -> bool:
    if first_n < 0:
        return True
    counts = _PRINTED.setdefault(ctx.state if ctx.state is not None else ctx.graph, {})
    counts[ctx.name] = counts.get(ctx.name, 0) + 1
    return counts[ctx.name] <= first_n


# -- Print (tf.Print): the input passes through; the data are written to stderr ----------------
def _print_text(ctx: OpContext, data: Sequence[np.ndarray]) -> str:
    summarize = ctx.attrs["summarize"]
    values = "".join(f"[{summarize_v1(d, summarize)}]" for d in data)
    return ctx.attrs["message"] + values


def _print_reference(ctx: OpContext, x: np.ndarray, *data: np.ndarray) -> np.ndarray:
    if _may_print(ctx, ctx.attrs["first_n"]):
        _write("stderr", _print_text(ctx, data) + "\n")
    return x


def _print_lower(ctx: OpContext) -> list:
    """One host kernel writing the message and the data; the output is the input's buffer."""
    summarize = ctx.attrs["summarize"]
    parts = [TextPart(text=ctx.attrs["message"])]
    for i in range(1, len(ctx.in_dtypes)):
        parts += [TextPart(text="["), _text_part(ctx, i, "v1", summarize), TextPart(text="]")]
    parts.append(TextPart(text="\n"))
    spec = TextSpec(tuple(parts), summarize, "v1", _STREAMS["stderr"], ctx.attrs["first_n"])
    return [Kernel("print", _text_params(ctx, parts), spec)]


register(
    OpDef(
        "Print",
        dtypes=_dt.STORABLE,
        infer=same_as_input,
        reference=_print_reference,
        lower=_print_lower,
        grad=lambda op, dy: [dy] + [None] * (len(op.inputs) - 1),
        in_python=_text_reason,
        # stateful: its text is an effect (never folded or merged); host_only: stdio
        stateful=True,
        host_only=True,
        alias=0,
        input_names=("input", "data"),
    )
)


def Print(  # noqa: N802 - TF1's name
    input_: Any,
    data: Sequence[Any],
    message: str | None = None,
    first_n: int | None = None,
    summarize: int | None = None,
    name: str | None = None,
) -> Tensor:
    """`tf.Print`: `input_` passed through; each run that computes it writes `message` and
    the first `summarize` (3) values of each tensor of `data` to stderr ("msg[1 2 3...][4]"),
    the first `first_n` runs only when given."""
    x = convert_to_tensor(input_)
    tensors = [convert_to_tensor(d) for d in data]
    attrs = {
        "message": "" if message is None else str(message),
        "first_n": -1 if first_n is None else int(first_n),
        "summarize": 3 if summarize is None else int(summarize),
    }
    return apply_op("Print", [x, *tensors], attrs, name=name or "Print").outputs[0]


# -- tf.print: a template with the tensors' values, written to a stream -------------------------
def _print_v2_infer(ctx: OpContext) -> list:
    stream = ctx.attrs["output_stream"]
    if stream not in _STREAMS and not stream.startswith(("file://", "log(")):
        raise ctx.error(f"Unsupported output stream {stream!r}")
    return []


def _print_v2_text(ctx: OpContext, values: Sequence[np.ndarray]) -> str:
    if ctx.attrs["verbatim"]:  # one scalar string, written as it is
        return values[0].item().decode("utf-8", errors="surrogateescape")
    return format_template(
        ctx.attrs["template"], ctx.attrs["placeholder"], values, ctx.attrs["summarize"]
    )


def _print_v2_reference(ctx: OpContext, *values: np.ndarray) -> list:
    _write(ctx.attrs["output_stream"], _print_v2_text(ctx, values) + ctx.attrs["end"])
    return []


def _print_v2_reason(ctx: OpContext) -> str:
    if ctx.attrs["output_stream"] not in _STREAMS:
        return "it writes to a Python logging stream or a file"
    return _text_reason(ctx)


def _print_v2_lower(ctx: OpContext) -> list:
    summarize, placeholder = ctx.attrs["summarize"], ctx.attrs["placeholder"]
    if ctx.attrs["verbatim"]:  # a constant scalar string (a run-time one runs in Python)
        parts = [_text_part(ctx, 0, "v1", -1)]
    else:
        pieces = ctx.attrs["template"].split(placeholder)
        parts = [TextPart(text=pieces[0])]
        for i, piece in enumerate(pieces[1:]):
            parts += [_text_part(ctx, i, "v2", summarize), TextPart(text=piece)]
    parts.append(TextPart(text=ctx.attrs["end"]))
    spec = TextSpec(tuple(parts), summarize, "v2", _STREAMS[ctx.attrs["output_stream"]])
    return [Kernel("print", _text_params(ctx, parts), spec)]


register(
    OpDef(
        "PrintFormatted",
        dtypes=_dt.STORABLE,
        infer=_print_v2_infer,
        reference=_print_v2_reference,
        lower=_print_v2_lower,
        differentiable=False,
        in_python=_print_v2_reason,
        stateful=True,
        host_only=True,
    )
)

_LOG_STREAMS = {logging.INFO: "log(info)", logging.WARNING: "log(warning)",
                logging.ERROR: "log(error)"}  # fmt: skip


def _stream_name(stream: Any) -> str:
    if stream is sys.stdout:
        return "stdout"
    if stream is sys.stderr:
        return "stderr"
    if isinstance(stream, str) and stream.startswith("file://"):
        return stream
    if isinstance(stream, int) and stream in _LOG_STREAMS:
        return _LOG_STREAMS[stream]
    name = getattr(stream, "__name__", None)
    if callable(stream) and name in ("info", "warning", "warn", "error"):
        return {"info": "log(info)", "error": "log(error)"}.get(name, "log(warning)")
    raise ValueError(
        f"Unsupported output stream, logging level, or file.{stream}. Supported streams are "
        "sys.stdout, sys.stderr, tf.logging.info, tf.logging.warning, tf.logging.error. File "
        "needs to be in the form of 'file://<filepath>'."
    )


def _placeholder_for(template: str) -> str:
    """A placeholder string the template does not contain (TF's _generate_placeholder_string)."""
    i = 0
    while True:
        candidate = "{}" if i == 0 else "{%s}" % ("_" * i)
        if candidate not in template:
            return candidate
        i += 1


def _flatten(value: Any) -> list:
    if isinstance(value, dict):
        return [x for k in sorted(value) for x in _flatten(value[k])]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flatten(v)]
    return [value]


def _pack(value: Any, leaves: list) -> Any:
    """`value` with its leaves replaced, in _flatten's order."""
    if isinstance(value, dict):
        return {k: _pack(value[k], leaves) for k in sorted(value)}
    if isinstance(value, (list, tuple)):
        items = [_pack(v, leaves) for v in value]
        return items if isinstance(value, list) else tuple(items)
    return leaves.pop(0)


def print(*inputs: Any, **kwargs: Any) -> Operation:  # noqa: A001 - TF1's tf.print
    """`tf.print` (graph mode): an op that, when run, writes its inputs to `output_stream`
    (sys.stderr; sys.stdout, tf.logging levels, "file://path"), tensors as numpy-like text
    with the first and last `summarize` (3) entries of each dimension, separated by `sep`
    and followed by `end`. Run it, or make it a control dependency, for it to print."""
    stream = _stream_name(kwargs.pop("output_stream", sys.stderr))
    name = kwargs.pop("name", None)
    summarize = int(kwargs.pop("summarize", 3))
    sep = kwargs.pop("sep", " ")
    end = kwargs.pop("end", os.linesep)
    if kwargs:
        raise ValueError(f"Unrecognized keyword arguments for tf.print: {kwargs}")
    attrs = {"summarize": summarize, "output_stream": stream, "end": end, "verbatim": False}
    single = len(inputs) == 1 and isinstance(inputs[0], Tensor)
    if single and inputs[0].dtype.is_string and inputs[0].shape.ndims == 0:
        attrs.update(template="{}", placeholder="{}", verbatim=True)
        return apply_op("PrintFormatted", [inputs[0]], attrs, name=name or "PrintV2")
    # TF's template: each input pretty-printed with its tensors as placeholders
    free = [_pack(x, ["" if is_tensor_like(v) else v for v in _flatten(x)]) for x in inputs]
    placeholder = _placeholder_for(" ".join(pprint.pformat(x) for x in free))
    tensors, templates = [], []
    for x in inputs:
        leaves = []
        for leaf in _flatten(x):
            if is_tensor_like(leaf):
                tensors.append(convert_to_tensor(leaf))
                leaves.append(placeholder)
            else:
                leaves.append(leaf)
        templates.append(x if isinstance(x, str) else pprint.pformat(_pack(x, leaves)))
    template = sep.join(templates).replace(f"'{placeholder}'", placeholder)
    attrs.update(template=template, placeholder=placeholder)
    return apply_op("PrintFormatted", tensors, attrs, name=name or "PrintV2")


# -- Assert: the run fails with the data's text when the condition is false ----------------------
def _assert_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, [_dt.bool_], "condition")
    shape = ctx.in_shapes[0]
    if shape is not None and None not in shape and tuple(shape) not in ((), (1,)):
        raise ctx.error(f"In[0] should be a scalar: {shape_str(shape)}")
    return []


def assertion_message(data: Sequence[np.ndarray], summarize: int) -> str:
    """TF's message of a failed Assert: "assertion failed: [d0] [d1] ..." (style v1)."""
    return "assertion failed: " + " ".join(f"[{summarize_v1(d, summarize)}]" for d in data)


def _assert_reference(ctx: OpContext, condition: np.ndarray, *data: np.ndarray) -> list:
    if not bool(np.asarray(condition).reshape(-1)[0]):
        message = assertion_message(data, ctx.attrs["summarize"])
        raise errors.InvalidArgumentError(None, None, message)
    return []


def _assert_lower(ctx: OpContext) -> list:
    summarize = ctx.attrs["summarize"]
    parts = [TextPart(text="assertion failed: ")]
    for i in range(1, len(ctx.in_dtypes)):
        separator = " " if i > 1 else ""
        parts += [TextPart(text=separator + "["), _text_part(ctx, i, "v1", summarize)]
        parts.append(TextPart(text="]"))
    params = [Param("cond", "bool", True, "in0"), *_text_params(ctx, parts)]
    return [Kernel("assert", params, TextSpec(tuple(parts), summarize), can_fail=True)]


register(
    OpDef(
        "Assert",
        dtypes=_dt.STORABLE,
        infer=_assert_infer,
        reference=_assert_reference,
        lower=_assert_lower,
        differentiable=False,
        in_python=lambda ctx: _text_reason(ctx, first=1),
        # stateful: a failing run is its effect (never folded or merged, kept while targeted)
        stateful=True,
        host_only=True,
        input_names=("condition", "data"),
    )
)


def Assert(  # noqa: N802 - TF1's name
    condition: Any, data: Sequence[Any], summarize: int | None = None, name: str | None = None
) -> Operation:
    """`tf.Assert`: an op that fails the run with InvalidArgumentError "assertion failed:
    [d0] [d1] ..." (the first `summarize` (3) values of each of `data`) when `condition` is
    false. Run it, or make it a control dependency of what must be checked."""
    with name_scope(name, "Assert", [condition, *data]):
        cond = convert_to_tensor(condition, name="Condition")
        tensors = [convert_to_tensor(d) for d in data]
        attrs = {"summarize": 3 if summarize is None else int(summarize)}
        return apply_op("Assert", [cond, *tensors], attrs, name="Assert")
