"""`tf.logging`: TF1's logging module, on Python's `logging` under the logger name "tfc"."""

from __future__ import annotations

import logging as _logging
import sys
from typing import Any

__all__ = [
    "DEBUG",
    "INFO",
    "WARN",
    "ERROR",
    "FATAL",
    "set_verbosity",
    "get_verbosity",
    "debug",
    "info",
    "warning",
    "warn",
    "error",
    "fatal",
    "log",
]

DEBUG, INFO, WARN, ERROR, FATAL = (
    _logging.DEBUG,
    _logging.INFO,
    _logging.WARNING,
    _logging.ERROR,
    _logging.CRITICAL,
)

_logger = _logging.getLogger("tfc")
if not _logger.handlers:  # like TF1: messages go to stderr, WARN and above unless told otherwise
    _handler = _logging.StreamHandler(sys.stderr)
    _handler.setFormatter(_logging.Formatter("%(levelname)s:tfc:%(message)s"))
    _logger.addHandler(_handler)
    _logger.setLevel(WARN)
    _logger.propagate = False


def set_verbosity(level: int) -> None:
    _logger.setLevel(level)


def get_verbosity() -> int:
    return _logger.getEffectiveLevel()


def log(level: int, msg: str, *args: Any) -> None:
    _logger.log(level, msg, *args)


def debug(msg: str, *args: Any) -> None:
    _logger.debug(msg, *args)


def info(msg: str, *args: Any) -> None:
    _logger.info(msg, *args)


def warning(msg: str, *args: Any) -> None:
    _logger.warning(msg, *args)


warn = warning


def error(msg: str, *args: Any) -> None:
    _logger.error(msg, *args)


def fatal(msg: str, *args: Any) -> None:
    _logger.critical(msg, *args)


def get_logger() -> _logging.Logger:
    """`tf.get_logger`: the Python logger tfc's messages go through (tf.logging writes to it);
    TF's is named "tensorflow", tfc's "tfc"."""
    return _logger
