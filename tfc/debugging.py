"""`tf.debugging`: checks on values while a graph runs."""

from tfc.ops.numerics import *  # noqa: F401,F403
