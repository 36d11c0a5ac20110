"""Matrix structure ops: bands, diagonals and cross products, and the composites built on them.

    MatrixBandPart                          a band of each matrix kept, the rest zeroed
    MatrixDiagV3, MatrixDiagPartV3,         one diagonal (offset k) of [..., M, N] matrices:
    MatrixSetDiagV3                         built, read, replaced (TF's band forms, a pair of
                                            k, are not supported: a clear error says so)
    Diag, DiagPart                          the diagonal of a rank-2k tensor (tf.diag)
    Cross                                   3-vector cross products
    matrix_transpose, eye, trace            composites

Every kernel is a strided copy (loop specs: a diagonal is a stride of N + 1) except the band's,
which picks each row's columns (BandSpec).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import Tensor, name_scope
from tfc.ir.tensor_shape import shape_str
from tfc.ops.array_common import INDEX_DTYPES, check_rank, contiguous, index_tensor, merge_or_raise
from tfc.ops.array_fill import ones, zeros_like
from tfc.ops.array_join import concat, transpose
from tfc.ops.constant import constant, convert_to_tensor
from tfc.ops.flops import no_flops, per_output_element
from tfc.ops.kernels import BandSpec, Kernel, Operand, Param, format_expr, loop_kernel, view
from tfc.ops.math import minimum
from tfc.ops.reduce import reduce_sum
from tfc.ops.registry import OpContext, OpDef, apply_op, check_dtype, check_same_dtypes, register

__all__ = [
    "matrix_band_part",
    "matrix_diag",
    "matrix_diag_part",
    "matrix_set_diag",
    "diag",
    "diag_part",
    "cross",
    "matrix_transpose",
    "eye",
    "trace",
]

_ALIGNS = ("LEFT_RIGHT", "RIGHT_LEFT", "LEFT_LEFT", "RIGHT_RIGHT")


def _matrix_shape(ctx: OpContext, i: int = 0) -> tuple | None:
    """Input i's shape, which must be of rank 2 or more (None when its rank is unknown)."""
    shape = ctx.in_shapes[i]
    if shape is not None and len(shape) < 2:
        raise ctx.error(f"Shape must be at least rank 2 but is rank {len(shape)}")
    return shape


def _check_same_dtype(ctx: OpContext, i: int, name: str, first: str) -> None:
    """TF's error when input i's dtype is not input 0's."""
    if ctx.in_dtypes[i] != ctx.in_dtypes[0]:
        raise TypeError(
            f"Input '{name}' of '{ctx.type}' Op has type {ctx.in_dtypes[i].name} that does not "
            f"match type {ctx.in_dtypes[0].name} of argument '{first}'."
        )


def _scalar_int(ctx: OpContext, i: int, what: str) -> int | None:
    check_dtype(ctx, i, INDEX_DTYPES, what)
    check_rank(ctx, i, 0)
    value = ctx.const(i)
    return None if value is None else int(np.asarray(value).reshape(()))


# -- MatrixBandPart ------------------------------------------------------------------------------
def _band_infer(ctx: OpContext) -> list:
    shape = _matrix_shape(ctx)
    _scalar_int(ctx, 1, "num_lower")
    _scalar_int(ctx, 2, "num_upper")
    return [(ctx.in_dtypes[0], shape)]


def _check_band(rows: int, cols: int, lower: int, upper: int) -> None:
    """TF's bounds on num_lower and num_upper, checked when the op runs."""
    for value, size, what, dim in (
        (lower, rows, "num_lower", "rows"),
        (upper, cols, "num_upper", "columns"),
    ):
        if value > size:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"{what} must be negative or less or equal to number of {dim} ({size}) got: "
                f"{value}",
            )


def _band_mask(rows: int, cols: int, lower: int, upper: int) -> np.ndarray:
    i = np.arange(rows)[:, None]
    j = np.arange(cols)[None, :]
    return ((lower < 0) | (i - j <= lower)) & ((upper < 0) | (j - i <= upper))


