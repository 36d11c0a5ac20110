"""The fuzzer's op table: how to make a valid node of each registered op.

Element-wise ops (an OpDef with an ExprTable) join without a row: their arity and dtypes come
from the table, their input domains and whether they are discontinuous from probing the NumPy
reference (a domain is the widest of FLOAT_DOMAINS where the reference stays finite; a jump
between neighbouring floats marks an op whose inputs must be exact, the same bits in every
implementation). DOMAINS and ATTRS override what probing cannot know.

Every other op has a row in ROWS: a function making one statement with valid operands and
attributes through the op's frontend. An op that is only reached through gradients or
optimizers is in REACHED; one the fuzzer cannot compare in EXCLUDED, with the reason.
tests/test_fuzz.py fails for a registered op in none of them: a new op joins by adding a row.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ops.registry import REGISTRY, OpContext

from .gen import FLOAT_DOMAINS, FLOATS, INTS, Gen, Rejected, Val

# -- element-wise ops ------------------------------------------------------------------------------
# attributes an op needs that apply_op does not default
ATTRS: dict[str, dict] = {
    "LeakyRelu": {"alpha": 0.2},
    "LeakyReluGrad": {"alpha": 0.2},
}
# per input, where probing alone would be wrong: Polygamma's order is a small integer
DOMAINS: dict[str, tuple[str, ...]] = {"Polygamma": ("order", "pos")}
# int inputs of guarded ops (integer division by zero fails the kernel, as in TF)
INT_DOMAINS: dict[str, tuple[str, ...]] = {"Pow": ("any", "small")}
# float results that are correctly rounded from their inputs (the same bits in NumPy and C),
# so a discontinuous op may read them
EXACT_OPS = {
    "Abs", "Add", "Sub", "Mul", "Neg", "Maximum", "Minimum", "Square", "RealDiv", "Sqrt",
    "Floor", "Ceil", "Round", "Rint", "Sign", "Relu", "Relu6", "SquaredDifference",
    "ReluGrad", "Relu6Grad", "DivNoNan", "MulNoNan",
}  # fmt: skip
# continuous ops whose gradient routes by comparing their inputs: exact inputs only, or the
# routing may flip between implementations on values that differ in the last bit
ROUTING_OPS = {"Maximum", "Minimum"}
_PROBE_ORDER = ("any", "pos", "unit", "unitpos", "gt1")


@dataclass(frozen=True)
class Elementwise:
    op: str
    arity: int
    dtypes: tuple[str, ...]
    domains: tuple[str, ...]  # float inputs
    int_domains: tuple[str, ...]
    discontinuous: bool
    bool_out: bool


def _arity(table) -> int:
    found: set[str] = set()
    for expr in table.exprs.values():
        if expr is not None:  # None: the dtype has no expression (refused)
            found |= set(re.findall(r"\{(\d)\}", expr))
    return len(found)


def _reference(op: str, *xs: np.ndarray) -> np.ndarray:
    opdef = REGISTRY[op]
    dtype = _dt.as_dtype(xs[0].dtype)
    out = opdef.expr.out or dtype
    ctx = OpContext(op, op, ATTRS.get(op, {}), [dtype] * len(xs), [x.shape for x in xs], [out])
    with np.errstate(all="ignore"):
        return np.asarray(opdef.reference(ctx, *xs), dtype=np.float64)


def _grid(domain: str) -> np.ndarray:
    if domain == "order":
        return np.array([0.0, 1.0, 2.0])
    lo, hi = FLOAT_DOMAINS[domain]
    return np.arange(lo, hi + 1e-9, 0.125)


def _mesh(domains: list[str]) -> list[np.ndarray]:
    return [m.ravel() for m in np.meshgrid(*[_grid(d) for d in domains], indexing="ij")]


def probe(op: str) -> Elementwise:
    """What the op's NumPy reference tells of its inputs (see the module docstring)."""
    table = REGISTRY[op].expr
    arity = _arity(table)
    dtypes = tuple(d.name for d in table.supported() if d.name in (*FLOATS, *INTS, "bool"))
    bool_out = table.out is _dt.bool_
    domains = list(DOMAINS.get(op, ()))
    if not domains and any(d in FLOATS for d in dtypes):
        for i in range(arity):
            for candidate in _PROBE_ORDER:
                trial = ["pos"] * arity
                trial[i] = candidate
                if np.all(np.isfinite(_reference(op, *_mesh(trial)))):
                    domains.append(candidate)
                    break
            else:
                domains.append("pos")
    discontinuous = bool_out
    if not discontinuous and domains:
        points = _mesh(domains)
        base = _reference(op, *points)
        for i in range(arity):
            for direction in (np.inf, -np.inf):
                nudged = list(points)
                nudged[i] = np.nextafter(points[i], direction)
                moved = np.abs(_reference(op, *nudged) - base)
                if np.any(
                    moved[np.isfinite(moved)] > 1e-7 * (1 + np.abs(base[np.isfinite(moved)]))
                ):
                    discontinuous = True
    guarded = any(table.guard_for(_dt.as_dtype(d)) is not None for d in dtypes if d in INTS)
    int_domains = INT_DOMAINS.get(op) or (("any", "nonzero") if guarded else ("any",) * arity)
    return Elementwise(
        op, arity, dtypes, tuple(domains), tuple(int_domains), discontinuous, bool_out
    )


_PROBED: dict[str, Elementwise] = {}


def elementwise(op: str) -> Elementwise:
    if op not in _PROBED:
        _PROBED[op] = probe(op)
    return _PROBED[op]


def elementwise_ops() -> list[str]:
    return sorted(
        op for op, opdef in REGISTRY.items()
        if opdef.expr is not None and op not in EXCLUDED and op not in REACHED
    )  # fmt: skip


def build_elementwise(g: Gen, op: str) -> None:
    row = elementwise(op)
    dtype = str(g.rng.choice([d for d in row.dtypes for _ in range(3 if d == "float32" else 1)]))
    exact = row.discontinuous or op in ROUTING_OPS
    domains = row.domains if dtype in FLOATS else row.int_domains
    if dtype == "bool":
        domains = ("any",) * row.arity
    first = g.pick((dtype,), exact=exact, domain=domains[0])
    args = [first]
    for i in range(1, row.arity):
        args.append(g.broadcast_partner(first, (dtype,), domains[i], exact=exact))
    if row.arity == 2 and domains[0] == domains[1] and g.rng.random() < 0.3:
        args.reverse()
    attrs = "".join(f", {k}={v!r}" for k, v in ATTRS.get(op, {}).items())
    expr = f'op("{op}", {", ".join(a.name for a in args)}{attrs})'
    g.emit(expr, args, exact=op in EXACT_OPS, inexact=0 if op in EXACT_OPS else 1)


# -- rows: one function per op, making one statement through its frontend ----------------------
Row = Callable[[Gen], None]
ROWS: dict[str, Row] = {}
WEIGHTS: dict[str, float] = {}


def row(*ops: str, weight: float = 1.0) -> Callable[[Row], Row]:
    def register(fn: Row) -> Row:
        for op in ops:
            ROWS[op] = fn
            WEIGHTS[op] = weight / len(ops)
        return fn

    return register


def _bool(g: Gen) -> bool:
    return bool(g.rng.random() < 0.5)


def _axis(g: Gen, rank: int) -> int:
    axis = int(g.rng.integers(0, rank))
    return axis - rank if g.rng.random() < 0.3 else axis


def _matrix(g: Gen, rows: int, cols: int, dtype: str, transposed: bool) -> Val:
    shape = (cols, rows) if transposed else (rows, cols)
    return g.pick((dtype,), shape=shape, fresh=0.4)


