"""TF1 cluster scripts on the compiled cluster runtime: a worker's Session on a cluster
target, and a ps task's Server.join().

The whitepaper's master/worker split, ahead of time. A worker's first train step compiles the
step it runs (the graph placed by the script's tf.device / replica_device_setter, cut by task
as `tfc compile --cluster` cuts it: tfc/aot/distributed.py) into the cluster's `train`
executable, sends the sources to every ps task, and starts its own task of that executable as a
child fed through pipes (`train --feed-fd/--result-fd`): each Session.run writes the step's
feed_dict values and reads back {global step, loss}. A ps task's join() listens on its address
for the plan of every worker, builds it, and runs its task until every worker has closed its
session (tfc/aot/cluster_plan.py). Tensors
between the tasks travel over the C transport, as for `tfc launch`. docs/distributed.md ("TF1
cluster scripts") says what is supported.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import shutil
import struct
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from tfc.aot.build import TARGET_FLAGS
from tfc.aot.cluster_plan import (
    GIVE_UP_MS,
    UNBOUNDED_STEPS,
    cluster_file,
    deliver_plan,
    serve_ps,
)
from tfc.aot.dist_sources import dist_objects, dist_sources, write_distributed
from tfc.aot.distributed import Cluster, plan_distributed
from tfc.aot.signatures import ModelError, ModelSignatures, TrainSignature, c_identifier
from tfc.backend.cc import cache_dir
from tfc.client.config import compile_options
from tfc.client.request import convert_feeds, flatten_fetches
from tfc.client.targets import register_cluster_runtime
from tfc.ir import errors
from tfc.ir.graph import Graph, GraphKeys, Operation, Tensor
from tfc.train.cluster_spec import ClusterSpec, ServerDef
from tfc.train.optimizer import train_loss
from tfc.train.sync_replicas_optimizer import sync_replicas_of
from tfc.train.training_util import get_global_step
from tfc.version import __version__

__all__ = ["ClusterSession"]

STEP_WAIT_S = 300.0  # a worker waits this long for a step unless RunOptions/ConfigProto say


def _unimplemented(message: str) -> errors.UnimplementedError:
    return errors.UnimplementedError(None, None, message)


def _ancestors(op: Operation) -> set[Operation]:
    seen: set[Operation] = set()
    stack = [op]
    while stack:
        o = stack.pop()
        if o in seen:
            continue
        seen.add(o)
        stack += [t.op for t in o.inputs] + list(o.control_inputs)
    return seen


def _is_global_step(tensor: Tensor, step: Any) -> bool:
    if step is None:
        return False
    name = step.op.name
    return tensor.op.name == name or (
        tensor.op.type in ("Identity", "ReadVariableOp")
        and bool(tensor.op.inputs)
        and tensor.op.inputs[0].op.name == name
    )


class _Step:
    """The compiled step of one worker: its child `train` task and the pipes feeding it."""

    def __init__(self, proc: subprocess.Popen, feed_fd: int, result_fd: int, log: Path) -> None:
        self.proc, self.feed_fd, self.result_fd, self.log = proc, feed_fd, result_fd, log

    def log_tail(self) -> str:
        with contextlib.suppress(OSError):
            return self.log.read_text(errors="replace")[-2000:]
        return ""

    def _send(self, payload: bytes) -> None:
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(self.feed_fd, view) :]
        except OSError:
            raise self._died() from None

    def _read(self, n: int, timeout_s: float) -> bytes:
        data = b""
        deadline = time.monotonic() + timeout_s
        while len(data) < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.result_fd], [], [], left)[0]:
                raise errors.DeadlineExceededError(
                    None, None, f"no answer from this worker's task for {timeout_s:.0f} s "
                    f"(a ps task that does not serve it?): {self.log_tail()}",
                )  # fmt: skip
            chunk = os.read(self.result_fd, min(n - len(data), 1 << 20))
            if not chunk:
                raise self._died()
            data += chunk
        return data

    def run(self, payload: bytes, timeout_s: float) -> tuple[int, float]:
        """One step on `payload` (the fed inputs): (its global step, its loss), or step -1
        when the ps tasks have stopped."""
        self._send(b"S" + payload)
        step, loss = struct.unpack("<qd", self._read(16, timeout_s))
        return step, loss

    def values(self, nbytes: int, timeout_s: float) -> bytes | None:
        """The values the ps tasks send this worker for its next step (after every update so
        far, in a synchronous cluster); None when the ps tasks have stopped."""
        self._send(b"V")
        status = struct.unpack("<qd", self._read(16, timeout_s))[0]
        return None if status < 0 else self._read(nbytes, timeout_s)

    def _died(self) -> errors.OpError:
        # not UnavailableError: a MonitoredSession would make a new session, whose plan no
        # running ps task takes (a lost task of a TF1 cluster script is not recovered)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        return errors.InternalError(
            None, None, f"this worker's task exited (status {self.proc.returncode}): "
            f"{self.log_tail()}",
        )  # fmt: skip

    def close(self) -> None:
        # the end of the feed tells the task to say it is done to the ps tasks and exit
        with contextlib.suppress(OSError):
            os.close(self.feed_fd)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        with contextlib.suppress(OSError):
            os.close(self.result_fd)


class ClusterSession:
    """A worker task's tf.Session on a cluster target: runs the script's train op as one step of
    the compiled cluster (see the module docstring) with the feed_dict values as its inputs.

    A run may fetch, with the train op (made by Optimizer.minimize or SyncReplicasOptimizer),
    its loss and the global step; without it, the global step (the step after this worker's
    last one) and initializer ops (no-ops: the ps tasks initialize their variables). Anything
    else raises UnimplementedError naming it.
    """

    def __init__(self, server_def: ServerDef, graph: Graph, config: Any = None) -> None:
        if server_def.job_name != "worker":
            raise _unimplemented(
                f"a Session on the target of /job:{server_def.job_name}/task:"
                f"{server_def.task_index}: in a tfc cluster only worker tasks run steps; a ps "
                "task calls server.join()"
            )
        try:
            self._cluster = Cluster.from_cluster_spec(ClusterSpec(server_def.cluster))
        except ModelError as e:
            raise _unimplemented(str(e)) from None
        self.graph = graph
        self.config = config
        self._task = server_def.task_index
        self._lock = threading.Lock()
        self._step: _Step | None = None
        self._compiled_for: tuple | None = None
        self._feed_order: list[Tensor] = []
        self._feed_specs: list[tuple[np.dtype, tuple[int, ...]]] = []
        self._global_step = 0
        # variable -> (offset, dtype, shape) in the values the ps tasks send this worker
        self._received_at: dict[str, tuple[int, np.dtype, tuple[int, ...]]] = {}
        self._received_bytes = 0
        self._stopped = False
        self._closed = False
        self._dir = Path(tempfile.mkdtemp(prefix=f"tfc-worker{self._task}-"))

    # -- running ---------------------------------------------------------------------------------
    def run(
        self, fetches: Any, feed_dict: Any = None, options: Any = None, run_metadata: Any = None
    ) -> Any:
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        leaves, rebuild = flatten_fetches(fetches)
        elements = []
        for leaf in leaves:
            try:
                elements.append(self.graph.as_graph_element(leaf))
            except (KeyError, TypeError, ValueError) as e:
                raise TypeError(f"Fetch argument {leaf!r} cannot be interpreted: {e}") from None
        train_ops = set(self.graph.get_collection(GraphKeys.TRAIN_OP))
        steps = [e for e in elements if isinstance(e, Operation) and e in train_ops]
        with self._lock:
            if len(set(steps)) > 1:
                raise _unimplemented(
                    f"one run fetches the train ops {sorted({s.name for s in steps})}: a "
                    "cluster worker runs one train op per step"
                )
            result = None
            if steps:
                result = self._run_step(steps[0], feed_dict, options)
            received: dict[str, np.ndarray] = {}
            values = [self._value(e, result, received, options) for e in elements]
        return rebuild(values)

    def _value(
        self,
        element: Any,
        result: tuple[Operation, int, float] | None,
        received: dict[str, np.ndarray],
        options: Any = None,
    ) -> Any:
        step_var = get_global_step(self.graph)
        if isinstance(element, Operation):
            if result is not None and element is result[0]:
                return None
            if self._is_initialization(element):
                return None
            raise _unimplemented(
                f"running op '{element.name}' ({element.type}) on a cluster target: a tfc "
                "cluster worker runs its train op and initializers (the ps tasks run their "
                "variables' updates and initialization themselves)"
            )
        if _is_global_step(element, step_var):
            value = result[1] if result is not None else self._global_step
            return np.asarray(value, element.dtype.np)[()]
        if result is not None and element is train_loss(result[0]):
            return np.asarray(result[2], element.dtype.np)[()]
        name = self._variable_of(element)
        if name is not None and (self._step is None or name in self._received_at):
            if not received:
                received.update(self._received_values(options))
            return received[name]
        raise _unimplemented(
            f"fetching '{element.name}' on a cluster target: a tfc cluster worker's run "
            "returns its train op's loss, the global step and the values of the variables the "
            "ps tasks send it (the other values live in the compiled tasks)"
        )

    def _variable_of(self, tensor: Tensor) -> str | None:
        """The variable `tensor` reads (its value or an Identity of it), else None."""
        names = {v.op.name for v in self.graph.get_collection(GraphKeys.GLOBAL_VARIABLES)}
        op = tensor.op
        if op.type == "Identity" and op.inputs and op.inputs[0].op.name in names:
            op = op.inputs[0].op
        return op.name if op.name in names else None

    def _received_values(self, options: Any = None) -> dict[str, np.ndarray]:
        """The variables the ps tasks send this worker, after every update so far."""
        if self._step is None:
            raise errors.FailedPreconditionError(
                None, None, "the variables live on the ps tasks: a cluster worker reads them "
                "after its first train step",
            )  # fmt: skip
        data = self._step.values(self._received_bytes, _timeout_s(options, self.config))
        if data is None:
            self._stopped = True
            raise errors.OutOfRangeError(None, None, "the ps tasks ended the training")
        return {
            name: np.frombuffer(data, dt, int(np.prod(shape)), offset).reshape(shape).copy()
            for name, (offset, dt, shape) in self._received_at.items()
        }

    def read_variable(self, name: str) -> np.ndarray:
        """The value of variable `name` (tf.train.Saver.save reads them so): the global
        step, or a variable the ps tasks send this worker."""
        step_var = get_global_step(self.graph)
        if step_var is not None and name == step_var.op.name:
            return np.asarray(self._global_step, step_var.dtype.base_dtype.np)
        if self._step is not None and name not in self._received_at:
            raise _unimplemented(
                f"reading variable '{name}' on a cluster target: only the variables the ps "
                "tasks send the workers are known there (not optimizer slots): the ps "
                "tasks hold the rest"
            )
        return self._received_values()[name]

    def _is_initialization(self, op: Operation) -> bool:
        """Whether running `op` only initializes variables (an init_op, local_init_op or
        get_init_tokens_op): a no-op here, as the ps tasks initialize their variables."""
        variables = self.graph.get_collection(GraphKeys.GLOBAL_VARIABLES)
        variables += self.graph.get_collection(GraphKeys.LOCAL_VARIABLES)
        init: set[Operation] = set()
        for v in variables:
            init |= _ancestors(v.initializer)
        return all(o in init or o.type == "NoOp" for o in _ancestors(op))

    def initialized_variables(self) -> set[str]:
        """Every variable: the ps tasks initialize (or restore) them before the first step."""
        variables = self.graph.get_collection(GraphKeys.GLOBAL_VARIABLES)
        variables += self.graph.get_collection(GraphKeys.LOCAL_VARIABLES)
        return {v.op.name for v in variables}

    def _run_step(
        self, op: Operation, feed_dict: Any, options: Any
    ) -> tuple[Operation, int, float]:
        if self._stopped:
            raise errors.OutOfRangeError(None, None, "the ps tasks ended the training")
        tensors, arrays = convert_feeds(self.graph, feed_dict)
        if self._step is None:
            self._compile(op, tensors, arrays)
        elif self._compiled_for != (op, frozenset(tensors)):
            raise _unimplemented(
                f"this worker's first step ran {self._compiled_for[0].name} fed "
                f"{sorted(t.name for t in self._compiled_for[1])}; a cluster worker compiles "
                "one step: every run must fetch the same train op and feed the same tensors"
            )
        by_tensor = dict(zip(tensors, arrays))
        parts = []
        for t, (dtype, shape) in zip(self._feed_order, self._feed_specs):
            value = np.ascontiguousarray(by_tensor[t], dtype=dtype)
            if value.shape != shape:
                raise errors.InvalidArgumentError(
                    None, None, f"the value fed for {t.name} has shape {value.shape}; this "
                    f"worker's step is compiled for {shape} (its first step's)",
                )  # fmt: skip
            parts.append(value.tobytes())
        timeout = _timeout_s(options, self.config)
        step, loss = self._step.run(b"".join(parts), timeout)
        if step < 0:
            self._stopped = True
            raise errors.OutOfRangeError(None, None, "the ps tasks ended the training")
        self._global_step = step + 1
        return op, step, loss

    # -- compiling and starting this worker's task -----------------------------------------------
    def _compile(self, op: Operation, tensors: list[Tensor], arrays: list[np.ndarray]) -> None:
        loss = train_loss(op)
        if loss is None:
            raise _unimplemented(
                f"the train op {op.name} was not made by Optimizer.minimize(loss) (nor "
                "SyncReplicasOptimizer.minimize): a cluster worker needs the loss it minimizes"
            )
        order = {o: i for i, o in enumerate(self.graph.get_operations())}
        fed = sorted(zip(tensors, arrays), key=lambda ta: order[ta[0].op])
        batched = [(t, a) for t, a in fed if a.ndim > 0]
        scalars = [(t, a) for t, a in fed if a.ndim == 0]
        if not batched or len(batched) > 2:
            raise _unimplemented(
                f"a cluster worker's step is fed {[t.name for t, _ in batched]}: tfc's "
                "compiled workers take one or two batched inputs (features, labels) and "
                "scalar hyperparameters"
            )
        batch = batched[0][1].shape[0]
        for t, a in batched:
            if a.shape[0] != batch:
                raise errors.InvalidArgumentError(
                    None, None, f"the values fed for {batched[0][0].name} and {t.name} have "
                    f"batch sizes {batch} and {a.shape[0]}",
                )  # fmt: skip
        hyper = {c_identifier(f"h{i}_{t.op.name}"): t for i, (t, _) in enumerate(scalars)}
        train = TrainSignature(
            batched[0][0], batched[1][0] if len(batched) > 1 else None, loss, op, hyper,
            dict.fromkeys(hyper, 0.0),
        )  # fmt: skip
        _check_no_queues(op, loss)
        sigs = ModelSignatures("tf1_cluster", self.graph, train, None)
        passes = compile_options(self.config).pipeline()
        try:
            plan = plan_distributed(sigs, batch, self._cluster, passes, worker_task=self._task)
        except ModelError as e:
            raise errors.InvalidArgumentError(
                None, None, f"the train step {op.name} cannot run on this cluster: {e}"
            ) from None
        sync = sync_replicas_of(op)
        if sync is not None and sync.total_num_replicas != len(self._cluster.worker):
            raise errors.InvalidArgumentError(
                None, None, f"SyncReplicasOptimizer(total_num_replicas="
                f"{sync.total_num_replicas}) but the cluster has {len(self._cluster.worker)} "
                "workers: tfc runs one replica per worker task",
            )  # fmt: skip
        target = os.environ.get("TFC_CLUSTER_TARGET", "host")
        if target not in ("host", "generic"):
            raise ValueError(f"TFC_CLUSTER_TARGET={target!r}: host or generic")
        flags = list(TARGET_FLAGS[target])
        # the workers of one machine build the same objects: one builds, the others take them
        # from the build cache
        with open(cache_dir() / "cluster-build.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            built = write_distributed(plan, self._dir / "build", flags)
        args = ["--async"]
        if sync is not None:
            args = ["--sync", "--replicas-to-aggregate", str(sync.replicas_to_aggregate)]
        manifest = {
            "version": __version__,
            "files": dist_sources(plan),
            "objects": dist_objects(plan),
            "cflags": flags,
            "args": args,
        }
        payload = json.dumps(manifest, sort_keys=True).encode()
        for k, address in enumerate(self._cluster.ps):
            deliver_plan(address, k, self._task, payload)
        offset = 0
        worker = plan.worker.programs["train"]
        for name, feed in zip(worker.input_names, worker.lowered.feeds):
            if name.startswith("recv:"):
                dtype = np.dtype(feed.dtype.np)
                var = self._variable_of(self.graph.get_tensor_by_name(name.rpartition(";")[2]))
                if var is not None:
                    self._received_at[var] = (offset, dtype, tuple(feed.shape))
                offset += int(np.prod(feed.shape, dtype=np.int64)) * dtype.itemsize
        self._received_bytes = offset
        self._feed_order = [t for t, _ in batched] + [t for t, _ in scalars]
        self._feed_specs = [(t.dtype.np, a.shape) for t, a in batched + scalars]
        self._compiled_for = (op, frozenset(tensors))
        self._step = _start_worker(built.outdir / "train", self._dir, self._cluster, self._task,
                                   args)  # fmt: skip

    # -- lifetime --------------------------------------------------------------------------------
    def close(self) -> None:
        """End this worker's task: it tells the ps tasks it is done (they stop once every
        worker is)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._step is not None:
                self._step.close()
            shutil.rmtree(self._dir, ignore_errors=True)

    @property
    def closed(self) -> bool:
        return self._closed

    def as_default(self) -> Any:
        return contextlib.nullcontext(self)

    def __enter__(self) -> ClusterSession:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - interpreter shutdown order varies
        with contextlib.suppress(Exception):
            self.close()


