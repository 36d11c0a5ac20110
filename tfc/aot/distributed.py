"""Distributed programs: the train step placed, cut by task, and compiled once per task role.

The model's graph is built inside `replica_device_setter(ps_tasks=N)` (so variables without
a device go round-robin to the ps tasks and the rest to the worker; explicit tf.device scopes
win), the train step is placed and partitioned (tfc/passes/place.py, partition.py), and each
partition becomes programs in which every _Recv is an input and every _Send an output:

- the worker step (the worker partition): inputs features, labels, hyperparameters, then the
  values received from the ps tasks; outputs the loss, then the tensors sent to the ps tasks
  (the gradients). Every worker runs it on its own slice of the global batch (data parallel).
- per ps task: `init` (its variables' initializers), `serve` (outputs: the values it sends
  to the workers; it may not depend on what it receives in the same step) and `apply`
  (inputs: what the workers send, averaged over the replicas of a synchronous step).

A worker that computes on a GPU (`tfc compile --cluster --target cuda`, or worker ops placed on
/job:worker/device:GPU:0 by the model) runs the same worker step compiled as CUDA: its C entry
point takes the host buffers the transport fills and copies them in and out; the ps tasks stay
C, parameters and their updates on the ps CPU, as in TF1's typical setup. The worker step is one
program on one device: with a GPU, its ops placed on the worker's CPU run on the GPU too.

Control edges between tasks need no messages: the driver (runtime/src/tfc_dist_main.c) runs a
step's serve, the workers' steps and apply in that order. The link tables say which program
input or output each rendezvous key is.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import networkx as nx

from tfc.aot.programs import Program, StateEntry, layout_state, signature_graph, train_feeds
from tfc.aot.signatures import ModelError, ModelSignatures
from tfc.codegen.targets import CUDA, C, Target
from tfc.compiler import (
    PIPELINE,
    Pass,
    compile_program,
    partition_by_device,
    place_on_cluster,
    task_pipeline,
)
from tfc.ir.device import DeviceSpec
from tfc.ir.graph import GraphKeys
from tfc.ir.program import FeedSpec, make_program_graph
from tfc.passes.nested import map_subgraphs
from tfc.passes.place import PlacementError
from tfc.train.cluster_spec import ClusterSpec
from tfc.train.training_util import get_global_step
from tfc.variables import variables_initializer

WORKER = "/job:worker/replica:0/task:0/device:CPU:0"
WORKER_GPU = "/job:worker/replica:0/task:0/device:GPU:0"


@dataclass
class Cluster:
    """Addresses ("host:port") of the ps and worker tasks, in task order."""

    ps: list[str]
    worker: list[str]

    @classmethod
    def from_json(cls, text: str, where: str = "cluster") -> Cluster:
        """A ClusterSpec dict {"ps": [...], "worker": [...]} or a TF_CONFIG-style
        {"cluster": {...}, "task": {...}}."""
        try:
            spec = json.loads(text)
        except json.JSONDecodeError as e:
            raise ModelError(f"{where}: not JSON: {e}") from None
        return cls.from_dict(spec, where)

    @classmethod
    def from_cluster_spec(cls, spec: ClusterSpec) -> Cluster:
        """A tf.train.ClusterSpec's ps and worker jobs (each task index from 0 on)."""
        return cls.from_dict(spec.as_dict(), "ClusterSpec")

    @classmethod
    def from_dict(cls, spec: object, where: str = "cluster") -> Cluster:
        """The JSON value of a cluster file: see from_json."""
        if isinstance(spec, dict) and "cluster" in spec:
            spec = spec["cluster"]
        if not isinstance(spec, dict):
            raise ModelError(f'{where}: expected {{"ps": [...], "worker": [...]}}')
        jobs = {}
        for job in ("ps", "worker"):
            hosts = spec.get(job)
            if (
                not isinstance(hosts, list)
                or not hosts
                or not all(isinstance(h, str) and h.rpartition(":")[2].isdigit() for h in hosts)
            ):
                raise ModelError(
                    f'{where}: "{job}" must be a non-empty list of "host:port" strings, '
                    f"got {hosts!r}"
                )
            jobs[job] = hosts
        unknown = set(spec) - {"ps", "worker", "chief"}
        if unknown:
            raise ModelError(f"{where}: unknown job(s) {sorted(unknown)}; tfc runs ps and worker")
        return cls(jobs["ps"], jobs["worker"])

    @classmethod
    def load(cls, path: str | os.PathLike) -> Cluster:
        return cls.from_json(Path(path).read_text(), str(path))


