"""`tf.estimator`: train/evaluate/predict loops with checkpoints, and canned models."""

from tfc.estimator.dnn import *  # noqa: F401,F403
from tfc.estimator.estimator import *  # noqa: F401,F403
