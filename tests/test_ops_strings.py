"""tf.string and the string ops: the Session (Python stages) vs the reference interpreter vs an
independent Python expectation; TF's run-time errors; strings through feeds, fetches, tf.data."""

import base64

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf
from tfc.ops.string_hash import fingerprint64, legacy_hash64, siphash24
from tfc.reference.interp import Interpreter


def strs(*values) -> np.ndarray:
    """An object array of bytes, as tf.string values are held."""
    out = np.empty(len(values), dtype=object)
    out[:] = [v.encode() if isinstance(v, str) else v for v in values]
    return out


def test_a_string_constant_is_fetched_as_bytes():
    with tf.Session() as sess:
        assert sess.run(tf.constant("Hello, TensorFlow!")) == b"Hello, TensorFlow!"
        value = sess.run(tf.constant([["a", "bc"], ["", "dé"]]))
    assert value.dtype == object and value.shape == (2, 2)
    assert value.tolist() == [[b"a", b"bc"], [b"", "dé".encode()]]


def test_string_dtype_is_inferred_and_named_as_in_tf():
    assert tf.constant("x").dtype == tf.string
    assert tf.constant([b"a", "b"]).dtype is tf.string
    assert tf.as_dtype("string") is tf.string and tf.as_dtype(np.dtype("S3")) is tf.string
    assert tf.constant(np.array(["ab", "c"])).dtype is tf.string  # NumPy's unicode arrays
    assert repr(tf.string) == "tf.string"
    with pytest.raises(TypeError, match="Expected string, got 1 of type 'int' instead"):
        tf.constant(["a", 1], dtype=tf.string)


def test_string_placeholders_take_str_bytes_and_numpy_text():
    s = tf.placeholder(tf.string, [None])
    joined = tf.strings.join([s, "!"])
    with tf.Session() as sess:
        for value in (["a", "b"], [b"a", b"b"], np.array(["a", "b"]), np.array([b"a", b"b"])):
            assert sess.run(joined, {s: value}).tolist() == [b"a!", b"b!"]
        assert sess.run(s, {s: ["x"]}).tolist() == [b"x"]  # a fed string fetched back
        with pytest.raises(ValueError, match="Cannot convert the value fed for"):
            sess.run(joined, {s: [1, 2]})


def test_string_and_numeric_results_of_one_run():
    x = tf.placeholder(tf.float32, [3])
    label = tf.strings.join(["n=", tf.as_string(tf.size(x))])
    doubled = x * 2.0
    feed = {x: np.array([1, 2, 3], np.float32)}
    with tf.Session() as sess:
        got = sess.run({"label": label, "doubled": doubled, "const": tf.constant(["k"])}, feed)
    assert got["label"] == b"n=3"
    np.testing.assert_array_equal(got["doubled"], [2, 4, 6])
    assert got["const"].tolist() == [b"k"]


def test_strings_flow_through_a_dataset():
    names = ["ant", "bee", "cicada"]
    dataset = tf.data.Dataset.from_tensor_slices(np.array(names)).batch(2)
    batch = dataset.make_one_shot_iterator().get_next()
    lengths = tf.strings.length(batch)
    with tf.Session() as sess:
        first, n1 = sess.run([batch, lengths])
        second, n2 = sess.run([batch, lengths])
    assert first.tolist() == [b"ant", b"bee"] and n1.tolist() == [3, 3]
    assert second.tolist() == [b"cicada"] and n2.tolist() == [6]


# -- the ops, in one batch -------------------------------------------------------------------------
def _printf(fmt: str, values) -> np.ndarray:
    return strs(*[fmt % v for v in values])


