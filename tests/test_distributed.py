"""Compiled distributed training over loopback: sync equals one process with the global batch,
async reaches the target accuracy, the cluster comes from flags, TF_CONFIG or rank variables,
and training survives a SIGKILLed worker or ps. Every process has a timeout and is reaped."""

import json
import os
import re
import select
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from tfc.aot import compile as tfc_compile
from tfc.aot.launch import Launcher, free_ports
from tfc.io.checkpoint import read_safetensors

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "samples" / "digits_model.py"
B = 8  # per worker
TIMEOUT = 60

sys.path.insert(0, str(ROOT / "samples"))
import digits_model  # noqa: E402


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dist")
    rows = tmp / "digits.npy"
    np.save(rows, digits_model.training_rows())
    cluster = tmp / "cluster.json"
    cluster.write_text(json.dumps({"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"] * 2}))
    dist = tfc_compile(MODEL, tmp / "dist", batch=B, target="generic", cluster=cluster)
    return tmp, rows, dist.outdir


def _cluster(n_workers):
    ports = free_ports(1 + n_workers)
    return [f"127.0.0.1:{ports[0]}"], [f"127.0.0.1:{p}" for p in ports[1:]]


def _run_all(commands, envs):
    procs = []
    try:
        for cmd, env in zip(commands, envs):
            procs.append(subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                env={**os.environ, **env},
            ))  # fmt: skip
        outs = [p.communicate(timeout=TIMEOUT)[0] for p in procs]
        for p, out in zip(procs, outs):
            assert p.returncode == 0, out
        return outs
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def _accuracy(ckpt: Path) -> float:
    tensors, _ = read_safetensors(ckpt)
    data = np.load(digits_model.DATA)
    images = data["images"].reshape(-1, 64) / 16.0
    order = np.random.default_rng(0).permutation(len(images))[:360]  # the held-out images
    x, y = images[order], data["labels"][order]
    for layer in ("hidden1", "hidden2", "logits"):
        x = x @ tensors[f"{layer}/kernel"] + tensors[f"{layer}/bias"]
        if layer != "logits":
            x = np.maximum(x, 0)
    return float(np.mean(np.argmax(x, axis=1) == y))


@pytest.mark.parametrize("n_ps", [1, 2])
def test_sync_two_workers_equal_one_process_with_twice_the_batch(build, tmp_path, n_ps):
    """Data parallel (and, with 2 ps tasks, the variables sharded over them by layer): the
    weights after 10 steps are those of one process training on the global batch."""
    tmp, rows, dist = build
    single = tfc_compile(MODEL, tmp / "single", batch=2 * B, target="generic")
    steps = ["--steps", "10", "--save-every", "0"]
    subprocess.run(
        [str(single.train), "--data", str(rows), "--checkpoint-dir", str(tmp_path / "one"),
         *steps], check=True, timeout=TIMEOUT, capture_output=True,
    )  # fmt: skip
    ports = free_ports(n_ps + 2)
    ps = [f"127.0.0.1:{p}" for p in ports[:n_ps]]
    workers = [f"127.0.0.1:{p}" for p in ports[n_ps:]]
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps({"ps": ps, "worker": workers}))
    if n_ps > 1:
        dist = tfc_compile(MODEL, tmp / "dist2", batch=B, target="generic", cluster=cluster)
        dist = dist.outdir
    common = [str(dist / "train"), *steps, "--data", str(rows), "--timeout-ms", "2000",
              "--checkpoint-dir", str(tmp_path / "dist")]  # fmt: skip
    if n_ps == 1:  # the ps from TF_CONFIG, the workers from the ranks mpirun and SLURM set
        tf_config = {"cluster": {"ps": ps, "worker": workers}, "task": {"type": "ps", "index": 0}}
        commands = [common, [*common, "--cluster", str(cluster)],
                    [*common, "--cluster", str(cluster)]]  # fmt: skip
        envs = [{"TF_CONFIG": json.dumps(tf_config)}, {"OMPI_COMM_WORLD_RANK": "1"},
                {"SLURM_PROCID": "2"}]  # fmt: skip
    else:
        commands = [[*common, "--cluster", str(cluster), "--job", job, "--task", str(i)]
                    for job, n in (("ps", n_ps), ("worker", 2)) for i in range(n)]  # fmt: skip
        envs = [{}] * len(commands)
    _run_all(commands, envs)
    want, _ = read_safetensors(tmp_path / "one" / "model.ckpt-10.safetensors")
    got = {}
    for k in range(n_ps):
        shard, _ = read_safetensors(tmp_path / "dist" / f"ps-{k}" / "model.ckpt-10.safetensors")
        assert shard and not set(shard) & set(got)  # each variable on exactly one ps task
        got.update(shard)
    assert set(got) == set(want)
    assert int(got["global_step"]) == 10
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)
    # the weights moved: the comparison is not between two initial states
    assert not np.allclose(got["hidden1/kernel"], _initial(single.train, rows, tmp_path))


