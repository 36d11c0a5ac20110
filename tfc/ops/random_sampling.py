"""Random ops that sample from their inputs: RandomShuffle, Multinomial, RandomGamma, Poisson.

Each draws from its Philox stream exactly what its TensorFlow kernel draws, in the same order
(tfc/ops/philox.py is the NumPy twin of runtime's tfc_philox.h), so a seeded op gives the C
program, the CUDA program and the interpreter the same numbers: shuffles and multinomial draws
as TensorFlow's CPU kernels give them (Multinomial as TF's single-threaded shard does), gamma and
Poisson samples from TF's sequence of uniforms and normals (tfc computes their arithmetic in
double). random_crop and the tf.random.categorical, gamma, poisson and shuffle names are built
on them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import tfc.ops.philox as philox
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, name_scope
from tfc.ir.tensor_shape import num_elements, shape_str
from tfc.ops.array_common import INDEX_DTYPES, contiguous, strided_copy
from tfc.ops.array_index import gather
from tfc.ops.array_order import broadcast_dynamic_shape, broadcast_to
from tfc.ops.array_shape import shape
from tfc.ops.constant import constant, convert_to_tensor
from tfc.ops.flops import no_flops, per_output_element
from tfc.ops.kernels import Kernel, Param, ScanSpec, c_literal
from tfc.ops.math import cast_expr, maximum, truediv
from tfc.ops.random import output_shape, random_uniform, seed_attrs, shape_argument
from tfc.ops.registry import OpContext, OpDef, apply_op, check_dtype, register

__all__ = [
    "random_shuffle",
    "multinomial",
    "random_gamma",
    "random_poisson",
    "random_crop",
]

_FLOATS = (_dt.float32, _dt.float64)
_NUMBERS = (_dt.float32, _dt.float64, _dt.int32, _dt.int64)


def _state(ctx: OpContext) -> np.ndarray:
    return ctx.state.rng_state(ctx.name, ctx.attrs)


# -- RandomShuffle ------------------------------------------------------------------------------
def _shuffles(shape_: tuple) -> bool:
    """Whether a shuffle of this shape draws at all (TF copies one row, or one element)."""
    return len(shape_) > 0 and shape_[0] > 1 and num_elements(shape_) > 1


def _shuffle_reference(ctx: OpContext, value: np.ndarray) -> np.ndarray:
    if not _shuffles(value.shape):
        return np.array(value, copy=True)
    return np.array(value[philox.shuffle_permutation(_state(ctx), value.shape[0])])


def _shuffle_lower(ctx: OpContext) -> list:
    shape_, dtype = ctx.in_shapes[0], ctx.in_dtypes[0]
    if not _shuffles(shape_):
        return strided_copy(
            shape_, contiguous("out0", dtype, shape_), contiguous("in0", dtype, shape_)
        )
    rows = shape_[0]
    values = {"rows": rows, "inner": num_elements(shape_[1:]), "samples": (rows - 1 + 3) // 4}
    params = [
        Param("y", dtype.c_type, False, "out0"),
        Param("x", dtype.c_type, True, "in0"),
        Param("p", "int64_t", False, "scratch"),
        Param("state", "uint64_t", False, "state"),
    ]
    return [Kernel("random_shuffle", params, ScanSpec(dtype, num_elements(shape_), values))]


register(
    OpDef(
        "RandomShuffle",
        infer=lambda ctx: [(ctx.in_dtypes[0], ctx.in_shapes[0])],
        reference=_shuffle_reference,
        lower=_shuffle_lower,
        flops=no_flops,
        scratch=lambda ctx: 8 * (ctx.in_shapes[0][0] if ctx.in_shapes[0] else 0),
        random=True,
        differentiable=False,
        input_names=("value",),
    )
)


def random_shuffle(value: Any, seed: int | None = None, name: str | None = None) -> Tensor:
    """`tf.random_shuffle` (`tf.random.shuffle`): the rows (first dim) in a random order."""
    with name_scope(name, "RandomShuffle", [value]) as scope:
        x = convert_to_tensor(value, name="value")
        attrs = seed_attrs(seed) | {"T": x.dtype}
        return apply_op("RandomShuffle", [x], attrs, name=scope).outputs[0]


# -- Multinomial ----------------------------------------------------------------------------------
def _multinomial_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, _FLOATS, "logits")
    check_dtype(ctx, 1, (_dt.int32,), "num_samples")
    out = ctx.attrs["output_dtype"]
    if out not in INDEX_DTYPES:
        raise TypeError(f"output_dtype must be int32 or int64, got {out.name} for '{ctx.name}'")
    logits = ctx.in_shapes[0]
    if logits is not None and len(logits) != 2:
        raise ctx.error(f"logits should be a matrix, got shape {shape_str(logits)}")
    count = ctx.in_shapes[1]
    if count is not None and len(count) != 0:
        raise ctx.error(f"num_samples should be a scalar, got shape {shape_str(count)}")
    if logits is not None and logits[1] == 0:
        raise ctx.error("num_classes should be positive, got 0")
    n = ctx.const(1)
    if n is not None and int(n) < 0:
        raise ctx.error(f"num_samples should be non-negative, got {int(n)}")
    batch = None if logits is None else logits[0]
    return [(out, (batch, None if n is None else int(n)))]


def _multinomial_reference(ctx: OpContext, logits: np.ndarray, num_samples: Any) -> np.ndarray:
    n = int(num_samples)
    out = ctx.out_dtypes[0].np
    if logits.shape[0] * n == 0:
        return np.zeros((logits.shape[0], n), out)
    return philox.multinomial(_state(ctx), logits, n).astype(out)


def _multinomial_lower(ctx: OpContext) -> list:
    (batch, classes), dtype, out = ctx.in_shapes[0], ctx.in_dtypes[0], ctx.out_dtypes[0]
    samples = int(ctx.require_const(1, "num_samples"))
    if batch * samples == 0:
        return []
    values = {
        "batch": batch,
        "classes": classes,
        "samples": samples,
        # TF reserves 256 samples per double drawn: two per number, a multiple of 4 per row
        "reserve": c_literal(batch * ((samples + 3) // 4 * 4) * 2, _dt.int64),
        "lowest": c_literal(dtype.min, dtype),
        "index_ctype": out.c_type,
    }
    params = [
        Param("y", out.c_type, False, "out0"),
        Param("x", dtype.c_type, True, "in0"),
        Param("c", "double", False, "scratch"),
        Param("state", "uint64_t", False, "state"),
    ]
    return [Kernel("multinomial", params, ScanSpec(dtype, batch * samples, values))]


register(
    OpDef(
        "Multinomial",
        infer=_multinomial_infer,
        reference=_multinomial_reference,
        lower=_multinomial_lower,
        flops=per_output_element(1),
        scratch=lambda ctx: 8 * ctx.in_shapes[0][1],  # the running sums of one row
        random=True,
        differentiable=False,
        const_inputs=(1,),
        input_names=("logits", "num_samples"),
    )
)


def _categorical(
    logits: Any, num_samples: Any, dtype: Any, seed: Any, name: Any, scope_name: str
) -> Tensor:
    with name_scope(name, scope_name, [logits]):
        logits = convert_to_tensor(logits, name="logits")
        count = convert_to_tensor(num_samples, dtype=_dt.int32, name="num_samples")
        out = _dt.int64 if dtype is None else _dt.as_dtype(dtype)
        attrs = seed_attrs(seed) | {"output_dtype": out, "T": logits.dtype}
        return apply_op("Multinomial", [logits, count], attrs, name="Multinomial").outputs[0]


def multinomial(
    logits: Any,
    num_samples: Any,
    seed: int | None = None,
    name: str | None = None,
    output_dtype: Any = None,
) -> Tensor:
    """`tf.multinomial`: `num_samples` class indices per row of `logits` ([batch, classes],
    unnormalized log-probabilities), int64 unless `output_dtype` says int32."""
    return _categorical(logits, num_samples, output_dtype, seed, name, "multinomial")


def categorical(
    logits: Any,
    num_samples: Any,
    dtype: Any = None,
    seed: int | None = None,
    name: str | None = None,
) -> Tensor:
    """`tf.random.categorical`: tf.multinomial with the dtype argument named `dtype`."""
    return _categorical(logits, num_samples, dtype, seed, name, "categorical")


# -- RandomGamma, RandomPoissonV2 (samples per parameter, from per-output streams) ---------------
def _per_param_infer(ctx: OpContext, out: _dt.DType, param_types: tuple, what: str) -> list:
    check_dtype(ctx, 1, param_types, what)
    samples = output_shape(ctx)
    params = ctx.in_shapes[1]
    if samples is None or params is None:
        return [(out, None)]
    return [(out, tuple(samples) + tuple(params))]


def _per_param_reference(draw: Callable) -> Callable:
    def reference(ctx: OpContext, shape_: Any, params: np.ndarray) -> np.ndarray:
        out = ctx.out_shapes[0]
        num_samples = num_elements(out[: len(out) - params.ndim])
        if num_elements(out) == 0:
            return np.zeros(out, ctx.out_dtypes[0].np)
        values = philox.per_output_samples(_state(ctx), params, num_samples, draw(ctx))
        return _store(values, ctx.out_dtypes[0]).reshape(out)

    return reference


def _store(values: np.ndarray, dtype: _dt.DType) -> np.ndarray:
    """The samples (float64) in the output's dtype, as the kernel's conversion gives them."""
    if dtype.is_integer:
        info = np.iinfo(dtype.np)
        ok = (values > float(info.min) - 1) & (values < float(info.max) + 1)
        return np.where(ok, np.trunc(np.where(ok, values, 0)), info.min).astype(dtype.np)
    return values.astype(dtype.np)


def _per_param_lower(template: str, sample: Callable[[OpContext], str]) -> Callable:
    def lower(ctx: OpContext) -> list:
        out, dtype = ctx.out_shapes[0], ctx.out_dtypes[0]
        count = num_elements(out)
        if count == 0:
            return []
        params = num_elements(ctx.in_shapes[1])
        values = {
            "samples": count // params,
            "params_count": params,
            "store": cast_expr(_dt.float64, dtype).format(sample(ctx)),
        }
        kernel_params = [
            Param("y", dtype.c_type, False, "out0"),
            Param("x", ctx.in_dtypes[1].c_type, True, "in1"),
            Param("state", "uint64_t", False, "state"),
        ]
        return [Kernel(template, kernel_params, ScanSpec(dtype, count, values))]

    return lower


def _gamma_infer(ctx: OpContext) -> list:
    dtype = ctx.in_dtypes[1]
    result = _per_param_infer(ctx, dtype, _FLOATS, "alpha")
    alphas = ctx.in_shapes[1]
    if alphas is not None and None not in alphas and num_elements(alphas) == 0:
        raise ctx.error("Input alpha should have non-zero element count, got: 0")
    return result


def _gamma_draw(ctx: OpContext) -> Callable:
    return philox.gamma_sample


register(
    OpDef(
        "RandomGamma",
        infer=_gamma_infer,
        reference=_per_param_reference(_gamma_draw),
        lower=_per_param_lower(
            "random_gamma",
            lambda ctx: "tfc_gamma_sample(&g, (double)x[a])",
        ),
        flops=per_output_element(30),
        random=True,
        # TF differentiates samples with respect to alpha (RandomGammaGrad, from the derivative
        # of the regularized incomplete gamma function); tfc does not have that function yet
        differentiable=False,
        const_inputs=(0,),
        input_names=("shape", "alpha"),
    )
)


def _highest(dtype: _dt.DType) -> float:
    return float(dtype.max)


def _poisson_draw(ctx: OpContext) -> Callable:
    highest = _highest(ctx.out_dtypes[0])
    return lambda stream, rate: philox.poisson_sample(stream, rate, highest)


register(
    OpDef(
        "RandomPoissonV2",
        infer=lambda ctx: _per_param_infer(ctx, ctx.attrs["dtype"], _NUMBERS, "rate"),
        reference=_per_param_reference(_poisson_draw),
        lower=_per_param_lower(
            "random_poisson",
            lambda ctx: (
                "tfc_poisson_sample(&g, (double)x[a], "
                f"{c_literal(_highest(ctx.out_dtypes[0]), _dt.float64)})"
            ),
        ),
        flops=per_output_element(30),
        random=True,
        differentiable=False,
        const_inputs=(0,),
        input_names=("shape", "rate"),
    )
)


def random_gamma(
    shape: Any,
    alpha: Any,
    beta: Any = None,
    dtype: Any = _dt.float32,
    seed: int | None = None,
    name: str | None = None,
) -> Tensor:
    """`tf.random_gamma` (`tf.random.gamma`): samples of shape `shape` + the broadcast shape of
    alpha and beta from Gamma(alpha, rate beta), each at least the dtype's smallest normal."""
    dtype = _dt.as_dtype(dtype)
    if dtype not in _FLOATS:
        raise ValueError(f"Invalid dtype {dtype.name} for random_gamma: float32 or float64")
    with name_scope(name, "random_gamma", [shape, alpha, beta]):
        shape_t = shape_argument(shape)
        alpha = convert_to_tensor(alpha, name="alpha", dtype=dtype)
        beta = convert_to_tensor(1 if beta is None else beta, name="beta", dtype=dtype)
        both = broadcast_dynamic_shape(_shape_of(alpha), _shape_of(beta))
        alphas = broadcast_to(alpha, both)
        attrs = seed_attrs(seed) | {"S": shape_t.dtype, "T": dtype}
        draws = apply_op("RandomGamma", [shape_t, alphas], attrs, name="RandomGamma").outputs[0]
        tiny = constant(np.finfo(dtype.np).tiny, dtype=dtype)
        return maximum(tiny, truediv(draws, beta))


