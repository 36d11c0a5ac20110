"""Reductions and arg-reductions: compiled C vs the NumPy reference vs independent formulas."""

import itertools
import math

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf

RNG = np.random.default_rng(20240611)

NUMERIC = ["float32", "float64", "int32", "int64"]
REDUCE = {
    "Sum": tf.reduce_sum,
    "Mean": tf.reduce_mean,
    "Max": tf.reduce_max,
    "Min": tf.reduce_min,
    "Prod": tf.reduce_prod,
}
AXES3 = [None, [], 0, 1, 2, -1, -3, [0, 1], [0, 2], [2, 1], [-1, 0], [0, 1, 2]]
# (shape, axis): scalars, size-1 dims, zero-size dims (empty input with a non-empty output,
# empty output), reductions of nothing
EDGE_SHAPES = [
    ((), None),
    ((), []),
    ((1,), 0),
    ((1, 1, 3), [0, 1]),
    ((3, 1), 1),
    ((0,), None),
    ((0, 3), 0),
    ((3, 0), 1),
    ((0, 3), 1),
    ((2, 0, 3), [0, 2]),
    ((2, 0, 3), 1),
]


# -- independent expectations -------------------------------------------------------------------
def axes_tuple(axis, rank: int) -> tuple:
    if axis is None:
        return tuple(range(rank))
    return tuple(a % rank for a in np.atleast_1d(np.asarray(axis, dtype=np.int64)).tolist())


def wrap(values, dtype: str) -> np.ndarray:
    """Python integers reduced to two's complement `dtype`: how TF's integer arithmetic wraps."""
    bits = np.dtype(dtype).itemsize * 8
    fn = np.frompyfunc(lambda v: (int(v) + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1), 1, 1)
    return np.asarray(fn(values), dtype=object).astype(dtype)


