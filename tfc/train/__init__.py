"""`tf.train`: optimizers, learning-rate schedules, moving averages, the global step,
checkpoints, the session-run hooks, scaffold and coordinator of training loops, the queue-based
input pipeline (queue runners, producers, batching), and cluster specs. (The session-driving
loops, MonitoredTrainingSession and the rest, are tfc.training's: they create Sessions; the
public `tf.train` namespace holds both.)"""

from tfc.io.example_pb import (  # noqa: F401
    BytesList,
    Example,
    Feature,
    FeatureList,
    FeatureLists,
    Features,
    FloatList,
    Int64List,
    SequenceExample,
)
from tfc.train.basic_session_run_hooks import *  # noqa: F401,F403
from tfc.train.checkpoint_wait import *  # noqa: F401,F403
from tfc.train.cluster_spec import *  # noqa: F401,F403
from tfc.train.coordinator import *  # noqa: F401,F403
from tfc.train.device_setter import *  # noqa: F401,F403
from tfc.train.input import *  # noqa: F401,F403
from tfc.train.learning_rate_decay import *  # noqa: F401,F403
from tfc.train.meta_graph_export import *  # noqa: F401,F403
from tfc.train.meta_graph_import import *  # noqa: F401,F403
from tfc.train.moving_averages import *  # noqa: F401,F403
from tfc.train.optimizer import *  # noqa: F401,F403
from tfc.train.optimizers import *  # noqa: F401,F403
from tfc.train.queue_runner import *  # noqa: F401,F403
from tfc.train.saver import *  # noqa: F401,F403
from tfc.train.scaffold import *  # noqa: F401,F403
from tfc.train.session_run_hook import *  # noqa: F401,F403
from tfc.train.summary_iterator import *  # noqa: F401,F403
from tfc.train.sync_replicas_optimizer import *  # noqa: F401,F403
from tfc.train.training_util import *  # noqa: F401,F403
from tfc.train.warm_start import *  # noqa: F401,F403
