"""Optimizers' update ops (ApplyAdam, ...): a variable and its slots updated in place, as TF's.

Each op follows TensorFlow's kernel (training_ops.cc) statement by statement, in the variable's
dtype, so float32 updates are computed in float as TF computes them. Hyper-parameters are
scalar inputs (rank 0, read broadcast); `grad` has the variable's shape. One declaration per
op gives the NumPy reference and the C statements of one fused loop (`kernels.update_kernel`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor
from tfc.ir.tensor_shape import merge_shapes, shape_str
from tfc.ops.constant import convert_to_tensor
from tfc.ops.flops import elements, expression_ops
from tfc.ops.kernels import c_literal, math_suffix, update_kernel, view
from tfc.ops.registry import OpContext, OpDef, apply_op, get_opdef, register
from tfc.ops.state import variable_ref

__all__ = [
    "apply_gradient_descent",
    "apply_momentum",
    "apply_adagrad",
    "apply_rms_prop",
    "apply_centered_rms_prop",
    "apply_adam",
    "apply_adadelta",
    "apply_proximal_gradient_descent",
    "apply_proximal_adagrad",
    "apply_ftrl",
    "apply_ftrl_v2",
    "apply_adagrad_da",
]

_FLOATS = (_dt.float32, _dt.float64)


@dataclass(frozen=True)
class _ApplySpec:
    """One Apply op: its inputs in TF's order, each "ref" (updated), "scalar" or "dense"."""

    type: str
    inputs: tuple[tuple[str, str], ...]
    update: Callable[[dict, dict], dict]  # (named inputs, attrs) -> new values of the refs
    statements: Callable[[dict], list[str]]  # attrs -> C statements over the input names
    defaults: tuple[tuple[str, Any], ...] = ()  # attributes and their values when not given

    def attrs(self, given: dict) -> dict:
        return {**dict(self.defaults), **given}

    @property
    def names(self) -> list[str]:
        return [n for n, _ in self.inputs]

    @property
    def refs(self) -> list[int]:
        return [i for i, (_, kind) in enumerate(self.inputs) if kind == "ref"]


def _infer(spec: _ApplySpec) -> Callable[[OpContext], list]:
    def infer(ctx: OpContext) -> list:
        dtype, shape = ctx.in_dtypes[0], ctx.in_shapes[0]
        if dtype not in _FLOATS:
            raise TypeError(
                f"Value passed to parameter 'var' has DataType {dtype.name} not in list of "
                f"allowed values: float32, float64 (op '{ctx.name}' of type {ctx.type})"
            )
        for (name, kind), in_dtype, in_shape in zip(spec.inputs, ctx.in_dtypes, ctx.in_shapes):
            if kind == "step" and in_dtype != _dt.int64:
                raise TypeError(
                    f"Input '{name}' of '{ctx.type}' Op has type {in_dtype.name} that does not "
                    "match expected type of int64."
                )
            if kind != "step" and in_dtype != dtype:
                raise TypeError(
                    f"Input '{name}' of '{ctx.type}' Op has type {in_dtype.name} that does not "
                    f"match type {dtype.name} of argument 'var'."
                )
            if kind in ("scalar", "step") and in_shape is not None and len(in_shape) != 0:
                raise ctx.error(
                    f"Shape must be rank 0 but is rank {len(in_shape)} for input '{name}'"
                )
            if kind in ("ref", "dense"):
                merged = merge_shapes(shape, in_shape)
                if merged is False:
                    raise ctx.error(
                        f"Shapes must be equal, but '{name}' has shape {shape_str(in_shape)} "
                        f"and 'var' {shape_str(shape)}"
                    )
                shape = merged
        refs = [tuple(ctx.inputs[i]) for i in spec.refs if i < len(ctx.inputs)]
        if len(set(refs)) != len(refs):
            names = ", ".join(f"'{spec.names[i]}'" for i in spec.refs)
            raise ValueError(f"{ctx.type} '{ctx.name}' needs distinct variables for {names}")
        return [(dtype, shape)]

    return infer


