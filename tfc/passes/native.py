"""require_native_ops: a program to be compiled holds no op that only Python can run.

Native builds (`tfc compile` executables, the embeddable library, distributed tasks, the
programs of a Session's native stages) run without Python. An op with a python_reason
(tfc/ops/registry.py: tf.py_func, ops whose output shape depends on their values, ops on
tf.string values) or a fetched string cannot be part of them; this pass stops the compile
before anything else fails less clearly (shape specialization, lowering), naming the op and
why. A tf.Session runs such programs in stages instead (tfc/passes/python_stage.py).

Guarantees: the graph is returned unchanged, or NativeBuildError is raised.
"""

from __future__ import annotations

from tfc.ir.graph import Graph
from tfc.passes.python_stage import python_nodes

_SESSION_ONLY = (
    "Only a tf.Session can run it (it evaluates such ops in Python between compiled stages); "
    "a native program (tfc compile, --target embed, distributed tasks) runs without Python."
)


class NativeBuildError(ValueError):
    """A program holds an op a native build cannot run; the message names the op and why."""

    def __init__(self, node: str, op: str, reason: str) -> None:
        super().__init__(
            f"Op '{node}' (type {op}) cannot be compiled into a native program: {reason}. "
            + _SESSION_ONLY
        )
        self.node = node
        self.op = op


def require_native_ops(graph: Graph) -> Graph:
    """Raise NativeBuildError for the first op (in creation order) that needs Python, or a
    fetched string; see the module doc."""
    for name, reason in python_nodes(graph).items():
        raise NativeBuildError(name, graph.op_type(name), reason)
    for name, out in graph.graph_attrs.get("fetches", []):
        if graph.node(name)["dtypes"][out].is_string:
            reason = f"the program fetches its output {out}, a tf.string (native code has none)"
            raise NativeBuildError(name, graph.op_type(name), reason)
    return graph
