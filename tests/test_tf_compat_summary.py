"""tfc's summaries and event files against TensorFlow and TensorBoard (skipped without them).

The summary ops of both, given the same values, make the same Summaries (images compared as
decoded pixels: the PNG encoders differ); TensorFlow's event-file reader and TensorBoard's
EventAccumulator read tfc's event files: scalars, histograms, images, audio, text, the graph.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
v1 = tf.compat.v1

import tfc  # noqa: E402

RNG = np.random.default_rng(23)
GRAY = np.array([[[[-1.0], [0.5]], [[2.0], [np.nan]]]], np.float32)
RGB = RNG.uniform(0, 3, size=(2, 3, 4, 3)).astype(np.float32)
RGBA = RNG.uniform(-1, 1, size=(1, 2, 2, 4)).astype(np.float32)
AUDIO = RNG.uniform(-1.2, 1.2, size=(2, 50, 2)).astype(np.float32)
VALUES = np.concatenate([RNG.normal(size=300) * 100, [0.0, 0.0, 1e-13, -5e-12]])


def _summaries(lib, session):
    """The same summaries built with `lib` (tensorflow.compat.v1 or tfc) and run."""
    with lib.Graph().as_default():
        ops = [
            lib.summary.scalar("loss", lib.constant(0.375)),
            lib.summary.scalar("count", lib.constant(7, dtype=lib.int64), family="fam"),
            lib.summary.histogram("values", lib.constant(VALUES)),
            lib.summary.histogram("ints", lib.constant([3, -1, 3, 0], dtype=lib.int32)),
            lib.summary.image("gray", GRAY),
            lib.summary.image("rgb", RGB, max_outputs=2),
            lib.summary.image("rgba", RGBA, max_outputs=1),
            lib.summary.audio("audio", AUDIO, 16000, max_outputs=3),
            lib.summary.text("text", lib.constant(["first", "second"])),
            lib.summary.tensor_summary("matrix", lib.constant([[1.5, 2.0]]), display_name="M"),
        ]
        merged = lib.summary.merge(ops)
        with session() as sess:
            return sess.run(merged)


def _decode_png(data):
    return tf.io.decode_png(data).numpy()


def test_summary_ops_make_the_summaries_tensorflow_makes():
    ours = tfc.Summary.FromString(_summaries(tfc, tfc.Session))
    theirs = v1.Summary.FromString(_summaries(v1, v1.Session))
    assert [v.tag for v in ours.value] == [v.tag for v in theirs.value]
    for a, b in zip(ours.value, theirs.value):
        kind = b.WhichOneof("value")
        assert a.WhichOneof("value") == kind, b.tag
        if kind == "image":
            assert (a.image.height, a.image.width, a.image.colorspace) == (
                b.image.height, b.image.width, b.image.colorspace)  # fmt: skip
            np.testing.assert_array_equal(_decode_png(a.image.encoded_image_string),
                                          _decode_png(b.image.encoded_image_string))  # fmt: skip
        else:  # scalars, histograms, audio bytes, tensors and metadata: the same message
            assert a.SerializeToString() == b.SerializeToString(), b.tag


def test_tensorflows_reader_reads_tfcs_event_files_and_tfc_reads_tensorflows(tmp_path):
    ours, theirs = tmp_path / "tfc", tmp_path / "tf"
    with tfc.Graph().as_default() as g:
        tfc.constant(1.0, name="c")
        writer = tfc.summary.FileWriter(str(ours), g)
        summary = tfc.Summary()
        summary.value.add(tag="x", simple_value=2.5)
        writer.add_summary(summary, 3)
        writer.add_session_log(tfc.SessionLog(status=tfc.SessionLog.START), 4)
        writer.close()
    (path,) = ours.glob("events.out.tfevents.*")
    events = list(v1.train.summary_iterator(str(path)))
    assert events[0].file_version == "brain.Event:2"
    assert [n.name for n in v1.GraphDef.FromString(events[1].graph_def).node] == ["c"]
    assert events[2].step == 3 and events[2].summary.value[0].simple_value == 2.5
    assert events[3].session_log.status == v1.SessionLog.START

    with tf.Graph().as_default():
        tf_writer = v1.summary.FileWriter(str(theirs))
        tf_writer.add_summary(v1.Summary(value=[v1.Summary.Value(tag="y", simple_value=1.5)]), 9)
        tf_writer.close()
    (path,) = theirs.glob("events.out.tfevents.*")
    read = list(tfc.train.summary_iterator(path))
    assert read[-1].step == 9 and read[-1].summary.value[0].simple_value == 1.5


def test_tensorboard_shows_what_a_tfc_training_run_wrote(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing import event_accumulator as ea

    with tfc.Graph().as_default():
        x = tfc.constant(RNG.normal(size=(8, 2)).astype(np.float32))
        w = tfc.Variable(tfc.zeros([2, 1]), name="w")
        loss = tfc.reduce_mean(tfc.square(tfc.matmul(x, w) - 1.0), name="mse")
        step = tfc.train.get_or_create_global_step()
        train = tfc.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
        tfc.summary.scalar("loss", loss)
        tfc.summary.histogram("weights", w)
        tfc.summary.image("picture", tfc.reshape(x, [1, 4, 4, 1]))
        tfc.summary.audio("sound", tfc.reshape(x, [1, 16]) / 4.0, 8000)
        tfc.summary.text("note", tfc.constant("hello"))
        hooks = [tfc.train.StopAtStepHook(last_step=6)]
        with tfc.train.MonitoredTrainingSession(
            checkpoint_dir=str(tmp_path), hooks=hooks, save_summaries_steps=2
        ) as sess:
            while not sess.should_stop():
                sess.run(train)
    tfc.summary.FileWriterCache.clear()

    keep_all = dict.fromkeys(["images", "audio", "scalars", "histograms", "tensors"], 0)
    acc = ea.EventAccumulator(str(tmp_path), size_guidance=keep_all)
    acc.Reload()
    tags = acc.Tags()
    assert "loss" in tags["scalars"] and "weights" in tags["histograms"]
    assert "picture/image/0" in tags["images"] and "sound/audio/0" in tags["audio"]
    assert "note" in tags["tensors"] and tags["graph"]
    losses = acc.Scalars("loss")
    assert [e.step for e in losses] == [1, 3, 5] and losses[-1].value < losses[0].value
    histo = acc.Histograms("weights")[-1].histogram_value
    assert histo.num == 2 and histo.min <= histo.max
    image = acc.Images("picture/image/0")[0]
    assert (image.width, image.height) == (4, 4)
    graph = acc.Graph()
    assert {"w", "mse", "global_step"} <= {n.name for n in graph.node}
    assert acc.Tensors("note")[0].tensor_proto.string_val == [b"hello"]
