"""Code generation: a planned program graph lowered to kernel specs, rendered per target."""
