"""`tf.contrib.rnn`: TF1's contrib names for the recurrent cells and functions of tf.nn."""

from tfc.rnn.cell import (  # noqa: F401
    BasicLSTMCell,
    BasicRNNCell,
    GRUCell,
    LayerRNNCell,
    LSTMCell,
    LSTMStateTuple,
    RNNCell,
)
from tfc.rnn.loops import static_bidirectional_rnn, static_rnn, static_state_saving_rnn  # noqa: F401
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
    "static_rnn",
    "static_bidirectional_rnn",
    "static_state_saving_rnn",
]


def __getattr__(name: str) -> object:
    raise AttributeError(
        f"tf.contrib.rnn.{name} is not part of tfc: tf.contrib.rnn holds the cells and "
        "functions of tf.nn.rnn_cell and tf.nn (the fused and experimental cells of TF1's "
        "contrib are not provided)"
    )
