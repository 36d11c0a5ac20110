"""`tf.contrib.framework`: its global-step functions, which moved to `tf.train` in TF1, and
arg_scope, which sets default arguments of the contrib.layers functions for a block."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

from tfc.train.training_util import (
    assert_global_step,
    create_global_step,
    get_global_step,
    get_or_create_global_step,
)

__all__ = [
    "add_arg_scope",
    "arg_scope",
    "current_arg_scope",
    "has_arg_scope",
    "assert_global_step",
    "create_global_step",
    "get_global_step",
    "get_or_create_global_step",
]


# the stack of arg scopes: each maps a decorated function's key to its default arguments
_ARG_STACK: list[dict[str, dict[str, Any]]] = [{}]
_DECORATED: set[str] = set()


def _key(func: Any) -> str:
    return getattr(func, "_arg_scope_key", f"{func.__module__}.{func.__name__}")


def add_arg_scope(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate `func` so that arg_scope can set its default arguments; arguments given in a
    call still win."""
    key = _key(func)

    @functools.wraps(func)
    def scoped(*args: Any, **kwargs: Any) -> Any:
        defaults = _ARG_STACK[-1].get(key)
        return func(*args, **({**defaults, **kwargs} if defaults else kwargs))

    scoped._arg_scope_key = key  # type: ignore[attr-defined]
    _DECORATED.add(key)
    return scoped


def has_arg_scope(func: Any) -> bool:
    """Whether `func` was decorated with add_arg_scope."""
    return _key(func) in _DECORATED


def current_arg_scope() -> dict[str, dict[str, Any]]:
    """The innermost arg scope (a dict that arg_scope accepts to re-enter it)."""
    return _ARG_STACK[-1]


@contextlib.contextmanager
def arg_scope(list_ops_or_scope: Any, **kwargs: Any) -> Iterator[dict[str, dict[str, Any]]]:
    """`tf.contrib.framework.arg_scope`: within the block, each function of
    `list_ops_or_scope` (decorated with add_arg_scope) gets `kwargs` as defaults, on top of
    the enclosing scopes' defaults; a dict yielded by an earlier arg_scope re-enters it."""
    if isinstance(list_ops_or_scope, dict):
        if kwargs:
            raise ValueError(
                "When attempting to re-use a scope by suppling a dictionary, kwargs must be empty."
            )
        current = dict(list_ops_or_scope)
    else:
        if not isinstance(list_ops_or_scope, (list, tuple)):
            raise TypeError(
                "list_ops_or_scope must either be a list/tuple or reused scope (i.e. dict)"
            )
        current = dict(_ARG_STACK[-1])
        for op in list_ops_or_scope:
            if not has_arg_scope(op):
                raise ValueError(f"{_key(op)} is not decorated with @add_arg_scope")
            key = _key(op)
            current[key] = {**current.get(key, {}), **kwargs}
    _ARG_STACK.append(current)
    try:
        yield current
    finally:
        _ARG_STACK.pop()


def __getattr__(name: str) -> object:
    raise AttributeError(
        f"tf.contrib.framework.{name} is not part of tfc: it provides {', '.join(__all__)}"
    )
