"""Checkpoints written by real TensorFlow restore in tfc and predict the same (needs tensorflow).

Each test makes its checkpoint with TensorFlow's own tf.compat.v1.train.Saver in tmp_path: no
fixture is checked in. Without tensorflow the module is skipped; tests/test_tensor_bundle.py
covers the reader there.
"""

import os

import numpy as np
import pytest

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # tf.compat.v1.layers needs Keras 2
real_tf = pytest.importorskip("tensorflow")
v1 = real_tf.compat.v1

import tfc as tf  # noqa: E402
from tfc.io.checkpoint import CorruptCheckpointError, TensorBundleReader  # noqa: E402

FEATURES, HIDDEN, CLASSES = 5, 16, 3
pytestmark = pytest.mark.filterwarnings("ignore:`tf.layers.dense` is deprecated:UserWarning")


def _data(n: int = 64, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, FEATURES)).astype(np.float32)
    labels = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0.5).astype(np.int64)
    return x, labels


def _train_in_tensorflow(prefix: str, optimizer: str, steps: int) -> dict:
    """Train a 2-layer dense net with TF1's graph API and save it; returns its predictions,
    the values it saved, and (for continued training) the loss after `steps` more steps."""
    x_data, labels = _data()
    graph = real_tf.Graph()
    with graph.as_default():
        v1.set_random_seed(3)
        x = v1.placeholder(real_tf.float32, [None, FEATURES], name="x")
        y = v1.placeholder(real_tf.int64, [None], name="y")
        hidden = v1.layers.dense(x, HIDDEN, activation=real_tf.nn.relu)
        logits = v1.layers.dense(hidden, CLASSES)
        loss = v1.losses.sparse_softmax_cross_entropy(y, logits)
        step = v1.train.get_or_create_global_step()
        opt = (
            v1.train.AdamOptimizer(0.01)
            if optimizer == "adam"
            else v1.train.GradientDescentOptimizer(0.1)
        )
        train = opt.minimize(loss, global_step=step)
        saver = v1.train.Saver()
        with v1.Session(graph=graph) as sess:
            sess.run(v1.global_variables_initializer())
            for _ in range(steps):
                sess.run(train, {x: x_data, y: labels})
            saver.save(sess, prefix)
            predictions = sess.run(logits, {x: x_data})
            saved = {v.op.name: sess.run(v) for v in v1.global_variables()}
            for _ in range(steps):
                sess.run(train, {x: x_data, y: labels})
            later_loss = sess.run(loss, {x: x_data, y: labels})
    return {"predictions": predictions, "saved": saved, "later_loss": later_loss}


def _build_in_tfc(optimizer: str):
    x = tf.placeholder(tf.float32, [None, FEATURES], name="x")
    y = tf.placeholder(tf.int64, [None], name="y")
    hidden = tf.layers.dense(x, HIDDEN, activation=tf.nn.relu)
    logits = tf.layers.dense(hidden, CLASSES)
    loss = tf.losses.sparse_softmax_cross_entropy(y, logits)
    step = tf.train.get_or_create_global_step()
    opt = (
        tf.train.AdamOptimizer(0.01)
        if optimizer == "adam"
        else tf.train.GradientDescentOptimizer(0.1)
    )
    train = opt.minimize(loss, global_step=step)
    return x, y, logits, loss, train, step


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_a_model_trained_in_tensorflow_predicts_the_same_in_tfc(tmp_path, optimizer):
    prefix = str(tmp_path / "model.ckpt")
    steps = 20
    trained = _train_in_tensorflow(prefix, optimizer, steps)

    # tfc lists and reads every tensor as TensorFlow's own reader does, bit for bit
    assert tf.train.list_variables(str(tmp_path)) == v1.train.list_variables(prefix)
    tf_reader = v1.train.NewCheckpointReader(prefix)
    with tf.train.NewCheckpointReader(prefix) as reader:
        assert reader.get_variable_to_shape_map() == tf_reader.get_variable_to_shape_map()
        for name in tf_reader.get_variable_to_shape_map():
            want = tf_reader.get_tensor(name)
            got = reader.get_tensor(name)
            assert got.dtype == want.dtype, name
            np.testing.assert_array_equal(got, want, err_msg=name)

    x, y, logits, loss, train, step = _build_in_tfc(optimizer)
    x_data, labels = _data()
    with tf.Session() as sess:
        tf.train.Saver().restore(sess, prefix)  # every variable, optimizer slots included
        predictions = sess.run(logits, {x: x_data})
        assert sess.run(step) == steps
        for _ in range(steps):
            sess.run(train, {x: x_data, y: labels})
        later_loss = sess.run(loss, {x: x_data, y: labels})
    difference = float(np.max(np.abs(predictions - trained["predictions"])))
    print(f"{optimizer}: max |tfc - TF| of the restored model's logits: {difference:.3g}")
    assert difference <= 1e-5
    # training goes on from the restored optimizer state as it does in TensorFlow
    np.testing.assert_allclose(later_loss, trained["later_loss"], rtol=1e-4)


