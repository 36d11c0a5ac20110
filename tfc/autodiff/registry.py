"""User-registered gradients: tf.RegisterGradient, NotDifferentiable, custom_gradient; their lookup.

tf.gradients consults these before an op's own rule.

An op built inside `graph.gradient_override_map({"Square": "MySquare"})` carries the attribute
`_gradient_op_type = "MySquare"`; its gradient is then the function registered under that name
(TF1's mechanism). Registering a name that already has a gradient (a user's, or a tfc op's own
rule) raises KeyError, as TF's registry does.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from tfc.ir.graph import Operation
from tfc.ops.registry import NAMED_GRADIENTS, REGISTRY

__all__ = [
    "RegisterGradient",
    "NotDifferentiable",
    "NoGradient",
    "no_gradient",
    "custom_gradient",
    "grad_pass_through",
    "recompute_grad",
]

_NOT_DIFFERENTIABLE = object()
_REGISTERED: dict[str, Any] = {}  # name -> function, or _NOT_DIFFERENTIABLE


def _register(name: str, value: Any) -> None:
    if not isinstance(name, str):
        raise TypeError(f"op_type must be a string, got {name!r}")
    opdef = REGISTRY.get(name)
    taken = opdef is not None and (opdef.grad or not opdef.differentiable)
    if name in _REGISTERED or name in NAMED_GRADIENTS or taken:
        raise KeyError(f"Registering two gradient with name '{name}'!")
    _REGISTERED[name] = value


class RegisterGradient:
    """`@tf.RegisterGradient("Name")`: the decorated `fn(op, *grads)` is the gradient of ops
    of type Name, or of ops mapped to Name by `graph.gradient_override_map`."""

    def __init__(self, op_type: str) -> None:
        if not isinstance(op_type, str):
            raise TypeError("op_type must be a string")
        self._op_type = op_type

    def __call__(self, fn: Callable) -> Callable:
        _register(self._op_type, fn)
        return fn


def NotDifferentiable(op_type: str) -> None:  # noqa: N802
    """`tf.NotDifferentiable`: ops of `op_type` pass no gradient (tf.gradients skips them)."""
    _register(op_type, _NOT_DIFFERENTIABLE)


NoGradient = NotDifferentiable
no_gradient = NotDifferentiable


def registered_rule(op: Operation) -> tuple[bool, Callable | None]:
    """(found, rule) for `op` from the user's registrations: the rule of its gradient override
    or its type (None: not differentiable). An override naming no registration is a
    LookupError, as in TF."""
    override = op.node_def.attr.get("_gradient_op_type")
    name = override or op.type
    if name in _REGISTERED:
        value = _REGISTERED[name]
        return True, None if value is _NOT_DIFFERENTIABLE else _normalized(value)
    if override is not None and override in NAMED_GRADIENTS:
        return True, _normalized(NAMED_GRADIENTS[override])
    if override is not None:
        raise LookupError(f"No gradient defined for operation '{op.name}' (op type: {override})")
    return False, None


def _normalized(fn: Callable) -> Callable:
    """A user's function may return one tensor for a one-input op (TF accepts that)."""

    def rule(op: Operation, *dys: Any) -> list:
        result = fn(op, *dys)
        return list(result) if isinstance(result, (list, tuple)) else [result]

    return rule


_custom_gradients = itertools.count()


def custom_gradient(f: Callable) -> Callable:
    """`@tf.custom_gradient`: `f(*args)` returns (result, grad_fn); the result's gradient with
    respect to the args is grad_fn(*result_grads), one gradient per arg, instead of what
    differentiating f's ops would give. As in TF1's graph mode, the result and args pass through
    one IdentityN op whose gradient is overridden by a function registered for this call."""
    from tfc.ops.array_shape import identity_n
    from tfc.ops.constant import convert_to_tensor

    def decorated(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise ValueError("The custom_gradient decorator only supports positional arguments")
        name = f"CustomGradient-{next(_custom_gradients)}"
        tensors = [convert_to_tensor(a) for a in args]
        result, grad_fn = f(*tensors)
        flat = list(result) if isinstance(result, (list, tuple)) else [result]
        flat = [convert_to_tensor(r) for r in flat]

        def rule(op: Operation, *grads: Any) -> list:
            input_grads = grad_fn(*grads[: len(flat)])
            input_grads = (
                list(input_grads) if isinstance(input_grads, (list, tuple)) else [input_grads]
            )
            if len(input_grads) != len(tensors):
                raise ValueError(
                    f"custom_gradient function expected to return {len(tensors)} gradients, "
                    f"but returned {len(input_grads)} instead."
                )
            return [None] * len(flat) + input_grads

        RegisterGradient(name)(rule)
        graph = (flat + tensors)[0].graph
        with graph.gradient_override_map({"IdentityN": name}):
            outputs = identity_n(flat + tensors)
        out = outputs[: len(flat)]
        return type(result)(out) if isinstance(result, (list, tuple)) else out[0]

    decorated.__name__ = getattr(f, "__name__", "custom_gradient")
    decorated.__doc__ = f.__doc__
    return decorated


def grad_pass_through(f: Callable) -> Callable:
    """`tf.grad_pass_through`: f's value, with the gradient of its result handed to its
    arguments unchanged (a straight-through estimator: the gradient of an identity), e.g.
    around an assignment or a rounding step that has no useful derivative. f takes as many
    tensors as it returns."""

    @custom_gradient
    def passed_through(*args: Any) -> Any:
        def grad(*grads: Any) -> Any:
            return grads if len(grads) > 1 else grads[0]

        return f(*args), grad

    passed_through.__name__ = getattr(f, "__name__", "grad_pass_through")
    passed_through.__doc__ = f.__doc__
    return passed_through


def recompute_grad(f: Callable) -> Callable:
    """`tf.recompute_grad`: f, whose forward values TF recomputes in the backward pass instead
    of keeping them, to save memory. The gradients are those of f either way, which is what
    tfc computes: it differentiates f's ops as they are, and its memory planner decides at
    compile time which forward values stay alive (nothing is recomputed)."""

    def recomputed(*args: Any, **kwargs: Any) -> Any:
        return f(*args, **kwargs)

    recomputed.__name__ = getattr(f, "__name__", "recompute_grad")
    recomputed.__doc__ = f.__doc__
    return recomputed
