"""The optimizers' sparse update ops (SparseApplyAdagrad, SparseApplyMomentum, ...): the rows
of a variable and its slots at `indices` updated in place by the rule of the dense Apply op,
the other rows left as they are (TF1's sparse semantics, for an IndexedSlices gradient).

Inputs are TF's: the dense op's, with `grad` holding one row per index ([n, *var.shape[1:]])
and `indices` [n] after it. Two differences from TF's kernels, both what TF1's optimizers do
around them: the gradient rows of one index are summed before that row is updated once (TF's
optimizers deduplicate first), and a negative index is skipped (tfc/ops/indexed_slices.py). An
index past the variable's rows fails the run, naming the op. The kernel keeps, in scratch
memory, an int32 per row of the variable (where each index first occurs) and the summed rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import Tensor
from tfc.ir.tensor_shape import shape_str
from tfc.ops.constant import convert_to_tensor
from tfc.ops.kernels import Kernel, Param, ScanSpec, c_literal, math_suffix
from tfc.ops.registry import OpContext, OpDef, apply_op, register
from tfc.ops.state import variable_ref
from tfc.ops.training_ops import UPDATE_SPECS

__all__ = [
    "sparse_apply_momentum",
    "sparse_apply_adagrad",
    "sparse_apply_rms_prop",
    "sparse_apply_centered_rms_prop",
    "sparse_apply_adadelta",
    "sparse_apply_proximal_gradient_descent",
    "sparse_apply_proximal_adagrad",
    "sparse_apply_ftrl",
    "sparse_apply_ftrl_v2",
    "sparse_apply_adagrad_da",
]

_FLOATS = (_dt.float32, _dt.float64)
_ALIGN = 64


class _SparseSpec:
    """One SparseApply op made from its dense Apply op's declaration."""

    def __init__(self, dense_type: str) -> None:
        inputs, update, statements, defaults = UPDATE_SPECS[dense_type]
        self.type = "Sparse" + dense_type
        named = list(inputs)
        dense = next(i for i, (_, kind) in enumerate(named) if kind == "dense")
        self.inputs = (*named[: dense + 1], ("indices", "index"), *named[dense + 1 :])
        self.grad_name = named[dense][0]
        self.update: Callable[[dict, dict], dict] = update
        self.statements: Callable[[dict], list[str]] = statements
        self.defaults = dict(defaults)

    @property
    def names(self) -> list[str]:
        return [n for n, _ in self.inputs]

    @property
    def refs(self) -> list[int]:
        return [i for i, (_, kind) in enumerate(self.inputs) if kind == "ref"]

    def index(self, kind: str) -> int:
        return next(i for i, (_, k) in enumerate(self.inputs) if k == kind)


def _infer(spec: _SparseSpec) -> Callable[[OpContext], list]:
    def infer(ctx: OpContext) -> list:
        dtype, shape = ctx.in_dtypes[0], ctx.in_shapes[0]
        if dtype not in _FLOATS:
            raise TypeError(
                f"Value passed to parameter 'var' has DataType {dtype.name} not in list of "
                f"allowed values: float32, float64 (op '{ctx.name}')"
            )
        if shape is not None and len(shape) == 0:
            raise ctx.error("var must be at least 1 dimensional")
        indices = ctx.in_shapes[spec.index("index")]
        grad = ctx.in_shapes[spec.index("dense")]
        for (name, kind), in_dtype, in_shape in zip(spec.inputs, ctx.in_dtypes, ctx.in_shapes):
            want = _dt.int64 if kind == "step" else dtype
            if kind == "index":
                if in_dtype not in (_dt.int32, _dt.int64):
                    raise TypeError(f"indices of '{ctx.name}' must be int32 or int64, got "
                                    f"{in_dtype.name}")  # fmt: skip
                if in_shape is not None and len(in_shape) != 1:
                    raise ctx.error(f"indices must be one-dimensional, got {shape_str(in_shape)}")
                continue
            if in_dtype != want:
                raise TypeError(f"Input '{name}' of '{ctx.type}' Op has type {in_dtype.name} "
                                f"that does not match {want.name}")  # fmt: skip
            if kind in ("scalar", "step") and in_shape is not None and len(in_shape) != 0:
                raise ctx.error(f"{name} is not a scalar: {shape_str(in_shape)}")
            if kind == "ref" and shape is not None and in_shape is not None:
                if tuple(in_shape) != tuple(shape):
                    raise ctx.error(f"var and {name} do not have the same shape: "
                                    f"{shape_str(shape)} {shape_str(in_shape)}")  # fmt: skip
        if grad is not None and shape is not None:
            if len(grad) != len(shape) or any(
                a is not None and b is not None and a != b for a, b in zip(grad[1:], shape[1:])
            ):
                raise ctx.error(f"var and grad do not match in dimensions past the first: "
                                f"{shape_str(shape)} {shape_str(grad)}")  # fmt: skip
        if grad is not None and indices is not None and None not in (grad[0], indices[0]):
            if grad[0] != indices[0]:
                raise ctx.error(f"grad must be the same size as indices in the first "
                                f"dimension: {shape_str(grad)} {shape_str(indices)}")  # fmt: skip
        return [(dtype, shape)]

    return infer


