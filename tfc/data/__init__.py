"""`tf.data`: input pipelines computed on whole NumPy arrays and fed to compiled programs."""

from tfc.data.dataset import Dataset
from tfc.data.iterator import (
    Iterator,
    get_output_shapes,
    get_output_types,
    make_initializable_iterator,
    make_one_shot_iterator,
)

__all__ = [
    "Dataset",
    "Iterator",
    "get_output_shapes",
    "get_output_types",
    "make_initializable_iterator",
    "make_one_shot_iterator",
]