def build_strings() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        words = strs("alpha", "", "Beta gamma", "dé", "  pad\t")
        w = b.feed(words, [None])
        f = np.array([1.5, -0.1, 1e20, 123456789.0, np.inf], np.float32)
        pf = b.feed(f, [None])
        i = np.array([7, -42, 0], np.int64)
        pi = b.feed(i)
        b.add("as_string-float", tf.as_string(pf), _printf("%f", f.astype(float)))
        b.add("as_string-double", tf.as_string(f.astype(np.float64)), _printf("%f", f))
        b.add(
            "as_string-precision", tf.as_string(pf, precision=2), _printf("%.2f", f.astype(float))
        )
        b.add(
            "as_string-scientific",
            tf.as_string(pf, scientific=True),
            _printf("%e", f.astype(float)),
        )
        b.add("as_string-shortest", tf.as_string(pf, shortest=True), _printf("%g", f.astype(float)))
        b.add("as_string-int", tf.as_string(pi), strs("7", "-42", "0"))
        b.add(
            "as_string-width-fill",
            tf.as_string(pi, width=4, fill="0"),
            strs("0007", "-042", "0000"),
        )
        b.add("as_string-bool", tf.as_string([True, False]), strs("true", "false"))
        b.add(
            "join-scalar",
            tf.strings.join([w, "/", w], separator="|"),
            strs(*[f"{v}|/|{v}" for v in ["alpha", "", "Beta gamma", "dé", "  pad\t"]]),
        )
        b.add(
            "string_join-2d",
            tf.string_join([[["a", "b"]], [["c", "d"]]]),
            np.array([[b"ac", b"bd"]], dtype=object),
        )
        b.add("length-bytes", tf.strings.length(w), np.array([5, 0, 10, 3, 6], np.int32))
        b.add(
            "length-chars",
            tf.strings.length(w, unit="UTF8_CHAR"),
            np.array([5, 0, 10, 2, 6], np.int32),
        )
        numbers = strs("1.5", " -2", "1e3", "inf", "0x10", "-0")
        b.add(
            "to_number",
            tf.strings.to_number(numbers),
            np.array([1.5, -2, 1000, np.inf, 16, -0.0], np.float32),
        )
        b.add(
            "string_to_number-int64",
            tf.string_to_number(strs("12", " +7 ", "-9000000000"), tf.int64),
            np.array([12, 7, -9000000000]),
        )
        b.add("to_number-double", tf.strings.to_number(strs("0.1"), tf.float64), np.array([0.1]))
        grid = np.array([[b"a", b"b", b"c"], [b"d", b"e", b"f"]], dtype=object)
        g = b.feed(grid, [None, 3])
        b.add("reduce_join-all", tf.reduce_join(g), np.array(b"abcdef", dtype=object))
        b.add("reduce_join-0", tf.reduce_join(g, 0), strs("ad", "be", "cf"))
        b.add(
            "reduce_join-1-sep-keep",
            tf.reduce_join(g, 1, keep_dims=True, separator=","),
            np.array([[b"a,b,c"], [b"d,e,f"]], dtype=object),
        )
        b.add(
            "reduce_join-axes-in-order",
            tf.reduce_join(g, [0, 1]),
            np.array(b"adbecf", dtype=object),
        )
        b.add("reduce_join-neg", tf.reduce_join(g, -1), strs("abc", "def"))
        b.add(
            "regex_replace",
            tf.regex_replace(w, "a+", "<\\0>"),
            strs("<a>lph<a>", "", "Bet<a> g<a>mm<a>", "dé", "  p<a>d\t"),
        )
        b.add(
            "regex_replace-first-groups",
            tf.regex_replace(w, r"(\w)(\w)", r"\2\1", replace_global=False),
            strs("lapha", "", "eBta gamma", "dé", "  apd\t"),
        )
        b.add(
            "regex_full_match",
            tf.strings.regex_full_match(w, "[a-z]+"),
            np.array([True, False, False, False, False]),
        )
        b.add("substr", tf.substr(w, 0, 3), strs("alp", "", "Bet", "dé".encode()[:3], "  p"))
        b.add(
            "substr-broadcast",
            tf.strings.substr(strs("hello", "wo"), [1, 1], [10, 1]),
            strs("ello", "o"),
        )
        b.add("substr-negative-pos", tf.strings.substr(strs("hello"), -2, 2), strs("lo"))
        b.add("substr-chars", tf.strings.substr(strs("héllo"), 1, 2, unit="UTF8_CHAR"), strs("él"))
        b.add("strip", tf.string_strip(w), strs("alpha", "", "Beta gamma", "dé", "pad"))
        b.add("upper", tf.strings.upper(w), strs("ALPHA", "", "BETA GAMMA", "Dé", "  PAD\t"))
        b.add("lower", tf.strings.lower(w), strs("alpha", "", "beta gamma", "dé", "  pad\t"))
        raw = [v.encode() for v in ["hello?>", "", "\x00\xff"]]
        b.add(
            "encode_base64",
            tf.encode_base64(strs(*raw)),
            strs(*[base64.urlsafe_b64encode(v).rstrip(b"=") for v in raw]),
        )
        b.add(
            "encode_base64-pad",
            tf.encode_base64(strs(*raw), pad=True),
            strs(*[base64.urlsafe_b64encode(v) for v in raw]),
        )
        b.add("decode_base64", tf.decode_base64(tf.encode_base64(w)), words)
        buckets = [fingerprint64(v) % 100 for v in words]
        b.add("hash_bucket_fast", tf.string_to_hash_bucket_fast(w, 100), np.array(buckets))
        b.add(
            "hash_bucket",
            tf.strings.to_hash_bucket(w, 7),
            np.array([legacy_hash64(v) % 7 for v in words]),
        )
        b.add(
            "hash_bucket_strong",
            tf.string_to_hash_bucket_strong(w, 9, [3, 5]),
            np.array([siphash24((3, 5), v) % 9 for v in words]),
        )
        b.add(
            "format",
            tf.strings.format("x={} s={}", [pi, tf.constant("q")]),
            np.array(b'x=[7 -42 0] s="q"', dtype=object),
        )
        b.add("split-scalar", tf.strings.split(tf.constant(" a  bc d ")), strs("a", "bc", "d"))
        b.add("split-sep", tf.strings.split(tf.constant("a,,b"), sep=","), strs("a", "", "b"))
        # generic ops on strings run in Python too
        b.add("gather", tf.gather(w, [4, 0]), strs("  pad\t", "alpha"))
        b.add("reshape", tf.reshape(g, [3, 2]), grid.reshape(3, 2))
        b.add("concat", tf.concat([w, strs("z")], 0), np.concatenate([words, strs("z")]))
        b.add("identity", tf.identity(tf.constant("id")), np.array(b"id", dtype=object))
        # what the strings compute goes on to native stages
        b.add(
            "numbers-to-native",
            tf.strings.to_number(strs("1", "2")) * pf[:2],
            np.array([1.5, -0.2], np.float32),
        )
    return b


