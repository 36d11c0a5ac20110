"""tf.summary: the summary ops' Summaries (against TensorFlow's algorithms written out plainly
here), FileWriter's event files read back, and the training loops that write them.

TensorFlow's and TensorBoard's own readers check the same files in
tests/test_tf_compat_summary.py (where they are installed)."""

from __future__ import annotations

import io
import struct
import sys
import time
import wave
import zlib

import numpy as np
import pytest

import tfc as tf
from tfc.io.event_file import summary_iterator
from tfc.ir.errors import DataLossError, InvalidArgumentError

RNG = np.random.default_rng(9)


@pytest.fixture(autouse=True)
def _fresh_graph():
    tf.reset_default_graph()
    yield
    tf.summary.FileWriterCache.clear()


def _tf_histogram(values):
    """TensorFlow's Histogram (lib/histogram/histogram.cc) step by step: the default buckets,
    Add() per value, EncodeToProto() collapsing runs of empty buckets."""
    limits, v = [], 1.0e-12
    while v < 1.0e20:
        limits.append(v)
        v *= 1.1
    limits.append(sys.float_info.max)
    limits = [-x for x in reversed(limits)] + [0.0] + limits
    counts = [0.0] * len(limits)
    low, high, total, squares = limits[-1], -limits[-1], 0.0, 0.0
    for x in values:
        b = next(i for i, limit in enumerate(limits) if limit > x)  # std::upper_bound
        counts[b] += 1
        low, high = min(low, x), max(high, x)
        total += x
        squares += x * x
    out_limits, out_counts, i = [], [], 0
    while i < len(counts):
        end, count, j = limits[i], counts[i], i + 1
        while count <= 0 and j < len(counts) and counts[j] <= 0:
            end, count, j = limits[j], counts[j], j + 1
        out_limits.append(end)
        out_counts.append(count)
        i = j
    return low, high, float(len(values)), total, squares, out_limits, out_counts


def _run(fetch, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetch, feed)


