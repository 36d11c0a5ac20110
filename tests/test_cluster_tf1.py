"""TF1 cluster scripts (ClusterSpec, Server, replica_device_setter, SyncReplicasOptimizer,
MonitoredTrainingSession) on the compiled ps/worker runtime (tfc/aot/cluster_session.py)."""

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import tfc as tf
from tfc.aot import cluster_plan

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import tf1_cluster_script as script  # noqa: E402

ROOT = HERE.parent


def _free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _reference(steps: int, workers: int) -> tuple[list[list[float]], np.ndarray, np.ndarray]:
    """Per step, each worker's loss under synchronous SGD of the averaged gradients, and the
    weights after the last step (float64)."""
    w, b = script.W0.astype(np.float64), np.zeros(script.CLASSES)
    losses = []
    for i in range(steps):
        grads_w, grads_b, step_losses = [], [], []
        for k in range(workers):
            x, y = script.batch(i, k)
            z = x @ w + b
            p = np.exp(z - z.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            rows = np.arange(len(y))
            step_losses.append(-np.mean(np.log(p[rows, y])))
            d = p.copy()
            d[rows, y] -= 1
            d /= len(y)
            grads_w.append(x.T @ d)
            grads_b.append(d.sum(axis=0))
        losses.append(step_losses)
        w -= script.LR * np.mean(grads_w, axis=0)
        b -= script.LR * np.mean(grads_b, axis=0)
    return losses, w, b


def test_a_tf1_script_trains_one_ps_and_two_workers_as_averaged_sgd(tmp_path):
    steps = 5
    ps_port, w0, w1 = _free_ports(3)
    hosts = [
        "--ps_hosts", f"127.0.0.1:{ps_port}",
        "--worker_hosts", f"127.0.0.1:{w0},127.0.0.1:{w1}",
        "--steps", str(steps),
    ]  # fmt: skip
    # generic C flags: the runtime objects test_distributed.py's builds put in the build cache
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TFC_CLUSTER_TOKEN": "test-token",
           "TFC_CLUSTER_TARGET": "generic"}  # fmt: skip
    procs = {}
    for job, task in (("ps", 0), ("worker", 1), ("worker", 0)):
        out = tmp_path / f"{job}{task}.json"
        log = open(tmp_path / f"{job}{task}.log", "w")
        cmd = [sys.executable, str(HERE / "tf1_cluster_script.py"), "--job_name", job,
               "--task_index", str(task), *hosts, "--out", str(out)]  # fmt: skip
        procs[(job, task)] = subprocess.Popen(cmd, env=env, stdout=log, stderr=log)
    try:
        for key, proc in procs.items():
            assert proc.wait(timeout=240) == 0, (tmp_path / f"{key[0]}{key[1]}.log").read_text()
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
    expected, w, b = _reference(steps, 2)
    for k in range(2):
        result = json.loads((tmp_path / f"worker{k}.json").read_text())
        # one averaged update per step: step i runs at global step i, on the weights of i updates
        assert [s for s, _ in result["steps"]] == list(range(steps))
        np.testing.assert_allclose([loss for _, loss in result["steps"]],
                                   [e[k] for e in expected], rtol=1e-5)  # fmt: skip
        np.testing.assert_allclose(result["w"], w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(result["b"], b, rtol=1e-5, atol=1e-6)
    ps_log = (tmp_path / "ps0.log").read_text()
    assert f"done at step {steps} (0 late gradient sets dropped)" in ps_log
    assert "worker 0 is done" in ps_log and "worker 1 is done" in ps_log


def test_sync_replicas_optimizer_is_its_wrapped_optimizer_in_one_process():
    x0 = np.array([[1.0, 2.0], [3.0, -1.0]], np.float32)
    results = []
    for wrap in (False, True):
        with tf.Graph().as_default():
            w = tf.Variable(np.ones((2, 1), np.float32))
            loss = tf.reduce_mean(tf.square(tf.matmul(tf.constant(x0), w) - 1.0))
            step = tf.train.get_or_create_global_step()
            opt = tf.train.GradientDescentOptimizer(0.1)
            if wrap:
                opt = tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=2)
                assert (opt.replicas_to_aggregate, opt.total_num_replicas) == (2, 2)
                with pytest.raises(ValueError, match="after apply_gradients"):
                    opt.get_chief_queue_runner()
            train_op = opt.minimize(loss, global_step=step)
            hooks = []
            if wrap:
                tf.train.add_queue_runner(opt.get_chief_queue_runner())  # as TF1 scripts do
                hooks = [opt.make_session_run_hook(is_chief=True, num_tokens=0)]
                init_tokens = opt.get_init_tokens_op()
            with tf.train.MonitoredTrainingSession(hooks=hooks) as sess:
                if wrap:
                    sess.run(init_tokens)
                    runner = opt.get_chief_queue_runner()
                    assert runner.create_threads(sess, start=True) == []  # the ps's work
                for _ in range(3):
                    sess.run(train_op)
                results.append((sess.run(w), sess.run(step)))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6)
    assert results[0][1] == results[1][1] == 3


