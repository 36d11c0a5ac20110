"""TF1's readers fed by filename queues: TFRecordReader, TextLineReader, FixedLengthRecordReader,
WholeFileReader, IdentityReader (keys, values, counts, reset, errors), the record splitting of
tfc/io/record_files.py, and a queue-based input pipeline from TFRecord files of Examples to a
compiled training-style step."""

import gzip
import zlib

import numpy as np
import pytest

import tfc as tf
from tfc.io.record_files import RecordFormat, file_records


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("readers")
    (d / "a.txt").write_bytes(b"h1\nline1\r\n\nline3")
    (d / "b.txt").write_bytes(b"h2\nx\n")
    (d / "f.bin").write_bytes(bytes(range(23)))
    with tf.python_io.TFRecordWriter(str(d / "r.tfr")) as w:
        for r in [b"aa", b"", b"ccc"]:
            w.write(r)
    return d


def _read_all(make, names, upto=None, limit=12):
    """Every (key, value) a reader hands out for the files `names` (a closed queue of them:
    string_input_producer's epoch, without its compiled counter), read to the queue's end,
    and its two counts afterwards."""
    with tf.Graph().as_default():
        queue = tf.FIFOQueue(len(names), tf.string)
        fill = [queue.enqueue_many([names]), queue.close()]
        reader = make()
        key, value = reader.read_up_to(queue, upto) if upto else reader.read(queue)
        counts = [reader.num_records_produced(), reader.num_work_units_completed()]
        out = []
        with tf.Session() as sess:
            sess.run(fill)
            with pytest.raises(tf.errors.OutOfRangeError, match="is closed and has insufficient"):
                for _ in range(limit):
                    k, v = sess.run([key, value])
                    out.append((np.asarray(k).tolist(), np.asarray(v).tolist()))
            produced, completed = sess.run(counts)
    return out, (int(produced), int(completed))


def test_each_reader_hands_out_tfs_keys_and_values(files):
    a, b, f, r = (str(files / n) for n in ("a.txt", "b.txt", "f.bin", "r.tfr"))
    # the expected values are those TF 2.21's tf.compat.v1 readers give for these files
    assert _read_all(lambda: tf.TextLineReader(skip_header_lines=1), [a, b]) == (
        [(f"{a}:2".encode(), b"line1"), (f"{a}:3".encode(), b""),
         (f"{a}:4".encode(), b"line3"), (f"{b}:2".encode(), b"x")],
        (4, 2),
    )  # fmt: skip
    assert _read_all(tf.TFRecordReader, [r]) == (
        [(f"{r}:0".encode(), b"aa"), (f"{r}:18".encode(), b""), (f"{r}:34".encode(), b"ccc")],
        (3, 1),
    )
    fixed = _read_all(lambda: tf.FixedLengthRecordReader(5, header_bytes=2, footer_bytes=3), [f])
    assert fixed == ([(f"{f}:{i}".encode(), bytes(range(2 + 5 * i, 7 + 5 * i))) for i in range(3)],
                     (3, 1))  # fmt: skip
    hop = _read_all(lambda: tf.FixedLengthRecordReader(5, 2, 3, hop_bytes=3), [f])
    assert hop == ([(f"{f}:{i}".encode(), bytes(range(2 + 3 * i, 7 + 3 * i))) for i in range(5)],
                   (5, 1))  # fmt: skip
    assert _read_all(tf.WholeFileReader, [a, b]) == (
        [(a.encode(), b"h1\nline1\r\n\nline3"), (b.encode(), b"h2\nx\n")],
        (2, 2),
    )
    assert _read_all(tf.IdentityReader, [a, b]) == ([(a.encode(),) * 2, (b.encode(),) * 2], (2, 2))


def test_read_up_to_stops_where_a_file_ends(files):
    a, b = str(files / "a.txt"), str(files / "b.txt")
    batches, counts = _read_all(tf.TextLineReader, [a, b], upto=3)
    assert [v for _, v in batches] == [[b"h1", b"line1", b""], [b"line3"], [b"h2", b"x"]]
    assert batches[1][0] == [f"{a}:4".encode()] and counts == (6, 2)


def test_reset_forgets_the_file_and_the_counts(files):
    names = [str(files / "a.txt"), str(files / "b.txt")]
    with tf.Graph().as_default():
        queue = tf.FIFOQueue(10, tf.string)
        fill = queue.enqueue_many([names * 2])
        reader = tf.TextLineReader()
        key, value = reader.read(queue)
        reset = reader.reset()
        produced = reader.num_records_produced()
        with tf.Session() as sess:
            sess.run(fill)
            assert sess.run(value) == b"h1" and sess.run(value) == b"line1"
            sess.run(reset)
            assert sess.run(produced) == 0
            # the rest of a.txt is gone: the next read starts the next file of the queue
            assert sess.run([key, value]) == [f"{names[1]}:1".encode(), b"h2"]
            assert sess.run(produced) == 1