def _band_reference(ctx: OpContext, x: np.ndarray, lower: np.ndarray, upper: np.ndarray):
    lower, upper = int(lower), int(upper)
    _check_band(x.shape[-2], x.shape[-1], lower, upper)
    keep = _band_mask(x.shape[-2], x.shape[-1], lower, upper)
    return np.where(keep, x, np.zeros((), x.dtype))


def _band_lower(ctx: OpContext) -> list[Kernel]:
    shape, dtype = ctx.in_shapes[0], ctx.in_dtypes[0]
    if math.prod(shape) == 0:
        return []
    lower = int(ctx.require_const(1, "num_lower"))
    upper = int(ctx.require_const(2, "num_upper"))
    _check_band(shape[-2], shape[-1], lower, upper)
    spec = BandSpec(dtype, math.prod(shape[:-2]), shape[-2], shape[-1], lower, upper)
    params = [Param("y", dtype.c_type, False, "out0"), Param("x0", dtype.c_type, True, "in0")]
    return [Kernel("band_part", params, spec)]


register(
    OpDef(
        "MatrixBandPart",
        infer=_band_infer,
        reference=_band_reference,
        lower=_band_lower,
        flops=no_flops,
        const_inputs=(1, 2),
        grad=lambda op, dy: [matrix_band_part(dy, op.inputs[1], op.inputs[2]), None, None],
        input_names=("input", "num_lower", "num_upper"),
    )
)


