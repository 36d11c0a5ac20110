"""The graph IR: graphs, tensors and operations, dtypes, shapes, devices, errors."""
