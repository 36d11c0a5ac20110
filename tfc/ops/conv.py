"""(being written) convolution and pooling ops."""

__all__: list[str] = []