def _shape_of(t: Tensor) -> Tensor:
    dims = t._shape_tuple
    if dims is not None and None not in dims:
        return constant(np.array(dims, np.int32))
    return shape(t)


def random_poisson(
    lam: Any,
    shape: Any,
    dtype: Any = _dt.float32,
    seed: int | None = None,
    name: str | None = None,
) -> Tensor:
    """`tf.random_poisson` (`tf.random.poisson`): samples of shape `shape` + lam's shape from
    Poisson(lam), in `dtype` (a float or int type)."""
    dtype = _dt.as_dtype(dtype)
    with name_scope(name, "random_poisson", [lam, shape]):
        shape_t = shape_argument(shape)
        lam = convert_to_tensor(lam, name="lam")
        if not lam.dtype.is_integer and not lam.dtype.is_floating:
            raise TypeError(f"lam must be a number tensor, got {lam.dtype.name}")
        attrs = seed_attrs(seed) | {"S": shape_t.dtype, "R": lam.dtype, "dtype": dtype}
        return apply_op("RandomPoissonV2", [shape_t, lam], attrs, name="RandomPoissonV2").outputs[0]


# -- random_crop -----------------------------------------------------------------------------------
def random_crop(value: Any, size: Any, seed: int | None = None, name: str | None = None) -> Tensor:
    """`tf.random_crop`: a block of `size` at a random offset inside `value` (TF's draws: one
    int32 uniform per dim, taken modulo the room along it). The shapes must be known when the
    graph is built; each cropped dim is a gather of the block's positions."""
    with name_scope(name, "random_crop", [value, size]) as scope:
        x = convert_to_tensor(value, name="value")
        sizes = np.asarray(size)
        dims = x._shape_tuple
        if dims is None or None in dims:
            raise ValueError(
                f"random_crop needs value's shape when the graph is built, got {x.shape}"
            )
        if sizes.shape != (len(dims),) or sizes.dtype.kind not in "iu":
            raise ValueError(f"size must be {len(dims)} ints (one per dim of value), got {size!r}")
        if (sizes > np.array(dims)).any() or (sizes < 0).any():
            raise ValueError(f"Need value.shape >= size, got {list(dims)} {sizes.tolist()}")
        rank = constant(np.array([len(dims)], np.int32), name="Shape")
        draws = random_uniform(rank, maxval=np.iinfo(np.int32).max, dtype=_dt.int32, seed=seed)
        room = constant(np.array(dims, np.int32) - sizes.astype(np.int32) + 1, name="add")
        offset = apply_op("FloorMod", [draws, room], name="mod").outputs[0]
        out = x
        for k, (d, s) in enumerate(zip(dims, sizes.tolist())):
            if s == d:
                continue  # the room is 1: offset 0, the whole dim
            start = apply_op("StridedSlice", [offset, *_element(k)], _SHRINK, name="strided_slice")
            steps = constant(np.arange(s, dtype=np.int32), name="range")
            positions = apply_op("Add", [steps, start.outputs[0]], name="add")
            out = gather(out, positions.outputs[0], axis=k)
        return apply_op("Identity", [out], name=scope).outputs[0]


_SHRINK = {
    "begin_mask": 0,
    "end_mask": 0,
    "ellipsis_mask": 0,
    "new_axis_mask": 0,
    "shrink_axis_mask": 1,
}


def _element(k: int) -> list[Tensor]:
    return [constant(np.array([v], np.int32)) for v in (k, k + 1, 1)]
