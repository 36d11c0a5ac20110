"""tf.py_func and tf.numpy_function: values, TF's result checks and error classes, no gradient,
Session only (native builds refuse them), the function's lifetime."""

import gc

import numpy as np
import pytest

import tfc as tf
from tfc.compiler import PIPELINE, compile_program
from tfc.ir.program import FeedSpec, make_program_graph
from tfc.ops import script_ops
from tfc.passes.native import NativeBuildError
from tfc.reference.interp import Interpreter


def _run(fetches, feed=None):
    with tf.Session() as sess:
        compiled = sess.run(fetches, feed)
    return compiled, Interpreter().run(fetches, feed)


def test_a_function_between_native_ops():
    x = tf.placeholder(tf.float32, [None], name="x")
    y = tf.py_func(lambda a: np.sort(a)[::-1].copy(), [x * 2.0], tf.float32)
    assert y.shape.ndims is None  # unknown until it runs, as in TF
    z = tf.reduce_sum(y * tf.constant([1.0, 10.0, 100.0]))
    for got in _run([y, z], {x: np.array([1.0, 3.0, 2.0], np.float32)}):
        np.testing.assert_array_equal(got[0], [6.0, 4.0, 2.0])
        assert got[1] == pytest.approx(6 + 40 + 200)


def test_several_outputs_strings_and_a_single_dtype():
    words = tf.constant(["ab", "c"])
    n = tf.constant(2)

    def describe(w, k):
        assert w.dtype == object and isinstance(w[0], bytes)
        return [b"|".join(w) * int(k), np.int64(len(w))]

    joined, count = tf.numpy_function(describe, [words, n], [tf.string, tf.int64])
    single = tf.py_func(lambda w: "text", [words], tf.string)
    assert isinstance(single, tf.Tensor)
    for got in _run([joined, count, single]):
        assert got == [b"ab|cab|c", 2, b"text"]


def test_op_types_and_names_as_tf1():
    x = tf.constant([1.0])
    assert tf.py_func(np.abs, [x], tf.float32).op.type == "PyFunc"
    assert tf.py_func(np.abs, [x], tf.float32, stateful=False).op.type == "PyFuncStateless"
    op = tf.numpy_function(np.abs, [x], tf.float32, name="absolute").op
    assert op.type == "PyFunc" and op.name == "absolute"
    assert op.get_attr("token").startswith("pyfunc_")
    assert tf.py_func(lambda a: None, [x], []).type == "PyFunc"  # no outputs: the op


@pytest.mark.parametrize(
    "function, tout, error, message",
    [
        (lambda a: a.astype(np.float64), tf.float32, tf.errors.InvalidArgumentError,
         r"0-th value returned by pyfunc_\d+ is double, but expects float"),
        (lambda a: 3, tf.int32, tf.errors.InvalidArgumentError,
         r"0-th value returned by pyfunc_\d+ is int64, but expects int32"),
        (lambda a: (a, a), [tf.float32], tf.errors.InvalidArgumentError,
         r"pyfunc_\d+ returns 2 values, but expects to see 1 values\."),
        (lambda a: 1.5, tf.string, tf.errors.InvalidArgumentError,
         r"0-th value returned by pyfunc_\d+ is double, but expects string"),
    ],
)  # fmt: skip
def test_results_are_checked_as_tf_checks_them(function, tout, error, message):
    y = tf.py_func(function, [tf.constant([1.0, 2.0])], tout, name="f")
    target = y[0] if isinstance(y, list) else y
    with tf.Session() as sess, pytest.raises(error, match=message) as e:
        sess.run(target)
    assert e.value.op.name == "f"


@pytest.mark.parametrize(
    "exception, error",
    [
        (ValueError("bad value"), tf.errors.InvalidArgumentError),
        (TypeError("bad type"), tf.errors.InvalidArgumentError),
        (StopIteration(), tf.errors.OutOfRangeError),
        (NotImplementedError("later"), tf.errors.UnimplementedError),
        (KeyError("k"), tf.errors.UnknownError),
    ],
)
def test_an_exception_fails_the_run_with_tfs_class_and_the_traceback(exception, error):
    def raising(a):
        raise exception

    y = tf.py_func(raising, [tf.constant(1.0)], tf.float32)
    with tf.Session() as sess, pytest.raises(error) as e:
        sess.run(y)
    assert "Traceback (most recent call last)" in e.value.message
    assert "in raising" in e.value.message
    assert type(exception).__name__ in e.value.message


def test_no_gradient_flows_through_it():
    x = tf.placeholder(tf.float32, [2])
    y = tf.py_func(np.square, [x], tf.float32)
    assert tf.gradients(tf.reduce_sum(y * x), x)[0] is not None  # through x itself
    assert tf.gradients(y, x) == [None]


def test_native_builds_refuse_it_naming_the_op():
    x = tf.placeholder(tf.float32, [2], name="x")
    y = tf.py_func(np.square, [x], tf.float32, name="square_in_python")
    feeds = [FeedSpec(("x", 0), tf.float32, (2,))]
    graph = make_program_graph(tf.get_default_graph(), [(y.op.name, 0)], feeds=feeds)
    with pytest.raises(
        NativeBuildError,
        match=r"Op 'square_in_python' \(type PyFunc\) cannot be compiled into a native program: "
        r"it calls a Python function\. Only a tf.Session can run it",
    ):
        compile_program(graph, PIPELINE)


def test_the_function_lives_as_long_as_its_graph():
    graph = tf.Graph()
    with graph.as_default():
        token = tf.py_func(np.abs, [tf.constant(1.0)], tf.float32).op.get_attr("token")
    assert token in script_ops._FUNCTIONS
    del graph
    gc.collect()
    assert token not in script_ops._FUNCTIONS
