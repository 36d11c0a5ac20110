"""Array ops that keep the elements: Identity, StopGradient, Reshape, ExpandDims, Squeeze; Shape.

The first five (and EnsureShape, at the end) are views: the output shares the input's buffer
(no kernel, no copy). Shape, Size and Rank give the shape as a value; the specialize pass turns
them into constants.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, name_scope
from tfc.ir.tensor_shape import TensorShape, is_fully_defined, num_elements, shape_str
from tfc.ops.array_common import INDEX_DTYPES, check_rank, index_tensor, shape_value
from tfc.ops.constant import convert_to_tensor
from tfc.ops.flops import no_flops
from tfc.ops.grad_ops import reshape_to
from tfc.ops.kernels import loop_kernel, view
from tfc.ops.registry import OpContext, OpDef, apply_op, check_dtype, register, same_as_input


def _view_reference(ctx: OpContext, x: np.ndarray, *_: Any) -> np.ndarray:
    """Ops whose output shares the input's buffer: the same elements, in the output's shape."""
    return x.reshape(ctx.out_shapes[0])


def _view_op(op_type: str, **kwargs: Any) -> None:
    register(
        OpDef(
            op_type,
            reference=_view_reference,
            lower=lambda ctx: [],
            alias=0,
            flops=no_flops,
            dtypes=_dt.STORABLE,
            **kwargs,
        )
    )


# -- Identity, StopGradient ----------------------------------------------------------------------
register(
    OpDef(
        "Identity",
        dtypes=_dt.STORABLE,
        infer=same_as_input,
        reference=lambda ctx, x: x,
        lower=lambda ctx: [],
        alias=0,
        flops=no_flops,
        grad=lambda op, dy: [dy],
    )
)
register(
    OpDef(
        "StopGradient",
        dtypes=_dt.STORABLE,
        infer=same_as_input,
        reference=lambda ctx, x: x,
        lower=lambda ctx: [],
        alias=0,
        flops=no_flops,
        differentiable=False,
    )
)


def identity(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.identity`: the same value as a new tensor (no copy: it shares the input's buffer)."""
    return apply_op("Identity", [convert_to_tensor(input)], name=name or "Identity").outputs[0]


