"""Tensor transport throughput between two processes vs raw TCP loopback, measured in one run.

Two driver processes (tests/c/transport_driver.c, built -O2) exchange float32 tensors of 1 MB
and 64 MB through runtime/src/transport (frames, CRC32C, rendezvous, recv into the caller's
buffer); the same two processes also run a plain C send/recv loop over a loopback socket of
the same sizes. Each trial times REPS messages at the receiver (from the end of the first to
the end of the last); trials of both kinds alternate and the medians are compared.

    python bench/transport_throughput.py [--trials 7] [--sizes-mb 1,64] [--wire f16]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from test_runtime_transport import Cluster, build_driver  # noqa: E402


def _mb_per_s(nbytes: int, reps: int, answer: str) -> float:
    kind, seconds = answer.split()
    assert kind == "seconds", answer
    return nbytes * (reps - 1) / float(seconds) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=7)
    parser.add_argument("--sizes-mb", default="1,64")
    parser.add_argument(
        "--wire", default="f32", choices=["f32", "f16", "bf16"],
        help="the transport's wire dtype (f16/bf16 halve the bytes sent)",
    )  # fmt: skip
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        binary = build_driver(Path(tmp) / "driver", ["-O2"])
        cluster = Cluster(binary, dict(os.environ), Path(tmp))
        try:
            server = cluster.listening()
            client = cluster.listening(args.wire)
            assert client(f"connect 127.0.0.1:{server.port}") == "peer 0"
            answer = server("raw_listen")
            assert answer.startswith("port "), answer
            raw_port = int(answer.split()[1])
            print(f"transport (wire {args.wire}) vs raw TCP loopback, payload MB/s, median of "
                  f"{args.trials} trials; {os.cpu_count()} CPUs")  # fmt: skip
            print(f"{'size':>8} {'transport':>11} {'raw TCP':>11} {'ratio':>7}")
            for size_mb in (float(s) for s in args.sizes_mb.split(",")):
                nbytes = int(size_mb * 2**20) // 4 * 4
                reps = max(4, int(256 * 2**20 // nbytes) + 1)
                transport, raw = [], []
                for _ in range(args.trials):
                    server.post(f"bench_recv {nbytes} {reps}")
                    assert client(f"bench_send 0 {nbytes} {reps}", timeout=120) == "ok"
                    transport.append(_mb_per_s(nbytes, reps, server.answer(timeout=120)))
                    server.post(f"raw_accept {nbytes} {reps}")
                    assert client(f"raw_send 127.0.0.1:{raw_port} {nbytes} {reps}", 120) == "ok"
                    raw.append(_mb_per_s(nbytes, reps, server.answer(timeout=120)))
                t, r = statistics.median(transport), statistics.median(raw)
                print(f"{size_mb:>6g}MB {t:>11.0f} {r:>11.0f} {t / r:>7.2f}")
            problems = cluster.close()
            assert not problems, problems
        finally:
            cluster.kill_all()


if __name__ == "__main__":
    main()
