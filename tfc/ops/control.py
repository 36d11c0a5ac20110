"""Ordering without data: NoOp, and `tf.group` of operations."""

from __future__ import annotations

from typing import Any

from tfc.ir.graph import Operation, control_dependencies, get_default_graph
from tfc.ops.registry import OpDef, apply_op, register

__all__ = ["no_op", "group"]

register(
    OpDef(
        "NoOp",
        infer=lambda ctx: [],
        reference=lambda ctx: [],
        lower=lambda ctx: [],
        differentiable=False,
        stateful=True,  # it stands for its control inputs: never merged or folded away
    )
)


def no_op(name: str | None = None) -> Operation:
    """An op that does nothing; with control inputs it runs after them."""
    return apply_op("NoOp", [], name=name or "NoOp", graph=get_default_graph())


def group(*inputs: Any, name: str | None = None) -> Operation:
    """An op that runs after all of `inputs` (tensors or operations) and produces nothing."""
    ops = []
    for x in inputs:
        for item in x if isinstance(x, (list, tuple)) else [x]:
            if item is None:
                continue
            op = item if isinstance(item, Operation) else getattr(item, "op", None)
            if not isinstance(op, Operation):
                raise TypeError(f"tf.group expects tensors or operations, got {item!r}")
            ops.append(op)
    with control_dependencies(ops):
        return no_op(name=name or "group_deps")
