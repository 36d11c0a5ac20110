"""The recurrent cells and RNN functions against real TensorFlow (needs tensorflow; skipped
without it): the same weights give the same outputs, final states and gradients; an LSTM
classifier trained in TensorFlow and saved with its Saver restores in tfc by TF1's variable
names (Adam's slots included) and predicts and trains on the same."""

import os

import numpy as np
import pytest

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # tf.nn.rnn_cell needs Keras 2
real_tf = pytest.importorskip("tensorflow")
v1 = real_tf.compat.v1

import tfc as tf  # noqa: E402

B, T, D = 4, 6, 3
RNG = np.random.default_rng(21)
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")


def _build(lib, nn, x_value, lengths_value):
    """Every cell kind through dynamic_rnn, bidirectional_dynamic_rnn and static_rnn; a
    loss over all of them; its gradients with respect to the inputs and every variable."""
    cells = nn.rnn_cell
    x = lib.constant(x_value)
    lengths = lib.constant(lengths_value)
    results = []
    out, st = nn.dynamic_rnn(cells.BasicLSTMCell(5, forget_bias=0.5), x, sequence_length=lengths,
                             dtype=lib.float32, scope="a")  # fmt: skip
    results += [out, st.c, st.h]
    lstm = cells.LSTMCell(5, use_peepholes=True, num_proj=3, cell_clip=0.6, proj_clip=0.4)
    out, st = nn.dynamic_rnn(lstm, x, dtype=lib.float32, scope="b")
    results += [out, st.c, st.h]
    multi = cells.MultiRNNCell([cells.GRUCell(4), cells.BasicRNNCell(3)])
    (fw, bw), (sf, sb) = nn.bidirectional_dynamic_rnn(
        multi, cells.GRUCell(2), x, sequence_length=lengths, dtype=lib.float32
    )
    results += [fw, bw, sf[0], sf[1], sb]
    outs, st = nn.static_rnn(cells.GRUCell(3), lib.unstack(x, axis=1), dtype=lib.float32,
                             sequence_length=lengths, scope="c")  # fmt: skip
    results += [lib.stack(outs, 1), st]
    loss = lib.add_n([lib.reduce_sum(r * r * (k + 1)) for k, r in enumerate(results)])
    variables = sorted(v1.global_variables() if lib is real_tf else tf.global_variables(),
                       key=lambda v: v.op.name)  # fmt: skip
    grads = lib.gradients(loss, [x, *variables])
    return results, grads, variables


def test_outputs_states_and_gradients_equal_tensorflows():
    x_value = RNG.standard_normal((B, T, D)).astype(np.float32)
    lengths_value = np.array([6, 3, 1, 0], np.int32)
    graph = real_tf.Graph()
    with graph.as_default():
        want_results, want_grads, tf_vars = _build(real_tf, v1.nn, x_value, lengths_value)
        with v1.Session(graph=graph) as sess:
            sess.run(v1.global_variables_initializer())
            values = {}
            for v in tf_vars:
                values[v.op.name] = (RNG.standard_normal(v.shape.as_list()) * 0.5).astype(
                    np.float32
                )
                v.load(values[v.op.name], sess)
            want = sess.run([want_results, want_grads])
    got_results, got_grads, variables = _build(tf, tf.nn, x_value, lengths_value)
    assert [v.op.name for v in variables] == [v.op.name for v in tf_vars]
    assert [v.shape.as_list() for v in variables] == [v.shape.as_list() for v in tf_vars]
    with tf.Session() as sess:
        sess.run(tf.group(*[tf.assign(v, values[v.op.name]) for v in variables]))
        got = sess.run([got_results, got_grads])
    for k, (g, w) in enumerate(zip(got[0], want[0])):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=f"result {k}")
    names = ["inputs"] + [v.op.name for v in variables]
    for name, g, w in zip(names, got[1], want[1]):
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-5, err_msg=f"gradient of {name}")


def _classifier(lib, nn, layers, x, y):
    cell = nn.rnn_cell.BasicLSTMCell(8)
    _, state = nn.dynamic_rnn(cell, x, dtype=lib.float32)
    logits = layers.dense(state.h, 3, name="logits")
    loss = lib.reduce_mean(nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    return logits, loss


def test_an_lstm_trained_in_tensorflow_restores_in_tfc(tmp_path):
    x_data = RNG.standard_normal((32, T, D)).astype(np.float32)
    labels = (x_data[:, :, 0].sum(1) > 0).astype(np.int32) + (x_data[:, -1, 1] > 0.5)
    labels = labels.astype(np.int32)
    prefix = str(tmp_path / "lstm.ckpt")
    graph = real_tf.Graph()
    with graph.as_default():
        v1.set_random_seed(4)
        x = v1.placeholder(real_tf.float32, [None, T, D])
        y = v1.placeholder(real_tf.int32, [None])
        logits, loss = _classifier(real_tf, v1.nn, v1.layers, x, y)
        train = v1.train.AdamOptimizer(0.02).minimize(loss)
        with v1.Session(graph=graph) as sess:
            sess.run(v1.global_variables_initializer())
            for _ in range(10):
                sess.run(train, {x: x_data, y: labels})
            v1.train.Saver().save(sess, prefix)
            want_logits = sess.run(logits, {x: x_data})
            for _ in range(5):
                sess.run(train, {x: x_data, y: labels})
            want_loss = sess.run(loss, {x: x_data, y: labels})
    x = tf.placeholder(tf.float32, [None, T, D])
    y = tf.placeholder(tf.int32, [None])
    logits, loss = _classifier(tf, tf.nn, tf.layers, x, y)
    train = tf.train.AdamOptimizer(0.02).minimize(loss)
    assert "rnn/basic_lstm_cell/kernel" in dict(tf.train.list_variables(prefix))
    with tf.Session() as sess:
        tf.train.Saver().restore(sess, prefix)
        np.testing.assert_allclose(sess.run(logits, {x: x_data}), want_logits, atol=1e-5)
        for _ in range(5):
            sess.run(train, {x: x_data, y: labels})
        np.testing.assert_allclose(sess.run(loss, {x: x_data, y: labels}), want_loss, rtol=1e-4)
