"""tf.nn.rnn_cell and the RNN functions: every cell's outputs and states against TF1's formulas
in NumPy (fixed weights, 1e-5), through static_rnn, dynamic_rnn (sequence_length, time_major,
initial_state) and both bidirectional forms; TF1's variable names and shapes; gradients of the
loop against the same steps unrolled and against finite differences; dropout; errors."""

from __future__ import annotations

import numpy as np
import pytest

import tfc as tf

RNG = np.random.default_rng(15)
B, T, D = 3, 5, 4  # batch, time steps, input depth


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


# -- the cells in NumPy, TF1's formulas ------------------------------------------------------------
def np_basic_rnn(w, x, h):
    h = np.tanh(np.concatenate([x, h], 1) @ w["kernel"] + w["bias"])
    return h, h


def np_gru(w, x, h):
    r, u = np.split(sigmoid(np.concatenate([x, h], 1) @ w["gates/kernel"] + w["gates/bias"]), 2, 1)
    c = np.tanh(np.concatenate([x, r * h], 1) @ w["candidate/kernel"] + w["candidate/bias"])
    h = u * h + (1 - u) * c
    return h, h


def np_basic_lstm(w, x, state, forget_bias=1.0):
    c, h = state
    i, j, f, o = np.split(np.concatenate([x, h], 1) @ w["kernel"] + w["bias"], 4, 1)
    c = c * sigmoid(f + forget_bias) + sigmoid(i) * np.tanh(j)
    h = np.tanh(c) * sigmoid(o)
    return h, (c, h)


def np_lstm(w, x, state, forget_bias=1.0, peep=False, cell_clip=None, proj=False, proj_clip=None):
    c, m = state
    i, j, f, o = np.split(np.concatenate([x, m], 1) @ w["kernel"] + w["bias"], 4, 1)
    if peep:
        c = sigmoid(f + forget_bias + w["w_f_diag"] * c) * c + sigmoid(
            i + w["w_i_diag"] * c
        ) * np.tanh(j)
    else:
        c = sigmoid(f + forget_bias) * c + sigmoid(i) * np.tanh(j)
    if cell_clip is not None:
        c = np.clip(c, -cell_clip, cell_clip)
    m = sigmoid(o + w["w_o_diag"] * c) * np.tanh(c) if peep else sigmoid(o) * np.tanh(c)
    if proj:
        m = m @ w["projection/kernel"]
        if proj_clip is not None:
            m = np.clip(m, -proj_clip, proj_clip)
    return m, (c, m)


def np_run(step, xs, state, lengths=None):
    """Steps over xs [T, B, D]; past an example's length: zero output, state carried."""
    outputs = []
    for t, x in enumerate(xs):
        out, new = step(x, state)
        if lengths is not None:
            done = (t >= lengths)[:, None]
            out = np.where(done, 0.0, out)
            new = _map(lambda old, n, done=done: np.where(done, old, n), state, new)
        outputs.append(out)
        state = new
    return np.stack(outputs), state


def _map(fn, a, b):
    if isinstance(a, tuple):
        return tuple(_map(fn, x, y) for x, y in zip(a, b))
    return fn(a, b)


def np_reverse(xs, lengths):
    out = xs.copy()
    for b, n in enumerate(lengths):
        out[:n, b] = xs[:n, b][::-1]
    return out


def cell_weights(sess, cell) -> dict:
    """The cell's weights by the name after its scope: {"kernel": ..., "gates/bias": ...}."""
    scope = cell.scope_name + "/"  # read from the session's state: no program to compile
    return {v.op.name[len(scope) :]: sess.read_variable(v.op.name) for v in cell.weights}


def randomize(sess, variables, scale=0.6):
    """Every variable set to random values (biases too, which TF1 starts at zero), written from
    Python: no initializer or program of assignments to compile."""
    for v in variables:
        value = (RNG.standard_normal(v.shape.as_list()) * scale).astype(np.float32)
        sess.write_variable(v.op.name, value)


