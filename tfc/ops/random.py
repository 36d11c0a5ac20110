"""Random ops on Philox streams: RandomUniform(Int), RandomStandardNormal, TruncatedNormal."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import tfc.ops.philox as philox
from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import Tensor, name_scope
from tfc.ir.random_seed import get_seed, set_random_seed
from tfc.ir.tensor_shape import Shape, num_elements
from tfc.ops.array_common import index_tensor, int_list, shape_value
from tfc.ops.constant import convert_to_tensor
from tfc.ops.flops import per_output_element
from tfc.ops.kernels import Kernel, Param, ScanSpec
from tfc.ops.math import add
from tfc.ops.registry import (
    OpContext,
    OpDef,
    apply_op,
    check_dtype,
    register,
)

__all__ = [
    "random_uniform",
    "random_normal",
    "truncated_normal",
    "set_random_seed",
]

_FLOATS = (_dt.float32, _dt.float64)
_INTS = (_dt.int32, _dt.int64)


# -- the shape input --------------------------------------------------------------------------
def output_shape(ctx: OpContext) -> Shape:
    """The shape that the 1-D int input 0 holds, as far as it is known: fully when it is a
    constant, partly for tf.shape(x) of a partly known x, so a None batch dim stays None."""
    check_dtype(ctx, 0, _INTS, "shape")
    vector = ctx.in_shapes[0]
    if vector is not None and len(vector) != 1:
        raise ctx.error(f"Shape must be rank 1 but is rank {len(vector)}")
    value = ctx.const(0)
    if value is None:
        return shape_value(ctx, 0)
    dims = tuple(int_list(value))
    if any(d < 0 for d in dims):
        raise ctx.error(f"Shape [{','.join(map(str, dims))}] has negative dimensions")
    return dims


def shape_argument(shape: Any) -> Tensor:
    """A shape argument (list, tuple, TensorShape or int tensor) as a 1-D int tensor."""
    tensor = index_tensor(shape, "shape")
    if tensor.dtype not in _INTS:
        raise TypeError(f"A shape must hold int32 or int64 values, got {tensor.dtype.name}")
    return tensor


def seed_attrs(seed: int | None) -> dict:
    seed1, seed2 = get_seed(seed)
    return {"seed": seed1 or 0, "seed2": seed2 or 0}  # (0, 0): a fresh stream per session


# -- RandomUniform, RandomStandardNormal, TruncatedNormal ----------------------------------------
def _float_random_infer(ctx: OpContext) -> list:
    dtype = ctx.attrs["dtype"]
    if dtype not in _FLOATS:
        raise TypeError(
            f"Value for attr 'dtype' of {dtype.name} is not in the list of allowed values: "
            f"float32, float64 (op '{ctx.name}' of type {ctx.type})"
        )
    return [(dtype, output_shape(ctx))]


def _float_random_reference(sample: Callable) -> Callable:
    def reference(ctx: OpContext, shape: np.ndarray) -> np.ndarray:
        out_shape, dtype = ctx.out_shapes[0], ctx.out_dtypes[0].np
        count = num_elements(out_shape)
        if count == 0:  # reserves nothing, like the kernel that is not emitted
            return np.zeros(out_shape, dtype)
        state = ctx.state.rng_state(ctx.name, ctx.attrs)
        return sample(state, count, dtype).reshape(out_shape)

    return reference


def _float_random_lower(distribution: str) -> Callable:
    def lower(ctx: OpContext) -> list:
        dtype = ctx.out_dtypes[0]
        count = num_elements(ctx.out_shapes[0])
        if count == 0:
            return []  # reserving nothing leaves the stream as drawing nothing would
        params = [
            Param("y", dtype.c_type, False, "out0"),
            Param("state", "uint64_t", False, "state"),
        ]
        spec = ScanSpec(dtype, count, {"distribution": distribution})
        return [Kernel("random", params, spec)]

    return lower


for _type, _sample, _distribution in [
    ("RandomUniform", philox.uniform, "uniform"),
    ("RandomStandardNormal", philox.normal, "normal"),
    ("TruncatedNormal", philox.truncated_normal, "truncated_normal"),
]:
    register(
        OpDef(
            _type,
            infer=_float_random_infer,
            reference=_float_random_reference(_sample),
            lower=_float_random_lower(_distribution),
            flops=per_output_element(1),
            random=True,
            differentiable=False,
            const_inputs=(0,),
            input_names=("shape",),
        )
    )


# -- RandomUniformInt -----------------------------------------------------------------------------
def _uniform_int_infer(ctx: OpContext) -> list:
    dtype = ctx.attrs["Tout"]
    for i, what in [(1, "minval"), (2, "maxval")]:
        check_dtype(ctx, i, _INTS, what)
        if ctx.in_dtypes[i] != dtype:
            raise TypeError(
                f"Input '{what}' of 'RandomUniformInt' Op has type {ctx.in_dtypes[i].name} that "
                f"does not match type {dtype.name} of argument 'Tout'."
            )
        if ctx.in_shapes[i] is not None and len(ctx.in_shapes[i]) != 0:
            raise ctx.error(f"Shape must be rank 0 but is rank {len(ctx.in_shapes[i])}")
    return [(dtype, output_shape(ctx))]


def _uniform_int_reference(ctx: OpContext, shape: Any, lo: np.ndarray, hi: np.ndarray) -> Any:
    dtype = ctx.out_dtypes[0]
    out_shape = ctx.out_shapes[0]
    count = num_elements(out_shape)
    if count == 0:
        return np.zeros(out_shape, dtype.np)
    lo, hi = int(lo), int(hi)
    if not lo < hi:
        raise errors.InvalidArgumentError(None, None, f"Need minval < maxval: {lo} >= {hi}")
    state = ctx.state.rng_state(ctx.name, ctx.attrs)
    base, key = philox.reserve(state, count)
    bits_type = np.dtype(f"uint{dtype.size * 8}")
    per_block = 4 if dtype.size == 4 else 2
    words = philox.blocks_from(base, np.arange(-(-count // per_block)), key).ravel()
    if dtype.size == 8:  # TF takes the low word first: sample[2i] | sample[2i + 1] << 32
        words = words[0::2].astype(np.uint64) | (words[1::2].astype(np.uint64) << np.uint64(32))
    span = bits_type.type((hi - lo) % (1 << (8 * dtype.size)))
    offset = bits_type.type(lo % (1 << (8 * dtype.size)))
    values = (offset + words[:count].astype(bits_type) % span).astype(bits_type)
    return values.view(dtype.np).reshape(out_shape)


def _uniform_int_lower(ctx: OpContext) -> list:
    dtype = ctx.out_dtypes[0]
    count = num_elements(ctx.out_shapes[0])
    if count == 0:
        return []
    # int32 takes one 32-bit word per value, int64 two (low word first), as TF does
    wide = dtype.size == 8
    bits = "((uint64_t)s[2 * j] | (uint64_t)s[2 * j + 1] << 32)" if wide else "s[j]"
    params = [
        Param("y", dtype.c_type, False, "out0"),
        Param("x0", dtype.c_type, True, "in1"),
        Param("x1", dtype.c_type, True, "in2"),
        Param("state", "uint64_t", False, "state"),
    ]
    spec = ScanSpec(dtype, count, {"per_block": 2 if wide else 4, "bits": bits})
    return [Kernel("random_int", params, spec, can_fail=True)]


register(
    OpDef(
        "RandomUniformInt",
        infer=_uniform_int_infer,
        reference=_uniform_int_reference,
        lower=_uniform_int_lower,
        flops=per_output_element(1),
        random=True,
        differentiable=False,
        const_inputs=(0,),
        input_names=("shape", "minval", "maxval"),
    )
)


# -- frontends ----------------------------------------------------------------------------------
def random_uniform(
    shape: Any,
    minval: Any = 0,
    maxval: Any = None,
    dtype: Any = _dt.float32,
    seed: int | None = None,
    name: str | None = None,
) -> Tensor:
    """`tf.random_uniform`: values in [minval, maxval) (maxval 1 for floats; ints need one)."""
    dtype = _dt.as_dtype(dtype)
    if dtype not in _FLOATS + _INTS:
        raise ValueError(f"Invalid dtype {dtype.name} for random_uniform")
    if maxval is None:
        if dtype.is_integer:
            raise ValueError(f"Must specify maxval for integer dtype {dtype!r}")
        maxval = 1
    with name_scope(name, "random_uniform", [shape, minval, maxval]) as scope:
        shape = shape_argument(shape)
        minval = convert_to_tensor(minval, dtype=dtype, name="min")
        maxval = convert_to_tensor(maxval, dtype=dtype, name="max")
        attrs = seed_attrs(seed)
        if dtype.is_integer:
            attrs.update(Tout=dtype, T=shape.dtype)
            op = apply_op("RandomUniformInt", [shape, minval, maxval], attrs, name=scope)
            return op.outputs[0]
        attrs.update(dtype=dtype, T=shape.dtype)
        rnd = apply_op("RandomUniform", [shape], attrs, name="RandomUniform").outputs[0]
        return add(rnd * (maxval - minval), minval, name=scope)


def _scaled(
    op_type: str,
    scope_name: str,
    shape: Any,
    mean: Any,
    stddev: Any,
    dtype: Any,
    seed: Any,
    name: Any,
) -> Tensor:
    """`op_type(shape) * stddev + mean`, the graph TF1's random_normal/truncated_normal build."""
    dtype = _dt.as_dtype(dtype)
    with name_scope(name, scope_name, [shape, mean, stddev]) as scope:
        shape = shape_argument(shape)
        mean = convert_to_tensor(mean, dtype=dtype, name="mean")
        stddev = convert_to_tensor(stddev, dtype=dtype, name="stddev")
        attrs = seed_attrs(seed)
        attrs.update(dtype=dtype, T=shape.dtype)
        rnd = apply_op(op_type, [shape], attrs, name=op_type).outputs[0]
        return add(rnd * stddev, mean, name=scope)


def random_normal(
    shape: Any,
    mean: Any = 0.0,
    stddev: Any = 1.0,
    dtype: Any = _dt.float32,
    seed: int | None = None,
    name: str | None = None,
) -> Tensor:
    """`tf.random_normal`: normal values of the given mean and standard deviation."""
    return _scaled("RandomStandardNormal", "random_normal", shape, mean, stddev, dtype, seed, name)


def truncated_normal(
    shape: Any,
    mean: Any = 0.0,
    stddev: Any = 1.0,
    dtype: Any = _dt.float32,
    seed: int | None = None,
    name: str | None = None,
) -> Tensor:
    """`tf.truncated_normal`: normal values redrawn until within two standard deviations."""
    return _scaled("TruncatedNormal", "truncated_normal", shape, mean, stddev, dtype, seed, name)
