"""TF1's queue-based input, the way TF1 scripts read CSV files, with `import tfc as tf`.

string_input_producer -> TextLineReader -> decode_csv -> shuffle_batch feed a small network
trained by MonitoredTrainingSession until a StopAtStepHook, which also writes checkpoints and
loss summaries; the test set is then read once through the same kind of pipeline and scored.

Run: python samples/iris_queues.py [--train_steps 600] [--logdir DIR]
Then: tensorboard --logdir DIR
"""

import argparse
import tempfile
from pathlib import Path

import numpy as np

import tfc as tf

DATA = Path(__file__).resolve().parent / "data"
BATCH = 32


def csv_batches(path, num_epochs, shuffle, seed=None):
    """(features [n, 4], labels [n]) batches of the rows of a CSV file (its header skipped)."""
    files = tf.train.string_input_producer([str(path)], num_epochs=num_epochs, shuffle=False)
    reader = tf.TextLineReader(skip_header_lines=1)
    # up to BATCH lines a run: a run per line would spend most of the time in Session.run
    _, lines = reader.read_up_to(files, BATCH)
    *columns, label = tf.decode_csv(lines, record_defaults=[[0.0]] * 4 + [[0]])
    features = tf.stack(columns, axis=1)
    if shuffle:
        return tf.train.shuffle_batch(
            [features, label], BATCH, capacity=500, min_after_dequeue=100, enqueue_many=True,
            seed=seed, shapes=[[4], []],
        )  # fmt: skip
    return tf.train.batch(
        [features, label], BATCH, enqueue_many=True, shapes=[[4], []],
        allow_smaller_final_batch=True,
    )  # fmt: skip


def model(features):
    with tf.variable_scope("iris", reuse=tf.AUTO_REUSE):
        hidden = tf.layers.dense(features, 16, activation=tf.nn.relu, name="hidden1")
        hidden = tf.layers.dense(hidden, 16, activation=tf.nn.relu, name="hidden2")
        return tf.layers.dense(hidden, 3, name="logits")


def train_and_evaluate(train_steps, logdir, seed=1):
    """Train for `train_steps` steps with checkpoints and summaries in `logdir`; returns the
    accuracy on the test set."""
    with tf.Graph().as_default():
        tf.set_random_seed(seed)
        x, y = csv_batches(DATA / "iris_training.csv", None, shuffle=True, seed=seed)
        loss = tf.losses.sparse_softmax_cross_entropy(y, model(x))
        tf.summary.scalar("loss", loss)
        step = tf.train.get_or_create_global_step()
        train_op = tf.train.AdamOptimizer(0.02).minimize(loss, global_step=step)
        hooks = [tf.train.StopAtStepHook(last_step=train_steps)]
        with tf.train.MonitoredTrainingSession(
            checkpoint_dir=logdir, hooks=hooks, save_summaries_steps=50, log_step_count_steps=0
        ) as sess:
            while not sess.should_stop():
                sess.run(train_op)

    with tf.Graph().as_default():
        x, y = csv_batches(DATA / "iris_test.csv", 1, shuffle=False)
        predicted = tf.argmax(model(x), axis=1, output_type=tf.int32)
        correct = total = 0
        # restores the last checkpoint; reading past the test file's one epoch ends the loop
        with tf.train.SingularMonitoredSession(checkpoint_dir=logdir) as sess:
            while not sess.should_stop():
                got, want = sess.run([predicted, y])
                correct += int(np.sum(got == want))
                total += len(want)
    return correct / total


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--train_steps", default=600, type=int)
    parser.add_argument("--logdir", default=None, help="checkpoints and event files")
    args = parser.parse_args()
    logdir = args.logdir or tempfile.mkdtemp(prefix="iris_queues_")
    accuracy = train_and_evaluate(args.train_steps, logdir)
    print(f"Test set accuracy: {accuracy:.3f}")
    print(f"Event files: tensorboard --logdir {logdir}")


if __name__ == "__main__":
    main()