# -- one graph holding every case, compiled once --------------------------------------------------
@pytest.fixture(scope="module")
def cases():
    graph = tf.Graph()
    xs = RNG.standard_normal((T, B, D)).astype(np.float32)  # time major
    lengths = np.array([5, 2, 0], np.int32)
    built = {}
    with graph.as_default():
        x_tm = tf.placeholder(tf.float32, [T, None, D], name="x_time_major")
        x_bm = tf.transpose(x_tm, [1, 0, 2])
        seq = tf.placeholder(tf.int32, [None], name="lengths")
        steps = tf.unstack(x_tm, T)

        def add(name, cell, outputs, state, **info):
            built[name] = dict(cell=cell, outputs=outputs, state=state, **info)

        cell = tf.nn.rnn_cell.BasicRNNCell(6)
        add("basic_rnn-dynamic", cell, *tf.nn.dynamic_rnn(cell, x_bm, dtype=tf.float32))
        cell = tf.nn.rnn_cell.GRUCell(5)
        add("gru-static", cell, *tf.nn.static_rnn(cell, steps, dtype=tf.float32, scope="g"))
        cell = tf.nn.rnn_cell.BasicLSTMCell(6, forget_bias=0.5)
        h0 = tf.nn.rnn_cell.LSTMStateTuple(tf.fill([B, 6], 0.3), tf.fill([B, 6], -0.2))
        add(
            "basic_lstm-dynamic-time_major-initial_state",
            cell,
            *tf.nn.dynamic_rnn(cell, x_tm, initial_state=h0, time_major=True, scope="lstm_tm"),
            initial=(np.full((B, 6), 0.3), np.full((B, 6), -0.2)),
        )
        cell = tf.nn.rnn_cell.BasicLSTMCell(4, state_is_tuple=False)
        add(
            "basic_lstm-concat-dynamic-lengths",
            cell,
            *tf.nn.dynamic_rnn(cell, x_bm, sequence_length=seq, dtype=tf.float32, scope="lc"),
        )
        cell = tf.nn.rnn_cell.LSTMCell(
            6, use_peepholes=True, cell_clip=0.4, num_proj=3, proj_clip=0.25, forget_bias=0.7
        )
        add(
            "lstm-peep-proj-clip-static-lengths",
            cell,
            *tf.nn.static_rnn(cell, steps, dtype=tf.float32, sequence_length=seq, scope="lp"),
        )
        cells = [tf.nn.rnn_cell.BasicLSTMCell(5), tf.nn.rnn_cell.GRUCell(3)]
        cell = tf.nn.rnn_cell.MultiRNNCell(cells)
        add("multi-dynamic", cell, *tf.nn.dynamic_rnn(cell, x_bm, dtype=tf.float32))
        fw, bw = tf.nn.rnn_cell.BasicLSTMCell(4), tf.nn.rnn_cell.GRUCell(3)
        (out_fw, out_bw), (st_fw, st_bw) = tf.nn.bidirectional_dynamic_rnn(
            fw, bw, x_bm, sequence_length=seq, dtype=tf.float32
        )
        add("bidirectional-dynamic-fw", fw, out_fw, st_fw)
        add("bidirectional-dynamic-bw", bw, out_bw, st_bw)
        fw, bw = tf.nn.rnn_cell.BasicRNNCell(3), tf.nn.rnn_cell.BasicRNNCell(2)
        outs, st_fw, st_bw = tf.nn.static_bidirectional_rnn(
            fw, bw, steps, dtype=tf.float32, sequence_length=seq, scope="sbi"
        )
        add("bidirectional-static", (fw, bw), outs, (st_fw, st_bw))
        variables = tf.global_variables()
        with tf.Session() as sess:
            randomize(sess, variables)  # every variable: none is left to initialize
            feed = {x_tm: xs, seq: lengths}
            results = sess.run({k: (v["outputs"], v["state"]) for k, v in built.items()}, feed)
            for v in built.values():
                cells = v["cell"] if isinstance(v["cell"], tuple) else (v["cell"],)
                v["weights"] = [
                    [cell_weights(sess, c) for c in cell._cells]
                    if isinstance(c, tf.nn.rnn_cell.MultiRNNCell)
                    else cell_weights(sess, c)
                    for c in cells
                ]
        names = {v.op.name: v.shape.as_list() for v in variables}
    return dict(built=built, results=results, xs=xs, lengths=lengths, names=names)


def _zeros(n):
    return np.zeros((B, n))


