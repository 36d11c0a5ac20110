"""Norms and clipping by norm: `tf.norm`, `tf.global_norm`, `tf.clip_by_norm`,
`tf.clip_by_global_norm` (the gradient-clipping idiom), `tf.clip_by_average_norm`.

Each is composed of element-wise ops and reductions as TF1 composes it, so its gradient and
kernels come from those ops. As in TF, an IndexedSlices (an embedding's gradient) counts by its
rows' values and comes back clipped as IndexedSlices, never made dense.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import tfc.ops.array as _array
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, colocate_with, name_scope
from tfc.ops.array_common import pick_argument
from tfc.ops.constant import constant, convert_to_tensor
from tfc.ops.grad_ops import select
from tfc.ops.indexed_slices import IndexedSlices
from tfc.ops.logic import greater
from tfc.ops.math import abs as _abs
from tfc.ops.math import cast, maximum, minimum, multiply, pow, rsqrt, sqrt
from tfc.ops.reduce import reduce_max, reduce_sum

__all__ = ["norm", "global_norm", "clip_by_norm", "clip_by_global_norm", "clip_by_average_norm"]

_MATRIX_NORMS = ["euclidean", "fro", 1, 2, np.inf]
_VECTOR_NORMS = ["euclidean", 1, 2, np.inf]


def _is_ord(ord: Any, *values: Any) -> bool:  # noqa: A002
    return any(ord == v for v in values)


def norm(
    tensor: Any,
    ord: Any = "euclidean",  # noqa: A002  TF's parameter name
    axis: Any = None,
    keepdims: bool | None = None,
    name: str | None = None,
    keep_dims: bool | None = None,
) -> Tensor:
    """`tf.norm`: a vector norm over `axis` (None: all of the tensor as one vector; an int),
    ord 'euclidean', 1, 2, np.inf or any p > 0; or a matrix norm over a pair of axes, ord
    'euclidean'/'fro', 1 (the largest column sum of |x|) or np.inf (the largest row sum).
    The matrix 2-norm needs singular values, which tfc does not compute."""
    keep = bool(pick_argument(keepdims, "keepdims", keep_dims, "keep_dims") or False)
    is_matrix = isinstance(axis, (tuple, list)) and len(axis) == 2
    if is_matrix:
        axis = tuple(axis)
        if not all(isinstance(a, (int, np.integer)) for a in axis) or axis[0] == axis[1]:
            raise ValueError(
                f"'axis' must be None, an integer, or a tuple of 2 unique integers, got {axis}"
            )
        if not _is_ord(ord, *_MATRIX_NORMS):
            raise ValueError(f"'ord' must be a supported matrix norm in {_MATRIX_NORMS}, got {ord}")
        if _is_ord(ord, 2):
            raise NotImplementedError(
                "tf.norm with ord=2 over two axes is the largest singular value, which needs an "
                "SVD; tfc has no SVD op"
            )
    else:
        if not (axis is None or isinstance(axis, (int, np.integer))):
            raise ValueError(
                f"'axis' must be None, an integer, or a tuple of 2 unique integers, got {axis}"
            )
        numeric = not isinstance(ord, str) and np.isreal(ord) and ord > 0
        if not numeric and not _is_ord(ord, *_VECTOR_NORMS):
            raise ValueError(f"'ord' must be a supported vector norm, got {ord}")
        if axis is not None:
            axis = (int(axis),)
    with name_scope(name, "norm") as scope:
        x = convert_to_tensor(tensor)
        if _is_ord(ord, "fro", "euclidean", 2):
            result = sqrt(reduce_sum(x * x, axis, keepdims=True))
        else:
            result = _abs(x)
            if _is_ord(ord, 1):
                result = reduce_sum(result, None if axis is None else axis[0], keepdims=True)
                if is_matrix:
                    result = reduce_max(result, axis[-1], keepdims=True)
            elif _is_ord(ord, np.inf):
                if is_matrix:
                    result = reduce_sum(result, axis[1], keepdims=True)
                result = reduce_max(result, None if axis is None else axis[0], keepdims=True)
            else:
                p = constant(float(ord), dtype=x.dtype)
                summed = reduce_sum(pow(result, p), axis, keepdims=True)
                result = pow(summed, constant(1.0 / float(ord), dtype=x.dtype))
        if keep:
            return _array.identity(result, name=scope)
        return _array.squeeze(result, None if axis is None else list(axis), name=scope)


def _tensor_list(t_list: Any, what: str) -> list:
    if not isinstance(t_list, Sequence) or isinstance(t_list, str):
        raise TypeError(f"`{what}` should be a sequence of tensors, got {type(t_list).__name__}")
    return [t if t is None or isinstance(t, IndexedSlices) else convert_to_tensor(t)
            for t in t_list]  # fmt: skip


def _values(t: Any) -> Tensor:
    """The tensor whose elements count for a norm: an IndexedSlices' rows (TF's)."""
    return t.values if isinstance(t, IndexedSlices) else t


def _like(t: Any, values: Tensor) -> Any:
    """`values` in t's form: rows at t's indices when t is an IndexedSlices."""
    if isinstance(t, IndexedSlices):
        return IndexedSlices(values, t.indices, t.dense_shape)
    return values


def global_norm(t_list: Any, name: str | None = None) -> Tensor:
    """`tf.global_norm`: sqrt(sum of the squares of every element of every tensor) (None
    entries are skipped), from each tensor's l2_loss as TF computes it."""
    values = _tensor_list(t_list, "t_list")
    present = [_values(v) for v in values if v is not None]
    if not present:
        raise ValueError("global_norm needs at least one tensor that is not None")
    with name_scope(name, "global_norm") as scope:
        halves = []
        for v in present:
            with colocate_with(v):
                halves.append(reduce_sum(v * v) * constant(0.5, dtype=v.dtype))
        half = reduce_sum(_array.stack(halves))
        return sqrt(half * constant(2.0, dtype=half.dtype), name=scope)


