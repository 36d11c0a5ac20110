"""`tf.data`: input pipelines (being written)."""

__all__: list[str] = []