def _expect(name, c):
    """(outputs [T, B, n] time major, final state) by NumPy for case `name`."""
    xs, lengths, w = c["xs"].astype(np.float64), c["lengths"], c["built"][name]["weights"]
    if name == "basic_rnn-dynamic":
        return np_run(lambda x, s: np_basic_rnn(w[0], x, s), xs, _zeros(6))
    if name == "gru-static":
        return np_run(lambda x, s: np_gru(w[0], x, s), xs, _zeros(5))
    if name.startswith("basic_lstm-dynamic-time_major"):
        init = c["built"][name]["initial"]
        return np_run(lambda x, s: np_basic_lstm(w[0], x, s, 0.5), xs, init)
    if name == "basic_lstm-concat-dynamic-lengths":

        def step(x, s):
            out, (cc, h) = np_basic_lstm(w[0], x, (s[:, :4], s[:, 4:]))
            return out, np.concatenate([cc, h], 1)

        return np_run(step, xs, _zeros(8), lengths)
    if name == "lstm-peep-proj-clip-static-lengths":

        def step(x, s):
            return np_lstm(w[0], x, s, 0.7, peep=True, cell_clip=0.4, proj=True, proj_clip=0.25)

        return np_run(step, xs, (_zeros(6), _zeros(3)), lengths)
    if name == "multi-dynamic":
        (lstm_w, gru_w) = w[0]

        def step(x, s):
            h, s0 = np_basic_lstm(lstm_w, x, s[0])
            h, s1 = np_gru(gru_w, h, s[1])
            return h, (s0, s1)

        return np_run(step, xs, ((_zeros(5), _zeros(5)), _zeros(3)))
    if name == "bidirectional-dynamic-fw":
        return np_run(lambda x, s: np_basic_lstm(w[0], x, s), xs, (_zeros(4), _zeros(4)), lengths)
    if name == "bidirectional-dynamic-bw":
        out, st = np_run(lambda x, s: np_gru(w[0], x, s), np_reverse(xs, lengths), _zeros(3),
                         lengths)  # fmt: skip
        return np_reverse(out, lengths), st
    if name == "bidirectional-static":
        out_f, st_f = np_run(lambda x, s: np_basic_rnn(w[0], x, s), xs, _zeros(3), lengths)
        out_b, st_b = np_run(
            lambda x, s: np_basic_rnn(w[1], x, s), np_reverse(xs, lengths), _zeros(2), lengths
        )
        return np.concatenate([out_f, np_reverse(out_b, lengths)], 2), (st_f, st_b)
    raise KeyError(name)


def _flat(x):
    if isinstance(x, (tuple, list)) and not isinstance(x, np.ndarray):
        return [a for item in x for a in _flat(item)]
    return [np.asarray(x)]


CASES = [
    "basic_rnn-dynamic",
    "gru-static",
    "basic_lstm-dynamic-time_major-initial_state",
    "basic_lstm-concat-dynamic-lengths",
    "lstm-peep-proj-clip-static-lengths",
    "multi-dynamic",
    "bidirectional-dynamic-fw",
    "bidirectional-dynamic-bw",
    "bidirectional-static",
]


@pytest.mark.parametrize("name", CASES)
def test_outputs_and_final_state_match_tf1_formulas(cases, name):
    outputs, state = cases["results"][name]
    want_out, want_state = _expect(name, cases)
    if isinstance(outputs, list):  # static: a list of [B, n] per step
        outputs = np.stack(outputs)
    elif "time_major" not in name:
        outputs = np.transpose(outputs, [1, 0, 2])
    np.testing.assert_allclose(outputs, want_out, rtol=1e-5, atol=1e-5)
    got, want = _flat(state), _flat(want_state)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_variables_have_tf1_names_and_shapes(cases):
    names = cases["names"]
    expected = {
        "rnn/basic_rnn_cell/kernel": [D + 6, 6],
        "rnn/basic_rnn_cell/bias": [6],
        "g/gru_cell/gates/kernel": [D + 5, 10],
        "g/gru_cell/gates/bias": [10],
        "g/gru_cell/candidate/kernel": [D + 5, 5],
        "g/gru_cell/candidate/bias": [5],
        "lstm_tm/basic_lstm_cell/kernel": [D + 6, 24],
        "lstm_tm/basic_lstm_cell/bias": [24],
        "lc/basic_lstm_cell/kernel": [D + 4, 16],
        "lp/lstm_cell/kernel": [D + 3, 24],
        "lp/lstm_cell/bias": [24],
        "lp/lstm_cell/w_f_diag": [6],
        "lp/lstm_cell/w_i_diag": [6],
        "lp/lstm_cell/w_o_diag": [6],
        "lp/lstm_cell/projection/kernel": [6, 3],
        "rnn/multi_rnn_cell/cell_0/basic_lstm_cell/kernel": [D + 5, 20],
        "rnn/multi_rnn_cell/cell_1/gru_cell/gates/kernel": [5 + 3, 6],
        "bidirectional_rnn/fw/basic_lstm_cell/kernel": [D + 4, 16],
        "bidirectional_rnn/bw/gru_cell/candidate/bias": [3],
        "sbi/fw/basic_rnn_cell/kernel": [D + 3, 3],
        "sbi/bw/basic_rnn_cell/kernel": [D + 2, 2],
    }
    for name, shape in expected.items():
        assert names.get(name) == shape, (name, names.get(name), sorted(names))
    assert len(names) == 32


