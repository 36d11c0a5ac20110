"""TF1's session-configuration names: GraphOptions/OptimizerOptions in a ConfigProto (the
passes they switch off), tf.config's devices and threads, the RunMetadata / MetaGraphDef
messages, and tf.timestamp."""

import time

import numpy as np
import pytest

import tfc as tf
from tfc.client.config import compile_options


def test_optimizer_options_switch_off_folding_and_cse():
    level_zero = tf.OptimizerOptions(opt_level=tf.OptimizerOptions.L0)
    config = tf.ConfigProto(graph_options=tf.GraphOptions(optimizer_options=level_zero))
    assert set(compile_options(config).disable) == {"fold", "cse"}
    config.graph_options.optimizer_options.do_constant_folding = True
    assert compile_options(config).disable == ("cse",)
    assert compile_options(tf.ConfigProto()).disable == ()  # L1, TF's default: everything on
    tf.reset_default_graph()
    x = tf.placeholder(tf.float32, [3])
    y = x * (tf.constant(2.0) + 1.0) + x * (tf.constant(2.0) + 1.0)
    with tf.Session(config=config) as sess:
        np.testing.assert_allclose(sess.run(y, {x: [1.0, 2.0, 3.0]}), [6.0, 12.0, 18.0])


def test_config_devices_and_threads():
    assert [d.device_type for d in tf.config.list_physical_devices("CPU")] == ["CPU"]
    assert tf.config.list_logical_devices("CPU")[0].name == "/device:CPU:0"
    assert tf.config.get_visible_devices("XPU") == []
    threading = tf.config.threading
    before = threading.get_intra_op_parallelism_threads()
    try:
        threading.set_intra_op_parallelism_threads(3)
        assert threading.get_intra_op_parallelism_threads() == 3
        threading.set_inter_op_parallelism_threads(2)
        assert threading.get_inter_op_parallelism_threads() == 2
        with pytest.raises(ValueError, match="non-negative int"):
            threading.set_intra_op_parallelism_threads(-1)
    finally:
        threading.set_intra_op_parallelism_threads(before)
        threading.set_inter_op_parallelism_threads(0)


def test_messages_round_trip_through_the_wire_format():
    info = tf.TensorInfo(name="x:0", dtype=1)
    info.tensor_shape.dim.add(size=3)
    meta = tf.MetaGraphDef()
    meta.meta_info_def.tags.append("serve")
    meta.signature_def["predict"].inputs["x"].CopyFrom(info)
    meta.saver_def.max_to_keep = 4
    parsed = tf.MetaGraphDef.FromString(meta.SerializeToString())
    assert parsed.signature_def["predict"].inputs["x"].name == "x:0"
    assert parsed.signature_def["predict"].inputs["x"].tensor_shape.dim[0].size == 3
    assert list(parsed.meta_info_def.tags) == ["serve"] and parsed.saver_def.max_to_keep == 4
    run_metadata = tf.RunMetadata()
    run_metadata.step_stats.dev_stats.add(device="/device:CPU:0")
    again = tf.RunMetadata.FromString(run_metadata.SerializeToString())
    assert again.step_stats.dev_stats[0].device == "/device:CPU:0"
    assert tf.GPUOptions(allow_growth=True).allow_growth


def test_tf_parses_the_messages_tfc_writes():
    tf_real = pytest.importorskip("tensorflow")
    meta = tf.MetaGraphDef()
    meta.signature_def["predict"].inputs["x"].name = "x:0"
    meta.saver_def.version = tf.MetaGraphDef().saver_def.V2
    theirs = tf_real.compat.v1.MetaGraphDef.FromString(meta.SerializeToString())
    assert theirs.signature_def["predict"].inputs["x"].name == "x:0"
    assert theirs.saver_def.version == 2
    options = tf.GraphOptions(optimizer_options=tf.OptimizerOptions(opt_level=-1))
    parsed = tf_real.compat.v1.GraphOptions.FromString(options.SerializeToString())
    assert parsed.optimizer_options.opt_level == tf_real.compat.v1.OptimizerOptions.L0


def test_timestamp_reads_the_clock_at_each_run():
    tf.reset_default_graph()
    stamp = tf.timestamp()
    assert stamp.dtype == tf.float64 and stamp.shape.as_list() == []
    with tf.Session() as sess:
        before = time.time()
        first = sess.run(stamp)
        time.sleep(0.01)
        second = sess.run(stamp)
        after = time.time()
    assert before - 1e-3 <= first < second <= after + 1e-3
