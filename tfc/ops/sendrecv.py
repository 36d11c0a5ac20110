"""_Send and _Recv: the ends of a cut edge between two partitions (made by the partition pass).

A _Send hands its input to the rendezvous under its key; the _Recv with the same key, in the
partition of the consuming device, outputs it. Keys are "SRC_DEVICE;DST_DEVICE;TENSOR" (the
whitepaper's canonical form: one pair per tensor and destination device); a run pairs them
with its step id, so each pair is unique per step. A _Send of a control edge has no input and
carries an empty tensor. The interpreter's rendezvous is tfc/reference/rendezvous.py;
compiled programs turn each _Recv into an input and each _Send into an output that the
transport moves.
"""

from __future__ import annotations

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ops.registry import OpContext, OpDef, register

CONTROL_DTYPE = _dt.float32
CONTROL_SHAPE = (0,)


def _send_reference(ctx: OpContext, value: np.ndarray | None = None) -> list:
    if value is None:
        value = np.zeros(CONTROL_SHAPE, CONTROL_DTYPE.np)
    ctx.state.rendezvous.send(ctx.state.step_id, ctx.attrs["key"], value)
    return []


def _send_infer(ctx: OpContext) -> list:
    if len(ctx.in_dtypes) > 1:
        raise ctx.error(f"_Send takes at most one input, got {len(ctx.in_dtypes)}")
    return []


def _recv_reference(ctx: OpContext) -> np.ndarray:
    value = ctx.state.rendezvous.recv(ctx.state.step_id, ctx.attrs["key"])
    expected = (ctx.attrs["dtype"].np, tuple(ctx.attrs["shape"]))
    if (value.dtype, value.shape) != expected:
        raise ValueError(
            f"_Recv '{ctx.name}' expected {expected[0]}{list(expected[1])} under key "
            f"{ctx.attrs['key']!r}, received {value.dtype}{list(value.shape)}"
        )
    return value


register(
    OpDef(
        "_Send",
        dtypes=_dt.STORABLE,
        infer=_send_infer,
        reference=_send_reference,
        differentiable=False,
        stateful=True,
    )
)

register(
    OpDef(
        "_Recv",
        dtypes=_dt.STORABLE,
        infer=lambda ctx: [(ctx.attrs["dtype"], tuple(ctx.attrs["shape"]))],
        reference=_recv_reference,
        differentiable=False,
        stateful=True,
    )
)


def rendezvous_key(src_device: str, dst_device: str, tensor: str) -> str:
    """The key of the pair that moves `tensor` ("node:out", or "^node" for a control edge)."""
    return f"{src_device};{dst_device};{tensor}"


def key_tensor(key: str) -> str:
    """The tensor a rendezvous key moves: rendezvous_key's `tensor`."""
    return key.rpartition(";")[2]