def test_dynamic_rnn_gradients_equal_static_rnn_and_finite_differences():
    """An LSTM in float64: the gradients of the while loop equal those of the same steps
    unrolled, and central differences of the loss."""
    x_value = RNG.standard_normal((2, 4, 3))
    lengths_value = np.array([4, 2], np.int32)
    x = tf.placeholder(tf.float64, [2, 4, 3])
    lengths = tf.placeholder(tf.int32, [2])
    weights = tf.placeholder(tf.float64, [2, 4, 5])  # the loss's weights of each output
    cell_d = tf.nn.rnn_cell.LSTMCell(5, use_peepholes=True, dtype=tf.float64)
    cell_s = tf.nn.rnn_cell.LSTMCell(5, use_peepholes=True, dtype=tf.float64)
    out_d, st_d = tf.nn.dynamic_rnn(cell_d, x, sequence_length=lengths, dtype=tf.float64)
    outs, st_s = tf.nn.static_rnn(
        cell_s, tf.unstack(x, axis=1), sequence_length=lengths, dtype=tf.float64, scope="s"
    )
    out_s = tf.stack(outs, 1)
    loss_d = tf.reduce_sum(out_d * weights) + tf.reduce_sum(st_d.c * st_d.c)
    loss_s = tf.reduce_sum(out_s * weights) + tf.reduce_sum(st_s.c * st_s.c)
    grads_d = tf.gradients(loss_d, [x, *cell_d.weights])
    grads_s = tf.gradients(loss_s, [x, *cell_s.weights])
    w_value = RNG.standard_normal((2, 4, 5))
    feed = {x: x_value, lengths: lengths_value, weights: w_value}
    # the cells' weights are all the variables: written from Python, both cells the same values
    # (an initializer and a program of assignments would be two more programs to compile)
    names = [v.op.name for v in tf.global_variables()]
    assert sorted(names) == sorted(w.op.name for w in [*cell_d.weights, *cell_s.weights])
    with tf.Session() as sess:
        for a, b in zip(cell_d.weights, cell_s.weights):
            value = RNG.standard_normal(a.shape.as_list()) * 0.5
            sess.write_variable(a.op.name, value)
            sess.write_variable(b.op.name, value)
        got_d, got_s = sess.run([grads_d, grads_s], feed)
        for g_d, g_s in zip(got_d, got_s):
            np.testing.assert_allclose(g_d, g_s, rtol=1e-10, atol=1e-12)
        h = 1e-6
        flat = x_value.ravel()
        for k in RNG.choice(flat.size, 6, replace=False):
            moved = [flat.copy(), flat.copy()]
            moved[0][k] += h
            moved[1][k] -= h
            up, down = (sess.run(loss_d, {**feed, x: m.reshape(x_value.shape)}) for m in moved)
            assert got_d[0].ravel()[k] == pytest.approx((up - down) / (2 * h), rel=1e-6, abs=1e-8)
    # steps past an example's length pass no gradient to its inputs
    assert np.all(got_d[0][1, 2:] == 0)


