"""`tfc launch OUTDIR --ps 1 --workers 2`: a local cluster of a distributed model on loopback.

Starts every task of OUTDIR/train (tfc compile --cluster) on 127.0.0.1 with free ports,
prefixes each task's output lines with its name, prints the overall progress (global step,
mean of the workers' last losses, examples/s of all workers), restarts a task that dies (up to
--max-restarts times: a ps resumes from its latest checkpoint, a worker asks for the current
values) and stops every task on Ctrl-C, on --timeout, or when training ends. Every child
process is gone when `run` returns.

The tasks share a cluster token (TFC_CLUSTER_TOKEN): the launcher's own when its environment has
one, else a fresh random one. It reaches them through their environment, never their command
line (which every local user can read), so no other process can join the cluster, pose as one
of its tasks or stop one.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

_WORKER_LINE = re.compile(r"step (\d+)\s+loss (\S+)\s+(\d+) examples/s")
_PS_LINE = re.compile(r"global_step (\d+)")


def free_ports(n: int) -> list[int]:
    """`n` distinct ports that were free a moment ago (bound to port 0, then released)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


@dataclass
class Task:
    job: str
    index: int
    proc: subprocess.Popen | None = None
    restarts: int = 0
    finished: bool = False  # exited 0
    reader: threading.Thread | None = None

    @property
    def name(self) -> str:
        return f"{self.job}:{self.index}"