def _png_pixels(data):
    """The pixels of an 8-bit PNG whose rows use filter 0 (what tfc writes), chunk CRCs checked."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert crc == zlib.crc32(kind + body)
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, color = header[:4]
    channels = {0: 1, 4: 2, 2: 3, 6: 4}[color]
    rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(height, 1 + width * channels)
    assert depth == 8 and not rows[:, 0].any()
    return rows[:, 1:].reshape(height, width, channels)


# -- the ops ---------------------------------------------------------------------------------------
def test_scalar_summaries_are_tagged_by_their_name_scope_and_family():
    with tf.name_scope("train"):
        loss = tf.summary.scalar("loss", tf.constant(0.25))
        odd = tf.summary.scalar("bad name:1", tf.constant(3), family="fam")
    assert loss.op.name == "train/loss" and odd.op.name == "train/fam/bad_name_1"
    a, b = (tf.Summary.FromString(s) for s in _run([loss, odd]))
    assert [(v.tag, v.simple_value) for v in a.value] == [("train/loss", 0.25)]
    assert [(v.tag, v.simple_value) for v in b.value] == [("fam/train/fam/bad_name_1", 3.0)]
    assert tf.get_collection(tf.GraphKeys.SUMMARIES) == [loss, odd]


def test_a_scalar_summary_of_a_vector_fails_the_run_as_tensorflow():
    x = tf.placeholder(tf.float32)
    s = tf.summary.scalar("s", x)
    with pytest.raises(InvalidArgumentError, match=r"tags and values are not the same shape: "
                       r"\[\] != \[2\] \(tag 's'\)") as info:  # fmt: skip
        _run(s, {x: [1.0, 2.0]})
    assert "node s" in str(info.value)


@pytest.mark.parametrize(
    "values",
    [RNG.normal(size=200) * 10, np.array([1.0, -2.0, 0.0, 0.0, 3e-13]), np.array([]),
     np.array([5.0]), RNG.integers(-3, 3, 50).astype(np.float64)],
)  # fmt: skip
def test_histograms_have_tensorflows_buckets(values):
    h = tf.summary.histogram("h", tf.constant(values, dtype=tf.float64))
    (value,) = tf.Summary.FromString(_run(h)).value
    low, high, num, total, squares, limits, counts = _tf_histogram(list(values))
    histo = value.histo
    assert (histo.min, histo.max, histo.num) == (low, high, num)
    assert histo.sum == total and histo.sum_squares == squares  # in order, as TF adds them
    assert histo.bucket_limit == limits and histo.bucket == counts


def test_a_nan_in_a_histogram_fails_the_run():
    x = tf.placeholder(tf.float32, [2])
    h = tf.summary.histogram("weights", x)
    with pytest.raises(InvalidArgumentError, match="Nan in summary histogram for: weights"):
        _run(h, {x: [1.0, np.nan]})


def test_images_are_pngs_scaled_as_tensorflow_scales_floats():
    gray = np.array([[[[-1.0], [0.5]], [[2.0], [np.nan]]]], np.float32)
    rgb = RNG.uniform(0, 4, size=(3, 2, 5, 3)).astype(np.float32)
    s1 = tf.summary.image("gray", gray)
    s2 = tf.summary.image("rgb", rgb, max_outputs=2)
    one = tf.summary.image("one", rgb, max_outputs=1)
    a, b, c = (tf.Summary.FromString(s) for s in _run([s1, s2, one]))
    (v,) = a.value
    assert v.tag == "gray/image/0" and (v.image.height, v.image.width) == (2, 2)
    assert v.image.colorspace == 1
    # negatives: the largest magnitude maps to 127 around 128, truncated; NaN: bad_color's red
    np.testing.assert_array_equal(_png_pixels(v.image.encoded_image_string)[..., 0],
                                  [[64, 159], [255, 255]])  # fmt: skip
    assert [v.tag for v in b.value] == ["rgb/image/0", "rgb/image/1"]
    for i, v in enumerate(b.value):
        expected = (rgb[i] * np.float32(255.0 / rgb[i].max())).astype(np.uint8)
        np.testing.assert_array_equal(_png_pixels(v.image.encoded_image_string), expected)
    assert [v.tag for v in c.value] == ["one/image"]


def test_image_summaries_check_the_shape():
    with pytest.raises(ValueError, match="last dim 1, 3, or 4"):
        tf.summary.image("bad", tf.zeros([1, 2, 2, 2]))
    with pytest.raises(ValueError, match="rank 4"):
        tf.summary.image("bad", tf.zeros([2, 2, 3]))


def test_audio_is_16_bit_wav():
    clips = np.array([[[0.5], [-1.5], [0.25]], [[0.0], [1.0], [-0.5]]], np.float32)
    s = tf.summary.audio("au", clips, 8000, max_outputs=1)
    (v,) = tf.Summary.FromString(_run(s)).value
    assert v.tag == "au/audio" and v.audio.sample_rate == 8000.0
    assert (v.audio.num_channels, v.audio.length_frames) == (1, 3)
    assert v.audio.content_type == "audio/wav"
    with wave.open(io.BytesIO(v.audio.encoded_audio_string)) as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (8000, 1, 2)
        samples = np.frombuffer(w.readframes(3), "<i2")
    np.testing.assert_array_equal(samples, [16384, -32768, 8192])  # x * 2^15, clamped


def test_text_and_tensor_summaries_hold_the_tensor_and_metadata():
    t = tf.summary.text("notes", tf.constant(["hello", "world"]))
    m = tf.summary.tensor_summary("w", tf.constant([[1, 2]]), summary_description="weights",
                                  display_name="W")  # fmt: skip
    a, b = (tf.Summary.FromString(s) for s in _run([t, m]))
    (v,) = a.value
    assert v.tag == "notes" and v.metadata.plugin_data.plugin_name == "text"
    np.testing.assert_array_equal(tf.make_ndarray(v.tensor), [b"hello", b"world"])
    (w,) = b.value
    assert (w.metadata.display_name, w.metadata.summary_description) == ("W", "weights")
    np.testing.assert_array_equal(tf.make_ndarray(w.tensor), [[1, 2]])
    with pytest.raises(ValueError, match="to have dtype string"):
        tf.summary.text("n", tf.constant(1.0))


def test_merge_all_merges_the_collection_and_duplicate_tags_fail():
    assert tf.summary.merge_all() is None
    tf.summary.scalar("a", tf.constant(1.0))
    tf.summary.histogram("b", tf.constant([1.0, 2.0]))
    merged = tf.Summary.FromString(_run(tf.summary.merge_all()))
    assert [v.tag for v in merged.value] == ["a", "b"]
    first = tf.summary.scalar("c", 1.0, collections=[])
    twice = tf.summary.merge([first, tf.summary.scalar("c", 2.0, collections=[])])
    assert tf.Summary.FromString(_run(twice)).value[1].tag == "c_1"
    one = tf.summary.scalar("d", 1.0, collections=[])
    dup = tf.summary.merge([one, one])
    with pytest.raises(InvalidArgumentError, match="Duplicate tag d found in summary inputs"):
        _run(dup)


# -- event files -----------------------------------------------------------------------------------
def _events(logdir):
    (path,) = sorted(logdir.glob("events.out.tfevents.*"))
    return list(summary_iterator(path))


def test_file_writer_writes_the_version_graph_summaries_and_session_logs(tmp_path):
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    loss = tf.reduce_sum(x, name="loss")
    s = tf.summary.scalar("loss", loss)
    writer = tf.summary.FileWriter(str(tmp_path), tf.get_default_graph())
    assert writer.get_logdir() == str(tmp_path)
    with tf.Session() as sess:
        for step in range(3):
            writer.add_summary(sess.run(s, {x: [[step, 1.0]]}), step)
    writer.add_session_log(tf.SessionLog(status=tf.SessionLog.STOP), 3)
    writer.close()
    events = _events(tmp_path)
    assert events[0].file_version == "brain.Event:2"
    graph = tf.GraphDef.FromString(events[1].graph_def)
    assert [n.name for n in graph.node][:1] == ["x"] and "_output_shapes" in graph.node[0].attr
    scalars = [(e.step, e.summary.value[0].simple_value) for e in events[2:5]]
    assert scalars == [(0, 1.0), (1, 2.0), (2, 3.0)]
    assert events[5].session_log.status == tf.SessionLog.STOP and events[5].step == 3
    assert all(e.wall_time > 0 for e in events)


def test_events_are_flushed_by_count_and_time_and_reopen_starts_a_new_file(tmp_path):
    writer = tf.summary.FileWriter(str(tmp_path), max_queue=2, flush_secs=1000)
    writer.add_event(tf.Event(step=1))
    assert len(_events(tmp_path)) == 1  # only the version: one event waits in the queue
    writer.add_event(tf.Event(step=2))
    assert [e.step for e in _events(tmp_path)] == [0, 1, 2]
    writer.close()
    writer.add_event(tf.Event(step=3))  # dropped after close, as TF's writer drops it
    writer.reopen()
    writer.add_event(tf.Event(step=4))
    writer.flush()
    files = sorted(tmp_path.glob("events.out.tfevents.*"))
    assert len(files) == 2
    assert [[e.step for e in summary_iterator(f)] for f in files] in (
        [[0, 1, 2], [0, 4]],
        [[0, 4], [0, 1, 2]],
    )


def test_a_corrupted_event_file_is_reported_with_its_record(tmp_path):
    writer = tf.summary.FileWriter(str(tmp_path))
    writer.add_event(tf.Event(step=5))
    writer.close()
    (path,) = tmp_path.glob("events.out.tfevents.*")
    data = bytearray(path.read_bytes())
    data[-6] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(DataLossError, match="record 1 at byte .*: corrupted record data"):
        list(summary_iterator(path))


def test_file_writer_cache_shares_one_writer_per_logdir(tmp_path):
    a = tf.summary.FileWriterCache.get(str(tmp_path))
    assert tf.summary.FileWriterCache.get(str(tmp_path)) is a
    tf.summary.FileWriterCache.clear()
    assert tf.summary.FileWriterCache.get(str(tmp_path)) is not a


def test_plugin_metadata_is_kept_for_the_first_value_of_a_tag(tmp_path):
    t = tf.summary.text("note", tf.constant("hi"))
    writer = tf.summary.FileWriter(str(tmp_path))
    with tf.Session() as sess:
        for step in range(2):
            writer.add_summary(sess.run(t), step)
    writer.close()
    values = [e.summary.value[0] for e in _events(tmp_path) if e.HasField("summary")]
    assert [v.HasField("metadata") for v in values] == [True, False]


# -- training loops --------------------------------------------------------------------------------
def _regression():
    x = tf.constant(RNG.normal(size=(16, 3)).astype(np.float32))
    y = tf.reduce_sum(x, axis=1, keepdims=True)
    w = tf.Variable(tf.zeros([3, 1]), name="w")
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y), name="mse")
    step = tf.train.get_or_create_global_step()
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    tf.summary.scalar("loss", loss)
    tf.summary.histogram("weights", w)
    return loss, train


def test_monitored_training_session_saves_summaries_every_n_steps(tmp_path):
    loss, train = _regression()
    hooks = [tf.train.StopAtStepHook(last_step=7)]
    losses = []
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), hooks=hooks,
                                           save_summaries_steps=3,
                                           log_step_count_steps=None) as sess:  # fmt: skip
        while not sess.should_stop():
            losses.append(sess.run([loss, train])[0])
    tf.summary.FileWriterCache.clear()
    events = _events(tmp_path)
    assert events[1].graph_def  # the CheckpointSaverHook's graph, for the Graphs tab
    logs = [(e.step, e.session_log.status) for e in events if e.HasField("session_log")]
    # TF1's order: the first checkpoint at step 0, START once the first step has run
    assert logs[:2] == [(0, tf.SessionLog.CHECKPOINT), (1, tf.SessionLog.START)]
    assert logs[-1] == (7, tf.SessionLog.CHECKPOINT)
    summaries = {e.step: {v.tag: v for v in e.summary.value}
                 for e in events if e.HasField("summary")}  # fmt: skip
    assert sorted(summaries) == [1, 4, 7]
    # written at step s: the loss of the run that made step s (computed before its update)
    for s in (1, 4, 7):
        assert summaries[s]["loss"].simple_value == pytest.approx(losses[s - 1], rel=1e-6)
    assert summaries[7]["weights"].histo.num == 3.0
    assert (tmp_path / "graph.pbtxt").exists()


def test_summary_saver_hook_needs_exactly_one_source():
    with pytest.raises(ValueError, match="Exactly one of scaffold or summary_op"):
        tf.train.SummarySaverHook(save_steps=1)


def test_supervisor_writes_graph_summaries_and_session_logs(tmp_path):
    loss, train = _regression()
    sv = tf.train.Supervisor(logdir=str(tmp_path), save_summaries_secs=0.05, save_model_secs=0)
    assert sv.summary_writer is not None and sv.summary_op is not None
    with sv.managed_session() as sess:
        for _ in range(5):
            sess.run(train)
        sv.summary_computed(sess, sess.run(sv.summary_op))
        time.sleep(0.2)  # the summary thread runs every 0.05 s
    events = _events(tmp_path)
    statuses = [e.session_log.status for e in events if e.HasField("session_log")]
    assert statuses[0] == tf.SessionLog.START and statuses[-1] == tf.SessionLog.STOP
    assert any(e.graph_def for e in events)
    tags = {v.tag for e in events if e.HasField("summary") for v in e.summary.value}
    assert {"loss", "weights", "global_step/sec"} <= tags
    steps = [e.step for e in events if e.HasField("summary") and e.summary.value[0].tag == "loss"]
    assert 5 in steps


def test_summary_description_and_run_metadata_events(tmp_path):
    node = tf.NodeDef(name="t", op="TensorSummary")
    node.attr["description"].s = b'{"typeHint": "image"}'
    assert tf.summary.get_summary_description(node) == tf.summary.SummaryDescription(
        type_hint="image"
    )
    with pytest.raises(ValueError, match="Can't get_summary_description on ScalarSummary"):
        tf.summary.get_summary_description(tf.NodeDef(name="s", op="ScalarSummary"))
    writer = tf.summary.FileWriter(str(tmp_path))
    metadata = tf.GraphDef(versions={"producer": 5})  # any message: its bytes are what is kept
    writer.add_run_metadata(metadata, "step_3", global_step=3)
    writer.close()
    (event,) = [e for e in _events(tmp_path) if e.HasField("tagged_run_metadata")]
    assert event.step == 3 and event.tagged_run_metadata.tag == "step_3"
    assert tf.GraphDef.FromString(event.tagged_run_metadata.run_metadata) == metadata