def test_dropout_wrapper():
    """keep 1.0 leaves the cell as it is; otherwise outputs are 0 or scaled by 1/keep, new
    masks each step; variational masks are one per run; an LSTM's c is never dropped."""
    x = tf.ones([64, 6, 8])
    plain = tf.nn.rnn_cell.BasicRNNCell(8, activation=tf.identity)
    same = tf.nn.rnn_cell.DropoutWrapper(plain, input_keep_prob=1.0, output_keep_prob=1.0)
    out_plain, _ = tf.nn.dynamic_rnn(plain, x, dtype=tf.float32, scope="p")
    out_same, _ = tf.nn.dynamic_rnn(same, x, dtype=tf.float32, scope="p")
    ident = tf.nn.rnn_cell.BasicRNNCell(8, activation=tf.identity)
    drop = tf.nn.rnn_cell.DropoutWrapper(ident, output_keep_prob=0.5, seed=3)
    out_drop, _ = tf.nn.dynamic_rnn(drop, x, dtype=tf.float32, scope="d")
    out_ident, _ = tf.nn.dynamic_rnn(ident, x, dtype=tf.float32, scope="d")
    var = tf.nn.rnn_cell.DropoutWrapper(
        tf.nn.rnn_cell.BasicLSTMCell(8), state_keep_prob=0.5, output_keep_prob=0.5,
        variational_recurrent=True, dtype=tf.float32, seed=5,
    )  # fmt: skip
    out_var, st_var = tf.nn.dynamic_rnn(var, x, dtype=tf.float32, scope="v")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        a, b, d, i, v, c = sess.run([out_plain, out_same, out_drop, out_ident, out_var, st_var])
    np.testing.assert_array_equal(a, b)
    kept = d != 0
    np.testing.assert_allclose(d[kept], 2 * i[kept], rtol=1e-6)
    assert 0.4 < kept.mean() < 0.6
    assert not np.array_equal(kept[:, 0], kept[:, 1])  # a new mask each step
    zero = v == 0
    assert np.array_equal(zero[:, 0], zero[:, 3])  # one variational mask for every step
    assert np.array_equal(zero[0], zero[1])  # and every example (shape [1, size])
    assert 0 < zero.mean() < 1
    assert np.all(c.c != 0)  # c is carried undropped


def test_errors():
    x = tf.placeholder(tf.float32, [2, 3, 4])
    cell = tf.nn.rnn_cell.BasicLSTMCell(3)
    with pytest.raises(ValueError, match="you must give a dtype"):
        tf.nn.dynamic_rnn(cell, x)
    with pytest.raises(ValueError, match="sequence_length must be a vector"):
        tf.nn.dynamic_rnn(cell, x, sequence_length=[[1, 2]], dtype=tf.float32)
    with pytest.raises(ValueError, match=r"Input size \(depth of inputs\) must be accessible"):
        tf.nn.dynamic_rnn(cell, tf.placeholder(tf.float32, [2, 3, None]), dtype=tf.float32)
    with pytest.raises(TypeError, match="inputs must be a sequence"):
        tf.nn.static_rnn(cell, x, dtype=tf.float32)
    with pytest.raises(TypeError, match="cell must be an instance of RNNCell"):
        tf.nn.dynamic_rnn(lambda a, b: a, x, dtype=tf.float32)
    with pytest.raises(ValueError, match="Parameter output_keep_prob must be between 0 and 1"):
        tf.nn.rnn_cell.DropoutWrapper(cell, output_keep_prob=1.5)
    with pytest.raises(ValueError, match="are the same object"):
        tf.nn.rnn_cell.MultiRNNCell([cell, cell])
    with pytest.raises(ValueError, match="Time steps is not the same"):
        tf.nn.dynamic_rnn(
            tf.nn.rnn_cell.GRUCell(2), (x, tf.zeros([2, 4, 1])), dtype=tf.float32, scope="e"
        )


def test_contrib_rnn_and_tf_nn_share_the_classes():
    assert tf.contrib.rnn.BasicLSTMCell is tf.nn.rnn_cell.BasicLSTMCell
    assert tf.contrib.rnn.LSTMStateTuple is tf.nn.rnn_cell.LSTMStateTuple
    assert tf.contrib.rnn.static_rnn is tf.nn.static_rnn
    state = tf.nn.rnn_cell.BasicLSTMCell(3).zero_state(2, tf.float32)
    assert isinstance(state, tf.nn.rnn_cell.LSTMStateTuple) and state.dtype == tf.float32
    assert state.c.shape.as_list() == [2, 3]
    multi = tf.nn.rnn_cell.MultiRNNCell(
        [tf.nn.rnn_cell.GRUCell(2), tf.nn.rnn_cell.BasicLSTMCell(3)], state_is_tuple=True
    )
    assert multi.state_size == (2, tf.nn.rnn_cell.LSTMStateTuple(3, 3))
    assert multi.output_size == 3
