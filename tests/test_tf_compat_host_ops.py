"""Strings, py_func, value-dependent shapes, printing and assertions against real TensorFlow
(tf.compat.v1 in graph mode; the module is skipped where tensorflow is not installed).

Each case builds the same graph with either module (`m` is tfc or tf.compat.v1) and runs it in
a Session of that module; values, printed text and error messages must be the same."""

import os
import sys

import numpy as np
import pytest

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
real_tf = pytest.importorskip("tensorflow")
v1 = real_tf.compat.v1

import tfc as tf  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
RNG = np.random.default_rng(16)


def _run(module, build, feed=None):
    """`build(module)`'s fetches run in a Session of `module`: (values, None) or (None, error
    class name and message without TF's node annotations)."""
    graph = module.Graph()
    with graph.as_default():
        fetches = build(module)
        with module.Session(graph=graph) as sess:
            try:
                return sess.run(fetches, feed(graph) if feed else None), None
            except (tf.errors.OpError, real_tf.errors.OpError) as e:
                return None, (type(e).__name__, _message(e.message))


def _message(text: str) -> str:
    """An error's own message: TF 2's adds where the node was defined before it and the node
    after it."""
    if "\nNode: '" in text:
        text = text.split("\nNode: '", 1)[1].split("\n", 1)[1]
    text = text.removeprefix("Graph execution error:\n\n")
    return text.split("\n\t [[")[0].rstrip("\n")


def _same(got, want):
    if isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype or (got.dtype.kind in "OS" and want.dtype.kind in "OS")
    assert got.shape == want.shape
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=0, equal_nan=True)
    else:
        assert got.tolist() == want.tolist()


def _compare(build, feed=None):
    want, want_error = _run(v1, build, feed)
    got, got_error = _run(tf, build, feed)
    assert got_error == want_error
    if want_error is None:
        _same(got, want)


# -- strings ---------------------------------------------------------------------------------------
FLOATS = np.array([1.5, -0.1, 1e20, 123456789.0, np.inf, -np.nan, 3.14159, 0.0], np.float32)
WORDS = ["alpha", "", "Beta gamma", "dé", "  pad\t", "a,b,,c"]

STRING_CASES = {
    "constant": lambda m: m.constant("Hello, TensorFlow!"),
    "as_string": lambda m: [
        m.as_string(FLOATS),
        m.as_string(FLOATS.astype(np.float64)),
        m.as_string(FLOATS, precision=3),
        m.as_string(FLOATS, scientific=True),
        m.as_string(FLOATS, shortest=True),
        m.as_string(FLOATS, width=12, fill="0"),
        m.as_string(np.array([7, -42], np.int64), width=5),
        m.as_string([True, False]),
    ],  # fmt: skip
    "join": lambda m: [
        m.strings.join([WORDS, "|", WORDS], separator="-"),
        m.string_join([["a", "b"], ["c", "d"]]),
    ],  # fmt: skip
    "length": lambda m: [m.strings.length(WORDS), m.strings.length(WORDS, unit="UTF8_CHAR")],
    "to_number": lambda m: [
        m.string_to_number(["1.5", " -2", "1e3", "inf", "0x10", "-0", "nan", "1e400"]),
        m.strings.to_number(["12", " +7 ", "-2147483648"], out_type=m.int32),
        m.strings.to_number(["0.1", "1e-320"], out_type=m.float64),
        m.strings.to_number(["-9000000000"], out_type=m.int64),
    ],
    "to_number-error": lambda m: m.string_to_number(["1.5"], out_type=m.int32),
    "to_number-error-overflow": lambda m: m.string_to_number(["99999999999"], out_type=m.int32),
    "reduce_join": lambda m: [
        m.reduce_join([["a", "b", "c"], ["d", "e", "f"]]),
        m.reduce_join([["a", "b", "c"], ["d", "e", "f"]], 0, separator=","),
        m.reduce_join([["a", "b", "c"], ["d", "e", "f"]], [0, 1]),
        m.reduce_join([["a", "b", "c"], ["d", "e", "f"]], [1, 0], keep_dims=True),
        m.reduce_join([["a", "b", "c"], ["d", "e", "f"]], -1),
    ],
    "regex_replace": lambda m: [
        m.regex_replace(WORDS, "a+", "<\\0>"),
        m.regex_replace(WORDS, r"(\w)(\w)", r"\2\1", replace_global=False),
        m.strings.regex_full_match(WORDS, "[a-z]+"),
    ],
    "substr": lambda m: [
        m.substr(WORDS, 0, 3),
        m.strings.substr(["hello", "wo"], [1, 1], [10, 1]),
        m.strings.substr(["hello"], -2, 2),
        m.strings.substr(["héllo"], 1, 2, unit="UTF8_CHAR"),
    ],  # fmt: skip
    "substr-error": lambda m: m.strings.substr(["hello"], 7, 1),
    "strip-case": lambda m: [
        m.string_strip(WORDS),
        m.strings.upper(WORDS),
        m.strings.lower(WORDS),
    ],  # fmt: skip
    "base64": lambda m: [
        m.encode_base64(WORDS),
        m.encode_base64(WORDS, pad=True),
        m.decode_base64(m.encode_base64(WORDS)),
    ],  # fmt: skip
    "format": lambda m: m.strings.format(
        "x={} y={} z={}",
        [m.constant(np.arange(24).reshape(2, 3, 4)), m.constant(["a", "b\n"]), m.constant(1 / 3)],
        summarize=2,
    ),  # fmt: skip
    "split-scalar": lambda m: (
        m.strings.split(m.constant(" a  bc d ")).values
        if m is v1
        else m.strings.split(m.constant(" a  bc d "))
    ),
    "unique-strings": lambda m: list(m.unique(["b", "a", "b", "c"])),
}