def test_records_feed_parsing_and_a_compiled_step(tmp_path):
    """TFRecord files of Examples -> TFRecordReader -> parse_single_example -> shuffle_batch
    -> a compiled computation, read to the end of its epochs."""
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(40, 3)).astype(np.float32)
    names = []
    for part in range(2):
        names.append(str(tmp_path / f"part{part}.tfrecord"))
        with tf.python_io.TFRecordWriter(names[-1], options="GZIP") as w:
            for i in range(part * 20, part * 20 + 20):
                feature = {
                    "x": tf.train.Feature(float_list=tf.train.FloatList(value=xs[i])),
                    "i": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
                }
                w.write(tf.train.Example(features=tf.train.Features(feature=feature))
                        .SerializeToString())  # fmt: skip
    with tf.Graph().as_default():
        queue = tf.train.string_input_producer(names, num_epochs=2, seed=3)
        _, record = tf.TFRecordReader(options="GZIP").read(queue)
        features = {"x": tf.FixedLenFeature([3], tf.float32), "i": tf.FixedLenFeature([], tf.int64)}
        parsed = tf.parse_single_example(record, features)
        x, i = tf.train.shuffle_batch(
            [parsed["x"], parsed["i"]], batch_size=8, capacity=50, min_after_dequeue=10, seed=1,
            allow_smaller_final_batch=True,
        )  # fmt: skip
        norm = tf.reduce_sum(x * x, axis=1)
        seen = []
        with tf.train.MonitoredTrainingSession() as sess:
            while not sess.should_stop():
                got_i, got_norm = sess.run([i, norm])
                np.testing.assert_allclose(got_norm, (xs[got_i] ** 2).sum(1), rtol=1e-6)
                seen += got_i.tolist()
    assert sorted(seen) == sorted(list(range(40)) * 2)


def test_record_files_split_compressed_streams_as_plain_ones(tmp_path):
    text = b"one\ntwo\r\nthree"
    body = bytes(range(100))
    for name, pack in [("", bytes), ("ZLIB", zlib.compress), ("GZIP", gzip.compress)]:
        (tmp_path / "t").write_bytes(pack(text))
        lines = list(file_records(str(tmp_path / "t"), RecordFormat("text_line", name)))
        assert lines == [(1, b"one"), (2, b"two"), (3, b"three")]
        (tmp_path / "f").write_bytes(pack(body))
        fmt = RecordFormat("fixed_length", name, record_bytes=30, header_bytes=4, footer_bytes=6)
        records = list(file_records(str(tmp_path / "f"), fmt))
        assert records == [(k, body[4 + 30 * k : 34 + 30 * k]) for k in range(3)]


def test_reader_errors(files, tmp_path):
    with tf.Graph().as_default():
        ints = tf.FIFOQueue(3, tf.int32)
        with pytest.raises(TypeError, match="work queue holds single strings"):
            tf.TFRecordReader().read(ints)
        with pytest.raises(TypeError, match="reads its work from a queue"):
            tf.TFRecordReader().read("file.tfrecord")
        names = tf.FIFOQueue(3, tf.string)
        with pytest.raises(ValueError, match="num_records to be a positive integer"):
            tf.TFRecordReader().read_up_to(names, 0)
        with pytest.raises(ValueError, match="record_bytes must be > 0"):
            tf.FixedLengthRecordReader(0)
        with pytest.raises(ValueError, match="Unsupported compression type: 'LZ4'"):
            tf.TFRecordReader(options="LZ4")
        missing = str(tmp_path / "missing.tfrecord")
        fill = names.enqueue_many([[missing, str(files / "a.txt")]])
        key, _ = tf.TFRecordReader().read(names)
        with tf.Session() as sess:
            sess.run(fill)
            with pytest.raises(tf.errors.NotFoundError, match="missing.tfrecord; No such file"):
                sess.run(key)
            # the reader moved on to the next file, which is no TFRecord file
            with pytest.raises(tf.errors.DataLossError, match="corrupted record at 0"):
                sess.run(key)


# -- tf.data's file datasets -----------------------------------------------------------------------
def _elements(dataset):
    nxt = dataset.make_one_shot_iterator().get_next()
    out = []
    with tf.Session() as sess:
        with pytest.raises(tf.errors.OutOfRangeError):
            while True:
                out.append(sess.run(nxt))
    return out


