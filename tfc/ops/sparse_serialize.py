"""SparseTensors as strings: tf.serialize_sparse, tf.serialize_many_sparse and
tf.deserialize_many_sparse (SerializeSparse, SerializeManySparse, DeserializeManySparse).

Each SparseTensor becomes three serialized TensorProtos (its indices, values and dense_shape,
as TF's SerializeTensor writes them: tfc/ops/parsing.py), so a batch of SparseTensors of
different sizes can pass through a queue of strings: tf.train.batch does exactly that with
the SparseTensors among its inputs (tfc/train/input.py). They make or read tf.string values,
so a Session runs them in a Python stage.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tfc.io.graph_pb import TensorProto
from tfc.io.tensor_proto import make_ndarray
from tfc.ir import dtypes as _dt
from tfc.ops.constant import convert_to_tensor
from tfc.ops.parsing import serialize_tensor_bytes
from tfc.ops.registry import STRING_REASON, OpContext, OpDef, apply_op, register
from tfc.ops.sparse_ops import as_sparse, invalid_argument
from tfc.ops.sparse_tensor import SparseTensor

__all__ = ["serialize_sparse", "serialize_many_sparse", "deserialize_many_sparse"]


def _serialized(indices: np.ndarray, values: np.ndarray, shape: np.ndarray) -> list[bytes]:
    return [
        serialize_tensor_bytes(np.asarray(indices, np.int64)),
        serialize_tensor_bytes(values),
        serialize_tensor_bytes(np.asarray(shape, np.int64)),
    ]


def _strings(rows: list) -> np.ndarray:
    out = np.empty((len(rows), 3), dtype=object)
    for i, row in enumerate(rows):
        out[i, :] = row
    return out


def _serialize_infer(ctx: OpContext) -> list:
    if ctx.attrs.get("out_type", _dt.string) != _dt.string:
        raise ctx.error("tfc serializes SparseTensors to tf.string only (out_type=tf.variant)")
    # SerializeManySparse: one row per element of the first dimension, a run-time value
    return [(_dt.string, (None, 3) if ctx.type == "SerializeManySparse" else (3,))]


def _serialize_reference(ctx: OpContext, indices, values, shape) -> np.ndarray:
    if ctx.type == "SerializeSparse":
        return _strings([_serialized(indices, values, shape)])[0]
    if len(shape) < 2:
        raise invalid_argument(ctx, f"SparseTensor must have rank at least 2, got {len(shape)}")
    rows = []
    for i in range(int(shape[0])):
        mine = indices[:, 0] == i
        rows.append(_serialized(indices[mine][:, 1:], values[mine], shape[1:]))
    return _strings(rows)


for _name in ("SerializeSparse", "SerializeManySparse"):
    register(
        OpDef(
            _name,
            infer=_serialize_infer,
            reference=_serialize_reference,
            differentiable=False,
            in_python=STRING_REASON,
            dtypes=_dt.STORABLE,
            input_names=("sparse_indices", "sparse_values", "sparse_shape"),
        )
    )


def serialize_sparse(sp_input: Any, name: str | None = None, out_type: Any = _dt.string) -> Any:
    """`tf.serialize_sparse`: a SparseTensor as a 3-vector of strings (its indices, values and
    dense_shape as serialized TensorProtos)."""
    sp = as_sparse(sp_input)
    attrs = {"T": sp.dtype, "out_type": _dt.as_dtype(out_type)}
    return apply_op("SerializeSparse", list(sp.components()), attrs,
                    name=name or "SerializeSparse").outputs[0]  # fmt: skip


def serialize_many_sparse(
    sp_input: Any, name: str | None = None, out_type: Any = _dt.string
) -> Any:
    """`tf.serialize_many_sparse`: each of the rank-(R-1) SparseTensors along the first
    dimension of a rank-R SparseTensor serialized as serialize_sparse does ([N, 3])."""
    sp = as_sparse(sp_input)
    attrs = {"T": sp.dtype, "out_type": _dt.as_dtype(out_type)}
    return apply_op("SerializeManySparse", list(sp.components()), attrs,
                    name=name or "SerializeManySparse").outputs[0]  # fmt: skip


def _deserialize_infer(ctx: OpContext) -> list:
    rank = ctx.attrs.get("rank")
    return [(_dt.int64, (None, rank)), (ctx.attrs["dtype"], (None,)), (_dt.int64, (rank,))]


def _parse(ctx: OpContext, raw: Any, what: str) -> np.ndarray:
    try:
        return make_ndarray(TensorProto.FromString(bytes(raw)))
    except Exception:  # noqa: BLE001 - any malformed bytes are the same error
        raise invalid_argument(ctx, f"Could not parse serialized_sparse[{what}]") from None


def _deserialize_reference(ctx: OpContext, serialized: np.ndarray) -> list:
    serialized = np.asarray(serialized, dtype=object)
    if serialized.ndim != 2 or serialized.shape[1] != 3:
        raise invalid_argument(ctx, f"Serialized sparse should be [N, 3], got {serialized.shape}")
    dtype = ctx.attrs["dtype"]
    indices, values, shapes = [], [], []
    for i, (idx, val, shape) in enumerate(serialized):
        idx, val, shape = (_parse(ctx, x, f"{i}, {k}") for k, x in enumerate((idx, val, shape)))
        if val.dtype != dtype.np:
            raise invalid_argument(ctx, f"Requested SparseTensor of type {dtype.name} but "
                                        f"element {i} has values of type {val.dtype}")  # fmt: skip
        if shapes and len(shape) != len(shapes[0]):
            raise invalid_argument(ctx, f"Inconsistent rank across SparseTensors: rank prior to "
                                        f"SparseTensor[{i}] was {len(shapes[0])} but rank of "
                                        f"SparseTensor[{i}] is {len(shape)}")  # fmt: skip
        rows = np.asarray(idx, np.int64).reshape(-1, len(shape))
        indices.append(np.concatenate([np.full((len(rows), 1), i, np.int64), rows], axis=1))
        values.append(val.reshape(-1))
        shapes.append(np.asarray(shape, np.int64))
    if not shapes:
        rank = ctx.attrs.get("rank")
        if rank is None:
            raise invalid_argument(ctx, "Cannot deserialize an empty batch of unknown rank")
        return [np.zeros((0, rank), np.int64), np.zeros(0, dtype.np), np.zeros(rank, np.int64)]
    outer = np.max(np.stack(shapes), axis=0)
    return [
        np.concatenate(indices),
        np.concatenate(values).astype(dtype.np),
        np.concatenate([[len(shapes)], outer]).astype(np.int64),
    ]


register(
    OpDef(
        "DeserializeManySparse",
        infer=_deserialize_infer,
        reference=_deserialize_reference,
        differentiable=False,
        in_python=STRING_REASON,
        dtypes=_dt.STORABLE,
        input_names=("serialized_sparse",),
    )
)


def deserialize_many_sparse(
    serialized_sparse: Any, dtype: Any, rank: int | None = None, name: str | None = None
) -> SparseTensor:
    """`tf.deserialize_many_sparse`: N serialized SparseTensors ([N, 3] strings) joined into
    one whose first dimension is N and whose other dimensions are the largest of theirs."""
    x = convert_to_tensor(serialized_sparse, dtype=_dt.string, name="serialized_sparse")
    attrs = {"dtype": _dt.as_dtype(dtype), "rank": None if rank is None else int(rank)}
    op = apply_op("DeserializeManySparse", [x], attrs, name=name or "DeserializeManySparse")
    return SparseTensor(*op.outputs)
