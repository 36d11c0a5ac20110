"""An MLP on the 8x8 handwritten digits (1,797 images), written with TF1's low-level API.

Run: python samples/digits_mlp.py [--steps 1500] [--batch 64]
Shows progress (step, loss, examples/s) while it trains and prints the test accuracy.
"""

import argparse
import time
from pathlib import Path

import numpy as np

import tfc as tf

DATA = Path(__file__).resolve().parent / "data" / "digits.npz"


def load_digits(seed=0):
    data = np.load(DATA)
    images = (data["images"].reshape(-1, 64) / 16.0).astype(np.float32)
    labels = data["labels"].astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(images))
    test, train = order[:360], order[360:]  # 20% held out
    return (images[train], labels[train]), (images[test], labels[test])


def build_model(images, labels, learning_rate):
    hidden = tf.layers.dense(images, 128, activation=tf.nn.relu, name="hidden1")
    hidden = tf.layers.dense(hidden, 64, activation=tf.nn.relu, name="hidden2")
    logits = tf.layers.dense(hidden, 10, name="logits")
    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.AdamOptimizer(learning_rate).minimize(loss, global_step=global_step)
    correct = tf.equal(tf.argmax(logits, axis=1), labels)
    accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
    return loss, train_op, accuracy


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--learning_rate", type=float, default=0.002)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    (x_train, y_train), (x_test, y_test) = load_digits()
    tf.set_random_seed(args.seed)
    dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train))
    dataset = dataset.shuffle(len(x_train)).repeat().batch(args.batch)
    images, labels = dataset.make_one_shot_iterator().get_next()
    loss, train_op, accuracy = build_model(images, labels, args.learning_rate)

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        start, seen = time.perf_counter(), 0
        for step in range(1, args.steps + 1):
            _, step_loss = sess.run([train_op, loss])
            seen += args.batch
            if step % 100 == 0 or step == args.steps:
                rate = seen / (time.perf_counter() - start)
                print(f"step {step:5d}  loss {step_loss:.4f}  {rate:,.0f} examples/s")
                start, seen = time.perf_counter(), 0
        # the iterator's tensors can be fed like any tensor: evaluate on the held-out set
        test_accuracy = sess.run(accuracy, {images: x_test, labels: y_test})
        train_accuracy = sess.run(accuracy, {images: x_train, labels: y_train})
    print(f"train accuracy {train_accuracy:.3f}")
    print(f"test accuracy {test_accuracy:.3f}")


if __name__ == "__main__":
    main()
