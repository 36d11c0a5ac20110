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

from tfc.backend.cc import compiler, runtime_dir

TRANSPORT_SOURCES = [
    "tfc_transport.c",
    "tfc_transport_send.c",
    "tfc_rendezvous.c",
    "tfc_transport_handshake.c",
    "tfc_wire.c",
    "tfc_sha256.c",
    "tfc_crc32c.c",
]
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


def _crc32c_table():
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
        table.append(crc)
    return table


_CRC32C_TABLE = _crc32c_table()


def _crc32c(data: bytes) -> int:
    """CRC32C (Castagnoli, reflected), a byte at a time: the reference for the C code."""
    crc, table = 0xFFFFFFFF, _CRC32C_TABLE
    for byte in data:
        crc = (crc >> 8) ^ table[(crc ^ byte) & 0xFF]
    return crc ^ 0xFFFFFFFF


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
    assert received[5:] == ["0", "0"]  # no bad frame, no refused handshake


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
        while True:
            log = server.log()
            if f"from {silent_peer}: handshake (hello): timed out" in log and (
                f"bad frame from {stalled_peer}: truncated: dims and key: timed out" in log
            ):
                break
            assert time.monotonic() < deadline, log
            time.sleep(0.05)
    finally:
        silent.close()
        stalled.close()


# ---- the cluster token ----


def _handshake(sock, token=None):
    """The client side of the handshake, written from the protocol's description."""
    nonce_c = os.urandom(32)
    sock.sendall(struct.pack("<IHH", 0x48434654, 1, 1 if token else 0) + nonce_c)
    reply = _read_exact(sock, 72)
    magic, version, flags = struct.unpack("<IHH", reply[:8])
    nonce_s, mac_s = reply[8:40], reply[40:72]
    assert (magic, version) == (0x48434654, 1)
    if token:
        want = hmac.new(token, b"tfc server" + nonce_c + nonce_s, hashlib.sha256).digest()
        assert mac_s == want, "the server's proof"
        proof = hmac.new(token, b"tfc client" + nonce_s + nonce_c, hashlib.sha256).digest()
    else:
        proof = bytes(32)
    sock.sendall(struct.pack("<I", 0x48434654) + proof)
    return struct.unpack("<II", _read_exact(sock, 8))


def _read_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError(f"closed after {len(data)} of {n} bytes")
        data += chunk
    return data


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


def _frame(key=b"k", step=1, dtype=3, wire=None, dims=(2,), payload=None, **override):
    """A frame as the protocol describes it (little-endian), with fields to corrupt."""
    wire = dtype if wire is None else wire
    if payload is None:
        payload = np.arange(int(np.prod(dims)), dtype=np.int32).tobytes()
    fields = dict(magic=0x46434654, version=1, key_len=len(key), rank=len(dims),
                  nbytes=len(payload))  # fmt: skip
    fields.update(override)
    head = struct.pack(
        "<IHHqIBBBBQ", fields["magic"], fields["version"], 0, step, fields["key_len"], dtype,
        wire, fields["rank"], 0, fields["nbytes"],
    )  # fmt: skip
    body = head + b"".join(struct.pack("<q", d) for d in dims) + key + payload
    return body + struct.pack("<I", _crc32c(body))


def _corrupt_crc(frame):
    return frame[:-4] + struct.pack("<I", struct.unpack("<I", frame[-4:])[0] ^ 1)


CORRUPTIONS = {  # name: (bytes sent, then the connection is closed; the field the log names)
    "magic": (_frame(magic=0x12345678), "magic: 0x12345678"),
    "version": (_frame(version=7), "version: 7 is not 1"),
    "crc": (_corrupt_crc(_frame()), "crc32c: the frame of 'k'"),
    "payload flipped": (_frame()[:-6] + b"\xff" + _frame()[-5:], "crc32c"),
    "byte count": (_frame(nbytes=12), "payload bytes: 12 is not the 8 bytes of int32[2]"),
    "huge length": (_frame(nbytes=2**62), "payload bytes: 4611686018427387904 make a frame"),
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
        want = f"bad frame from {peer}: {field}"
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
