"""Matrix products: MatMul (rank 2) and BatchMatMulV2 (batched, broadcasting), over tfc_gemm."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, name_scope
from tfc.ir.tensor_shape import Shape
from tfc.ops.constant import convert_to_tensor
from tfc.ops.flops import matmul_flops
from tfc.ops.kernels import (
    GemmSpec,
    Kernel,
    Param,
    broadcast_strides,
    collapse,
    contiguous_strides,
    loop_kernel,
    product_operands,
    product_precision,
    view,
)
from tfc.ops.registry import (
    HALVES_IN_FLOAT32,
    OpContext,
    OpDef,
    apply_op,
    broadcast_shape,
    check_dtype,
    check_same_dtypes,
    register,
)

__all__ = ["matmul"]

_TYPES = (_dt.float32, _dt.float64, _dt.int32, _dt.int64)


# -- shape rules --------------------------------------------------------------------------------
def _flags(ctx: OpContext) -> tuple[bool, bool]:
    """Whether the stored a and b are transposed (adjoint is the transpose for real types)."""
    if ctx.type == "MatMul":
        return bool(ctx.attrs.get("transpose_a")), bool(ctx.attrs.get("transpose_b"))
    return bool(ctx.attrs.get("adj_x")), bool(ctx.attrs.get("adj_y"))


def _matrix_dims(shape: tuple, transposed: bool) -> tuple[int | None, int | None]:
    """(rows, cols) of the matrix a stored [..., r, c] stands for."""
    rows, cols = shape[-2], shape[-1]
    return (cols, rows) if transposed else (rows, cols)


def _check_types(ctx: OpContext, names: tuple[str, str]) -> None:
    check_same_dtypes(ctx, names)
    check_dtype(ctx, 0, _TYPES, names[0])


def _inner_dims(ctx: OpContext, a: tuple, b: tuple) -> tuple[int | None, int | None]:
    """(M, N) of the product; TF's error when the contracted dims differ."""
    ta, tb = _flags(ctx)
    m, ka = _matrix_dims(a, ta)
    kb, n = _matrix_dims(b, tb)
    if ka is not None and kb is not None and ka != kb:
        raise ctx.error(f"Dimensions must be equal, but are {ka} and {kb}")
    return m, n


def _matmul_infer(ctx: OpContext) -> list:
    _check_types(ctx, ("a", "b"))
    a, b = ctx.in_shapes
    for shape in (a, b):
        if shape is not None and len(shape) != 2:
            raise ctx.error(f"Shape must be rank 2 but is rank {len(shape)}")
    a = (None, None) if a is None else a
    b = (None, None) if b is None else b
    return [(ctx.in_dtypes[0], _inner_dims(ctx, a, b))]


def _batch_matmul_infer(ctx: OpContext) -> list:
    _check_types(ctx, ("x", "y"))
    a, b = ctx.in_shapes
    for shape in (a, b):
        if shape is not None and len(shape) < 2:
            raise ctx.error(f"Shape must be at least rank 2 but is rank {len(shape)}")
    if a is None or b is None:
        return [(ctx.in_dtypes[0], None)]
    m, n = _inner_dims(ctx, a, b)
    batch: Shape = broadcast_shape(ctx, a[:-2], b[:-2])
    return [(ctx.in_dtypes[0], (*batch, m, n))]