def _reference(spec: _ApplySpec) -> Callable[..., np.ndarray]:
    def reference(ctx: OpContext, *args: np.ndarray) -> np.ndarray:
        named = dict(zip(spec.names, args))
        # every new value is computed before any write: a gradient may alias its variable
        with np.errstate(all="ignore"):
            new = spec.update(named, spec.attrs(ctx.attrs))
        dtype = ctx.in_dtypes[0].np
        out = None
        for k, i in enumerate(spec.refs):
            value = np.asarray(new[spec.names[i]], dtype=dtype)
            buf = ctx.state.assign(ctx.ref_names[k], value)
            out = buf if out is None else out
        return out

    return reference


def _lower(spec: _ApplySpec) -> Callable[[OpContext], list]:
    def lower(ctx: OpContext) -> list:
        dtype, shape = ctx.out_dtypes[0], ctx.out_shapes[0]
        for (name, kind), in_shape in zip(spec.inputs, ctx.in_shapes):
            if kind in ("ref", "dense") and tuple(in_shape) != tuple(shape):
                raise ValueError(
                    f"'{ctx.name}' ({ctx.type}) got '{name}' of shape {shape_str(in_shape)} for "
                    f"a variable of shape {shape_str(shape)}"
                )
        roots = [_buffer_root(ctx, i) for i in range(len(spec.inputs))]
        ref_of_root = {roots[i]: k for k, i in enumerate(spec.refs)}
        refs, ins, loads, names = [], [], [], {}
        for i, (name, kind) in enumerate(spec.inputs):
            if kind == "ref":
                names[name] = f"{{r{len(refs)}}}"
                refs.append(view(f"in{i}", dtype, shape))
                continue
            # every read-only input is loaded first: it may be a variable this op updates (a
            # gradient that is the variable itself), read through that ref's pointer then
            k = ref_of_root.get(roots[i])
            source = f"{{{len(ins)}}}" if k is None else f"{{r{k}}}"
            loads.append(f"const {dtype.c_type} {name} = {source};")
            if k is None:
                ins.append(view(f"in{i}", ctx.in_dtypes[i], ctx.in_shapes[i], shape))
            names[name] = name
        fmt = {"T": dtype.c_type, "one": c_literal(1, dtype), "sfx": math_suffix(dtype)}
        body = [s.format(**names, **fmt) for s in spec.statements(spec.attrs(ctx.attrs))]
        return update_kernel(shape, refs, ins, loads + body)

    return lower


def _buffer_root(ctx: OpContext, i: int) -> tuple[str, int]:
    """The tensor owning input i's buffer: aliasing ops (Identity, Reshape...) followed back."""
    tensor = tuple(ctx.inputs[i])
    while True:
        alias = get_opdef(ctx.graph.op_type(tensor[0])).alias
        if alias is None or tensor[1] != 0:
            return tensor
        tensor = tuple(ctx.graph.input_edges(tensor[0])[alias])


def _register(spec: _ApplySpec) -> None:
    register(
        OpDef(
            spec.type,
            infer=_infer(spec),
            reference=_reference(spec),
            lower=_lower(spec),
            # the operations of the C statements of its loop, per element of the variable
            flops=lambda c: (
                elements(c.out_shapes[0]) * expression_ops(spec.statements(spec.attrs(c.attrs)))
            ),
            stateful=True,
            ref_inputs=tuple(spec.refs),
            reads_ref=True,
            alias=0,
            differentiable=False,
            input_names=tuple(spec.names),
        )
    )


# -- the update rules (TF's training_ops.cc, in its order of operations) ------------------------
def _sgd(x: dict, attrs: dict) -> dict:
    return {"var": x["var"] - x["alpha"] * x["delta"]}


def _momentum(x: dict, attrs: dict) -> dict:
    accum = x["accum"] * x["momentum"] + x["grad"]
    if attrs["use_nesterov"]:
        var = x["var"] - (x["grad"] * x["lr"] + accum * x["momentum"] * x["lr"])
    else:
        var = x["var"] - accum * x["lr"]
    return {"var": var, "accum": accum}


def _momentum_c(attrs: dict) -> list[str]:
    step = "grad * lr + {accum} * momentum * lr" if attrs["use_nesterov"] else "{accum} * lr"
    return ["{accum} = {accum} * momentum + grad;", "{var} -= " + step + ";"]


