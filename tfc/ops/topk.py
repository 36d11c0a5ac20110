"""TopKV2 and InTopKV2: the k largest entries of each row, and whether a target is among them.

TopKV2 orders a row's entries by value, largest first, the lower index first among equal
values (TensorFlow's documented tie order); NaN counts as larger than any number (TF leaves it
unspecified). Its kernel keeps a heap of the k best (value, index) pairs per row in the
outputs themselves and sorts them at the end: O(n log k) per row, no scratch memory. `sorted`
is accepted and the result is always sorted (TF leaves the order unspecified when it is
false). InTopKV2 follows TF's CPU kernel exactly: a target is in the top k when fewer than k
finite predictions of its row are strictly larger than its own, which must be finite and in
range (else False).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tfc.ops.array as _array
from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import Tensor, name_scope
from tfc.ir.tensor_shape import num_elements
from tfc.ops.constant import convert_to_tensor
from tfc.ops.flops import per_input_element
from tfc.ops.kernels import Kernel, Param, RowSpec, c_literal
from tfc.ops.reduce import reduce_sum
from tfc.ops.registry import (
    HALVES_IN_FLOAT32,
    OpContext,
    OpDef,
    apply_op,
    check_dtype,
    register,
)

__all__ = ["top_k", "in_top_k"]

_REAL = _dt.NUMERIC
_INDEX = (_dt.int32, _dt.int64)

# "a is worse than b" for (value, index) pairs: a smaller value, or an equal one at a higher
# index; for floats NaN is the largest value and equal to itself
_WORSE = {
    "f": "(b != b && a == a) || a < b || ((a == b || (a != a && b != b)) && ia > ib)",
    "i": "a < b || (a == b && ia > ib)",
}


# -- TopKV2(input, k) -> (values, indices) --------------------------------------------------------
def _k_value(ctx: OpContext) -> int | None:
    value = ctx.const(1)
    if value is None:
        return None
    k = int(np.asarray(value).reshape(()))
    if k < 0:
        raise ctx.error(f"Need k >= 0, got {k}")
    return k


def _top_k_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, _REAL, "input")
    check_dtype(ctx, 1, (_dt.int32,), "k")
    shape, k_shape = ctx.in_shapes
    if k_shape is not None and len(k_shape) != 0:
        raise ctx.error(f"Shape must be rank 0 but is rank {len(k_shape)}")
    if shape is not None and len(shape) < 1:
        raise ctx.error("Shape must be at least rank 1 but is rank 0")
    k = _k_value(ctx)
    if shape is None:
        return [(ctx.in_dtypes[0], None), (_dt.int32, None)]
    if k is not None and shape[-1] is not None and shape[-1] < k:
        raise ctx.error(f"input must have last dimension >= k = {k} but is {shape[-1]}")
    out = tuple(shape[:-1]) + (k,)
    return [(ctx.in_dtypes[0], out), (_dt.int32, out)]


def _top_k_order(x: np.ndarray) -> np.ndarray:
    """Each row's indices, best first: by value descending (NaN largest), then index."""
    rows = x.reshape(-1, x.shape[-1])
    positions = np.arange(rows.shape[-1])
    # ascending by value (NumPy sorts NaN last) and, among equal values, by descending index:
    # reversed, that is the order wanted
    order = [np.lexsort((-positions, row))[::-1] for row in rows]
    return np.array(order, np.int64).reshape(x.shape)


def _top_k_reference(ctx: OpContext, x: np.ndarray, k: np.ndarray) -> list:
    k = int(k)
    if x.shape[-1] < k:
        raise errors.InvalidArgumentError(
            None, None, f"input must have at least k columns. Had {x.shape[-1]}, needed {k}"
        )
    if x.shape[-1] == 0:
        empty = np.zeros(x.shape[:-1] + (k,))
        return [empty.astype(x.dtype), empty.astype(np.int32)]
    indices = _top_k_order(x)[..., :k]
    return [np.take_along_axis(x, indices, axis=-1), indices.astype(np.int32)]


def _top_k_lower(ctx: OpContext) -> list:
    dtype, shape = ctx.in_dtypes[0], ctx.in_shapes[0]
    k = ctx.out_shapes[0][-1]
    rows = num_elements(shape[:-1])
    if rows == 0 or k == 0:
        return []
    params = [
        Param("values", dtype.c_type, False, "out0"),
        Param("indices", _dt.int32.c_type, False, "out1"),
        Param("x0", dtype.c_type, True, "in0"),
    ]
    exprs = {"k": c_literal(k, _dt.int64), "worse": _WORSE["f" if dtype.is_floating else "i"]}
    return [Kernel("top_k", params, RowSpec(dtype, rows, shape[-1], exprs))]


