"""Examples/s of TFRecord input three ways: tf_record_iterator alone, tf.data (TFRecordDataset
-> batch -> parse_example) and a TFRecordReader fed by string_input_producer (read_up_to ->
parse_example -> batch), each fetching parsed batches from a Session.

Run: python bench/readers_input.py [--examples 20000] [--batch 256]
"""

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

import tfc as tf


def write_examples(path: Path, n: int) -> None:
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(n, 16)).astype(np.float32)
    with tf.python_io.TFRecordWriter(str(path)) as w:
        for i, x in enumerate(xs):
            feature = {
                "x": tf.train.Feature(float_list=tf.train.FloatList(value=x)),
                "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 10])),
            }
            w.write(tf.train.Example(features=tf.train.Features(feature=feature))
                    .SerializeToString())  # fmt: skip


FEATURES = {"x": tf.FixedLenFeature([16], tf.float32), "y": tf.FixedLenFeature([], tf.int64)}


def drain(sess, fetch) -> int:
    count = 0
    try:
        while True:
            count += len(sess.run(fetch))
    except tf.errors.OutOfRangeError:
        return count


def bench_iterator(path: Path) -> tuple[int, float]:
    start = time.perf_counter()
    count = sum(1 for _ in tf.python_io.tf_record_iterator(str(path)))
    return count, time.perf_counter() - start


def bench_dataset(path: Path, batch: int) -> tuple[int, float]:
    with tf.Graph().as_default():
        records = tf.data.TFRecordDataset(str(path)).batch(batch)
        parsed = tf.parse_example(records.make_one_shot_iterator().get_next(), FEATURES)
        with tf.Session() as sess:
            start = time.perf_counter()
            count = drain(sess, parsed["y"])
            return count, time.perf_counter() - start


def bench_reader(path: Path, batch: int) -> tuple[int, float]:
    with tf.Graph().as_default():
        files = tf.train.string_input_producer([str(path)], num_epochs=1, shuffle=False)
        _, records = tf.TFRecordReader().read_up_to(files, batch)
        parsed = tf.parse_example(records, FEATURES)
        x, y = tf.train.batch([parsed["x"], parsed["y"]], batch, enqueue_many=True,
                              capacity=4 * batch, allow_smaller_final_batch=True)  # fmt: skip
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            start = time.perf_counter()
            count = drain(sess, y)
            elapsed = time.perf_counter() - start
            coord.request_stop()
            coord.join(threads)
            return count, elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--examples", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=256)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "data.tfrecord"
        write_examples(path, args.examples)
        for name, run in [
            ("tf_record_iterator (records only)", lambda: bench_iterator(path)),
            ("TFRecordDataset + parse_example", lambda: bench_dataset(path, args.batch)),
            ("TFRecordReader + parse_example + batch", lambda: bench_reader(path, args.batch)),
        ]:
            run()  # compiles and warms the caches
            count, seconds = run()
            assert count == args.examples, (name, count)
            print(f"{name:40s} {count / seconds:12,.0f} examples/s")


if __name__ == "__main__":
    main()
