"""(being written) tfc.ops.array"""

__all__: list[str] = []