def _reference(spec: _SparseSpec) -> Callable[..., np.ndarray]:
    def reference(ctx: OpContext, *args: np.ndarray) -> np.ndarray:
        named = dict(zip(spec.names, args))
        indices = np.asarray(named.pop("indices")).astype(np.int64)
        rows = ctx.in_shapes[0][0]
        bad = np.flatnonzero(indices >= rows)
        if bad.size:
            i = int(bad[0])
            raise errors.InvalidArgumentError(
                None, None, f"indices[{i}] = {int(indices[i])} is not in [0, {rows})"
            )
        grad = np.asarray(named[spec.grad_name])
        unique = list(dict.fromkeys(int(k) for k in indices if k >= 0))
        summed = np.zeros((len(unique), *grad.shape[1:]), grad.dtype)
        for position, k in enumerate(indices):
            if k >= 0:
                summed[unique.index(int(k))] += grad[position]
        dtype = ctx.in_dtypes[0].np
        refs = {spec.names[i]: np.array(named[spec.names[i]], dtype=dtype) for i in spec.refs}
        if unique:
            picked = {n: v[unique] for n, v in refs.items()}
            with np.errstate(all="ignore"):
                new = spec.update({**named, **picked, spec.grad_name: summed},
                                  {**spec.defaults, **ctx.attrs})  # fmt: skip
            for n in refs:
                refs[n][unique] = np.asarray(new[n], dtype=dtype)
        out = None
        for k, i in enumerate(spec.refs):
            buf = ctx.state.assign(ctx.ref_names[k], refs[spec.names[i]])
            out = buf if out is None else out
        return out

    return reference


