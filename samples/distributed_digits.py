"""Distributed training of the digits MLP, in the whitepaper's `tf.device` style, compiled.

The parameters live on the parameter server task, the model runs on the worker; tfc places
and cuts the graph at compile time, and every worker of the cluster runs a replica of the
worker part on its own slice of each step's batch (synchronous data parallelism: the ps
averages the workers' gradients and applies one update per step).

    python samples/distributed_digits.py            # all of the below, on loopback
    python samples/distributed_digits.py --async --steps 1500

or by hand:

    python samples/digits_model.py build/digits.npy
    tfc compile samples/distributed_digits.py --cluster cluster.json -o build/dd --batch 32
    tfc launch build/dd --ps 1 --workers 2 --sync -- --data build/digits.npy --steps 1500 \\
        --checkpoint-dir ckpt
    build/dd/train --job worker --task 1 ...      # or start each task yourself (train --help)

cluster.json is a ClusterSpec: {"ps": ["host:port"], "worker": ["host:port", "host:port"]}.
"""

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

import tfc as tf

sys.path.insert(0, str(Path(__file__).resolve().parent))
import digits_model  # noqa: E402  (the data and its held-out split)

HIDDEN = 128


def signatures():
    tf.set_random_seed(1)
    images = tf.placeholder(tf.float32, [None, 64], name="images")
    labels = tf.placeholder(tf.int64, [None], name="labels")
    learning_rate = tf.placeholder_with_default(0.1, [], name="learning_rate")
    with tf.device("/job:ps/task:0"):
        w1 = tf.Variable(tf.truncated_normal([64, HIDDEN], stddev=0.1), name="hidden/weights")
        b1 = tf.Variable(tf.zeros([HIDDEN]), name="hidden/biases")
        w2 = tf.Variable(tf.truncated_normal([HIDDEN, 10], stddev=0.1), name="softmax/weights")
        b2 = tf.Variable(tf.zeros([10]), name="softmax/biases")
        global_step = tf.train.get_or_create_global_step()
    with tf.device("/job:worker/task:0"):
        hidden = tf.nn.relu(tf.matmul(images, w1) + b1)
        logits = tf.matmul(hidden, w2) + b2
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        )
        train_op = tf.train.MomentumOptimizer(learning_rate, 0.9).minimize(
            loss, global_step=global_step
        )
    return {
        "train": {
            "inputs": {"features": images, "labels": labels},
            "loss": loss,
            "train_op": train_op,
            "hyperparameters": {"learning_rate": learning_rate},
        },
    }


def held_out_accuracy(checkpoint: Path) -> float:
    """Accuracy of the checkpoint's weights on the 360 images training never sees."""
    from tfc.io.checkpoint import read_safetensors

    weights, _ = read_safetensors(checkpoint)
    data = np.load(digits_model.DATA)
    images = data["images"].reshape(-1, 64) / 16.0
    order = np.random.default_rng(0).permutation(len(images))[:360]
    hidden = np.maximum(images[order] @ weights["hidden/weights"] + weights["hidden/biases"], 0)
    logits = hidden @ weights["softmax/weights"] + weights["softmax/biases"]
    return float(np.mean(np.argmax(logits, axis=1) == data["labels"][order]))


def main() -> None:
    from tfc.aot import compile as tfc_compile
    from tfc.aot.launch import Launcher

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--batch", type=int, default=32, help="per worker")
    parser.add_argument("--async", dest="async_", action="store_true")
    parser.add_argument("--quiet", action="store_true", help="no task logs, only the result")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        np.save(tmp / "digits.npy", digits_model.training_rows())
        # the compiled-in cluster is a default; the launcher gives the tasks free ports
        cluster = {"ps": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223"] * args.workers}
        (tmp / "cluster.json").write_text(json.dumps(cluster))
        outdir = tfc_compile(__file__, tmp / "build", batch=args.batch,
                             cluster=tmp / "cluster.json").outdir  # fmt: skip
        out = open(os.devnull, "w") if args.quiet else sys.stdout
        launcher = Launcher(outdir, 1, args.workers, [
            "--async" if args.async_ else "--sync", "--data", str(tmp / "digits.npy"),
            "--steps", str(args.steps), "--checkpoint-dir", str(tmp / "ckpt"),
            "--log-every", "100",
        ], timeout=300, out=out)  # fmt: skip
        status = launcher.run()
        if status != 0:
            sys.exit(f"training failed (status {status})")
        final = tmp / "ckpt" / "ps-0" / f"model.ckpt-{args.steps}.safetensors"
        mode = "asynchronous" if args.async_ else "synchronous"
        print(f"{mode}, 1 ps + {args.workers} workers, {args.steps} steps: "
              f"held-out accuracy {held_out_accuracy(final):.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
