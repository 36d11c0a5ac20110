"""(being written) tfc.ops.random"""

__all__: list[str] = []
