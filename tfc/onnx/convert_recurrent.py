"""ONNX recurrent layers (RNN, GRU, LSTM) unrolled over their sequence, whose length is static:
one step of matrix products and activations per element, forward, reverse or both directions."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import tfc.ops.array as _array
import tfc.ops.logic as _logic
import tfc.ops.math as _math
import tfc.ops.nn as _nn
from tfc.ir.graph import Tensor
from tfc.onnx.node import NodeContext, converter
from tfc.ops.constant import constant
from tfc.ops.linalg import matmul

Activation = Callable[[Tensor], Tensor]


def _activation(ctx: NodeContext, name: str, alpha: float | None, beta: float | None) -> Activation:
    def c(x: Tensor, v: float) -> Tensor:
        return constant(v, dtype=x.dtype)

    lowered = name.lower()
    if lowered == "sigmoid":
        return _math.sigmoid
    if lowered == "tanh":
        return _math.tanh
    if lowered == "relu":
        return _nn.relu
    if lowered == "affine":
        return lambda x: _math.add(_math.multiply(x, c(x, alpha)), c(x, beta))
    if lowered == "leakyrelu":
        return lambda x: _nn.leaky_relu(x, 0.01 if alpha is None else alpha)
    if lowered == "thresholdedrelu":
        a = 1.0 if alpha is None else alpha
        return lambda x: _logic.where(_logic.greater(x, c(x, a)), x, _array.zeros_like(x))
    if lowered == "scaledtanh":
        return lambda x: _math.multiply(c(x, alpha), _math.tanh(_math.multiply(x, c(x, beta))))
    if lowered == "hardsigmoid":
        a, b = (0.2 if alpha is None else alpha), (0.5 if beta is None else beta)
        return lambda x: _math.minimum(
            _math.maximum(_math.add(_math.multiply(x, c(x, a)), c(x, b)), c(x, 0.0)), c(x, 1.0)
        )
    if lowered == "elu":
        a = 1.0 if alpha is None else alpha
        return lambda x: _logic.where(
            _logic.greater(x, c(x, 0.0)), x, _math.multiply(c(x, a), _math.expm1(x))
        )
    if lowered == "softsign":
        return _nn.softsign
    if lowered == "softplus":
        return _nn.softplus
    raise ctx.error(f"unknown activation {name!r}")


def _activations(ctx: NodeContext, defaults: list[str], directions: int) -> list[list[Activation]]:
    """The activation functions of each direction (the attribute lists them per direction)."""
    names = ctx.attr("activations") or defaults * directions
    alphas = ctx.attr("activation_alpha") or []
    betas = ctx.attr("activation_beta") or []
    per = len(defaults)
    if len(names) != per * directions:
        raise ctx.error(f"expected {per * directions} activations, got {len(names)}")
    fns = [
        _activation(
            ctx, n, alphas[i] if i < len(alphas) else None, betas[i] if i < len(betas) else None
        )
        for i, n in enumerate(names)
    ]
    return [fns[d * per : (d + 1) * per] for d in range(directions)]


def _clipped(ctx: NodeContext, x: Tensor) -> Tensor:
    clip = ctx.attr("clip")
    if clip is None:
        return x
    return _math.minimum(
        _math.maximum(x, constant(-clip, dtype=x.dtype)), constant(clip, dtype=x.dtype)
    )


def _slice_direction(t: Tensor | None, d: int) -> Tensor | None:
    """Row `d` of a per-direction tensor (num_directions, ...)."""
    if t is None:
        return None
    return _array.squeeze(
        _array.slice(t, [d] + [0] * (len(t.shape) - 1), [1] + [-1] * (len(t.shape) - 1)), [0]
    )


def _prepare(ctx: NodeContext, gates: int):
    """(steps as (batch, input) tensors, W, R, B, H0, C0-or-None, P, directions, hidden, layout)
    with the batch-major layout turned sequence-major."""
    x = ctx.input(0)
    shape = x._shape_tuple
    if shape is None or any(d is None for d in shape):
        raise ctx.error("the input's shape must be known when the model is imported")
    layout = ctx.attr("layout", 0)
    if layout:
        x = _array.transpose(x, [1, 0, 2])
        shape = (shape[1], shape[0], shape[2])
    steps, batch, _ = shape
    direction = ctx.attr("direction", "forward")
    directions = 2 if direction == "bidirectional" else 1
    hidden = ctx.attr("hidden_size") or ctx.input(2)._shape_tuple[-1]
    if ctx.has_input(4):
        lens = ctx.require_const(4, "sequence_lens")
        if np.any(np.asarray(lens) != steps):
            raise ctx.error("sequence_lens shorter than the sequence are not supported")

    def initial(i: int) -> Tensor | None:
        if not ctx.has_input(i):
            return None
        t = ctx.input(i)
        return _array.transpose(t, [1, 0, 2]) if layout else t

    xs = _array.unstack(x, num=steps, axis=0)
    return xs, direction, directions, hidden, batch, layout, initial


def _sequences(xs: list[Tensor], direction: str, d: int) -> list[Tensor]:
    reverse = direction == "reverse" or (direction == "bidirectional" and d == 1)
    return xs[::-1] if reverse else xs


def _outputs(
    ctx: NodeContext,
    per_direction: list[tuple[list[Tensor], list[Tensor]]],
    direction: str,
    layout: int,
) -> list:
    """Y (steps, directions, batch, hidden) and the last states (directions, batch, hidden)."""
    ys, finals = [], [[] for _ in per_direction[0][1]]
    for d, (hs, last) in enumerate(per_direction):
        reverse = direction == "reverse" or (direction == "bidirectional" and d == 1)
        ys.append(_array.stack(hs[::-1] if reverse else hs, axis=0))
        for k, state in enumerate(last):
            finals[k].append(state)
    y = _array.stack(ys, axis=1)
    states = [_array.stack(f, axis=0) for f in finals]
    if layout:
        y = _array.transpose(y, [2, 0, 1, 3])
        states = [_array.transpose(s, [1, 0, 2]) for s in states]
    return [y, *states]


def _zeros(batch: int, hidden: int, like: Tensor) -> Tensor:
    return _array.zeros([batch, hidden], dtype=like.dtype)


def _split(t: Tensor, parts: int, axis: int = -1) -> list[Tensor]:
    return list(_array.split(t, parts, axis=axis))


@converter("RNN")
def _rnn(ctx: NodeContext) -> list:
    xs, direction, directions, hidden, batch, layout, initial = _prepare(ctx, 1)
    acts = _activations(ctx, ["Tanh"], directions)
    w, r, b, h0 = ctx.input(1), ctx.input(2), ctx.optional(3), initial(5)
    results = []
    for d in range(directions):
        wd, rd = _slice_direction(w, d), _slice_direction(r, d)
        bias = None
        if b is not None:
            wb, rb = _split(_slice_direction(b, d), 2)
            bias = _math.add(wb, rb)
        h = _slice_direction(h0, d) if h0 is not None else _zeros(batch, hidden, xs[0])
        hs = []
        for x in _sequences(xs, direction, d):
            z = _math.add(matmul(x, wd, transpose_b=True), matmul(h, rd, transpose_b=True))
            if bias is not None:
                z = _math.add(z, bias)
            h = acts[d][0](_clipped(ctx, z))
            hs.append(h)
        results.append((hs, [h]))
    return _outputs(ctx, results, direction, layout)


@converter("GRU")
def _gru(ctx: NodeContext) -> list:
    xs, direction, directions, hidden, batch, layout, initial = _prepare(ctx, 3)
    acts = _activations(ctx, ["Sigmoid", "Tanh"], directions)
    w, r, b, h0 = ctx.input(1), ctx.input(2), ctx.optional(3), initial(5)
    linear_before_reset = bool(ctx.attr("linear_before_reset", 0))
    results = []
    for d in range(directions):
        f, g = acts[d]
        w_z, w_r, w_h = _split(_slice_direction(w, d), 3, axis=0)
        r_z, r_r, r_h = _split(_slice_direction(r, d), 3, axis=0)
        if b is not None:
            wb_z, wb_r, wb_h, rb_z, rb_r, rb_h = _split(_slice_direction(b, d), 6)
        else:
            wb_z = wb_r = wb_h = rb_z = rb_r = rb_h = None
        h = _slice_direction(h0, d) if h0 is not None else _zeros(batch, hidden, xs[0])

        def affine(x: Tensor, weight: Tensor, *biases: Tensor | None) -> Tensor:
            y = matmul(x, weight, transpose_b=True)
            for bias in biases:
                if bias is not None:
                    y = _math.add(y, bias)
            return y

        hs = []
        for x in _sequences(xs, direction, d):
            z = f(_clipped(ctx, _math.add(affine(x, w_z, wb_z), affine(h, r_z, rb_z))))
            reset = f(_clipped(ctx, _math.add(affine(x, w_r, wb_r), affine(h, r_r, rb_r))))
            if linear_before_reset:
                candidate = _math.add(
                    affine(x, w_h, wb_h), _math.multiply(reset, affine(h, r_h, rb_h))
                )
            else:
                candidate = _math.add(
                    affine(x, w_h, wb_h), affine(_math.multiply(reset, h), r_h, rb_h)
                )
            candidate = g(_clipped(ctx, candidate))
            one = constant(1.0, dtype=z.dtype)
            h = _math.add(_math.multiply(_math.subtract(one, z), candidate), _math.multiply(z, h))
            hs.append(h)
        results.append((hs, [h]))
    return _outputs(ctx, results, direction, layout)


@converter("LSTM")
def _lstm(ctx: NodeContext) -> list:
    xs, direction, directions, hidden, batch, layout, initial = _prepare(ctx, 4)
    acts = _activations(ctx, ["Sigmoid", "Tanh", "Tanh"], directions)
    w, r, b = ctx.input(1), ctx.input(2), ctx.optional(3)
    h0, c0, p = initial(5), initial(6), ctx.optional(7)
    input_forget = bool(ctx.attr("input_forget", 0))
    results = []
    for d in range(directions):
        f, g, hact = acts[d]
        wd, rd = _slice_direction(w, d), _slice_direction(r, d)
        bias = None
        if b is not None:
            wb, rb = _split(_slice_direction(b, d), 2)
            bias = _math.add(wb, rb)
        peep = _split(_slice_direction(p, d), 3) if p is not None else None
        h = _slice_direction(h0, d) if h0 is not None else _zeros(batch, hidden, xs[0])
        c = _slice_direction(c0, d) if c0 is not None else _zeros(batch, hidden, xs[0])
        hs = []
        for x in _sequences(xs, direction, d):
            gates = _math.add(matmul(x, wd, transpose_b=True), matmul(h, rd, transpose_b=True))
            if bias is not None:
                gates = _math.add(gates, bias)
            i, o, fg, cand = _split(gates, 4)
            if peep is not None:
                i = _math.add(i, _math.multiply(peep[0], c))
                fg = _math.add(fg, _math.multiply(peep[2], c))
            i = f(_clipped(ctx, i))
            fg = f(_clipped(ctx, fg))
            if input_forget:
                fg = _math.subtract(constant(1.0, dtype=i.dtype), i)
            cand = g(_clipped(ctx, cand))
            c = _math.add(_math.multiply(fg, c), _math.multiply(i, cand))
            if peep is not None:
                o = _math.add(o, _math.multiply(peep[1], c))
            o = f(_clipped(ctx, o))
            h = _math.multiply(o, hact(c))
            hs.append(h)
        results.append((hs, [h, c]))
    return _outputs(ctx, results, direction, layout)
