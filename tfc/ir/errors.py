"""`tf.errors`: the run-time error classes of TensorFlow, raised by Session.run."""

from __future__ import annotations

from typing import Any

OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15


class OpError(Exception):
    """An error raised while running a graph; names the op it came from when known."""

    error_code = UNKNOWN

    def __init__(self, node_def: Any, op: Any, message: str, *args: Any) -> None:
        super().__init__(message)
        self.node_def = node_def
        self.op = op
        self.message = message

    def __str__(self) -> str:
        if self.op is not None:
            return f"{self.message}\n\t [[node {self.op.name}]]"
        return self.message


def _subclass(name: str, code: int) -> type:
    return type(name, (OpError,), {"error_code": code, "__module__": __name__})


CancelledError = _subclass("CancelledError", CANCELLED)
UnknownError = _subclass("UnknownError", UNKNOWN)
InvalidArgumentError = _subclass("InvalidArgumentError", INVALID_ARGUMENT)
DeadlineExceededError = _subclass("DeadlineExceededError", DEADLINE_EXCEEDED)
NotFoundError = _subclass("NotFoundError", NOT_FOUND)
AlreadyExistsError = _subclass("AlreadyExistsError", ALREADY_EXISTS)
PermissionDeniedError = _subclass("PermissionDeniedError", PERMISSION_DENIED)
ResourceExhaustedError = _subclass("ResourceExhaustedError", RESOURCE_EXHAUSTED)
FailedPreconditionError = _subclass("FailedPreconditionError", FAILED_PRECONDITION)
AbortedError = _subclass("AbortedError", ABORTED)
OutOfRangeError = _subclass("OutOfRangeError", OUT_OF_RANGE)
UnimplementedError = _subclass("UnimplementedError", UNIMPLEMENTED)
InternalError = _subclass("InternalError", INTERNAL)
UnavailableError = _subclass("UnavailableError", UNAVAILABLE)
DataLossError = _subclass("DataLossError", DATA_LOSS)

_BY_CODE = {cls.error_code: cls for cls in OpError.__subclasses__()}


def error_for_code(code: int) -> type:
    """The OpError subclass for a status code returned by generated code (TFC_ERR_* values)."""
    return _BY_CODE.get(code, UnknownError)