@row("MatMul", weight=3)
def _matmul(g: Gen) -> None:
    dtype = g.dtype_of(("float32", "float32", "float64", "int32"))
    a = g.pick((dtype,), rank=2, fresh=0.3)
    ta, tb = _bool(g) and g.rng.random() < 0.4, _bool(g) and g.rng.random() < 0.4
    k = a.shape[0] if ta else a.shape[1]
    n = g.dim()
    b = _matrix(g, k, n, dtype, tb)
    g.emit(f"tf.matmul({a}, {b}, transpose_a={ta}, transpose_b={tb})", [a, b])


@row("BatchMatMulV2")
def _batch_matmul(g: Gen) -> None:
    dtype = g.dtype_of(("float32", "float64"))
    a = g.pick((dtype,), rank=(3, 4), fresh=0.4)
    ta, tb = g.rng.random() < 0.3, g.rng.random() < 0.3
    batch, (m, k) = a.shape[:-2], a.shape[-2:]
    if ta:
        m, k = k, m
    n = g.dim()
    if g.rng.random() < 0.3:  # a batch dim broadcast
        batch = tuple(1 if g.rng.random() < 0.5 else d for d in batch)
    shape = (*batch, n, k) if tb else (*batch, k, n)
    b = g.pick((dtype,), shape=shape, fresh=0.6)
    g.emit(f"tf.matmul({a}, {b}, adjoint_a={ta}, adjoint_b={tb})", [a, b])


@row("BiasAdd", weight=2)
def _bias_add(g: Gen) -> None:
    x = g.pick(FLOATS, rank=(2, 3, 4))
    bias = g.pick((x.dtype,), shape=(x.shape[-1],), fresh=0.5)
    g.emit(f"tf.nn.bias_add({x}, {bias})", [x, bias], exact=True, inexact=0)


def _image(g: Gen, dtype: str = "float32") -> Val:
    def small(v: Val) -> bool:
        return v.rank == 4 and v.shape[1] >= 2 and v.shape[2] >= 2 and v.shape[3] <= 8

    found = g.candidates((dtype,), 4, where=small)
    if found and g.rng.random() < 0.7:
        return g.choose(found)
    shape = (int(g.rng.integers(1, 3)), int(g.rng.integers(3, 9)), int(g.rng.integers(3, 9)),
             int(g.rng.choice([1, 2, 3, 4])))  # fmt: skip
    return g.feed(dtype, shape)


@row("Conv2D", weight=2)
def _conv2d(g: Gen) -> None:
    dtype = g.dtype_of(("float32", "float32", "float64"))
    x = _image(g, dtype)
    kh, kw = int(g.rng.integers(1, 4)), int(g.rng.integers(1, 4))
    out = int(g.rng.choice([1, 2, 3, 4, 6, 8]))
    w = g.pick((dtype,), shape=(kh, kw, x.shape[3], out), fresh=0.8)
    padding = str(g.rng.choice(["SAME", "VALID"]))
    s = int(g.rng.choice([1, 1, 2]))
    d = 1 if s > 1 or g.rng.random() < 0.8 else 2
    if padding == "VALID" and (x.shape[1] < (kh - 1) * d + 1 or x.shape[2] < (kw - 1) * d + 1):
        padding = "SAME"
    g.emit(
        f'tf.nn.conv2d({x}, {w}, strides=[1, {s}, {s}, 1], padding="{padding}", '
        f"dilations=[1, {d}, {d}, 1])",
        [x, w],
    )


@row("MaxPool", "AvgPool", weight=2)
def _pool(g: Gen) -> None:
    kind = str(g.rng.choice(["max", "avg"]))
    x = _image(g, g.dtype_of(("float32", "float64")))
    if kind == "max" and not x.exact:
        x = g.feed(x.dtype, x.shape)
    k = int(g.rng.choice([1, 2, 2, 3]))
    s = int(g.rng.choice([1, 2, 2]))
    padding = str(g.rng.choice(["SAME", "VALID"]))
    if padding == "VALID" and min(x.shape[1], x.shape[2]) < k:
        padding = "SAME"
    g.emit(
        f'tf.nn.{kind}_pool({x}, [1, {k}, {k}, 1], [1, {s}, {s}, 1], "{padding}")',
        [x], exact=kind == "max", inexact=0 if kind == "max" else 1,
    )  # fmt: skip


_REDUCERS = {
    "Sum": ("reduce_sum", FLOATS + INTS),
    "Mean": ("reduce_mean", FLOATS),
    "Max": ("reduce_max", FLOATS + INTS),
    "Min": ("reduce_min", FLOATS + INTS),
    "Prod": ("reduce_prod", FLOATS),
    "All": ("reduce_all", ("bool",)),
    "Any": ("reduce_any", ("bool",)),
}


def _axes(g: Gen, rank: int) -> str:
    """Any set of axes: None (all), [], one, several, negative ones."""
    r = g.rng.random()
    if r < 0.15 or rank == 0:
        return "None"
    subset = [a for a in range(rank) if g.rng.random() < 0.5]
    if r < 0.2:
        subset = []
    subset = [a - rank if g.rng.random() < 0.25 else a for a in subset]
    if len(subset) == 1 and g.rng.random() < 0.5:
        return str(subset[0])
    return str(subset)


@row(*_REDUCERS, weight=4)
def _reduce(g: Gen) -> None:
    op = str(g.rng.choice(list(_REDUCERS)))
    fn, dtypes = _REDUCERS[op]
    exact = op in ("Max", "Min")
    x = g.pick(dtypes, rank=(0, 1, 2, 3, 4), exact=exact)
    keep = _bool(g)
    g.emit(
        f"tf.{fn}({x}, axis={_axes(g, x.rank)}, keepdims={keep})",
        [x], exact=exact or op in ("All", "Any"), inexact=0 if exact else 1,
    )  # fmt: skip


@row("ArgMax", "ArgMin")
def _argminmax(g: Gen) -> None:
    x = g.pick(FLOATS + INTS, rank=(1, 2, 3), exact=True)
    fn = str(g.rng.choice(["argmax", "argmin"]))
    out = str(g.rng.choice(["tf.int32", "tf.int64"]))
    g.emit(f"tf.{fn}({x}, axis={_axis(g, x.rank)}, output_type={out})", [x])


@row("Softmax", "LogSoftmax", weight=2)
def _softmax(g: Gen) -> None:
    x = g.pick(FLOATS, rank=(1, 2, 3))
    fn = str(g.rng.choice(["softmax", "log_softmax"]))
    axis = "" if g.rng.random() < 0.6 else f", axis={_axis(g, x.rank)}"
    g.emit(f"tf.nn.{fn}({x}{axis})", [x])


