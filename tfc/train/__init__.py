"""`tf.train`: optimizers, learning-rate schedules, the global step, and checkpoints."""

from tfc.train.device_setter import *  # noqa: F401,F403
from tfc.train.learning_rate_decay import *  # noqa: F401,F403
from tfc.train.moving_averages import *  # noqa: F401,F403
from tfc.train.optimizer import *  # noqa: F401,F403
from tfc.train.optimizers import *  # noqa: F401,F403
from tfc.train.saver import *  # noqa: F401,F403
from tfc.train.training_util import *  # noqa: F401,F403