def _top_k_grad(op: Any, dvalues: Tensor | None, dindices: Tensor | None) -> list:
    """dvalues scattered back to the entries they came from: one_hot(indices) summed over k."""
    x, indices = op.inputs[0], op.outputs[1]
    if dvalues is None:
        return [None, None]
    depth = x.shape[-1].value if x.shape.ndims is not None else None
    if depth is None:
        raise ValueError(
            f"The gradient of '{op.name}' (TopKV2) needs the size of the input's last dimension "
            f"when the graph is built; it is unknown in {x.shape}"
        )
    hot = _array.one_hot(indices, depth, dtype=dvalues.dtype)  # [..., k, n]
    spread = hot * _array.expand_dims(dvalues, -1)
    return [reduce_sum(spread, axis=-2), None]


register(
    OpDef(
        "TopKV2",
        infer=_top_k_infer,
        reference=_top_k_reference,
        lower=_top_k_lower,
        grad=_top_k_grad,
        flops=per_input_element(2),
        const_inputs=(1,),
        input_names=("input", "k"),
        dtypes=_dt.NUMERIC,
        computes_in=HALVES_IN_FLOAT32,
    )
)


def top_k(
    input: Any,  # noqa: A002  TF's argument name
    k: Any = 1,
    sorted: bool = True,  # noqa: A002
    name: str | None = None,
) -> tuple[Tensor, Tensor]:
    """`tf.nn.top_k`: (values, indices) of the k largest entries of each row (last axis),
    largest first, the lower index first among equal values; indices are int32."""
    with name_scope(name, "TopKV2", [input, k]) as scope:
        x = convert_to_tensor(input, name="input")
        k = convert_to_tensor(k, dtype=_dt.int32, name="k")
        op = apply_op("TopKV2", [x, k], {"sorted": bool(sorted)}, name=scope)
        return op.outputs[0], op.outputs[1]


# -- InTopKV2(predictions, targets, k) -> bool ----------------------------------------------------
def _in_top_k_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, (_dt.float32,), "predictions")
    check_dtype(ctx, 1, _INDEX, "targets")
    check_dtype(ctx, 2, (ctx.in_dtypes[1],), "k")
    predictions, targets, k = ctx.in_shapes
    if predictions is not None and len(predictions) != 2:
        raise ctx.error(f"Shape must be rank 2 but is rank {len(predictions)}")
    if targets is not None and len(targets) != 1:
        raise ctx.error(f"Shape must be rank 1 but is rank {len(targets)}")
    if k is not None and len(k) != 0:
        raise ctx.error(f"Shape must be rank 0 but is rank {len(k)}")
    rows = None if predictions is None else predictions[0]
    if targets is not None:
        if rows is not None and targets[0] is not None and rows != targets[0]:
            raise ctx.error(f"Dimensions must be equal, but are {rows} and {targets[0]}")
        rows = targets[0] if rows is None else rows
    return [(_dt.bool_, (rows,))]


def _in_top_k_reference(ctx: OpContext, predictions: np.ndarray, targets, k) -> np.ndarray:
    k, classes = int(k), predictions.shape[1]
    out = np.zeros(targets.shape, bool)
    for r, t in enumerate(targets.tolist()):
        if not 0 <= t < classes or not np.isfinite(predictions[r, t]):
            continue
        row = predictions[r]
        more = np.sum(np.isfinite(row) & (row > row[t]))
        out[r] = more < k
    return out


def _in_top_k_lower(ctx: OpContext) -> list:
    dtype, (rows, classes) = ctx.in_dtypes[0], ctx.in_shapes[0]
    if rows == 0:
        return []
    index = ctx.in_dtypes[1].c_type
    params = [
        Param("y", _dt.bool_.c_type, False, "out0"),
        Param("x0", dtype.c_type, True, "in0"),
        Param("targets", index, True, "in1"),
        Param("k", index, True, "in2"),
    ]
    return [Kernel("in_top_k", params, RowSpec(dtype, rows, classes, {}))]


register(
    OpDef(
        "InTopKV2",
        infer=_in_top_k_infer,
        reference=_in_top_k_reference,
        lower=_in_top_k_lower,
        flops=per_input_element(2),
        input_names=("predictions", "targets", "k"),
        differentiable=False,
    )
)


def in_top_k(predictions: Any, targets: Any, k: Any, name: str | None = None) -> Tensor:
    """`tf.nn.in_top_k`: whether each row's target class is among its k largest predictions
    (ties at the boundary count as in; a non-finite or out-of-range target as out)."""
    with name_scope(name, "in_top_k", [predictions, targets, k]) as scope:
        predictions = convert_to_tensor(predictions, name="predictions")
        targets = convert_to_tensor(targets, name="targets")
        if targets.dtype not in _INDEX:
            raise TypeError(
                f"Value passed to parameter 'targets' has DataType {targets.dtype.name} not in "
                "list of allowed values: int32, int64"
            )
        k = convert_to_tensor(k, dtype=targets.dtype, name="k")
        return apply_op("InTopKV2", [predictions, targets, k], name=scope).outputs[0]
