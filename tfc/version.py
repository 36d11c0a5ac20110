"""The version of tfc (its own module, so generated code can name it without importing tfc)."""

__version__ = "0.1.0"
