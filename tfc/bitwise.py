"""`tf.bitwise`: TF1's bitwise namespace (the ops of tfc.ops.bitwise)."""

# ruff: noqa: F401  (this module only re-exports)
from tfc.ops.bitwise import (
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    invert,
    left_shift,
    right_shift,
)
