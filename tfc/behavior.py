"""TF1's switches to TensorFlow 2's behaviour, for programs that call them at the top.

tfc is always what TF1's graph mode is: ops build a graph and a Session runs it. So the calls
that put TF 2 into that mode have nothing to change here; they are accepted and do nothing,
as they do in a TF1 program already in graph mode.
"""

from __future__ import annotations

__all__ = ["disable_eager_execution", "disable_v2_behavior"]


def disable_eager_execution() -> None:
    """`tf.disable_eager_execution`: graph mode, which tfc is always in (a no-op, as in TF1
    graph mode). Call it, as TF programs do, before building a graph."""


def disable_v2_behavior() -> None:
    """`tf.disable_v2_behavior`: TF1's behaviour (graph mode, TF1 control flow, reference
    variables, TensorShape of Dimensions), which is tfc's; a no-op, as in TF1."""