def _check_no_queues(op: Operation, loss: Tensor) -> None:
    """The compiled tasks share no queue: a step that uses one is refused, naming the queue op,
    the queue and their devices."""
    for o in sorted(_ancestors(op) | _ancestors(loss.op), key=lambda o: o.name):
        if "Queue" in o.type:
            spec = o.graph.node(o.name)["attrs"].get("queue")  # queue ops name theirs
            queue = o.graph.get_operation_by_name(spec["op"]) if isinstance(spec, dict) else o
            raise errors.InvalidArgumentError(
                None, None, f"the train step uses queue op '{o.name}' ({o.type}, on "
                f"'{o.device or 'the worker'}') of queue '{queue.name}' (on "
                f"'{queue.device or 'the worker'}'): the tasks of a compiled cluster share no "
                "queues; feed each worker's batch with feed_dict",
            )  # fmt: skip


def _timeout_s(options: Any, config: Any) -> float:
    for source, field in ((options, "timeout_in_ms"), (config, "operation_timeout_in_ms")):
        ms = getattr(source, field, 0) or 0
        if ms > 0:
            return ms / 1000
    return STEP_WAIT_S


def _start_worker(train: Path, where: Path, cluster: Cluster, task: int, args: list) -> _Step:
    feed_r, feed_w = os.pipe()
    result_r, result_w = os.pipe()
    log = where / "worker.log"
    cmd = [
        str(train), "--job", "worker", "--task", str(task),
        "--cluster", str(cluster_file(cluster, where)), "--steps", str(UNBOUNDED_STEPS),
        "--feed-fd", str(feed_r), "--result-fd", str(result_w), "--log-every", "0",
        "--give-up-ms", str(GIVE_UP_MS), *args,
    ]  # fmt: skip
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, pass_fds=(feed_r, result_w), stdout=out, stderr=out)
    os.close(feed_r)
    os.close(result_w)
    return _Step(proc, feed_w, result_r, log)


class _ClusterRuntime:
    """What tfc.client.targets calls for sessions on, and join() of, a cluster task."""

    def session(self, server_def: ServerDef, graph: Graph, config: Any) -> ClusterSession:
        return ClusterSession(server_def, graph, config)

    def join(self, server_def: ServerDef) -> None:
        serve_ps(server_def)


register_cluster_runtime(_ClusterRuntime())
