"""The plans of TF1 cluster scripts: what a worker gives every ps task, and the ps task's
Server.join() that takes them.

A worker sends its plan (the sources of the cluster's `train` executable, their objects and C
flags, and the training mode) to the address of each ps task, where the ps task's join()
listens until it has one from every worker: the same from each, signed with HMAC-SHA256 under
TFC_CLUSTER_TOKEN when it is set (refused beyond loopback when it is not). It builds the plan,
answers every worker, closes its listener and runs its task of the executable on that address
until every worker is done. Frame: PLAN_MAGIC, worker index (u32), payload length (u64), the
JSON payload, 32 bytes of HMAC (zeros without a token); answer: b"OK" or b"ER", message length
(u32), message.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import hmac
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tfc.aot.build import build_executables, copy_runtime, write_if_changed
from tfc.aot.dist_sources import copy_dist_runtime
from tfc.aot.distributed import Cluster
from tfc.ir import errors
from tfc.train.cluster_spec import ClusterSpec, ServerDef
from tfc.version import __version__

__all__ = ["cluster_file", "deliver_plan", "serve_ps"]

PLAN_MAGIC = b"TFCPLAN1"
MAX_PLAN_BYTES = 64 << 20
# the ps serves until every worker is done: no step count of its own
UNBOUNDED_STEPS = 1 << 62
PLAN_WAIT_S = 600.0  # a worker waits this long for the ps tasks to take its plan
# a worker's task exits when no ps answers it for this long (its hellos' connects may take as
# long again: a lost ps is reported within about twice this)
GIVE_UP_MS = 30_000
PS_IDLE_EXIT_MS = 600_000  # and a ps task when no worker sends it anything for this long
_LOOPBACK = ("127.0.0.1", "localhost", "::1")
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def cluster_file(cluster: Cluster, where: Path) -> Path:
    """`where`/cluster.json: the cluster as the `train` executable's --cluster takes it."""
    path = where / "cluster.json"
    write_if_changed(path, json.dumps({"ps": cluster.ps, "worker": cluster.worker}))
    return path


def _mac(token: str, header: bytes, payload: bytes) -> bytes:
    if not token:
        return bytes(32)
    return hmac.new(token.encode(), header + payload, hashlib.sha256).digest()