@pytest.mark.parametrize("case", list(STRING_CASES))
def test_string_ops_match_tensorflow(case):
    _compare(STRING_CASES[case])


def test_hash_buckets_match_tensorflow_bit_for_bit():
    data = [bytes(RNG.integers(0, 256, n, dtype=np.uint8)) for n in range(0, 300, 3)]
    data += [b"hello", b"world", "dé".encode()]

    def build(m):
        return [
            m.string_to_hash_bucket_fast(data, 2**62),
            m.strings.to_hash_bucket_fast(data, 1000),
            m.string_to_hash_bucket(data, 2**62),
            m.string_to_hash_bucket_strong(data, 2**62, key=[0x0123456789, 987654321]),
        ]

    _compare(build)


# -- values whose shape depends on the data, and their gradients -----------------------------------
def _feed_x(value):
    """Feeds `value` to the placeholder "x" of a graph that has one."""
    return lambda graph: {"x:0": value} if "x" in [o.name for o in graph.get_operations()] else {}


X = RNG.integers(0, 5, 12).astype(np.float32)

DYNAMIC_CASES = {
    "unique": lambda m: [
        *m.unique(m.placeholder(m.float32, [None], name="x")),
        *m.unique_with_counts(m.constant(X), out_idx=m.int64),
    ],  # fmt: skip
    "setdiff1d": lambda m: list(m.setdiff1d(m.placeholder(m.float32, [None], name="x"), [1, 3])),
    "where": lambda m: m.where(m.reshape(m.placeholder(m.float32, [None], name="x"), [3, 4]) > 2),
    "boolean_mask": lambda m: [
        m.boolean_mask(m.placeholder(m.float32, [None], name="x"), X > 2),
        m.boolean_mask(m.reshape(m.constant(X), [3, 4]), [True, False, True], axis=0),
        m.boolean_mask(m.reshape(m.constant(X), [3, 4]), [False, True, True, False], axis=1),
    ],
    "dynamic_partition": lambda m: m.dynamic_partition(
        m.reshape(m.placeholder(m.float32, [None], name="x"), [6, 2]), [1, 0, 2, 1, 0, 0], 3
    ),
    "dynamic_partition-error": lambda m: m.dynamic_partition(
        m.placeholder(m.float32, [None], name="x"), np.arange(12, dtype=np.int32) % 5, 3
    ),
    "dynamic_stitch": lambda m: [
        m.dynamic_stitch(
            [[0, 4], [[1, 2], [5, 3]]],
            [np.arange(4.0).reshape(2, 2), np.arange(8.0).reshape(2, 2, 2)],
        ),
        m.dynamic_stitch([[0, 1], [1]], [[1.0, 2.0], [9.0]]),
    ],  # fmt: skip
}


