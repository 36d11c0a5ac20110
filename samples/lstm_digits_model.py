"""An LSTM reading each 8x8 digit row by row (8 steps of 8 values) as a tfc model file, for
native train and predict executables and the embeddable library.

    python samples/lstm_digits_model.py build/digits.npy     # the training rows as one .npy
    tfc compile samples/lstm_digits_model.py -o build/lstm --batch 64
    build/lstm/train --data build/digits.npy --steps 1500 --checkpoint-dir ckpt

tf.nn.dynamic_rnn runs a BasicLSTMCell of 64 units over the rows (a native loop of 8
iterations); a dense layer maps its last output to ten classes; the mean sparse softmax cross
entropy is minimized with Adam (learning rate 0.005, a hyperparameter: `train --lr`).
samples/lstm_digits.py trains the same model with Session.run.
"""

import sys
from pathlib import Path

import numpy as np

import tfc as tf

STEPS, ROW = 8, 8  # an image is 8 rows of 8 pixels
N_FEATURES = STEPS * ROW
UNITS = 64
N_CLASSES = 10
SEED = 1
DATA = Path(__file__).resolve().parent / "data" / "digits.npz"


def logits_of(images, lib=tf):
    """The classifier's logits for images [batch, 64] scaled to [0, 1] (`lib`: tfc, or
    tensorflow.compat.v1 to run the same model in TensorFlow)."""
    rows = lib.reshape(images, [-1, STEPS, ROW])
    cell = lib.nn.rnn_cell.BasicLSTMCell(UNITS)
    _, state = lib.nn.dynamic_rnn(cell, rows, dtype=lib.float32)
    return lib.layers.dense(state.h, N_CLASSES, name="logits")


def signatures():
    tf.set_random_seed(SEED)
    images = tf.placeholder(tf.float32, [None, N_FEATURES], name="images")
    labels = tf.placeholder(tf.int64, [None], name="labels")
    learning_rate = tf.placeholder_with_default(0.005, [], name="learning_rate")
    logits = logits_of(images)
    probabilities = tf.nn.softmax(logits, name="probabilities")
    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.AdamOptimizer(learning_rate).minimize(loss, global_step=global_step)
    return {
        "train": {
            "inputs": {"features": images, "labels": labels},
            "loss": loss,
            "train_op": train_op,
            "hyperparameters": {"learning_rate": learning_rate},
        },
        "predict": {
            "inputs": {"features": images},
            "outputs": {"probabilities": probabilities},
        },
    }


def load_digits(seed=0):
    """(train, test): 64 features scaled to [0, 1] and int64 labels; 360 images held out."""
    data = np.load(DATA)
    images = (data["images"].reshape(-1, N_FEATURES) / 16.0).astype(np.float32)
    labels = data["labels"].astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(images))
    test, train = order[:360], order[360:]
    return (images[train], labels[train]), (images[test], labels[test])


def training_rows(seed=0):
    """The training images and their labels as rows, the layout the native `train` reads."""
    (images, labels), _ = load_digits(seed)
    return np.column_stack([images, labels]).astype(np.float32)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python samples/lstm_digits_model.py OUT.npy  (writes the training rows)")
    np.save(sys.argv[1], training_rows())
    print(f"wrote {sys.argv[1]}")