def matrix_band_part(input: Any, num_lower: Any, num_upper: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.matrix_band_part` (`tf.linalg.band_part`): each innermost matrix with the entries
    more than `num_lower` below or `num_upper` above the diagonal set to 0 (a negative count
    keeps that whole triangle): (0, -1) is the upper triangle, (-1, 0) the lower one."""
    with name_scope(name, "MatrixBandPart", [input]) as scope:
        x = convert_to_tensor(input, name="input")
        lower = index_tensor(num_lower, "num_lower")
        upper = index_tensor(num_upper, "num_upper")
        return apply_op("MatrixBandPart", [x, lower, upper], name=scope).outputs[0]


# -- MatrixDiagV3, MatrixDiagPartV3, MatrixSetDiagV3: one diagonal, offset k ---------------------
def _diagonal_index(ctx: OpContext, i: int) -> int | None:
    """The k of input i: a scalar, or a pair naming one diagonal twice (TF's band form with
    two different diagonals is not supported)."""
    check_dtype(ctx, i, (_dt.int32,), "k")
    value = ctx.const(i)
    if value is None:
        return None
    ks = np.asarray(value).reshape(-1)
    if ks.size not in (1, 2) or ks.size == 2 and ks[0] != ks[1]:
        raise ctx.error(
            f"tfc takes one diagonal (k a scalar, or a pair of equal values), but k is "
            f"{ks.tolist()}: bands of diagonals (k = (lower, upper)) are not supported"
        )
    return int(ks[0])


def _check_align(ctx: OpContext) -> None:
    align = ctx.attrs.get("align", "RIGHT_LEFT")
    if align not in _ALIGNS:
        raise ctx.error(f"align must be one of {', '.join(_ALIGNS)}, got '{align}'")


def _diagonal_length(rows: int | None, cols: int | None, k: int | None) -> int | None:
    """The number of entries of diagonal k of a rows x cols matrix."""
    if rows is None or cols is None or k is None:
        return None
    return max(0, min(rows + min(k, 0), cols - max(k, 0)))


def _diagonal_view(buf: str, dtype: _dt.DType, shape: tuple, k: int) -> Operand:
    """Diagonal k of each contiguous [..., rows, cols] matrix as a view [batch, length]."""
    rows, cols = shape[-2], shape[-1]
    return Operand(buf, dtype, (rows * cols, cols + 1), max(-k, 0) * cols + max(k, 0))


def _check_k_in_range(ctx: OpContext, rows: int | None, cols: int | None, k: int | None) -> None:
    if k is None or rows is None or cols is None:
        return
    if not (-rows < k < cols or k == 0):
        raise ctx.error(
            f"lower_diag_index is out of bound: {k}. It must be between {-rows} and {cols}"
        )


def _diag_rows_cols(length: int, k: int, rows: int, cols: int) -> tuple[int, int]:
    """MatrixDiagV3's output rows and columns for a diagonal of `length` at k: TF's defaults
    for -1, and its check that given ones fit (ValueError with TF's message)."""
    min_rows, min_cols = length + max(-k, 0), length + max(k, 0)
    if rows == -1 and cols == -1:
        rows = cols = max(min_rows, min_cols)
    elif rows == -1:
        rows = min_rows
    elif cols == -1:
        cols = min_cols
    if rows != min_rows and cols != min_cols:
        raise ValueError(
            "num_rows and num_cols are not consistent with lower_diag_index, upper_diag_index, "
            "and the length of the given diagonals.\n"
            f"num_rows = {rows} != min_num_rows = {min_rows}, num_cols = {cols} != "
            f"min_num_cols = {min_cols}"
        )
    return rows, cols


def _matrix_diag_infer(ctx: OpContext) -> list:
    _check_align(ctx)
    dtype = ctx.in_dtypes[0]
    _check_same_dtype(ctx, 4, "padding_value", "diagonal")
    shape = ctx.in_shapes[0]
    if shape is not None and len(shape) < 1:
        raise ctx.error("Shape must be at least rank 1 but is rank 0")
    check_rank(ctx, 4, 0)
    k = _diagonal_index(ctx, 1)
    rows, cols = _scalar_int(ctx, 2, "num_rows"), _scalar_int(ctx, 3, "num_cols")
    if shape is None:
        return [(dtype, None)]
    if shape[-1] is not None and k is not None and rows is not None and cols is not None:
        try:
            rows, cols = _diag_rows_cols(shape[-1], k, rows, cols)
        except ValueError as e:
            raise ctx.error(str(e)) from None
    else:
        rows = rows if rows is not None and rows >= 0 else None
        cols = cols if cols is not None and cols >= 0 else None
    return [(dtype, (*shape[:-1], rows, cols))]


def _matrix_diag_reference(ctx, diagonal, k, num_rows, num_cols, padding):
    k = int(np.asarray(k).reshape(-1)[0])
    rows, cols = _diag_rows_cols(diagonal.shape[-1], k, int(num_rows), int(num_cols))
    out = np.full((*diagonal.shape[:-1], rows, cols), padding, dtype=diagonal.dtype)
    idx = np.arange(diagonal.shape[-1])
    out[..., idx + max(-k, 0), idx + max(k, 0)] = diagonal
    return out


def _matrix_diag_lower(ctx: OpContext) -> list[Kernel]:
    shape, out_shape, dtype = ctx.in_shapes[0], ctx.out_shapes[0], ctx.out_dtypes[0]
    k = _diagonal_index(ctx, 1)
    out = contiguous("out0", dtype, out_shape)
    fill = loop_kernel(out_shape, out, [Operand("in4", dtype, (0,) * len(out_shape))], "{0}")
    batch, length = math.prod(shape[:-1]), shape[-1]
    place = loop_kernel(
        (batch, length),
        _diagonal_view("out0", dtype, out_shape, k),
        [view("in0", dtype, (batch, length))],
        "{0}",
    )
    return fill + place


def _matrix_diag_grad(op, dy):
    return [_diag_part(dy, op.inputs[1]), None, None, None, None]


register(
    OpDef(
        "MatrixDiagV3",
        infer=_matrix_diag_infer,
        reference=_matrix_diag_reference,
        lower=_matrix_diag_lower,
        flops=no_flops,
        const_inputs=(1, 2, 3),
        grad=_matrix_diag_grad,
        input_names=("diagonal", "k", "num_rows", "num_cols", "padding_value"),
    )
)


def _diag_part_infer(ctx: OpContext) -> list:
    _check_align(ctx)
    shape = _matrix_shape(ctx)
    check_rank(ctx, 2, 0)
    _check_same_dtype(ctx, 2, "padding_value", "input")
    k = _diagonal_index(ctx, 1)
    if shape is None:
        return [(ctx.in_dtypes[0], None)]
    _check_k_in_range(ctx, shape[-2], shape[-1], k)
    return [(ctx.in_dtypes[0], (*shape[:-2], _diagonal_length(shape[-2], shape[-1], k)))]


def _diag_part_reference(ctx, x, k, padding):
    k = int(np.asarray(k).reshape(-1)[0])
    idx = np.arange(_diagonal_length(x.shape[-2], x.shape[-1], k))
    return np.array(x[..., idx + max(-k, 0), idx + max(k, 0)])


def _diag_part_lower(ctx: OpContext) -> list[Kernel]:
    shape, out_shape, dtype = ctx.in_shapes[0], ctx.out_shapes[0], ctx.out_dtypes[0]
    k = _diagonal_index(ctx, 1)
    batch, length = math.prod(shape[:-2]), out_shape[-1]
    out = view("out0", dtype, (batch, length))
    return loop_kernel((batch, length), out, [_diagonal_view("in0", dtype, shape, k)], "{0}")


register(
    OpDef(
        "MatrixDiagPartV3",
        infer=_diag_part_infer,
        reference=_diag_part_reference,
        lower=_diag_part_lower,
        flops=no_flops,
        const_inputs=(1,),
        grad=lambda op, dy: [_set_diag(zeros_like(op.inputs[0]), dy, op.inputs[1]), None, None],
        input_names=("input", "k", "padding_value"),
    )
)


def _set_diag_infer(ctx: OpContext) -> list:
    _check_align(ctx)
    _check_same_dtype(ctx, 1, "diagonal", "input")
    shape = _matrix_shape(ctx)
    diagonal = ctx.in_shapes[1]
    k = _diagonal_index(ctx, 2)
    if shape is None:
        return [(ctx.in_dtypes[0], None)]
    _check_k_in_range(ctx, shape[-2], shape[-1], k)
    expected = (*shape[:-2], _diagonal_length(shape[-2], shape[-1], k))
    if diagonal is not None:
        fits = len(diagonal) == len(expected) and all(
            a is None or b is None or a == b for a, b in zip(diagonal, expected)
        )
        if not fits:
            raise ctx.error(
                "Either first dimensions of diagonal don't match input.shape[:-2], or "
                "diagonal.shape[:-1] is not equal to the longests diagonal in range "
                f"[lower_diag_index:upper_diag_index].\nInput shape: {shape_str(shape)}\n"
                f"Diagonal shape: {shape_str(diagonal)}\nExpected diagonal shape: "
                f"{shape_str(expected)}"
            )
        batch = tuple(a if a is not None else b for a, b in zip(shape[:-2], diagonal[:-1]))
        shape = (*batch, shape[-2], shape[-1])
    return [(ctx.in_dtypes[0], shape)]


def _set_diag_reference(ctx, x, diagonal, k):
    k = int(np.asarray(k).reshape(-1)[0])
    out = np.array(x)
    idx = np.arange(diagonal.shape[-1])
    out[..., idx + max(-k, 0), idx + max(k, 0)] = diagonal
    return out


def _set_diag_lower(ctx: OpContext) -> list[Kernel]:
    shape, dtype = ctx.out_shapes[0], ctx.out_dtypes[0]
    k = _diagonal_index(ctx, 2)
    copy = loop_kernel(shape, contiguous("out0", dtype, shape), [view("in0", dtype, shape)], "{0}")
    batch, length = math.prod(shape[:-2]), ctx.in_shapes[1][-1]
    place = loop_kernel(
        (batch, length),
        _diagonal_view("out0", dtype, shape, k),
        [view("in1", dtype, (batch, length))],
        "{0}",
    )
    return copy + place


def _set_diag_grad(op, dy):
    x, diagonal, k = op.inputs
    return [_set_diag(dy, zeros_like(diagonal), k), _diag_part(dy, k), None]


register(
    OpDef(
        "MatrixSetDiagV3",
        infer=_set_diag_infer,
        reference=_set_diag_reference,
        lower=_set_diag_lower,
        flops=no_flops,
        const_inputs=(2,),
        grad=_set_diag_grad,
        input_names=("input", "diagonal", "k"),
    )
)


def _k_tensor(k: Any) -> Tensor:
    return k if isinstance(k, Tensor) else constant(np.asarray(k, np.int32), name="k")


def _diag_part(
    x: Tensor, k: Any, padding_value: Any = 0, align: str = "RIGHT_LEFT", name: str | None = None
) -> Tensor:
    pad = convert_to_tensor(padding_value, dtype=x.dtype, name="padding_value")
    attrs = {"align": align}
    return apply_op(
        "MatrixDiagPartV3", [x, _k_tensor(k), pad], attrs, name=name or "diag_part"
    ).outputs[0]


def _set_diag(
    x: Tensor, diagonal: Tensor, k: Any, align: str = "RIGHT_LEFT", name: str | None = None
) -> Tensor:
    return apply_op(
        "MatrixSetDiagV3", [x, diagonal, _k_tensor(k)], {"align": align}, name=name or "set_diag"
    ).outputs[0]


def matrix_diag(
    diagonal: Any,
    name: str = "diag",
    k: Any = 0,
    num_rows: Any = -1,
    num_cols: Any = -1,
    padding_value: Any = 0,
    align: str = "RIGHT_LEFT",
) -> Tensor:
    """`tf.matrix_diag` (`tf.linalg.diag`): matrices [..., rows, cols] holding `diagonal`'s
    last dimension on their diagonal k (0: the main one, > 0 above it), `padding_value`
    elsewhere; rows and cols default to the smallest square that holds it."""
    with name_scope(name, "diag", [diagonal]) as scope:
        d = convert_to_tensor(diagonal, name="diagonal")
        inputs = [
            d,
            _k_tensor(k),
            index_tensor(num_rows, "num_rows"),
            index_tensor(num_cols, "num_cols"),
            convert_to_tensor(padding_value, dtype=d.dtype, name="padding_value"),
        ]
        return apply_op("MatrixDiagV3", inputs, {"align": align}, name=scope).outputs[0]


def matrix_diag_part(
    input: Any,  # noqa: A002
    name: str = "diag_part",
    k: Any = 0,
    padding_value: Any = 0,
    align: str = "RIGHT_LEFT",
) -> Tensor:
    """`tf.matrix_diag_part` (`tf.linalg.diag_part`): diagonal k of each innermost matrix."""
    with name_scope(name, "diag_part", [input]) as scope:
        x = convert_to_tensor(input, name="input")
        return _diag_part(x, k, padding_value, align, name=scope)


def matrix_set_diag(
    input: Any,  # noqa: A002
    diagonal: Any,
    name: str = "set_diag",
    k: Any = 0,
    align: str = "RIGHT_LEFT",
) -> Tensor:
    """`tf.matrix_set_diag` (`tf.linalg.set_diag`): `input` with diagonal k of each innermost
    matrix replaced by `diagonal`."""
    with name_scope(name, "set_diag", [input, diagonal]) as scope:
        x = convert_to_tensor(input, name="input")
        d = convert_to_tensor(diagonal, dtype=x.dtype, name="diagonal")
        return _set_diag(x, d, k, align, name=scope)


# -- Diag, DiagPart --------------------------------------------------------------------------------
def _diag_infer(ctx: OpContext) -> list:
    shape = ctx.in_shapes[0]
    if shape is None:
        return [(ctx.in_dtypes[0], None)]
    if len(shape) < 1:
        raise ctx.error("Shape must be at least rank 1 but is rank 0")
    return [(ctx.in_dtypes[0], (*shape, *shape))]


def _diag_lower(ctx: OpContext) -> list[Kernel]:
    dtype = ctx.out_dtypes[0]
    n = math.prod(ctx.in_shapes[0])
    if n == 0:
        return []
    zeros = loop_kernel((n * n,), view("out0", dtype, (n * n,)), [], "0")
    place = loop_kernel((n,), Operand("out0", dtype, (n + 1,)), [view("in0", dtype, (n,))], "{0}")
    return zeros + place


register(
    OpDef(
        "Diag",
        infer=_diag_infer,
        reference=lambda ctx, x: np.diag(x.reshape(-1)).reshape(x.shape + x.shape),
        lower=_diag_lower,
        flops=no_flops,
        grad=lambda op, dy: [diag_part(dy)],
        input_names=("diagonal",),
    )
)


def _diag_part_op_infer(ctx: OpContext) -> list:
    shape = ctx.in_shapes[0]
    if shape is None:
        return [(ctx.in_dtypes[0], None)]
    if len(shape) % 2 or not shape:
        raise ctx.error(f"Input must have even rank <= 6, input rank is {len(shape)}")
    half = len(shape) // 2
    for a, b in zip(shape[:half], shape[half:]):
        if a is not None and b is not None and a != b:
            raise ctx.error(f"Dimensions must be equal, but are {a} and {b}")
    return [(ctx.in_dtypes[0], merge_or_raise(ctx, shape[:half], shape[half:]))]


def _diag_part_op_lower(ctx: OpContext) -> list[Kernel]:
    dtype, out_shape = ctx.out_dtypes[0], ctx.out_shapes[0]
    n = math.prod(out_shape)
    if n == 0:
        return []
    return loop_kernel((n,), view("out0", dtype, (n,)), [Operand("in0", dtype, (n + 1,))], "{0}")


def _diag_part_op_reference(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    half = x.ndim // 2
    n = math.prod(x.shape[:half])
    return np.array(np.diagonal(x.reshape(n, n))).reshape(x.shape[:half])


register(
    OpDef(
        "DiagPart",
        infer=_diag_part_op_infer,
        reference=_diag_part_op_reference,
        lower=_diag_part_op_lower,
        flops=no_flops,
        grad=lambda op, dy: [diag(dy)],
        input_names=("input",),
    )
)


def diag(diagonal: Any, name: str | None = None) -> Tensor:
    """`tf.diag`: a tensor of rank 2k with `diagonal` (rank k) on its diagonal, zeros elsewhere:
    out[i1..ik, i1..ik] = diagonal[i1..ik]."""
    x = convert_to_tensor(diagonal, name="diagonal")
    return apply_op("Diag", [x], name=name or "Diag").outputs[0]


def diag_part(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.diag_part`: the diagonal of a rank-2k tensor (the inverse of `tf.diag`)."""
    x = convert_to_tensor(input, name="input")
    return apply_op("DiagPart", [x], name=name or "DiagPart").outputs[0]


# -- Cross ---------------------------------------------------------------------------------------
_CROSS_TYPES = (_dt.float32, _dt.float64, _dt.int32, _dt.int64)


def _cross_infer(ctx: OpContext) -> list:
    check_same_dtypes(ctx, ("a", "b"))
    check_dtype(ctx, 0, _CROSS_TYPES, "a")
    a, b = ctx.in_shapes
    for shape in (a, b):
        if shape is not None and len(shape) < 1:
            raise ctx.error("Shape must be at least rank 1 but is rank 0")
    shape = merge_or_raise(ctx, a, b)
    if shape is not None and shape[-1] is not None and shape[-1] != 3:
        raise ctx.error(f"Dimension must be 3 but is {shape[-1]}")
    return [(ctx.in_dtypes[0], shape)]


def _cross_lower(ctx: OpContext) -> list[Kernel]:
    """Each component a strided loop: y[.., c] = a[.., c+1] b[.., c+2] - a[.., c+2] b[.., c+1]
    (indices mod 3); integers wrap, as TF's do."""
    dtype, shape = ctx.out_dtypes[0], ctx.out_shapes[0]
    count = math.prod(shape[:-1])
    if dtype.kind == "f":
        template = "{0} * {1} - {2} * {3}"
    else:
        template = "tfc_sub_{tag}(tfc_mul_{tag}({0}, {1}), tfc_mul_{tag}({2}, {3}))"
    expr = format_expr(template, dtype, "{0}", "{1}", "{2}", "{3}")
    kernels = []
    for c in range(3):
        p, q = (c + 1) % 3, (c + 2) % 3
        ins = [
            Operand("in0", dtype, (3,), p),
            Operand("in1", dtype, (3,), q),
            Operand("in0", dtype, (3,), q),
            Operand("in1", dtype, (3,), p),
        ]
        kernels += loop_kernel((count,), Operand("out0", dtype, (3,), c), ins, expr)
    return kernels


def _cross_reference(ctx: OpContext, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "i":  # wrap as the C kernel does
        with np.errstate(over="ignore"):
            parts = [
                a[..., (c + 1) % 3] * b[..., (c + 2) % 3]
                - a[..., (c + 2) % 3] * b[..., (c + 1) % 3]
                for c in range(3)
            ]
        return np.stack(parts, axis=-1).astype(a.dtype)
    return np.cross(a, b).astype(a.dtype)


register(
    OpDef(
        "Cross",
        infer=_cross_infer,
        reference=_cross_reference,
        lower=_cross_lower,
        flops=per_output_element(3),
        grad=lambda op, dy: [cross(op.inputs[1], dy), cross(dy, op.inputs[0])],
        input_names=("a", "b"),
    )
)


def cross(a: Any, b: Any, name: str | None = None) -> Tensor:
    """`tf.cross` (`tf.linalg.cross`): the cross products of the 3-vectors along the last
    dimension of a and b (same shapes)."""
    with name_scope(name, "Cross", [a, b]) as scope:
        x = convert_to_tensor(a, name="a")
        y = convert_to_tensor(b, dtype=x.dtype, name="b")
        return apply_op("Cross", [x, y], name=scope).outputs[0]


# -- composites ----------------------------------------------------------------------------------
def matrix_transpose(a: Any, name: str = "matrix_transpose", conjugate: bool = False) -> Tensor:
    """`tf.matrix_transpose` (`tf.linalg.matrix_transpose`): the innermost two dimensions
    swapped (a Transpose; `conjugate` changes nothing for real types)."""
    with name_scope(name, "matrix_transpose", [a]) as scope:
        x = convert_to_tensor(a, name="a")
        shape = x._shape_tuple
        if shape is None:
            raise ValueError(
                f"matrix_transpose of {x.name} needs its rank, which is unknown; give the "
                "tensor a shape (tfc builds the permutation when the graph is built)"
            )
        if len(shape) < 2:
            raise ValueError(
                "Argument 'a' should be a (batch) matrix, with rank >= 2.  Found: "
                f"{shape_str(shape)}"
            )
        perm = [*range(len(shape) - 2), len(shape) - 1, len(shape) - 2]
        return transpose(x, perm, name=scope, conjugate=conjugate)


def eye(
    num_rows: Any,
    num_columns: Any = None,
    batch_shape: Any = None,
    dtype: Any = _dt.float32,
    name: str | None = None,
) -> Tensor:
    """`tf.eye`: identity matrices [*batch_shape, num_rows, num_columns] (square when
    num_columns is None): a MatrixDiagV3 of ones, as TensorFlow builds it."""
    dtype = _dt.as_dtype(dtype)
    with name_scope(name, "eye", [num_rows, num_columns, batch_shape]) as scope:
        cols = num_rows if num_columns is None else num_columns
        if all(isinstance(v, (int, np.integer)) for v in (num_rows, cols)):
            length: Any = [min(int(num_rows), int(cols))]
        else:
            length = [minimum(index_tensor(num_rows, "num_rows"), index_tensor(cols, "cols"))]
        if batch_shape is None:
            shape: Any = length
        elif isinstance(batch_shape, Tensor) or isinstance(length[0], Tensor):
            shape = concat(
                [index_tensor(batch_shape, "batch_shape"), index_tensor(length, "length")], 0
            )
        else:
            shape = [int(d) for d in batch_shape] + length
        diagonal = ones(shape, dtype=dtype)
        return matrix_diag(diagonal, num_rows=num_rows, num_cols=cols, name=scope)


def trace(x: Any, name: str | None = None) -> Tensor:
    """`tf.trace` (`tf.linalg.trace`): the sum of each innermost matrix's main diagonal."""
    with name_scope(name, "Trace", [x]) as scope:
        t = convert_to_tensor(x, name="x")
        return reduce_sum(matrix_diag_part(t), axis=-1, name=scope)
