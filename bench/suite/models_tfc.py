"""The workloads' models as tfc graphs, written as model-file `signatures()` functions, so the
same function feeds a Session and `tfc compile` (whose init program draws the same weights)."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

from suite import workloads

ROOT = Path(__file__).resolve().parents[2]
SEED = 7  # the graph seed: every build of a model starts from the same initial weights


def _lenet_logits(images):
    if str(ROOT / "samples") not in sys.path:
        sys.path.insert(0, str(ROOT / "samples"))
    import lenet_model  # samples/lenet_model.py: the LeNet-5 of `tfc compile` and samples/

    return lenet_model.lenet(images)


def _mlp_logits(images, sizes):
    import tfc as tf

    net = images
    for i, units in enumerate(sizes[1:-1]):
        net = tf.layers.dense(net, units, activation=tf.nn.relu, name=f"dense{i}")
    return tf.layers.dense(net, sizes[-1], name="logits")


def _signatures(w: dict) -> dict:
    import tfc as tf

    tf.set_random_seed(SEED)
    features = tf.placeholder(tf.float32, [None, *workloads.input_shape(w)], name="features")
    labels = tf.placeholder(tf.int32, [None], name="labels")
    if w["model"] == "mlp":
        logits = _mlp_logits(features, w["sizes"])
    else:
        logits = _lenet_logits(features)
    probabilities = tf.nn.softmax(logits, name="probabilities")
    per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    loss = tf.reduce_mean(per_example, name="loss")
    weights = tf.trainable_variables()
    learning_rate = tf.placeholder_with_default(float(w.get("lr", 0.001)), [], name="lr")
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.AdamOptimizer(learning_rate).minimize(loss, global_step=global_step)
    return {
        "train": {
            "inputs": {"features": features, "labels": labels},
            "loss": loss,
            "train_op": train_op,
            "hyperparameters": {"learning_rate": learning_rate},
        },
        "predict": {"inputs": {"features": features}, "outputs": {"probabilities": probabilities}},
        "_weights": weights,
    }


def signatures_function(w: dict):
    """The model file's `signatures()` for `tfc.compile` (without the bench's extra keys)."""

    def signatures():
        s = _signatures(w)
        del s["_weights"]
        return s

    return signatures


def build(w: dict) -> dict:
    """Build the workload's graph in the default graph: the signatures plus `_weights`, the
    trainable variables in creation order (kernel, bias of each layer, input to output)."""
    return _signatures(w)


def loaded_session(w: dict, weights: list):
    """(graph, session, signatures) of the workload in a new graph, its variables initialized
    and then set to `weights` (in `_weights` order: the values every framework starts from)."""
    import tfc as tf

    graph = tf.Graph()
    with graph.as_default():
        sigs = build(w)
        sess = tf.Session(graph=graph)
        sess.run(tf.global_variables_initializer())
        for var, value in zip(sigs["_weights"], weights):
            var.load(value, sess)
    return graph, sess, sigs


@functools.cache
def _initial_weights(key: str) -> list:
    import json

    import tfc as tf

    w = json.loads(key)
    with tf.Graph().as_default():
        sigs = build(w)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return [sess.run(v) for v in sigs["_weights"]]


def initial_weights(w: dict) -> list:
    """The initial values of the model's weights as tfc's init program draws them (the
    weights every framework starts from)."""
    import json

    key = {k: w[k] for k in ("model", "sizes") if k in w}
    return [a.copy() for a in _initial_weights(json.dumps(key, sort_keys=True))]
