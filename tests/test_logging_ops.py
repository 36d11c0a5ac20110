"""tf.Print, tf.print, tf.Assert and tf.assert_*: the text TF1 writes and the errors it raises,
from the compiled host kernels (runtime tfc_text.h), from Python stages and from the reference
interpreter; the text functions against TF's rules."""

import logging
import sys

import numpy as np
import pytest

import tfc as tf
from tfc.ops.tensor_text import element_text, summarize_v1, summarize_v2
from tfc.reference.interp import Interpreter


def _both(capfd, run):
    """The stderr and stdout of `run(sess)` in a Session, then under the interpreter
    (`run(Interpreter())`)."""
    capfd.readouterr()
    with tf.Session() as sess:
        run(sess)
    compiled = capfd.readouterr()
    run(Interpreter())
    interpreted = capfd.readouterr()
    return compiled, interpreted


# -- the text rules --------------------------------------------------------------------------------
def test_elements_are_written_as_tfs_strcat():
    assert element_text(np.float32(1 / 3)) == "0.333333343"  # 6 digits do not read back
    assert element_text(np.float32(0.1)) == "0.1"
    assert element_text(np.float32(123456789.0)) == "123456792"
    assert element_text(np.float64(0.1) + np.float64(0.2)) == "0.30000000000000004"
    assert element_text(np.float32(1e20)) == "1e+20"
    assert element_text(np.float32(-np.nan)) == "-nan" and element_text(np.inf) == "inf"
    assert element_text(np.bool_(True)) == "1" and element_text(np.int64(-5)) == "-5"
    assert element_text(b'q"\n\x01', v2=True) == '"q\\"\\n\\001"'
    assert element_text(b"raw\n") == "raw\n"


def test_v1_summaries_stop_after_the_first_values():
    x = np.arange(6).reshape(2, 3)
    assert summarize_v1(x, 3) == "[0 1 2]..."
    assert summarize_v1(x, 100) == "[0 1 2][3 4 5]"
    assert summarize_v1(np.zeros((2, 2, 3), np.int32), 4) == "[[0 0 0][0...]]..."
    assert summarize_v1(np.arange(5), 3) == "0 1 2..."
    assert summarize_v1(np.arange(5), -1) == "0 1 2 3 4"
    assert summarize_v1(np.arange(5), 0) == "..." and summarize_v1(np.float32(3), 0) == "..."
    assert summarize_v1(np.zeros((2, 0)), 3) == ""


def test_v2_summaries_keep_both_ends_of_every_dimension():
    x = np.arange(100).reshape(10, 10)
    assert summarize_v2(x, 3).splitlines() == [
        "[[0 1 2 ... 7 8 9]",
        " [10 11 12 ... 17 18 19]",
        " [20 21 22 ... 27 28 29]",
        " ...",
        " [70 71 72 ... 77 78 79]",
        " [80 81 82 ... 87 88 89]",
        " [90 91 92 ... 97 98 99]]",
    ]
    assert summarize_v2(np.arange(10), 2) == "[0 1 ... 8 9]"
    assert (
        summarize_v2(np.arange(8).reshape(2, 2, 2), 3) == "[[[0 1]\n  [2 3]]\n\n [[4 5]\n  [6 7]]]"
    )
    assert summarize_v2(np.zeros((2, 0)), 3) == "[\n ...]"
    assert summarize_v2(np.array([b"a"], dtype=object), 3) == '["a"]'


# -- tf.Print --------------------------------------------------------------------------------------
def test_print_writes_tfs_text_to_stderr_and_passes_its_input(capfd):
    x = tf.placeholder(tf.float32, [2, 3], name="x")
    value = np.array([[1.5, 2.25, 3.0], [4.0, 0.1, 6.0]], np.float32)
    data = [x, tf.constant([1, 2, 3, 4, 5]), tf.constant([True, False]), tf.constant(["ab", "c"]),
            tf.constant(3.0), tf.constant(0.1, tf.float64), x > 2]  # fmt: skip
    y = tf.Print(x, data, message="msg: ") * 2.0
    outs = []
    compiled, interpreted = _both(capfd, lambda s: outs.append(s.run(y, {x: value})))
    text = "msg: [[1.5 2.25 3]...][1 2 3...][1 0][ab c][3][0.1][[0 1 1]...]\n"
    assert compiled.err == text and interpreted.err == text
    for out in outs:
        np.testing.assert_array_equal(out, value * 2)


