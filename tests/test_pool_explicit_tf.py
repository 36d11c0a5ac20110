"""MaxPool with explicit padding (what tfc.onnx imports ONNX's padded MaxPool to) against
TensorFlow's own op of that attribute, values and gradients (skipped without tensorflow)."""

import numpy as np
import pytest

import tfc
from tfc.ops.registry import apply_op

tf = pytest.importorskip("tensorflow")
tf1 = tf.compat.v1

# (image, window, strides, NHWC explicit_paddings): ResNet-50's stem pool and an uneven split
CASES = [
    ((2, 9, 8, 3), (3, 3), (2, 2), [0, 0, 1, 1, 1, 1, 0, 0]),
    ((1, 7, 6, 2), (3, 2), (2, 1), [0, 0, 0, 2, 1, 0, 0, 0]),
]


def _pooled_shape(shape, ks, st, pads):
    """TF's output size for explicit padding."""
    rows = (shape[1] + pads[2] + pads[3] - ks[0]) // st[0] + 1
    cols = (shape[2] + pads[4] + pads[5] - ks[1]) // st[1] + 1
    return (shape[0], rows, cols, shape[3])


def _pool_and_gradient(lib, x, dy, ks, st, pads):
    ksize, strides = [1, *ks, 1], [1, *st, 1]
    if lib is tfc:
        attrs = dict(ksize=ksize, strides=strides, padding="EXPLICIT", explicit_paddings=pads)
        y = apply_op("MaxPool", [x], attrs).outputs[0]
    else:
        y = tf1.nn.max_pool_v2(x, ksize, strides, [pads[i : i + 2] for i in range(0, 8, 2)])
    return [y, lib.gradients(y, x, grad_ys=dy)[0]]


def test_explicit_max_pool_matches_tensorflow():
    rng = np.random.default_rng(5)
    # integers: windows hold ties, whose gradient goes to the first maximum in both
    values = [
        (rng.integers(-3, 4, case[0]).astype(np.float32),
         rng.standard_normal(_pooled_shape(*case)).astype(np.float32))
        for case in CASES
    ]  # fmt: skip
    results = []
    for lib, session in ((tf1, tf1.Session), (tfc, tfc.Session)):
        graph = lib.Graph()
        with graph.as_default():
            tensors, feeds = [], {}
            for (xv, dyv), (_, ks, st, pads) in zip(values, CASES):
                x = lib.placeholder(lib.float32, xv.shape)
                dy = lib.placeholder(lib.float32, dyv.shape)
                tensors += _pool_and_gradient(lib, x, dy, ks, st, pads)
                feeds.update({x: xv, dy: dyv})
            with session(graph=graph) as sess:
                results.append(sess.run(tensors, feeds))
    for want, got in zip(*results):
        np.testing.assert_array_equal(got, want)