def _initial(train, rows, tmp_path):
    subprocess.run(
        [str(train), "--data", str(rows), "--checkpoint-dir", str(tmp_path / "zero"),
         "--steps", "0"], check=True, timeout=TIMEOUT, capture_output=True,
    )  # fmt: skip
    return read_safetensors(tmp_path / "zero" / "model.ckpt-0.safetensors")[0]["hidden1/kernel"]


def _launch(dist, args, ps=1, workers=2, kill=None, timeout=TIMEOUT):
    """Run a Launcher; `kill` = (job, index, global step at which to SIGKILL it)."""
    launcher = Launcher(dist, ps, workers, args, max_restarts=3, timeout=timeout,
                        out=open(os.devnull, "w"), progress_every=0.5)  # fmt: skip
    result = {}
    thread = threading.Thread(target=lambda: result.setdefault("rc", launcher.run()))
    thread.start()
    try:
        if kill is not None:
            job, index, at = kill
            task = next(t for t in launcher.tasks if t.job == job and t.index == index)
            deadline = time.monotonic() + timeout
            while launcher.global_step < at and time.monotonic() < deadline:
                time.sleep(0.01)
            launcher.kill(task)
        thread.join(timeout + 10)
    finally:
        if thread.is_alive():
            launcher.stop_all()
            thread.join()
    return result.get("rc"), launcher


def _log(launcher, n=40) -> str:
    """The last n lines the tasks printed (the launcher's progress lines would crowd them out)."""
    lines = [line for line in launcher.lines if not line.startswith("[launch] global_step")]
    return "\n".join(lines[-n:])


def _check_checkpoints(directory: Path, final_step: int) -> None:
    files = sorted(directory.glob("model.ckpt-*.safetensors"))
    assert files and not list(directory.glob("*.tmp*"))
    for f in files:
        read_safetensors(f)  # every header and byte count validated: none is corrupt
    tensors, _ = read_safetensors(directory / f"model.ckpt-{final_step}.safetensors")
    assert int(tensors["global_step"]) == final_step


def test_async_reaches_target_accuracy(build, tmp_path):
    _, rows, dist = build
    rc, launcher = _launch(dist, [
        "--async", "--data", str(rows), "--steps", "800", "--log-every", "100",
        "--checkpoint-dir", str(tmp_path / "ck"), "--timeout-ms", "1000",
        "--wire-dtype", "bfloat16",  # the whitepaper's lossy 16-bit transfers
    ])  # fmt: skip
    assert rc == 0, _log(launcher)
    _check_checkpoints(tmp_path / "ck" / "ps-0", 800)
    assert _accuracy(tmp_path / "ck" / "ps-0" / "model.ckpt-800.safetensors") >= 0.9
    assert any("[worker:1]" in line for line in launcher.lines)


def test_backup_workers_late_gradients_are_dropped(build, tmp_path):
    _, rows, dist = build
    rc, launcher = _launch(dist, [
        "--sync", "--replicas-to-aggregate", "2", "--data", str(rows), "--steps", "600",
        "--log-every", "100", "--checkpoint-dir", str(tmp_path / "ck"), "--timeout-ms", "1000",
    ], workers=3)  # fmt: skip
    log = _log(launcher)
    assert rc == 0, log
    done = next(line for line in launcher.lines if "ps:0: done at step 600" in line)
    assert int(re.search(r"\((\d+) late gradient sets dropped\)", done).group(1)) > 0, log
    _check_checkpoints(tmp_path / "ck" / "ps-0", 600)
    assert _accuracy(tmp_path / "ck" / "ps-0" / "model.ckpt-600.safetensors") >= 0.9


