"""A distributed ps under the attacks of issue 19: its memory (RSS) and threads, measured.

Compiles the digits sample for 1 ps + 2 workers, starts the ps alone on loopback, and from this
process (a local attacker) sends 300 frames of 1 MiB under keys nobody reads, opens 200 idle
connections that complete the handshake, then keeps 20 slowloris connections sending one byte
every 4 s; after each, prints the ps's VmRSS and thread count. The attacker names itself
worker:0 (a name any local process may claim when the cluster has no token); with --token the
ps has one and the attacker does not.

    python bench/transport_attacks.py [--token] [--slow-seconds 60]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "samples"))

from transport_wire import handshake  # noqa: E402

from tfc.aot import compile as tfc_compile  # noqa: E402
from tfc.aot.launch import free_ports  # noqa: E402
from tfc.io.crc32c import crc32c  # noqa: E402

NAME = b"worker:0"


def status(pid: int) -> str:
    text = Path(f"/proc/{pid}/status").read_text()
    rss = int(re.search(r"^VmRSS:\s+(\d+)", text, re.M).group(1))
    threads = int(re.search(r"^Threads:\s+(\d+)", text, re.M).group(1))
    return f"RSS {rss / 1024:7.1f} MB  threads {threads:4d}"


def connect(port: int) -> socket.socket | None:
    """A connection that completed the handshake as worker:0, or None when refused."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        if handshake(s, None, NAME) == (0x41434654, 0):
            return s
    except (OSError, AssertionError):
        pass
    s.close()
    return None


def frame(key: bytes, step: int, payload: bytes) -> bytes:
    head = struct.pack("<IHHqIBBBBQ", 0x46434654, 1, 0, step, len(key), 4, 4, 1, 0, len(payload))
    body = head + struct.pack("<q", len(payload)) + key + payload
    return body + struct.pack("<I", crc32c(body))


def unsolicited_frames(port: int, n: int) -> int:
    """Send `n` frames of 1 MiB under keys nobody reads (reconnecting when closed); how many
    went out whole."""
    mib, sent, s = bytes(1 << 20), 0, None
    for i in range(n):
        if s is None and (s := connect(port)) is None:
            continue
        try:
            s.sendall(frame(f"junk/{i}".encode(), i, mib))
            sent += 1
        except OSError:
            s.close()
            s = None
    if s is not None:
        s.close()
    return sent


def slowloris(port: int, n: int, seconds: float, ps: subprocess.Popen) -> None:
    socks = [s for s in (connect(port) for _ in range(n)) if s is not None]
    data = frame(b"slow", 0, bytes(8))
    start = time.monotonic()
    for k in range(int(seconds // 4) + 1):
        for s in list(socks):
            try:
                s.send(data[k : k + 1])
            except OSError:
                socks.remove(s)
        time.sleep(4)
        for s in list(socks):  # a closed one reads EOF
            s.setblocking(False)
            try:
                if s.recv(1) == b"":
                    socks.remove(s)
            except BlockingIOError:
                pass
            except OSError:
                socks.remove(s)
        print(f"  slowloris after {time.monotonic() - start:4.0f} s: {len(socks):2d} of {n} open"
              f"   {status(ps.pid)}", flush=True)  # fmt: skip
        if not socks:
            break
    for s in socks:
        s.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--token", action="store_true", help="the ps has a cluster token")
    parser.add_argument("--slow-seconds", type=float, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        import digits_model

        rows = Path(tmp) / "digits.npy"
        import numpy as np

        np.save(rows, digits_model.training_rows())
        cluster = Path(tmp) / "cluster.json"
        cluster.write_text(json.dumps({"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"] * 2}))
        model = ROOT / "samples" / "digits_model.py"
        dist = tfc_compile(model, Path(tmp) / "dist", batch=8, target="generic", cluster=cluster)
        ports = free_ports(3)
        env = {**os.environ, "TFC_CLUSTER_TOKEN": "bench-secret"} if args.token else os.environ
        ps = subprocess.Popen(
            [str(dist.outdir / "train"), "--job", "ps", "--task", "0",
             "--ps-hosts", f"127.0.0.1:{ports[0]}",
             "--worker-hosts", f"127.0.0.1:{ports[1]},127.0.0.1:{ports[2]}",
             "--steps", "100000", "--timeout-ms", "5000"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        )  # fmt: skip
        log: list[str] = []
        threading.Thread(target=lambda: log.extend(ps.stdout), daemon=True).start()
        try:
            time.sleep(1.0)
            print(f"ps, {'with' if args.token else 'without'} a cluster token", flush=True)
            print(f"  started                        {status(ps.pid)}", flush=True)
            sent = unsolicited_frames(ports[0], 300)
            time.sleep(1.0)
            print(f"  300 x 1 MiB frames ({sent:3d} whole) {status(ps.pid)}", flush=True)
            idle = [s for s in (connect(ports[0]) for _ in range(200)) if s is not None]
            time.sleep(1.0)
            print(f"  200 idle connections ({len(idle):3d} ok) {status(ps.pid)}", flush=True)
            slowloris(ports[0], 20, args.slow_seconds, ps)
            for s in idle:
                s.close()
            time.sleep(2.0)
            print(f"  at the end                     {status(ps.pid)}", flush=True)
        finally:
            ps.kill()
            ps.wait()
        print("the ps's last log lines:\n" + "".join(log[-4:]), end="")


if __name__ == "__main__":
    main()
