"""`tf.train.summary_iterator`: the Events of an event file (tfc/io/event_file.py)."""

from tfc.io.event_file import summary_iterator

__all__ = ["summary_iterator"]
