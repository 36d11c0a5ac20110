"""`tf.manip` (TF1): array manipulation under its tf.manip names."""

from tfc.ops.array import gather_nd, reshape, reverse, roll, scatter_nd, tile

__all__ = ["gather_nd", "reshape", "reverse", "roll", "scatter_nd", "tile"]