def clip_by_norm(t: Any, clip_norm: Any, axes: Any = None, name: str | None = None) -> Tensor:
    """`tf.clip_by_norm`: t * clip_norm / max(|t|, clip_norm), |t| the L2 norm over `axes`
    (all when None); t itself where its norm is at most clip_norm. The zero tensor stays
    zero, with a finite gradient (TF's two selects)."""
    with name_scope(name, "clip_by_norm") as scope:
        if isinstance(t, IndexedSlices):
            return _like(t, clip_by_norm(t.values, clip_norm, axes, name=scope))
        values = convert_to_tensor(t, name="t")
        clip = convert_to_tensor(clip_norm, dtype=values.dtype)
        l2sum = reduce_sum(values * values, axes, keepdims=True)
        positive = greater(l2sum, constant(0, dtype=l2sum.dtype))
        l2sum_safe = select(positive, l2sum, 1)
        l2norm = select(positive, sqrt(l2sum_safe), l2sum)
        intermediate = values * clip
        return _array.identity(intermediate / maximum(l2norm, clip), name=scope)


def clip_by_global_norm(
    t_list: Any, clip_norm: Any, use_norm: Any = None, name: str | None = None
) -> tuple[list, Tensor]:
    """`tf.clip_by_global_norm`: every tensor scaled by clip_norm / max(global_norm,
    clip_norm), and the global norm: `grads, norm = tf.clip_by_global_norm(grads, 5.0)`.
    None entries stay None; a global norm that is not finite makes every value NaN (TF)."""
    values = _tensor_list(t_list, "t_list")
    if use_norm is None:
        use_norm = global_norm(values, name)
    use_norm = convert_to_tensor(use_norm)
    with name_scope(name, "clip_by_global_norm") as scope:
        dtype = use_norm.dtype
        clip = convert_to_tensor(clip_norm, dtype=dtype)
        one = constant(1.0, dtype=dtype)
        scale_for_finite = clip * minimum(one / use_norm, one / clip)
        scale = scale_for_finite + (use_norm - use_norm)  # NaN unless the norm is finite
        clipped: list = []
        for i, v in enumerate(values):
            if v is None:
                clipped.append(None)
                continue
            rows = _values(v)
            with colocate_with(rows):
                factor = scale if rows.dtype == dtype else cast(scale, rows.dtype)
                scaled = _array.identity(multiply(rows, factor), name=f"{scope}_{i}")
                clipped.append(_like(v, scaled))
        return clipped, use_norm


def clip_by_average_norm(t: Any, clip_norm: Any, name: str | None = None) -> Tensor:
    """`tf.clip_by_average_norm`: t * clip_norm / max(|t| / size(t), clip_norm), the L2 norm
    averaged over the elements (float32, as TF1 computes it)."""
    with name_scope(name, "clip_by_average_norm") as scope:
        values = convert_to_tensor(t, name="t")
        if values.dtype != _dt.float32:
            raise TypeError(f"clip_by_average_norm works on float32, got {values.dtype.name}")
        clip = convert_to_tensor(clip_norm, dtype=_dt.float32)
        count = cast(_array.size(values), _dt.float32)
        l2norm_inv = rsqrt(reduce_sum(values * values))
        factor = minimum(l2norm_inv * count, constant(1.0, _dt.float32) / clip)
        return _array.identity(values * clip * factor, name=scope)