def test_print_summarize_first_n_and_empty_data(capfd):
    x = tf.placeholder(tf.int64, [2, 2, 3], name="x")
    y = tf.Print(x, [x], summarize=4, first_n=2)
    z = tf.Print(x, [], message="just this")
    feed = {x: np.arange(12).reshape(2, 2, 3)}

    def runs(session):
        for _ in range(3):
            session.run([y, z], feed)

    compiled, interpreted = _both(capfd, runs)
    first = "[[[0 1 2][3...]]...]\n"
    for captured in (compiled, interpreted):
        lines = captured.err.splitlines(keepends=True)
        assert lines.count(first) == 2 and lines.count("just this\n") == 3


def test_print_of_a_run_time_string_runs_in_python(capfd):
    s = tf.placeholder(tf.string, [None], name="s")
    y = tf.Print(tf.constant(1.0), [s], message="words: ")
    compiled, interpreted = _both(capfd, lambda r: r.run(y, {s: ["a", "b"]}))
    assert compiled.err == interpreted.err == "words: [a b]\n"


def test_print_passes_gradients_to_its_input():
    x = tf.placeholder(tf.float32, [3])
    grad = tf.gradients(tf.reduce_sum(tf.Print(x, [x]) * 3.0), x)[0]
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(grad, {x: np.ones(3)}), [3.0, 3.0, 3.0])


# -- tf.print --------------------------------------------------------------------------------------
def test_print_v2_writes_a_template_to_the_stream(capfd):
    x = tf.placeholder(tf.float32, [2, 3], name="x")
    feed = {x: np.array([[1.5, 2.25, 3.0], [4.0, 0.1, 6.0]], np.float32)}
    ops = [
        tf.print(x, tf.constant([1, 2, 3, 4, 5]), "str", tf.constant(["ab", "c"])),
        tf.print(tf.constant(3.5), x[0], tf.constant(True), sep="|", end="!\n",
                 output_stream=sys.stdout),
        tf.print({"a": x[1], "b": [1, "two"]}, summarize=1),
        tf.print(tf.constant("a scalar string is written as it is")),
    ]  # fmt: skip
    compiled, interpreted = _both(capfd, lambda s: [s.run(op, feed) for op in ops])
    err = (
        '[[1.5 2.25 3]\n [4 0.1 6]] [1 2 3 4 5] str ["ab" "c"]\n'
        "{'a': [4 ... 6], 'b': [1, 'two']}\n"
        "a scalar string is written as it is\n"
    )
    assert compiled.err == interpreted.err == err
    assert compiled.out == interpreted.out == "3.5|[1.5 2.25 3]|1!\n"


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_print_v2_to_logging_and_files_runs_in_python(tmp_path):
    x = tf.constant([1, 2])
    path = tmp_path / "printed.txt"
    logger, records = logging.getLogger("tfc"), _Records()
    level = logger.level
    logger.addHandler(records)
    logger.setLevel(logging.INFO)
    try:
        with tf.Session() as sess:
            sess.run(tf.print("logged", x, output_stream=tf.logging.info))
            sess.run(tf.print("filed", x, output_stream=f"file://{path}"))
            sess.run(tf.print("twice", output_stream=f"file://{path}"))
    finally:
        logger.removeHandler(records)
        logger.setLevel(level)
    assert [(r.levelno, r.getMessage()) for r in records.records] == [
        (logging.INFO, "logged [1 2]")
    ]
    assert path.read_text() == "filed [1 2]\ntwice\n"
    with pytest.raises(ValueError, match="Unsupported output stream"):
        tf.print(x, output_stream=object())
    with pytest.raises(ValueError, match="Unrecognized keyword arguments for tf.print"):
        tf.print(x, stream=sys.stderr)


