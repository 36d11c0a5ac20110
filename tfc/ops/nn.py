"""(being written) tfc.ops.nn"""

__all__: list[str] = []
