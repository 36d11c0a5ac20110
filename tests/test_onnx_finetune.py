"""Fine-tuning an imported ONNX model: `tfc.onnx.import_model(trainable=True)` makes the
initializers variables; the last layer of a small CNN is trained on the digits data with a tfc
optimizer, in a Session and through `tfc compile` to the native `train` executable, which must
agree with the Session."""

from __future__ import annotations

import re
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import tfc as tf  # noqa: E402
import tfc.onnx  # noqa: E402
from tfc.tools.cli import main as tfc_main  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DIGITS = ROOT / "samples" / "data" / "digits.npz"
BATCH = 64
STEPS = 150
LAST_LAYER = ("fc_w", "fc_b")


def cnn_model(seed: int = 0) -> onnx.ModelProto:
    """An 8x8 digits CNN in ONNX (Conv 3x3 -> Relu -> MaxPool 2 -> Flatten -> Gemm), its
    weights seeded random: the features a model trained elsewhere would bring."""
    rng = np.random.default_rng(seed)
    inits = [
        numpy_helper.from_array(rng.normal(0, 0.5, (12, 1, 3, 3)).astype(np.float32), "conv_w"),
        numpy_helper.from_array(rng.normal(0, 0.1, 12).astype(np.float32), "conv_b"),
        numpy_helper.from_array(rng.normal(0, 0.05, (10, 12 * 4 * 4)).astype(np.float32), "fc_w"),
        numpy_helper.from_array(np.zeros(10, np.float32), "fc_b"),
    ]
    nodes = [
        helper.make_node("Conv", ["image", "conv_w", "conv_b"], ["conv"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv"], ["relu"]),
        helper.make_node("MaxPool", ["relu"], ["pool"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["pool"], ["flat"]),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "digits_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 1, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])],
        initializer=inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def digits() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    data = np.load(DIGITS)
    images = (data["images"] / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    labels = data["labels"].astype(np.int64)
    order = np.random.default_rng(0).permutation(len(images))
    test, train = order[:360], order[360:]
    return images[train], labels[train], images[test], labels[test]


def finetune_graph(path: Path, batch: int | None = None) -> dict:
    """The imported CNN with a loss and Adam on its last layer only, in the default graph."""
    graph, (image,), (logits,) = tfc.onnx.import_model(
        str(path), batch=batch, trainable=True, graph=tf.get_default_graph()
    )
    labels = tf.placeholder(tf.int64, [None], name="labels")
    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    last = [v for v in tf.trainable_variables() if v.op.name in LAST_LAYER]
    train_op = tf.train.AdamOptimizer(0.01).minimize(loss, var_list=last)
    return {"image": image, "labels": labels, "logits": logits, "loss": loss, "train": train_op}


def test_initializers_become_variables_with_the_model_values(tmp_path):
    model = cnn_model()
    path = tmp_path / "cnn.onnx"
    onnx.save(model, str(path))
    with tf.Graph().as_default():
        graph, _, _ = tfc.onnx.import_model(str(path), trainable=True)
        names = sorted(v.op.name for v in graph.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES))
        assert names == ["conv_b", "conv_w", "fc_b", "fc_w"]
        with tf.Session(graph=graph) as sess:
            sess.run(tf.variables_initializer(graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)))
            for init in model.graph.initializer:
                np.testing.assert_array_equal(
                    sess.read_variable(init.name), numpy_helper.to_array(init)
                )
    with tf.Graph().as_default():
        graph, _, _ = tfc.onnx.import_model(str(path))
        assert not graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)


def test_finetuning_the_last_layer_in_a_session(tmp_path):
    path = tmp_path / "cnn.onnx"
    onnx.save(cnn_model(), str(path))
    x, y, test_x, test_y = digits()
    with tf.Graph().as_default():
        t = finetune_graph(path)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            conv_before = sess.read_variable("conv_w")
            before = (sess.run(t["logits"], {t["image"]: test_x}).argmax(1) == test_y).mean()
            for step in range(STEPS):
                rows = np.arange(step * BATCH, (step + 1) * BATCH) % len(x)
                sess.run(t["train"], {t["image"]: x[rows], t["labels"]: y[rows]})
            after = (sess.run(t["logits"], {t["image"]: test_x}).argmax(1) == test_y).mean()
            np.testing.assert_array_equal(sess.read_variable("conv_w"), conv_before)
    assert before < 0.3 and after >= 0.85, (before, after)


def test_finetuning_through_tfc_compile_agrees_with_the_session(tmp_path):
    """A model file importing the ONNX CNN (trainable) compiles to `train` and `predict`; the
    native run over the same batches in the same order ends with the session's weights."""
    path = tmp_path / "cnn.onnx"
    onnx.save(cnn_model(), str(path))
    model_file = tmp_path / "finetune_model.py"
    model_file.write_text(
        textwrap.dedent(f"""
        import tfc as tf
        import tfc.onnx

        def signatures():
            _, (image,), (logits,) = tfc.onnx.import_model({str(path)!r}, trainable=True,
                                                           graph=tf.get_default_graph())
            labels = tf.placeholder(tf.int64, [None], name="labels")
            loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
            last = [v for v in tf.trainable_variables() if v.op.name in {LAST_LAYER!r}]
            step = tf.train.get_or_create_global_step()
            train_op = tf.train.AdamOptimizer(0.01).minimize(loss, var_list=last,
                                                             global_step=step)
            return {{
                "train": {{"inputs": {{"features": image, "labels": labels}}, "loss": loss,
                          "train_op": train_op}},
                "predict": {{"inputs": {{"features": image}}, "outputs": {{"logits": logits}}}},
            }}
    """)
    )
    out = tmp_path / "build"
    assert tfc_main(["compile", str(model_file), "-o", str(out), "--batch", str(BATCH)]) == 0
    x, y, test_x, test_y = digits()
    rows = np.column_stack([x.reshape(len(x), -1), y]).astype(np.float32)
    np.save(tmp_path / "train.npy", rows)
    np.save(tmp_path / "test.npy", np.column_stack([test_x.reshape(len(test_x), -1), test_y]))
    ckpt = tmp_path / "ckpt"
    subprocess.run(
        [
            str(out / "train"),
            "--data",
            str(tmp_path / "train.npy"),
            "--steps",
            str(STEPS),
            "--checkpoint-dir",
            str(ckpt),
            "--no-shuffle",
            "--log-every",
            str(STEPS),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    predicted = subprocess.run(
        [str(out / "predict"), "--checkpoint", str(ckpt), "--data", str(tmp_path / "test.npy")],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    ).stdout
    native_correct = int(re.search(r"accuracy \S+ \((\d+) of 360\)", predicted).group(1))

    with tf.Graph().as_default():
        t = finetune_graph(path)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            order = np.arange(STEPS * BATCH) % len(x)
            for step in range(STEPS):
                batch = order[step * BATCH : (step + 1) * BATCH]
                sess.run(t["train"], {t["image"]: x[batch], t["labels"]: y[batch]})
            expected = {name: sess.read_variable(name) for name in ("conv_w", *LAST_LAYER)}
            logits = sess.run(t["logits"], {t["image"]: test_x})
    session_correct = int((logits.argmax(1) == test_y).sum())
    saved = tf.train.load_checkpoint(str(ckpt))
    for name, value in expected.items():
        np.testing.assert_allclose(saved.get_tensor(name), value, rtol=1e-4, atol=1e-5)
    assert native_correct == session_correct >= 0.85 * len(test_y)