def _adagrad(x: dict, attrs: dict) -> dict:
    accum = x["accum"] + x["grad"] * x["grad"] if attrs["update_slots"] else x["accum"]
    return {"var": x["var"] - x["grad"] * x["lr"] / np.sqrt(accum), "accum": accum}


def _adagrad_c(attrs: dict) -> list[str]:
    update = ["{accum} += grad * grad;"] if attrs["update_slots"] else []
    return update + ["{var} -= grad * lr / sqrt{sfx}({accum});"]


def _rms_prop(x: dict, attrs: dict) -> dict:
    ms = x["ms"] + (x["grad"] * x["grad"] - x["ms"]) * (1 - x["rho"])
    mom = x["mom"] * x["momentum"] + x["grad"] * x["lr"] / np.sqrt(ms + x["epsilon"])
    return {"var": x["var"] - mom, "ms": ms, "mom": mom}


_RMS_PROP_C = [
    "{ms} += (grad * grad - {ms}) * ({one} - rho);",
    "{mom} = {mom} * momentum + grad * lr / sqrt{sfx}({ms} + epsilon);",
    "{var} -= {mom};",
]


def _centered_rms_prop(x: dict, attrs: dict) -> dict:
    ms = x["ms"] + (x["grad"] * x["grad"] - x["ms"]) * (1 - x["rho"])
    mg = x["mg"] + (x["grad"] - x["mg"]) * (1 - x["rho"])
    denom = ms - mg * mg + x["epsilon"]
    mom = x["mom"] * x["momentum"] + x["grad"] * x["lr"] / np.sqrt(denom)
    return {"var": x["var"] - mom, "mg": mg, "ms": ms, "mom": mom}


_CENTERED_RMS_PROP_C = [
    "{ms} += (grad * grad - {ms}) * ({one} - rho);",
    "{mg} += (grad - {mg}) * ({one} - rho);",
    "{mom} = {mom} * momentum + grad * lr / sqrt{sfx}({ms} - {mg} * {mg} + epsilon);",
    "{var} -= {mom};",
]


def _adam(x: dict, attrs: dict) -> dict:
    alpha = x["lr"] * np.sqrt(1 - x["beta2_power"]) / (1 - x["beta1_power"])
    m = x["m"] + (x["grad"] - x["m"]) * (1 - x["beta1"])
    v = x["v"] + (x["grad"] * x["grad"] - x["v"]) * (1 - x["beta2"])
    if attrs["use_nesterov"]:
        step = (x["grad"] * (1 - x["beta1"]) + x["beta1"] * m) * alpha
    else:
        step = m * alpha
    return {"var": x["var"] - step / (np.sqrt(v) + x["epsilon"]), "m": m, "v": v}


def _adam_c(attrs: dict) -> list[str]:
    m_term = "(grad * ({one} - beta1) + beta1 * {m})" if attrs["use_nesterov"] else "{m}"
    return [
        "const {T} alpha = lr * sqrt{sfx}({one} - beta2_power) / ({one} - beta1_power);",
        "{m} += (grad - {m}) * ({one} - beta1);",
        "{v} += (grad * grad - {v}) * ({one} - beta2);",
        "{var} -= " + m_term + " * alpha / (sqrt{sfx}({v}) + epsilon);",
    ]


def _adadelta(x: dict, attrs: dict) -> dict:
    accum = x["accum"] * x["rho"] + x["grad"] * x["grad"] * (1 - x["rho"])
    update = np.sqrt(x["accum_update"] + x["epsilon"]) * (1 / np.sqrt(accum + x["epsilon"]))
    update = update * x["grad"]
    accum_update = x["accum_update"] * x["rho"] + update * update * (1 - x["rho"])
    return {"var": x["var"] - update * x["lr"], "accum": accum, "accum_update": accum_update}


_ADADELTA_C = [
    "{accum} = {accum} * rho + grad * grad * ({one} - rho);",
    "const {T} update = sqrt{sfx}({accum_update} + epsilon)"
    " * ({one} / sqrt{sfx}({accum} + epsilon)) * grad;",
    "{var} -= update * lr;",
    "{accum_update} = {accum_update} * rho + update * update * ({one} - rho);",
]


