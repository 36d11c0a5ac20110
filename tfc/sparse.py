"""`tf.sparse`: TF1's SparseTensor namespace, the ops of tfc.ops.sparse_* under their names."""

# ruff: noqa: F401  (this module only re-exports)
from tfc.ops.sparse_math import sparse_segment_mean as segment_mean
from tfc.ops.sparse_math import sparse_segment_sqrt_n as segment_sqrt_n
from tfc.ops.sparse_math import sparse_segment_sum as segment_sum
from tfc.ops.sparse_math import sparse_tensor_dense_matmul as matmul
from tfc.ops.sparse_math import sparse_tensor_dense_matmul as sparse_dense_matmul
from tfc.ops.sparse_ops import sparse_add as add
from tfc.ops.sparse_ops import sparse_concat as concat
from tfc.ops.sparse_ops import sparse_fill_empty_rows as fill_empty_rows
from tfc.ops.sparse_ops import sparse_from_dense as from_dense
from tfc.ops.sparse_ops import sparse_mask as mask
from tfc.ops.sparse_ops import sparse_maximum as maximum
from tfc.ops.sparse_ops import sparse_merge as merge
from tfc.ops.sparse_ops import sparse_minimum as minimum
from tfc.ops.sparse_ops import sparse_reorder as reorder
from tfc.ops.sparse_ops import sparse_reset_shape as reset_shape
from tfc.ops.sparse_ops import sparse_reshape as reshape
from tfc.ops.sparse_ops import sparse_retain as retain
from tfc.ops.sparse_ops import sparse_slice as slice  # noqa: A004 - TF's name
from tfc.ops.sparse_ops import sparse_softmax as softmax
from tfc.ops.sparse_ops import sparse_split as split
from tfc.ops.sparse_ops import sparse_tensor_to_dense as to_dense
from tfc.ops.sparse_ops import sparse_to_indicator as to_indicator
from tfc.ops.sparse_ops import sparse_transpose as transpose
from tfc.ops.sparse_reduce import sparse_reduce_max as reduce_max
from tfc.ops.sparse_reduce import sparse_reduce_max_sparse as reduce_max_sparse
from tfc.ops.sparse_reduce import sparse_reduce_sum as reduce_sum
from tfc.ops.sparse_reduce import sparse_reduce_sum_sparse as reduce_sum_sparse
from tfc.ops.sparse_tensor import SparseTensor, SparseTensorValue
from tfc.ops.sparse_tensor import sparse_placeholder as placeholder

__all__ = [
    "SparseTensor",
    "SparseTensorValue",
    "add",
    "concat",
    "fill_empty_rows",
    "from_dense",
    "mask",
    "matmul",
    "maximum",
    "merge",
    "minimum",
    "placeholder",
    "reduce_max",
    "reduce_max_sparse",
    "reduce_sum",
    "reduce_sum_sparse",
    "reorder",
    "reset_shape",
    "reshape",
    "retain",
    "segment_mean",
    "segment_sqrt_n",
    "segment_sum",
    "slice",
    "softmax",
    "sparse_dense_matmul",
    "split",
    "to_dense",
    "to_indicator",
    "transpose",
]