def _scratch_layout(ctx: OpContext, spec: _SparseSpec) -> tuple[int, int]:
    """(offset of the summed rows, total bytes): an int32 per variable row, then the rows."""
    shape = ctx.in_shapes[0]
    count = ctx.in_shapes[spec.index("index")][0]
    offset = -(-4 * shape[0] // _ALIGN) * _ALIGN
    return offset, offset + count * math.prod(shape[1:]) * ctx.in_dtypes[0].size


def _lower(spec: _SparseSpec) -> Callable[[OpContext], list]:
    def lower(ctx: OpContext) -> list:
        dtype, shape = ctx.out_dtypes[0], ctx.out_shapes[0]
        count = ctx.in_shapes[spec.index("index")][0]
        inner = math.prod(shape[1:])
        if count == 0 or inner == 0:
            return []
        params = []
        names: dict[str, str] = {}
        loads = []
        for i, (name, kind) in enumerate(spec.inputs):
            if kind == "ref":
                params.append(Param(f"r{len(names)}", dtype.c_type, False, f"in{i}"))
                names[name] = f"r{len(names)}[o]"
            elif kind in ("scalar", "step"):
                params.append(Param(f"x{i}", ctx.in_dtypes[i].c_type, True, f"in{i}"))
                loads.append(f"const {dtype.c_type} {name} = ({dtype.c_type})x{i}[0];")
        g = spec.index("dense")
        params += [
            Param("g", dtype.c_type, True, f"in{g}"),
            Param("idx", ctx.in_dtypes[spec.index("index")].c_type, True,
                  f"in{spec.index('index')}"),
            Param("scratch", "unsigned char", False, "scratch"),
        ]  # fmt: skip
        fmt = {"T": dtype.c_type, "one": c_literal(1, dtype), "sfx": math_suffix(dtype)}
        attrs = {**spec.defaults, **ctx.attrs}
        body = [s.format(**names, **fmt) for s in spec.statements(attrs)]
        offset, _ = _scratch_layout(ctx, spec)
        values = {
            "rows": c_literal(shape[0], _dt.int64),
            "inner": c_literal(inner, _dt.int64),
            "sum_offset": offset,
            "loads": loads,
            "grad_name": spec.grad_name,
            "statements": body,
            "index_ctype": ctx.in_dtypes[spec.index("index")].c_type,
        }
        return [Kernel("sparse_apply", params, ScanSpec(dtype, count, values), can_fail=True)]

    return lower


def _register(spec: _SparseSpec) -> None:
    register(
        OpDef(
            spec.type,
            infer=_infer(spec),
            reference=_reference(spec),
            lower=_lower(spec),
            flops=lambda c: 4 * math.prod(c.in_shapes[spec.index("dense")]),
            scratch=lambda c: _scratch_layout(c, spec)[1],
            stateful=True,
            ref_inputs=tuple(spec.refs),
            reads_ref=True,
            alias=0,
            differentiable=False,
            input_names=tuple(spec.names),
        )
    )


SPARSE_SPECS = {
    spec.type: spec
    for spec in (
        _SparseSpec(t)
        for t in (
            "ApplyMomentum",
            "ApplyAdagrad",
            "ApplyRMSProp",
            "ApplyCenteredRMSProp",
            "ApplyAdadelta",
            "ApplyProximalGradientDescent",
            "ApplyProximalAdagrad",
            "ApplyFtrl",
            "ApplyFtrlV2",
            "ApplyAdagradDA",
        )  # fmt: skip
    )
}
for _spec in SPARSE_SPECS.values():
    _register(_spec)


# -- frontends (TF's training_ops.sparse_apply_*) -------------------------------------------------
def _sparse_apply(op_type: str, args: list, attrs: dict, name: str | None) -> Tensor:
    spec = SPARSE_SPECS[op_type]
    var = variable_ref(args[0], op_type)
    tensors = []
    for (arg_name, kind), arg in zip(spec.inputs, args):
        if kind == "ref":
            tensors.append(variable_ref(arg, f"{op_type} (input '{arg_name}')"))
        elif kind == "index" or isinstance(arg, Tensor) or hasattr(arg, "_as_tensor"):
            tensors.append(convert_to_tensor(arg, name=arg_name if kind == "index" else None))
        else:
            dtype = _dt.int64 if kind == "step" else var.dtype
            tensors.append(convert_to_tensor(arg, dtype=dtype, name=arg_name))
    return apply_op(op_type, tensors, attrs, name=name or op_type).outputs[0]


def sparse_apply_momentum(var: Any, accum: Any, lr: Any, grad: Any, indices: Any, momentum: Any,
                          use_locking: bool = False, use_nesterov: bool = False,
                          name: str | None = None) -> Tensor:  # fmt: skip
    """ApplyMomentum's rule on the rows at `indices` (grad: one row per index)."""
    args = [var, accum, lr, grad, indices, momentum]
    return _sparse_apply("SparseApplyMomentum", args, {"use_nesterov": bool(use_nesterov)}, name)


def sparse_apply_adagrad(var: Any, accum: Any, lr: Any, grad: Any, indices: Any,
                         use_locking: bool = False, update_slots: bool = True,
                         name: str | None = None) -> Tensor:  # fmt: skip
    """ApplyAdagrad's rule on the rows at `indices`."""
    args = [var, accum, lr, grad, indices]
    return _sparse_apply("SparseApplyAdagrad", args, {"update_slots": bool(update_slots)}, name)


def sparse_apply_rms_prop(var: Any, ms: Any, mom: Any, lr: Any, rho: Any, momentum: Any,
                          epsilon: Any, grad: Any, indices: Any, use_locking: bool = False,
                          name: str | None = None) -> Tensor:  # fmt: skip
    """ApplyRMSProp's rule on the rows at `indices`."""
    args = [var, ms, mom, lr, rho, momentum, epsilon, grad, indices]
    return _sparse_apply("SparseApplyRMSProp", args, {}, name)


def sparse_apply_centered_rms_prop(var: Any, mg: Any, ms: Any, mom: Any, lr: Any, rho: Any,
                                   momentum: Any, epsilon: Any, grad: Any, indices: Any,
                                   use_locking: bool = False,
                                   name: str | None = None) -> Tensor:  # fmt: skip
    """ApplyCenteredRMSProp's rule on the rows at `indices`."""
    args = [var, mg, ms, mom, lr, rho, momentum, epsilon, grad, indices]
    return _sparse_apply("SparseApplyCenteredRMSProp", args, {}, name)


def sparse_apply_adadelta(var: Any, accum: Any, accum_update: Any, lr: Any, rho: Any,
                          epsilon: Any, grad: Any, indices: Any, use_locking: bool = False,
                          name: str | None = None) -> Tensor:  # fmt: skip
    """ApplyAdadelta's rule on the rows at `indices`."""
    args = [var, accum, accum_update, lr, rho, epsilon, grad, indices]
    return _sparse_apply("SparseApplyAdadelta", args, {}, name)


def sparse_apply_proximal_gradient_descent(var: Any, alpha: Any, l1: Any, l2: Any, grad: Any,
                                           indices: Any, use_locking: bool = False,
                                           name: str | None = None) -> Tensor:  # fmt: skip
    """ApplyProximalGradientDescent's rule on the rows at `indices`."""
    args = [var, alpha, l1, l2, grad, indices]
    return _sparse_apply("SparseApplyProximalGradientDescent", args, {}, name)


def sparse_apply_proximal_adagrad(var: Any, accum: Any, lr: Any, l1: Any, l2: Any, grad: Any,
                                  indices: Any, use_locking: bool = False,
                                  name: str | None = None) -> Tensor:  # fmt: skip
    """ApplyProximalAdagrad's rule on the rows at `indices`."""
    args = [var, accum, lr, l1, l2, grad, indices]
    return _sparse_apply("SparseApplyProximalAdagrad", args, {}, name)


def sparse_apply_ftrl(var: Any, accum: Any, linear: Any, grad: Any, indices: Any, lr: Any,
                      l1: Any, l2: Any, lr_power: Any, use_locking: bool = False,
                      name: str | None = None) -> Tensor:  # fmt: skip
    """ApplyFtrl's rule on the rows at `indices`."""
    args = [var, accum, linear, grad, indices, lr, l1, l2, lr_power]
    return _sparse_apply("SparseApplyFtrl", args, {}, name)


def sparse_apply_ftrl_v2(var: Any, accum: Any, linear: Any, grad: Any, indices: Any, lr: Any,
                         l1: Any, l2: Any, l2_shrinkage: Any, lr_power: Any,
                         use_locking: bool = False, name: str | None = None) -> Tensor:  # fmt: skip
    """ApplyFtrlV2's rule on the rows at `indices`."""
    args = [var, accum, linear, grad, indices, lr, l1, l2, l2_shrinkage, lr_power]
    return _sparse_apply("SparseApplyFtrlV2", args, {}, name)


def sparse_apply_adagrad_da(var: Any, gradient_accumulator: Any,
                            gradient_squared_accumulator: Any, grad: Any, indices: Any, lr: Any,
                            l1: Any, l2: Any, global_step: Any, use_locking: bool = False,
                            name: str | None = None) -> Tensor:  # fmt: skip
    """ApplyAdagradDA's rule on the rows at `indices`."""
    args = [var, gradient_accumulator, gradient_squared_accumulator, grad, indices, lr, l1, l2,
            global_step]  # fmt: skip
    return _sparse_apply("SparseApplyAdagradDA", args, {}, name)
