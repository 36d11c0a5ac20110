"""`tf.estimator`: train/evaluate/predict/export loops with checkpoints, and canned models."""

from tfc.estimator import export, inputs  # noqa: F401  the tf.estimator.export/inputs namespaces
from tfc.estimator.dnn import *  # noqa: F401,F403
from tfc.estimator.estimator import *  # noqa: F401,F403
from tfc.estimator.linear import *  # noqa: F401,F403
from tfc.estimator.model_fn import *  # noqa: F401,F403
from tfc.estimator.run_config import *  # noqa: F401,F403
from tfc.estimator.training import *  # noqa: F401,F403