@pytest.mark.parametrize("victim", [("worker", 1), ("ps", 0)])
def test_training_survives_a_killed_task(build, tmp_path, victim):
    _, rows, dist = build
    rc, launcher = _launch(dist, [
        "--sync", "--data", str(rows), "--steps", "1200", "--log-every", "50",
        "--save-every", "100", "--checkpoint-dir", str(tmp_path / "ck"),
        "--timeout-ms", "300",
    ], kill=(*victim, 300))  # fmt: skip
    log = _log(launcher)
    assert rc == 0, log
    task = next(t for t in launcher.tasks if (t.job, t.index) == victim)
    # killed once; on a loaded machine its restart may itself time out (300 ms) and be
    # restarted again, within the launcher's max_restarts
    assert task.restarts >= 1, log
    _check_checkpoints(tmp_path / "ck" / "ps-0", 1200)
    assert _accuracy(tmp_path / "ck" / "ps-0" / "model.ckpt-1200.safetensors") >= 0.9
    if victim[0] == "ps":
        assert any("restored" in line for line in launcher.lines), log


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun (openmpi-bin) not installed")
def test_mpirun_starts_one_ps_and_two_workers(build, tmp_path):
    _, rows, dist = build
    ps, workers = _cluster(2)
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps({"ps": ps, "worker": workers}))
    proc = subprocess.run(
        ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "3", str(dist / "train"),
         "--cluster", str(cluster), "--data", str(rows), "--steps", "100",
         "--checkpoint-dir", str(tmp_path / "ck"), "--log-every", "50"],
        capture_output=True, text=True, timeout=TIMEOUT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ps:0: done at step 100 " in proc.stdout
    assert "worker:1: done" in proc.stdout
    _check_checkpoints(tmp_path / "ck" / "ps-0", 100)


@pytest.fixture(scope="module")
def asan(build):
    """The cluster of `build` under ASan/UBSan (LeakSanitizer at exit): (its directory, plan)."""
    tmp = build[0]
    flags = ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
             "-fno-omit-frame-pointer"]  # fmt: skip
    model = tfc_compile(MODEL, tmp / "asan", batch=B, target="generic",
                        cluster=tmp / "cluster.json", cflags=flags)  # fmt: skip
    return model.outdir, model.plan


def test_ps_and_workers_are_sanitizer_clean(build, asan, tmp_path):
    """ASan/UBSan (and LeakSanitizer at exit) over a short sync run and an async one."""
    _, rows, _ = build
    for mode in ("--sync", "--async"):
        ps, workers = _cluster(2)
        hosts = ["--ps-hosts", ps[0], "--worker-hosts", ",".join(workers)]
        common = [str(asan[0] / "train"), mode, "--steps", "30", "--data", str(rows), *hosts]
        outs = _run_all(
            [[*common, "--job", "ps", "--task", "0", "--checkpoint-dir", str(tmp_path / mode)],
             [*common, "--job", "worker", "--task", "0"],
             [*common, "--job", "worker", "--task", "1"]],
            [{}, {}, {}],
        )  # fmt: skip
        assert "done at step 30" in outs[0]
        assert not any("Sanitizer" in out for out in outs), "\n".join(outs)


