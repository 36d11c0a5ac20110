"""`tf.nn.rnn_cell`: the cell classes and LSTMStateTuple."""

from tfc.rnn.cell import (  # noqa: F401
    BasicLSTMCell,
    BasicRNNCell,
    GRUCell,
    LayerRNNCell,
    LSTMCell,
    LSTMStateTuple,
    RNNCell,
)
from tfc.rnn.wrappers import DeviceWrapper, DropoutWrapper, MultiRNNCell, ResidualWrapper  # noqa: F401

__all__ = [
    "RNNCell",
    "LayerRNNCell",
    "LSTMStateTuple",
    "BasicRNNCell",
    "BasicLSTMCell",
    "LSTMCell",
    "GRUCell",
    "MultiRNNCell",
    "DropoutWrapper",
    "ResidualWrapper",
    "DeviceWrapper",
]