def stop_gradient(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.stop_gradient`: the input's value, through which no gradient flows."""
    x = convert_to_tensor(input)
    return apply_op("StopGradient", [x], name=name or "StopGradient").outputs[0]


# -- Reshape -------------------------------------------------------------------------------------
def _reshape_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 1, INDEX_DTYPES, "shape")
    check_rank(ctx, 1, 1)
    dtype, in_shape = ctx.in_dtypes[0], ctx.in_shapes[0]
    target = shape_value(ctx, 1)
    if target is None:
        return [(dtype, None)]
    for k, d in enumerate(target):
        if d is not None and d < -1:
            raise ctx.error(f"Size {k} must be non-negative, not {d}")
    unknown = [k for k, d in enumerate(target) if d == -1]
    if len(unknown) > 1:
        raise ctx.error(f"Only one input size may be -1, not both {unknown[0]} and {unknown[1]}")
    out = [None if d == -1 else d for d in target]
    known = [d for d in target if d != -1]
    if None in known or not is_fully_defined(in_shape):
        return [(dtype, tuple(out))]
    count, product = num_elements(in_shape), math.prod(known)
    if not unknown:
        if product != count:
            raise ctx.error(
                f"Cannot reshape a tensor with {count} elements to shape {shape_str(target)} "
                f"({product} elements)"
            )
    elif product == 0:
        raise ctx.error(
            "Reshape cannot infer the missing input size for an empty tensor unless all "
            "specified input sizes are non-zero"
        )
    elif count % product:
        raise ctx.error(f"Dimension size must be evenly divisible by {product} but is {count}")
    else:
        out[unknown[0]] = count // product
    return [(dtype, tuple(out))]


def _view_grad(op, dy):
    """Reshape, ExpandDims, Squeeze: the same elements, so dy in the input's shape (free)."""
    return [reshape_to(dy, op.inputs[0])] + [None] * (len(op.inputs) - 1)


_view_op("Reshape", infer=_reshape_infer, const_inputs=(1,), grad=_view_grad)


def reshape(tensor: Any, shape: Any, name: str | None = None) -> Tensor:
    """`tf.reshape`: the same elements in a new shape; one dimension may be -1 (inferred)."""
    with name_scope(name, "Reshape", [tensor]) as scope:
        x = convert_to_tensor(tensor)
        return apply_op("Reshape", [x, index_tensor(shape, "shape")], name=scope).outputs[0]


# -- Shape, Size, Rank (the specialize pass turns them into constants) ---------------------------
def _shape_op(op_type: str, infer: Any, value: Any) -> None:
    register(
        OpDef(
            op_type,
            infer=infer,
            reference=lambda ctx, *_: np.asarray(value(ctx.in_shapes[0]), ctx.attrs["out_type"].np),
            flops=no_flops,
            dtypes=_dt.STORABLE,
            differentiable=False,
        )
    )


def _check_out_type(ctx: OpContext) -> _dt.DType:
    out_type = ctx.attrs["out_type"]
    if out_type not in INDEX_DTYPES:
        raise TypeError(f"out_type must be int32 or int64, got {out_type.name} for '{ctx.name}'")
    return out_type


_shape_op(
    "Shape",
    lambda ctx: [
        (_check_out_type(ctx), (None if ctx.in_shapes[0] is None else len(ctx.in_shapes[0]),))
    ],
    lambda s: s,
)
_shape_op("Size", lambda ctx: [(_check_out_type(ctx), ())], num_elements)
_shape_op("Rank", lambda ctx: [(_check_out_type(ctx), ())], len)


def shape(input: Any, name: str | None = None, out_type: Any = _dt.int32) -> Tensor:  # noqa: A002
    """`tf.shape`: the shape as a 1-D tensor; known when compiling, even for None dims."""
    attrs = {"out_type": _dt.as_dtype(out_type)}
    return apply_op("Shape", [convert_to_tensor(input)], attrs, name=name or "Shape").outputs[0]


def size(input: Any, name: str | None = None, out_type: Any = _dt.int32) -> Tensor:  # noqa: A002
    """`tf.size`: the number of elements as a scalar."""
    attrs = {"out_type": _dt.as_dtype(out_type)}
    return apply_op("Size", [convert_to_tensor(input)], attrs, name=name or "Size").outputs[0]


def rank(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.rank`: the number of dimensions as an int32 scalar."""
    attrs = {"out_type": _dt.int32}
    return apply_op("Rank", [convert_to_tensor(input)], attrs, name=name or "Rank").outputs[0]


# -- ExpandDims, Squeeze -------------------------------------------------------------------------
def _expand_dims_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 1, INDEX_DTYPES, "dim")
    dtype, in_shape, axis = ctx.in_dtypes[0], ctx.in_shapes[0], ctx.const(1)
    if axis is not None and axis.size != 1:
        raise ctx.error("'dim' input must be a tensor with a single value")
    if in_shape is None:
        return [(dtype, None)]
    r = len(in_shape)
    if axis is None:
        return [(dtype, (None,) * (r + 1))]
    a = int(axis.ravel()[0])
    if not -r - 1 <= a <= r:
        raise ctx.error(f"Tried to expand dim index {a} for tensor with {r} dimensions.")
    a = a + r + 1 if a < 0 else a
    return [(dtype, tuple(in_shape[:a]) + (1,) + tuple(in_shape[a:]))]


_view_op("ExpandDims", infer=_expand_dims_infer, const_inputs=(1,), grad=_view_grad)


def expand_dims(
    input: Any,  # noqa: A002
    axis: Any = None,
    name: str | None = None,
    dim: Any = None,
) -> Tensor:
    """`tf.expand_dims`: a size-1 dimension inserted at `axis` (negative counts from the end)."""
    if axis is None:
        axis = dim
    elif dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'")
    if axis is None:
        raise ValueError("Must specify an axis argument to tf.expand_dims()")
    with name_scope(name, "ExpandDims", [input]) as scope:
        x = convert_to_tensor(input)
        return apply_op("ExpandDims", [x, index_tensor(axis, "dim")], name=scope).outputs[0]


def _squeeze_infer(ctx: OpContext) -> list:
    dtype, in_shape = ctx.in_dtypes[0], ctx.in_shapes[0]
    dims = ctx.attrs["squeeze_dims"]
    if in_shape is None:
        return [(dtype, None)]
    r = len(in_shape)
    if not dims:
        if None in in_shape:  # a None dim might be 1: which dims go is unknown
            return [(dtype, None)]
        return [(dtype, tuple(d for d in in_shape if d != 1))]
    drop = set()
    for a in dims:
        if not -r <= a < r:
            raise ctx.error(f"Tried to squeeze dim index {a} for tensor with {r} dimensions.")
        a = a + r if a < 0 else a
        if in_shape[a] is not None and in_shape[a] != 1:
            raise ctx.error(
                f"Can not squeeze dim[{a}], expected a dimension of 1, got {in_shape[a]}"
            )
        drop.add(a)
    return [(dtype, tuple(d for k, d in enumerate(in_shape) if k not in drop))]


_view_op("Squeeze", infer=_squeeze_infer, grad=_view_grad)


def squeeze(
    input: Any,  # noqa: A002
    axis: Any = None,
    name: str | None = None,
    squeeze_dims: Any = None,
) -> Tensor:
    """`tf.squeeze`: size-1 dimensions removed (all of them, or those listed in `axis`)."""
    if axis is None:
        axis = squeeze_dims
    elif squeeze_dims is not None:
        raise ValueError("Cannot specify both 'axis' and 'squeeze_dims'")
    if axis is None:
        axis = []
    elif np.isscalar(axis):
        axis = [axis]
    attrs = {"squeeze_dims": [int(a) for a in axis]}
    return apply_op("Squeeze", [convert_to_tensor(input)], attrs, name=name or "Squeeze").outputs[0]


# -- EnsureShape ---------------------------------------------------------------------------------
def _ensure_shape_infer(ctx: OpContext) -> list:
    """The input's shape merged with the expected one. Compiling knows every shape, so a
    mismatch that only the fed shapes show is found before the run (as InvalidArgumentError)."""
    want = ctx.attrs["shape"]
    have = ctx.in_shapes[0]
    if want is None or have is None:
        return [(ctx.in_dtypes[0], have if want is None else tuple(want))]
    if len(want) != len(have):
        raise ctx.error(f"Shapes must be equal rank, but are {len(want)} and {len(have)}")
    for k, (w, h) in enumerate(zip(want, have)):
        if w is not None and h is not None and w != h:
            raise ctx.error(
                f"Dimension {k} in both shapes must be equal, but are {w} and {h}. Shapes are "
                f"{shape_str(want)} and {shape_str(have)}."
            )
    merged = tuple(w if w is not None else h for w, h in zip(want, have))
    return [(ctx.in_dtypes[0], merged)]


_view_op("EnsureShape", infer=_ensure_shape_infer, grad=lambda op, dy: [dy])


def ensure_shape(x: Any, shape: Any, name: str | None = None) -> Tensor:
    """`tf.ensure_shape`: x, whose shape must be compatible with `shape` (None dims match
    any size); the result has the dims both tell."""
    want = TensorShape(shape).as_tuple()
    with name_scope(name, "EnsureShape", [x]) as scope:
        attrs = {"shape": None if want is None else tuple(want)}
        return apply_op("EnsureShape", [convert_to_tensor(x)], attrs, name=scope).outputs[0]


# -- IdentityN ----------------------------------------------------------------------------------
def _identity_n_lower(ctx: OpContext) -> list:
    """A copy of each input (only output 0 could share its input's buffer)."""
    kernels = []
    for i, (dtype, shape_) in enumerate(zip(ctx.in_dtypes, ctx.in_shapes)):
        out, src = view(f"out{i}", dtype, shape_), view(f"in{i}", dtype, shape_)
        kernels += loop_kernel(shape_, out, [src], "{0}")
    return kernels


register(
    OpDef(
        "IdentityN",
        dtypes=_dt.STORABLE,
        infer=lambda ctx: list(zip(ctx.in_dtypes, ctx.in_shapes)),
        reference=lambda ctx, *xs: [np.array(x, copy=True) for x in xs],
        lower=_identity_n_lower,
        flops=no_flops,
        grad=lambda op, *dys: list(dys),
    )
)


def identity_n(input: Any, name: str | None = None) -> list[Tensor]:  # noqa: A002
    """`tf.identity_n`: the tensors of a list, unchanged, as the outputs of one op."""
    tensors = [convert_to_tensor(x) for x in input]
    attrs = {"T": [t.dtype for t in tensors]}
    return apply_op("IdentityN", tensors, attrs, name=name or "IdentityN").outputs


# -- GuaranteeConst ------------------------------------------------------------------------------
# A promise to TF's runtime that the value will not change, so that it may cache it; a view here.
# A constant has no gradient: none flows back through it (TF, which registers no rule, raises
# LookupError there instead).
_view_op("GuaranteeConst", infer=same_as_input, differentiable=False)


def guarantee_const(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.guarantee_const`: the input's value, promised constant for the session's lifetime
    (tfc shares the input's buffer). No gradient flows through it, as through a constant."""
    x = convert_to_tensor(input)
    return apply_op("GuaranteeConst", [x], name=name or "GuaranteeConst").outputs[0]
