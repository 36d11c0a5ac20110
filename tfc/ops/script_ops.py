"""tf.py_func and tf.numpy_function: a Python function as an op of the graph (Session only).

The function is kept in a registry under a token ("pyfunc_0", TF's attribute), for as long as
the graph that calls it lives. The op runs in Python (OpDef.in_python): a Session calls the
function in a Python stage with the inputs as NumPy arrays (tf.string ones as object arrays of
bytes) and hands its results to the native stages after it; native builds (tfc compile, the
embeddable library, distributed tasks) have no Python and refuse it, naming the op. Results
are checked as TF checks them: as many as Tout names, each of Tout's dtype (a float64 array
where float32 is expected fails, as in TF), str encoded as UTF-8. An exception raised by the
function fails the run with TF's error class for it and the traceback as the message. Like
TF, no gradient flows through a py_func.
"""

from __future__ import annotations

import itertools
import traceback
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import Operation, Tensor, get_default_graph
from tfc.ops.constant import convert_to_tensor
from tfc.ops.registry import OpContext, OpDef, apply_op, register

__all__ = ["py_func", "numpy_function"]

_FUNCTIONS: dict[str, Callable] = {}
_TOKENS = itertools.count()

# TF's error class for an exception the function raises (py_func.cc); any other: UnknownError
_ERRORS: tuple[tuple[type, type], ...] = (
    (ValueError, errors.InvalidArgumentError),
    (TypeError, errors.InvalidArgumentError),
    (StopIteration, errors.OutOfRangeError),
    (MemoryError, errors.ResourceExhaustedError),
    (NotImplementedError, errors.UnimplementedError),
)


def _dtype_name(dtype: np.dtype) -> str:
    """A NumPy dtype as TF's messages spell it ("double", "float", "int64")."""
    try:
        return _dt.as_dtype(dtype).tf_name
    except TypeError:
        return dtype.name


def _as_array(value: Any, token: str, i: int, dtype: _dt.DType) -> np.ndarray:
    """Result `i` of the function as the op outputs it, or TF's error when its dtype is not
    `dtype` (no conversion: TF converts none either)."""
    if dtype.is_string:
        try:
            return _dt.string_array(value)
        except TypeError:
            kind = _dtype_name(np.asarray(value).dtype)
            raise errors.InvalidArgumentError(
                None, None, f"{i}-th value returned by {token} is {kind}, but expects string"
            ) from None
    array = np.asarray(value, order="C")
    if array.dtype != dtype.np:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"{i}-th value returned by {token} is {_dtype_name(array.dtype)}, but expects "
            f"{dtype.tf_name}",
        )
    return array


def _py_func_reference(ctx: OpContext, *args: np.ndarray) -> list:
    token, tout = ctx.attrs["token"], ctx.attrs["Tout"]
    function = _FUNCTIONS.get(token)
    if function is None:
        raise errors.UnknownError(
            None, None, f"The Python function of {token} is gone (its graph was deleted)"
        )
    try:
        result = function(*[np.array(a, copy=True) for a in args])
    except Exception as e:  # noqa: BLE001 - the run fails with TF's class for it
        kind = next((tf for py, tf in _ERRORS if isinstance(e, py)), errors.UnknownError)
        # the traceback from the function on, as TF reports it
        text = "".join(traceback.format_exception(type(e), e, e.__traceback__.tb_next))
        raise kind(None, None, text) from e
    if isinstance(result, (list, tuple)):
        values = list(result)
    else:
        values = [] if result is None and not tout else [result]
    if len(values) != len(tout):
        raise errors.InvalidArgumentError(
            None,
            None,
            f"{token} returns {len(values)} values, but expects to see {len(tout)} values.",
        )
    return [_as_array(v, token, i, d) for i, (v, d) in enumerate(zip(values, tout))]


for _type in ("PyFunc", "PyFuncStateless"):
    register(
        OpDef(
            _type,
            infer=lambda ctx: [(d, None) for d in ctx.attrs["Tout"]],
            reference=_py_func_reference,
            differentiable=False,
            dtypes=_dt.STORABLE,
            in_python="it calls a Python function",
            # never evaluated while building or compiling the graph, nor merged with another
            # call: even a function declared stateless is the user's code, called when run
            stateful=True,
            input_names=("input",),
        )
    )


def py_func(
    func: Callable,
    inp: Sequence[Any],
    Tout: Any,  # noqa: N803 - TF1's argument name
    stateful: bool = True,
    name: str | None = None,
) -> Any:
    """`tf.py_func`: an op calling `func` on the values of `inp` (NumPy arrays) when the graph
    runs in a Session; it returns a tensor of each dtype of `Tout` (a list), or one tensor
    when `Tout` is a single dtype, of shapes unknown until it runs. Session only: a native
    build (tfc compile) refuses it. No gradient flows through it."""
    if not callable(func):
        raise TypeError(f"func must be callable, got {func!r}")
    single = not isinstance(Tout, (list, tuple))
    tout = [_dt.as_dtype(Tout)] if single else [_dt.as_dtype(t) for t in Tout]
    inputs = [convert_to_tensor(x) for x in inp]
    graph = inputs[0].graph if inputs else get_default_graph()
    token = f"pyfunc_{next(_TOKENS)}"
    _FUNCTIONS[token] = func
    weakref.finalize(graph, _FUNCTIONS.pop, token, None)  # the function lives with its graph
    op_type = "PyFunc" if stateful else "PyFuncStateless"
    attrs = {"token": token, "Tin": [t.dtype for t in inputs], "Tout": tout}
    op = apply_op(op_type, inputs, attrs, name=name or "PyFunc", graph=graph)
    return _results(op, single)


def numpy_function(
    func: Callable,
    inp: Sequence[Any],
    Tout: Any,  # noqa: N803 - TF's argument name
    stateful: bool = True,
    name: str | None = None,
) -> Any:
    """`tf.numpy_function`: tf.py_func (the function takes and returns NumPy arrays)."""
    return py_func(func, inp, Tout, stateful=stateful, name=name)


def _results(op: Operation, single: bool) -> Tensor | list[Tensor] | Operation:
    if single:
        return op.outputs[0]
    return list(op.outputs) if op.outputs else op
