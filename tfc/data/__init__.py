"""`tf.data`: input pipelines computed on whole NumPy arrays and fed to compiled programs."""

from tfc.data.dataset import Dataset
from tfc.data.iterator import (
    Iterator,
    get_output_shapes,
    get_output_types,
    make_initializable_iterator,
    make_one_shot_iterator,
)
from tfc.data.readers import FixedLengthRecordDataset, TextLineDataset, TFRecordDataset

# tf.data.AUTOTUNE (also tf.data.experimental.AUTOTUNE): what prefetch's buffer_size and
# map's num_parallel_calls accept to let the runtime choose; tfc computes elements on demand
AUTOTUNE = -1

__all__ = [
    "AUTOTUNE",
    "Dataset",
    "FixedLengthRecordDataset",
    "TFRecordDataset",
    "TextLineDataset",
    "Iterator",
    "get_output_shapes",
    "get_output_types",
    "make_initializable_iterator",
    "make_one_shot_iterator",
]
