"""`tf.queue`: TF1's queue classes under their tf.queue names (also top-level: tf.FIFOQueue...)."""

from tfc.ops.queues import FIFOQueue, PaddingFIFOQueue, PriorityQueue, QueueBase, RandomShuffleQueue

__all__ = ["FIFOQueue", "PaddingFIFOQueue", "PriorityQueue", "QueueBase", "RandomShuffleQueue"]