# -- tf.Assert and tf.assert_* ---------------------------------------------------------------------
def _fails(target, feed, message):
    """The run of `target` fails with InvalidArgumentError `message` (the whole first line),
    compiled and interpreted."""
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError) as e:
        sess.run(target, feed)
    assert e.value.message == message
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        Interpreter().run(target, feed)
    assert e.value.message == message


def test_assert_fails_the_run_with_the_datas_text():
    x = tf.placeholder(tf.float32, [4], name="x")
    check = tf.Assert(tf.reduce_all(x > 0), ["x must be positive:", x, tf.size(x)], summarize=2)
    with tf.control_dependencies([check]):
        y = tf.identity(x)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {x: np.ones(4)}), np.ones(4))
    _fails(y, {x: [1.0, -2.0, 3.0, 4.0]}, "assertion failed: [x must be positive:] [1 -2...] [4]")


def test_assert_checks_its_condition_when_the_graph_is_built():
    with pytest.raises(ValueError, match=r"In\[0\] should be a scalar: \[2\]"):
        tf.Assert(tf.constant([True, False]), ["x"])
    with pytest.raises(TypeError, match="'condition' has DataType float32"):
        tf.Assert(tf.constant(1.0), ["x"])


P = np.array([1.0, -2.0, 3.0], np.float32)


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda p: tf.assert_equal(p, [1.0, 2.0, 3.0]),
         "assertion failed: [Condition x == y did not hold element-wise:] [x (p:0) = ] [1 -2 3] "
         "[y (assert_equal_1/y:0) = ] [1 2 3]"),
        (lambda p: tf.assert_none_equal(p, 3.0, message="all differ"),
         "assertion failed: [all differ] [Condition x != y did not hold element-wise:] "
         "[x (p:0) = ] [1 -2 3] [y (assert_none_equal/y:0) = ] [3]"),
        (lambda p: tf.assert_less(p, 2.0),
         "assertion failed: [Condition x < y did not hold element-wise:] [x (p:0) = ] [1 -2 3] "
         "[y (assert_less/y:0) = ] [2]"),
        (lambda p: tf.assert_less_equal(p, 2.0),
         "assertion failed: [Condition x <= y did not hold element-wise:] [x (p:0) = ] "
         "[1 -2 3] [y (assert_less_equal/y:0) = ] [2]"),
        (lambda p: tf.assert_greater(p, 0.0),
         "assertion failed: [Condition x > y did not hold element-wise:] [x (p:0) = ] [1 -2 3] "
         "[y (assert_greater/y:0) = ] [0]"),
        (lambda p: tf.assert_greater_equal(p, 0.0, summarize=1),
         "assertion failed: [Condition x >= y did not hold element-wise:] [x (p:0) = ] [1...] "
         "[y (assert_greater_equal/y:0) = ] [0]"),
        (lambda p: tf.assert_positive(p),
         "assertion failed: [] [Condition x > 0 did not hold element-wise:] [x (p:0) = ] [1 -2 3]"),
        (lambda p: tf.assert_negative(p, message="neg"),
         "assertion failed: [neg.  ] [Condition x < 0 did not hold element-wise:] [x (p:0) = ] "
         "[1 -2 3]"),
        (lambda p: tf.assert_non_negative(p),
         "assertion failed: [] [Condition x >= 0 did not hold element-wise:] [x (p:0) = ] "
         "[1 -2 3]"),
        (lambda p: tf.assert_non_positive(p),
         "assertion failed: [] [Condition x <= 0 did not hold element-wise:x (p:0) = ] [1 -2 3]"),
        (lambda p: tf.assert_near(p, [1.0, -2.0, 3.1]),
         'assertion failed: [] [x and y not equal to tolerance rtol = Tensor("assert_near/rtol:0",'
         ' shape=(), dtype=float32), atol = Tensor("assert_near/atol:0", shape=(), '
         'dtype=float32)] [x (p:0) = ] [1 -2 3] [y (assert_near/y:0) = ] [1 -2 3.1]'),
        (lambda p: tf.assert_rank(tf.placeholder_with_default(p, None), 2),
         "assertion failed: [] [Tensor PlaceholderWithDefault:0 must have rank] [2] "
         "[Received shape: ] [3]"),
    ],
)  # fmt: skip
def test_assert_functions_fail_the_run_with_tfs_message(build, message):
    p = tf.placeholder(tf.float32, [3], name="p")
    check = build(p)
    _fails(check, {p: P}, message)


