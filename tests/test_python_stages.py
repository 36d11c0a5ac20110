"""A Session running programs with Python stages: native stages compiled once per shape they are
handed, variables shared with the Session's other programs, training through value-dependent
ops, errors naming the user's node, and the same results from the reference interpreter."""

import numpy as np
import pytest
from cuda_devices import DEVICES

import tfc as tf
from tfc.client.python_stage import PythonStagedProgram
from tfc.passes.python_stage import NATIVE, PYTHON
from tfc.reference.interp import Interpreter
from tfc.tools.cli import main as tfc_main
from tfc.tools.inspect import graph_dot, run_graph


def _program(sess) -> PythonStagedProgram:
    programs = [p for p in sess._programs.values() if isinstance(p, PythonStagedProgram)]
    assert len(programs) == 1
    return programs[0]


def test_a_native_stage_is_compiled_once_per_shape_it_is_handed():
    x = tf.placeholder(tf.int32, [4], name="x")
    values, _ = tf.unique(x)
    squares = values * values
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(squares, {x: [1, 1, 2, 2]}), [1, 4])
        np.testing.assert_array_equal(sess.run(squares, {x: [3, 1, 2, 3]}), [9, 1, 4])
        np.testing.assert_array_equal(sess.run(squares, {x: [5, 5, 6, 6]}), [25, 36])
        staged = _program(sess)
    assert [s.device for s in staged.stages] == [PYTHON, NATIVE]
    assert sorted(staged.compiled[1]) == [((2,),), ((3,),)]  # two shapes: two compiles


def test_training_through_a_boolean_mask_updates_the_sessions_variables():
    w0 = np.array([0.5, -1.0, 2.0, -0.25], np.float32)
    w = tf.Variable(w0, name="w")
    loss = tf.reduce_sum(tf.square(tf.boolean_mask(w, w > 0)))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(loss) == pytest.approx(0.25 + 4.0)
        sess.run(train)
        got = sess.run(w)
    # d/dw sum(w^2 over w > 0) = 2w where w > 0, else 0
    np.testing.assert_allclose(got, w0 - 0.1 * np.where(w0 > 0, 2 * w0, 0), rtol=1e-6)


def test_an_uninitialized_variable_is_reported_as_in_tf():
    w = tf.Variable([1.0, 2.0], name="w")
    kept = tf.boolean_mask(w, [True, False])
    with (
        tf.Session() as sess,
        pytest.raises(
            tf.errors.FailedPreconditionError, match="Attempting to use uninitialized value w"
        ),
    ):
        sess.run(kept)


def test_stages_share_feeds_and_fetch_in_the_callers_structure():
    x = tf.placeholder(tf.float32, [None], name="x")
    positives = tf.boolean_mask(x, x > 0)
    count = tf.size(positives)
    mean = tf.reduce_mean(positives)
    label = tf.strings.join(["n=", tf.as_string(count)])
    feed = {x: np.array([3.0, -1.0, 5.0], np.float32)}
    with tf.Session() as sess:
        got = sess.run({"count": count, "mean": mean, "label": label, "x": x}, feed)
        again = sess.run({"count": count, "mean": mean, "label": label, "x": x}, feed)
    reference = Interpreter().run({"count": count, "mean": mean, "label": label, "x": x}, feed)
    for result in (got, again, reference):
        assert result["count"] == 2 and result["mean"] == pytest.approx(4.0)
        assert result["label"] == b"n=2"
        np.testing.assert_array_equal(result["x"], feed[x])


def test_a_python_stage_error_names_the_users_node():
    x = tf.placeholder(tf.float32, [2], name="x")
    parts = tf.dynamic_partition(x, tf.constant([0, 3]), 2, name="split_by_class")
    with (
        tf.Session() as sess,
        pytest.raises(
            tf.errors.InvalidArgumentError, match=r"partitions\[1\] = 3 is not in \[0, 2\)"
        ) as e,
    ):
        sess.run(parts[0], {x: [1.0, 2.0]})
    assert e.value.op.name == "split_by_class" and e.value.op.graph is tf.get_default_graph()


