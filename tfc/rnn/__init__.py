"""Recurrent networks: TF1's cells (`tf.nn.rnn_cell`) and the functions that run them over
sequences (`tf.nn.static_rnn`, `tf.nn.dynamic_rnn`, the bidirectional forms)."""

from tfc.rnn import rnn_cell
from tfc.rnn.cell import *  # noqa: F403
from tfc.rnn.cell import __all__ as _cell_names
from tfc.rnn.loops import *  # noqa: F403
from tfc.rnn.loops import __all__ as _loop_names
from tfc.rnn.wrappers import *  # noqa: F403
from tfc.rnn.wrappers import __all__ as _wrapper_names

__all__ = ["rnn_cell", *_cell_names, *_wrapper_names, *_loop_names]
