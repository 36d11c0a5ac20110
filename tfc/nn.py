"""`tf.nn`: neural-network ops."""

from tfc.ops.nn import *  # noqa: F401,F403