def _shrink(prox: np.ndarray, threshold: Any, l1: Any, denominator: Any) -> np.ndarray:
    """The proximal step of an l1 and l2 penalty: sign(v) * max(|v| - threshold, 0) / denominator
    when l1 > 0, else v / denominator (TF's Fobos update)."""
    if l1 > 0:
        return np.sign(prox) * np.maximum(np.abs(prox) - threshold, 0) / denominator
    return prox / denominator


# sign(p) * max(|p| - t, 0) / d, or p / d without l1 (the C of _shrink; the max keeps a NaN,
# as Eigen's and NumPy's do and fmax does not)
_SHRINK_C = [
    "const {T} excess = fabs{sfx}(prox) - {t};",
    "{var} = l1 > 0 ? (({T})(prox > 0) - ({T})(prox < 0)) * (excess < 0 ? 0 : excess) / ({d})"
    " : prox / ({d});",
]


def _proximal_sgd(x: dict, attrs: dict) -> dict:
    prox = x["var"] - x["delta"] * x["alpha"]
    denominator = 1 + x["l2"] * x["alpha"]
    return {"var": _shrink(prox, x["alpha"] * x["l1"], x["l1"], denominator)}


_PROXIMAL_SGD_C = [
    "const {T} prox = {var} - delta * alpha;",
    *(
        line.format(var="{var}", T="{T}", sfx="{sfx}", t="alpha * l1", d="{one} + l2 * alpha")
        for line in _SHRINK_C
    ),
]


def _proximal_adagrad(x: dict, attrs: dict) -> dict:
    accum = x["accum"] + x["grad"] * x["grad"]
    rate = x["lr"] * (1 / np.sqrt(accum))
    prox = x["var"] - x["grad"] * rate
    var = _shrink(prox, rate * x["l1"], x["l1"], 1 + x["l2"] * rate)
    return {"var": var, "accum": accum}


_PROXIMAL_ADAGRAD_C = [
    "{accum} += grad * grad;",
    "const {T} rate = lr * ({one} / sqrt{sfx}({accum}));",
    "const {T} prox = {var} - grad * rate;",
    *(
        line.format(var="{var}", T="{T}", sfx="{sfx}", t="rate * l1", d="{one} + l2 * rate")
        for line in _SHRINK_C
    ),
]


def _ftrl(x: dict, attrs: dict) -> dict:
    """FTRL-proximal (TF's ApplyFtrl; ApplyFtrlV2 adds 2 * l2_shrinkage * var to the gradient of
    `linear`, not of the accumulator)."""
    grad, var, accum, lr, l1 = x["grad"], x["var"], x["accum"], x["lr"], x["l1"]
    new_accum = accum + grad * grad
    if x["lr_power"] == -0.5:
        power, power_before = np.sqrt(new_accum), np.sqrt(accum)
    else:
        power, power_before = new_accum ** -x["lr_power"], accum ** -x["lr_power"]
    shrunk_grad = grad + 2 * x["l2_shrinkage"] * var if "l2_shrinkage" in x else grad
    linear = x["linear"] + (shrunk_grad - (power - power_before) / lr * var)
    pre_shrink = (l1 * np.sign(linear) - linear) / (power / lr + 2 * x["l2"])
    var = np.where(np.abs(linear) > l1, pre_shrink, np.zeros_like(var))
    return {"var": var, "accum": new_accum, "linear": linear}


def _ftrl_c(shrinkage: bool) -> list[str]:
    power = "(lr_power == ({T})-0.5 ? sqrt{sfx}({x}) : pow{sfx}({x}, -lr_power))"
    shrunk_grad = "grad + ({T})2 * l2_shrinkage * {var}" if shrinkage else "grad"
    return [
        "const {T} new_accum = {accum} + grad * grad;",
        "const {T} power = " + power.replace("{x}", "new_accum") + ";",
        "{linear} += "
        + shrunk_grad
        + " - (power - "
        + power.replace("{x}", "{accum}")
        + ") / lr * {var};",
        "const {T} l1_sign = (({T})({linear} > 0) - ({T})({linear} < 0)) * l1;",
        "{var} = fabs{sfx}({linear}) > l1 ? (l1_sign - {linear}) / (power / lr + ({T})2 * l2) : 0;",
        "{accum} = new_accum;",
    ]


