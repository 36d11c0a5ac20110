"""`tf.contrib.rnn`: TF1's contrib names for the recurrent cells and functions of tf.nn."""

from tfc.rnn import rnn_cell as _rnn_cell
from tfc.rnn.loops import static_bidirectional_rnn, static_rnn, static_state_saving_rnn  # noqa: F401
from tfc.rnn.rnn_cell import *  # noqa: F403 - the cells, as tf.nn.rnn_cell has them

__all__ = [*_rnn_cell.__all__, "static_rnn", "static_bidirectional_rnn", "static_state_saving_rnn"]


def __getattr__(name: str) -> object:
    raise AttributeError(
        f"tf.contrib.rnn.{name} is not part of tfc: tf.contrib.rnn holds the cells and "
        "functions of tf.nn.rnn_cell and tf.nn (the fused and experimental cells of TF1's "
        "contrib are not provided)"
    )
