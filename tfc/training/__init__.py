"""TF1's training loops, the part of `tf.train` that creates and drives Sessions:
MonitoredTrainingSession, MonitoredSession, SingularMonitoredSession, the session creators,
SessionManager, Supervisor, basic_train_loop and Server. A layer above tfc.client; the public
`tf.train` namespace (tfc/__init__.py) holds these beside tfc.train's graph-building API."""

from tfc.training import basic_loops, monitored_session, server_lib, session_manager, supervisor
from tfc.training.basic_loops import *  # noqa: F401,F403
from tfc.training.monitored_session import *  # noqa: F401,F403
from tfc.training.server_lib import *  # noqa: F401,F403
from tfc.training.session_manager import *  # noqa: F401,F403
from tfc.training.supervisor import *  # noqa: F401,F403

__all__ = [
    *basic_loops.__all__,
    *monitored_session.__all__,
    *server_lib.__all__,
    *session_manager.__all__,
    *supervisor.__all__,
]
