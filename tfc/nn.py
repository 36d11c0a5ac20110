"""`tf.nn`: neural-network ops and losses."""

from tfc.ops.conv import *  # noqa: F401,F403
from tfc.ops.conv_depthwise import *  # noqa: F401,F403
from tfc.ops.nn import *  # noqa: F401,F403
from tfc.ops.nn_loss import *  # noqa: F401,F403
