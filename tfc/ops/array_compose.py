"""Array functions composed of other ops (no kernels of their own): meshgrid, repeat, shape_n,
parallel_stack, broadcast_static_shape, and TF1's tf.tuple.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Operation, Tensor, control_dependencies, name_scope
from tfc.ir.tensor_shape import TensorShape
from tfc.ops.array_index import gather
from tfc.ops.array_join import stack, tile
from tfc.ops.array_order import broadcast_to
from tfc.ops.array_shape import expand_dims, identity, reshape, shape
from tfc.ops.constant import constant, convert_to_tensor, is_tensor_like
from tfc.ops.control import group
from tfc.ops.registry import constant_value

__all__ = [
    "meshgrid",
    "repeat",
    "shape_n",
    "parallel_stack",
    "broadcast_static_shape",
    "tuple",
]


def meshgrid(*args: Any, **kwargs: Any) -> list[Tensor]:
    """`tf.meshgrid`: N coordinate tensors of an N-D grid from N vectors; `indexing="xy"`
    (Cartesian: the first two dims swapped) or "ij" (matrix)."""
    indexing = kwargs.pop("indexing", "xy")
    name = kwargs.pop("name", "meshgrid")
    if kwargs:
        raise TypeError(f"'{next(iter(kwargs))}' is an invalid keyword argument for this function")
    if indexing not in ("xy", "ij"):
        raise ValueError(
            f"Argument `indexing` parameter must be either 'xy' or 'ij', got '{indexing}'"
        )
    with name_scope(name, "meshgrid", list(args)):
        ndim = len(args)
        vectors = [reshape(convert_to_tensor(x), [-1]) for x in args]
        sizes = [shape(v)[0] for v in vectors]
        ones = [1] * ndim
        views = [reshape(v, ones[:i] + [-1] + ones[i + 1 :]) for i, v in enumerate(vectors)]
        if indexing == "xy" and ndim > 1:
            views[0] = reshape(vectors[0], [1, -1] + [1] * (ndim - 2))
            views[1] = reshape(vectors[1], [-1, 1] + [1] * (ndim - 2))
            sizes[0], sizes[1] = sizes[1], sizes[0]
        grid = stack(sizes) if sizes else constant([], _dt.int32)
        return [broadcast_to(v, grid) for v in views]


def repeat(input: Any, repeats: Any, axis: int | None = None, name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.repeat`: each element (slice along `axis`; no axis: of the flattened input) repeated
    `repeats` times (a count for all, or one per element). The counts must be known when the
    graph is built: they decide the output's shape."""
    with name_scope(name, "Repeat", [input, repeats]):
        x = convert_to_tensor(input, name="input")
        if axis is None:
            x = reshape(x, [-1])
            axis = 0
        counts = repeats
        if is_tensor_like(repeats):
            t = convert_to_tensor(repeats)
            counts = constant_value(t.graph, (t.op.name, t.value_index))
            if counts is None:
                raise ValueError(
                    "tf.repeat's repeats must be known when the graph is built: they decide the "
                    "shape of the output, which tfc compiles ahead of time"
                )
        counts = np.asarray(counts)
        if counts.dtype.kind not in "iu" or counts.ndim > 1:
            raise ValueError(f"repeats must be an int scalar or vector, got {counts!r}")
        dims = x._shape_tuple
        if dims is None or not -len(dims) <= axis < len(dims):
            raise ValueError(f"axis {axis} is out of range for input of shape {x.shape}")
        axis %= len(dims)
        if (counts < 0).any():
            raise ValueError(f"repeats must be non-negative, got {counts.tolist()}")
        if counts.size == 1:  # one count for all: each slice tiled along a new axis after it
            c = int(counts.ravel()[0])
            multiples = [1] * (len(dims) + 1)
            multiples[axis + 1] = c
            tiled = tile(expand_dims(x, axis + 1), multiples)
            sizes = shape(x)
            new_shape = [d if d is not None else sizes[k] for k, d in enumerate(dims)]
            new_shape[axis] = dims[axis] * c if dims[axis] is not None else sizes[axis] * c
            return reshape(tiled, new_shape)
        n = dims[axis]
        if n is not None and counts.size != n:
            raise ValueError(f"Dimensions {n} and {counts.size} are not compatible")
        positions = np.repeat(np.arange(counts.size, dtype=np.int32), counts.ravel())
        return gather(x, constant(positions, name="positions"), axis=axis)


def shape_n(input: Any, out_type: Any = _dt.int32, name: str | None = None) -> list[Tensor]:  # noqa: A002
    """`tf.shape_n`: the shape of each tensor of `input`, as 1-D tensors."""
    with name_scope(name, "ShapeN", list(input)):
        return [shape(x, out_type=out_type) for x in input]


def parallel_stack(values: Any, name: str = "parallel_stack") -> Tensor:
    """`tf.parallel_stack`: tf.stack of tensors whose shapes are all known (TF copies them in
    parallel; here stack's one kernel does)."""
    tensors = [convert_to_tensor(v) for v in values]
    for t in tensors:
        if not t.shape.is_fully_defined():
            raise ValueError(
                f"parallel_stack needs every input's shape fully defined, got {t.shape} for {t}"
            )
    return stack(tensors, name=name)


def broadcast_static_shape(shape_x: Any, shape_y: Any) -> TensorShape:
    """`tf.broadcast_static_shape`: the TensorShape two static shapes broadcast to; a dim
    unknown in one is taken from the other unless that is 1."""
    x, y = TensorShape(shape_x), TensorShape(shape_y)
    if x.ndims is None or y.ndims is None:
        return TensorShape(None)
    a, b = x.as_list(), y.as_list()
    rank = max(len(a), len(b))
    a = [1] * (rank - len(a)) + a
    b = [1] * (rank - len(b)) + b
    out = []
    for p, q in zip(a, b):
        if p == 1:
            out.append(q)
        elif q == 1:
            out.append(p)
        elif p is None or q is None or p == q:
            out.append(p if p is not None else q)
        else:
            raise ValueError(
                "Incompatible shapes for broadcasting. Two shapes are compatible if for each "
                "dimension pair they are either equal or one of them is 1. Received: "
                f"{builtins.tuple(x.as_list())} and {builtins.tuple(y.as_list())}."
            )
    return TensorShape(out)


def tuple(tensors: Any, name: str | None = None, control_inputs: Any = None) -> list:  # noqa: A001
    """`tf.tuple` (TF1): the tensors, each returned only once all of them (and
    `control_inputs`) are computed; None entries stay None."""
    tensors = list(tensors)
    if not any(t is not None for t in tensors):
        raise ValueError(f"'tensors' must have at least one Tensor. Received: {tensors}.")
    with name_scope(name, "tuple", [t for t in tensors if t is not None]):
        tensors = [None if t is None else convert_to_tensor(t) for t in tensors]
        gating = [t.op for t in tensors if t is not None]
        for c in control_inputs or []:
            op = c if isinstance(c, Operation) else getattr(c, "op", None)
            if not isinstance(op, Operation):
                raise TypeError(
                    f"'control_inputs' must only contain Operation or Tensor, got {c!r}"
                )
            gating.append(op)
        gate = group(*gating)
        out = []
        for t in tensors:
            if t is None:
                out.append(None)
                continue
            with control_dependencies([gate]):
                out.append(identity(t, name="control_dependency"))
        return out
