"""The digits MLP of samples/digits_mlp.py as a tfc model file, for native train and predict.

    tfc inspect samples/digits_model.py                  # passes, kernels, arena, FLOPs
    python samples/digits_model.py build/digits.npy      # the training images as one .npy
    tfc compile samples/digits_model.py -o build/digits --batch 64
    build/digits/train --data build/digits.npy --steps 1500 --checkpoint-dir ckpt

8x8 images flattened to 64 features scaled to [0, 1], two hidden layers of 128 and 64 ReLU
units, ten classes; the mean sparse softmax cross entropy, minimized with Adam (learning rate
0.002, a hyperparameter: `train --lr`).
"""

import sys
from pathlib import Path

import numpy as np

import tfc as tf

N_FEATURES = 64
HIDDEN_UNITS = [128, 64]
N_CLASSES = 10
SEED = 1  # the graph seed: every compile starts from the same initial weights
DATA = Path(__file__).resolve().parent / "data" / "digits.npz"


def signatures():
    tf.set_random_seed(SEED)
    images = tf.placeholder(tf.float32, [None, N_FEATURES], name="images")
    labels = tf.placeholder(tf.int64, [None], name="labels")
    learning_rate = tf.placeholder_with_default(0.002, [], name="learning_rate")
    net = images
    for i, units in enumerate(HIDDEN_UNITS, start=1):
        net = tf.layers.dense(net, units, activation=tf.nn.relu, name=f"hidden{i}")
    logits = tf.layers.dense(net, N_CLASSES, name="logits")
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


def training_rows(seed=0):
    """The rows digits_mlp.py trains on (all but its 360 held-out images): 64 features scaled
    as in training, then the label, the layout the native `train` reads."""
    data = np.load(DATA)
    images = data["images"].reshape(-1, N_FEATURES) / 16.0
    order = np.random.default_rng(seed).permutation(len(images))[360:]
    return np.column_stack([images[order], data["labels"][order]]).astype(np.float32)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python samples/digits_model.py OUT.npy  (writes the training rows)")
    np.save(sys.argv[1], training_rows())
    print(f"wrote {sys.argv[1]}")
