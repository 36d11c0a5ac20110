"""Optimizers: 20 steps on a quadratic, compiled and interpreted, against NumPy's TF formulas.

f(w) = 0.5 * sum(a * (w - b)^2) on a vector and a matrix variable; its gradient a * (w - b)
is given explicitly to apply_gradients, or derived by minimize. Every case of one dtype lives
in one graph, so one compile serves them all. The NumPy side implements the formulas as
TensorFlow documents them, in the variable's dtype, with TF1's float32 hyper-parameters
(Python numbers become float32 tensors, cast to the variable's dtype where they are used).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest

import tfc as tf
from tfc.ops import training_ops
from tfc.reference.interp import Interpreter

STEPS = 20
_rng = np.random.default_rng(7)
A = {"vec": _rng.uniform(0.5, 2.0, 5), "mat": _rng.uniform(0.5, 2.0, (3, 4))}
B = {"vec": _rng.uniform(-1.0, 1.0, 5), "mat": _rng.uniform(-1.0, 1.0, (3, 4))}
W0 = {"vec": _rng.uniform(-2.0, 2.0, 5), "mat": _rng.uniform(-2.0, 2.0, (3, 4))}
# relative error per element, plus an absolute floor relative to the array's largest element
# (elements near zero carry the rounding error of their larger neighbours' arithmetic)
TOL = {"float32": (2e-6, 1e-6), "float64": (1e-12, 1e-13)}


# -- the formulas, as TF documents them ---------------------------------------------------------
def _sgd(s: dict, g: np.ndarray, h: dict, c: dict) -> None:
    s["var"] = s["var"] - h["lr"] * g


def _momentum(s: dict, g: np.ndarray, h: dict, c: dict) -> None:
    s["momentum"] = h["momentum"] * s["momentum"] + g
    if h.get("nesterov"):
        s["var"] = s["var"] - h["lr"] * (g + h["momentum"] * s["momentum"])
    else:
        s["var"] = s["var"] - h["lr"] * s["momentum"]


def _adagrad(s: dict, g: np.ndarray, h: dict, c: dict) -> None:
    s["accumulator"] = s["accumulator"] + g * g
    s["var"] = s["var"] - h["lr"] * g / np.sqrt(s["accumulator"])


def _rmsprop(s: dict, g: np.ndarray, h: dict, c: dict) -> None:
    s["rms"] = h["decay"] * s["rms"] + (1 - h["decay"]) * g * g
    denom = s["rms"] + h["epsilon"]
    if "mg" in s:
        s["mg"] = h["decay"] * s["mg"] + (1 - h["decay"]) * g
        denom = s["rms"] - s["mg"] * s["mg"] + h["epsilon"]
    s["momentum"] = h["momentum"] * s["momentum"] + h["lr"] * g / np.sqrt(denom)
    s["var"] = s["var"] - s["momentum"]


def _adam(s: dict, g: np.ndarray, h: dict, c: dict) -> None:
    dtype = s["var"].dtype.type
    b1p, b2p = dtype(c["beta1_power"]), dtype(c["beta2_power"])  # beta^t, float32 variables
    lr_t = h["lr"] * np.sqrt(1 - b2p) / (1 - b1p)
    s["m"] = h["beta1"] * s["m"] + (1 - h["beta1"]) * g
    s["v"] = h["beta2"] * s["v"] + (1 - h["beta2"]) * g * g
    s["var"] = s["var"] - lr_t * s["m"] / (np.sqrt(s["v"]) + h["epsilon"])


def _adam_finish(c: dict, h32: dict) -> None:
    c["beta1_power"] = np.float32(c["beta1_power"] * h32["beta1"])
    c["beta2_power"] = np.float32(c["beta2_power"] * h32["beta2"])


def _adadelta(s: dict, g: np.ndarray, h: dict, c: dict) -> None:
    s["accum"] = h["rho"] * s["accum"] + (1 - h["rho"]) * g * g
    update = np.sqrt(s["accum_update"] + h["epsilon"]) / np.sqrt(s["accum"] + h["epsilon"]) * g
    s["var"] = s["var"] - h["lr"] * update
    s["accum_update"] = h["rho"] * s["accum_update"] + (1 - h["rho"]) * update * update


def _fobos(v: np.ndarray, rate, h: dict) -> np.ndarray:
    """The proximal step of rate * (l1 |w| + l2 w^2 / 2) at v (soft thresholding, then shrink)."""
    l1, l2 = h.get("l1_regularization_strength", 0), h.get("l2_regularization_strength", 0)
    return np.sign(v) * np.maximum(np.abs(v) - rate * l1, 0) / (1 + rate * l2)


def _proximal_sgd(s: dict, g: np.ndarray, h: dict, c: dict) -> None:
    s["var"] = _fobos(s["var"] - h["lr"] * g, h["lr"], h)


def _proximal_adagrad(s: dict, g: np.ndarray, h: dict, c: dict) -> None:
    s["accumulator"] = s["accumulator"] + g * g
    rate = h["lr"] / np.sqrt(s["accumulator"])
    s["var"] = _fobos(s["var"] - rate * g, rate, h)


def _ftrl(s: dict, g: np.ndarray, h: dict, c: dict) -> None:
    """McMahan et al. (2013), Algorithm 1, per coordinate, with TF's learning_rate_power p,
    shrinkage and beta (beta / (2 lr) joins l2, computed in float32 as TF does)."""
    p, lr, l1 = h.get("learning_rate_power", -0.5), h["lr"], h.get("l1_regularization_strength", 0)
    l2 = h.get("l2_regularization_strength", 0)
    if "beta" in h:
        f = np.float32
        l2 = (f(l2) + f(h["beta"]) / (f(2) * f(lr))).astype(s["var"].dtype)
    n = s["accum"] + g * g
    sigma = (n**-p - s["accum"] ** -p) / lr
    shrunk = g + 2 * h.get("l2_shrinkage_regularization_strength", 0) * s["var"]
    s["linear"] = s["linear"] + shrunk - sigma * s["var"]
    z = s["linear"]
    s["var"] = np.where(np.abs(z) > l1, (np.sign(z) * l1 - z) / (n**-p / lr + 2 * l2), 0)
    s["accum"] = n


def _adagrad_da(s: dict, g: np.ndarray, h: dict, c: dict) -> None:
    s["gradient_accumulator"] = s["gradient_accumulator"] + g
    s["gradient_squared_accumulator"] = s["gradient_squared_accumulator"] + g * g
    t = s["var"].dtype.type(c["t"])  # the global step the update is for
    l1, l2 = h.get("l1_regularization_strength", 0), h.get("l2_regularization_strength", 0)
    acc = s["gradient_accumulator"]
    shrunk = np.sign(acc) * np.maximum(np.abs(acc) - l1 * t, 0)
    s["var"] = -h["lr"] * shrunk / (l2 * t * h["lr"] + np.sqrt(s["gradient_squared_accumulator"]))


@dataclass(frozen=True)
class Case:
    optimizer: Callable[..., tf.train.Optimizer]  # (learning rate, **hyper) -> optimizer
    step: Callable[[dict, np.ndarray, dict, dict], None]
    slots: dict  # slot name -> initial value
    lr: float
    hyper: dict = field(default_factory=dict)
    schedule: str = "const"  # "fed" placeholder, "decay" / "staircase" from the global step
    partial: bool = False  # the matrix gets a None gradient
    tensor_hyper: bool = False  # hyper-parameters given as float32 tensors, not numbers
    finish: Callable[[dict, dict], None] | None = None
    case_state: dict = field(default_factory=dict)  # Adam's beta powers
    counter: bool = False  # a step counter of its own, given as `global_step` to the optimizer


_T = tf.train
CASES = {
    "sgd": Case(_T.GradientDescentOptimizer, _sgd, {}, 0.1),
    "sgd_fed_lr": Case(_T.GradientDescentOptimizer, _sgd, {}, 0.3, schedule="fed"),
    "sgd_decayed_lr": Case(_T.GradientDescentOptimizer, _sgd, {}, 0.4, schedule="decay"),
    "sgd_partial": Case(_T.GradientDescentOptimizer, _sgd, {}, 0.1, partial=True),
    "momentum": Case(_T.MomentumOptimizer, _momentum, {"momentum": 0}, 0.05, {"momentum": 0.9}),
    "momentum_staircase_lr": Case(
        _T.MomentumOptimizer,
        _momentum,
        {"momentum": 0},
        0.1,
        {"momentum": 0.8},
        schedule="staircase",
    ),
    "nesterov": Case(
        lambda lr, momentum: _T.MomentumOptimizer(lr, momentum, use_nesterov=True),
        _momentum,
        {"momentum": 0},
        0.05,
        {"momentum": 0.9, "nesterov": True},
    ),
    "adagrad": Case(
        lambda lr: _T.AdagradOptimizer(lr, initial_accumulator_value=0.2),
        _adagrad,
        {"accumulator": 0.2},
        0.3,
    ),
    "rmsprop": Case(
        _T.RMSPropOptimizer,
        _rmsprop,
        {"rms": 1, "momentum": 0},
        0.01,
        {"decay": 0.9, "momentum": 0.0, "epsilon": 1e-10},
    ),
    "rmsprop_momentum": Case(
        _T.RMSPropOptimizer,
        _rmsprop,
        {"rms": 1, "momentum": 0},
        0.02,
        {"decay": 0.8, "momentum": 0.5, "epsilon": 1e-6},
        tensor_hyper=True,
    ),
    "rmsprop_centered": Case(
        lambda lr, **h: _T.RMSPropOptimizer(lr, centered=True, **h),
        _rmsprop,
        {"rms": 1, "mg": 0, "momentum": 0},
        0.01,
        {"decay": 0.9, "momentum": 0.3, "epsilon": 1e-4},
    ),
    "adam": Case(
        _T.AdamOptimizer,
        _adam,
        {"m": 0, "v": 0},
        0.05,
        {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8},
        finish=_adam_finish,
        case_state={"beta1_power": np.float32(0.9), "beta2_power": np.float32(0.999)},
    ),
    "adam_partial": Case(
        _T.AdamOptimizer,
        _adam,
        {"m": 0, "v": 0},
        0.1,
        {"beta1": 0.8, "beta2": 0.99, "epsilon": 1e-3},
        partial=True,
        finish=_adam_finish,
        case_state={"beta1_power": np.float32(0.8), "beta2_power": np.float32(0.99)},
    ),
    "adadelta": Case(
        _T.AdadeltaOptimizer,
        _adadelta,
        {"accum": 0, "accum_update": 0},
        1.0,
        {"rho": 0.9, "epsilon": 1e-6},
    ),
    "adadelta_partial": Case(
        _T.AdadeltaOptimizer,
        _adadelta,
        {"accum": 0, "accum_update": 0},
        0.5,
        {"rho": 0.95, "epsilon": 1e-4},
        partial=True,
        tensor_hyper=True,
    ),
    "proximal_sgd": Case(_T.ProximalGradientDescentOptimizer, _proximal_sgd, {}, 0.1),
    "proximal_sgd_l1_l2": Case(
        _T.ProximalGradientDescentOptimizer,
        _proximal_sgd,
        {},
        0.1,
        {"l1_regularization_strength": 0.05, "l2_regularization_strength": 0.2},
        schedule="decay",
    ),
    "proximal_adagrad": Case(
        lambda lr, **h: _T.ProximalAdagradOptimizer(lr, 0.3, **h),
        _proximal_adagrad,
        {"accumulator": 0.3},
        0.2,
        {"l2_regularization_strength": 0.1},
    ),
    "proximal_adagrad_l1": Case(
        _T.ProximalAdagradOptimizer,
        _proximal_adagrad,
        {"accumulator": 0.1},
        0.1,
        {"l1_regularization_strength": 0.02, "l2_regularization_strength": 0.05},
    ),
    "ftrl": Case(_T.FtrlOptimizer, _ftrl, {"accum": 0.1, "linear": 0}, 0.3),
    "ftrl_l1_l2": Case(
        lambda lr, **h: _T.FtrlOptimizer(lr, initial_accumulator_value=0.5, **h),
        _ftrl,
        {"accum": 0.5, "linear": 0},
        0.5,
        {"l1_regularization_strength": 0.03, "l2_regularization_strength": 0.1},
    ),
    "ftrl_power_shrinkage_beta": Case(
        _T.FtrlOptimizer,
        _ftrl,
        {"accum": 0.1, "linear": 0},
        0.2,
        {
            "learning_rate_power": -0.3,
            "l1_regularization_strength": 0.01,
            "l2_regularization_strength": 0.02,
            "l2_shrinkage_regularization_strength": 0.05,
            "beta": 0.4,
        },
    ),
    "ftrl_fixed_rate": Case(
        _T.FtrlOptimizer,
        _ftrl,
        {"accum": 0.1, "linear": 0},
        0.05,
        {"learning_rate_power": 0.0, "l2_shrinkage_regularization_strength": 0.1},
        partial=True,
    ),
    "adagrad_da": Case(
        _T.AdagradDAOptimizer,
        _adagrad_da,
        {"gradient_accumulator": 0, "gradient_squared_accumulator": 0.1},
        0.3,
        counter=True,
    ),
    "adagrad_da_l1_l2": Case(
        lambda lr, **h: _T.AdagradDAOptimizer(
            lr, initial_gradient_squared_accumulator_value=0.2, **h
        ),
        _adagrad_da,
        {"gradient_accumulator": 0, "gradient_squared_accumulator": 0.2},
        0.5,
        {"l1_regularization_strength": 0.01, "l2_regularization_strength": 0.1},
        counter=True,
    ),
}
_OPT_ARGS = {"nesterov"}  # hyper entries that are not optimizer arguments


def _lr_value(case: Case, k: int) -> np.float32:
    """The learning rate of step k (0-based) as TF computes it, in float32."""
    f = np.float32
    if case.schedule == "fed":
        return f(case.lr * 0.9**k)
    if case.schedule == "decay":  # exponential_decay(lr, step, 4, 0.7)
        return f(case.lr) * f(0.7) ** (f(k) / f(4))
    if case.schedule == "staircase":  # exponential_decay(lr, step, 5, 0.5, staircase=True)
        return f(case.lr) * f(0.5) ** np.floor(f(k) / f(5))
    return f(case.lr)


# -- the NumPy trajectory ------------------------------------------------------------------------
@functools.cache
def expected(case_name: str, dtype: str) -> list[dict]:
    case, t = CASES[case_name], np.dtype(dtype).type
    state = {
        key: {
            "var": W0[key].astype(dtype),
            **{n: np.full_like(W0[key], v, dtype) for n, v in case.slots.items()},
        }
        for key in W0
    }
    c = dict(case.case_state)
    h32 = {k: np.float32(v) for k, v in case.hyper.items() if k not in _OPT_ARGS}
    history = []
    for k in range(STEPS):
        h = {key: t(v) for key, v in h32.items()} | {"lr": t(_lr_value(case, k))}
        h["nesterov"] = case.hyper.get("nesterov", False)
        c["t"] = k + 1  # the value of a step counter during step k + 1, before its increment
        for key in W0:
            if key == "mat" and case.partial:
                continue
            g = (A[key] * (state[key]["var"] - B[key])).astype(dtype)
            case.step(state[key], g.astype(dtype), h, c)
            state[key] = {n: np.asarray(v, dtype) for n, v in state[key].items()}
        if case.finish:
            case.finish(c, h32)
        kept = {n: v for n, v in c.items() if n in case.case_state}
        history.append({"vars": {k: dict(v) for k, v in state.items()}, "case": kept})
    return history


# -- the graph, run compiled and interpreted ------------------------------------------------------
@dataclass
class Built:
    graph: tf.Graph
    init: tf.Operation
    train: tf.Operation
    fetch: dict
    lr_fed: tf.Tensor
    global_step: tf.Variable
    optimizers: dict
    variables: dict


@functools.cache
def build(dtype: str, mode: str) -> Built:
    graph = tf.Graph()
    with graph.as_default():
        global_step = tf.train.get_or_create_global_step()
        lr_fed = tf.placeholder(tf.float32, [], name="lr_fed")
        trains, fetch, optimizers, variables = [], {}, {}, {}
        for name, case in CASES.items():
            with tf.name_scope(name + "/"):
                ws = {k: tf.Variable(W0[k].astype(dtype), name=k) for k in W0}
            if case.schedule == "fed":
                lr = lr_fed  # fed with the step's rate
            elif case.schedule == "decay":
                lr = tf.train.exponential_decay(case.lr, global_step, 4, 0.7)
            elif case.schedule == "staircase":
                lr = tf.train.exponential_decay(case.lr, global_step, 5, 0.5, staircase=True)
            else:
                lr = case.lr
            hyper = {k: v for k, v in case.hyper.items() if k not in _OPT_ARGS}
            if case.tensor_hyper:
                hyper = {k: tf.constant(v, tf.float32, name=k) for k, v in hyper.items()}
            step = global_step if case.schedule == "staircase" else None
            if case.counter:
                with tf.name_scope(name + "/"):
                    step = tf.Variable(np.int64(0), name="counter", trainable=False)
                hyper["global_step"] = step
            opt = case.optimizer(lr, **hyper)
            with tf.name_scope(name + "/loss/"):
                diffs = {k: ws[k] - tf.constant(B[k], dtype) for k in W0}
                grads = {k: tf.constant(A[k], dtype) * diffs[k] for k in W0}
            if mode == "explicit":
                pairs = [(None if k == "mat" and case.partial else grads[k], ws[k]) for k in W0]
                trains.append(opt.apply_gradients(pairs, global_step=step))
            else:
                loss = tf.add_n([tf.reduce_sum(0.5 * diffs[k] * grads[k]) for k in W0])
                var_list = [ws["vec"]] if case.partial else list(ws.values())
                trains.append(opt.minimize(loss, global_step=step, var_list=var_list))
            fetch[name] = {
                "vars": {
                    k: {"var": ws[k], **{s: opt.get_slot(ws[k], s) for s in case.slots}}
                    for k in W0
                    if not (k == "mat" and case.partial)
                },
                "case": {n: opt._get_non_slot_variable(n, graph) for n in case.case_state},
            }
            if case.partial:
                fetch[name]["vars"]["mat"] = {"var": ws["mat"]}
            optimizers[name], variables[name] = opt, ws
        fetch["global_step"] = global_step
        train = tf.group(*trains, name="train")
        init = tf.global_variables_initializer()
    return Built(graph, init, train, fetch, lr_fed, global_step, optimizers, variables)


@functools.cache
def trajectory(dtype: str, mode: str, runner: str) -> list[dict]:
    built = build(dtype, mode)
    sess = tf.Session(graph=built.graph) if runner == "compiled" else Interpreter(built.graph)
    sess.run(built.init)
    history = []
    for k in range(STEPS):
        sess.run(built.train, feed_dict={built.lr_fed: _lr_value(CASES["sgd_fed_lr"], k)})
        history.append(sess.run(built.fetch))
    if runner == "compiled":
        sess.close()
    return history


MODES = ["explicit", "minimize"]
RUNNERS = ["compiled", "interp"]


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case_name", list(CASES))
def test_trajectory(case_name: str, dtype: str, mode: str, runner: str) -> None:
    """Variables and slots after every step match the NumPy formula."""
    got_history = trajectory(dtype, mode, runner)
    for k, want in enumerate(expected(case_name, dtype)):
        got = got_history[k][case_name]
        for key, want_state in want["vars"].items():
            for slot, value in want_state.items():
                if key == "mat" and CASES[case_name].partial and slot != "var":
                    continue
                rtol, floor = TOL[dtype]
                if CASES[case_name].schedule == "decay":
                    # the rate is a float32 pow: NumPy's array and scalar pow (and libm's powf)
                    # may round it 1 ulp apart, which float64 variables then show
                    rtol, floor = max(rtol, 2e-7), max(floor, 1e-7)
                np.testing.assert_allclose(
                    got["vars"][key][slot],
                    value,
                    rtol=rtol,
                    atol=floor * np.max(np.abs(value)),
                    err_msg=f"{case_name} {key} {slot} after step {k + 1}",
                )
                assert got["vars"][key][slot].dtype == np.dtype(dtype)
        for name, value in want["case"].items():
            assert got["case"][name] == value, f"{name} after step {k + 1}"


@pytest.mark.parametrize("runner", RUNNERS)
def test_global_step_counts_steps(runner: str) -> None:
    history = trajectory("float32", "explicit", runner)
    assert [h["global_step"] for h in history] == list(range(1, STEPS + 1))
    assert history[0]["global_step"].dtype == np.int64


def test_partial_gradients_leave_the_variable_and_make_no_slots() -> None:
    built = build("float32", "explicit")
    for name in ("sgd_partial", "adam_partial"):
        mat = built.variables[name]["mat"]
        final = trajectory("float32", "explicit", "compiled")[-1][name]["vars"]["mat"]["var"]
        np.testing.assert_array_equal(final, W0["mat"].astype(np.float32))
        opt = built.optimizers[name]
        assert all(opt.get_slot(mat, s) is None for s in opt.get_slot_names())
    with built.graph.as_default():
        names = [v.op.name for v in built.optimizers["adam_partial"].variables()]
    assert names == [
        "adam_partial/vec/Adam",
        "adam_partial/vec/Adam_1",
        "beta1_power_1",
        "beta2_power_1",
    ]


# -- slots ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "make, slots",
    [
        (lambda: tf.train.MomentumOptimizer(0.1, 0.9), {"momentum": ("Momentum", 0.0)}),
        (lambda: tf.train.AdagradOptimizer(0.1), {"accumulator": ("Adagrad", 0.1)}),
        (lambda: tf.train.AdagradOptimizer(0.1, 0.5), {"accumulator": ("Adagrad", 0.5)}),
        (
            lambda: tf.train.RMSPropOptimizer(0.1),
            {"rms": ("RMSProp", 1.0), "momentum": ("RMSProp_1", 0.0)},
        ),
        (
            lambda: tf.train.RMSPropOptimizer(0.1, centered=True),
            {"rms": ("RMSProp", 1.0), "mg": ("RMSProp_1", 0.0), "momentum": ("RMSProp_2", 0.0)},
        ),
        (lambda: tf.train.AdamOptimizer(), {"m": ("Adam", 0.0), "v": ("Adam_1", 0.0)}),
        (lambda: tf.train.GradientDescentOptimizer(0.1), {}),
        (
            lambda: tf.train.AdadeltaOptimizer(),
            {"accum": ("Adadelta", 0.0), "accum_update": ("Adadelta_1", 0.0)},
        ),
        (lambda: tf.train.FtrlOptimizer(0.1), {"accum": ("Ftrl", 0.1), "linear": ("Ftrl_1", 0.0)}),
        (
            lambda: tf.train.FtrlOptimizer(
                0.1, initial_accumulator_value=0.0, accum_name="acc", linear_name="lin"
            ),
            {"accum": ("acc", 0.0), "linear": ("lin", 0.0)},
        ),
        (lambda: tf.train.ProximalGradientDescentOptimizer(0.1), {}),
        (
            lambda: tf.train.ProximalAdagradOptimizer(0.1, 0.25),
            {"accumulator": ("ProximalAdagrad", 0.25)},
        ),
        (
            lambda: tf.train.AdagradDAOptimizer(0.1, tf.train.get_or_create_global_step()),
            {
                "gradient_accumulator": ("AdagradDA", 0.0),
                "gradient_squared_accumulator": ("AdagradDA_1", 0.1),
            },
        ),
    ],
)
def test_slots_are_named_shaped_and_initialized_as_tf1(make, slots: dict) -> None:
    w = tf.Variable(np.ones((3, 2)), name="W")  # float64
    with tf.variable_scope("layer"):
        b = tf.get_variable("b", shape=[4], dtype=tf.float32)
    opt = make()
    opt.apply_gradients([(tf.ones_like(w), w), (tf.ones_like(b), b)])
    assert opt.get_slot_names() == sorted(slots)
    interp = Interpreter()
    interp.run(tf.global_variables_initializer())
    for var in (w, b):
        for slot_name, (suffix, initial) in slots.items():
            slot = opt.get_slot(var, slot_name)
            assert slot.name == f"{var.op.name}/{suffix}:0"
            assert slot.shape == var.shape and slot.dtype == var.dtype
            assert not slot.trainable
            assert slot in tf.global_variables() and slot not in tf.trainable_variables()
            value = interp.run(slot)
            np.testing.assert_array_equal(
                value, np.full(var.shape.as_list(), initial, var.dtype.np)
            )
        assert opt.get_slot(var, "no_such_slot") is None
    other = tf.Variable(1.0, name="other")
    assert all(opt.get_slot(other, s) is None for s in slots)
    extra = ["beta1_power:0", "beta2_power:0"] if "m" in slots else []
    want = sorted([opt.get_slot(v, s).name for v in (w, b) for s in slots] + extra)
    assert [v.name for v in opt.variables()] == want


def test_adam_powers_are_float32_variables_next_to_the_first_variable() -> None:
    b = tf.Variable(np.zeros(2), name="b")
    a = tf.Variable(np.zeros(2), name="a")
    opt = tf.train.AdamOptimizer(beta1=0.5, beta2=0.25)
    opt.apply_gradients([(tf.ones_like(b), b), (tf.ones_like(a), a)])
    b1, b2 = opt._get_beta_accumulators()
    assert (b1.name, b2.name) == ("beta1_power:0", "beta2_power:0")
    assert b1.dtype == tf.float32 and not b1.trainable and b1 in tf.global_variables()
    assert tf.get_default_graph().node("beta1_power")["attrs"]["_class"] == ["loc:@a"]
    # a second apply_gradients reuses the powers and the slots
    opt.apply_gradients([(tf.ones_like(a), a)])
    assert len(opt.variables()) == 6


def test_op_names_follow_tf1() -> None:
    w = tf.Variable(np.zeros(2, np.float32), name="W")
    step = tf.train.get_or_create_global_step()
    train = tf.train.AdamOptimizer(0.1).apply_gradients([(tf.ones_like(w), w)], global_step=step)
    names = set(tf.get_default_graph().nx.nodes)
    assert train.name == "Adam" and train.type == "AssignAdd"
    assert {"Adam/update_W/ApplyAdam", "Adam/update", "Adam/learning_rate"} <= names
    assert train in tf.get_collection(tf.GraphKeys.TRAIN_OP)
    sgd = tf.train.GradientDescentOptimizer(0.1).apply_gradients([(w, w)], name="step")
    assert sgd.name == "step" and sgd.type == "NoOp"
    assert "step/update_W/ApplyGradientDescent" in tf.get_default_graph().nx.nodes


# -- global step ---------------------------------------------------------------------------------
def test_global_step_variable() -> None:
    assert tf.train.get_global_step() is None
    step = tf.train.get_or_create_global_step()
    assert step.name == "global_step:0" and step.dtype == tf.int64 and step.shape.ndims == 0
    assert tf.get_collection(tf.GraphKeys.GLOBAL_STEP) == [step]
    assert step in tf.global_variables() and step not in tf.trainable_variables()
    assert tf.train.get_or_create_global_step() is step and tf.train.get_global_step() is step
    with pytest.raises(ValueError, match='"global_step" already exists'):
        tf.train.create_global_step()
    other = tf.Graph()
    created = tf.train.create_global_step(other)
    assert created.graph is other and tf.train.get_global_step(other) is created
    w = tf.Variable(np.zeros(2, np.float32), name="w")
    train = tf.train.GradientDescentOptimizer(0.5).apply_gradients(
        [(tf.ones_like(w), w)], global_step=step
    )
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert tf.train.global_step(sess, step) == 0
        for _ in range(3):
            sess.run(train)
        assert tf.train.global_step(sess, step) == 3
        np.testing.assert_array_equal(sess.run(w), np.full(2, -1.5, np.float32))


def test_global_step_found_by_name_and_checked() -> None:
    tf.Variable(np.int64(0), name="global_step", trainable=False)
    assert tf.train.get_global_step().name == "global_step:0"
    tf.reset_default_graph()
    tf.Variable(np.zeros(2, np.int64), name="global_step")
    with pytest.raises(TypeError, match='Existing "global_step" is not scalar'):
        tf.train.get_global_step()
    tf.reset_default_graph()
    tf.Variable(0.0, name="global_step")
    with pytest.raises(TypeError, match="does not have integer type"):
        tf.train.get_or_create_global_step()


# -- learning-rate schedules ---------------------------------------------------------------------
def test_learning_rate_schedules_follow_tf1_formulas() -> None:
    step = tf.placeholder(tf.int64, [], name="step")
    schedules = {
        "exponential": (
            tf.train.exponential_decay(0.1, step, 4, 0.5),
            lambda s: 0.1 * 0.5 ** (s / 4),
        ),
        "exponential_staircase": (
            tf.train.exponential_decay(0.1, step, 4, 0.5, staircase=True),
            lambda s: 0.1 * 0.5 ** (s // 4),
        ),
        "natural_exp": (
            tf.train.natural_exp_decay(0.2, step, 3, 0.4),
            lambda s: 0.2 * np.exp(-0.4 * s / 3),
        ),
        "natural_exp_staircase": (
            tf.train.natural_exp_decay(0.2, step, 3, 0.4, staircase=True),
            lambda s: 0.2 * np.exp(-0.4 * (s // 3)),
        ),
        "inverse_time": (
            tf.train.inverse_time_decay(0.3, step, 2, 0.5),
            lambda s: 0.3 / (1 + 0.5 * s / 2),
        ),
        "inverse_time_staircase": (
            tf.train.inverse_time_decay(0.3, step, 2, 0.5, staircase=True),
            lambda s: 0.3 / (1 + 0.5 * (s // 2)),
        ),
        "polynomial": (
            tf.train.polynomial_decay(0.1, step, 8, 0.01),
            lambda s: (0.1 - 0.01) * (1 - min(s, 8) / 8) + 0.01,
        ),
        "polynomial_sqrt": (
            tf.train.polynomial_decay(0.1, step, 8, 0.01, power=0.5),
            lambda s: (0.1 - 0.01) * (1 - min(s, 8) / 8) ** 0.5 + 0.01,
        ),
        "polynomial_cycle": (
            tf.train.polynomial_decay(0.1, step, 4, 0.0, power=2.0, cycle=True),
            lambda s: 0.1 * (1 - s / (4 * max(1, np.ceil(s / 4)))) ** 2,
        ),
        "piecewise": (
            tf.train.piecewise_constant(step, [3, 9], [1.0, 0.5, 0.1]),
            lambda s: 1.0 if s <= 3 else 0.5 if s <= 9 else 0.1,
        ),
        "decayed_tensor_rate": (
            tf.train.exponential_decay(tf.constant(0.5, tf.float64), step, 10, 0.9),
            lambda s: 0.5 * 0.9 ** (s / 10),
        ),
    }
    assert schedules["exponential"][0].op.name == "ExponentialDecay"
    fetches = {k: t for k, (t, _) in schedules.items()}
    interp = Interpreter()
    with tf.Session() as sess:
        for s in [0, 1, 3, 4, 5, 8, 9, 10, 13]:
            for got in (sess.run(fetches, {step: s}), interp.run(fetches, {step: s})):
                for name, (tensor, formula) in schedules.items():
                    want = formula(s)
                    assert got[name].dtype == tensor.dtype.np, name
                    rtol = 1e-6 if tensor.dtype == tf.float32 else 1e-14
                    np.testing.assert_allclose(got[name], want, rtol=rtol, err_msg=f"{name}@{s}")
    assert schedules["piecewise"][0].dtype == tf.float32


def test_learning_rate_schedule_errors() -> None:
    with pytest.raises(ValueError, match="global_step is required for exponential_decay"):
        tf.train.exponential_decay(0.1, None, 10, 0.9)
    with pytest.raises(ValueError, match="boundaries should be 1 less than"):
        tf.train.piecewise_constant(tf.constant(1), [1, 2], [0.1, 0.2])
    with pytest.raises(ValueError, match="same dtype"):
        tf.train.piecewise_constant(tf.constant(1), [1], [0.1, tf.constant(1)])


# -- the update ops themselves -------------------------------------------------------------------
def _run_both(fetches: list, init: tf.Operation, train: tf.Tensor) -> list:
    results = []
    sess = tf.Session()
    interp = Interpreter()
    for runner in (sess, interp):
        runner.run(init)
        runner.run(train)
        results.append(runner.run(fetches))
    sess.close()
    return results


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_update_ops_nesterov_adam_adagrad_without_slot_update_and_aliased_gradient(dtype) -> None:
    rng = np.random.default_rng(3)
    w0, m0, g = (rng.uniform(0.1, 1.0, (2, 3)).astype(dtype) for _ in range(3))
    v0 = (m0 * m0).astype(dtype)
    t = dtype
    w1 = tf.Variable(w0, name="w1")
    m, v = tf.Variable(m0, name="m"), tf.Variable(v0, name="v")
    w2, acc = tf.Variable(w0, name="w2"), tf.Variable(v0 + 1, name="acc")
    w3 = tf.Variable(w0, name="w3")
    b1p, b2p, lr, b1, b2, eps = 0.81, 0.9801, 0.1, 0.9, 0.99, 1e-3
    adam = training_ops.apply_adam(w1, m, v, b1p, b2p, lr, b1, b2, eps, g, use_nesterov=True)
    adagrad = training_ops.apply_adagrad(w2, acc, 0.5, g, update_slots=False)
    sgd = training_ops.apply_gradient_descent(w3, 0.25, w3.value())  # the gradient is w3 itself
    init = tf.global_variables_initializer()
    h = {k: t(t(x)) for k, x in dict(b1p=b1p, b2p=b2p, lr=lr, b1=b1, b2=b2, eps=eps).items()}
    m1 = h["b1"] * m0 + (1 - h["b1"]) * g
    v1 = h["b2"] * v0 + (1 - h["b2"]) * g * g
    lr_t = h["lr"] * np.sqrt(1 - h["b2p"]) / (1 - h["b1p"])
    want = [
        w0 - lr_t * ((1 - h["b1"]) * g + h["b1"] * m1) / (np.sqrt(v1) + h["eps"]),
        m1,
        v1,
        w0 - t(0.5) * g / np.sqrt(v0 + 1),
        v0 + 1,
        w0 * t(0.75),
    ]
    rtol = 2e-6 if dtype == np.float32 else 1e-14
    for got in _run_both([w1, m, v, w2, acc, w3], init, tf.group(adam, adagrad, sgd)):
        for i, (a, b) in enumerate(zip(got, want)):
            assert a.dtype == dtype
            np.testing.assert_allclose(a, b, rtol=rtol, err_msg=f"output {i}")


def test_float32_updates_are_computed_in_float() -> None:
    w = tf.Variable(np.ones(4, np.float32), name="w")
    train = tf.train.AdamOptimizer(0.1).apply_gradients([(tf.ones_like(w), w)])
    with tf.Session() as sess:
        source = sess.source(train)
    kernels = source.split("int64_t tfc_arena_bytes")[0]
    assert "sqrtf(" in kernels and "double" not in kernels


# -- errors --------------------------------------------------------------------------------------
def test_apply_gradients_errors() -> None:
    w = tf.Variable(np.zeros(3, np.float32), name="w")
    u = tf.Variable(np.zeros(2, np.float32), name="u")
    opt = tf.train.GradientDescentOptimizer(0.1)
    with pytest.raises(ValueError, match="No gradients provided for any variable"):
        opt.apply_gradients([(None, w), (None, u)])
    with pytest.raises(ValueError, match="No variables provided"):
        opt.apply_gradients([])
    with pytest.raises(NotImplementedError, match="unsupported type"):
        opt.apply_gradients([(tf.ones([3]), w.value())])
    with pytest.raises(ValueError, match=r"ApplyGradientDescent.*\[2\]"):
        opt.apply_gradients([(tf.ones([2]), w)])
    with pytest.raises(TypeError, match="float64 that does not match type float32"):
        opt.apply_gradients([(tf.ones([3], tf.float64), w)])
    with pytest.raises(ValueError, match="Shape must be rank 0 but is rank 1"):
        tf.train.GradientDescentOptimizer(tf.constant([0.1, 0.2])).apply_gradients(
            [(tf.ones([3]), w)]
        )
    n = tf.Variable(np.zeros(3, np.int32), name="n")
    with pytest.raises(TypeError, match="int32 not in list of allowed values"):
        opt.apply_gradients([(tf.ones([3], tf.int32), n)])
    with pytest.raises(ValueError, match="initial_accumulator_value must be positive"):
        tf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.0)
    with pytest.raises(ValueError, match="Must specify the optimizer name"):
        tf.train.GradientDescentOptimizer(0.1, name="")


def test_compute_gradients_errors() -> None:
    opt = tf.train.GradientDescentOptimizer(0.1)
    loss = tf.constant(1.0)
    with pytest.raises(ValueError, match="No variables to optimize"):
        opt.compute_gradients(loss)
    with pytest.raises(ValueError, match="Invalid type tf.int32"):
        opt.compute_gradients(tf.constant(1), var_list=[tf.Variable(1.0)])
    with pytest.raises(ValueError, match="gate_gradients must be one of"):
        opt.compute_gradients(loss, gate_gradients=7)


def test_uninitialized_slot_is_reported_by_name() -> None:
    w = tf.Variable(np.zeros(3, np.float32), name="W")
    train = tf.train.MomentumOptimizer(0.1, 0.9).apply_gradients([(tf.ones([3]), w)])
    with tf.Session() as sess:
        sess.run(w.initializer)
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value W/Mom"):
            sess.run(train)
    interp = Interpreter()
    interp.run(w.initializer)
    with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value W/Mom"):
        interp.run(train)


# -- compute_gradients and minimize ---------------------------------------------------------------
def test_compute_gradients_pairs_and_gating() -> None:
    w = tf.Variable(np.array([1.0, -2.0], np.float32), name="w")
    u = tf.Variable(np.float32(3.0), name="u")
    tf.Variable(np.float32(5.0), name="frozen", trainable=False)
    loss = tf.reduce_sum(w * w) * 0.5 + 0.0 * tf.stop_gradient(u)
    opt = tf.train.GradientDescentOptimizer(0.5)
    pairs = opt.compute_gradients(loss)
    assert [v for _, v in pairs] == [w, u] and pairs[1][0] is None
    gated = opt.compute_gradients(loss, var_list=[w], gate_gradients=opt.GATE_GRAPH)
    assert gated[0][0].op.type == "Identity" and gated[0][0].op.control_inputs
    interp = Interpreter()
    interp.run(tf.global_variables_initializer())
    np.testing.assert_array_equal(interp.run(gated[0][0]), [1.0, -2.0])
    train = opt.apply_gradients(pairs)  # u's None gradient is skipped
    interp.run(train)
    np.testing.assert_array_equal(interp.run(w), [0.5, -1.0])
    assert interp.run(u) == np.float32(3.0)
    with pytest.raises(ValueError, match="No gradients provided for any variable, check"):
        opt.minimize(loss, var_list=[u])
    with pytest.raises(NotImplementedError, match="unsupported type"):
        opt.compute_gradients(loss, var_list=[w.value()])
    # a dict's values(), as GAN programs pass each network's weights
    by_values = opt.compute_gradients(loss, var_list={"w": w, "u": u}.values())
    assert [v for _, v in by_values] == [w, u]


def test_new_optimizer_arguments_are_checked_as_tf1() -> None:
    bad = [
        (lambda: tf.train.FtrlOptimizer(0.1, learning_rate_power=0.5), "needs to be negative"),
        (lambda: tf.train.FtrlOptimizer(0.1, initial_accumulator_value=-1.0), "positive or zero"),
        (
            lambda: tf.train.FtrlOptimizer(0.1, l1_regularization_strength=-0.1),
            "l1_regularization_strength -0.100000 needs to be positive or zero",
        ),
        (
            lambda: tf.train.FtrlOptimizer(0.1, l2_shrinkage_regularization_strength=-1),
            "l2_shrinkage_regularization_strength",
        ),
        (lambda: tf.train.ProximalAdagradOptimizer(0.1, 0.0), "must be positive: 0.0"),
        (
            lambda: tf.train.AdagradDAOptimizer(0.1, None, 0.0),
            "initial_gradient_squared_accumulator_value must be positive",
        ),
    ]
    for make, message in bad:
        with pytest.raises(ValueError, match=message):
            make()


def test_adagrad_da_op_takes_an_int64_step() -> None:
    w = tf.Variable(np.zeros(3, np.float32), name="w")
    g, gg = tf.Variable(np.zeros(3, np.float32)), tf.Variable(np.ones(3, np.float32))
    with pytest.raises(TypeError, match="'global_step' of 'ApplyAdagradDA' Op has type float32"):
        training_ops.apply_adagrad_da(w, g, gg, tf.ones([3]), 0.1, 0.0, 0.0, tf.constant(1.0))
    with pytest.raises(ValueError, match="rank 0 but is rank 1 for input 'global_step'"):
        training_ops.apply_adagrad_da(
            w, g, gg, tf.ones([3]), 0.1, 0.0, 0.0, tf.constant([1], tf.int64)
        )
    with pytest.raises(ValueError, match="needs distinct variables"):
        training_ops.apply_ftrl(w, g, g, tf.ones([3]), 0.1, 0.0, 0.0, -0.5)
    update = training_ops.apply_adagrad_da(w, g, gg, tf.fill([3], 2.0), 0.5, 0.0, 0.25, 3)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run(update)
    # g = 2, gg = 1 + 4, t = 3: var = -0.5 * 2 / (0.25 * 3 * 0.5 + sqrt(5))
    want = np.float32(-0.5 * 2 / (0.25 * 3 * 0.5 + np.sqrt(5.0)))
    np.testing.assert_allclose(got, np.full(3, want), rtol=1e-6)


# -- against TensorFlow itself ---------------------------------------------------------------------
def _tf1_trajectories(tf_module, dtype: str, steps: int = 8) -> list[dict]:
    """The new optimizers minimizing sum((w - b)^2 * a) for `steps` steps with `tf_module`
    (tfc or tf.compat.v1): each step's variables and slots."""
    t = tf_module
    graph = t.Graph()
    with graph.as_default():
        step = t.train.get_or_create_global_step()
        makers = {
            "adadelta": lambda: t.train.AdadeltaOptimizer(1.0, rho=0.9, epsilon=1e-6),
            "ftrl": lambda: t.train.FtrlOptimizer(
                0.1, l1_regularization_strength=0.01, l2_regularization_strength=0.1
            ),
            "ftrl_v2": lambda: t.train.FtrlOptimizer(
                0.1,
                learning_rate_power=-0.3,
                l1_regularization_strength=0.01,
                l2_shrinkage_regularization_strength=0.1,
                beta=0.2,
            ),
            "proximal_sgd": lambda: t.train.ProximalGradientDescentOptimizer(0.1, 0.05, 0.1),
            "proximal_adagrad": lambda: t.train.ProximalAdagradOptimizer(0.1, 0.1, 0.01, 0.1),
            "adagrad_da": lambda: t.train.AdagradDAOptimizer(
                0.1, step, l1_regularization_strength=0.01, l2_regularization_strength=0.1
            ),
            "rmsprop_centered": lambda: t.train.RMSPropOptimizer(0.01, momentum=0.5, centered=True),
        }
        fetches, updates = {}, []
        for name, make in makers.items():
            if dtype == "float64" and name.startswith("proximal"):
                continue  # TF's proximal optimizers do not cast their float32 hyper-parameters
            w = t.Variable(W0["mat"].astype(dtype), name=name)
            loss = t.reduce_sum(t.square(w - B["mat"].astype(dtype)) * A["mat"].astype(dtype))
            opt = make()
            updates.append(opt.minimize(loss))
            fetches[name] = {"var": w, **{s: opt.get_slot(w, s) for s in opt.get_slot_names()}}
        with t.control_dependencies(updates):
            train = t.assign_add(step, 1)
        init = t.global_variables_initializer()
    history = []
    with t.Session(graph=graph) as sess:
        sess.run(init)
        for _ in range(steps):
            sess.run(train)
            history.append(sess.run(fetches))
    return history


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_new_optimizers_match_tensorflow(dtype: str) -> None:
    tf1 = pytest.importorskip("tensorflow").compat.v1
    want = _tf1_trajectories(tf1, dtype)
    got = _tf1_trajectories(tf, dtype)
    # TF's Eigen kernels take rsqrt and pow by their own approximations: a few ulps apart
    rtol = 2e-5 if dtype == "float32" else 1e-12
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.keys() == w.keys()
        for name in w:
            for slot in w[name]:
                np.testing.assert_allclose(
                    g[name][slot],
                    w[name][slot],
                    rtol=rtol,
                    atol=rtol * np.max(np.abs(w[name][slot])),
                    err_msg=f"{name} {slot} after step {k + 1}",
                )
