"""tfc's dtypes against TensorFlow's own (runs where `tensorflow` is importable, else skipped):
the DType properties, casts between every pair, wrapping integer math, 16-bit float math,
saturate_cast, bitcast, convert_image_dtype, and which op accepts which dtype against TF's
CPU kernel registrations."""

from __future__ import annotations

import numpy as np
import pytest
from test_ops_dtypes import HALVES, INTS, STORABLE, cast_values

import tfc

tf = pytest.importorskip("tensorflow")
tf1 = tf.compat.v1

NAMES = [*STORABLE, "string", "half", "qint8", "quint8", "qint16", "quint16", "qint32"]


def run_tf(build, feeds=()):
    """Values of the tensors `build(tf1)` makes in a TF graph, fed `feeds` (placeholders made
    by `build` from (dtype name, array) pairs in order)."""
    graph = tf1.Graph()
    with graph.as_default():
        placeholders = [tf1.placeholder(tf.as_dtype(d), np.shape(x)) for d, x in feeds]
        outs = build(tf1, *placeholders)
        with tf1.Session(graph=graph) as sess:
            return sess.run(outs, {p: x for p, (_, x) in zip(placeholders, feeds)})


def run_tfc(build, feeds=()):
    graph = tfc.Graph()
    with graph.as_default():
        placeholders = [tfc.placeholder(tfc.as_dtype(d), np.shape(x)) for d, x in feeds]
        outs = build(tfc, *placeholders)
        with tfc.Session() as sess:
            return sess.run(outs, {p: x for p, (_, x) in zip(placeholders, feeds)})


