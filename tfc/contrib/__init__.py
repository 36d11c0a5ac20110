"""`tf.contrib`: the few contrib names TF1 programs use most, as thin aliases onto tfc's own API.

Only `tf.contrib.layers`, `tf.contrib.framework` and `tf.contrib.rnn` exist; any other
`tf.contrib.X` raises an AttributeError that says so, rather than failing later in an
unrelated place.
"""

from __future__ import annotations

from tfc.contrib import framework, layers, rnn

__all__ = ["framework", "layers", "rnn"]


def __getattr__(name: str) -> object:
    raise AttributeError(
        f"tf.contrib.{name} is not part of tfc: only tf.contrib.layers, "
        "tf.contrib.framework and tf.contrib.rnn are provided (TF1's contrib was removed in "
        "TF2; use the core API)"
    )