@pytest.mark.parametrize("case", list(DYNAMIC_CASES))
def test_value_dependent_ops_match_tensorflow(case):
    _compare(DYNAMIC_CASES[case], _feed_x(X))


W = RNG.uniform(0.5, 1.5, 12).astype(np.float32)
S = RNG.normal(size=(6, 2)).astype(np.float32)


def _gradients(m):
    x = m.placeholder(m.float32, [None], name="x")
    w = m.constant(W)
    masked = m.reduce_sum(m.square(m.boolean_mask(x * w, x > 1.5)))
    parts = m.dynamic_partition(x, m.cast(x, m.int32) % 3, 3)
    partitioned = m.reduce_sum(parts[0] * 2.0) + m.reduce_sum(m.square(parts[2]))
    late = m.placeholder_with_default(np.array([3, 0, 2, 1], np.int32), [None])
    stitched = m.dynamic_stitch([late, [5, 4]], [m.reshape(x[:8], [4, 2]),
                                                 m.reshape(x[8:], [2, 2])])  # fmt: skip
    stitch_loss = m.reduce_sum(stitched * m.constant(S))
    return [m.gradients(loss, x)[0] for loss in (masked, partitioned, stitch_loss)]


def test_gradients_through_them_match_tensorflow():
    _compare(_gradients, _feed_x(X))


# -- py_func ---------------------------------------------------------------------------------------
PY_FUNC_CASES = {
    "values": lambda m: m.py_func(lambda a: np.sort(a)[::-1].copy(), [m.constant(X)], m.float32),
    "several": lambda m: m.numpy_function(
        lambda a, s: [a * 2, s + b"!"], [m.constant(X), m.constant("s")], [m.float32, m.string]
    ),
    "wrong-dtype": lambda m: m.py_func(
        lambda a: a.astype(np.float64), [m.constant(X)], m.float32, name="f"
    ),  # fmt: skip
    "wrong-count": lambda m: m.py_func(lambda a: (a, a), [m.constant(X)], [m.float32], name="f"),
}


@pytest.mark.parametrize("case", list(PY_FUNC_CASES))
def test_py_func_matches_tensorflow(case):
    want, want_error = _run(v1, PY_FUNC_CASES[case])
    got, got_error = _run(tf, PY_FUNC_CASES[case])
    if want_error is None:
        assert got_error is None
        _same(got, want)
    else:  # the token numbers differ: each module counts its own py_funcs
        strip = (want_error[0], want_error[1].replace(want_error[1].split()[-1], ""))
        assert got_error is not None and got_error[0] == want_error[0]
        assert got_error[1].split("pyfunc_")[0] == want_error[1].split("pyfunc_")[0]
        assert strip[0] == got_error[0]


# -- printing and assertions -----------------------------------------------------------------------
def _printed(capfd, module, build, feed=None):
    capfd.readouterr()
    graph = module.Graph()
    with graph.as_default():
        ops = build(module)
        with module.Session(graph=graph) as sess:
            for op in ops:
                sess.run(op, feed(graph) if feed else None)
    sys.stdout.flush()
    sys.stderr.flush()
    return capfd.readouterr()


VALUE = np.array([[1.5, 2.25, 3.0], [4.0, 0.1, 6.0]], np.float32)


def _prints(m):
    x = m.placeholder(m.float32, [2, 3], name="x")
    data = [x, m.constant([1, 2, 3, 4, 5]), m.constant([True, False]), m.constant(["ab", "c"]),
            m.constant(3.0), m.constant(0.1, m.float64), x > 2, m.zeros([2, 2, 3])]  # fmt: skip
    return [
        m.Print(x, data, message="msg: "),
        m.Print(x, [x, m.constant(np.float32(1 / 3)), m.constant(123456789.0)], summarize=100),
        m.Print(x, [m.zeros([2, 2, 3])], summarize=4),
        m.Print(x, [m.constant([1e20, 1e-7, np.nan, np.inf, -0.0], m.float32)], summarize=10),
        m.print(x, m.constant([1, 2, 3, 4, 5]), "str", m.constant(["ab", "c"])),
        m.print(m.reshape(m.cast(m.constant(np.arange(100)), m.int32), [10, 10])),
        m.print(m.constant(np.arange(10)), summarize=2),
        m.print(m.constant(3.5), m.constant([0.1, 1e-9]), m.constant(True), sep="|", end="!\n"),
        m.print({"a": x, "b": [1, "two"]}),
        m.print(x[0], output_stream=sys.stdout),
        m.print(m.constant("a scalar string is written as it is")),
    ]