class _FedCluster:
    """A ps and workers fed through pipes (train --feed-fd/--result-fd), as the workers of TF1
    cluster scripts run: 'S' and a step's inputs give {step, loss}, 'V' the values from the ps,
    the end of the feed says the worker is done."""

    def __init__(self, build, asan, n_workers, *args, ps_args=()):
        outdir, plan = asan
        self.worker = plan.worker.programs["train"]
        self.n_fed = sum(not name.startswith("recv:") for name in self.worker.input_names)
        self.data = np.load(build[1])
        self.n = n_workers
        ps, workers = _cluster(n_workers)
        common = [str(outdir / "train"), "--ps-hosts", ps[0], "--worker-hosts",
                  ",".join(workers), *args]  # fmt: skip
        self.procs, self.pipes = [], []
        self.procs.append(subprocess.Popen(
            [*common, "--job", "ps", "--task", "0", *ps_args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        ))  # fmt: skip
        for w in range(n_workers):
            feed_r, feed_w = os.pipe()
            result_r, result_w = os.pipe()
            self.procs.append(subprocess.Popen(
                [*common, "--job", "worker", "--task", str(w), "--feed-fd", str(feed_r),
                 "--result-fd", str(result_w)],
                pass_fds=(feed_r, result_w), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                text=True,
            ))  # fmt: skip
            os.close(feed_r)
            os.close(result_w)
            self.pipes.append((os.fdopen(feed_w, "wb", buffering=0), result_r))

    def received_bytes(self) -> int:
        return sum(int(np.prod(f.shape)) * np.dtype(f.dtype.np).itemsize
                   for f in self.worker.lowered.feeds[self.n_fed:])  # fmt: skip

    def read(self, w, n):
        data = b""
        while len(data) < n:
            assert select.select([self.pipes[w][1]], [], [], TIMEOUT)[0], f"worker {w} hangs"
            chunk = os.read(self.pipes[w][1], n - len(data))
            assert chunk, f"worker {w} exited"
            data += chunk
        return data

    def step(self, w, i):
        """Feed worker w the rows of step i; its {step, loss} record is read with result()."""
        rows = self.data[(i * self.n + w) * B : (i * self.n + w + 1) * B]
        lr = np.float64(0.002).astype(self.worker.lowered.feeds[2].dtype.np)
        inputs = [rows[:, :64].astype(np.float32), rows[:, 64].astype(np.int64), lr]
        self.pipes[w][0].write(b"S" + b"".join(np.ascontiguousarray(a).tobytes() for a in inputs))

    def result(self, w):
        return struct.unpack("<qd", self.read(w, 16))

    def finish(self, timeout=TIMEOUT):
        """Close the feeds and wait for every task: their outputs."""
        try:
            for feed, _ in self.pipes:
                feed.close()
            return [p.communicate(timeout=timeout)[0] for p in self.procs]
        finally:
            self.close()

    def close(self):
        for feed, result in self.pipes:
            feed.close()
            if result is not None:
                os.close(result)
        self.pipes = [(feed, None) for feed, _ in self.pipes]
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def test_workers_fed_through_pipes_are_sanitizer_clean(build, asan, tmp_path):
    """The end of the feed tells the ps the worker is done, and the ps stops once both are."""
    fed = _FedCluster(build, asan, 2, "--sync", "--steps", str(1 << 62),
                      ps_args=("--idle-exit-ms", "60000"))  # fmt: skip
    try:
        for i in range(5):
            for w in range(2):
                fed.step(w, i)
            for w in range(2):
                got, loss = fed.result(w)
                assert got == i and np.isfinite(loss)
        fed.pipes[0][0].write(b"V")
        assert fed.result(0)[0] == 0
        received = fed.received_bytes()
        values = np.frombuffer(fed.read(0, received), np.uint8)
        assert values.size == received and values.any()
        outs = fed.finish()
    finally:
        fed.close()
    assert all(p.returncode == 0 for p in fed.procs), "\n".join(outs)
    assert "worker 0 is done" in outs[0] and "worker 1 is done" in outs[0]
    assert "done at step 5 (0 late gradient sets dropped)" in outs[0]
    assert not any("Sanitizer" in out for out in outs), "\n".join(outs)


@pytest.mark.parametrize("ps_state", ["waiting", "gone"])
def test_a_worker_whose_last_step_ends_after_the_ps_still_stops(build, asan, ps_state):
    """A backup worker still computing when the ps reaches --steps: its gradients find the ps
    waiting for it to say it is done, or (past --timeout-ms) a ps that is gone. Either way it
    reads the stop and exits; it used to retry connecting to the finished ps for --give-up-ms."""
    timeout_ms = 20000 if ps_state == "waiting" else 300
    fed = _FedCluster(build, asan, 2, "--sync", "--replicas-to-aggregate", "1", "--steps", "3",
                      "--timeout-ms", str(timeout_ms), "--give-up-ms", "300000")  # fmt: skip
    try:
        ps = fed.procs[0]
        fed.pipes[1][0].write(b"V")  # answered once worker 1 holds step 0's values
        assert fed.result(1)[0] == 0
        fed.read(1, fed.received_bytes())
        for i in range(3):  # worker 1 waits for its feed meanwhile
            fed.step(0, i)
            assert fed.result(0)[0] == i
        assert fed.result(0)[0] == -1  # worker 0 got the stop
        start = time.monotonic()
        if ps_state == "gone":
            ps.wait(timeout=TIMEOUT)  # it waited --timeout-ms for worker 1, then exited
        fed.step(1, 0)
        steps = [fed.result(1)[0]]
        # the stop may still be on its way to worker 1 (the ps sends to worker 0 first): until
        # it arrives, worker 1 takes the newest values it holds and waits for its next feed
        while steps[-1] != -1 and len(steps) < 5:
            try:
                fed.step(1, len(steps))
            except BrokenPipeError:  # it read the stop meanwhile and exited
                pass
            steps.append(fed.result(1)[0])
        assert steps[0] == 0 and steps[-1] == -1, steps  # step 0: the values it had taken
        outs = fed.finish(timeout=TIMEOUT / 2)
        took = time.monotonic() - start
    finally:
        fed.close()
    assert all(p.returncode == 0 for p in fed.procs), "\n".join(outs)
    assert "done at step 3" in outs[0]
    if ps_state == "waiting":  # worker 1 said it was done: the ps did not wait out its 20 s
        assert took < timeout_ms / 1000 / 2, (took, outs)
        assert "sending to ps" not in outs[2], outs[2]
    assert not any("Sanitizer" in out for out in outs), "\n".join(outs)


def test_whitepaper_style_sample_end_to_end():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "samples" / "distributed_digits.py"), "--quiet",
         "--steps", "300"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    line = proc.stdout.strip().splitlines()[-1]
    assert line.startswith("synchronous, 1 ps + 2 workers, 300 steps: held-out accuracy ")
    assert float(line.rsplit(" ", 1)[1]) >= 0.9


