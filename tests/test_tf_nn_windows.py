"""tf.nn's window ops against TensorFlow itself (runs where `tensorflow` is importable).

Each case is one function of a namespace, called with tf.compat.v1 and with tfc on the same
random inputs: the results must agree, and so must the gradients of sum(y * w) by every float
input (tf.gradients in both), at float32 precision.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import tfc

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
tf = pytest.importorskip("tensorflow")
v1 = tf.compat.v1

RNG = np.random.default_rng(31)


def _ints(*values):
    return np.array(values, np.int32)


# name -> (function of (namespace, *inputs), input shapes or arrays[, why the gradients are not
# compared]); float inputs are random
CASES = {
    "depthwise_conv2d_native-s2": (
        lambda ns, x, f: ns.nn.depthwise_conv2d_native(x, f, [1, 2, 2, 1], "SAME"),
        [(2, 9, 8, 5), (3, 3, 5, 2)],
    ),
    "depthwise_conv2d_native-NCHW": (
        lambda ns, x, f: ns.nn.depthwise_conv2d_native(
            x, f, [1, 1, 2, 1], "VALID", data_format="NCHW"
        ),
        [(1, 4, 9, 7), (3, 2, 4, 3)],
    ),
    "depthwise_conv2d_native-dilated": (
        lambda ns, x, f: ns.nn.depthwise_conv2d_native(
            x, f, [1, 1, 1, 1], "SAME", dilations=[1, 2, 3, 1]
        ),
        [(1, 9, 7, 4), (3, 2, 4, 1)],
        # TF 2.21's float32 input gradient ignores the dilations (it differs from a finite
        # difference of TF's own forward; float64 refuses dilations): test_gradients.py checks
        # tfc's against finite differences
        "TensorFlow's own gradient is wrong",
    ),
    "depthwise_conv2d_native_backprop_input": (
        lambda ns, f, dy: ns.nn.depthwise_conv2d_native_backprop_input(
            _ints(2, 9, 8, 5), f, dy, [1, 2, 2, 1], "SAME"
        ),
        [(3, 3, 5, 2), (2, 5, 4, 10)],
    ),
    "depthwise_conv2d_native_backprop_filter": (
        lambda ns, x, dy: ns.nn.depthwise_conv2d_native_backprop_filter(
            x, _ints(3, 3, 5, 2), dy, [1, 2, 2, 1], "SAME"
        ),
        [(2, 9, 8, 5), (2, 5, 4, 10)],
    ),
    "depthwise_conv2d-rate": (
        lambda ns, x, f: ns.nn.depthwise_conv2d(x, f, [1, 1, 1, 1], "SAME", rate=[2, 2]),
        [(2, 9, 8, 3), (3, 3, 3, 2)],
    ),
    "separable_conv2d": (
        lambda ns, x, d, p: ns.nn.separable_conv2d(x, d, p, [1, 2, 2, 1], "VALID"),
        [(2, 9, 8, 3), (3, 3, 3, 2), (1, 1, 6, 4)],
    ),
    "separable_conv2d-rate": (
        lambda ns, x, d, p: ns.nn.separable_conv2d(x, d, p, [1, 1, 1, 1], "SAME", rate=[2, 1]),
        [(1, 9, 8, 3), (3, 3, 3, 1), (1, 1, 3, 2)],
    ),
    "convolution-2d-dilated": (
        lambda ns, x, f: ns.nn.convolution(x, f, "SAME", dilation_rate=[2, 2]),
        [(2, 9, 8, 3), (3, 3, 3, 4)],
    ),
    "convolution-2d-NCHW-strided": (
        lambda ns, x, f: ns.nn.convolution(x, f, "VALID", strides=[2, 1], data_format="NCHW"),
        [(2, 3, 9, 8), (3, 2, 3, 4)],
    ),
    "convolution-1d": (
        lambda ns, x, f: ns.nn.convolution(x, f, "SAME", strides=[2]),
        [(2, 11, 3), (4, 3, 5)],
    ),
    "convolution-1d-NCW-dilated": (
        lambda ns, x, f: ns.nn.convolution(x, f, "VALID", dilations=[2], data_format="NCW"),
        [(2, 3, 11), (3, 3, 2)],
    ),
    "pool-max-dilated": (
        lambda ns, x: ns.nn.pool(x, [3, 2], "MAX", "VALID", dilation_rate=[2, 3]),
        [(2, 9, 10, 3)],
    ),
    "pool-avg-dilated-NCHW": (
        lambda ns, x: ns.nn.pool(x, [3, 3], "AVG", "VALID", dilations=[2, 2], data_format="NCHW"),
        [(2, 3, 9, 8)],
    ),
    "pool-max-same": (
        lambda ns, x: ns.nn.pool(x, [3, 3], "MAX", "SAME", strides=[2, 1]),
        [(2, 9, 8, 3)],
    ),
    "pool-avg-strided-valid": (
        lambda ns, x: ns.nn.pool(x, [3, 3], "AVG", "VALID", strides=[2, 2]),
        [(2, 9, 8, 3)],
    ),
    "pool-max-1d": (
        lambda ns, x: ns.nn.pool(x, [3], "MAX", "SAME", strides=[2]),
        [(2, 11, 3)],
    ),
    "pool-avg-1d-dilated": (
        lambda ns, x: ns.nn.pool(x, [2], "AVG", "VALID", dilation_rate=[3]),
        [(2, 11, 3)],
    ),
    "max_pool_v2": (lambda ns, x: ns.nn.max_pool_v2(x, 3, 2, "SAME"), [(2, 9, 8, 3)]),
    "avg_pool_v2-1d": (lambda ns, x: ns.nn.avg_pool_v2(x, [3], [2], "VALID"), [(2, 9, 3)]),
    "max_pool1d-NCW": (
        lambda ns, x: ns.nn.max_pool1d(x, 2, 2, "SAME", data_format="NCW"),
        [(2, 3, 9)],
    ),
    "avg_pool1d": (lambda ns, x: ns.nn.avg_pool1d(x, 3, 1, "SAME"), [(2, 9, 3)]),
    "max_pool2d-NCHW": (
        lambda ns, x: ns.nn.max_pool2d(x, [3, 2], [2, 1], "SAME", data_format="NCHW"),
        [(2, 3, 9, 8)],
    ),
    "avg_pool2d-NCHW": (
        lambda ns, x: ns.nn.avg_pool2d(x, 3, 2, "SAME", data_format="NCHW"),
        [(2, 3, 9, 8)],
    ),
    "atrous_conv2d-same": (
        lambda ns, x, f: ns.nn.atrous_conv2d(x, f, 2, "SAME"),
        [(2, 9, 8, 3), (3, 3, 3, 4)],
    ),
    "atrous_conv2d-valid": (
        lambda ns, x, f: ns.nn.atrous_conv2d(x, f, 3, "VALID"),
        [(1, 11, 10, 2), (2, 3, 2, 3)],
    ),
    "atrous_conv2d_transpose": (
        lambda ns, dy, f: ns.nn.atrous_conv2d_transpose(dy, f, [2, 9, 8, 3], 2, "SAME"),
        [(2, 9, 8, 4), (3, 3, 3, 4)],
    ),
    "conv2d_backprop_input": (
        lambda ns, f, dy: ns.nn.conv2d_backprop_input(
            _ints(2, 9, 8, 3), f, dy, [1, 2, 2, 1], "SAME"
        ),
        [(3, 3, 3, 4), (2, 5, 4, 4)],
    ),
    "conv2d_backprop_input-NCHW": (
        lambda ns, f, dy: ns.nn.conv2d_backprop_input(
            _ints(2, 3, 9, 8), f, dy, [1, 1, 2, 2], "VALID", data_format="NCHW"
        ),
        [(3, 3, 3, 4), (2, 4, 4, 3)],
    ),
    "conv2d_backprop_filter-NCHW": (
        lambda ns, x, dy: ns.nn.conv2d_backprop_filter(
            x, _ints(3, 3, 3, 4), dy, [1, 1, 2, 2], "SAME", data_format="NCHW"
        ),
        [(2, 3, 9, 8), (2, 4, 5, 4)],
    ),
    "max_pool_with_argmax": (
        lambda ns, x: ns.nn.max_pool_with_argmax(x, [1, 3, 2, 1], [1, 2, 2, 1], "SAME"),
        [(2, 7, 6, 3)],
    ),
    "max_pool_with_argmax-ties-batch": (
        lambda ns, x: ns.nn.max_pool_with_argmax(
            x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID", include_batch_in_index=True
        ),
        [np.random.default_rng(5).integers(-2, 3, (3, 6, 7, 2)).astype(np.float32)],
    ),
    "lrn": (lambda ns, x: ns.nn.lrn(x), [(2, 3, 4, 13)]),
    "local_response_normalization": (
        lambda ns, x: ns.nn.local_response_normalization(x, 2, 2.0, 1e-1, 0.75),
        [(2, 3, 4, 7)],
    ),
    "lrn-wide-radius": (
        lambda ns, x: ns.nn.lrn(x, depth_radius=9, bias=0.5, alpha=0.3, beta=1.0),
        [(1, 2, 3, 6)],
    ),
    "extract_image_patches": (
        lambda ns, x: ns.extract_image_patches(x, [1, 3, 3, 1], [1, 1, 1, 1], [1, 1, 1, 1], "SAME"),
        [(2, 7, 6, 3)],
    ),
    "extract_image_patches-strided-rates-valid": (
        lambda ns, x: ns.extract_image_patches(
            x, [1, 2, 3, 1], [1, 2, 1, 1], [1, 2, 1, 1], "VALID"
        ),
        [(2, 7, 6, 3)],
    ),
    "extract_image_patches-sizes-same": (
        lambda ns, x: ns.extract_image_patches(
            x, strides=[1, 3, 2, 1], rates=[1, 1, 2, 1], padding="SAME", sizes=[1, 3, 2, 1]
        ),
        [(1, 8, 9, 2)],
    ),
    "dilation2d-same": (
        lambda ns, x, f: ns.nn.dilation2d(x, f, [1, 1, 1, 1], [1, 1, 1, 1], "SAME"),
        [(2, 7, 6, 3), (3, 2, 3)],
    ),
    "dilation2d-strided-rates-valid": (
        lambda ns, x, f: ns.nn.dilation2d(x, f, [1, 2, 1, 1], [1, 1, 2, 1], "VALID"),
        [(2, 9, 8, 2), (2, 3, 2)],
    ),
    "erosion2d-same-strided": (
        lambda ns, x, k: ns.nn.erosion2d(x, k, [1, 2, 2, 1], [1, 1, 1, 1], "SAME"),
        [(2, 7, 6, 3), (3, 2, 3)],
    ),
    "erosion2d-rates": (
        lambda ns, x, k: ns.nn.erosion2d(x, k, [1, 1, 1, 1], [1, 2, 2, 1], "SAME"),
        [(1, 8, 7, 2), (2, 3, 2)],
    ),
    "conv3d-same-strided": (
        lambda ns, x, f: ns.nn.conv3d(x, f, [1, 2, 1, 2, 1], "SAME"),
        [(2, 5, 6, 7, 3), (3, 2, 3, 3, 4)],
    ),
    "conv3d-valid-dilated": (
        lambda ns, x, f: ns.nn.conv3d(x, f, [1, 1, 1, 1, 1], "VALID", dilations=[1, 2, 1, 2, 1]),
        [(1, 6, 5, 7, 2), (2, 3, 2, 2, 3)],
        "TF 2.21's oneDNN kernel fails on the input gradient of a dilated 3-D convolution",
    ),
    "convolution-3d-NCDHW": (
        lambda ns, x, f: ns.nn.convolution(x, f, "SAME", strides=[1, 2, 1], data_format="NCDHW"),
        [(2, 3, 5, 6, 4), (2, 3, 2, 3, 2)],
    ),
    "conv3d_transpose": (
        lambda ns, dy, f: ns.nn.conv3d_transpose(dy, f, [2, 5, 6, 7, 3], [1, 2, 1, 2, 1], "SAME"),
        [(2, 3, 6, 4, 4), (3, 2, 3, 3, 4)],
    ),
    "conv3d_transpose-valid-s3": (
        lambda ns, dy, f: ns.nn.conv3d_transpose(dy, f, [1, 8, 4, 5, 2], [1, 3, 1, 2, 1], "VALID"),
        [(1, 3, 3, 2, 3), (2, 2, 2, 2, 3)],
    ),
    "conv3d_backprop_filter": (
        lambda ns, x, dy: ns.nn.conv3d_backprop_filter(
            x, _ints(3, 2, 3, 3, 4), dy, [1, 2, 1, 2, 1], "SAME"
        ),
        [(2, 5, 6, 7, 3), (2, 3, 6, 4, 4)],
    ),
    "conv3d_backprop_filter_v2-valid": (
        lambda ns, x, dy: ns.nn.conv3d_backprop_filter_v2(
            x, _ints(2, 2, 2, 2, 3), dy, [1, 3, 1, 2, 1], "VALID"
        ),
        [(1, 8, 4, 5, 2), (1, 3, 3, 2, 3)],
    ),
    "max_pool3d-same": (
        lambda ns, x: ns.nn.max_pool3d(x, [1, 3, 2, 2, 1], [1, 2, 2, 1, 1], "SAME"),
        [(2, 5, 6, 7, 3)],
    ),
    "avg_pool3d-same": (
        lambda ns, x: ns.nn.avg_pool3d(x, [1, 3, 3, 2, 1], [1, 2, 1, 2, 1], "SAME"),
        [(2, 5, 6, 7, 3)],
    ),
    "avg_pool3d-valid-NCDHW": (
        lambda ns, x: ns.nn.avg_pool3d(x, [1, 1, 2, 2, 2], [1, 1, 2, 1, 2], "VALID", "NCDHW"),
        [(2, 3, 5, 6, 7)],
    ),
    "max_pool_v2-3d": (lambda ns, x: ns.nn.max_pool_v2(x, 2, 2, "VALID"), [(1, 4, 5, 6, 2)]),
    "pool-3d-avg-dilated": (
        lambda ns, x: ns.nn.pool(x, [2, 2, 2], "AVG", "VALID", dilation_rate=[2, 1, 2]),
        [(1, 5, 4, 6, 2)],
    ),
    "extract_volume_patches-same": (
        lambda ns, x: ns.extract_volume_patches(x, [1, 3, 2, 2, 1], [1, 2, 1, 2, 1], "SAME"),
        [(2, 5, 4, 5, 3)],
    ),
    "extract_volume_patches-valid": (
        lambda ns, x: ns.extract_volume_patches(x, [1, 2, 2, 3, 1], [1, 1, 2, 1, 1], "VALID"),
        [(1, 4, 5, 6, 2)],
    ),
    "space_to_depth": (lambda ns, x: ns.space_to_depth(x, 2), [(2, 6, 4, 3)]),
    "depth_to_space": (lambda ns, x: ns.nn.depth_to_space(x, 2), [(2, 3, 2, 8)]),
    "space_to_batch_nd": (
        lambda ns, x: ns.space_to_batch_nd(x, [2, 3], [[1, 0], [2, 2]]),
        [(2, 5, 8, 3)],
    ),
    "space_to_batch_nd-1d": (
        lambda ns, x: ns.space_to_batch_nd(x, [3], [[1, 1]]),
        [(2, 7, 4, 3)],
    ),
    "batch_to_space_nd": (
        lambda ns, x: ns.batch_to_space_nd(x, [2, 3], [[1, 0], [2, 1]]),
        [(12, 3, 4, 3)],
    ),
    "space_to_batch": (lambda ns, x: ns.space_to_batch(x, [[1, 1], [0, 2]], 2), [(1, 4, 4, 2)]),
    "batch_to_space": (lambda ns, x: ns.batch_to_space(x, [[0, 1], [1, 0]], 2), [(8, 2, 3, 2)]),
    "nn.space_to_batch": (
        lambda ns, x: ns.nn.space_to_batch(x, [[0, 0], [1, 1]], block_size=2),
        [(1, 4, 4, 2)],
    ),
    "required_space_to_batch_paddings": (
        lambda ns: ns.required_space_to_batch_paddings([5, 7], [2, 3], [[1, 0], [2, 2]]),
        [],
    ),
    "with_space_to_batch-conv": (
        lambda ns, x, f: ns.nn.with_space_to_batch(
            x, [2, 2], "SAME", lambda t, n, p: ns.nn.conv2d(t, f, [1, 1, 1, 1], p), f.shape[:2]
        ),
        [(2, 9, 8, 3), (3, 3, 3, 2)],
    ),
}


def _inputs(shapes):
    return [
        s if isinstance(s, np.ndarray) else RNG.standard_normal(s).astype(np.float32)
        for s in shapes
    ]


def _run(ns, graph, session, gradients, fn, values, with_gradients=True):
    """fn's outputs and the gradients of sum(y * w) by its float inputs, as NumPy arrays."""
    with graph.as_default():
        inputs = [ns.constant(v) for v in values]
        out = fn(ns, *inputs)
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        floats = [t for t, v in zip(inputs, values) if v.dtype.kind == "f"]
        loss = None
        for k, y in enumerate(outs):
            if y.dtype.is_floating:
                shape = y.shape.as_list()
                w = np.random.default_rng(k).uniform(0.5, 1.5, shape).astype(np.float32)
                term = ns.reduce_sum(y * ns.constant(w))
                loss = term if loss is None else loss + term
        wanted = with_gradients and loss is not None and floats
        grads = gradients(loss, floats) if wanted else []
        with session() as sess:
            return sess.run(outs), sess.run(grads) if grads else []


@pytest.mark.parametrize("name", list(CASES))
def test_matches_tensorflow(name):
    fn, shapes, *no_gradients = CASES[name]
    values = _inputs(shapes)
    want, want_grads = _run(v1, tf.Graph(), v1.Session, v1.gradients, fn, values, not no_gradients)
    got, got_grads = _run(tfc, tfc.Graph(), tfc.Session, tfc.gradients, fn, values, True)
    assert len(got) == len(want)
    if no_gradients:
        got_grads = []
    assert len(got_grads) == len(want_grads)
    for a, b in zip(got, want):
        assert a.shape == b.shape and a.dtype == b.dtype, name
        scale = max(1.0, float(np.abs(b).max(initial=0)))
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5 * scale, err_msg=name)
    for a, b in zip(got_grads, want_grads):
        scale = max(1.0, float(np.abs(b).max(initial=0)))
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5 * scale, err_msg=f"{name} grad")