@row("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_xent(g: Gen) -> None:
    logits = g.pick(FLOATS, rank=2)
    batch, classes = logits.shape
    labels = g.feed(str(g.rng.choice(INTS)), (batch,), "nonneg")
    g.case.values[labels.name] = g.rng.integers(0, classes, size=batch).astype(labels.dtype)
    g.emit(
        f"tf.nn.sparse_softmax_cross_entropy_with_logits(labels={labels}, logits={logits})",
        [logits, labels],
    )


@row("Transpose", weight=2)
def _transpose(g: Gen) -> None:
    x = g.pick(FLOATS + INTS + ("bool",), rank=(2, 3, 4))
    perm = [int(p) for p in g.rng.permutation(x.rank)]
    g.emit(f"tf.transpose({x}, {perm})", [x], exact=True, inexact=0)


def _factor(g: Gen, shape: tuple) -> list[int]:
    size = int(np.prod(shape))
    dims, left = [], size
    for _ in range(int(g.rng.integers(0, 4))):
        divisors = [d for d in range(1, left + 1) if left % d == 0]
        d = int(g.rng.choice(divisors))
        dims.append(d)
        left //= d
    dims.append(left)
    g.rng.shuffle(dims)
    if g.rng.random() < 0.3:
        dims[int(g.rng.integers(0, len(dims)))] = -1
    return dims


@row("Reshape", weight=2)
def _reshape(g: Gen) -> None:
    x = g.pick(FLOATS + INTS, rank=(0, 1, 2, 3, 4))
    g.emit(f"tf.reshape({x}, {_factor(g, x.shape)})", [x], exact=True, inexact=0)


@row("ExpandDims", "Squeeze", "Identity", "StopGradient")
def _views(g: Gen) -> None:
    x = g.pick(FLOATS + INTS, rank=(0, 1, 2, 3))
    r = g.rng.random()
    if r < 0.35:
        expr = f"tf.expand_dims({x}, {int(g.rng.integers(-x.rank - 1, x.rank + 1))})"
    elif r < 0.7:
        ones = [i for i, d in enumerate(x.shape) if d == 1]
        axes = [i for i in ones if _bool(g)]
        expr = f"tf.squeeze({x}{', ' + str(axes) if axes else ''})"
    elif r < 0.85:
        expr = f"tf.identity({x})"
    else:
        expr = f"tf.stop_gradient({x})"
    g.emit(expr, [x], exact=True, inexact=0)


def _same_but(g: Gen, x: Val, axis: int) -> Val:
    shape = list(x.shape)
    shape[axis] = g.dim()
    return g.pick((x.dtype,), shape=tuple(shape), fresh=0.5)


@row("ConcatV2", "Pack", weight=2)
def _concat(g: Gen) -> None:
    x = g.pick(FLOATS + INTS, rank=(1, 2, 3))
    if _bool(g):
        axis = _axis(g, x.rank)
        others = [_same_but(g, x, axis % x.rank) for _ in range(int(g.rng.integers(1, 3)))]
        g.emit(f"tf.concat([{', '.join(v.name for v in [x, *others])}], {axis})",
               [x, *others], exact=True, inexact=0)  # fmt: skip
    else:
        others = [g.pick((x.dtype,), shape=x.shape, fresh=0.5) for _ in range(g.rng.integers(1, 3))]
        axis = int(g.rng.integers(-x.rank - 1, x.rank + 1))
        g.emit(f"tf.stack([{', '.join(v.name for v in [x, *others])}], {axis})",
               [x, *others], exact=True, inexact=0)  # fmt: skip


@row("Unpack", "Split", "SplitV")
def _split(g: Gen) -> None:
    x = g.pick(FLOATS + INTS, rank=(1, 2, 3), where=lambda v: max(v.shape) <= 8)
    axis = _axis(g, x.rank)
    n = x.shape[axis]
    r = g.rng.random()
    if r < 0.3:
        g.emit(f"tf.unstack({x}, axis={axis})", [x], n_out=n, exact=True, inexact=0, seq=True)
    elif r < 0.65:
        parts = [d for d in range(1, n + 1) if n % d == 0]
        k = int(g.rng.choice(parts))
        g.emit(f"tf.split({x}, {k}, axis={axis})", [x], n_out=k, exact=True, inexact=0, seq=True)
    else:
        cuts = sorted(int(c) for c in g.rng.integers(0, n + 1, size=int(g.rng.integers(1, 3))))
        sizes = [b - a for a, b in zip([0, *cuts], [*cuts, n])]
        if g.rng.random() < 0.3:
            sizes[int(g.rng.integers(0, len(sizes)))] = -1
        g.emit(f"tf.split({x}, {sizes}, axis={axis})", [x], n_out=len(sizes),
               exact=True, inexact=0, seq=True)  # fmt: skip


@row("Slice", "StridedSlice", weight=2)
def _slice(g: Gen) -> None:
    x = g.pick(FLOATS + INTS, rank=(1, 2, 3, 4))
    if _bool(g):
        begin = [int(g.rng.integers(0, d)) for d in x.shape]
        size = [int(g.rng.integers(1, d - b + 1)) if g.rng.random() < 0.8 else -1
                for d, b in zip(x.shape, begin)]  # fmt: skip
        g.emit(f"tf.slice({x}, {begin}, {size})", [x], exact=True, inexact=0)
        return
    parts = []
    for d in x.shape:
        r = g.rng.random()
        if r < 0.2:
            parts.append(":")
        elif r < 0.35:
            parts.append(str(int(g.rng.integers(-d, d))))  # shrinks the dim
        elif r < 0.45:
            parts.append("tf.newaxis, :")
        else:
            step = int(g.rng.choice([1, 1, 2, 3, -1, -2]))
            a, b = sorted(int(v) for v in g.rng.integers(-d - 1, d + 1, size=2))
            if step < 0:
                a, b = b, a
            a_s = "" if g.rng.random() < 0.2 else str(a)
            b_s = "" if g.rng.random() < 0.2 else str(b)
            parts.append(f"{a_s}:{b_s}:{step}")
    if len(parts) > 1 and g.rng.random() < 0.2:
        parts = ["...", *parts[int(g.rng.integers(1, len(parts))) :]]
    expr = f"{x}[{', '.join(parts)}]"
    out = g.emit(expr, [x], exact=True, inexact=0)
    if out and out[0].size == 0:
        raise Rejected("an empty slice")


@row("Pad", "PadV2", "MirrorPad")
def _pad(g: Gen) -> None:
    x = g.pick(FLOATS + INTS, rank=(1, 2, 3, 4))
    mode = str(g.rng.choice(["CONSTANT", "CONSTANT", "REFLECT", "SYMMETRIC"]))
    limit = {"CONSTANT": lambda d: 3, "REFLECT": lambda d: d - 1, "SYMMETRIC": lambda d: d}[mode]
    pads = [[int(g.rng.integers(0, limit(d) + 1)) for _ in range(2)] for d in x.shape]
    value = ""
    if mode == "CONSTANT" and _bool(g):
        value = f", constant_values={1.5 if x.kind == 'f' else 2}"
    g.emit(f'tf.pad({x}, {pads}, mode="{mode}"{value})', [x], exact=True, inexact=0)


@row("Tile")
def _tile(g: Gen) -> None:
    x = g.pick(FLOATS + INTS, rank=(1, 2, 3), where=lambda v: v.size <= 32)
    mult = [int(g.rng.choice([1, 1, 2, 3])) for _ in x.shape]
    g.emit(f"tf.tile({x}, {mult})", [x], exact=True, inexact=0)


@row("GatherV2", weight=2)
def _gather(g: Gen) -> None:
    x = g.pick(FLOATS + INTS, rank=(1, 2, 3))
    axis = int(g.rng.integers(0, x.rank))
    n = int(g.rng.integers(1, 7))
    idx_shape = (n,) if g.rng.random() < 0.7 else (2, n)
    indices = g.feed(str(g.rng.choice(INTS)), idx_shape, "nonneg")
    g.case.values[indices.name] = g.rng.integers(0, x.shape[axis], size=idx_shape).astype(
        indices.dtype
    )
    g.emit(f"tf.gather({x}, {indices}, axis={axis})", [x, indices], exact=True, inexact=0)


@row("OneHot")
def _one_hot(g: Gen) -> None:
    depth = int(g.rng.integers(1, 7))
    shape = g.shape(int(g.rng.integers(0, 3)), max_size=32)
    indices = g.feed(str(g.rng.choice(INTS)), shape, "any")
    g.case.values[indices.name] = g.rng.integers(-1, depth + 1, size=shape).astype(indices.dtype)
    axis = int(g.rng.integers(-1, len(shape) + 1))
    g.emit(f"tf.one_hot({indices}, {depth}, on_value=2.0, off_value=-0.5, axis={axis})",
           [indices], exact=True, inexact=0)  # fmt: skip


@row("Cumsum", "Cumprod")
def _cumulative(g: Gen) -> None:
    fn = str(g.rng.choice(["cumsum", "cumprod"]))
    x = g.pick(FLOATS if fn == "cumprod" else FLOATS + INTS, rank=(1, 2, 3))
    g.emit(
        f"tf.{fn}({x}, axis={_axis(g, x.rank)}, exclusive={_bool(g)}, reverse={_bool(g)})",
        [x],
    )


@row("TopKV2", "InTopKV2")
def _top_k(g: Gen) -> None:
    x = g.pick(("float32",) if g.rng.random() < 0.4 else FLOATS + INTS, rank=(1, 2), exact=True)
    if g.rng.random() < 0.3 and x.rank == 2 and x.dtype == "float32":
        targets = g.feed(str(g.rng.choice(INTS)), (x.shape[0],), "nonneg")
        g.case.values[targets.name] = g.rng.integers(0, x.shape[1], size=x.shape[0]).astype(
            targets.dtype
        )
        k = int(g.rng.integers(0, x.shape[1] + 1))
        g.emit(f"tf.nn.in_top_k({x}, {targets}, {k})", [x, targets])
        return
    k = int(g.rng.integers(0 if g.rng.random() < 0.1 else 1, x.shape[-1] + 1))
    g.emit(f"tf.nn.top_k({x}, {k}, sorted={_bool(g) or True})", [x], n_out=2, exact=True,
           inexact=0)  # fmt: skip


@row("Cast", weight=2)
def _cast(g: Gen) -> None:
    x = g.pick(FLOATS + INTS + ("bool",), exact=True)
    to = str(g.rng.choice([d for d in (*FLOATS, *INTS, "bool") if d != x.dtype]))
    g.emit(f"tf.cast({x}, tf.{to})", [x], exact=True, inexact=0)


@row("SelectV2")
def _select(g: Gen) -> None:
    x = g.pick(FLOATS + INTS)
    y = g.broadcast_partner(x)
    cond = g.broadcast_partner(x, ("bool",))
    g.emit(f"tf.where({cond}, {x}, {y})", [cond, x, y], exact=True, inexact=0)


@row("AddN")
def _add_n(g: Gen) -> None:
    x = g.pick(FLOATS + INTS)
    others = [g.pick((x.dtype,), shape=x.shape, fresh=0.4) for _ in range(g.rng.integers(1, 4))]
    g.emit(f"tf.add_n([{', '.join(v.name for v in [x, *others])}])", [x, *others])


@row("Fill", "ZerosLike", "OnesLike", "Range", "Shape", "Size", "Rank")
def _fills(g: Gen) -> None:
    r = g.rng.random()
    if r < 0.3:
        shape = list(g.shape())
        value = str(g.rng.choice(["2.5", "-1", "np.float64(0.75)", "True"]))
        g.emit(f"tf.fill({shape}, {value})", [], exact=True, inexact=0)
    elif r < 0.55:
        x = g.pick(FLOATS + INTS)
        fn = str(g.rng.choice(["zeros_like", "ones_like"]))
        g.emit(f"tf.{fn}({x})", [x], exact=True, inexact=0)
    elif r < 0.75:
        start, delta = int(g.rng.integers(-4, 4)), int(g.rng.choice([1, 2, 3, -1, -2]))
        limit = start + delta * int(g.rng.integers(1, 8))
        g.emit(f"tf.range({start}, {limit}, {delta})", [], exact=True, inexact=0)
    else:
        x = g.pick(FLOATS + INTS)
        fn = str(g.rng.choice(["shape", "size", "rank"]))
        g.emit(f"tf.{fn}({x})", [x], exact=True, inexact=0)


_SEGMENTS = ("SegmentSum", "SegmentMean", "SegmentMax", "SegmentMin", "SegmentProd")
_UNSORTED = ("UnsortedSegmentSum", "UnsortedSegmentMax", "UnsortedSegmentMin",
             "UnsortedSegmentProd")  # fmt: skip


@row(*_SEGMENTS, *_UNSORTED)
def _segments(g: Gen) -> None:
    sorted_ = _bool(g)
    kinds = ["sum", "max", "min", "prod"] + (["mean"] if sorted_ else [])
    kind = str(g.rng.choice(kinds))
    exact = kind in ("max", "min")
    x = g.pick(FLOATS + INTS if kind != "mean" else FLOATS, rank=(1, 2, 3), exact=exact)
    n = x.shape[0]
    ids = g.feed(str(g.rng.choice(INTS)), (n,), "nonneg")
    if sorted_:
        values = np.sort(g.rng.integers(0, max(1, n // 2) + 1, size=n))
        g.case.values[ids.name] = values.astype(ids.dtype)
        g.emit(f"tf.math.segment_{kind}({x}, {ids})", [x, ids], exact=exact)
    else:
        segments = int(g.rng.integers(1, 6))
        g.case.values[ids.name] = g.rng.integers(-1, segments, size=n).astype(ids.dtype)
        g.emit(f"tf.math.unsorted_segment_{kind}({x}, {ids}, {segments})", [x, ids], exact=exact)


@row("Bincount")
def _bincount(g: Gen) -> None:
    n = int(g.rng.integers(1, 12))
    arr = g.feed("int32", (n,), "nonneg")
    weights = ""
    inputs = [arr]
    if _bool(g):
        w = g.pick(("float32",), shape=(n,), fresh=0.5)
        weights, inputs = f", weights={w}", [arr, w]
    g.emit(f"tf.math.bincount({arr}{weights}, minlength={int(g.rng.integers(0, 9))})", inputs)


@row("Cross")
def _cross(g: Gen) -> None:
    a = g.pick(FLOATS, where=lambda v: v.rank >= 1 and v.shape[-1] == 3, fresh=0.3)
    b = g.pick((a.dtype,), shape=a.shape, fresh=0.5)
    g.emit(f"tf.cross({a}, {b})", [a, b])


@row("Diag", "DiagPart", "MatrixBandPart", "MatrixDiagV3", "MatrixDiagPartV3", "MatrixSetDiagV3")
def _diag(g: Gen) -> None:
    r = g.rng.random()
    if r < 0.2:
        x = g.pick(FLOATS + INTS, rank=(1, 2), where=lambda v: v.size <= 12)
        g.emit(f"tf.diag({x})", [x], exact=True, inexact=0)
    elif r < 0.35:
        n = g.dim()
        x = g.pick(FLOATS + INTS, shape=(n, n), fresh=0.6)
        g.emit(f"tf.diag_part({x})", [x], exact=True, inexact=0)
    elif r < 0.55:
        x = g.pick(FLOATS + INTS, rank=(2, 3))
        lo, hi = int(g.rng.integers(-1, 3)), int(g.rng.integers(-1, 3))
        g.emit(f"tf.linalg.band_part({x}, {lo}, {hi})", [x], exact=True, inexact=0)
    elif r < 0.7:
        x = g.pick(FLOATS + INTS, rank=(1, 2), where=lambda v: v.size <= 24)
        g.emit(f"tf.linalg.diag({x}, k={int(g.rng.integers(-2, 3))})", [x], exact=True, inexact=0)
    elif r < 0.85:
        x = g.pick(FLOATS + INTS, rank=(2, 3))
        k = int(g.rng.integers(-min(x.shape[-2:]) + 1, min(x.shape[-2:])))
        g.emit(f"tf.linalg.diag_part({x}, k={k})", [x], exact=True, inexact=0)
    else:
        x = g.pick(FLOATS + INTS, rank=(2, 3))
        rows, cols = x.shape[-2:]
        diag = g.pick((x.dtype,), shape=(*x.shape[:-2], min(rows, cols)), fresh=0.7)
        g.emit(f"tf.linalg.set_diag({x}, {diag})", [x, diag], exact=True, inexact=0)


def _well_conditioned(g: Gen, n: int, dtype: str, batch: tuple = ()) -> Val:
    """A square matrix far from singular: an operand plus n on its diagonal."""
    a = g.pick((dtype,), shape=(*batch, n, n), fresh=0.6)
    out = g.emit(f"tf.tanh({a}) + {float(n)} * tf.eye({n}, dtype=tf.{dtype})", [a])
    return out[0]


@row("Cholesky", "MatrixInverse", "MatrixDeterminant", "LogMatrixDeterminant", "MatrixSolve",
     "MatrixTriangularSolve")  # fmt: skip
def _linalg(g: Gen) -> None:
    dtype = g.dtype_of(FLOATS)
    n = int(g.rng.integers(1, 6))
    batch = () if g.rng.random() < 0.6 else (int(g.rng.integers(1, 3)),)
    a = _well_conditioned(g, n, dtype, batch)
    r = g.rng.random()
    if r < 0.2:
        spd = g.emit(f"tf.matmul({a}, {a}, transpose_b=True)", [a])[0]
        g.emit(f"tf.linalg.cholesky({spd})", [spd])
    elif r < 0.4:
        g.emit(f"tf.linalg.inv({a}, adjoint={_bool(g)})", [a])
    elif r < 0.55:
        g.emit(f"tf.linalg.det({a})", [a])
    elif r < 0.65:
        g.emit(f"tf.linalg.slogdet({a})", [a], n_out=2)
    else:
        rhs = g.pick((dtype,), shape=(*batch, n, int(g.rng.integers(1, 4))), fresh=0.6)
        if r < 0.85:
            g.emit(f"tf.linalg.solve({a}, {rhs}, adjoint={_bool(g)})", [a, rhs])
        else:
            g.emit(
                f"tf.linalg.triangular_solve({a}, {rhs}, lower={_bool(g)}, adjoint={_bool(g)})",
                [a, rhs],
            )


@row("Qr", "Svd", "SelfAdjointEigV2")
def _decompositions(g: Gen) -> None:
    """Values that do not depend on the signs a decomposition chooses."""
    dtype = g.dtype_of(FLOATS)
    m, n = int(g.rng.integers(1, 6)), int(g.rng.integers(1, 6))
    a = g.pick((dtype,), shape=(m, n), fresh=0.6)
    r = g.rng.random()
    if r < 0.35:
        q, rr = g.emit(f"tf.linalg.qr({a})", [a], n_out=2)
        g.emit(f"tf.matmul({q}, {rr})", [q, rr], fetch=True)
        g.emit(f"tf.abs({rr})", [rr], fetch=True)
    elif r < 0.7:
        g.emit(f"tf.linalg.svd({a}, compute_uv=False)", [a])
    else:
        sym = g.emit(f"{a}[:, :1] * {a}[:, :1][:, ::-1] + tf.matmul({a}, {a}, transpose_a=True)",
                     [a])[0]  # fmt: skip
        g.emit(f"tf.linalg.eigh({sym})[0]", [sym])


@row("RandomUniform", "RandomStandardNormal", "TruncatedNormal", "RandomUniformInt")
def _random(g: Gen) -> None:
    shape = list(g.shape(int(g.rng.integers(0, 3))))
    seed = int(g.rng.integers(1, 1000))
    r = g.rng.random()
    if r < 0.3:
        g.emit(f"tf.random_uniform({shape}, -1.0, 2.0, seed={seed})", [], exact=False)
    elif r < 0.55:
        g.emit(f"tf.random_normal({shape}, 0.5, 2.0, seed={seed})", [], exact=False)
    elif r < 0.8:
        g.emit(f"tf.truncated_normal({shape}, seed={seed})", [], exact=False)
    else:
        g.emit(f"tf.random_uniform({shape}, -3, 9, dtype=tf.int32, seed={seed})", [])


@row("CheckNumerics")
def _check_numerics(g: Gen) -> None:
    x = g.pick(FLOATS)
    out = g.emit(f'tf.check_numerics({x}, "fuzz")', [x], exact=True, inexact=0)
    if out and not np.all(np.isfinite(_values_now(g, x))):
        raise Rejected("CheckNumerics of a non-finite value fails the run")


def _values_now(g: Gen, x: Val) -> np.ndarray:
    """What the interpreter computes for x (CheckNumerics must see finite values)."""
    from tfc.reference.interp import Interpreter

    t = g.env[x.name]
    feeds = {g.built.feeds[n]: g.case.values[n] for n in g.built.feeds}
    interp = Interpreter(g.graph)
    for name, v in g.built.variables.items():
        interp.state.vars[v.op.name] = np.array(g.case.values[name])
    return interp.run(t, feeds)


def _index_feed(g: Gen, shape: tuple, high: int, dtype: str | None = None) -> Val:
    """An int feed of `shape` holding indices in [0, high)."""
    idx = g.feed(dtype or str(g.rng.choice(INTS)), shape, "nonneg")
    g.case.values[idx.name] = g.rng.integers(0, max(high, 1), size=shape).astype(idx.dtype)
    return idx


@row("BroadcastTo", "BroadcastArgs")
def _broadcast_to(g: Gen) -> None:
    x = g.pick(FLOATS + INTS, rank=(0, 1, 2, 3), where=lambda v: v.size <= 24)
    shape = [g.dim() if d == 1 and _bool(g) else d for d in x.shape]
    shape = [g.dim() for _ in range(int(g.rng.integers(0, 2)))] + shape
    if int(np.prod(shape)) > g.max_size:
        raise Rejected("too large a broadcast")
    if g.rng.random() < 0.75:
        g.emit(f"tf.broadcast_to({x}, {shape})", [x], exact=True, inexact=0)
    else:
        g.emit(f"tf.broadcast_dynamic_shape(tf.shape({x}), {shape})", [x], exact=True, inexact=0)


@row("DepthwiseConv2dNative", weight=1.5)
def _depthwise(g: Gen) -> None:
    dtype = g.dtype_of(("float32", "float32", "float64"))
    x = _image(g, dtype)
    kh, kw = int(g.rng.integers(1, 4)), int(g.rng.integers(1, 4))
    w = g.pick((dtype,), shape=(kh, kw, x.shape[3], int(g.rng.choice([1, 2, 3]))), fresh=0.8)
    padding = str(g.rng.choice(["SAME", "VALID"]))
    s = int(g.rng.choice([1, 1, 2]))
    rate = 1 if s > 1 or g.rng.random() < 0.8 else 2
    if padding == "VALID" and min(x.shape[1] - (kh - 1) * rate, x.shape[2] - (kw - 1) * rate) < 1:
        padding = "SAME"
    g.emit(
        f'tf.nn.depthwise_conv2d({x}, {w}, [1, {s}, {s}, 1], "{padding}", rate=[{rate}, {rate}])',
        [x, w],
    )


@row("EnsureShape", "IdentityN")
def _identities(g: Gen) -> None:
    x = g.pick(FLOATS + INTS)
    if _bool(g):
        g.emit(f"tf.ensure_shape({x}, {list(x.shape)})", [x], exact=True, inexact=0)
    else:
        y = g.pick(FLOATS + INTS)
        g.emit(f"tf.identity_n([{x}, {y}])", [x, y], n_out=2, exact=True, inexact=0)


@row("ExtractImagePatches")
def _patches(g: Gen) -> None:
    x = _image(g, g.dtype_of(("float32", "float64", "int32")))
    k, s, r = int(g.rng.integers(1, 4)), int(g.rng.integers(1, 3)), int(g.rng.choice([1, 1, 2]))
    padding = str(g.rng.choice(["SAME", "VALID"]))
    if padding == "VALID" and min(x.shape[1], x.shape[2]) < (k - 1) * r + 1:
        padding = "SAME"
    g.emit(
        f"tf.extract_image_patches({x}, [1, {k}, {k}, 1], [1, {s}, {s}, 1], [1, {r}, {r}, 1], "
        f'"{padding}")',
        [x], exact=True, inexact=0,
    )  # fmt: skip


@row("GatherNd", "ScatterNd", "TensorScatterAdd", "TensorScatterMax", "TensorScatterMin",
     "TensorScatterSub", "TensorScatterUpdate", weight=2)  # fmt: skip
def _nd_indexing(g: Gen) -> None:
    x = g.pick(FLOATS + INTS, rank=(1, 2, 3))
    depth = int(g.rng.integers(1, x.rank + 1))
    n = int(g.rng.integers(1, 6))
    idx = g.feed(str(g.rng.choice(INTS)), (n, depth), "nonneg")
    columns = [g.rng.integers(0, d, size=n) for d in x.shape[:depth]]
    r = g.rng.random()
    if r > 0.7:  # an update: each index once, so the order of writes does not matter
        count = int(np.prod(x.shape[:depth]))
        flat = g.rng.permutation(count)[: min(n, count)]
        columns = list(np.unravel_index(flat, x.shape[:depth]))
        n = len(flat)
        idx = g.feed(idx.dtype, (n, depth), "nonneg")
    g.case.values[idx.name] = np.stack(columns, axis=1).astype(idx.dtype)
    updates_shape = (n, *x.shape[depth:])
    if r < 0.35:
        g.emit(f"tf.gather_nd({x}, {idx})", [x, idx], exact=True, inexact=0)
        return
    updates = g.pick((x.dtype,), shape=updates_shape, fresh=0.6)
    if r < 0.5:
        g.emit(f"tf.scatter_nd({idx}, {updates}, {list(x.shape)})", [idx, updates])
        return
    fn = "update" if r > 0.7 else str(g.rng.choice(["add", "sub", "max", "min"]))
    exact = fn in ("update", "max", "min")
    g.emit(f"tf.tensor_scatter_nd_{fn}({x}, {idx}, {updates})", [x, idx, updates],
           exact=exact, inexact=0 if exact else 1)  # fmt: skip


@row("InvertPermutation", "UnravelIndex")
def _permutations(g: Gen) -> None:
    if _bool(g):
        n = int(g.rng.integers(1, 9))
        p = g.feed(str(g.rng.choice(INTS)), (n,), "nonneg")
        g.case.values[p.name] = g.rng.permutation(n).astype(p.dtype)
        g.emit(f"tf.invert_permutation({p})", [p])
        return
    dims = [int(d) for d in g.rng.integers(1, 5, size=int(g.rng.integers(1, 4)))]
    shape = () if g.rng.random() < 0.3 else (int(g.rng.integers(1, 6)),)
    idx = _index_feed(g, shape, int(np.prod(dims)))
    g.emit(f"tf.unravel_index({idx}, {dims})", [idx])


@row("LRN")
def _lrn(g: Gen) -> None:
    x = _image(g, "float32")
    radius = int(g.rng.integers(0, 4))
    g.emit(f"tf.nn.lrn({x}, depth_radius={radius}, bias=1.5, alpha=0.25, beta=0.75)", [x])


@row("LowerBound", "UpperBound")
def _searchsorted(g: Gen) -> None:
    dtype = str(g.rng.choice(["float32", "float64", "int32"]))
    batch, n, m = int(g.rng.integers(1, 4)), int(g.rng.integers(1, 9)), int(g.rng.integers(1, 7))
    seq = g.feed(dtype, (batch, n))
    g.case.values[seq.name] = np.sort(g.case.values[seq.name], axis=1)
    values = g.feed(dtype, (batch, m))
    side = str(g.rng.choice(["left", "right"]))
    g.emit(f'tf.searchsorted({seq}, {values}, side="{side}")', [seq, values])


@row("MaxPoolWithArgmax")
def _max_pool_argmax(g: Gen) -> None:
    x = _image(g, g.dtype_of(("float32", "float64")))
    if not x.exact:
        x = g.feed(x.dtype, x.shape)
    k, s = int(g.rng.choice([1, 2, 3])), int(g.rng.choice([1, 2]))
    padding = str(g.rng.choice(["SAME", "VALID"]))
    if padding == "VALID" and min(x.shape[1], x.shape[2]) < k:
        padding = "SAME"
    g.emit(
        f'tf.nn.max_pool_with_argmax({x}, [1, {k}, {k}, 1], [1, {s}, {s}, 1], "{padding}", '
        f"include_batch_in_index={_bool(g)})",
        [x], n_out=2, exact=True, inexact=0,
    )  # fmt: skip


@row("Multinomial", "RandomGamma", "RandomPoissonV2", "RandomShuffle")
def _draws(g: Gen) -> None:
    seed = int(g.rng.integers(1, 1000))
    r = g.rng.random()
    if r < 0.3:
        logits = g.pick(("float32",), rank=2, where=lambda v: v.shape[1] >= 2, fresh=0.5)
        n = int(g.rng.integers(1, 6))
        g.emit(f"tf.random.categorical({logits}, {n}, seed={seed})", [logits])
    elif r < 0.55:
        alpha = g.feed("float32", (int(g.rng.integers(1, 4)),), "pos")
        g.emit(f"tf.random_gamma([{int(g.rng.integers(1, 5))}], {alpha}, seed={seed})", [alpha])
    elif r < 0.8:
        lam = g.feed("float32", (int(g.rng.integers(1, 4)),), "pos")
        g.emit(f"tf.random.poisson({lam}, [{int(g.rng.integers(1, 5))}], seed={seed})", [lam])
    else:
        x = g.pick(FLOATS + INTS, rank=(1, 2))
        g.emit(f"tf.random_shuffle({x}, seed={seed})", [x], exact=True, inexact=0)


@row("ReverseSequence", "ReverseV2", "Roll", weight=1.5)
def _reversals(g: Gen) -> None:
    x = g.pick(FLOATS + INTS, rank=(1, 2, 3))
    r = g.rng.random()
    if r < 0.35:
        axes = [a for a in range(x.rank) if _bool(g)] or [0]
        g.emit(f"tf.reverse({x}, {axes})", [x], exact=True, inexact=0)
    elif r < 0.7:
        axes = sorted({int(a) for a in g.rng.integers(0, x.rank, size=int(g.rng.integers(1, 3)))})
        shifts = [int(s) for s in g.rng.integers(-7, 8, size=len(axes))]
        g.emit(f"tf.roll({x}, {shifts}, {axes})", [x], exact=True, inexact=0)
    else:
        if x.rank < 2:
            raise Rejected("reverse_sequence needs a batch and a sequence axis")
        batch_axis = int(g.rng.integers(0, x.rank))
        seq_axis = int(g.rng.choice([a for a in range(x.rank) if a != batch_axis]))
        lengths = g.feed(str(g.rng.choice(INTS)), (x.shape[batch_axis],), "nonneg")
        g.case.values[lengths.name] = g.rng.integers(
            0, x.shape[seq_axis] + 1, size=x.shape[batch_axis]
        ).astype(lengths.dtype)
        g.emit(
            f"tf.reverse_sequence({x}, {lengths}, seq_axis={seq_axis}, batch_axis={batch_axis})",
            [x, lengths], exact=True, inexact=0,
        )  # fmt: skip


@row("Sort")
def _sort(g: Gen) -> None:
    x = g.pick(FLOATS + INTS, rank=(1, 2, 3), exact=True)
    direction = str(g.rng.choice(["ASCENDING", "DESCENDING"]))
    g.emit(f'tf.sort({x}, axis={_axis(g, x.rank)}, direction="{direction}")', [x],
           exact=True, inexact=0)  # fmt: skip


_VARIABLE_SCATTERS = ("ScatterAdd", "ScatterDiv", "ScatterMax", "ScatterMin", "ScatterMul",
                      "ScatterSub", "ScatterUpdate", "ScatterNdAdd", "ScatterNdSub",
                      "ScatterNdUpdate")  # fmt: skip


@row(*_VARIABLE_SCATTERS, weight=2)
def _variable_scatter(g: Gen) -> None:
    """A scatter into a variable of its own (the step runs it; the variable is compared)."""
    dtype = g.dtype_of(("float32", "float64", "int32"))
    shape = g.shape(int(g.rng.integers(1, 4)), max_size=64)
    nd = g.rng.random() < 0.35
    fn = str(g.rng.choice(["add", "sub", "update"] if nd else
                          ["add", "sub", "mul", "div", "max", "min", "update"]))  # fmt: skip
    v = g.var(dtype, shape, "pos" if fn == "div" else "any", pool=False)
    depth = int(g.rng.integers(1, len(shape) + 1)) if nd else 1
    count = int(np.prod(shape[:depth]))
    n = int(g.rng.integers(1, 6))
    if fn == "update":  # each index once: the order of the writes does not matter
        flat = g.rng.permutation(count)[: min(n, count)]
    else:
        flat = g.rng.integers(0, count, size=n)
    columns = np.stack(np.unravel_index(flat, shape[:depth]), axis=1)
    idx_shape = columns.shape if nd else (len(flat),)
    idx = g.feed(str(g.rng.choice(INTS)), idx_shape, "nonneg")
    g.case.values[idx.name] = (columns if nd else flat).astype(idx.dtype)
    updates_shape = (len(flat), *shape[depth:])
    updates = g.feed(dtype, updates_shape, "pos" if fn in ("div", "mul") else "any")
    name = f"scatter_nd_{fn}" if nd else f"scatter_{fn}"
    g.emit(f"tf.{name}({v}, {idx}, {updates})", [v, idx, updates], kind="train")


# -- composites (no op of their own; they make fusion, CSE and simplify's patterns) ---------------
def composite_rows() -> dict[str, Row]:
    return {"einsum": _einsum, "norms": _norms, "patterns": _patterns, "clip": _clip}


def _einsum(g: Gen) -> None:
    a = g.pick(FLOATS, rank=2)
    i, j = a.shape
    k = g.dim()
    b = g.pick((a.dtype,), shape=(j, k), fresh=0.5)
    eq = str(g.rng.choice(["ij,jk->ik", "ij,jk->ki", "ij,jk->i", "ij,jk->"]))
    g.emit(f'tf.einsum("{eq}", {a}, {b})', [a, b])


def _norms(g: Gen) -> None:
    x = g.pick(FLOATS, rank=(1, 2, 3))
    r = g.rng.random()
    if r < 0.3:
        g.emit(f"tf.math.reduce_logsumexp({x}, axis={_axes(g, x.rank)})", [x])
    elif r < 0.5:
        g.emit(f"tf.nn.l2_loss({x})", [x])
    elif r < 0.7:
        g.emit(f"tf.nn.moments({x}, axes={[a for a in range(x.rank) if _bool(g)] or [0]})",
               [x], n_out=2)  # fmt: skip
    else:
        g.emit(f"tf.nn.l2_normalize({x} + 0.5, axis={_axis(g, x.rank)})", [x])


def _clip(g: Gen) -> None:
    x = g.pick(FLOATS, exact=True)
    g.emit(f"tf.clip_by_value({x}, -1.0, 1.5)", [x], exact=True, inexact=0)


def _patterns(g: Gen) -> None:
    """What simplify, fold and CSE rewrite: identities, double views, constant chains,
    repeated expressions."""
    x = g.pick(FLOATS + INTS)
    one = "1.0" if x.kind == "f" else "1"
    zero = "0.0" if x.kind == "f" else "0"
    r = g.rng.random()
    if r < 0.15:
        g.emit(f"{x} * {one}", [x], exact=True, inexact=0)
    elif r < 0.25:
        g.emit(f"{zero} + {x}", [x], exact=True, inexact=0)
    elif r < 0.35 and x.rank >= 2:
        perm = [int(p) for p in g.rng.permutation(x.rank)]
        inverse = [int(p) for p in np.argsort(perm)]
        g.emit(f"tf.transpose(tf.transpose({x}, {perm}), {inverse})", [x], exact=True, inexact=0)
    elif r < 0.45:
        g.emit(f"tf.cast(tf.identity(tf.identity({x})), tf.{x.dtype})", [x], exact=True, inexact=0)
    elif r < 0.55:
        g.emit(f"tf.reshape(tf.reshape({x}, [-1]), {list(x.shape)})", [x], exact=True, inexact=0)
    elif r < 0.75 and g.case.stmts:
        # an earlier statement again (CSE merges it) reading the same values
        ops = [
            s for s in g.case.stmts if s.kind == "op" and len(s.out) == 1 and s.out[0] in g.by_name
        ]
        if not ops:
            raise Rejected("nothing to repeat")
        stmt = ops[int(g.rng.integers(0, len(ops)))]
        src = g.by_name[stmt.out[0]]
        inputs = [g.by_name[n] for n in _reads(stmt) if n in g.by_name]
        out = g.emit(stmt.expr, inputs, exact=src.exact, inexact=0)
        if out:
            out[0].depth = src.depth
    else:
        shape = tuple(x.shape[-1:]) if x.rank else ()
        c = g.const(x.dtype, shape, "pos")
        fn = "tf.exp" if x.kind == "f" else "tf.square"
        folded = g.emit(f"{fn}({c}) * 2", [c])[0]
        g.emit(f"{x} + {folded}", [x, folded])


def _reads(stmt) -> list[str]:
    return sorted(stmt.reads() - {"tf", "np", "op", "const", "feed", "var"})


# -- what the generator reaches otherwise, and what it cannot compare ------------------------------
REACHED: dict[str, str] = {
    **{
        op: "an optimizer's update of the rows an embedding lookup read (minimize)"
        for op in (
            "SparseApplyAdadelta", "SparseApplyAdagrad", "SparseApplyAdagradDA",
            "SparseApplyCenteredRMSProp", "SparseApplyFtrl", "SparseApplyFtrlV2",
            "SparseApplyMomentum", "SparseApplyProximalAdagrad",
            "SparseApplyProximalGradientDescent", "SparseApplyRMSProp",
        )
    },  # fmt: skip
    **{op: "gradient of its forward op" for op in (
        "AvgPoolGrad", "Conv2DBackpropFilter", "Conv2DBackpropInput", "EluGrad", "LeakyReluGrad",
        "LogSoftmaxGrad", "MaxPoolGrad", "MirrorPadGrad", "ReciprocalGrad", "Relu6Grad",
        "ReluGrad", "RsqrtGrad", "SeluGrad", "SigmoidGrad", "SoftmaxGrad", "SoftplusGrad",
        "DepthwiseConv2dNativeBackpropFilter", "DepthwiseConv2dNativeBackpropInput", "LRNGrad",
        "SoftsignGrad", "SqrtGrad", "StridedSliceGrad", "SumToShape", "TanhGrad",
    )},
    "MaxPoolGradGrad": "second gradient of MaxPool (gradients of gradients)",
    "_FusedConv2D": "the epilogue pass makes it from Conv2D + bias [+ residual] [+ ReLU]",
    "_FusedConv2DConcat": "the epilogue pass makes it from a ConcatV2 of _FusedConv2Ds",
    **{op: "an optimizer's update (minimize)" for op in (
        "ApplyAdagrad", "ApplyAdam", "ApplyCenteredRMSProp", "ApplyGradientDescent",
        "ApplyMomentum", "ApplyRMSProp", "ApplyAdadelta", "ApplyAdagradDA", "ApplyFtrl",
        "ApplyFtrlV2", "ApplyProximalAdagrad", "ApplyProximalGradientDescent",
    )},
    **{op: "the fuse pass makes it" for op in (
        "Fusion", "FusedApplyAdagrad", "FusedApplyAdam", "FusedApplyCenteredRMSProp",
        "FusedApplyGradientDescent", "FusedApplyMomentum", "FusedApplyRMSProp", "FusedAssign",
        "FusedAssignAdd", "FusedAssignSub", "FusedApplyAdadelta", "FusedApplyAdagradDA",
        "FusedApplyFtrl", "FusedApplyFtrlV2", "FusedApplyProximalAdagrad",
        "FusedApplyProximalGradientDescent",
    )},
    "Assign": "variables' initializers and optimizers' slot updates",
    "AssignAdd": "optimizers' step counters",
    "AssignSub": "optimizers' updates",
    "Const": "every constant operand",
    "Placeholder": "every feed",
    "VariableV2": "every variable",
    "Feed": "the prune pass makes it from fed placeholders",
    "NoOp": "minimize groups its updates with one",
}  # fmt: skip
EXCLUDED: dict[str, str] = {
    "PlaceholderWithDefault": "a default the program replaces: no value of its own to compare",
    "IteratorGetNext": "tf.data: reads a Python-side pipeline, tests/test_data.py",
    "MakeIterator": "tf.data: reads a Python-side pipeline, tests/test_data.py",
    "_Send": "distributed programs only (partition pass), tests/test_distributed.py",
    "_Recv": "distributed programs only (partition pass), tests/test_distributed.py",
    "IsVariableInitialized": "the Session feeds its answer: a program compiled alone refuses it",
    **{
        op: "prints or fails the run: its effect is text, tests/test_logging_ops.py"
        for op in (
            "Print",
            "PrintFormatted",
            "Assert",
        )
    },
    **{
        op: "complex dtypes: the fuzzer draws real values; tests/test_ops_dtypes.py"
        for op in ("Angle", "Complex", "ComplexAbs", "Conj", "Imag", "Real")
    },
    "Bitcast": "reinterprets bits (NaN payloads are not values): tests/test_ops_dtypes.py",
    **{
        op: "candidate samplers draw as TensorFlow's do: tests/test_ops_sampled.py"
        for op in (
            "AliasCandidateSampler",
            "AllCandidateSampler",
            "LogUniformCandidateSampler",
            "UniformCandidateSampler",
        )
    },  # fmt: skip
    "Timestamp": "reads the wall clock: no value two implementations share",
    "GuaranteeConst": "an identity that stops gradients: tests/test_tf1_misc_names.py",
    **{
        op: "TFLite's int8 kernels take quantization parameters from a converted model: "
        "tests/test_ops_quantized.py checks them bit for bit against TFLite's interpreter"
        for op in (
            "Int8Add",
            "Int8Dequantize",
            "Int8Lookup",
            "Int8Mul",
            "Int8Quantize",
            "Int8Relu",
            "Int8Requantize",
            "Int8AvgPool",
            "Int8Conv2D",
            "Int8DepthwiseConv2D",
            "Int8FullyConnected",
            "Int8MaxPool",
            "Int8Mean",
            "Int8Softmax",
        )
    },  # fmt: skip
    "CheckPredicate": "fails the run by design: tests/test_control_flow.py",
    "CountUpTo": "a variable's counter failing past its limit: tests/test_queues.py",
    **{
        op: "a reader reads files named by a queue, its place kept across Session.run calls: "
        "tests/test_readers.py"
        for op in (
            "TFRecordReaderV2",
            "TextLineReaderV2",
            "FixedLengthRecordReaderV2",
            "WholeFileReaderV2",
            "IdentityReaderV2",
            "ReaderReadV2",
            "ReaderReadUpToV2",
            "ReaderNumRecordsProducedV2",
            "ReaderNumWorkUnitsCompletedV2",
            "ReaderResetV2",
        )
    },  # fmt: skip
    **{
        op: "a queue's state lives across Session.run calls: tests/test_queues.py"
        for op in (
            "FIFOQueueV2",
            "PaddingFIFOQueueV2",
            "PriorityQueueV2",
            "RandomShuffleQueueV2",
            "QueueCloseV2",
            "QueueDequeueManyV2",
            "QueueDequeueUpToV2",
            "QueueDequeueV2",
            "QueueEnqueueManyV2",
            "QueueEnqueueV2",
            "QueueIsClosedV2",
            "QueueSizeV2",
        )
    },  # fmt: skip
    **{
        op: "nested graphs (tf.cond, tf.while_loop) and the TensorArrays that loops carry: the "
        "fuzzer makes flat graphs; tests/test_control_flow*.py"
        for op in (
            "If",
            "While",
            "Undefined",
            "TensorArrayV3",
            "TensorArrayReadV3",
            "TensorArrayWriteV3",
            "TensorArrayGatherV3",
            "TensorArrayScatterV3",
            "TensorArraySizeV3",
            "TensorArrayStack",
            "TensorArrayUnstack",
            "TensorArrayPutRows",
        )
    },  # fmt: skip
}


def all_rows() -> dict[str, Row]:
    """Every generator row by name: element-wise ops, the table's rows, composites."""
    rows: dict[str, Row] = {}
    for op in elementwise_ops():
        rows[op] = lambda g, op=op: build_elementwise(g, op)
    for op, fn in ROWS.items():
        rows.setdefault(op, fn)
    rows.update(composite_rows())
    return rows


def in_python(op: str) -> str:
    """Why op never compiles (it runs in a Python stage between compiled ones: strings,
    value-dependent shapes, Python calls), or "" when it can."""
    rule = REGISTRY[op].in_python
    return rule if isinstance(rule, str) else ""


def unlisted_ops() -> list[str]:
    """Registered ops the fuzzer neither generates, reaches, nor excludes with a reason (ops
    that only run in Python stages are excluded by their OpDef's own reason)."""
    known = set(elementwise_ops()) | set(ROWS) | set(REACHED) | set(EXCLUDED)
    return sorted(op for op in set(REGISTRY) - known if not in_python(op))