def expected(op: str, x: np.ndarray, axis, keep: bool) -> np.ndarray:
    axes = axes_tuple(axis, x.ndim)
    count = math.prod(x.shape[a] for a in axes)
    kept = tuple(1 if k in axes else d for k, d in enumerate(x.shape))
    out_shape = kept if keep else tuple(d for k, d in enumerate(x.shape) if k not in axes)
    if x.dtype.kind == "f":
        w = x.astype(np.float64)
        if op in ("Max", "Min") and count == 0:
            r = np.full(out_shape, -np.inf if op == "Max" else np.inf)
        elif op == "Mean" and count == 0:
            r = np.full(out_shape, np.nan)
        else:
            fn = {"Sum": np.sum, "Mean": np.mean, "Prod": np.prod, "Max": np.max, "Min": np.min}
            r = fn[op](w, axis=axes, keepdims=keep)
        return np.asarray(r).astype(x.dtype)
    info = np.iinfo(x.dtype)
    if op in ("Max", "Min"):
        if count == 0:
            return np.full(out_shape, info.min if op == "Max" else info.max, dtype=x.dtype)
        return (np.max if op == "Max" else np.min)(x, axis=axes, keepdims=keep)
    big = x.astype(object)  # exact Python integers, wrapped once at the end
    if op == "Prod":
        return wrap(np.prod(big, axis=axes, keepdims=keep), x.dtype.name)
    total = wrap(np.sum(big, axis=axes, keepdims=keep), x.dtype.name)
    if op == "Sum":
        return total
    if count == 0:
        return np.zeros(out_shape, dtype=x.dtype)
    # C's integer division: the quotient truncated toward zero
    trunc = np.frompyfunc(lambda v: -(-int(v) // count) if v < 0 else int(v) // count, 1, 1)
    return np.asarray(trunc(total.astype(object)), dtype=object).astype(x.dtype)


def tolerance(op: str, x: np.ndarray, axis) -> dict:
    """Float error bounds that grow with the reduction length, tight enough to see one element
    added twice or left out."""
    if x.dtype.kind != "f":
        return {}
    if op in ("Max", "Min"):
        return {"rtol": 0.0, "atol": 0.0}
    axes = axes_tuple(axis, x.ndim)
    count = math.prod(x.shape[a] for a in axes)
    eps = 1e-6 if x.dtype == np.float32 else 1e-14
    if op == "Prod":
        return {"rtol": eps * (count + 1), "atol": 0.0}
    scale = float(np.max(np.sum(np.abs(x.astype(np.float64)), axis=axes), initial=0.0))
    if op == "Mean":
        scale /= max(count, 1)
    return {"rtol": eps, "atol": 10 * eps * scale + 1e-300}


def sample(dtype: str, shape: tuple, op: str = "Sum") -> np.ndarray:
    if dtype == "bool":
        return RNG.random(shape) < 0.6
    if dtype.startswith("int"):
        # Prod's wider range overflows int32 products on purpose: they must wrap
        return RNG.integers(-9, 10 if op == "Prod" else 60, shape).astype(dtype)
    if op == "Prod":
        return RNG.uniform(0.5, 1.5, shape).astype(dtype)
    return RNG.uniform(-4.0, 4.0, shape).astype(dtype)


def source(batch: CaseBatch, x: np.ndarray, k: int) -> tf.Tensor:
    """Inputs rotate between a compiled-in constant, a fed buffer, and a feed with None dims."""
    if k % 3 == 0:
        return tf.constant(x)
    if k % 3 == 1:
        return batch.feed(x)
    return batch.feed(x, [None] * x.ndim)


def axis_id(axis) -> str:
    return "all" if axis is None else str(axis).replace(" ", "")


# -- batches --------------------------------------------------------------------------------------
def build_reductions() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        k = 0
        for dtype in NUMERIC:
            for op, fn in REDUCE.items():
                x = sample(dtype, (2, 3, 4), op)
                inputs = [source(b, x, j) for j in range(3)]
                for axis, keep in itertools.product(AXES3, (False, True)):
                    k += 1
                    t = fn(inputs[k % 3], axis=axis, keepdims=keep)
                    want = expected(op, x, axis, keep)
                    cid = f"{op}-{dtype}-(2,3,4)-axis{axis_id(axis)}-keep{int(keep)}"
                    b.add(cid, t, want, **tolerance(op, x, axis))
                for shape, axis in EDGE_SHAPES:
                    k += 1
                    x = sample(dtype, shape, op)
                    t = fn(source(b, x, k), axis=axis, keepdims=k % 2 == 0)
                    want = expected(op, x, axis, k % 2 == 0)
                    cid = f"{op}-{dtype}-{shape}-axis{axis_id(axis)}-keep{k % 2 == 0:d}"
                    b.add(cid.replace(" ", ""), t, want, **tolerance(op, x, axis))
        # every subset of the axes of a rank-4 input, for one op of each dtype
        for op, dtype in [
            ("Sum", "float32"),
            ("Max", "int64"),
            ("Mean", "int32"),
            ("Prod", "float64"),
        ]:
            x = sample(dtype, (2, 3, 4, 5), op)
            t = b.feed(x, [None, 3, None, 5])
            for n in range(5):
                for axes in itertools.combinations(range(4), n):
                    keep = len(axes) % 2 == 1
                    cid = f"{op}-{dtype}-(2,3,4,5)-axis{list(axes)}-keep{keep:d}".replace(" ", "")
                    b.add(
                        cid,
                        REDUCE[op](t, list(axes), keepdims=keep),
                        expected(op, x, list(axes), keep),
                        **tolerance(op, x, list(axes)),
                    )
    return b


def build_special() -> CaseBatch:
    """Long sums, wrapping, truncation, NaN, empty extremes, the bool and arg reductions."""
    b = CaseBatch()
    with b.graph.as_default():
        for dtype in ["float32", "float64"]:
            x = sample(dtype, (1000, 7))
            t = b.feed(x, [None, 7])
            for op, axis in [("Sum", 0), ("Sum", 1), ("Sum", None), ("Mean", 0), ("Mean", None)]:
                b.add(
                    f"long-{op}-{dtype}-axis{axis_id(axis)}",
                    REDUCE[op](t, axis),
                    expected(op, x, axis, False),
                    **tolerance(op, x, axis),
                )
            # a float32 sum whose float-accumulated result would be off by far more than 1e-5
            ones = np.full((1 << 17,), 0.1, dtype=dtype)
            b.add(
                f"long-Sum-{dtype}-accurate",
                tf.reduce_sum(b.feed(ones)),
                np.asarray(np.sum(ones.astype(np.float64)), dtype=dtype),
                rtol=1e-6,
            )
            nan = np.array([[1.0, np.nan, 3.0], [-2.0, 5.0, -1.0]], dtype=dtype)
            tn = tf.constant(nan)
            for op in ("Max", "Min", "Sum"):
                b.add(f"nan-{op}-{dtype}", REDUCE[op](tn, 1), expected(op, nan, 1, False))
            b.add(f"nan-Max-all-{dtype}", tf.reduce_max(tn), np.asarray(np.nan, dtype=dtype))
            inf = np.array([-np.inf, -np.inf], dtype=dtype)
            b.add(f"neg-inf-Max-{dtype}", tf.reduce_max(inf), np.asarray(-np.inf, dtype=dtype))
        for dtype in ["int32", "int64"]:
            info = np.iinfo(dtype)
            big = np.array([[info.max, 1, 5], [info.min, -1, -5]], dtype=dtype)
            tb = b.feed(big, [None, None])
            b.add(f"wrap-Sum-{dtype}", tf.reduce_sum(tb, 1), expected("Sum", big, 1, False))
            b.add(f"wrap-Sum0-{dtype}", tf.reduce_sum(tb, 0), expected("Sum", big, 0, False))
            b.add(
                f"wrap-Prod-{dtype}",
                tf.reduce_prod(tb * 3, 1),
                expected("Prod", wrap(big.astype(object) * 3, dtype), 1, False),
            )
            b.add(f"wrap-Mean-{dtype}", tf.reduce_mean(tb, 0), expected("Mean", big, 0, False))
            m = np.array([[-7, 0], [7, 0], [-1, -2], [5, 4]], dtype=dtype)
            b.add(
                f"trunc-Mean-{dtype}",
                tf.reduce_mean(b.feed(m), 1),
                np.array([-3, 3, -1, 4], dtype=dtype),
            )
            empty = np.zeros((0, 2), dtype=dtype)
            b.add(f"empty-Max-{dtype}", tf.reduce_max(empty, 0), np.full(2, info.min, dtype))
            b.add(f"empty-Min-{dtype}", tf.reduce_min(empty, 0), np.full(2, info.max, dtype))
            b.add(f"empty-Mean-{dtype}", tf.reduce_mean(empty, 0), np.zeros(2, dtype))
            b.add(f"empty-Prod-{dtype}", tf.reduce_prod(empty, 0), np.ones(2, dtype))

        # axis spellings: a tensor, int64 values, TF1's deprecated argument names
        x = sample("float64", (2, 3, 4))
        tx = b.feed(x)
        b.add("axis-tensor", tf.reduce_sum(tx, tf.constant([0, 2])), x.sum((0, 2)))
        b.add("axis-int64", tf.reduce_max(tx, np.array([1], dtype=np.int64)), x.max(1))
        b.add(
            "reduction_indices-keep_dims",
            tf.reduce_min(tx, reduction_indices=[2], keep_dims=True),
            x.min(2, keepdims=True),
        )

        # All, Any
        bx = sample("bool", (2, 3, 4))
        bx[1] = True  # some rows all true, so reduce_all is not trivially False
        tbx = b.feed(bx, [None, 3, 4])
        for axis, keep in itertools.product(AXES3, (False, True)):
            if keep and axis in (0, 1):
                continue
            for name, fn, ref in [("All", tf.reduce_all, np.all), ("Any", tf.reduce_any, np.any)]:
                axes = axes_tuple(axis, 3)
                b.add(
                    f"{name}-axis{axis_id(axis)}-keep{keep:d}",
                    fn(tbx, axis, keepdims=keep),
                    ref(bx, axis=axes, keepdims=keep),
                )
        empty = np.zeros((3, 0), dtype=bool)
        b.add("All-empty", tf.reduce_all(empty, 1), np.ones(3, dtype=bool))
        b.add("Any-empty", tf.reduce_any(empty, 1), np.zeros(3, dtype=bool))
        b.add("All-scalar", tf.reduce_all(True), np.bool_(True))

        # count_nonzero
        ci = RNG.integers(-1, 2, (4, 5)).astype(np.int32)
        b.add(
            "count_nonzero-int", tf.count_nonzero(b.feed(ci), 1), (ci != 0).sum(1).astype(np.int64)
        )
        cf = np.array([[0.0, -0.0, 1.5], [np.nan, 0.0, 2.0]], dtype=np.float32)
        b.add("count_nonzero-float-all-int32", tf.count_nonzero(cf, dtype=tf.int32), np.int32(3))
        b.add(
            "count_nonzero-bool-keep",
            tf.count_nonzero(bx, [0, 2], keepdims=True),
            bx.sum((0, 2), keepdims=True).astype(np.int64),
        )

        add_arg_cases(b)
    return b


def add_arg_cases(b: CaseBatch) -> None:
    k = 0
    for dtype in NUMERIC:
        # few distinct values, so ties are common: the first index must win
        x = RNG.integers(-3, 4, (3, 4, 5)).astype(dtype)
        inputs = [source(b, x, j) for j in range(3)]
        for axis in [None, 0, 1, 2, -1, -2]:
            for name, fn, ref in [
                ("argmax", tf.argmax, np.argmax),
                ("argmin", tf.argmin, np.argmin),
            ]:
                k += 1
                out = "int32" if k % 2 else "int64"
                want = ref(x, axis=0 if axis is None else axis).astype(out)
                t = fn(inputs[k % 3], axis=axis, output_type=out)
                b.add(f"{name}-{dtype}-axis{axis_id(axis)}-{out}", t, want)
        for shape, axis in [
            ((1,), 0),
            ((7,), 0),
            ((1, 1), 1),
            ((0, 3), 1),
            ((3, 1, 2), 1),
            ((2, 300), 1),
            ((300, 2), 0),
        ]:
            x = RNG.integers(-50, 50, shape).astype(dtype)
            k += 1
            t = source(b, x, k)
            b.add(
                f"argmax-{dtype}-{shape}-axis{axis}".replace(" ", ""),
                tf.argmax(t, axis),
                np.argmax(x, axis),
            )
            b.add(
                f"argmin-{dtype}-{shape}-axis{axis}".replace(" ", ""),
                tf.argmin(t, axis),
                np.argmin(x, axis),
            )
    for dtype in ["float32", "float64"]:
        x = np.array(
            [[1.0, np.nan, 3.0, np.nan], [2.0, 2.0, -np.inf, 1.0], [np.inf, np.nan, np.inf, 0.0]],
            dtype=dtype,
        )
        tx = b.feed(x, [None, 4])
        # NumPy's rule: the first NaN wins for both; else the first extreme
        b.add(f"argmax-nan-{dtype}-axis1", tf.argmax(tx, 1), np.array([1, 0, 1]))
        b.add(f"argmin-nan-{dtype}-axis1", tf.argmin(tx, 1), np.array([1, 2, 1]))
        b.add(f"argmax-nan-{dtype}-axis0", tf.argmax(tx, 0), np.argmax(x, 0))
        b.add(f"argmin-nan-{dtype}-axis0", tf.argmin(tx, dimension=0), np.argmin(x, 0))


REDUCTIONS = build_reductions()
SPECIAL = build_special()


@pytest.mark.parametrize("case", REDUCTIONS.ids())
def test_reductions(case):
    REDUCTIONS.check(case)


@pytest.mark.parametrize("case", SPECIAL.ids())
def test_special_cases(case):
    SPECIAL.check(case)


# -- static shapes, errors ----------------------------------------------------------------------
def test_partial_shapes_at_graph_build_time():
    x = tf.placeholder(tf.float32, [None, 3, None])
    assert tf.reduce_sum(x, 1).shape.as_tuple() == (None, None)
    assert tf.reduce_sum(x, [0, -1]).shape.as_tuple() == (3,)
    assert tf.reduce_mean(x, 1, keepdims=True).shape.as_tuple() == (None, 1, None)
    assert tf.reduce_max(x).shape.as_tuple() == ()
    assert tf.reduce_min(x, []).shape.as_tuple() == (None, 3, None)
    assert tf.argmax(x, 1).shape.as_tuple() == (None, None)
    assert tf.argmin(x, 0, output_type=tf.int32).dtype == tf.int32
    assert tf.argmax(x).dtype == tf.int64
    # axes computed at run time: the rank (keepdims) or nothing is known yet
    axis = tf.placeholder(tf.int32, [None])
    assert tf.reduce_sum(x, axis).shape.as_tuple() is None
    assert tf.reduce_sum(x, axis, keepdims=True).shape.as_tuple() == (None, None, None)
    unknown = tf.placeholder(tf.float32)
    assert tf.reduce_sum(unknown, 0).shape.as_tuple() is None
    assert tf.argmax(unknown, 0).shape.as_tuple() is None
    assert tf.reduce_sum(x, axis=0).op.type == "Sum"
    assert tf.reduce_all(tf.placeholder(tf.bool, [2])).op.type == "All"


def test_axis_out_of_range_and_duplicates():
    x = tf.placeholder(tf.float32, [2, 3, 4])
    message = (
        r"Invalid reduction dimension 3 for input with 3 dimensions\. for 'Sum' "
        r"\(op: 'Sum'\) with input shapes: \[2,3,4\], \[\]\."
    )
    with pytest.raises(ValueError, match=message):
        tf.reduce_sum(x, 3)
    with pytest.raises(ValueError, match="Invalid reduction dimension -4 for input with 3"):
        tf.reduce_max(x, [0, -4])
    with pytest.raises(ValueError, match="Axes contains duplicate dimension: 1"):
        tf.reduce_mean(x, [1, -2])
    with pytest.raises(ValueError, match="Shape must be at most rank 1 but is rank 2"):
        tf.reduce_sum(x, [[0]])
    with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'reduction_indices'"):
        tf.reduce_sum(x, axis=0, reduction_indices=0)
    with pytest.raises(ValueError, match="Cannot specify both 'keepdims' and 'keep_dims'"):
        tf.reduce_sum(x, keepdims=True, keep_dims=True)


def test_axis_errors_found_when_the_fed_rank_is_known():
    x = tf.placeholder(tf.float32)
    y = tf.reduce_sum(x, 2)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid reduction dimension 2"):
            sess.run(y, {x: np.ones((2, 2), np.float32)})


def test_axes_must_be_known_when_compiling():
    x = tf.placeholder(tf.float32, [2, 3])
    axis = tf.placeholder(tf.int32, [])
    y = tf.reduce_sum(x, axis)
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="must be known when the graph is compiled"):
            sess.run(y, {x: np.ones((2, 3), np.float32), axis: 1})


def test_dtype_errors():
    with pytest.raises(TypeError, match="DataType bool not in list of allowed values"):
        tf.reduce_sum(tf.constant([True]))
    with pytest.raises(TypeError, match="DataType float32 not in list of allowed values: bool"):
        tf.reduce_all(tf.constant([1.0]))
    with pytest.raises(TypeError, match="Expected int32, got 1.0"):
        tf.reduce_sum(tf.constant([1.0]), 1.0)
    with pytest.raises(TypeError, match="parameter 'output_type'"):
        tf.argmax(tf.constant([1.0]), output_type=tf.float32)


def test_argmax_errors():
    x = tf.placeholder(tf.float32, [2, 3, 4])
    with pytest.raises(ValueError, match=r"Dimension \(3\) must be in the range \[-3, 3\)"):
        tf.argmax(x, 3)
    with pytest.raises(ValueError, match=r"Dimension \(-4\) must be in the range \[-3, 3\)"):
        tf.argmin(x, -4)
    with pytest.raises(ValueError, match="Shape must be rank 0 but is rank 1"):
        tf.argmax(x, [1])
    with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'dimension'"):
        tf.argmax(x, axis=1, dimension=1)
    with pytest.raises(ValueError, match=r"Reduction axis 1 is empty in shape \[2,0\]"):
        tf.argmax(tf.constant(np.zeros((2, 0), np.float32)), 1)


def test_argmax_of_an_empty_axis_fails_the_run():
    x = tf.placeholder(tf.float32, [None, None])
    y = tf.argmax(x, 1)
    with tf.Session() as sess:
        with pytest.raises(
            tf.errors.InvalidArgumentError, match=r"Reduction axis 1 is empty in shape \[3,0\]"
        ):
            sess.run(y, {x: np.zeros((3, 0), np.float32)})


def test_all_axes_of_a_tensor_of_unknown_rank():
    x = tf.placeholder(tf.float32)
    flags = tf.placeholder(tf.bool)
    v = RNG.uniform(-4.0, 4.0, (2, 3, 4)).astype(np.float32)
    f = v > 1.0
    fetches = [
        tf.reduce_sum(x),
        tf.reduce_max(x, keepdims=True),
        tf.reduce_any(flags),
        tf.reduce_mean(x, keepdims=True),
    ]
    assert [t.shape.as_tuple() for t in fetches] == [(), None, (), None]
    with tf.Session() as sess:
        total, top, anything, mean = sess.run(fetches, {x: v, flags: f})
    np.testing.assert_allclose(total, v.astype(np.float64).sum(), rtol=1e-6)
    assert top.shape == (1, 1, 1) and top.item() == v.max()
    assert anything == f.any()
    np.testing.assert_allclose(mean, v.astype(np.float64).mean(keepdims=True), rtol=1e-6)


# -- composites of reductions: logsumexp, variance, monotonicity; the TF1 argmax spellings -------
def _logsumexp(x: np.ndarray, axis, keepdims=False) -> np.ndarray:
    """log(sum(exp(x))) in float64 through the maximum (which NumPy takes with -inf rows)."""
    x = x.astype(np.float64)
    top = np.max(x, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(x - top), axis=axis, keepdims=True)) + top
    return out if keepdims else np.squeeze(out, axis=axis)


