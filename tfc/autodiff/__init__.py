"""Automatic differentiation: tf.gradients builds gradient ops from each op's rule."""
