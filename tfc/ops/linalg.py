"""(being written) tfc.ops.linalg"""

__all__: list[str] = []