def _adagrad_da(x: dict, attrs: dict) -> dict:
    g = x["gradient_accumulator"] + x["grad"]
    gg = x["gradient_squared_accumulator"] + x["grad"] * x["grad"]
    step = np.float32(x["global_step"]).astype(g.dtype)  # TF converts the step to float
    denominator = x["l2"] * step * x["lr"] + np.sqrt(gg)
    if x["l1"] > 0:
        var = x["lr"] * -1 * np.sign(g) * np.maximum(np.abs(g) - step * x["l1"], 0) / denominator
    else:
        var = x["lr"] * g * -1 / denominator
    return {"var": var, "gradient_accumulator": g, "gradient_squared_accumulator": gg}


_ADAGRAD_DA_C = [
    "{gradient_accumulator} += grad;",
    "{gradient_squared_accumulator} += grad * grad;",
    "const {T} step = ({T})(float)global_step;",
    "const {T} denominator = l2 * step * lr + sqrt{sfx}({gradient_squared_accumulator});",
    "const {T} excess = fabs{sfx}({gradient_accumulator}) - step * l1;",
    "{var} = l1 > 0 ? lr * -{one} * (({T})({gradient_accumulator} > 0) - "
    "({T})({gradient_accumulator} < 0)) * (excess < 0 ? 0 : excess) / denominator"
    " : lr * {gradient_accumulator} * -{one} / denominator;",
]


def _inputs(spec: str) -> tuple[tuple[str, str], ...]:
    return tuple(tuple(item.split(":")) for item in spec.split())  # type: ignore[misc]


UPDATE_SPECS = {
    "ApplyGradientDescent": (
        _inputs("var:ref alpha:scalar delta:dense"),
        _sgd,
        lambda attrs: ["{var} -= alpha * delta;"],
        {},
    ),
    "ApplyMomentum": (
        _inputs("var:ref accum:ref lr:scalar grad:dense momentum:scalar"),
        _momentum,
        _momentum_c,
        {"use_nesterov": False},
    ),
    "ApplyAdagrad": (
        _inputs("var:ref accum:ref lr:scalar grad:dense"),
        _adagrad,
        _adagrad_c,
        {"update_slots": True},
    ),
    "ApplyRMSProp": (
        _inputs(
            "var:ref ms:ref mom:ref lr:scalar rho:scalar momentum:scalar epsilon:scalar grad:dense"
        ),
        _rms_prop,
        lambda attrs: _RMS_PROP_C,
        {},
    ),
    "ApplyCenteredRMSProp": (
        _inputs(
            "var:ref mg:ref ms:ref mom:ref lr:scalar rho:scalar momentum:scalar "
            "epsilon:scalar grad:dense"
        ),
        _centered_rms_prop,
        lambda attrs: _CENTERED_RMS_PROP_C,
        {},
    ),
    "ApplyAdam": (
        _inputs(
            "var:ref m:ref v:ref beta1_power:scalar beta2_power:scalar lr:scalar "
            "beta1:scalar beta2:scalar epsilon:scalar grad:dense"
        ),
        _adam,
        _adam_c,
        {"use_nesterov": False},
    ),
    "ApplyAdadelta": (
        _inputs(
            "var:ref accum:ref accum_update:ref lr:scalar rho:scalar epsilon:scalar grad:dense"
        ),
        _adadelta,
        lambda attrs: _ADADELTA_C,
        {},
    ),
    "ApplyProximalGradientDescent": (
        _inputs("var:ref alpha:scalar l1:scalar l2:scalar delta:dense"),
        _proximal_sgd,
        lambda attrs: _PROXIMAL_SGD_C,
        {},
    ),
    "ApplyProximalAdagrad": (
        _inputs("var:ref accum:ref lr:scalar l1:scalar l2:scalar grad:dense"),
        _proximal_adagrad,
        lambda attrs: _PROXIMAL_ADAGRAD_C,
        {},
    ),
    "ApplyFtrl": (
        _inputs(
            "var:ref accum:ref linear:ref grad:dense lr:scalar l1:scalar l2:scalar lr_power:scalar"
        ),
        _ftrl,
        lambda attrs: _ftrl_c(shrinkage=False),
        {},
    ),
    "ApplyFtrlV2": (
        _inputs(
            "var:ref accum:ref linear:ref grad:dense lr:scalar l1:scalar l2:scalar "
            "l2_shrinkage:scalar lr_power:scalar"
        ),
        _ftrl,
        lambda attrs: _ftrl_c(shrinkage=True),
        {},
    ),
    "ApplyAdagradDA": (
        _inputs(
            "var:ref gradient_accumulator:ref gradient_squared_accumulator:ref grad:dense "
            "lr:scalar l1:scalar l2:scalar global_step:step"
        ),
        _adagrad_da,
        lambda attrs: _ADAGRAD_DA_C,
        {},
    ),
}
for _type, (_ins, _update, _statements, _defaults) in UPDATE_SPECS.items():
    _register(_ApplySpec(_type, _ins, _update, _statements, tuple(_defaults.items())))