def same_bits(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, TF {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, TF {want.shape}"
    if got.dtype.kind in "fc" and got.dtype.itemsize > 1:
        np.testing.assert_array_equal(got, want, err_msg=what)  # NaN == NaN here
    else:
        flat = got.reshape(-1).view(np.uint8), want.reshape(-1).view(np.uint8)
        np.testing.assert_array_equal(*flat, err_msg=what)


@pytest.mark.parametrize("name", NAMES)
def test_dtype_properties(name):
    ours, theirs = tfc.as_dtype(name), tf.as_dtype(name)
    assert ours.name == theirs.name
    for prop in ("size", "as_datatype_enum", "is_integer", "is_floating", "is_unsigned",
                 "is_quantized", "is_complex", "is_bool"):  # fmt: skip
        if (name, prop) == ("string", "size"):
            continue  # TF says 0; tfc's is its NumPy object arrays' pointer size
        assert getattr(ours, prop) == getattr(theirs, prop), prop
    assert ours.real_dtype.name == theirs.real_dtype.name
    assert ours.base_dtype is ours
    assert tfc.as_dtype(theirs.as_datatype_enum) is ours
    if name != "string":
        assert np.dtype(ours.as_numpy_dtype) == np.dtype(theirs.as_numpy_dtype)
    for end in ("min", "max"):
        try:
            want = getattr(theirs, end)
        except TypeError:
            with pytest.raises(TypeError):
                getattr(ours, end)
            continue
        assert float(getattr(ours, end)) == float(want), end


def test_names_of_tf_dtypes_module():
    theirs = {n for n in dir(tf1.dtypes) if not n.startswith("_")} - {"experimental"}
    ours = {n for n in dir(tfc.dtypes) if not n.startswith("_")}
    assert theirs <= ours, sorted(theirs - ours)
    top = {"to_bfloat16", "to_complex64", "to_complex128", "saturate_cast", "bitcast", "complex",
           "real", "imag", "conj", "angle", "QUANTIZED_DTYPES"}  # fmt: skip
    assert all(hasattr(tfc, n) for n in top)


def tf_defines(x: np.ndarray, src: str, dst: str) -> np.ndarray:
    """The elements whose cast TF gives one way: all but casts out of the target's range that
    C++ leaves undefined and TF 2.21's Eigen loops give differently by source type: a float64
    or float16 from 32768 on to uint8 (they go through 16-bit lanes), complex values whose
    real part lies outside the integer target's range."""
    keep = np.ones(x.shape, bool)
    if dst not in INTS:
        return keep
    if src in ("complex64", "complex128"):
        info = np.iinfo(dst)
        with np.errstate(invalid="ignore"):
            return (x.real >= info.min) & (x.real <= info.max)
    if src in ("float64", "float16") and dst == "uint8":
        with np.errstate(invalid="ignore"):
            return ~((x.astype(np.float64) >= 32768) & (x.astype(np.float64) < 2**31))
    return keep


@pytest.mark.parametrize("src", STORABLE)
def test_casts_match_tf(src):
    """Every pair, out-of-range values included (see tf_defines). TF's kernels give one result
    for out-of-range values in their vectorized loops and another in a loop's last few
    elements: the values come first, then zeros (for the last few)."""
    x = cast_values(src)
    padded = np.concatenate([x, np.zeros(64, x.dtype)])
    got = run_tfc(lambda t, p: [t.cast(p, d) for d in STORABLE], [(src, x)])
    want = run_tf(lambda t, p: [t.cast(p, d) for d in STORABLE], [(src, padded)])
    for dst, g, w in zip(STORABLE, got, want):
        keep = tf_defines(x, src, dst)
        same_bits(g[keep], w[: len(x)][keep], f"cast {src} -> {dst}")


@pytest.mark.parametrize("dtype", INTS)
def test_integer_math_wraps_as_tf(dtype):
    info = np.iinfo(dtype)
    a = np.array([info.max, info.min, info.max - 3, 100, 0, 13, info.min + 1], dtype=object)
    b = np.array([1, 3, 5, 3, 9, -4, 7], dtype=object)
    keep = [(x, y) for x, y in zip(a, b) if info.min <= y <= info.max]
    a = np.array([x for x, _ in keep], dtype=object).astype(dtype)
    b = np.array([y for _, y in keep], dtype=object).astype(dtype)

    def build(t, x, y):
        outs = [x + y, x - y, x * y, t.floordiv(x, y), t.floormod(x, y), t.truncatediv(x, y),
                t.maximum(x, y), t.minimum(x, y), t.square(x), t.reduce_sum(x),
                t.reduce_mean(x), t.reduce_prod(y), t.equal(x, y), t.less(x, y),
                t.argmax(x, 0), t.cumsum(x, 0), t.nn.relu(x), t.nn.relu6(x),
                t.bitwise.bitwise_and(x, y), t.bitwise.bitwise_xor(x, y), t.bitwise.invert(x),
                t.bitwise.left_shift(x, y), t.bitwise.right_shift(x, y)]  # fmt: skip
        if dtype[0] == "i":  # TF's kernels for these are signed only
            outs += [t.negative(x), t.abs(x), t.sign(x)]
        return outs

    feeds = [(dtype, a), (dtype, b)]
    for i, (g, w) in enumerate(zip(run_tfc(build, feeds), run_tf(build, feeds))):
        same_bits(g, w, f"{dtype} op {i}")


@pytest.mark.parametrize("dtype", HALVES)
def test_half_math_as_tf(dtype):
    """Each op computes in float32 and rounds once, as TF's CPU kernels: results within one
    unit in the last place of the 16-bit type (TF's Eigen kernels may evaluate transcendental
    functions differently), element-wise arithmetic bit for bit."""
    rng = np.random.default_rng(7)
    x = tf.dtypes.as_dtype(dtype).as_numpy_dtype
    a = rng.uniform(0.1, 3.0, (4, 5)).astype(np.float32).astype(x)
    b = rng.uniform(-2.0, 2.0, (4, 5)).astype(np.float32).astype(x)
    w = rng.uniform(-1.0, 1.0, (5, 3)).astype(np.float32).astype(x)
    feeds = [(dtype, a), (dtype, b), (dtype, w)]
    if x is not tfc.as_dtype(dtype).as_numpy_dtype:  # tfc without ml_dtypes: bfloat16's bits
        tfc_feeds = [(d, v.view(np.uint16)) for d, v in feeds]
    else:
        tfc_feeds = feeds

    def exact(t, p, q, r):
        return [p + q, p - q, p * q, p / q, t.maximum(p, q), t.negative(q), t.abs(q),
                t.cast(p, t.float32), t.cast(t.cast(p, t.float64) * 3.3, t.as_dtype(dtype)),
                t.cast(q, t.int32), t.less(p, q), t.floor(q)]  # fmt: skip

    def close(t, p, q, r):
        return [t.exp(q), t.tanh(q), t.sqrt(p), t.sigmoid(q), t.log(p), t.nn.relu(q),
                t.matmul(p, r), t.nn.softmax(q), t.reduce_sum(q, 1), t.reduce_mean(p),
                t.reduce_max(q, 0), t.nn.bias_add(q, r[:, 0])]  # fmt: skip

    for i, (g, want) in enumerate(zip(run_tfc(exact, tfc_feeds), run_tf(exact, feeds))):
        g = np.asarray(g)
        if g.dtype == np.uint16 and np.asarray(want).dtype != np.uint16:
            g = g.view(np.asarray(want).dtype)
        same_bits(g, want, f"{dtype} exact op {i}")
    ulp = {"float16": 2.0**-10, "bfloat16": 2.0**-7}[dtype]
    for i, (g, want) in enumerate(zip(run_tfc(close, tfc_feeds), run_tf(close, feeds))):
        got = _as_float32(np.asarray(g), dtype)
        np.testing.assert_allclose(
            got, np.asarray(want).astype(np.float32), rtol=2 * ulp, atol=ulp, err_msg=f"op {i}"
        )


def _as_float32(x: np.ndarray, dtype: str) -> np.ndarray:
    if x.dtype == np.uint16 and dtype == "bfloat16":
        return (x.astype(np.uint32) << 16).view(np.float32)
    return x.astype(np.float32)


def test_saturate_cast_bitcast_convert_image_dtype_as_tf():
    f = np.array([-1e10, -300.5, -1.5, 0.4, 254.6, 300.0, 3e9, 1e20, 0.5], np.float32)
    u8 = np.array([0, 1, 128, 255], np.uint8)
    i16 = np.array([1000, 2000, 32767, -5], np.int16)

    def build(t, x, y, z):
        return [
            t.saturate_cast(x, t.uint8), t.saturate_cast(x, t.int32), t.saturate_cast(x, t.int8),
            t.saturate_cast(x, t.float16), t.saturate_cast(x, t.uint32),
            t.saturate_cast(z, t.uint8), t.saturate_cast(z, t.int8),
            t.bitcast(x, t.int32), t.bitcast(x, t.uint8), t.bitcast(z, t.uint8),
            t.image.convert_image_dtype(y, t.int16), t.image.convert_image_dtype(z, t.uint8),
            t.image.convert_image_dtype(x[3:5], t.uint8, saturate=True),
            t.image.convert_image_dtype(y, t.float32), t.image.convert_image_dtype(y, t.float16),
            t.image.convert_image_dtype(z, t.float64),
        ]  # fmt: skip

    feeds = [("float32", f), ("uint8", u8), ("int16", i16)]
    for i, (g, w) in enumerate(zip(run_tfc(build, feeds), run_tf(build, feeds))):
        same_bits(g, w, f"conversion {i}")


def test_complex_as_tf():
    z = np.array([1 + 2j, -3.5 + 0.5j, 0.25 - 4j], np.complex64)

    def build(t, p):
        return [t.real(p), t.imag(p), t.conj(p), t.abs(p), t.angle(p), p * p, p + p, p / p[::-1],
                t.reduce_sum(p), t.equal(p, t.conj(p)), t.cast(p, t.int32),
                t.complex(t.real(p), t.real(p))]  # fmt: skip

    for i, (g, w) in enumerate(
        zip(run_tfc(build, [("complex64", z)]), run_tf(build, [("complex64", z)]))
    ):
        np.testing.assert_allclose(g, w, rtol=1e-6, err_msg=f"complex op {i}")
        assert np.asarray(g).dtype == np.asarray(w).dtype


# -- which op takes which dtype -------------------------------------------------------------
def frontends(t):
    """(TF op type, a function building it from a tensor of the dtype under test)."""
    return [
        ("AddV2", lambda x: x + x), ("Sub", lambda x: x - x), ("Mul", lambda x: x * x),
        ("RealDiv", lambda x: t.realdiv(x, x)), ("FloorDiv", lambda x: t.floordiv(x, x)),
        ("FloorMod", lambda x: t.floormod(x, x)), ("Maximum", lambda x: t.maximum(x, x)),
        ("Neg", t.negative), ("Abs", t.abs), ("Square", t.square), ("Exp", t.exp),
        ("Less", lambda x: t.less(x, x)), ("Equal", lambda x: t.equal(x, x)),
        ("Sum", lambda x: t.reduce_sum(x, 0)), ("Mean", lambda x: t.reduce_mean(x, 0)),
        ("Max", lambda x: t.reduce_max(x, 0)), ("ArgMax", lambda x: t.argmax(x, 0)),
        ("Cumsum", lambda x: t.cumsum(x, 0)), ("MatMul", lambda x: t.matmul(x, x)),
        ("ConcatV2", lambda x: t.concat([x, x], 0)), ("Transpose", t.transpose),
        ("GatherV2", lambda x: t.gather(x, [0])), ("Pad", lambda x: t.pad(x, [[1, 0], [0, 0]])),
        ("ReverseV2", lambda x: t.reverse(x, [0])), ("Softmax", t.nn.softmax),
        ("TopKV2", lambda x: t.nn.top_k(x, 1)[0]), ("Relu", t.nn.relu),
        ("BitwiseAnd", lambda x: t.bitwise.bitwise_and(x, x)),
        ("LeftShift", lambda x: t.bitwise.left_shift(x, x)),
    ]  # fmt: skip


def tf_cpu_dtypes(op: str) -> set[str]:
    from tensorflow.python.framework import kernels

    names = set()
    for k in kernels.get_registered_kernels_for_op(op).kernel:
        if k.device_type == "CPU":
            for c in k.constraint:
                if c.name in ("T", "Tparams"):
                    names |= {tf.as_dtype(v).name for v in c.allowed_values.list.type}
    return names


# where tfc takes a dtype TF's CPU kernels lack: the kernel is the same code for every integer
TFC_ONLY = {(op, d) for op in ("Neg", "Abs") for d in INTS if d[0] == "u"}
TFC_ONLY |= {("Abs", d) for d in ("complex64", "complex128")}  # tf.abs: ComplexAbs, in both


def test_every_dtype_an_op_takes_is_one_tf_takes():
    """The support matrix: each op's dtypes in tfc are TF's CPU kernels' (plus TFC_ONLY), and
    where TF has a kernel tfc lacks, that is listed in docs/dtypes.md's matrix."""
    accepted: dict[str, set[str]] = {}
    for op, build in frontends(tfc):
        accepted[op] = set()
        for dtype in STORABLE:
            with tfc.Graph().as_default():
                try:
                    build(tfc.zeros([2, 2], tfc.as_dtype(dtype)))
                except (TypeError, ValueError):
                    continue
            accepted[op].add(dtype)
    extra = {(op, d) for op, ds in accepted.items() for d in ds - tf_cpu_dtypes(op)}
    assert extra == TFC_ONLY, sorted(extra - TFC_ONLY)
