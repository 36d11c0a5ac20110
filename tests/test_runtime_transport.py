"""runtime/src/transport: frames, rendezvous, 16-bit wire floats, cluster token, bad peers."""

import hashlib
import hmac
import os
import queue
import re
import socket
import struct
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from transport_wire import corrupt_crc as _corrupt_crc
from transport_wire import crc32c as _crc32c
from transport_wire import frame as _frame
from transport_wire import handshake as _handshake
from transport_wire import read_exact as _read_exact

from tfc.backend.cc import compiler, runtime_dir

TRANSPORT_SOURCES = sorted(p.name for p in (runtime_dir() / "src" / "transport").glob("*.c"))
CC_FLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-pthread"]
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]
DRIVER_C = os.path.join(os.path.dirname(__file__), "c", "transport_driver.c")

DTYPES = {"float32": np.float32, "float64": np.float64, "int32": np.int32, "int64": np.int64,
          "uint8": np.uint8, "int8": np.int8, "bool": np.bool_}  # fmt: skip
SHAPES = [(), (0,), (3,), (2, 3), (2, 0, 4), (1, 1, 1, 1, 1, 1, 1, 2)]


def build_driver(out, flags):
    src = runtime_dir() / "src" / "transport"
    cmd = [compiler(), *CC_FLAGS, *flags, f"-I{runtime_dir() / 'include'}", DRIVER_C]
    cmd += [str(src / name) for name in TRANSPORT_SOURCES] + ["-o", str(out), "-lm"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


class Task:
    """One driver process: a command per line in, an answer per line out, logs in a file."""

    def __init__(self, binary, log_path, env):
        self.log_path = log_path
        self._log = open(log_path, "w")
        self.proc = subprocess.Popen(
            [str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
            text=True, env=env, bufsize=1,
        )  # fmt: skip
        self._lines = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for line in self.proc.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def post(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def answer(self, timeout=20):
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no answer in {timeout} s; log: {self.log()}") from None
        assert line is not None, f"the driver died (rc {self.proc.poll()}): {self.log()}"
        return line

    def __call__(self, line, timeout=20):
        self.post(line)
        return self.answer(timeout)

    def log(self):
        self._log.flush()
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def quit(self):
        if self.proc.poll() is None:
            self.post("quit")
            self.proc.wait(timeout=20)
        return self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._log.close()


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """The driver plain (-O2) and with AddressSanitizer + UBSan (-O1): (binary, env) pairs."""
    root = tmp_path_factory.mktemp("transport")
    libasan = subprocess.run(
        [compiler(), "-print-file-name=libasan.so"], capture_output=True, text=True
    ).stdout.strip()
    with ThreadPoolExecutor(2) as pool:  # the two builds at once
        plain_build = pool.submit(build_driver, root / "plain", ["-O2"])
        if os.path.isabs(libasan):
            sanitized_build = pool.submit(
                build_driver, root / "sanitized", ["-O1", "-g", *SANITIZE]
            )
        plain = (plain_build.result(), dict(os.environ))
        if not os.path.isabs(libasan):
            return {"plain": plain, "sanitized": None}
        binary = sanitized_build.result()
    env = dict(os.environ, UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    env["ASAN_OPTIONS"] = "detect_leaks=1:abort_on_error=0"
    probe = subprocess.run([str(binary)], input="selftest\n", capture_output=True, text=True,
                           env=env)  # fmt: skip
    if "LeakSanitizer has encountered a fatal error" in probe.stderr:  # no ptrace here
        env["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=0"
    return {"plain": plain, "sanitized": (binary, env)}


class Cluster:
    """Starts driver tasks; every one is killed at the end whatever happened."""

    def __init__(self, binary, env, root):
        self.binary, self.env, self.root = binary, env, root
        self.tasks = []

    def task(self, **env):
        merged = dict(self.env)
        merged.pop("TFC_CLUSTER_TOKEN", None)
        merged.update({k: str(v) for k, v in env.items()})
        task = Task(self.binary, self.root / f"task{len(self.tasks)}.log", merged)
        self.tasks.append(task)
        return task

    def listening(self, wire="f32", **env):
        task = self.task(**env)
        answer = task(f"listen 0 {wire}")
        assert answer.startswith("port "), answer
        task.port = int(answer.split()[1])
        return task

    def close(self):
        """Quit every task; a sanitizer report or a crash in any of them fails the test."""
        problems = []
        for task in self.tasks:
            try:
                rc = task.quit()
            except Exception as e:  # noqa: BLE001 - report every task's fate
                problems.append(f"{task.log_path.name}: {e}")
                continue
            log = task.log()
            if rc != 0 or "Sanitizer" in log or "runtime error" in log:
                problems.append(f"{task.log_path.name} exited {rc}: {log[-2000:]}")
        return problems

    def kill_all(self):
        for task in self.tasks:
            task.kill()


def _cluster(builds, name, tmp_path):
    if builds[name] is None:
        pytest.skip("the C compiler has no AddressSanitizer runtime")
    binary, env = builds[name]
    cluster = Cluster(binary, env, tmp_path)
    try:
        yield cluster
        problems = cluster.close()
        assert not problems, "\n".join(problems)
    finally:
        cluster.kill_all()


@pytest.fixture(params=["plain", "sanitized"])
def cluster(request, builds, tmp_path):
    yield from _cluster(builds, request.param, tmp_path)


@pytest.fixture
def plain_cluster(builds, tmp_path):
    yield from _cluster(builds, "plain", tmp_path)


def _hex(a):
    return np.ascontiguousarray(a).tobytes().hex()


def _dims(shape):
    return ",".join(map(str, shape)) if shape else "-"


def _parse_tensor(answer, dtype):
    kind, step, dims, *data = answer.split(" ")
    assert kind == "tensor", answer
    shape = () if dims == "-" else tuple(int(d) for d in dims.split(","))
    return int(step), np.frombuffer(bytes.fromhex(data[0] if data else ""), dtype).reshape(shape)


def _pair(cluster, wire="f32", **env):
    """A receiving task and a sending task connected to it."""
    server = cluster.listening(**env)
    client = cluster.listening(wire, **env)
    answer = client(f"connect 127.0.0.1:{server.port}")
    assert answer == "peer 0", answer
    return server, client


# ---- the pieces: CRC32C, SHA-256/HMAC, 16-bit floats ----


def test_crc32c_sha256_and_hmac_match_references(builds, tmp_path):
    binary, env = builds["plain"]
    cluster = Cluster(binary, env, tmp_path)
    try:
        task = cluster.task()
        assert task("selftest") == "ok"
        rng = np.random.default_rng(0)
        assert task("crc " + b"123456789".hex()) == "e3069283 e3069283"
        for n in (0, 1, 7, 8, 9, 63, 100, 1000):
            data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
            want = f"{_crc32c(data):08x}"
            assert task("crc " + data.hex()) == f"{want} {want}"
        rfc4231 = [  # (key, data, HMAC-SHA256) from RFC 4231 test cases 1, 2 and 6
            (b"\x0b" * 20, b"Hi There",
             "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
            (b"Jefe", b"what do ya want for nothing?",
             "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
            (b"\xaa" * 131, b"Test Using Larger Than Block-Size Key - Hash Key First",
             "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
        ]  # fmt: skip
        for key, data, mac in rfc4231:
            assert task(f"hmac {key.hex()} {data.hex()}") == mac
        for n_key, n_data in [(0, 0), (1, 55), (64, 56), (65, 64), (200, 129), (32, 1000)]:
            key = rng.integers(0, 256, n_key, dtype=np.uint8).tobytes()
            data = rng.integers(0, 256, n_data, dtype=np.uint8).tobytes()
            want = hmac.new(key, data, hashlib.sha256).hexdigest()
            assert task(f"hmac {key.hex()} {data.hex()}") == want, (n_key, n_data)
        assert not cluster.close()
    finally:
        cluster.kill_all()


def _special_floats(rng):
    f16 = np.finfo(np.float16)
    values = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -2.5, float(f16.max), 65519.0,
              65520.0, 65536.0, 1e9, float(f16.tiny), float(f16.smallest_subnormal),
              float(f16.smallest_subnormal) / 2, float(f16.smallest_subnormal) * 0.75, 1e-10,
              3.4e38, -3.4e38, float(np.finfo(np.float32).tiny), 1.0 + 2.0**-11, 1.0 + 3 * 2.0**-11,
              1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8]  # fmt: skip
    random = rng.standard_normal(2000) * np.exp2(rng.integers(-30, 30, 2000))
    bits = rng.integers(0, 2**32, 2000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return np.concatenate([np.array(values), random]).astype(np.float32), bits


@np.errstate(invalid="ignore", over="ignore")
def _bf16_reference(x):
    """Round float32 to bfloat16 by distance in float64, ties to even; NaN stays NaN."""
    bits = x.view(np.uint32)
    down = (bits >> 16).astype(np.int64)
    up = down + 1
    value = lambda b: (b.astype(np.uint32) << 16).view(np.float32).astype(np.float64)  # noqa: E731
    v_down = value(down)
    v_up = np.where((up & 0x7FFF) == 0x7F80, np.copysign(2.0**128, v_down), value(up))
    xd = x.astype(np.float64)
    d_down, d_up = np.abs(xd - v_down), np.abs(v_up - xd)
    pick_up = (d_up < d_down) | ((d_up == d_down) & (down % 2 == 1))
    out = np.where(pick_up, up, down).astype(np.uint16)
    finite = np.isfinite(x)
    out[~finite] = (bits[~finite] >> 16).astype(np.uint16)  # Inf stays; NaN checked apart
    return out


def test_16_bit_floats_match_numpy(builds, tmp_path):
    binary, env = builds["plain"]
    cluster = Cluster(binary, env, tmp_path)
    try:
        task = cluster.task()
        rng = np.random.default_rng(1)
        for x in _special_floats(rng):
            with np.errstate(over="ignore"):
                want = x.astype(np.float16).view(np.uint16)
            nan = np.isnan(x)
            for command in ("f16", "f16_portable"):  # F16C where the CPU has it, and without
                got = np.frombuffer(bytes.fromhex(task(f"{command} {_hex(x)}")), np.uint16)
                np.testing.assert_array_equal(got[~nan], want[~nan])
                assert np.isnan(got[nan].view(np.float16)).all()
            got = np.frombuffer(bytes.fromhex(task("bf16 " + _hex(x))), np.uint16)
            want = _bf16_reference(x)
            np.testing.assert_array_equal(got[~nan], want[~nan])
            assert ((got[nan] & 0x7F80) == 0x7F80).all() and ((got[nan] & 0x7F) != 0).all()
        every = np.arange(65536, dtype=np.uint32).astype(np.uint16)
        want = every.view(np.float16).astype(np.float32)
        ok = ~np.isnan(want)
        for kind in ("f16", "f16_portable"):
            got = np.frombuffer(bytes.fromhex(task(f"widen16 {kind} {_hex(every)}")), np.float32)
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            np.testing.assert_array_equal(got[ok].view(np.uint32), want[ok].view(np.uint32))
        got = np.frombuffer(bytes.fromhex(task("widen16 bf16 " + _hex(every))), np.uint32)
        np.testing.assert_array_equal(got, every.astype(np.uint32) << 16)
        assert not cluster.close()
    finally:
        cluster.kill_all()


# ---- two tasks ----


def test_round_trip_of_every_dtype_and_shape(cluster):
    server, client = _pair(cluster)
    rng = np.random.default_rng(2)
    cases = []
    for i, (name, dtype) in enumerate(DTYPES.items()):
        for j, shape in enumerate(SHAPES):
            if dtype is np.bool_:
                a = rng.random(shape) < 0.5
            elif np.issubdtype(dtype, np.integer):
                info = np.iinfo(dtype)
                a = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
            else:
                a = rng.standard_normal(shape).astype(dtype)
            cases.append((f"/job:w/task:0;/job:ps/task:0;{name}_{j}:0", i * 10 + j, name, a))
    for n, (key, step, name, a) in enumerate(cases):
        if n % 2:  # the recv waits first: the reader fills its buffer in place
            server.post(f"recv {key} {step} {name} {_dims(a.shape)} 10000")
            time.sleep(0.002)
            assert client(f"send 0 {key} {step} {name} {_dims(a.shape)} {_hex(a)}") == "ok"
            answer = server.answer()
        else:  # the tensor arrives first and waits in the table
            assert client(f"send 0 {key} {step} {name} {_dims(a.shape)} {_hex(a)}") == "ok"
            answer = server(f"recv {key} {step} {name} {_dims(a.shape)} 10000")
        got_step, got = _parse_tensor(answer, DTYPES[name])
        assert got_step == step and got.shape == a.shape, (key, answer[:80])
        np.testing.assert_array_equal(got, a)
    # the shape taken from the frame, and any step
    a = np.arange(6, dtype=np.int64).reshape(3, 2)
    assert client(f"send 0 anyshape 77 int64 3,2 {_hex(a)}") == "ok"
    step, got = _parse_tensor(server("recv anyshape * int64 * 10000"), np.int64)
    assert step == 77
    np.testing.assert_array_equal(got, a)
    sent = client("stats").split()
    received = server("stats").split()
    assert sent[1] == received[2] == str(len(cases) + 1)  # frames
    assert sent[3] == received[4]  # bytes
    assert received[5:9] == ["0", "0", "0", "0"]  # no bad frame or handshake, nothing evicted
    assert received[10:] == ["0", "0"]  # nothing left waiting


@pytest.mark.parametrize("wire", ["f16", "bf16"])
def test_16_bit_wire_halves_the_bytes(plain_cluster, wire):
    server, client = _pair(plain_cluster, wire=wire)
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((25, 40)) * 10).astype(np.float32)
    a[0, :4] = [np.inf, -np.inf, np.nan, 0.0]
    ints = np.arange(1000, dtype=np.int32)
    assert client(f"send 0 w 1 float32 25,40 {_hex(a)}") == "ok"
    bytes_f32 = int(client("stats").split()[3])
    assert client(f"send 0 i 1 int32 1000 {_hex(ints)}") == "ok"  # other dtypes as they are
    _, got = _parse_tensor(server("recv w 1 float32 25,40 5000"), np.float32)
    _, got_ints = _parse_tensor(server("recv i 1 int32 1000 5000"), np.int32)
    np.testing.assert_array_equal(got_ints, ints)
    if wire == "f16":
        want = a.astype(np.float16).astype(np.float32)
    else:
        want = (
            (_bf16_reference(a.ravel()).astype(np.uint32) << 16).view(np.float32).reshape(a.shape)
        )
    np.testing.assert_array_equal(np.isnan(got), np.isnan(a))
    ok = ~np.isnan(a)
    np.testing.assert_array_equal(got[ok], want[ok])
    assert np.abs(got[ok & np.isfinite(a)] - a[ok & np.isfinite(a)]).max() > 0  # it was lossy
    header = 32 + 2 * 8 + 1 + 4
    assert bytes_f32 == header + 2 * a.size  # half the 4 * size bytes of float32


def test_many_tensors_and_steps_and_poll(cluster):
    server, client = _pair(cluster)
    server.post("stress_recv 20 40 20000")
    assert client("stress_send 0 20 40") == "ok"
    assert server.answer() == "ok"
    # poll: wait for whichever of several keys comes first, without taking it
    assert server("poll * 0 grads/w0 grads/w1").startswith("ERR 4 ")
    assert client("send 0 grads/w1 5 float32 2 0000803f00000040") == "ok"
    assert server("poll * 5000 grads/w0 grads/w1") == "index 1"
    step, got = _parse_tensor(server("recv grads/w1 * float32 2 0"), np.float32)
    assert step == 5 and got.tolist() == [1.0, 2.0]


def test_a_recv_that_times_out_takes_nothing(cluster):
    """A recv giving up at its deadline let go of the table's lock before taking its request
    out: a reader that came in between filled the request after the recv had returned, into
    a buffer the caller had freed, through an entry on a stack that was gone (a worker draining
    values with 0 ms recvs after a ps restart died of "double free or corruption")."""
    server, client = _pair(cluster)
    client.post("stress_send 0 4 2500")
    assert server("stress_drain 4 2500 10000", timeout=30) == "taken 10000"
    assert client.answer() == "ok"


def test_tasks_start_in_either_order(plain_cluster, tmp_path):
    with socket.socket() as s:  # a port nobody listens on, for now
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = plain_cluster.listening()
    client.post(f"connect 127.0.0.1:{port}")  # retries with backoff while the server is absent
    time.sleep(0.4)
    server = plain_cluster.task()
    assert server(f"listen {port}") == f"port {port}"
    assert client.answer() == "peer 0"
    assert client("send 0 k 0 int32 - 2a000000") == "ok"
    assert server("recv k 0 int32 - 5000") == "tensor 0 - 2a000000"
    # nobody there at all: connect gives up after CONNECT_MS
    lone = plain_cluster.listening(CONNECT_MS=300)
    start = time.monotonic()
    answer = lone(f"connect 127.0.0.1:{port + 1 if port < 65535 else port - 1}")
    assert answer.startswith("ERR 14 ") and "cannot reach" in answer, answer
    assert 0.25 < time.monotonic() - start < 5
    # a caller's own bound (a worker's gradients to a ps that may have finished)
    patient = plain_cluster.listening(CONNECT_MS=120000)
    start = time.monotonic()
    answer = patient(f"connect 127.0.0.1:{port + 1 if port < 65535 else port - 1} 300")
    assert answer.startswith("ERR 14 ") and "within 300 ms" in answer, answer
    assert 0.25 < time.monotonic() - start < 5


def test_send_reconnects_to_a_restarted_peer(plain_cluster):
    server, client = _pair(plain_cluster)
    assert client("send 0 a 0 int32 - 01000000") == "ok"
    assert server("recv a 0 int32 - 5000") == "tensor 0 - 01000000"
    port = server.port
    assert server.quit() == 0
    restarted = plain_cluster.task()
    assert restarted(f"listen {port}") == f"port {port}"
    # the old connection is gone: the first write may still succeed into the socket buffer
    # before the reset shows, so send until one arrives
    for step in range(1, 4):
        assert client(f"send 0 a {step} int32 - 02000000") == "ok"
        if restarted(f"recv a {step} int32 - 1000") == f"tensor {step} - 02000000":
            break
    else:
        raise AssertionError("no send reached the restarted task")


def test_recv_timeout_mismatch_and_cancel(cluster):
    server, client = _pair(cluster)
    start = time.monotonic()
    answer = server("recv never 3 float32 2 200")
    assert answer.startswith("ERR 4 ") and "'never' at step 3" in answer, answer
    assert 0.15 < time.monotonic() - start < 5
    assert client("send 0 shaped 1 float32 2,3 " + "00" * 24) == "ok"
    answer = server("recv shaped 1 float32 3,2 5000")
    assert answer.startswith("ERR 3 ") and "float32[3,2]" in answer and "float32[2,3]" in answer
    assert client("send 0 typed 1 int32 2 " + "00" * 8) == "ok"
    answer = server("recv typed 1 float32 2 5000")
    assert answer.startswith("ERR 3 ") and "int32[2]" in answer, answer
    assert server("cancel") == "ok"
    answer = server("recv later 0 float32 2 -1")
    assert answer.startswith("ERR 1 "), answer


def test_recvs_posted_ahead(cluster):
    server, client = _pair(cluster)
    requests = [server(f"post ahead {step} int32 2") for step in range(3)]
    assert requests == ["request 0", "request 1", "request 2"]
    for step in (2, 0, 1):  # sent out of order, each lands in its own buffer
        value = struct.pack("<ii", step, -step).hex()
        assert client(f"send 0 ahead {step} int32 2 {value}") == "ok"
    for step in range(3):
        assert (
            server(f"wait {step} 5000")
            == f"tensor {step} 2 " + struct.pack("<ii", step, -step).hex()
        )
    # a wait that times out leaves the request posted: a later wait gets the tensor
    assert server("post later * float64 -") == "request 0"
    assert server("wait 0 100").startswith("ERR 4 ")
    assert client("send 0 later 9 float64 - " + struct.pack("<d", 2.5).hex()) == "ok"
    assert server("wait 0 5000") == "tensor 9 - " + struct.pack("<d", 2.5).hex()
    # an abandoned request takes nothing: the tensor waits for the next recv
    assert server("post gone 0 int32 -") == "request 0"
    assert server("abandon 0") == "ok"
    assert client("send 0 gone 0 int32 - 07000000") == "ok"
    assert server("recv gone 0 int32 - 5000") == "tensor 0 - 07000000"


def test_stalled_peers_time_out_while_others_are_served(plain_cluster):
    server, client = _pair(plain_cluster, IO_MS=300)
    silent = socket.create_connection(("127.0.0.1", server.port), timeout=5)  # says nothing
    stalled = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    try:
        assert _handshake(stalled) == (0x41434654, 0)
        stalled.sendall(_frame(key=b"slow")[:40])  # half a frame, then nothing
        for step in range(3):  # meanwhile the good connection is served
            assert client(f"send 0 fast {step} int32 - 2a000000") == "ok"
            assert server(f"recv fast {step} int32 - 5000") == f"tensor {step} - 2a000000"
        deadline = time.monotonic() + 5
        silent_peer = f"127.0.0.1:{silent.getsockname()[1]}"
        stalled_peer = f"127.0.0.1:{stalled.getsockname()[1]}"
        silent_line = f"from {silent_peer}: handshake (hello): timed out"
        stalled_line = f"from {stalled_peer} (python): truncated: dims and key: timed out"
        while True:
            log = server.log()
            if silent_line in log and f"bad frame {stalled_line}" in log:
                break
            assert time.monotonic() < deadline, log
            time.sleep(0.05)
    finally:
        silent.close()
        stalled.close()


# ---- the cluster token ----


def test_cluster_token(cluster):
    server = cluster.listening(TFC_CLUSTER_TOKEN="s3cret")
    good = cluster.listening(TFC_CLUSTER_TOKEN="s3cret")
    wrong = cluster.listening(TFC_CLUSTER_TOKEN="guess")
    none = cluster.listening()
    answer = wrong(f"connect 127.0.0.1:{server.port}")
    assert answer.startswith("ERR 7 ") and "cluster token" in answer, answer
    answer = none(f"connect 127.0.0.1:{server.port}")
    assert answer.startswith("ERR 7 ") and "TFC_CLUSTER_TOKEN" in answer, answer
    assert good(f"connect 127.0.0.1:{server.port}") == "peer 0"
    assert good("send 0 k 0 uint8 2 0102") == "ok"
    assert server("recv k 0 uint8 2 5000") == "tensor 0 2 0102"
    # a token-holding client does not trust a server without one either
    plain = cluster.listening()
    answer = good(f"connect 127.0.0.1:{plain.port}")
    assert answer.startswith("ERR 7 "), answer
    # Python's hmac speaks the same handshake: the right token is accepted, a wrong one refused
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        assert _handshake(s, b"s3cret") == (0x41434654, 0)
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        with pytest.raises(AssertionError, match="server's proof"):
            _handshake(s, b"other")
    deadline = time.monotonic() + 5
    while server.log().count("refused the connection from 127.0.0.1:") < 3:
        assert time.monotonic() < deadline, server.log()
        time.sleep(0.02)
    log = server.log()
    assert re.search(r"refused the connection from 127\.0\.0\.1:\d+: refused: wrong cluster", log)
    assert "the peer has no cluster token" in log
    assert server("stats").split()[6] == "3"


# ---- bad frames ----


CORRUPTIONS = {  # name: (bytes sent, then the connection is closed; the field the log names)
    "magic": (_frame(magic=0x12345678), "magic: 0x12345678"),
    "version": (_frame(version=7), "version: 7 is not 1"),
    "crc": (_corrupt_crc(_frame()), "crc32c: the frame of 'k'"),
    "payload flipped": (_frame()[:-6] + b"\xff" + _frame()[-5:], "crc32c"),
    "byte count": (_frame(nbytes=12), "payload bytes: 12 is not the 8 bytes of int32[2]"),
    "huge length": (
        _frame(nbytes=2**62),
        "payload bytes: 4611686018427387904 are over the frame limit of 2147483648 bytes",
    ),
    "key length": (_frame(key_len=5000), "key length: 5000"),
    "rank": (_frame(rank=9), "rank: 9 is over 8"),
    "negative dim": (_frame(dims=(-2,), payload=b""), "dims: dim 0 is -2"),
    "dtype": (_frame(dtype=99), "dtype: 99"),
    "wire dtype": (_frame(dtype=3, wire=19), "wire dtype: 19 cannot carry int32"),
    "truncated": (_frame()[:-7], "truncated: payload of 'k'"),
    "truncated header": (_frame()[:20], "truncated: header"),
}


def test_bad_frames_close_only_that_connection(cluster):
    server, client = _pair(cluster)
    for n, (name, (data, field)) in enumerate(CORRUPTIONS.items()):
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
            assert _handshake(s) == (0x41434654, 0)
            s.sendall(_frame(key=b"good_before", step=n))  # a good frame first: it arrives
            peer = f"127.0.0.1:{s.getsockname()[1]}"
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            try:  # the server closes this connection (a reset when it left bytes unread)
                assert s.recv(1) == b"", name
            except ConnectionResetError:
                pass
        answer = server(f"recv good_before {n} int32 2 5000")
        assert answer == f"tensor {n} 2 0000000001000000", (name, answer)
        # the other connection keeps working
        assert client(f"send 0 still {n} int32 - 2a000000") == "ok", name
        assert server(f"recv still {n} int32 - 5000") == f"tensor {n} - 2a000000", name
        log = server.log()
        want = f"bad frame from {peer} (python): {field}"
        assert want in log, (name, want, log[-1500:])
    assert server("stats").split()[5] == str(len(CORRUPTIONS))
    # nothing that was refused ever reached the table
    assert server("recv k * int32 * 0").startswith("ERR 4 ")


@pytest.mark.parametrize("wire", ["f32", "f16"])
def test_tensors_of_several_chunks(plain_cluster, wire):
    """Over 1 MB a frame is checksummed and converted chunk by chunk, into the recv's buffer."""
    server, client = _pair(plain_cluster, wire=wire)
    rng = np.random.default_rng(5)
    a = rng.integers(-2048, 2048, (3, 700_001)).astype(np.float32)  # exact in float16 too
    dims = _dims(a.shape)
    assert client(f"send 0 big 0 float32 {dims} {_hex(a)}") == "ok"  # arrives first
    _, got = _parse_tensor(server(f"recv big 0 float32 {dims} 20000"), np.float32)
    np.testing.assert_array_equal(got, a)
    server.post(f"recv big 1 float32 {dims} 20000")  # posted first
    time.sleep(0.05)
    assert client(f"send 0 big 1 float32 {dims} {_hex(a[::-1])}") == "ok"
    _, got = _parse_tensor(server.answer(), np.float32)
    np.testing.assert_array_equal(got, a[::-1])


def test_recv_posted_in_the_middle_of_a_frame(plain_cluster):
    """The reader moves what it already has into a recv posted mid-frame and goes on there."""
    server = plain_cluster.listening()
    a = np.arange(300_000, dtype=np.int32)  # 1.2 MB: two chunks
    frame = _frame(key=b"mid", step=4, dims=a.shape, payload=a.tobytes())
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        assert _handshake(s) == (0x41434654, 0)
        s.sendall(frame[:600_000])
        time.sleep(0.3)  # the reader has the first chunk and waits for more
        server.post("recv mid 4 int32 300000 20000")
        time.sleep(0.3)  # the recv is posted
        s.sendall(frame[600_000:])
        _, got = _parse_tensor(server.answer(), np.int32)
    np.testing.assert_array_equal(got, a)


# ---- peers, routes and limits: what a hostile local process can no longer do ----


def _open(server, name=b"python", token=None):
    """A raw connection to `server` that completed the handshake as `name`."""
    s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    assert _handshake(s, token, name) == (0x41434654, 0)
    return s


def _closed_by_server(sock, within=10.0):
    """Whether the server closed `sock` within `within` seconds (what it sent first is read)."""
    deadline = time.monotonic() + within
    try:
        while (left := deadline - time.monotonic()) > 0:
            sock.settimeout(left)
            if sock.recv(4096) == b"":
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        pass
    return False


def _wait_for_log(task, text, within=10.0):
    deadline = time.monotonic() + within
    while text not in task.log():
        assert time.monotonic() < deadline, (text, task.log()[-3000:])
        time.sleep(0.02)
    return task.log()


def _wait_for_stat(task, index, value, within=10.0):
    """Wait until field `index` of the task's stats is `value` (frames arrive asynchronously)."""
    deadline = time.monotonic() + within
    while (got := task("stats").split()[index]) != str(value):
        assert time.monotonic() < deadline, (index, got, value)
        time.sleep(0.02)


def _threads(task):
    status = open(f"/proc/{task.proc.pid}/status").read()
    return int(re.search(r"^Threads:\s+(\d+)", status, re.M).group(1))


def test_routes_take_each_key_only_from_its_peer(cluster):
    routes = "grads@w0=worker:0=8;tfc:ctl@ps0=ps:0=16"
    server = cluster.listening(ROUTES=routes)
    worker = cluster.listening(NAME="worker:0")
    assert worker(f"connect 127.0.0.1:{server.port}") == "peer 0"
    assert worker("send 0 grads@w0 1 int32 2 0100000002000000") == "ok"
    assert server("recv grads@w0 1 int32 2 5000") == "tensor 1 2 0100000002000000"
    refusals = [  # (the name the sender gives, its frame, what the server logs)
        (b"worker:0", _frame(key=b"junk"), "refused: key 'junk' is not one this task receives"),
        (b"worker:0", _frame(key=b"tfc:ctl@ps0", dtype=9, payload=struct.pack("<qq", 5, 1)),
         "refused: key 'tfc:ctl@ps0' comes from ps:0 only, not from worker:0"),
        (b"worker:0", _frame(key=b"grads@w0", dims=(3,)),
         "refused: key 'grads@w0' carries at most 8 bytes, this frame 12"),
    ]  # fmt: skip
    for name, frame, message in refusals:
        with _open(server, name=name) as s:
            s.sendall(frame)
            assert _closed_by_server(s), message
        _wait_for_log(server, message)
    # a peer that owns no route is refused at the handshake
    stranger = cluster.listening(NAME="stranger")
    answer = stranger(f"connect 127.0.0.1:{server.port}")
    assert answer.startswith("ERR 7 ") and "takes nothing from a task named 'stranger'" in answer
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        assert _handshake(s, name=b"ps:1") == (0x41434654, 2)  # the verdict: unknown peer
    # the rightful owner's control tensor arrives; nothing refused reached the table
    with _open(server, name=b"ps:0") as s:
        s.sendall(_frame(key=b"tfc:ctl@ps0", step=5, dtype=9, payload=struct.pack("<qq", 5, 1)))
        answer = server("recv tfc:ctl@ps0 * int64 2 5000")
    assert answer == "tensor 5 2 " + struct.pack("<qq", 5, 1).hex()
    assert server("recv junk * int32 * 0").startswith("ERR 4 ")
    stats = server("stats").split()
    assert stats[5] == "3" and stats[7] == "3"  # bad frames, of which refused
    assert stats[10:] == ["0", "0"]  # nothing held


def test_the_token_binds_the_name_a_peer_gives(cluster):
    server = cluster.listening(TFC_CLUSTER_TOKEN="s3cret", ROUTES="tfc:ctl@ps0=ps:0=16")
    ctl = _frame(key=b"tfc:ctl@ps0", step=3, dtype=9, payload=struct.pack("<qq", 3, 1))
    # without the token nobody can be ps:0
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        s.sendall(struct.pack("<IHH", 0x48434654, 2, 0) + os.urandom(32) + b"ps:0".ljust(32, b"\0"))
        reply = _read_exact(s, 76)
        assert struct.unpack("<H", reply[6:8])[0] & 2  # refused in the reply
        assert _closed_by_server(s)
    # a token holder's proof covers the name in its hello: a proof made for another name fails
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        nonce_c = os.urandom(32)
        s.sendall(struct.pack("<IHH", 0x48434654, 2, 1) + nonce_c + b"ps:0".ljust(32, b"\0"))
        nonce_s = _read_exact(s, 76)[8:40]
        other = b"worker:3".ljust(32, b"\0")
        proof = hmac.new(b"s3cret", b"tfc client" + nonce_s + nonce_c + other, hashlib.sha256)
        s.sendall(struct.pack("<I", 0x48434654) + proof.digest())
        assert struct.unpack("<II", _read_exact(s, 8)) == (0x41434654, 1)
    _wait_for_log(server, "refused: wrong cluster token")
    # and the holder that proves its own name is heard
    with _open(server, name=b"ps:0", token=b"s3cret") as s:
        s.sendall(ctl)
        assert server("recv tfc:ctl@ps0 3 int64 2 5000").startswith("tensor 3 2 ")


def test_held_tensors_are_capped_per_peer_and_in_total(plain_cluster):
    server, client = _pair(plain_cluster, MAX_TENSORS_PEER=4, MAX_HELD=1000)
    for k in range(4):  # four tensors nobody receives yet: the peer's cap
        assert client(f"send 0 unread{k} 0 int32 - 2a000000") == "ok"
    _wait_for_stat(server, 2, 4)
    with _open(server, name=b"driver") as s:  # one more from the same peer (by name): refused
        s.sendall(_frame(key=b"unread4", dims=()))
        assert _closed_by_server(s)
    _wait_for_log(server, "held: 4 tensors of this peer wait for their recv; a tensor of 4 "
                          "bytes more would pass the cap of 4")  # fmt: skip
    assert server("stats").split()[10:] == ["16", "4"]
    for k in range(4):  # received: the room is free again
        assert server(f"recv unread{k} 0 int32 - 5000") == "tensor 0 - 2a000000"
    big = np.zeros(150, np.int32)  # 600 bytes: two of them pass the 1000 bytes of MAX_HELD
    with _open(server, name=b"another") as s:
        s.sendall(_frame(key=b"big0", dims=big.shape, payload=big.tobytes()))
        s.sendall(_frame(key=b"big1", dims=big.shape, payload=big.tobytes()))
        assert _closed_by_server(s)
    _wait_for_log(server, "held: 600 bytes wait for their recv; a tensor of 600 bytes more "
                          "would pass the cap of 1000")  # fmt: skip
    assert server("stats").split()[10:] == ["600", "1"]


def test_tensors_far_behind_are_evicted(cluster):
    server, client = _pair(cluster, KEEP_STEPS=3)
    for step in (0, 1, 2, 3):  # within three steps of the newest: all kept
        assert client(f"send 0 v {step} int32 - {struct.pack('<i', step).hex()}") == "ok"
    assert client("send 0 w 0 int32 - 00000000") == "ok"
    _wait_for_stat(server, 2, 5)
    assert server("stats").split()[8] == "0"
    for step in (10, 11):  # steps 0 to 3 are more than three behind 10, 10 is not behind 11
        assert client(f"send 0 v {step} int32 - {struct.pack('<i', step).hex()}") == "ok"
    _wait_for_stat(server, 2, 7)  # all arrived (before any recv could take one)
    stats = server("stats").split()
    assert stats[8] == "4" and stats[11] == "3"  # evicted; v 10 and 11 and w 0 wait
    assert server("recv w 0 int32 - 5000") == "tensor 0 - 00000000"  # other keys: untouched
    assert server("recv v 0 int32 - 0").startswith("ERR 4 ")  # evicted
    assert server("recv v * int32 - 0") == "tensor 10 - 0a000000"
    assert server("recv v 11 int32 - 0") == "tensor 11 - 0b000000"
    assert client("send 0 v 5 int32 - 05000000") == "ok"  # a restarted sender's older step:
    assert server("recv v 5 int32 - 5000") == "tensor 5 - 05000000"  # kept, nothing newer waits


def test_a_tensor_sent_again_replaces_the_one_waiting(cluster):
    """A resend (a ps answering a hello) once closed the connection as a bad frame, losing
    what followed it; the newer tensor now replaces the one nobody received yet."""
    server, client = _pair(cluster)
    assert client("send 0 k 1 int32 - 01000000") == "ok"
    assert client("send 0 k 1 int32 - 02000000") == "ok"
    assert client("send 0 after 1 int32 - 03000000") == "ok"  # the connection still works
    assert server("recv after 1 int32 - 5000") == "tensor 1 - 03000000"
    assert server("recv k 1 int32 - 5000") == "tensor 1 - 02000000"
    assert server("recv k 1 int32 - 0").startswith("ERR 4 ")  # one tensor, not two
    stats = server("stats").split()
    assert stats[5] == "0" and stats[8] == "1"  # no bad frame; one replaced


def test_connections_are_capped_per_peer_and_in_total(plain_cluster):
    server = plain_cluster.listening(MAX_CONNS_PEER=2, MAX_CONNS=3)
    a, b, c = (_open(server, name=b"p") for _ in range(3))
    try:
        assert _closed_by_server(a)  # p's oldest made room for its third
        _wait_for_log(server, "closing the oldest connection of p")
        d = _open(server, name=b"q")  # b, c and d: the server's three
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as e:
            assert _handshake(e, name=b"r") == (0x41434654, 3)  # busy
        _wait_for_log(server, "refused: 3 connections already")
        for s in (b, c, d):  # the others are served
            s.sendall(_frame(key=b"k" + bytes([s.fileno() % 26 + 97]), step=s.fileno()))
        _wait_for_stat(server, 2, 3)
        d.close()
    finally:
        for s in (a, b, c):
            s.close()


def test_no_thread_before_a_handshake_and_idle_connections_close(plain_cluster):
    server = plain_cluster.listening(IDLE_MS=700, IO_MS=1500)
    time.sleep(0.2)
    base = _threads(server)  # the main thread and the accept thread
    silent = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(40)]
    authenticated = [_open(server) for _ in range(5)]
    try:
        time.sleep(0.2)
        assert _threads(server) == base + 5  # a reader per proved peer, none for the others
        for s in authenticated:  # idle: closed after IDLE_MS
            assert _closed_by_server(s, within=5)
        for s in silent:  # never spoke: closed when the handshake's deadline passed
            assert _closed_by_server(s, within=10)
        deadline = time.monotonic() + 5
        while _threads(server) != base:
            assert time.monotonic() < deadline, _threads(server)
            time.sleep(0.05)
        log = server.log()
        assert log.count("closing the idle connection") == 5
        assert log.count("handshake (hello): timed out") == 40
    finally:
        for s in silent + authenticated:
            s.close()


def test_a_slow_peer_gets_one_deadline_per_frame_and_handshake(plain_cluster):
    """Slowloris: a byte every 250 ms kept a connection open forever when each byte reset the
    stall timer; a frame (and a handshake) now has one deadline from its first byte."""
    server = plain_cluster.listening(IO_MS=1000)
    frame_sock = _open(server)
    hello_sock = socket.create_connection(("127.0.0.1", server.port))
    hello = struct.pack("<IHH", 0x48434654, 2, 0) + os.urandom(32) + b"slow".ljust(32, b"\0")
    frame = _frame(key=b"slow")
    closed = {}
    start = time.monotonic()
    try:
        for i in range(40):  # 10 s of trickling at most
            for name, sock, data in (("frame", frame_sock, frame), ("hello", hello_sock, hello)):
                if name in closed:
                    continue
                try:
                    sock.sendall(data[i : i + 1])
                except OSError:
                    closed[name] = time.monotonic() - start
            if len(closed) == 2:
                break
            time.sleep(0.25)
        for name, sock in (("frame", frame_sock), ("hello", hello_sock)):
            if name not in closed and _closed_by_server(sock, within=0.5):
                closed[name] = time.monotonic() - start
    finally:
        frame_sock.close()
        hello_sock.close()
    assert set(closed) == {"frame", "hello"}, closed
    assert max(closed.values()) < 4, closed  # about IO_MS after the first byte
    log = server.log()
    assert "truncated: header: timed out (a header, dims and key get 1000 ms)" in log
    assert "handshake (hello): timed out (a handshake gets 1000 ms)" in log


def test_a_sender_replaces_a_connection_before_the_server_finds_it_idle(plain_cluster):
    server, client = _pair(plain_cluster, IDLE_MS=600)
    assert client("send 0 k 0 int32 - 01000000") == "ok"
    assert server("recv k 0 int32 - 5000") == "tensor 0 - 01000000"
    _wait_for_log(server, "closing the idle connection")
    for step in (1, 2):  # each after the server closed the idle one: no frame is lost
        assert client(f"send 0 k {step} int32 - 02000000") == "ok"
        assert server(f"recv k {step} int32 - 5000") == f"tensor {step} - 02000000"
        time.sleep(0.8)


def test_what_peers_send_is_escaped_in_logs(plain_cluster):
    server = plain_cluster.listening()
    key = b"k\ntfc info: transport driver: done\x1b[2J"
    with _open(server) as s:
        s.sendall(_corrupt_crc(_frame(key=key)))
        assert _closed_by_server(s)
    log = _wait_for_log(server, "crc32c: the frame of")
    assert "\x1b" not in log and "\ntfc info: transport driver: done" not in log
    assert "the frame of 'k\\x0atfc info: transport driver: done\\x1b[2J'" in log
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        s.sendall(struct.pack("<IHH", 0x48434654, 2, 0) + os.urandom(32) + b"a\nb".ljust(32, b"\0"))
        assert _closed_by_server(s)
    _wait_for_log(server, "handshake name: not 1 to 31 printable characters")


def test_the_frame_limit_message_counts_what_it_says(plain_cluster):
    server = plain_cluster.listening(MAX_FRAME=1000)
    payload = np.zeros(248, np.int32).tobytes()  # 992 bytes: alone under the limit
    with _open(server) as s:
        s.sendall(_frame(dims=(248,), payload=payload))
        assert _closed_by_server(s)
    want = "payload bytes: 992 and the 45 bytes of header, dims, key and checksum make a frame"
    _wait_for_log(server, want + " of 1037 bytes, over the limit of 1000")


def test_listening_beyond_loopback_needs_a_token(plain_cluster):
    refused = plain_cluster.task(BIND="0.0.0.0")
    answer = refused("listen 0")
    assert answer.startswith("ERR 7 ") and "0.0.0.0, which is not a loopback address" in answer
    assert "TFC_CLUSTER_TOKEN" in answer and "--insecure" in answer
    for env in ({"BIND": "0.0.0.0", "INSECURE": 1}, {"BIND": "0.0.0.0", "TFC_CLUSTER_TOKEN": "x"},
                {"BIND": "127.0.0.2"}, {"BIND": "localhost"}):  # fmt: skip
        assert plain_cluster.task(**env)("listen 0").startswith("port "), env


# ---- the decoders under libFuzzer ----

FUZZ_C = os.path.join(os.path.dirname(__file__), "fuzz", "transport_fuzz.c")
FUZZ_RUNS = 1_000_000


def test_frame_and_handshake_decoders_survive_fuzzing(tmp_path):
    """A bounded libFuzzer run (clang) over the frame and handshake decoders, from valid seeds."""
    import shutil

    clang = shutil.which("clang")
    if clang is None:
        pytest.skip("clang is not installed (libFuzzer)")
    src = runtime_dir() / "src" / "transport"
    binary = tmp_path / "transport_fuzz"
    sources = [src / n for n in ("tfc_wire.c", "tfc_transport_handshake.c", "tfc_sha256.c",
                                 "tfc_crc32c.c")]  # fmt: skip
    proc = subprocess.run(
        [clang, "-g", "-O1", "-Wall", "-Wextra", "-Werror",
         "-fsanitize=fuzzer,address,undefined", "-fno-sanitize-recover=all",
         f"-I{runtime_dir() / 'include'}", FUZZ_C, *map(str, sources), "-o", str(binary)],
        capture_output=True, text=True,
    )  # fmt: skip
    if proc.returncode != 0 and "fuzzer" in proc.stderr and "cannot find" in proc.stderr:
        pytest.skip(f"clang has no libFuzzer runtime: {proc.stderr[-300:]}")
    assert proc.returncode == 0, proc.stderr
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    a = np.arange(6, dtype=np.float32)
    (corpus / "frame").write_bytes(b"\x00\x00" + _frame(key=b"w", dtype=1, dims=(2, 3),
                                                        payload=a.tobytes()))  # fmt: skip
    hello = struct.pack("<IHH", 0x48434654, 2, 0) + bytes(32) + b"worker:0".ljust(32, b"\0")
    (corpus / "server").write_bytes(b"\x01\x00" + hello + struct.pack("<I", 0x48434654) +
                                    bytes(32))  # fmt: skip
    reply = struct.pack("<IHH", 0x48434654, 2, 0) + bytes(32) + struct.pack("<I", 60000)
    (corpus / "client").write_bytes(b"\x02\x00" + reply + bytes(32) +
                                    struct.pack("<II", 0x41434654, 0))  # fmt: skip
    run = subprocess.run(
        # a fixed number of inputs from a fixed seed (about 3 s here), not a fixed time: the
        # same inputs on a fast or a loaded machine; the time cap only guards a hang
        [str(binary), f"-runs={FUZZ_RUNS}", "-max_total_time=150", "-seed=1", "-timeout=5",
         "-rss_limit_mb=1024", f"-artifact_prefix={tmp_path}/", str(corpus)],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    runs = int(re.search(r"Done (\d+) runs", run.stderr).group(1))
    assert runs >= FUZZ_RUNS, run.stderr[-1000:]
