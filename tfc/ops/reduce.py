"""(being written) tfc.ops.reduce"""

__all__: list[str] = []