def test_a_native_stage_error_after_a_python_stage_names_its_node():
    x = tf.placeholder(tf.int32, [3], name="x")
    values, _ = tf.unique(x)
    picked = tf.gather(values, [5], name="pick")
    with (
        tf.Session() as sess,
        pytest.raises(
            tf.errors.InvalidArgumentError, match=r"indices\[0\] = 5 is not in \[0, 2\)"
        ) as e,
    ):
        sess.run(picked, {x: [1, 2, 1]})
    assert e.value.op.name == "pick"


def test_targets_and_control_dependencies_across_stages():
    x = tf.placeholder(tf.float32, [2], name="x")
    counter = tf.Variable(0.0, name="counter")
    seen = []
    record = tf.py_func(lambda v: seen.append(v.copy()) or np.float32(v.sum()), [x], tf.float32)
    with tf.control_dependencies([record]):
        bump = tf.assign_add(counter, 1.0)
    with tf.Session() as sess:
        sess.run(counter.initializer)
        sess.run(bump, {x: [1.0, 2.0]})
        sess.run(bump.op, {x: [3.0, 4.0]})
        assert sess.run(counter) == 2.0
    assert [v.tolist() for v in seen] == [[1.0, 2.0], [3.0, 4.0]]


def test_source_shows_python_stages_and_the_native_code_compiled_so_far():
    x = tf.placeholder(tf.float32, [3], name="x")
    y = tf.unique(x)[0] * 3.0
    with tf.Session() as sess:
        sess.run(y, {x: [1.0, 1.0, 2.0]})
        source = sess.source(y, {x: [1.0, 1.0, 2.0]})
    assert "stage 0: Python: " in source and "Unique (Unique)" in source
    assert "stage 1: native, inputs [(2,)]" in source and "tfc_run" in source


def test_time_runs_refuses_a_staged_program_clearly():
    x = tf.placeholder(tf.float32, [3], name="x")
    y = tf.unique(x)[0]
    with tf.Session() as sess, pytest.raises(ValueError, match="around ops only Python runs"):
        sess.time_runs(y, {x: [1.0, 2.0, 3.0]}, runs=2)


@pytest.mark.parametrize("cuda_device", DEVICES, indirect=True)
def test_python_stages_between_gpu_stages_train_as_on_the_cpu(cuda_device):
    """Ops on the GPU around value-dependent ones: each native stage is itself cut into host
    and GPU stages; the variables stay coherent across all of them."""
    x = tf.placeholder(tf.float32, [None], name="x")
    with tf.device("/gpu:0"):
        w = tf.Variable(np.ones(6, np.float32), name="w")
        kept = tf.boolean_mask(x * w, x > 1.0)
        loss = tf.reduce_sum(kept * 2.0)
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    feed = {x: np.arange(6, dtype=np.float32)}
    with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(loss, feed) == pytest.approx(28.0)
        sess.run(train, feed)
        got = sess.run(w)
    np.testing.assert_allclose(got, 1 - 0.1 * 2 * np.where(feed[x] > 1, feed[x], 0), rtol=1e-6)


def test_drawings_and_inspect_show_python_ops_and_refuse_them_clearly(tmp_path, capsys):
    x = tf.placeholder(tf.float32, [None], name="x")
    y = tf.py_func(np.sort, [x], tf.float32, name="sort_in_python")
    text = tf.strings.join(["n=", tf.as_string(tf.size(tf.unique(y)[0]))], name="label")
    dot = graph_dot(run_graph(text, {x: np.ones(3, np.float32)}, after="prune"))
    assert dot.count("runs in Python") == 4  # py_func, unique, as_string, join (not Size)
    assert 'tooltip="sort_in_python: it calls a Python function"' in dot
    model = tmp_path / "model.py"
    model.write_text(
        "import numpy as np\nimport tfc as tf\n\n\ndef signatures():\n"
        "    f = tf.placeholder(tf.float32, [None, 2], name='features')\n"
        "    y = tf.py_func(np.sort, [f], tf.float32, name='sort_in_python')\n"
        "    return {'predict': {'inputs': {'features': f}, 'outputs': {'y': y}}}\n"
    )
    assert tfc_main(["inspect", str(model), "--signature", "predict"]) == 1
    assert "Op 'sort_in_python' (type PyFunc) cannot be compiled" in capsys.readouterr().err
