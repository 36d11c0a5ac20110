"""The tf.layers CNN (samples/layers_cnn_model.py) trained in a session on the digits of
samples/lenet.py (8x8, upsampled to 28x28).

Run: python samples/layers_cnn.py [--steps 500] [--batch 32]
Shows progress (step, loss, examples/s) while it trains and prints the test accuracy, computed
by the predicting copy of the network (moving averages, no dropout).
"""

import argparse
import time

import layers_cnn_model
import numpy as np
from lenet import load_digits

import tfc as tf


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--learning_rate", type=float, default=0.003)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    (x_train, y_train), (x_test, y_test) = load_digits()
    sig = layers_cnn_model.signatures()
    images, labels = sig["train"]["inputs"]["features"], sig["train"]["inputs"]["labels"]
    loss, train_op = sig["train"]["loss"], sig["train"]["train_op"]
    learning_rate = sig["train"]["hyperparameters"]["learning_rate"]
    probabilities = sig["predict"]["outputs"]["probabilities"]

    rng = np.random.default_rng(args.seed)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        order, cursor = rng.permutation(len(x_train)), 0
        start, seen = time.perf_counter(), 0
        for step in range(1, args.steps + 1):
            if cursor + args.batch > len(order):  # a new epoch, freshly shuffled
                order, cursor = rng.permutation(len(x_train)), 0
            batch = order[cursor : cursor + args.batch]
            cursor += args.batch
            feed = {
                images: x_train[batch],
                labels: y_train[batch],
                learning_rate: args.learning_rate,
            }
            step_loss, _ = sess.run([loss, train_op], feed)
            seen += args.batch
            if step % 100 == 0 or step == args.steps:
                rate = seen / (time.perf_counter() - start)
                print(f"step {step:5d}  loss {step_loss:.4f}  {rate:,.0f} examples/s", flush=True)
                start, seen = time.perf_counter(), 0
        predicted = sess.run(probabilities, {images: x_test}).argmax(axis=1)
    print(f"test accuracy {np.mean(predicted == y_test):.3f}")


if __name__ == "__main__":
    main()
