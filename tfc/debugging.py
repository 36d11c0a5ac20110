"""`tf.debugging`: checks on values while a graph runs."""

from tfc.ops.check_ops import *  # noqa: F401,F403
from tfc.ops.logging_ops import Assert  # noqa: F401
from tfc.ops.numerics import *  # noqa: F401,F403
