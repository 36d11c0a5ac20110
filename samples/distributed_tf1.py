"""Distributed training of the digits MLP, written the usual TF1 way, on tfc's compiled runtime.

The same data and model as samples/distributed_digits.py, as a TF1 between-graph replication
script: tf.train.ClusterSpec and Server, variables placed by replica_device_setter,
SyncReplicasOptimizer (the ps averages the two workers' gradients and applies one update per
step) and MonitoredTrainingSession with StopAtStepHook. The ps task's server.join() builds and
runs the ps programs the workers compile (docs/distributed.md, "TF1 cluster scripts").

    python samples/distributed_tf1.py      # spawns 1 ps + 2 workers on loopback free ports

or each task yourself (every task with the same TFC_CLUSTER_TOKEN, a shared secret):

    python samples/distributed_tf1.py --job_name ps --task_index 0 \\
        --ps_hosts localhost:2222 --worker_hosts localhost:2223,localhost:2224
    python samples/distributed_tf1.py --job_name worker --task_index 0 ...   # and task 1
"""

import argparse
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import digits_model  # noqa: E402  (the data and its held-out split)

import tfc as tf  # noqa: E402

HIDDEN = 128


def held_out_accuracy(w1, b1, w2, b2) -> float:
    """Accuracy on the 360 images training never sees (as samples/distributed_digits.py)."""
    data = np.load(digits_model.DATA)
    images = data["images"].reshape(-1, 64) / 16.0
    order = np.random.default_rng(0).permutation(len(images))[:360]
    logits = np.maximum(images[order] @ w1 + b1, 0) @ w2 + b2
    return float(np.mean(np.argmax(logits, axis=1) == data["labels"][order]))


def batches(task: int, workers: int, batch: int):
    """Each step's slice of this worker: the global batch of every worker is drawn from one
    shuffle per epoch, the same on every worker."""
    rows = digits_model.training_rows()
    rng = np.random.default_rng(0)
    per_step = batch * workers
    while True:
        order = rng.permutation(len(rows))
        for start in range(0, len(rows) - per_step + 1, per_step):
            mine = rows[order[start + task * batch : start + (task + 1) * batch]]
            yield mine[:, :64], mine[:, 64].astype(np.int64)


def run_task(args: argparse.Namespace) -> None:
    workers = args.worker_hosts.split(",")
    cluster = tf.train.ClusterSpec({"ps": args.ps_hosts.split(","), "worker": workers})
    server = tf.train.Server(cluster, job_name=args.job_name, task_index=args.task_index)
    if args.job_name == "ps":
        server.join()
        return
    tf.set_random_seed(1)
    with tf.device(tf.train.replica_device_setter(
        worker_device=f"/job:worker/task:{args.task_index}", cluster=cluster
    )):  # fmt: skip
        images = tf.placeholder(tf.float32, [None, 64], name="images")
        labels = tf.placeholder(tf.int64, [None], name="labels")
        w1 = tf.Variable(tf.truncated_normal([64, HIDDEN], stddev=0.1), name="hidden/weights")
        b1 = tf.Variable(tf.zeros([HIDDEN]), name="hidden/biases")
        w2 = tf.Variable(tf.truncated_normal([HIDDEN, 10], stddev=0.1), name="softmax/weights")
        b2 = tf.Variable(tf.zeros([10]), name="softmax/biases")
        hidden = tf.nn.relu(tf.matmul(images, w1) + b1)
        logits = tf.matmul(hidden, w2) + b2
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        )
        global_step = tf.train.get_or_create_global_step()
        opt = tf.train.SyncReplicasOptimizer(
            tf.train.MomentumOptimizer(0.1, 0.9),
            replicas_to_aggregate=len(workers),
            total_num_replicas=len(workers),
        )
        train_op = opt.minimize(loss, global_step=global_step)
    is_chief = args.task_index == 0
    final = tf.train.FinalOpsHook([w1, b1, w2, b2])
    hooks = [
        opt.make_session_run_hook(is_chief),
        tf.train.StopAtStepHook(last_step=args.steps),
        final,
    ]
    data = batches(args.task_index, len(workers), args.batch)
    name = f"worker:{args.task_index}"
    start = time.perf_counter()
    with tf.train.MonitoredTrainingSession(
        master=server.target, is_chief=is_chief, hooks=hooks
    ) as sess:
        t_log, steps_logged, step = time.perf_counter(), 0, 0
        while not sess.should_stop():
            x, y = next(data)
            _, loss_value, step = sess.run([train_op, loss, global_step], {images: x, labels: y})
            if (step + 1) % args.log_every == 0:
                now = time.perf_counter()
                rate = (step + 1 - steps_logged) * args.batch * len(workers) / (now - t_log)
                print(f"{name}: step {step + 1}  loss {loss_value:.4f}  "
                      f"{rate:.0f} examples/s (all workers)", flush=True)  # fmt: skip
                t_log, steps_logged = now, step + 1
    seconds = time.perf_counter() - start
    accuracy = held_out_accuracy(*final.final_ops_values)
    print(
        f"{name}: {step + 1} synchronous steps of 1 ps + {len(workers)} workers in "
        f"{seconds:.1f} s (compile included): held-out accuracy {accuracy:.3f}",
        flush=True,
    )


def _free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def spawn_loopback_cluster(args: argparse.Namespace) -> int:
    """Run 1 ps + `args.workers` workers of this script on loopback; their lines prefixed."""
    ports = _free_ports(1 + args.workers)
    hosts = [
        "--ps_hosts", f"127.0.0.1:{ports[0]}",
        "--worker_hosts", ",".join(f"127.0.0.1:{p}" for p in ports[1:]),
        "--steps", str(args.steps), "--batch", str(args.batch), "--log_every", str(args.log_every),
    ]  # fmt: skip
    env = {**os.environ, "TFC_CLUSTER_TOKEN": os.environ.get("TFC_CLUSTER_TOKEN")
           or secrets.token_hex(16)}  # fmt: skip
    tasks = [("ps", 0)] + [("worker", i) for i in range(args.workers)]
    procs = []
    for job, index in tasks:
        cmd = [sys.executable, __file__, "--job_name", job, "--task_index", str(index), *hosts]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)  # fmt: skip
        threading.Thread(target=_prefix, args=(proc, f"[{job}:{index}] "), daemon=True).start()
        procs.append(proc)
    status = 0
    try:
        for proc in procs:
            status = status or proc.wait(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        print(f"the cluster did not finish in {args.timeout} s", file=sys.stderr)
        status = 1
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return status


def _prefix(proc: subprocess.Popen, prefix: str) -> None:
    for line in proc.stdout:
        print(prefix + line, end="", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--job_name", choices=["ps", "worker"], help="none: spawn a cluster")
    parser.add_argument("--task_index", type=int, default=0)
    parser.add_argument("--ps_hosts", help="host:port,...")
    parser.add_argument("--worker_hosts", help="host:port,...")
    parser.add_argument("--workers", type=int, default=2, help="spawned workers")
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--batch", type=int, default=32, help="per worker")
    parser.add_argument("--log_every", type=int, default=100)
    parser.add_argument("--timeout", type=float, default=600, help="spawned cluster, seconds")
    args = parser.parse_args()
    if args.job_name is None:
        sys.exit(spawn_loopback_cluster(args))
    if not args.ps_hosts or not args.worker_hosts:
        parser.error("--job_name needs --ps_hosts and --worker_hosts")
    run_task(args)


if __name__ == "__main__":
    main()
