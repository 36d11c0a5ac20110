"""tf.nn.conv_transpose, tf.nn.batch_norm_with_global_normalization and
tf.train.generate_checkpoint_state_proto: the same numbers and fields as the functions they
spell differently, and, where TensorFlow is importable, as tf.compat.v1's."""

import os

import numpy as np
import pytest

import tfc as tf

RNG = np.random.default_rng(30)
X1, F1 = RNG.standard_normal((2, 5, 3)), RNG.standard_normal((3, 4, 3))
X2, F2 = RNG.standard_normal((2, 4, 4, 3)), RNG.standard_normal((2, 2, 4, 3))
X3, F3 = RNG.standard_normal((1, 3, 3, 3, 2)), RNG.standard_normal((2, 2, 2, 3, 2))
T = RNG.standard_normal((3, 4))
M, V = RNG.standard_normal(4), RNG.random(4) + 0.5
BETA, GAMMA = RNG.standard_normal(4), RNG.standard_normal(4)


def _graph(tf_mod):
    nn = tf_mod.nn
    return [
        nn.conv_transpose(X1, F1, [2, 10, 4], 2),
        nn.conv_transpose(X2, F2, [2, 8, 8, 4], [1, 2, 2, 1], padding="VALID"),
        nn.conv_transpose(X3, F3, [1, 6, 6, 6, 3], 2),
        nn.batch_norm_with_global_normalization(T, M, V, BETA, GAMMA, 1e-3, True),
        nn.batch_norm_with_global_normalization(
            input=T, mean=M, variance=V, beta=BETA, gamma=GAMMA, variance_epsilon=1e-3,
            scale_after_normalization=False,
        ),
    ]  # fmt: skip


def test_aliases_compute_what_they_alias():
    same = [
        tf.nn.conv1d_transpose(X1, F1, [2, 10, 4], 2),
        tf.nn.conv2d_transpose(X2, F2, [2, 8, 8, 4], [1, 2, 2, 1], padding="VALID"),
        tf.nn.conv3d_transpose(X3, F3, [1, 6, 6, 6, 3], [1, 2, 2, 2, 1]),
    ]
    with tf.Session() as sess:
        got, want = sess.run([_graph(tf), same])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    np.testing.assert_allclose(got[3], (T - M) / np.sqrt(V + 1e-3) * GAMMA + BETA, rtol=1e-10)
    np.testing.assert_allclose(got[4], (T - M) / np.sqrt(V + 1e-3) + BETA, rtol=1e-10)
    with pytest.raises(ValueError, match="must be of length 3, 4 or 5"):
        tf.nn.conv_transpose(X2, F2, [2, 8], 2)


def test_checkpoint_state_proto():
    state = tf.train.generate_checkpoint_state_proto(
        "run", "run/model-20", all_model_checkpoint_paths=["run/model-10", "/abs/model-5"]
    )
    assert state.model_checkpoint_path == "model-20"
    assert state.all_model_checkpoint_paths == ["model-10", "/abs/model-5", "model-20"]
    absolute = tf.train.generate_checkpoint_state_proto(os.sep + "d", "m-1")
    assert absolute.all_model_checkpoint_paths == ["m-1"]
    with pytest.raises(ValueError, match="must match checkpoint paths"):
        tf.train.generate_checkpoint_state_proto("d", "m-1", all_model_checkpoint_timestamps=[1, 2])


def test_match_tensorflow():
    real = pytest.importorskip("tensorflow")
    v1 = real.compat.v1
    v1.disable_eager_execution()
    with v1.Graph().as_default(), v1.Session() as sess:
        want = sess.run(_graph(v1))
    with tf.Session() as sess:
        got = sess.run(_graph(tf))
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12, err_msg=f"output {k}")
    paths = ["run/model-10", "/abs/model-5"]
    theirs = v1.train.generate_checkpoint_state_proto("run", "run/model-20", list(paths))
    ours = tf.train.generate_checkpoint_state_proto("run", "run/model-20", list(paths))
    assert ours.model_checkpoint_path == theirs.model_checkpoint_path
    assert ours.all_model_checkpoint_paths == list(theirs.all_model_checkpoint_paths)


def test_nchw_conv2d_and_pools_equal_nhwc_transposed():
    x = RNG.standard_normal((2, 7, 6, 3))
    f = RNG.standard_normal((3, 2, 3, 4))
    nchw = tf.constant(x.transpose(0, 3, 1, 2))
    nhwc = tf.constant(x)
    pairs = [
        (tf.nn.conv2d(nchw, f, [1, 1, 2, 1], "SAME", data_format="NCHW"),
         tf.nn.conv2d(nhwc, f, [1, 2, 1, 1], "SAME")),
        (tf.nn.conv2d(nchw, f, 1, "VALID", data_format="NCHW", dilations=[1, 1, 2, 2]),
         tf.nn.conv2d(nhwc, f, 1, "VALID", dilations=2)),
        (tf.nn.max_pool(nchw, [1, 1, 3, 2], [1, 1, 2, 2], "SAME", data_format="NCHW"),
         tf.nn.max_pool(nhwc, [1, 3, 2, 1], [1, 2, 2, 1], "SAME")),
        (tf.nn.avg_pool(nchw, 2, 2, "SAME", data_format="NCHW"),
         tf.nn.avg_pool(nhwc, 2, 2, "SAME")),
    ]  # fmt: skip
    (grad,) = tf.gradients(tf.reduce_sum(tf.sin(pairs[0][0])), nchw)
    (want_grad,) = tf.gradients(tf.reduce_sum(tf.sin(pairs[0][1])), nhwc)
    with tf.Session() as sess:
        got, want, g, wg = sess.run([[p[0] for p in pairs], [p[1] for p in pairs], grad, want_grad])
    for k, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b.transpose(0, 3, 1, 2), rtol=1e-12, err_msg=f"pair {k}")
    np.testing.assert_allclose(g, wg.transpose(0, 3, 1, 2), rtol=1e-12)
