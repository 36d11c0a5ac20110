"""Timestamp: the wall clock as a float64 tensor (tf.timestamp).

The kernel reads the clock through the runtime's platform hook TFC_WALL_SECONDS
(runtime/include/tfc_platform.h: C11's timespec_get by default; an embedder without a clock
defines it). It is stateful, so it is never folded or merged, and runs where its run puts it:
each run reads the clock when it reaches the op.
"""

from __future__ import annotations

import time

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor
from tfc.ops.flops import no_flops
from tfc.ops.kernels import loop_kernel, view
from tfc.ops.registry import OpContext, OpDef, apply_op, register

__all__ = ["timestamp"]


def _timestamp_reference(ctx: OpContext) -> np.ndarray:
    return np.array(time.time(), dtype=np.float64)


register(
    OpDef(
        "Timestamp",
        infer=lambda ctx: [(_dt.float64, ())],
        reference=_timestamp_reference,
        lower=lambda ctx: loop_kernel((), view("out0", _dt.float64, ()), [], "TFC_WALL_SECONDS()"),
        differentiable=False,
        stateful=True,
        host_only=True,  # the host's clock: a GPU kernel has none to read
        flops=no_flops,
    )
)


def timestamp(name: str | None = None) -> Tensor:
    """`tf.timestamp`: seconds since the Unix epoch, with sub-microsecond digits, when the op
    runs (a float64 scalar)."""
    return apply_op("Timestamp", [], name=name or "Timestamp").outputs[0]