@dataclass
class Launcher:
    outdir: Path
    ps: int = 1
    workers: int = 2
    train_args: list[str] = field(default_factory=list)  # --data, --steps, --sync, ...
    max_restarts: int = 3
    timeout: float | None = None
    out: TextIO = sys.stdout
    progress_every: float = 2.0

    def __post_init__(self) -> None:
        self.outdir = Path(self.outdir)
        exe = self.outdir / "train"
        if not exe.exists():
            raise FileNotFoundError(f"{exe} does not exist: compile with tfc compile --cluster")
        ports = free_ports(self.ps + self.workers)
        self.ps_hosts = [f"127.0.0.1:{p}" for p in ports[: self.ps]]
        self.worker_hosts = [f"127.0.0.1:{p}" for p in ports[self.ps :]]
        self.tasks = [Task("ps", i) for i in range(self.ps)] + [
            Task("worker", i) for i in range(self.workers)
        ]
        self.token = os.environ.get("TFC_CLUSTER_TOKEN") or secrets.token_hex(32)
        self.global_step = 0
        self.losses: dict[int, float] = {}
        self.rates: dict[int, float] = {}
        self.lines: list[str] = []  # every prefixed line, for tests and post-mortems
        self._lock = threading.Lock()
        self._stopping = False

    # -- processes -------------------------------------------------------------------------------
    def _command(self, task: Task) -> list[str]:
        return [
            str(self.outdir / "train"),
            "--job", task.job, "--task", str(task.index),
            "--ps-hosts", ",".join(self.ps_hosts),
            "--worker-hosts", ",".join(self.worker_hosts),
            *self.train_args,
        ]  # fmt: skip

    def start(self, task: Task) -> None:
        env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
        env["TFC_CLUSTER_TOKEN"] = self.token
        task.proc = subprocess.Popen(
            self._command(task),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            bufsize=1,
            env=env,
            start_new_session=True,  # Ctrl-C reaches the launcher only; it stops the tasks
        )
        task.reader = threading.Thread(target=self._read, args=(task, task.proc), daemon=True)
        task.reader.start()
        self._say(f"[launch] started {task.name} (pid {task.proc.pid})")

    def _read(self, task: Task, proc: subprocess.Popen) -> None:
        for line in proc.stdout:
            line = line.rstrip("\n")
            with self._lock:
                if task.job == "worker" and (m := _WORKER_LINE.search(line)):
                    self.losses[task.index] = float(m.group(2))
                    self.rates[task.index] = float(m.group(3))
                elif task.job == "ps" and (m := _PS_LINE.search(line)):
                    self.global_step = max(self.global_step, int(m.group(1)))
            self._say(f"[{task.name}] {line}")

    def _say(self, line: str) -> None:
        with self._lock:
            self.lines.append(line)
            print(line, file=self.out, flush=True)

    def kill(self, task: Task, sig: int = signal.SIGKILL) -> None:
        """Send `sig` to a task (tests kill tasks to check recovery)."""
        if task.proc is not None and task.proc.poll() is None:
            os.killpg(task.proc.pid, sig)

    def stop_all(self, grace: float = 5.0) -> None:
        """SIGTERM every running task, SIGKILL what is left after `grace` seconds, reap all."""
        self._stopping = True
        running = [t for t in self.tasks if t.proc is not None and t.proc.poll() is None]
        for t in running:
            self.kill(t, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for t in running:
            try:
                t.proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.kill(t, signal.SIGKILL)
                t.proc.wait()
        for t in self.tasks:
            if t.reader is not None:
                t.reader.join(timeout=2.0)

    # -- the run ---------------------------------------------------------------------------------
    def run(self) -> int:
        """Run the cluster to the end; 0 when every task finished, else a failure status."""
        start = time.monotonic()
        status = 1
        try:
            for task in self.tasks:
                self.start(task)
            last_progress = start
            while True:
                for task in self.tasks:
                    if task.finished or task.proc is None:
                        continue
                    rc = task.proc.poll()
                    if rc is None:
                        continue
                    if rc == 0:
                        task.finished = True
                        self._say(f"[launch] {task.name} finished")
                    elif task.restarts < self.max_restarts:
                        task.restarts += 1
                        self._say(
                            f"[launch] {task.name} exited with status {rc}; restarting it "
                            f"({task.restarts} of {self.max_restarts})"
                        )
                        self.start(task)
                    else:
                        self._say(f"[launch] {task.name} failed (status {rc}); stopping")
                        return rc if rc > 0 else 128 - rc
                if all(t.finished for t in self.tasks):
                    self._progress(start)
                    self._say("[launch] training finished")
                    status = 0
                    return 0
                now = time.monotonic()
                if self.timeout is not None and now - start > self.timeout:
                    self._say(f"[launch] timeout after {self.timeout:g} s; stopping")
                    return 124
                if now - last_progress >= self.progress_every:
                    self._progress(start)
                    last_progress = now
                time.sleep(0.05)
        except KeyboardInterrupt:
            self._say("[launch] interrupted; stopping every task")
            status = 130
            return status
        finally:
            self.stop_all()

    def _progress(self, start: float) -> None:
        with self._lock:
            losses = list(self.losses.values())
            rate = sum(self.rates.values())
            step = self.global_step
        loss = f"{sum(losses) / len(losses):.4g}" if losses else "-"
        self._say(
            f"[launch] global_step {step}  loss {loss}  {rate:.0f} examples/s  "
            f"({time.monotonic() - start:.0f} s)"
        )


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="tfc launch",
        description="Run a distributed model (tfc compile --cluster) as a local cluster on "
        "loopback. Arguments after the options go to every task's `train` (--data, --steps, "
        "--checkpoint-dir, ...).",
    )
    parser.add_argument("outdir", help="the directory tfc compile --cluster wrote")
    parser.add_argument("--ps", type=int, default=1, help="ps tasks (default 1)")
    parser.add_argument("--workers", type=int, default=2, help="worker tasks (default 2)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--sync", action="store_true", help="synchronous training (default)")
    mode.add_argument("--async", dest="async_", action="store_true", help="asynchronous")
    parser.add_argument("--max-restarts", type=int, default=3, help="per task (default 3)")
    parser.add_argument("--timeout", type=float, help="stop everything after this many seconds")
    args, rest = parser.parse_known_args(argv)
    if rest and rest[0] == "--":
        rest = rest[1:]
    train_args = ["--async" if args.async_ else "--sync", *rest]
    try:
        launcher = Launcher(
            Path(args.outdir), args.ps, args.workers, train_args, args.max_restarts, args.timeout
        )
    except FileNotFoundError as e:
        print(f"tfc launch: error: {e}", file=sys.stderr)
        return 1
    return launcher.run()