def test_file_datasets_read_records_lines_and_fixed_length_records(files, tmp_path):
    a, b, f, r = (str(files / n) for n in ("a.txt", "b.txt", "f.bin", "r.tfr"))
    (tmp_path / "c.txt").write_bytes(b"p\nq\nr\ns\n")
    c = str(tmp_path / "c.txt")
    with tf.Graph().as_default():
        lines = tf.data.TextLineDataset([a, b])
        assert lines.output_types == tf.string and lines.output_shapes.as_list() == []
        assert _elements(lines) == [b"h1", b"line1", b"", b"line3", b"h2", b"x"]
        # TF's deterministic interleave of two files at a time (as TF 2.21 orders them)
        assert _elements(tf.data.TextLineDataset([a, b, c], num_parallel_reads=2)) == [
            b"h1", b"h2", b"line1", b"x", b"", b"line3", b"p", b"q", b"r", b"s"
        ]  # fmt: skip
        assert _elements(tf.data.TFRecordDataset(tf.constant(r))) == [b"aa", b"", b"ccc"]
        (tmp_path / "g.bin").write_bytes(bytes(range(20)))
        fixed = tf.data.FixedLengthRecordDataset(str(tmp_path / "g.bin"), 5, 2, 3)
        assert _elements(fixed) == [bytes(range(k, k + 5)) for k in (2, 7, 12)]
        batches = _elements(tf.data.TextLineDataset(a).batch(3).prefetch(tf.data.AUTOTUNE))
        assert [x.tolist() for x in batches] == [[b"h1", b"line1", b""], [b"line3"]]
        with pytest.raises(
            tf.errors.InvalidArgumentError,
            match="has body length 18 bytes, "
            r"which is not an exact multiple of the record length \(5 bytes\)",
        ):
            _elements(tf.data.FixedLengthRecordDataset(f, 5, 2, 3))
        (tmp_path / "g.gz").write_bytes(gzip.compress(bytes(range(23))))
        gz = tf.data.FixedLengthRecordDataset(str(tmp_path / "g.gz"), 5, 2, 3,
                                              compression_type="GZIP")  # fmt: skip
        with pytest.raises(tf.errors.DataLossError, match="not an exact multiple"):
            _elements(gz)
        with pytest.raises(tf.errors.NotFoundError, match="nope.tfrecord; No such file"):
            _elements(tf.data.TFRecordDataset(str(tmp_path / "nope.tfrecord")))
        with pytest.raises(ValueError, match="whose value is only known when the graph runs"):
            tf.data.TFRecordDataset(tf.placeholder(tf.string, []))
        with pytest.raises(TypeError, match="must be a tf.string tensor"):
            tf.data.TextLineDataset([1, 2])


def test_tfrecord_dataset_of_examples_feeds_a_compiled_step(tmp_path):
    rng = np.random.default_rng(1)
    xs = rng.normal(size=(30, 4)).astype(np.float32)
    path = str(tmp_path / "x.tfrecord.z")
    with tf.python_io.TFRecordWriter(path, options="ZLIB") as w:
        for i, x in enumerate(xs):
            feature = {
                "x": tf.train.Feature(float_list=tf.train.FloatList(value=x)),
                "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 3])),
            }
            w.write(tf.train.Example(features=tf.train.Features(feature=feature))
                    .SerializeToString())  # fmt: skip
    features = {"x": tf.FixedLenFeature([4], tf.float32), "y": tf.FixedLenFeature([], tf.int64)}
    with tf.Graph().as_default():
        dataset = tf.data.TFRecordDataset([path], compression_type="ZLIB").batch(8)
        batch = dataset.make_one_shot_iterator().get_next()
        parsed = tf.parse_example(batch, features)
        total = tf.reduce_sum(parsed["x"], axis=1) * tf.cast(parsed["y"], tf.float32)
        got = []
        with tf.Session() as sess:
            with pytest.raises(tf.errors.OutOfRangeError):
                while True:
                    got.append(sess.run(total))
    want = xs.sum(1) * (np.arange(30) % 3)
    np.testing.assert_allclose(np.concatenate(got), want, rtol=1e-5)
    assert [len(g) for g in got] == [8, 8, 8, 6]
    # TF1's other way: each record parsed by a map function, then batched
    with tf.Graph().as_default():
        dataset = tf.data.TFRecordDataset(path, "ZLIB").map(
            lambda record: tf.parse_single_example(record, features)["x"]
        )
        assert dataset.output_shapes.as_list() == [4]
        rows = _elements(dataset.batch(16))
    np.testing.assert_array_equal(np.concatenate(rows), xs)


def test_interleave_reads_a_dataset_per_file_name(files, tmp_path):
    a, b = str(files / "a.txt"), str(files / "b.txt")
    (tmp_path / "c.txt").write_bytes(b"p\nq\nr\ns\n")
    names = [a, b, str(tmp_path / "c.txt"), a]
    with tf.Graph().as_default():
        lines = tf.data.Dataset.from_tensor_slices(names).interleave(
            tf.data.TextLineDataset, cycle_length=3, block_length=2
        )
        # TF 2.21's order for these files
        assert _elements(lines) == [
            b"h1", b"line1", b"h2", b"x", b"p", b"q", b"", b"line3", b"r", b"s", b"h1", b"line1",
            b"", b"line3",
        ]  # fmt: skip
        # names computed in the function, and a map inside it, traced once as TF traces them
        stems = tf.data.Dataset.from_tensor_slices([str(files / "r"), str(files / "r")])
        records = stems.interleave(
            lambda stem: tf.data.TFRecordDataset(tf.string_join([stem, ".tfr"])).map(
                lambda r: tf.strings.length(r)
            ),
            cycle_length=2,
        )
        assert records.output_types == tf.int32
        assert [int(n) for n in _elements(records)] == [2, 2, 0, 0, 3, 3]
        with pytest.raises(TypeError, match="must return a Dataset, got Tensor"):
            stems.interleave(lambda stem: stem)
        with pytest.raises(TypeError, match="use names.interleave"):
            tf.data.TFRecordDataset(stems)
