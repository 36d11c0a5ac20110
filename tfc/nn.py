"""`tf.nn`: neural-network ops and losses."""

from tfc.ops.candidate_sampling import *  # noqa: F401,F403
from tfc.ops.conv import *  # noqa: F401,F403
from tfc.ops.conv3d import *  # noqa: F401,F403
from tfc.ops.conv_api import *  # noqa: F401,F403
from tfc.ops.conv_composite import *  # noqa: F401,F403
from tfc.ops.conv_depthwise import *  # noqa: F401,F403
from tfc.ops.embedding import *  # noqa: F401,F403
from tfc.ops.lrn import *  # noqa: F401,F403
from tfc.ops.morphology import *  # noqa: F401,F403
from tfc.ops.nn import *  # noqa: F401,F403
from tfc.ops.nn_loss import *  # noqa: F401,F403
from tfc.ops.normalization import *  # noqa: F401,F403
from tfc.ops.pool_argmax import *  # noqa: F401,F403
from tfc.ops.sampled_losses import *  # noqa: F401,F403
from tfc.ops.space_batch import depth_to_space, space_to_batch, space_to_depth  # noqa: F401
from tfc.ops.sparse_math import embedding_lookup_sparse, safe_embedding_lookup_sparse  # noqa: F401
from tfc.ops.topk import *  # noqa: F401,F403
from tfc.rnn import rnn_cell  # noqa: F401
from tfc.rnn.loops import *  # noqa: F401,F403