def test_printed_text_matches_tensorflow(capfd):
    feed = _feed_x(VALUE)
    want = _printed(capfd, v1, _prints, feed)
    got = _printed(capfd, tf, _prints, feed)
    assert got.out == want.out

    def own(text):  # TF's own log lines (deprecation notes) are not what its ops print
        return [line for line in text.splitlines() if not line.startswith(("WARNING", "I0000"))]

    assert own(got.err) == own(want.err)


P = np.array([1.0, -2.0, 3.0], np.float32)

ASSERT_CASES = {
    "Assert": lambda m: m.Assert(m.reduce_all(m.placeholder(m.float32, [3], name="p") > 0),
                                 ["x:", m.constant([1.5, 2.0, 3.0, 4.0]), 7], summarize=2),
    "equal": lambda m: m.assert_equal(m.placeholder(m.float32, [3], name="p"), [1.0, 2.0, 3.0]),
    "none_equal": lambda m: m.assert_none_equal(m.placeholder(m.float32, [3], name="p"), 3.0,
                                                message="all differ"),
    "less": lambda m: m.assert_less(m.placeholder(m.float32, [3], name="p"), 2.0),
    "less_equal": lambda m: m.assert_less_equal(m.placeholder(m.float32, [3], name="p"), 2.0),
    "greater": lambda m: m.assert_greater(m.placeholder(m.float32, [3], name="p"), 0.0),
    "greater_equal": lambda m: m.assert_greater_equal(m.placeholder(m.float32, [3], name="p"),
                                                      0.0, summarize=1),
    "positive": lambda m: m.assert_positive(m.placeholder(m.float32, [3], name="p")),
    "negative": lambda m: m.assert_negative(m.placeholder(m.float32, [3], name="p"),
                                            message="neg"),
    "non_negative": lambda m: m.assert_non_negative(m.placeholder(m.float32, [3], name="p")),
    "non_positive": lambda m: m.assert_non_positive(m.placeholder(m.float32, [3], name="p")),
    "rank": lambda m: m.assert_rank(
        m.placeholder_with_default(m.placeholder(m.float32, [3], name="p"), None), 2),
    "check_numerics": lambda m: m.check_numerics(
        m.log(m.placeholder(m.float32, [3], name="p")), "log of p"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(ASSERT_CASES))
def test_assertion_messages_match_tensorflow(case):
    _compare(ASSERT_CASES[case], lambda graph: {graph.get_tensor_by_name("p:0"): P})


@pytest.mark.parametrize(
    "build",
    [
        lambda m: m.assert_equal(m.constant([1, 2]), m.constant([1, 3])),
        lambda m: m.assert_rank(m.placeholder(m.float32, [3], name="p"), 2),
        lambda m: m.assert_rank_at_least(m.placeholder(m.float32, [3], name="p"), 2, message="m"),
        lambda m: m.assert_rank_in(m.placeholder(m.float32, [3], name="p"), [0, 2]),
        lambda m: m.assert_type(m.placeholder(m.float32, [3], name="p"), m.int32),
        lambda m: m.assert_scalar(m.placeholder(m.float32, [3], name="p")),
        lambda m: m.assert_proper_iterable("abc"),
    ],
)
def test_static_checks_raise_as_tensorflow(build):
    errors = []
    for module in (v1, tf):
        with module.Graph().as_default():
            with pytest.raises(Exception) as e:
                build(module)
            message = getattr(e.value, "message", None) or str(e.value)
            errors.append((type(e.value).__name__, message))
    assert errors[1] == errors[0]