def test_launch_stops_every_task_on_ctrl_c(build, tmp_path):
    import signal

    _, rows, dist = build
    proc = subprocess.Popen(
        [sys.executable, "-m", "tfc.tools.cli", "launch", str(dist), "--ps", "1", "--workers", "2",
         "--", "--data", str(rows), "--steps", "100000000", "--log-every", "1000"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    lines, pids = [], []
    try:
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            lines.append(line)
            if m := re.search(r"started (\S+) \(pid (\d+)\)", line):
                pids.append(int(m.group(2)))
            if "global_step" in line and "[launch]" in line and len(pids) == 3:
                break
        assert len(pids) == 3, "".join(lines)
        proc.send_signal(signal.SIGINT)
        out = proc.communicate(timeout=30)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, "".join(lines) + out
    assert "interrupted; stopping every task" in out
    for pid in pids:  # reaped: no process, not even a zombie, is left
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def _signatures_with(place_model):
    import tfc as tf

    def signatures():
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        y = tf.placeholder(tf.int64, [None], name="y")
        with place_model():
            w = tf.Variable(tf.zeros([4, 3]), name="W")
            loss = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=tf.matmul(x, w))
            train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        return {"train": {"inputs": {"features": x, "labels": y}, "loss": loss,
                          "train_op": train}}  # fmt: skip

    return signatures


@pytest.mark.parametrize(
    "device, message",
    [
        ("/job:worker/task:0", r"variables \['W'\] are on the worker; place variables on /job:ps"),
        ("/gpu:0", r"placed on /job:ps/replica:0/task:0/device:GPU:0 \(op 'W'\)"),
        ("/job:worker/task:1", r"an op is placed on /job:worker/replica:0/task:1"),
        ("/job:ps/task:3", r"placed on /job:ps/replica:0/task:3.*job 'ps' has 1 task"),
    ],
)
def test_distributed_compile_errors_name_the_problem(tmp_path, device, message):
    import tfc as tf
    from tfc.aot import ModelError

    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps({"ps": ["h:1"], "worker": ["h:2", "h:3"]}))
    with pytest.raises(ModelError, match=message):
        tfc_compile(_signatures_with(lambda: tf.device(device)), tmp_path / "out",
                    cluster=cluster, build=False)  # fmt: skip