def build_composites() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        for dtype in ("float32", "float64"):
            x = RNG.uniform(-4, 4, (3, 4, 5)).astype(dtype)
            t = b.feed(x, [None, 4, 5])
            for axis, keep in ((None, False), (1, False), ([0, 2], True), (-1, True)):
                b.add(f"logsumexp-{dtype}-{axis}-{keep}", tf.reduce_logsumexp(t, axis, keep),
                      _logsumexp(x, axis if axis is None else tuple(np.atleast_1d(axis)),
                                 keep).astype(dtype))  # fmt: skip
            # large values do not overflow; a row of -inf gives -inf, an inf gives inf
            big = np.array([[1000.0, 999.0, -5.0], [-np.inf, -np.inf, -np.inf],
                            [np.inf, 1.0, 2.0]], dtype)  # fmt: skip
            with np.errstate(invalid="ignore"):
                want = _logsumexp(big, 1).astype(dtype)
            b.add(f"logsumexp-extremes-{dtype}", tf.reduce_logsumexp(big, axis=1), want)
            b.add(f"variance-{dtype}", tf.math.reduce_variance(t, axis=[0, 2]),
                  x.astype(np.float64).var(axis=(0, 2)).astype(dtype))  # fmt: skip
            b.add(f"std-{dtype}", tf.math.reduce_std(t, keepdims=True),
                  x.astype(np.float64).std(keepdims=True).astype(dtype))  # fmt: skip
        for values, name in (([1, 2, 2, 5], "ties"), ([1, 3, 4], "rising"), ([2, 1], "falling"),
                             ([7], "one"), ([], "empty")):  # fmt: skip
            v = np.array(values, np.int32)
            d = np.diff(v)
            b.add(f"is_non_decreasing-{name}", tf.is_non_decreasing(v), np.all(d >= 0))
            b.add(f"is_strictly_increasing-{name}", tf.is_strictly_increasing(v), np.all(d > 0))
        m = RNG.uniform(-1, 1, (3, 5)).astype(np.float32)
        b.add("is_non_decreasing-matrix", tf.is_non_decreasing(m), np.all(np.diff(m.ravel()) >= 0))
        b.add("arg_max", tf.arg_max(m, 1), np.argmax(m, 1))
        b.add("arg_min-int32", tf.arg_min(m, 0, output_type=tf.int32),
              np.argmin(m, 0).astype(np.int32))  # fmt: skip
    return b


COMPOSITES = build_composites()


@pytest.mark.parametrize("case", COMPOSITES.ids())
def test_composite_reductions(case):
    COMPOSITES.check(case)


def test_logsumexp_gradient_ignores_the_shift():
    """The maximum taken out is held constant: d/dx logsumexp(x) = softmax(x), also where the
    maximum is not unique."""
    x = tf.placeholder(tf.float64, [2, 3])
    (g,) = tf.gradients(tf.reduce_logsumexp(x, axis=1), [x])
    v = np.array([[1.0, 3.0, 3.0], [-2.0, 0.5, 0.25]])
    with tf.Session() as sess:
        got = sess.run(g, {x: v})
    e = np.exp(v - v.max(1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(1, keepdims=True), rtol=1e-12)
