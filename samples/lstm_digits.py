"""An LSTM classifying the 8x8 digits read row by row (8 steps of 8 pixels), trained with
Session.run (the model of samples/lstm_digits_model.py: BasicLSTMCell(64), dynamic_rnn, Adam).

Run: python samples/lstm_digits.py [--steps 1200] [--batch 64]
     python samples/lstm_digits.py --framework tensorflow   # the same program on TensorFlow 1
Shows progress while it trains and prints the test accuracy.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import lstm_digits_model as model  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1200)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--learning_rate", type=float, default=0.005)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--framework", choices=["tfc", "tensorflow"], default="tfc")
    args = parser.parse_args()
    if args.framework == "tensorflow":
        import tensorflow.compat.v1 as tf

        tf.disable_v2_behavior()
    else:
        import tfc as tf

    (x_train, y_train), (x_test, y_test) = model.load_digits()
    tf.set_random_seed(args.seed)
    images = tf.placeholder(tf.float32, [None, model.N_FEATURES])
    labels = tf.placeholder(tf.int64, [None])
    logits = model.logits_of(images, tf)
    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    train_op = tf.train.AdamOptimizer(args.learning_rate).minimize(loss)
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, axis=1), labels), tf.float32))

    rng = np.random.default_rng(args.seed)
    order = rng.permutation(len(x_train))
    position = 0
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        start, seen = time.perf_counter(), 0
        for step in range(1, args.steps + 1):
            if position + args.batch > len(order):
                order, position = rng.permutation(len(x_train)), 0
            batch = order[position : position + args.batch]
            position += args.batch
            feed = {images: x_train[batch], labels: y_train[batch]}
            _, step_loss = sess.run([train_op, loss], feed)
            seen += args.batch
            if step % 100 == 0 or step == args.steps:
                rate = seen / (time.perf_counter() - start)
                print(f"step {step:5d}  loss {step_loss:.4f}  {rate:,.0f} examples/s")
                start, seen = time.perf_counter(), 0
        test_accuracy = sess.run(accuracy, {images: x_test, labels: y_test})
    print(f"test accuracy {test_accuracy:.3f}")


if __name__ == "__main__":
    main()