def test_sync_replicas_optimizer_refuses_what_it_cannot_do():
    opt = tf.train.GradientDescentOptimizer(0.1)
    with pytest.raises(ValueError, match="total_num_replicas"):
        tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=3, total_num_replicas=2)
    with pytest.raises(NotImplementedError, match="variable_averages"):
        tf.train.SyncReplicasOptimizer(opt, 2, variable_averages=object())
    with tf.Graph().as_default():
        sync = tf.train.SyncReplicasOptimizer(opt, 2)
        w = tf.Variable(1.0)
        with pytest.raises(ValueError, match="Global step is required"):
            sync.apply_gradients([(tf.constant(1.0), w)])
        with pytest.raises(ValueError, match="apply_gradient should be called"):
            sync.make_session_run_hook(True).begin()


def _worker_session(ps: str = "127.0.0.1:1") -> tf.Session:
    server = tf.train.Server(
        {"ps": [ps], "worker": ["127.0.0.1:2", "127.0.0.1:3"]},
        job_name="worker", task_index=1, start=True,
    )  # fmt: skip
    return tf.Session(server.target)


def _model(build_loss) -> tuple:
    setter = tf.train.replica_device_setter(
        worker_device="/job:worker/task:1", cluster={"ps": ["a:1"], "worker": ["b:1", "c:1"]}
    )
    with tf.device(setter):
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        w = tf.Variable(np.ones((2, 1), np.float32), name="w")
        loss = build_loss(x, w)
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 2)
        train_op = opt.minimize(loss, global_step=tf.train.get_or_create_global_step())
    return x, train_op


def test_a_step_that_cannot_be_split_across_tasks_names_the_op_and_devices():
    def loop_over_tasks(x, w):
        def body(i, acc):
            with tf.device("/job:ps/task:0"):
                return i + 1, acc * 1.01

        _, acc = tf.while_loop(lambda i, a: i < 3, body, [tf.constant(0), tf.matmul(x, w)])
        return tf.reduce_mean(acc)

    def shared_queue(x, w):
        with tf.device("/job:ps/task:0"):
            queue = tf.FIFOQueue(4, [tf.float32], shapes=[[2]], name="shared")
        with tf.control_dependencies([queue.enqueue_many([x])]):
            return tf.reduce_mean(tf.matmul(queue.dequeue_many(4), w))

    feed = np.zeros((4, 2), np.float32)
    with tf.Graph().as_default():
        x, train_op = _model(loop_over_tasks)
        with _worker_session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError) as raised:
                sess.run(train_op, {x: feed})
    message = str(raised.value)
    assert "while_loop 'while'" in message and "/job:worker/task:0" in message
    assert "/job:ps/task:0" in message
    with tf.Graph().as_default():
        x, train_op = _model(shared_queue)
        with _worker_session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError) as raised:
                sess.run(train_op, {x: feed})
    message = str(raised.value)
    assert "queue op 'shared_EnqueueMany'" in message or "queue op 'shared_Dequeue" in message
    assert "queue 'shared' (on '/job:ps/task:0')" in message and "/job:worker/task:1" in message