@pytest.mark.parametrize(
    "text, message",
    [
        ("{", "not JSON"),
        ('{"ps": ["a:1"]}', '"worker" must be a non-empty list'),
        ('{"ps": ["a"], "worker": ["b:2"]}', '"ps" must be a non-empty list of "host:port"'),
        ('{"ps": ["a:1"], "worker": ["b:2"], "evaluator": ["c:3"]}', "unknown job"),
    ],
)
def test_cluster_files_are_checked(text, message):
    from tfc.aot import ModelError
    from tfc.aot.distributed import Cluster

    with pytest.raises(ModelError, match=message):
        Cluster.from_json(text, "cluster.json")
    tf_config = {"cluster": {"ps": ["a:1"], "worker": ["b:2"]}, "task": {"type": "ps"}}
    assert Cluster.from_json(json.dumps(tf_config)).worker == ["b:2"]


def _row_partitioned_model():
    import tfc as tf

    tf.set_random_seed(5)
    x = tf.placeholder(tf.float32, [None, 64], name="x")
    y = tf.placeholder(tf.int64, [None], name="y")
    w = tf.get_variable("hidden/W", [64, 32], partitioner=tf.fixed_size_partitioner(2))
    b = tf.get_variable("hidden/b", [32], initializer=tf.zeros_initializer())
    v = tf.get_variable("out/W", [32, 10])
    logits = tf.matmul(tf.nn.relu(tf.matmul(x, w) + b), v)
    loss = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
    step = tf.train.get_or_create_global_step()
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss, global_step=step)
    return {"train": {"inputs": {"features": x, "labels": y}, "loss": loss, "train_op": train}}


def test_a_variable_split_by_rows_over_two_ps_tasks_trains_as_one_process(build, tmp_path):
    tmp, rows, _ = build
    ports = free_ports(4)
    ps = [f"127.0.0.1:{p}" for p in ports[:2]]
    workers = [f"127.0.0.1:{p}" for p in ports[2:]]
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps({"ps": ps, "worker": workers}))
    kw = dict(target="generic", name="partitioned")
    single = tfc_compile(_row_partitioned_model, tmp / "part1", batch=2 * B, **kw)
    dist = tfc_compile(_row_partitioned_model, tmp / "part2", batch=B, cluster=cluster, **kw)
    steps = ["--steps", "10", "--save-every", "0", "--data", str(rows)]
    subprocess.run([str(single.train), *steps, "--checkpoint-dir", str(tmp_path / "one")],
                   check=True, timeout=TIMEOUT, capture_output=True)  # fmt: skip
    _run_all(
        [[str(dist.outdir / "train"), *steps, "--cluster", str(cluster), "--job", job, "--task",
          str(i), "--checkpoint-dir", str(tmp_path / "dist")]
         for job, i in (("ps", 0), ("ps", 1), ("worker", 0), ("worker", 1))],
        [{}] * 4,
    )  # fmt: skip
    want, _ = read_safetensors(tmp_path / "one" / "model.ckpt-10.safetensors")
    shards = [read_safetensors(tmp_path / "dist" / f"ps-{k}" / "model.ckpt-10.safetensors")[0]
              for k in range(2)]  # fmt: skip
    assert "hidden/W/part_0" in shards[0] and "hidden/W/part_1" in shards[1]
    got = {**shards[0], **shards[1]}
    assert set(got) == set(want)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_fixed_size_partitioner_splits_rows_as_tensorflow():
    import tfc as tf

    x = tf.placeholder(tf.float32, [4, 5])
    w = tf.get_variable("W", [5, 3], partitioner=tf.fixed_size_partitioner(2))
    assert [v.op.name for v in w] == ["W/part_0", "W/part_1"]
    assert [v.shape.as_list() for v in w] == [[3, 3], [2, 3]]  # the first shards get the extra
    assert len(tf.get_variable("V", [1, 4], partitioner=tf.fixed_size_partitioner(3))) == 1
    y = tf.reduce_sum(tf.matmul(x, w) * np.arange(3, dtype=np.float32))
    grads = tf.gradients(y, list(w))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        xv = np.random.default_rng(0).normal(size=(4, 5)).astype(np.float32)
        full = np.concatenate(sess.run(list(w)))
        got_y, g0, g1 = sess.run([y, *grads], {x: xv})
    np.testing.assert_allclose(got_y, np.sum(xv @ full * np.arange(3)), rtol=1e-5)
    want = np.outer(xv.sum(axis=0), np.arange(3))
    np.testing.assert_allclose(np.concatenate([g0, g1]), want, rtol=1e-5, atol=1e-6)


# -- a hostile local process against the tasks ---------------------------------------------------