# -- frontends (TF's training_ops.apply_*) ------------------------------------------------------
def _apply(
    op_type: str, args: list, attrs: dict, name: str | None, use_locking: bool = False
) -> Tensor:
    spec_inputs = UPDATE_SPECS[op_type][0]
    if use_locking:  # a Session's concurrent programs then hold the variables' update locks
        attrs = {**attrs, "use_locking": True}
    var = variable_ref(args[0], op_type)
    tensors = []
    for (arg_name, kind), arg in zip(spec_inputs, args):
        if kind == "ref":
            tensors.append(variable_ref(arg, f"{op_type} (input '{arg_name}')"))
        elif isinstance(arg, Tensor) or hasattr(arg, "_as_tensor"):
            tensors.append(convert_to_tensor(arg))  # a wrong dtype is the op's TypeError
        else:
            dtype = _dt.int64 if kind == "step" else var.dtype
            tensors.append(convert_to_tensor(arg, dtype=dtype, name=arg_name))
    return apply_op(op_type, tensors, attrs, name=name or op_type).outputs[0]


def apply_gradient_descent(
    var: Any, alpha: Any, delta: Any, use_locking: bool = False, name: str | None = None
) -> Tensor:
    """var -= alpha * delta."""
    return _apply("ApplyGradientDescent", [var, alpha, delta], {}, name, use_locking)


def apply_momentum(
    var: Any,
    accum: Any,
    lr: Any,
    grad: Any,
    momentum: Any,
    use_locking: bool = False,
    use_nesterov: bool = False,
    name: str | None = None,
) -> Tensor:
    """accum = accum * momentum + grad; var -= lr * accum (Nesterov: lr * (grad + momentum *
    accum))."""
    attrs = {"use_nesterov": bool(use_nesterov)}
    return _apply("ApplyMomentum", [var, accum, lr, grad, momentum], attrs, name, use_locking)


def apply_adagrad(
    var: Any,
    accum: Any,
    lr: Any,
    grad: Any,
    use_locking: bool = False,
    update_slots: bool = True,
    name: str | None = None,
) -> Tensor:
    """accum += grad * grad; var -= lr * grad / sqrt(accum)."""
    attrs = {"update_slots": bool(update_slots)}
    return _apply("ApplyAdagrad", [var, accum, lr, grad], attrs, name, use_locking)


def apply_rms_prop(
    var: Any,
    ms: Any,
    mom: Any,
    lr: Any,
    rho: Any,
    momentum: Any,
    epsilon: Any,
    grad: Any,
    use_locking: bool = False,
    name: str | None = None,
) -> Tensor:
    """ms = rho * ms + (1 - rho) * grad^2; mom = momentum * mom + lr * grad / sqrt(ms + epsilon);
    var -= mom."""
    args = [var, ms, mom, lr, rho, momentum, epsilon, grad]
    return _apply("ApplyRMSProp", args, {}, name, use_locking)


def apply_centered_rms_prop(
    var: Any,
    mg: Any,
    ms: Any,
    mom: Any,
    lr: Any,
    rho: Any,
    momentum: Any,
    epsilon: Any,
    grad: Any,
    use_locking: bool = False,
    name: str | None = None,
) -> Tensor:
    """RMSProp normalized by the centered second moment: ms - mg^2, mg the mean gradient."""
    args = [var, mg, ms, mom, lr, rho, momentum, epsilon, grad]
    return _apply("ApplyCenteredRMSProp", args, {}, name, use_locking)