def test_a_ps_takes_only_plans_signed_with_the_cluster_token(monkeypatch):
    monkeypatch.setenv("TFC_CLUSTER_TOKEN", "the-secret")
    (port,) = _free_ports(1)
    spec = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{port}"], "worker": ["127.0.0.1:9"]})
    server = tf.train.Server(spec, job_name="ps", task_index=0, start=False)
    threading.Thread(target=server.join, daemon=True).start()  # waits for a valid plan
    payload = b'{"version": "0"}'
    monkeypatch.setenv("TFC_CLUSTER_TOKEN", "a-guess")  # the worker signs with another token
    with pytest.raises(tf.errors.InvalidArgumentError, match="does not match this task's"):
        cluster_plan.deliver_plan(f"127.0.0.1:{port}", 0, 0, payload)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(b"GET / HTTP/1.1\r\n\r\n" + bytes(64))
        assert conn.recv(64)[:2] == b"ER"  # not a plan: refused, the ps keeps waiting


@pytest.mark.benchmark
def test_the_tf1_sample_reaches_the_accuracy_of_the_compiled_distributed_sample():
    # samples/distributed_digits.py reaches 0.981 after its 600 synchronous steps
    proc = subprocess.run(
        [sys.executable, str(ROOT / "samples" / "distributed_tf1.py"), "--steps", "600"],
        capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    done = [line for line in proc.stdout.splitlines() if "held-out accuracy" in line]
    assert len(done) == 2, proc.stdout  # each worker reads the same final weights
    assert all("600 synchronous steps of 1 ps + 2 workers" in line for line in done)
    assert {line.rsplit(" ", 1)[1] for line in done} == {done[0].rsplit(" ", 1)[1]}
    assert float(done[0].rsplit(" ", 1)[1]) >= 0.97
    assert "[ps:0] ps:0: done at step 600 (0 late gradient sets dropped)" in proc.stdout


def test_a_ps_takes_the_same_plan_from_every_worker_before_it_builds(monkeypatch):
    monkeypatch.setenv("TFC_CLUSTER_TOKEN", "the-secret")
    (port,) = _free_ports(1)
    address = f"127.0.0.1:{port}"
    spec = tf.train.ClusterSpec({"ps": [address], "worker": ["127.0.0.1:8", "127.0.0.1:9"]})
    server = tf.train.Server(spec, job_name="ps", task_index=0, start=False)
    outcomes: dict[str, Exception] = {}

    def attempt(key, worker, payload):
        try:
            cluster_plan.deliver_plan(address, 0, worker, payload)
        except Exception as e:  # noqa: BLE001 - each outcome is checked below
            outcomes[key] = e

    def join():
        try:
            server.join()
        except Exception as e:  # noqa: BLE001 - checked below
            outcomes["join"] = e

    ps = threading.Thread(target=join, daemon=True)
    ps.start()
    plans = {0: b'{"version": "0", "plan": "a"}', 1: b'{"version": "0", "plan": "b"}'}
    first = [threading.Thread(target=attempt, args=(w, w, plans[w]), daemon=True) for w in (0, 1)]
    for t in first:
        t.start()
    deadline = time.monotonic() + 20
    while not outcomes and time.monotonic() < deadline:
        time.sleep(0.05)
    # the second plan to arrive differs from the first: refused, the ps waits on
    (refused,) = [w for w in (0, 1) if w in outcomes]
    assert "differs from the other workers'" in str(outcomes[refused])
    attempt("again", refused, plans[1 - refused])  # the same plan: the ps builds it
    for t in [*first, ps]:
        t.join(timeout=20)
    for key in (1 - refused, "again"):  # every worker hears why the build failed
        assert isinstance(outcomes[key], tf.errors.InvalidArgumentError)
        assert "the workers run tfc 0" in str(outcomes[key])
    assert "the workers run tfc 0" in str(outcomes["join"])
