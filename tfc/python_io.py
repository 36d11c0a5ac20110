"""`tf.python_io`: writing and reading TFRecord files from Python (tfc/io/tfrecord.py)."""

from tfc.io.tfrecord import (
    TFRecordCompressionType,
    TFRecordOptions,
    TFRecordWriter,
    tf_record_iterator,
)

__all__ = ["TFRecordCompressionType", "TFRecordOptions", "TFRecordWriter", "tf_record_iterator"]