@dataclass(frozen=True)
class Link:
    """One rendezvous key: output `src_index` of task `src` (a ps task's serve program, or
    the worker step when src is -1) is input `dst_index` of task `dst` (the worker step when
    dst is -1, else that ps task's apply program)."""

    key: str
    src: int
    src_index: int
    dst: int
    dst_index: int


@dataclass
class TaskPlan:
    """The programs and state of one task role (the worker, or one ps task)."""

    name: str  # C name of its tfc_model
    programs: dict[str, Program]  # worker: "train"; ps: "init", "apply", "serve"
    state: list[StateEntry] = field(default_factory=list)
    global_step: int = -1


@dataclass
class DistributedPlan:
    name: str
    batch: int  # per worker
    cluster: Cluster
    worker: TaskPlan
    ps: list[TaskPlan]
    links: list[Link]  # every tensor that crosses tasks in one step
    global_step_ps: int  # the ps task that holds the global step, -1: none
    signatures: ModelSignatures
    hyperparameters: dict[str, tuple[int, float]]  # name -> (worker input, default)
    worker_on_gpu: bool = False  # the worker step is CUDA (program_worker.cu)

    @property
    def programs(self) -> dict[str, Program]:
        """Every program by its file's role: worker, ps0_init, ps0_serve, ps0_apply, ..."""
        tasks = [self.worker, *self.ps]
        return {p.role: p for t in tasks for p in t.programs.values()}


def _ps_task(device: str, n_ps: int) -> int:
    spec = DeviceSpec.from_string(device)
    if spec.job == "ps":
        if spec.device_type != "CPU":
            raise ModelError(f"ps tasks run on CPU; an op is placed on {device}")
        return spec.task
    if device != WORKER:
        raise ModelError(
            f"an op is placed on {device}: compiled data-parallel training runs the model on "
            "/job:worker/task:0, its CPU:0 or GPU:0 (every worker runs a replica of it) and "
            "variables on /job:ps"
        )
    return -1


def _compile(graph, name: str, role: str, passes, target: Target = C) -> Program:
    compiled = compile_program(
        graph, passes, target, name=f"{name}:{role}", prefix=f"{name}_{role}_"
    )
    return Program(role, compiled.lowered, compiled.source, [], [], suffix=target.source_suffix)


def _compile_part(
    graph, name: str, role: str, fetches, targets, passes, target: Target = C
) -> Program:
    graph.graph_attrs["fetches"] = list(fetches)
    graph.graph_attrs["targets"] = list(targets)
    graph.graph_attrs["feeds_cut"] = True
    return _compile(graph, name, role, task_pipeline(passes), target)


def _move_worker_to_gpu(graph, gpu: bool) -> bool:
    """Whether the worker step runs on the GPU (`gpu`, or an op placed on the worker's GPU:0);
    if so, every op of the worker task moves to WORKER, the one device of its one program, so
    that no Send/Recv pair cuts the step between its CPU and GPU. Other worker devices are left
    for _ps_task to refuse."""
    on_worker = [n for n in graph.nx.nodes if graph.node(n)["device"] in (WORKER, WORKER_GPU)]
    gpu = gpu or any(graph.node(n)["device"] == WORKER_GPU for n in on_worker)
    if gpu:
        for n in on_worker:
            graph.node(n)["device"] = WORKER
    return gpu


def _worker_task_as_task0(graph, task: int) -> None:
    """Ops asking for /job:worker/task:`task` (nested loop and branch bodies too, which are
    copied first: they may be the model graph's) ask for task 0."""
    for n in graph.nx.nodes:
        node = graph.node(n)
        spec = DeviceSpec.from_string(node["device"] or "")
        if spec.job == "worker" and spec.task == task:
            node["device"] = DeviceSpec(**{**spec.__dict__, "task": 0}).to_string()

    def rewrite(inner, _node, _key):
        _worker_task_as_task0(inner, task)
        return inner

    map_subgraphs(graph, rewrite)


