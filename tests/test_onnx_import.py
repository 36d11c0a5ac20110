"""tfc.onnx.import_model's graph is the same whatever the process: its nodes come in an order
the model sets, not the hash seed's (a generated source that differs between processes misses
the build cache in every one of them). Skips without onnx."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import tfc.onnx  # noqa: E402


def test_initializers_become_constants_in_the_order_the_nodes_first_read_them():
    """A chain of twelve Adds, each reading its own initializer: the Const nodes come in the
    chain's order (a set's order, which the hash seed sets, would almost never give it)."""
    names = [f"w{i}" for i in range(12)]
    nodes, prev = [], "x"
    for i, name in enumerate(names):
        nodes.append(helper.make_node("Add", [prev, name], [f"y{i}"]))
        prev = f"y{i}"
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [2])],
        [numpy_helper.from_array(np.full(2, i, np.float32), n) for i, n in enumerate(names)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    g, _, _ = tfc.onnx.import_model(model)
    consts = [n for n in g.node_names() if g.op_type(n) == "Const"]
    assert consts == names
