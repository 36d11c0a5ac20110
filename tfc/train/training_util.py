"""The global step: an int64 scalar variable "global_step" that training ops increment."""

from __future__ import annotations

from typing import Any

from tfc.init_ops import zeros_initializer
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Graph, GraphKeys, Tensor, get_default_graph, name_scope
from tfc.variables import Variable, get_variable

__all__ = [
    "create_global_step",
    "get_global_step",
    "get_or_create_global_step",
    "global_step",
    "assert_global_step",
]


def assert_global_step(global_step_tensor: Any) -> None:
    """Raise TypeError unless `global_step_tensor` is an integer scalar Variable or Tensor."""
    if not isinstance(global_step_tensor, (Variable, Tensor)):
        raise TypeError(
            f'Existing "global_step" must be a Variable or Tensor: {global_step_tensor}.'
        )
    if not global_step_tensor.dtype.is_integer:
        raise TypeError(
            f'Existing "global_step" does not have integer type: {global_step_tensor.dtype}'
        )
    shape = global_step_tensor.shape
    if shape.ndims != 0 and shape.is_fully_defined():
        raise TypeError(f'Existing "global_step" is not scalar: {shape}')


def get_global_step(graph: Graph | None = None) -> Variable | Tensor | None:
    """The global step of `graph` (its GLOBAL_STEP collection, or the tensor 'global_step:0')."""
    graph = graph or get_default_graph()
    found = graph.get_collection(GraphKeys.GLOBAL_STEP)
    if len(found) == 1:
        step = found[0]
    elif not found:
        try:
            step = graph.get_tensor_by_name("global_step:0")
        except KeyError:
            return None
    else:
        return None  # ambiguous, as TF1 (which logs an error)
    assert_global_step(step)
    return step


def create_global_step(graph: Graph | None = None) -> Variable:
    """Create the global step of `graph`: int64, scalar, starting at 0, not trainable."""
    graph = graph or get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError('"global_step" already exists.')
    with graph.as_default(), name_scope(None):
        return get_variable(
            GraphKeys.GLOBAL_STEP,
            shape=[],
            dtype=_dt.int64,
            initializer=zeros_initializer(),
            trainable=False,
            collections=[GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP],
        )


def get_or_create_global_step(graph: Graph | None = None) -> Variable | Tensor:
    """The global step of `graph`, created when it has none."""
    graph = graph or get_default_graph()
    step = get_global_step(graph)
    if step is None:
        step = create_global_step(graph)
    return step


def global_step(sess: Any, global_step_tensor: Any) -> int:
    """The value of the global step in session `sess`, as a Python int."""
    return int(sess.run(global_step_tensor))