def test_every_dtype_shard_and_block_layout_tensorflow_writes(tmp_path):
    """Many variables (an index of several blocks), three shards, the dtypes tfc reads."""
    values = {
        "f16": np.array([0.5, -2.0, 65504.0], np.float16),
        "f64": np.linspace(-1, 1, 7),
        "i8": np.array([-128, 0, 127], np.int8),
        "i16": np.array([-300, 300], np.int16),
        "i32": np.arange(6, dtype=np.int32).reshape(2, 3),
        "i64": np.array(2**40, np.int64),
        "u8": np.arange(250, 256, dtype=np.uint8),
        "u16": np.array([65535], np.uint16),
        "flag": np.array([True, False, True]),
        "c64": np.array([1 + 2j, -3j], np.complex64),
        "big": np.random.default_rng(0).normal(size=(300, 70)).astype(np.float32),
    }
    prefix = str(tmp_path / "many")
    with real_tf.Graph().as_default() as graph:
        for i, (name, value) in enumerate(values.items()):
            with v1.device(f"/cpu:{i % 2}"):
                v1.Variable(value, name=name)
        for i in range(200):
            with v1.device(f"/cpu:{i % 2}"):
                v1.Variable(np.full(3, i, np.float32), name=f"layer_{i:03d}/kernel")
        config = v1.ConfigProto(device_count={"CPU": 2})
        with v1.Session(graph=graph, config=config) as sess:
            sess.run(v1.global_variables_initializer())
            v1.train.Saver(sharded=True).save(sess, prefix)
    with TensorBundleReader(prefix) as reader:
        assert reader.num_shards > 1
        assert len({e.shard_id for e in reader.tensors.values()}) > 1
        assert len(reader.tensors) == len(values) + 200
        for name, want in values.items():
            got = reader.get_tensor(name)
            assert got.dtype == want.dtype and got.shape == want.shape, name
            np.testing.assert_array_equal(got, want, err_msg=name)
        for i in (0, 101, 199):
            np.testing.assert_array_equal(reader.get_tensor(f"layer_{i:03d}/kernel"), [i] * 3)


def test_partitioned_variables_and_object_checkpoints_are_listed_and_refused_clearly(tmp_path):
    prefix = str(tmp_path / "parts")
    with real_tf.Graph().as_default() as graph:
        v1.get_variable(
            "table", [10, 4], partitioner=v1.fixed_size_partitioner(2),
            initializer=v1.ones_initializer(),
        )  # fmt: skip
        v1.Variable([1.0, 2.0], name="plain")
        with v1.Session(graph=graph) as sess:
            sess.run(v1.global_variables_initializer())
            v1.train.Saver().save(sess, prefix)
    with tf.train.load_checkpoint(prefix) as reader:
        assert reader.get_variable_to_shape_map() == {"table": [10, 4], "plain": [2]}
        np.testing.assert_array_equal(reader.get_tensor("plain"), [1.0, 2.0])
        with pytest.raises(tf.errors.UnimplementedError, match="'table' .* saved in 2 slices"):
            reader.get_tensor("table")

    # TF2's object-based checkpoints hold a string tensor (the object graph) beside the values
    checkpoint = real_tf.train.Checkpoint(w=real_tf.Variable([[1.0, 2.0]]))
    path = checkpoint.write(str(tmp_path / "object"))
    with tf.train.load_checkpoint(path) as reader:
        assert reader.get_variable_to_dtype_map()["_CHECKPOINTABLE_OBJECT_GRAPH"] == "string"
        np.testing.assert_array_equal(reader.get_tensor("w/.ATTRIBUTES/VARIABLE_VALUE"), [[1, 2]])


def test_damaged_tensorflow_files_are_refused_naming_the_file(tmp_path):
    prefix = str(tmp_path / "model.ckpt")
    _train_in_tensorflow(prefix, "sgd", 1)
    index = prefix + ".index"
    data = prefix + ".data-00000-of-00001"
    good_index, good_data = open(index, "rb").read(), open(data, "rb").read()

    open(index, "wb").write(good_index[:-1])
    bad_magic = f"checkpoint {index} is not a valid .* has magic number"
    with pytest.raises(CorruptCheckpointError, match=bad_magic):
        TensorBundleReader(prefix)
    open(index, "wb").write(good_index[:20] + bytes([good_index[20] ^ 1]) + good_index[21:])
    with pytest.raises(CorruptCheckpointError, match="data block 0 at offset 0 fails its checksum"):
        TensorBundleReader(prefix)

    open(index, "wb").write(good_index)
    with TensorBundleReader(prefix) as reader:
        entry = reader.tensors["dense/kernel"]
    flipped = bytearray(good_data)
    flipped[entry.offset + 5] ^= 0x10
    open(data, "wb").write(flipped)
    x, *_ = _build_in_tfc("sgd")
    with tf.Session() as sess:
        with pytest.raises(
            CorruptCheckpointError,
            match=f"checkpoint {data} is corrupt: tensor 'dense/kernel' .* does not match its "
            "checksum",
        ):
            tf.train.Saver().restore(sess, prefix)
    open(data, "wb").write(good_data[:-4])
    with pytest.raises(CorruptCheckpointError, match=f"checkpoint {data} is truncated"):
        TensorBundleReader(prefix)
