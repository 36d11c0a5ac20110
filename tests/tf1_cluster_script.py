"""A TF1 between-graph replication script, as TF1 users write them, for test_cluster_tf1.py.

    python tf1_cluster_script.py --job_name ps --task_index 0 --ps_hosts H:P \\
        --worker_hosts H:P,H:P --steps 4 --out result.json

A linear softmax classifier of 3 features, 2 classes; worker w's i-th batch is batch(i, w).
Each worker writes its steps' [global step, loss] and the trained w and b to --out.
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import tfc as tf  # noqa: E402

BATCH, FEATURES, CLASSES, LR = 4, 3, 2, 0.5
W0 = np.arange(FEATURES * CLASSES, dtype=np.float32).reshape(FEATURES, CLASSES) / 10 - 0.2


def batch(i: int, worker: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1000 * i + worker)
    x = rng.normal(size=(BATCH, FEATURES)).astype(np.float32)
    return x, (x[:, 0] + x[:, 1] > 0).astype(np.int64)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--job_name", required=True)
    parser.add_argument("--task_index", type=int, default=0)
    parser.add_argument("--ps_hosts", required=True)
    parser.add_argument("--worker_hosts", required=True)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--out")
    args = parser.parse_args()
    workers = args.worker_hosts.split(",")
    cluster = tf.train.ClusterSpec({"ps": args.ps_hosts.split(","), "worker": workers})
    server = tf.train.Server(cluster, job_name=args.job_name, task_index=args.task_index)
    if args.job_name == "ps":
        server.join()
        return
    setter = tf.train.replica_device_setter(
        worker_device=f"/job:worker/task:{args.task_index}", cluster=cluster
    )
    with tf.device(setter):
        x = tf.placeholder(tf.float32, [None, FEATURES], name="x")
        y = tf.placeholder(tf.int64, [None], name="y")
        w = tf.Variable(W0, name="w")
        b = tf.Variable(tf.zeros([CLASSES]), name="b")
        logits = tf.matmul(x, w) + b
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        )
        global_step = tf.train.get_or_create_global_step()
        opt = tf.train.SyncReplicasOptimizer(
            tf.train.GradientDescentOptimizer(LR),
            replicas_to_aggregate=len(workers),
            total_num_replicas=len(workers),
        )
        train_op = opt.minimize(loss, global_step=global_step)
    is_chief = args.task_index == 0
    final = tf.train.FinalOpsHook([w, b])  # the ps's values after the last update
    hooks = [
        opt.make_session_run_hook(is_chief),
        tf.train.StopAtStepHook(last_step=args.steps),
        final,
    ]
    seen = []
    with tf.train.MonitoredTrainingSession(
        master=server.target, is_chief=is_chief, hooks=hooks
    ) as sess:
        while not sess.should_stop():
            xs, ys = batch(len(seen), args.task_index)
            _, loss_value, step = sess.run([train_op, loss, global_step], {x: xs, y: ys})
            seen.append([int(step), float(loss_value)])
    w_value, b_value = final.final_ops_values
    result = {"steps": seen, "w": w_value.tolist(), "b": b_value.tolist()}
    Path(args.out).write_text(json.dumps(result))


if __name__ == "__main__":
    main()