# -- NumPy references ----------------------------------------------------------------------------
def _matmul_reference(ctx: OpContext, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = product_operands(ctx, a, b)
    ta, tb = _flags(ctx)
    a = np.swapaxes(a, -1, -2) if ta else a
    b = np.swapaxes(b, -1, -2) if tb else b
    if a.dtype.kind == "i":
        # integer products wrap: multiply in uint64 (modular) and keep the low bits
        wide = np.matmul(a.astype(np.uint64), b.astype(np.uint64))
        unsigned = np.uint32 if a.dtype == np.int32 else np.uint64
        return wide.astype(unsigned).view(a.dtype)
    return np.matmul(a, b)


# -- C lowering ---------------------------------------------------------------------------------
def matrix_strides(a: tuple, b: tuple, ta: bool, tb: bool) -> tuple[int, int, int, int]:
    """(sam, sak, sbk, sbn): the strides of the stored matrices a [.., m, k] and b [.., k, n] of a
    MatMul (row-major; a transpose is just their swap), as tfc_gemm_* and the CUDA GEMM take."""
    sam, sak = (1, a[-1]) if ta else (a[-1], 1)
    sbk, sbn = (1, b[-1]) if tb else (b[-1], 1)
    return sam, sak, sbk, sbn


def _matmul_lower(ctx: OpContext) -> list[Kernel]:
    dtype = ctx.out_dtypes[0]
    a, b = ctx.in_shapes
    out = ctx.out_shapes[0]
    ta, tb = _flags(ctx)
    m, n = out[-2], out[-1]
    k = _matrix_dims(a, ta)[1]
    if math.prod(out) == 0:
        return []
    if k == 0:
        # an empty sum: zeros, without touching the (empty, possibly NULL) inputs
        return loop_kernel(out, view("out0", dtype, out), [], "0")
    sam, sak, sbk, sbn = matrix_strides(a, b, ta, tb)
    batch = out[:-2]
    a_strides = _batch_strides(a, batch)
    b_strides = _batch_strides(b, batch)
    c_strides = tuple(s * m * n for s in contiguous_strides(batch))
    bounds, (c_st, a_st, b_st) = collapse(batch, [c_strides, a_strides, b_strides])
    spec = GemmSpec(
        dtype, m, n, k, sam, sak, sbk, sbn, tuple(bounds), (tuple(c_st), tuple(a_st), tuple(b_st)),
        product_precision(ctx),
    )  # fmt: skip
    params = [
        Param("y", dtype.c_type, False, "out0"),
        Param("x0", dtype.c_type, True, "in0"),
        Param("x1", dtype.c_type, True, "in1"),
    ]
    return [Kernel("matmul", params, spec)]


def _batch_strides(shape: tuple, batch: tuple) -> tuple[int, ...]:
    """Element strides of a contiguous [..., r, c] operand's batch dims, broadcast to `batch`."""
    return tuple(s * shape[-2] * shape[-1] for s in broadcast_strides(shape[:-2], batch))


# -- gradients ----------------------------------------------------------------------------------
def _matmul_grad(op, dy: Tensor) -> list:
    """C = op(A) op(B): dA and dB are products of dy with the other operand, in the order
    and orientation that give each the stored operand's layout (TF's four cases). Batched
    gradients have the broadcast batch dims; the gradient pass sums them back."""
    a, b = op.inputs
    names = ("transpose_a", "transpose_b") if op.type == "MatMul" else ("adj_x", "adj_y")
    ta, tb = (bool(op.get_attr(n)) for n in names)
    if not ta and not tb:
        return [_product(op, dy, b, False, True), _product(op, a, dy, True, False)]
    if not ta and tb:
        return [_product(op, dy, b, False, False), _product(op, dy, a, True, False)]
    if ta and not tb:
        return [_product(op, b, dy, False, True), _product(op, a, dy, False, False)]
    return [_product(op, b, dy, True, True), _product(op, dy, a, True, True)]


def _product(op, x: Tensor, y: Tensor, tx: bool, ty: bool) -> Tensor:
    if op.type == "MatMul":
        attrs = {"transpose_a": tx, "transpose_b": ty}
    else:
        attrs = {"adj_x": tx, "adj_y": ty}
    return apply_op(op.type, [x, y], attrs, name="MatMul").outputs[0]


register(
    OpDef(
        "MatMul",
        infer=_matmul_infer,
        reference=_matmul_reference,
        lower=_matmul_lower,
        flops=lambda ctx: matmul_flops(ctx, _matrix_dims(ctx.in_shapes[0], _flags(ctx)[0])[1]),
        grad=_matmul_grad,
        input_names=("a", "b"),
        # the GEMM is float32/64 and int32/64 (as TF's CPU kernels but for int16): the 16-bit
        # floats multiply in float32
        dtypes=(_dt.float16, _dt.bfloat16),
        computes_in=HALVES_IN_FLOAT32,
    )
)
register(
    OpDef(
        "BatchMatMulV2",
        infer=_batch_matmul_infer,
        reference=_matmul_reference,
        lower=_matmul_lower,
        flops=lambda ctx: matmul_flops(ctx, _matrix_dims(ctx.in_shapes[0], _flags(ctx)[0])[1]),
        grad=_matmul_grad,
        input_names=("x", "y"),
        # the GEMM is float32/64 and int32/64 (as TF's CPU kernels but for int16): the 16-bit
        # floats multiply in float32
        dtypes=(_dt.float16, _dt.bfloat16),
        computes_in=HALVES_IN_FLOAT32,
    )
)


# -- frontend -----------------------------------------------------------------------------------
def matmul(
    a: Any,
    b: Any,
    transpose_a: bool = False,
    transpose_b: bool = False,
    adjoint_a: bool = False,
    adjoint_b: bool = False,
    a_is_sparse: bool = False,
    b_is_sparse: bool = False,
    name: str | None = None,
) -> Tensor:
    """`tf.matmul`: the matrix product of a and b, optionally transposed (adjoint is the same
    for real types). Rank-2 operands make a MatMul op; higher ranks (or unknown ones) a
    BatchMatMulV2 whose leading dims broadcast as NumPy's do. The sparsity hints only select an
    algorithm in TensorFlow and change no result, so they are accepted and ignored.
    """
    if transpose_a and adjoint_a:
        raise ValueError("Only one of transpose_a and adjoint_a can be True.")
    if transpose_b and adjoint_b:
        raise ValueError("Only one of transpose_b and adjoint_b can be True.")
    with name_scope(name, "MatMul", [a, b]) as scope:
        a = convert_to_tensor(a, name="a")
        b = convert_to_tensor(b, name="b")
        ta, tb = bool(transpose_a or adjoint_a), bool(transpose_b or adjoint_b)
        a_shape, b_shape = a._shape_tuple, b._shape_tuple
        if a_shape is None or b_shape is None or len(a_shape) > 2 or len(b_shape) > 2:
            attrs = {"adj_x": ta, "adj_y": tb}
            return apply_op("BatchMatMulV2", [a, b], attrs, name=scope).outputs[0]
        attrs = {"transpose_a": ta, "transpose_b": tb}
        return apply_op("MatMul", [a, b], attrs, name=scope).outputs[0]