STRINGS = build_strings()


@pytest.mark.parametrize("case", STRINGS.ids())
def test_string_ops(case):
    STRINGS.check(case)


# -- TF's run-time errors, naming the node ---------------------------------------------------------
@pytest.mark.parametrize(
    "build, message",
    [
        (
            lambda: tf.string_to_number(["1.5"], out_type=tf.int32, name="s2n"),
            "StringToNumberOp could not correctly convert string: 1.5",
        ),
        (
            lambda: tf.string_to_number(["abc"], name="s2n"),
            "StringToNumberOp could not correctly convert string: abc",
        ),
        (
            lambda: tf.string_to_number(["99999999999"], out_type=tf.int32, name="s2n"),
            "StringToNumberOp could not correctly convert string: 99999999999",
        ),
        (
            lambda: tf.substr(["hello"], 7, 1, name="s2n"),
            "pos 7 out of range for string b'hello' at index 0",
        ),
        (lambda: tf.regex_replace(["a"], "(", "x", name="s2n"), "Invalid pattern: \\("),
        (lambda: tf.decode_base64(["a!"], name="s2n"), "Invalid character found in base64"),
    ],
)
def test_run_time_errors_are_tfs(build, message):
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=message) as e:
            sess.run(build())
    assert e.value.op is not None and e.value.op.name == "s2n"
    tf.reset_default_graph()
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        Interpreter().run(build())


def test_graph_build_errors():
    with pytest.raises(ValueError, match=r"Shapes \[2\] and \[3\] must be equal"):
        tf.string_join([["a", "b"], ["c", "d", "e"]])
    with pytest.raises(TypeError, match="out_type.*bool"):
        tf.string_to_number(["1"], out_type=tf.bool)
    with pytest.raises(TypeError, match="DataType float32 not in list of allowed values: string"):
        tf.strings.length([1.0])
    with pytest.raises(ValueError, match="Duplicate reduction dimension 0"):
        tf.reduce_join([["a"]], [0, 0])
    with pytest.raises(ValueError, match="both scientific and shortest"):
        tf.as_string([1.0], scientific=True, shortest=True)
    with pytest.raises(NotImplementedError, match="RaggedTensor, which tfc does not have"):
        tf.strings.split(["a b"], result_type="RaggedTensor")


def test_hashes_are_deterministic_64_bit_and_spread():
    """The bucket values themselves are compared with TensorFlow's in
    tests/test_tf_compat_host_ops.py; here: every length path of each hash is exercised."""
    data = [bytes(range(n)) for n in range(0, 200, 7)]
    for h in (fingerprint64, legacy_hash64, lambda s: siphash24((1, 2), s)):
        values = [h(s) for s in data]
        assert all(0 <= v < 2**64 for v in values)
        assert len(set(values)) == len(values)
        assert values == [h(s) for s in data]