def apply_adam(
    var: Any,
    m: Any,
    v: Any,
    beta1_power: Any,
    beta2_power: Any,
    lr: Any,
    beta1: Any,
    beta2: Any,
    epsilon: Any,
    grad: Any,
    use_locking: bool = False,
    use_nesterov: bool = False,
    name: str | None = None,
) -> Tensor:
    """m, v = moving averages of grad, grad^2; var -= lr * sqrt(1 - beta2^t) / (1 - beta1^t) *
    m / (sqrt(v) + epsilon)."""
    args = [var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad]
    return _apply("ApplyAdam", args, {"use_nesterov": bool(use_nesterov)}, name, use_locking)


def apply_adadelta(
    var: Any,
    accum: Any,
    accum_update: Any,
    lr: Any,
    rho: Any,
    epsilon: Any,
    grad: Any,
    use_locking: bool = False,
    name: str | None = None,
) -> Tensor:
    """accum = rho * accum + (1 - rho) * grad^2; update = sqrt(accum_update + epsilon) /
    sqrt(accum + epsilon) * grad; var -= lr * update; accum_update = rho * accum_update +
    (1 - rho) * update^2."""
    args = [var, accum, accum_update, lr, rho, epsilon, grad]
    return _apply("ApplyAdadelta", args, {}, name, use_locking)


def apply_proximal_gradient_descent(
    var: Any,
    alpha: Any,
    l1: Any,
    l2: Any,
    delta: Any,
    use_locking: bool = False,
    name: str | None = None,
) -> Tensor:
    """prox = var - alpha * delta; var = sign(prox) * max(|prox| - alpha * l1, 0) /
    (1 + alpha * l2) (without l1: prox / (1 + alpha * l2))."""
    args = [var, alpha, l1, l2, delta]
    return _apply("ApplyProximalGradientDescent", args, {}, name, use_locking)


def apply_proximal_adagrad(
    var: Any,
    accum: Any,
    lr: Any,
    l1: Any,
    l2: Any,
    grad: Any,
    use_locking: bool = False,
    name: str | None = None,
) -> Tensor:
    """accum += grad^2; the proximal gradient step with the rate lr / sqrt(accum)."""
    return _apply("ApplyProximalAdagrad", [var, accum, lr, l1, l2, grad], {}, name, use_locking)


def apply_ftrl(
    var: Any,
    accum: Any,
    linear: Any,
    grad: Any,
    lr: Any,
    l1: Any,
    l2: Any,
    lr_power: Any,
    use_locking: bool = False,
    name: str | None = None,
) -> Tensor:
    """FTRL-proximal: new_accum = accum + grad^2; linear += grad - (new_accum^-lr_power -
    accum^-lr_power) / lr * var; var = (l1 * sign(linear) - linear) / (new_accum^-lr_power /
    lr + 2 * l2) where |linear| > l1, else 0; accum = new_accum."""
    args = [var, accum, linear, grad, lr, l1, l2, lr_power]
    return _apply("ApplyFtrl", args, {}, name, use_locking)


def apply_ftrl_v2(
    var: Any,
    accum: Any,
    linear: Any,
    grad: Any,
    lr: Any,
    l1: Any,
    l2: Any,
    l2_shrinkage: Any,
    lr_power: Any,
    use_locking: bool = False,
    name: str | None = None,
) -> Tensor:
    """apply_ftrl with a magnitude penalty: `linear` takes grad + 2 * l2_shrinkage * var (the
    accumulator still takes grad^2)."""
    args = [var, accum, linear, grad, lr, l1, l2, l2_shrinkage, lr_power]
    return _apply("ApplyFtrlV2", args, {}, name, use_locking)


def apply_adagrad_da(
    var: Any,
    gradient_accumulator: Any,
    gradient_squared_accumulator: Any,
    grad: Any,
    lr: Any,
    l1: Any,
    l2: Any,
    global_step: Any,
    use_locking: bool = False,
    name: str | None = None,
) -> Tensor:
    """Adagrad dual averaging: g += grad; gg += grad^2; var = -lr * sign(g) * max(|g| - l1 * t,
    0) / (l2 * t * lr + sqrt(gg)), t the int64 `global_step` (without l1: -lr * g / (...))."""
    args = [var, gradient_accumulator, gradient_squared_accumulator, grad, lr, l1, l2, global_step]
    return _apply("ApplyAdagradDA", args, {}, name, use_locking)