def _start_task(dist, rows, job, ps, workers, *extra, env=None):
    """One task of `dist` on the given hosts; its output lines are collected in `lines`."""
    hosts = ["--ps-hosts", ",".join(ps), "--worker-hosts", ",".join(workers)]
    cmd = [str(dist / "train"), "--job", job, "--task", "0", *hosts, "--data", str(rows),
           "--steps", "1000", *extra]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **(env or {})})  # fmt: skip
    proc.lines = []
    threading.Thread(target=lambda: proc.lines.extend(proc.stdout), daemon=True).start()
    return proc


def _connect_when_listening(address, within=20.0):
    host, port = address.rsplit(":", 1)
    deadline = time.monotonic() + within
    while True:
        try:
            return socket.create_connection((host, int(port)), timeout=10)
        except ConnectionRefusedError:
            assert time.monotonic() < deadline, f"nothing listens on {address}"
            time.sleep(0.05)


def _wait_for_line(proc, text, within=10.0):
    deadline = time.monotonic() + within
    while not any(text in line for line in proc.lines):
        assert time.monotonic() < deadline, (text, "".join(proc.lines)[-3000:])
        time.sleep(0.02)


def _status(pid):
    text = Path(f"/proc/{pid}/status").read_text()
    return {k: int(re.search(rf"^{k}:\s+(\d+)", text, re.M).group(1)) for k in ("VmRSS", "Threads")}


def _closed(sock, within=10.0):
    sock.settimeout(within)
    try:
        while sock.recv(4096):
            pass
        return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_a_worker_takes_its_control_tensor_only_from_its_ps(build, tmp_path):
    """A stop under "tfc:ctl@ps0" from any local process made a worker exit 0 mid-training; it
    is now honoured only from the connection that proved the token as ps:0."""
    from transport_wire import frame, handshake

    _, rows, dist = build
    ps, workers = _cluster(2)
    token = "c1uster-s3cret"
    worker = _start_task(dist, rows, "worker", ps, workers, "--timeout-ms", "8000",
                         env={"TFC_CLUSTER_TOKEN": token})  # fmt: skip
    stop = frame(key=b"tfc:ctl@ps0", step=0, dtype=9, dims=(2,), payload=struct.pack("<qq", 0, 1))
    try:
        with _connect_when_listening(workers[0]) as s:  # no token: nobody, whatever its name
            s.sendall(struct.pack("<IHH", 0x48434654, 2, 0) + os.urandom(32) +
                      b"ps:0".ljust(32, b"\0"))  # fmt: skip
            assert _closed(s)
        with socket.create_connection(("127.0.0.1", int(workers[0].split(":")[1]))) as s:
            # the token, but another task: a worker takes nothing from a worker
            assert handshake(s, token.encode(), b"worker:1") == (0x41434654, 2)
        _wait_for_line(worker, "refused: the peer has no cluster token")
        _wait_for_line(worker, "refused: this task takes nothing from 'worker:1'")
        time.sleep(0.3)
        assert worker.poll() is None, "".join(worker.lines)  # still waiting for its ps
        assert not any("done" in line for line in worker.lines)
        with socket.create_connection(("127.0.0.1", int(workers[0].split(":")[1]))) as s:
            assert handshake(s, token.encode(), b"ps:0") == (0x41434654, 0)
            s.sendall(stop)  # the real ps's stop is obeyed
            assert worker.wait(timeout=20) == 0
        _wait_for_line(worker, "worker:0: done after 0 steps")
    finally:
        worker.kill()
        worker.wait()