@pytest.mark.parametrize(
    "build, value",
    [
        (lambda p: tf.assert_equal(p, [1.0, 2.0, 3.0]), [1.0, 2.0, 3.0]),
        (lambda p: tf.assert_none_equal(p, 3.0), [1.0, 2.0, 4.0]),
        (lambda p: tf.assert_less(p, 2.0), [1.0, -2.0, 1.5]),
        (lambda p: tf.assert_greater_equal(p, 0.0), [1.0, 0.0, 3.0]),
        (lambda p: tf.assert_positive(p), [1.0, 2.0, 3.0]),
        (lambda p: tf.assert_non_positive(p), [-1.0, 0.0, -3.0]),
        (lambda p: tf.assert_near(p, [1.0, -2.0, 3.0]), [1.0, -2.0, 3.0]),
    ],
)
def test_assert_functions_pass_what_holds(build, value):
    p = tf.placeholder(tf.float32, [3], name="p")
    with tf.control_dependencies([build(p)]):
        y = tf.identity(p)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {p: value}), value)


def test_assert_functions_check_what_is_known_when_the_graph_is_built():
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"Condition x == y did not hold element-wise:\nx \(Const:0\) = \n\[1 2\]\n"
        r"y \(Const_1:0\) = \n\[1 3\]",
    ):
        tf.assert_equal(tf.constant([1, 2]), tf.constant([1, 3]))
    assert tf.assert_equal(tf.constant([1, 2]), tf.constant([1, 2])).type == "Assert"
    p = tf.placeholder(tf.float32, [3], name="p")
    with pytest.raises(ValueError, match=r"Tensor p:0 must have rank 2\.  Received rank 1"):
        tf.assert_rank(p, 2)
    assert tf.assert_rank(p, 1).name == "assert_rank_1/static_checks_determined_all_ok"
    with pytest.raises(ValueError, match=r"m\.  Tensor p:0 must have rank at least 2"):
        tf.assert_rank_at_least(p, 2, message="m")
    with pytest.raises(ValueError, match=r"must have rank in \(0, 2\)\.  Received rank 1"):
        tf.assert_rank_in(p, [0, 2])
    assert tf.assert_rank_in(p, [1, 2]).type == "NoOp"
    with pytest.raises(TypeError, match='Expected "x" to be integer type.  Found: p:0'):
        tf.assert_integer(p)
    assert tf.assert_integer(tf.constant(1)).type == "NoOp"
    with pytest.raises(TypeError, match="p:0 must be of type tf.int32; got tf.float32"):
        tf.assert_type(p, tf.int32)
    with pytest.raises(ValueError, match=r"Expected scalar shape for p:0, saw shape: \(3,\)"):
        tf.assert_scalar(p)
    assert tf.assert_scalar(tf.constant(1.0)).shape.ndims == 0
    assert tf.assert_same_float_dtype([p, tf.constant([1.0])]) == tf.float32
    with pytest.raises(ValueError, match="must be of the same type"):
        tf.assert_same_float_dtype([p, tf.constant([1.0], tf.float64)])
    with pytest.raises(ValueError, match="Expected floating point type"):
        tf.assert_same_float_dtype([tf.constant([1])])
    with pytest.raises(TypeError, match='Expected argument "values" to be a "proper" iterable'):
        tf.assert_proper_iterable("abc")
    tf.assert_proper_iterable([1, 2])
    assert tf.is_numeric_tensor(p) and not tf.is_numeric_tensor(tf.constant("s"))
    assert tf.debugging.assert_equal is tf.assert_equal and tf.debugging.Assert is tf.Assert
