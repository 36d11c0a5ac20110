"""The list schedulers give the orders of the plain algorithm they replace, in near-linear time."""

from __future__ import annotations

import heapq
import random
import time
from types import SimpleNamespace

import networkx as nx
import pytest
from passcheck import feed, front, program
from test_pass_schedule import digits_training_graph

import tfc as tf
from tfc.passes.schedule import SCHEDULERS, Costs, dependency_graph, schedule_graph

LIST_SCHEDULERS = {
    "least_growth": (False, False),
    "peak_aware": (False, True),
    "late_least_growth": (True, False),
    "late_peak_aware": (True, True),
}


def reference_list_schedule(order, costs, reverse, peak_aware):
    """The list scheduler as first written: every ready node's effect recomputed whenever a
    buffer it reads loses a reader, and a scan of all ready nodes at each step."""
    size, readers, reads, writes, inplace = (
        costs.size, costs.readers, costs.reads, costs.writes, costs.inplace,
    )  # fmt: skip
    after = order.pred if reverse else order.succ
    waiting = {n: len(order.succ[n] if reverse else order.pred[n]) for n in order.nodes}
    tie = {n: -i if reverse else i for n, i in costs.id.items()}
    left = dict(readers)
    free, costly = [], {}
    live = peak = 0
    result = []

    def effect(n):
        if reverse:
            start = [t for t in reads[n] if left[t] == readers[t]]
            during = sum(size[t] for t in start)
            during += sum(size[t] for t in writes[n] if not readers[t])
            grow = during - sum(size[t] for t in writes[n])
        else:
            start = [t for t in reads[n] if left[t] == 1]
            during = sum(size[t] for t in writes[n])
            grow = -sum(size[t] for t in start)
            grow += sum(size[t] for t in writes[n] if readers[t])
        if any(t in start for t in inplace[n]):
            during -= size[(n, 0)]
        return during, grow

    def make_ready(n):
        if reads[n] or writes[n]:
            costly[n] = effect(n)
        else:
            heapq.heappush(free, (tie[n], n))

    for n in order.nodes:
        if waiting[n] == 0:
            make_ready(n)
    while free or costly:
        if free:
            n = heapq.heappop(free)[1]
        else:
            if peak_aware:
                n = min(
                    costly, key=lambda m: (max(live + costly[m][0], peak), costly[m][1], tie[m])
                )
            else:
                n = min(costly, key=lambda m: (costly[m][1], costly[m][0], tie[m]))
            during, grow = costly.pop(n)
            peak, live = max(peak, live + during), live + grow
            for t in reads[n]:
                left[t] -= 1
            for t in reads[n]:
                for m in costs.model.readers[t]:
                    if m in costly:
                        costly[m] = effect(m)
        result.append(n)
        for m in after[n]:
            waiting[m] -= 1
            if waiting[m] == 0:
                make_ready(m)
    return result[::-1] if reverse else result


def random_program(rng: random.Random, nodes: int):
    """A random DAG and arena costs of the shape tfc.passes.memory gives: each node writes up
    to two buffers of a few sizes (equal sizes make ties), reads earlier ones, may overwrite one
    it reads in place; a buffer nobody reads is read by its own node."""
    names = [f"n{i}" for i in range(nodes)]
    ids = list(range(nodes))
    rng.shuffle(ids)  # creation order is not the topological index
    order = nx.DiGraph()
    order.add_nodes_from(names)
    size, node_readers = {}, {}
    for n in names:
        for k in range(rng.choice([0, 1, 1, 1, 2])):
            size[(n, k)] = rng.choice([4, 8, 8, 16, 64])
            node_readers[(n, k)] = set()
    tensors = sorted(size)
    for i, n in enumerate(names):
        earlier = [t for t in tensors if names.index(t[0]) < i]
        for t in rng.sample(earlier, min(len(earlier), rng.choice([0, 1, 1, 2, 3]))):
            node_readers[t].add(n)
            order.add_edge(t[0], n)
        for _ in range(rng.choice([0, 0, 1])):
            if i:
                order.add_edge(names[rng.randrange(i)], n)  # a control edge
    for t, rs in node_readers.items():
        if not rs:
            rs.add(t[0])
    reads = {n: [] for n in names}
    for t, rs in node_readers.items():
        for r in rs:
            reads[r].append(t)
    writes = {n: [t for t in tensors if t[0] == n] for n in names}
    inplace = {
        n: [t for t in reads[n] if (n, 0) in size and size[t] == size[(n, 0)] and t[0] != n][:1]
        for n in names
    }
    costs = SimpleNamespace(
        model=SimpleNamespace(readers=node_readers),
        size=size,
        readers={t: len(rs) for t, rs in node_readers.items()},
        id=dict(zip(names, ids)),
        reads=reads,
        writes=writes,
        inplace=inplace,
    )
    return order, costs


@pytest.mark.parametrize("name", sorted(LIST_SCHEDULERS))
def test_the_same_order_as_the_reference_on_random_dags(name):
    reverse, peak_aware = LIST_SCHEDULERS[name]
    rng = random.Random(name)
    for _ in range(150):
        order, costs = random_program(rng, rng.randrange(2, 30))
        expected = reference_list_schedule(order, costs, reverse, peak_aware)
        assert SCHEDULERS[name](order, costs) == expected


def _fan_out(readers: int, width: int = 16) -> tuple[tf.Tensor, object]:
    """`readers` slices of one tensor, summed (as a dilated max pool imported from ONNX reads
    one tensor through thousands of slices)."""
    x = tf.placeholder(tf.float32, [readers + width], name="x")
    y = tf.exp(x, name="y")
    slices = [tf.strided_slice(y, [i], [i + width], [1]) for i in range(readers)]
    return tf.add_n(slices, name="out"), feed("x", (readers + width,))


@pytest.mark.parametrize("graph", ["digits_training", "fan_out"])
def test_the_same_order_as_the_reference_on_programs(graph):
    if graph == "fan_out":
        out, spec = _fan_out(40)
        g = front(program([(out.op.name, 0)], [spec]))
    else:
        g = digits_training_graph()
    order, costs = dependency_graph(g), Costs(g)
    for name, (reverse, peak_aware) in LIST_SCHEDULERS.items():
        expected = reference_list_schedule(order, costs, reverse, peak_aware)
        assert SCHEDULERS[name](order, costs) == expected, name


def test_a_tensor_with_thousands_of_readers_schedules_in_seconds():
    out, spec = _fan_out(3000)
    g = program([(out.op.name, 0)], [spec])  # shapes are static: no set-up passes needed
    assert g.nx.number_of_nodes() > 3000
    start = time.perf_counter()
    g = schedule_graph(g)
    # the scheduler as first written took minutes here (each step revisited every reader)
    assert time.perf_counter() - start < 10.0
    assert len(g.graph_attrs["schedule"]) == g.nx.number_of_nodes()
