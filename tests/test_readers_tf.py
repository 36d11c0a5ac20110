"""TF comparison of the readers and file datasets: every reader (and read_up_to) and every file
dataset, on the same files, gives what tf.compat.v1 gives, errors included (skipped without
tensorflow)."""

import gzip

import numpy as np
import pytest

import tfc

tf = pytest.importorskip("tensorflow")
tf1 = tf.compat.v1


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("readers_tf")
    rng = np.random.default_rng(7)
    (d / "a.txt").write_bytes(b"head\n\r\nword \r\n\nlast")
    (d / "b.txt").write_bytes(b"only header\n")
    (d / "c.txt.gz").write_bytes(gzip.compress(b"1\n2\n3\n4\n5\n"))
    (d / "f.bin").write_bytes(rng.bytes(3 + 7 * 9 + 2))
    (d / "g.bin").write_bytes(rng.bytes(40))
    records = [rng.bytes(int(n)) for n in rng.integers(0, 300, size=12)]
    with tf.io.TFRecordWriter(str(d / "r0.tfr")) as w:
        for r in records[:5]:
            w.write(r)
    with tf.io.TFRecordWriter(str(d / "r1.tfr"), options="GZIP") as w:
        for r in records[5:]:
            w.write(r)
    return {name: str(d / name) for name in ("a.txt", "b.txt", "c.txt.gz", "f.bin", "g.bin",
                                              "r0.tfr", "r1.tfr")}  # fmt: skip


def _read_all(api, make, names, upto=None):
    outs = []
    with api.Graph().as_default():
        queue = api.train.string_input_producer(names, num_epochs=2, shuffle=False)
        reader = make(api)
        key, value = reader.read_up_to(queue, upto) if upto else reader.read(queue)
        counts = [reader.num_records_produced(), reader.num_work_units_completed()]
        with api.Session() as sess:
            sess.run(api.local_variables_initializer())
            coord = api.train.Coordinator()
            threads = api.train.start_queue_runners(sess, coord)
            try:
                for _ in range(100):
                    k, v = sess.run([key, value])
                    outs.append((np.asarray(k).tolist(), np.asarray(v).tolist()))
            except api.errors.OutOfRangeError:
                outs.append("end")
            outs.append([int(c) for c in sess.run(counts)])
            coord.request_stop()
            coord.join(threads)
    return outs


READERS = {
    "text": (lambda api: api.TextLineReader(), ["a.txt", "b.txt"], None),
    "text_skip": (lambda api: api.TextLineReader(skip_header_lines=1), ["a.txt", "b.txt"], None),
    "text_up_to": (lambda api: api.TextLineReader(), ["a.txt", "b.txt"], 2),
    "tfrecord": (lambda api: api.TFRecordReader(), ["r0.tfr"], None),
    "tfrecord_gzip_up_to": (
        lambda api: api.TFRecordReader(options=api.python_io.TFRecordOptions("GZIP")),
        ["r1.tfr"], 3,
    ),
    "fixed": (lambda api: api.FixedLengthRecordReader(7, 3, 2), ["f.bin", "g.bin"], None),
    "fixed_hop": (lambda api: api.FixedLengthRecordReader(7, 3, 2, hop_bytes=5), ["f.bin"], 4),
    "whole": (lambda api: api.WholeFileReader(), ["a.txt", "f.bin"], None),
    "identity": (lambda api: api.IdentityReader(), ["a.txt", "b.txt"], 3),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(READERS))
def test_readers_give_what_tf_gives(files, case):
    make, names, upto = READERS[case]
    paths = [files[n] for n in names]
    assert _read_all(tfc, make, paths, upto) == _read_all(tf1, make, paths, upto)


def _elements(api, make):
    outs = []
    with api.Graph().as_default():
        dataset = make(api)
        nxt = api.data.make_one_shot_iterator(dataset).get_next()
        with api.Session() as sess:
            try:
                for _ in range(100):
                    outs.append(np.asarray(sess.run(nxt)).tolist())
            except api.errors.OpError as e:
                outs.append(type(e).__name__)
    return outs


DATASETS = {
    "text": lambda api, f: api.data.TextLineDataset([f["a.txt"], f["b.txt"]]),
    "text_gzip": lambda api, f: api.data.TextLineDataset(f["c.txt.gz"], compression_type="GZIP"),
    "text_interleaved": lambda api, f: api.data.TextLineDataset(
        [f["a.txt"], f["b.txt"], f["a.txt"], f["a.txt"]], num_parallel_reads=3
    ),
    "tfrecord": lambda api, f: api.data.TFRecordDataset(f["r0.tfr"]).batch(2),
    "tfrecord_gzip": lambda api, f: api.data.TFRecordDataset([f["r1.tfr"]], "GZIP"),
    "fixed": lambda api, f: api.data.FixedLengthRecordDataset(f["f.bin"], 7, 3, 2),
    "fixed_inexact": lambda api, f: api.data.FixedLengthRecordDataset(f["g.bin"], 7),
    "interleave": lambda api, f: api.data.Dataset.from_tensor_slices(
        [f["a.txt"], f["b.txt"], f["a.txt"], f["c.txt.gz"], f["a.txt"]]
    ).interleave(lambda n: api.data.TextLineDataset(n), cycle_length=2, block_length=3),
    "interleave_gzip": lambda api, f: api.data.Dataset.from_tensor_slices(
        [f["r1.tfr"], f["r1.tfr"]]
    ).interleave(lambda n: api.data.TFRecordDataset(n, "GZIP"), cycle_length=4),
    "missing": lambda api, f: api.data.TFRecordDataset(f["a.txt"] + ".missing"),
    "not_tfrecord": lambda api, f: api.data.TFRecordDataset(f["a.txt"]),
}


@pytest.mark.parametrize("case", sorted(DATASETS))
def test_file_datasets_give_what_tf_gives(files, case):
    def make(api):
        return DATASETS[case](api, files)

    assert _elements(tfc, make) == _elements(tf1, make)