def test_a_ps_refuses_unsolicited_frames_and_connections(build, tmp_path):
    """300 frames of 1 MiB under keys nobody reads took a ps from 3 MB to 311 MB RSS, and 200
    idle connections kept 200 threads: frames under keys the ps does not receive are refused
    after their header, and a peer gets at most two connections."""
    from transport_wire import handshake

    _, rows, dist = build
    ps, workers = _cluster(2)
    task = _start_task(dist, rows, "ps", ps, workers, "--timeout-ms", "5000")
    port = int(ps[0].split(":")[1])
    conns = []
    try:
        _connect_when_listening(ps[0]).close()
        _wait_for_line(task, "ps:0: serving 2 worker(s)")
        before = _status(task.pid)
        header = struct.pack("<IHHqIBBBBQ", 0x46434654, 1, 0, 0, 7, 4, 4, 1, 0, 1 << 20)
        for i in range(40):
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                assert handshake(s, None, b"worker:0") == (0x41434654, 0)
                key = f"junk/{i:02d}".encode()
                try:
                    s.sendall(header + struct.pack("<q", 1 << 20) + key + bytes(1 << 20))
                except OSError:  # closed after the key: the payload is never read
                    pass
                assert _closed(s)
        for _ in range(60):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            conns.append(s)
            assert handshake(s, None, b"worker:0") == (0x41434654, 0)
        time.sleep(0.5)
        after = _status(task.pid)
        log = "".join(task.lines)
        assert log.count("is not one this task receives") == 40, log[-2000:]
        assert after["VmRSS"] - before["VmRSS"] < 16 * 1024, (before, after)  # kB
        assert after["Threads"] <= before["Threads"] + 2, (before, after)
        assert log.count("closing the oldest connection of worker:0") >= 58
    finally:
        for s in conns:
            s.close()
        task.kill()
        task.wait()


def test_a_task_beyond_loopback_needs_a_token_or_insecure(build, tmp_path):
    _, rows, dist = build
    ps, workers = _cluster(2)
    task = _start_task(dist, rows, "ps", ps, workers, "--bind", "0.0.0.0")
    try:
        assert task.wait(timeout=TIMEOUT) == 1
    finally:
        task.kill()
    time.sleep(0.1)
    log = "".join(task.lines)
    assert "refusing to listen on 0.0.0.0, which is not a loopback address" in log, log
    assert "TFC_CLUSTER_TOKEN" in log and "--insecure" in log
    for extra, env in ((["--insecure"], {}), ([], {"TFC_CLUSTER_TOKEN": "t"})):
        task = _start_task(dist, rows, "ps", ps, workers, "--bind", "0.0.0.0", *extra, env=env)
        try:
            _wait_for_line(task, "ps:0: serving 2 worker(s)")
        finally:
            task.kill()
            task.wait()


def test_launch_gives_its_tasks_a_token_through_the_environment(tmp_path, monkeypatch):
    """Every task of `tfc launch` gets the same random token, in its environment only."""
    outdir = tmp_path / "fake"
    outdir.mkdir()
    record = tmp_path / "record"
    record.mkdir()
    train = outdir / "train"
    train.write_text(
        f'#!/bin/sh\necho "$TFC_CLUSTER_TOKEN" > "{record}/$2$4.token"\n'
        f'echo "$@" > "{record}/$2$4.args"\n'
    )
    train.chmod(0o755)
    monkeypatch.delenv("TFC_CLUSTER_TOKEN", raising=False)
    tokens = []
    for _ in range(2):
        launcher = Launcher(outdir, 1, 2, [], out=open(os.devnull, "w"), timeout=30)
        assert launcher.run() == 0
        found = {p.read_text().strip() for p in record.glob("*.token")}
        assert len(list(record.glob("*.token"))) == 3 and len(found) == 1
        token = found.pop()
        assert re.fullmatch(r"[0-9a-f]{64}", token)
        assert not any(token in p.read_text() for p in record.glob("*.args"))
        tokens.append(token)
    assert tokens[0] != tokens[1]  # fresh for every cluster
    monkeypatch.setenv("TFC_CLUSTER_TOKEN", "mine")
    assert Launcher(outdir, 1, 2, [], out=open(os.devnull, "w"), timeout=30).run() == 0
    assert {p.read_text().strip() for p in record.glob("*.token")} == {"mine"}


def test_the_makefile_rebuilds_what_an_edited_header_of_the_transport_reaches(build):
    """`make` in the output directory: nothing to do after `tfc compile`; an edited header of
    runtime/src's subdirectories (the transport's) makes it compile the objects again."""
    if shutil.which("make") is None:
        pytest.skip("no make")
    dist = build[2]
    header = "runtime/src/transport/tfc_transport_internal.h"
    assert (dist / header).is_file()

    def dry_run(*args):
        return subprocess.run(["make", "-n", *args], cwd=dist, capture_output=True, text=True,
                              check=True).stdout  # fmt: skip

    assert "runtime/src/transport/tfc_transport.c" not in dry_run()
    assert "runtime/src/transport/tfc_transport.c" in dry_run("-W", header)