def _recv_exact(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(min(n - len(data), 1 << 20))
        if not chunk:
            raise ConnectionError(f"the peer closed the connection after {len(data)} of {n} bytes")
        data += chunk
    return data


def deliver_plan(address: str, ps: int, worker: int, payload: bytes) -> None:
    """Give ps task `ps` this worker's plan; returns once it has built it (every worker's)."""
    host, _, port = address.rpartition(":")
    header = PLAN_MAGIC + struct.pack("<IQ", worker, len(payload))
    deadline = time.monotonic() + PLAN_WAIT_S
    while True:
        try:
            conn = socket.create_connection((host, int(port)), timeout=5)
            break
        except OSError as e:
            if time.monotonic() > deadline:
                raise errors.DeadlineExceededError(
                    None, None, f"ps task {ps} ({address}) did not answer for "
                    f"{PLAN_WAIT_S:.0f} s: is its server.join() running? ({e})",
                ) from None  # fmt: skip
            time.sleep(0.2)
    with conn:
        try:
            token = os.environ.get("TFC_CLUSTER_TOKEN", "")
            conn.sendall(header + payload + _mac(token, header, payload))
            # the ps answers once every worker's plan is in and built
            conn.settimeout(max(deadline - time.monotonic(), 1))
            status = _recv_exact(conn, 2)
            length = struct.unpack("<I", _recv_exact(conn, 4))[0]
            message = _recv_exact(conn, min(length, 1 << 16)).decode(errors="replace")
        except (OSError, ConnectionError) as e:
            raise errors.InternalError(
                None, None, f"ps task {ps} ({address}) did not take this worker's plan ({e}): "
                "a ps task takes the plans of every worker once, in its server.join(), before "
                "the training starts",
            ) from None  # fmt: skip
    if status != b"OK":
        raise errors.InvalidArgumentError(
            None, None, f"ps task {ps} ({address}) refused this worker's plan: {message}"
        )


def _read_plan(conn: socket.socket, n_workers: int, token: str) -> tuple[int, bytes]:
    header = _recv_exact(conn, len(PLAN_MAGIC) + 12)
    if header[: len(PLAN_MAGIC)] != PLAN_MAGIC:
        raise ValueError("not a tfc worker's plan (bad magic)")
    worker, length = struct.unpack("<IQ", header[len(PLAN_MAGIC) :])
    if worker >= n_workers:
        raise ValueError(f"worker {worker}: the cluster has {n_workers} workers")
    if length > MAX_PLAN_BYTES:
        raise ValueError(f"a plan of {length} bytes (at most {MAX_PLAN_BYTES})")
    payload = _recv_exact(conn, length)
    mac = _recv_exact(conn, 32)
    if not hmac.compare_digest(mac, _mac(token, header, payload)):
        raise ValueError("the plan's signature does not match this task's TFC_CLUSTER_TOKEN")
    return worker, payload


def _answer(conn: socket.socket, status: bytes, message: str = "") -> None:
    data = message.encode()
    with contextlib.suppress(OSError):
        conn.sendall(status + struct.pack("<I", len(data)) + data)


def serve_ps(server_def: ServerDef) -> None:
    """A ps task's Server.join(): take every worker's plan on the task's address, build it,
    and run the ps task until every worker is done. A worker task's join() returns at once."""
    if server_def.job_name != "ps":
        return
    cluster = Cluster.from_cluster_spec(ClusterSpec(server_def.cluster))
    task = server_def.task_index
    address = cluster.ps[task]
    host, _, port = address.rpartition(":")
    token = os.environ.get("TFC_CLUSTER_TOKEN", "")
    if not token and host not in _LOOPBACK:
        raise errors.PermissionDeniedError(
            None, None, f"ps task {task} would take programs to build and run from anyone who "
            f"reaches {address}: set the same secret in TFC_CLUSTER_TOKEN for every task",
        )  # fmt: skip
    n = len(cluster.worker)
    with socket.create_server((host, int(port))) as listener:
        conns: dict[int, socket.socket] = {}
        payload = None
        while len(conns) < n:
            conn, peer = listener.accept()
            conn.settimeout(30)
            try:
                worker, plan = _read_plan(conn, n, token)
            except (ValueError, OSError, ConnectionError) as e:
                print(f"ps:{task}: refused a plan from {peer[0]}: {e}", file=sys.stderr)
                _answer(conn, b"ER", str(e))
                conn.close()
                continue
            if payload is not None and plan != payload:
                _answer(conn, b"ER", "its train step differs from the other workers' (every "
                        "worker must build the same graph)")  # fmt: skip
                conn.close()
                continue
            payload = plan
            if worker in conns:
                conns[worker].close()
            conns[worker] = conn
        try:
            outdir = Path(tempfile.mkdtemp(prefix=f"tfc-ps{task}-"))
            train, args = _build_plan(json.loads(payload), outdir)
        except Exception as e:
            for conn in conns.values():
                _answer(conn, b"ER", f"ps task {task} could not build the plan: {e}")
                conn.close()
            raise
    # the listener is closed: the task binds the address once the workers know it is built
    for conn in conns.values():
        _answer(conn, b"OK")
    for conn in conns.values():
        with contextlib.suppress(OSError):  # the worker closes first: the port stays free
            conn.settimeout(10)
            conn.recv(1)
        conn.close()
    try:
        cmd = [
            str(train), "--job", "ps", "--task", str(task),
            "--cluster", str(cluster_file(cluster, outdir)), "--steps", str(UNBOUNDED_STEPS),
            "--log-every", "0", "--give-up-ms", str(GIVE_UP_MS),
            "--idle-exit-ms", str(PS_IDLE_EXIT_MS), *args,
        ]  # fmt: skip
        status = subprocess.run(cmd, preexec_fn=_end_with_parent).returncode
    finally:
        shutil.rmtree(outdir, ignore_errors=True)
    if status != 0:
        raise errors.InternalError(None, None, f"ps task {task} exited with status {status}")


def _end_with_parent() -> None:
    """In the ps task's child: end it (SIGTERM) when the process in join() dies (Linux), so
    that no ps task outlives its script."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _build_plan(manifest: Any, outdir: Path) -> tuple[Path, list[str]]:
    if manifest.get("version") != __version__:
        raise ValueError(f"the workers run tfc {manifest.get('version')}, this ps {__version__}")
    files, objects = manifest["files"], manifest["objects"]
    for name, text in files.items():
        if "/" in name or name.startswith("."):
            raise ValueError(f"a plan file named {name!r}")
        write_if_changed(outdir / name, text)
    copy_runtime(outdir)
    copy_dist_runtime(outdir)
    flags = [str(f) for f in manifest["cflags"]]
    if not all(f.startswith(("-O", "-m", "-f")) for f in flags):
        raise ValueError(f"plan C flags {flags}: only -O, -m and -f flags are taken")
    if not all(isinstance(o, str) and o.startswith("obj/") and ".." not in o for o in objects):
        raise ValueError("plan objects outside obj/")
    args = [str(a) for a in manifest["args"]]
    if args not in (["--async"], ["--sync", "--replicas-to-aggregate", *args[2:3]]) or (
        len(args) == 3 and not args[2].isdigit()
    ):
        raise ValueError(f"plan arguments {args}: only --async or --sync with a replica count")
    built = build_executables(outdir, ["train"], list(objects), [*flags, "-pthread", "-Werror"])
    return built["train"], args
