"""LeNet-5 (samples/lenet_model.py) trained in a session on the 8x8 digits, upsampled to 28x28.

Run: python samples/lenet.py [--steps 500] [--batch 32]
Shows progress (step, loss, examples/s) while it trains and prints the test accuracy.
`--save-data DIR` also writes DIR/train.npy and DIR/test.npy (one flattened image and its
label per row) for the native executables of `tfc compile samples/lenet_model.py`.
"""

import argparse
import time
from pathlib import Path

import lenet_model
import numpy as np

import tfc as tf

DATA = Path(__file__).resolve().parent / "data" / "digits.npz"


def upsample_matrix(n_in: int, n_out: int) -> np.ndarray:
    """[n_out, n_in] bilinear interpolation between pixel centres (edges clamped)."""
    centres = (np.arange(n_out) + 0.5) * n_in / n_out - 0.5
    centres = np.clip(centres, 0, n_in - 1)
    low = np.floor(centres).astype(int)
    high = np.minimum(low + 1, n_in - 1)
    frac = centres - low
    m = np.zeros((n_out, n_in))
    m[np.arange(n_out), low] += 1 - frac
    m[np.arange(n_out), high] += frac
    return m


def load_digits(seed=0, size=lenet_model.IMAGE_SIZE):
    """(train, test) pairs of images [n, size, size, 1] in [0, 1] and int32 labels; the same
    20% held out as samples/digits_mlp.py."""
    data = np.load(DATA)
    m = upsample_matrix(8, size)
    images = np.einsum("ij,njk,lk->nil", m, data["images"] / 16.0, m)[..., None]
    images = images.astype(np.float32)
    labels = data["labels"].astype(np.int32)
    order = np.random.default_rng(seed).permutation(len(images))
    test, train = order[:360], order[360:]
    return (images[train], labels[train]), (images[test], labels[test])


def save_data(directory, train, test):
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for name, (x, y) in (("train", train), ("test", test)):
        rows = np.concatenate([x.reshape(len(x), -1), y[:, None].astype(np.float32)], axis=1)
        np.save(directory / f"{name}.npy", rows)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--learning_rate", type=float, default=0.002)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--save-data", metavar="DIR")
    args = parser.parse_args()

    train, test = load_digits()
    if args.save_data:
        save_data(args.save_data, train, test)
    sig = lenet_model.signatures()
    images, labels = sig["train"]["inputs"]["features"], sig["train"]["inputs"]["labels"]
    loss, train_op = sig["train"]["loss"], sig["train"]["train_op"]
    learning_rate = sig["train"]["hyperparameters"]["learning_rate"]
    probabilities = sig["predict"]["outputs"]["probabilities"]

    rng = np.random.default_rng(args.seed)
    x_train, y_train = train
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
        predicted = sess.run(probabilities, {images: test[0]}).argmax(axis=1)
    print(f"test accuracy {np.mean(predicted == test[1]):.3f}")


if __name__ == "__main__":
    main()