def _recv_to_feed(graph, node: str, feeds: list) -> None:
    attrs = graph.node(node)["attrs"]
    graph.node(node).update(
        op="Feed",
        attrs={"index": len(feeds), "dtype": attrs["dtype"], "shape": tuple(attrs["shape"])},
    )
    feeds.append(FeedSpec((node, 0), attrs["dtype"], tuple(attrs["shape"])))


def plan_distributed(
    sigs: ModelSignatures,
    batch: int,
    cluster: Cluster,
    passes: list[Pass] = PIPELINE,
    worker_gpu: bool = False,
    worker_task: int = 0,
) -> DistributedPlan:
    """Place and partition the train step of `sigs` and compile each task role's programs;
    the worker step as CUDA with `worker_gpu` or when the model places worker ops on a GPU.
    Ops placed on /job:worker/task:`worker_task` are the worker step's (a TF1 script builds
    its graph on its own task: every worker compiles the same step as task 0)."""
    if sigs.train is None:
        raise ModelError("distributed training needs a train signature")
    tr, graph, name, n_ps = sigs.train, sigs.graph, sigs.name, len(cluster.ps)
    feeds, input_names = train_feeds(tr, batch)
    program = signature_graph(sigs, [tr.loss], [tr.train_op], feeds)
    program.graph_attrs.update(
        default_device=WORKER, cluster={"ps": n_ps, "worker": len(cluster.worker)}
    )
    if worker_task:
        _worker_task_as_task0(program, worker_task)
    try:
        program = place_on_cluster(program)
        worker_gpu = _move_worker_to_gpu(program, worker_gpu)
        program, parts = partition_by_device(program)
    except PlacementError as e:
        raise ModelError(str(e)) from None
    for device, part in parts.items():
        try:
            _ps_task(device, n_ps)
        except ModelError as e:
            first = min(part.nx.nodes, key=lambda n: part.node(n)["id"])
            raise ModelError(f"{e} (op '{first}')") from None
    if WORKER not in parts:
        raise ModelError("no op of the train step runs on the worker: nothing to replicate")
    for spec in feeds:
        if program.node(spec.tensor[0])["device"] != WORKER:
            raise ModelError(f"the fed tensor {spec.tensor[0]} must be on the worker")

    # the worker step: receives are inputs after the feeds, sends are outputs after the loss
    wg = parts[WORKER]
    wfeeds = list(feeds)
    wfetches = [(tr.loss.op.name, tr.loss.value_index)]
    inputs_at: dict[str, tuple[int, int]] = {}  # key -> (task, input index); worker: -1
    outputs_at: dict[str, tuple[int, int]] = {}  # key -> (task, output index)
    for node in sorted(wg.nx.nodes, key=lambda n: wg.node(n)["id"]):
        op, attrs = wg.node(node)["op"], wg.node(node)["attrs"]
        if op == "_Recv":
            if attrs["key"].rpartition(";")[2].startswith("^"):
                wg.remove_node(node)
                continue
            inputs_at[attrs["key"]] = (-1, len(wfeeds))
            _recv_to_feed(wg, node, wfeeds)
        elif op == "_Send":
            inputs = wg.input_edges(node)
            if inputs:
                outputs_at[attrs["key"]] = (-1, len(wfetches))
                wfetches.append(inputs[0])
            wg.remove_node(node)
    wg.graph_attrs["feeds"] = wfeeds
    targets = [t for t in wg.graph_attrs["targets"] if t in wg.nx]
    wprog = _compile_part(wg, name, "worker", wfetches, targets, passes, CUDA if worker_gpu else C)
    wprog.input_names = input_names + [f"recv:{k}" for k in inputs_at]
    wprog.output_names = ["loss"] + [f"send:{k}" for k in outputs_at]
    worker = TaskPlan(f"{name}_worker", {"train": wprog})
    _layout_task_state(sigs, worker)

    # the ps tasks
    with graph.as_default():
        variables = graph.get_collection(GraphKeys.GLOBAL_VARIABLES) + graph.get_collection(
            GraphKeys.LOCAL_VARIABLES
        )
    ps_plans = []
    for k in range(n_ps):
        device = f"/job:ps/replica:0/task:{k}/device:CPU:0"
        part = parts.get(device)
        role = f"ps{k}"
        mine = [v for v in variables if part is not None and v.op.name in part.nx]
        with graph.as_default():
            init = variables_initializer(mine, name=f"tfc_init_{role}")
        init_graph = make_program_graph(graph, [], [init.name], [])
        programs = {"init": _compile(init_graph, name, f"{role}_init", passes)}
        if part is not None:
            serve, apply = part.copy(), part.copy()
            serve_fetches = []
            for node in serve.node_names():
                n = serve.node(node)
                if n["op"] == "_Send":
                    inputs = serve.input_edges(node)
                    if inputs:
                        outputs_at[n["attrs"]["key"]] = (k, len(serve_fetches))
                        serve_fetches.append(inputs[0])
                    serve.remove_node(node)
            recvs = {n for n in serve.nx.nodes if serve.node(n)["op"] == "_Recv"}
            for src, _ in serve_fetches:
                if src in recvs or recvs & nx.ancestors(serve.nx, src):
                    raise ModelError(
                        f"ps task {k} sends {src}, which depends on what other tasks send in "
                        "the same step: a ps may only send its variables' values"
                    )
            serve.graph_attrs["feeds"] = []
            programs["serve"] = _compile_part(serve, name, f"{role}_serve", serve_fetches, [],
                                              passes)  # fmt: skip
            programs["serve"].output_names = [
                f"send:{key}" for key, (task, _) in outputs_at.items() if task == k
            ]
            afeeds = []
            for node in apply.node_names():
                n = apply.node(node)
                if n["op"] == "_Send":
                    apply.remove_node(node)
                elif n["op"] == "_Recv":
                    if n["attrs"]["key"].rpartition(";")[2].startswith("^"):
                        apply.remove_node(node)
                    else:
                        inputs_at[n["attrs"]["key"]] = (k, len(afeeds))
                        _recv_to_feed(apply, node, afeeds)
            apply.graph_attrs["feeds"] = afeeds
            fed = [s.tensor[0] for s in afeeds]
            reached = set(fed).union(*(nx.descendants(apply.nx, f) for f in fed))
            atargets = sorted(
                (n for n in reached if apply.nx.out_degree(n) == 0),
                key=lambda n: apply.node(n)["id"],
            )
            atargets += [t for t in apply.graph_attrs["targets"] if t in apply.nx]
            programs["apply"] = _compile_part(apply, name, f"{role}_apply", [], atargets, passes)
            programs["apply"].input_names = [
                f"recv:{key}" for key, (task, _) in inputs_at.items() if task == k
            ]
        if part is None or not mine:
            raise ModelError(f"ps task {k} holds no variable of the train step: use fewer ps tasks")
        ps_plans.append(TaskPlan(f"{name}_{role}", programs))

    step = get_global_step(graph)
    global_step_ps = -1
    for k, plan in enumerate(ps_plans):
        _layout_task_state(sigs, plan)
        if step is not None and "apply" in plan.programs:
            if step.op.name in plan.programs["apply"].lowered.vars_written:
                plan.global_step = next(
                    i
                    for i, s in enumerate(plan.state)
                    if s.kind == "var" and s.name == step.op.name
                )
                global_step_ps = k
    hyper = {
        h: (input_names.index(h), tr.defaults[h]) for h in tr.hyperparameters
    }  # fmt: skip
    links = []
    for key, (dst, dst_index) in inputs_at.items():
        src, src_index = outputs_at[key]
        links.append(Link(key, src, src_index, dst, dst_index))
    return DistributedPlan(
        name, batch, cluster, worker, ps_plans, links, global_step_ps, sigs, hyper, worker_gpu
    )


def _layout_task_state(sigs: ModelSignatures, task: TaskPlan) -> None:
    """The task's state table, with the checks of layout_state for the roles it knows."""
    known = {"init": "init", "apply": "train", "serve": "predict", "train": "train"}
    task.state = layout_state(sigs, {known[r]: p for r, p in task.programs.items()})
    if "init" not in task.programs:  # the worker: its variables would be nobody's to update
        held = [s.name for s in task.state if s.kind == "var"]
        if held:
            raise ModelError(
                f"variables {held} are on the worker; place variables on /job:ps "
                "(tf.train.replica_device_setter does that)"
            )
