"""Random well-typed graphs: a theme picks what a case is made of, the op table makes each node.

Themes: element-wise chains with broadcasting (what fusion groups), any op of the table, dense
layers (matmul + bias, with and without activations), convolution stacks, reductions over every
axis set, the patterns simplify, fold and CSE rewrite. Then, often, a random scalar loss whose
gradients are fetched (tf.gradients) or applied by an optimizer (minimize) to the case's
variables. Case `index` of `seed` is the same graph on every machine.
"""

from __future__ import annotations

import zlib

import numpy as np

from tfc.ops.registry import REGISTRY

from .case import Case
from .gen import FLOATS, Gen, Rejected, Val
from .ops import WEIGHTS, all_rows, build_elementwise, elementwise, elementwise_ops

OPTIMIZERS = (
    "tf.train.GradientDescentOptimizer(0.1)",
    "tf.train.MomentumOptimizer(0.05, 0.9)",
    "tf.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True)",
    # epsilon 0.1: Adam's first step is lr * sign(gradient) where the gradient is far below
    # epsilon, and a gradient that is zero but for rounding has no sign to agree on
    "tf.train.AdamOptimizer(0.01, epsilon=0.1)",
    "tf.train.AdagradOptimizer(0.1)",
    "tf.train.RMSPropOptimizer(0.01)",
    "tf.train.RMSPropOptimizer(0.01, momentum=0.5, centered=True)",
    "tf.train.AdadeltaOptimizer(1.0)",
    "tf.train.FtrlOptimizer(0.1, l1_regularization_strength=0.01, l2_regularization_strength=0.02)",
    "tf.train.FtrlOptimizer(0.1, l2_shrinkage_regularization_strength=0.05)",
    "tf.train.ProximalGradientDescentOptimizer(0.1, l1_regularization_strength=0.01)",
    "tf.train.ProximalAdagradOptimizer(0.1, l1_regularization_strength=0.01)",
    "tf.train.AdagradDAOptimizer(0.1, tf.Variable(np.int64(1)))",
)
ACTIVATIONS = ("tf.nn.relu", "tf.tanh", "tf.sigmoid", "tf.nn.elu", "tf.nn.relu6", "tf.nn.softplus",
               "tf.nn.leaky_relu", "tf.nn.selu")  # fmt: skip


def generate(seed: int, index: int, rejected=None) -> Case:
    """Case `index` of the batch of `seed`; `rejected` (a Counter) counts refused rows by op."""
    rng = np.random.default_rng([seed, index])
    g = Gen(rng, origin=f"seed {seed}, graph {index}")
    theme = THEMES[int(rng.integers(0, len(THEMES)))]
    for _ in range(5):  # a theme that could make nothing starts over with another
        try:
            theme(g)
            break
        except Rejected as e:
            g.rejected[theme.__name__] += 1
            del e
            theme = _mixed
    finish(g)
    if rejected is not None:
        rejected.update(g.rejected)
    return g.case


# -- themes --------------------------------------------------------------------------------------
def _steps(g: Gen, names: list[str], weights: list[float], count: int) -> None:
    rows = all_rows()
    p = np.array(weights, dtype=float)
    p /= p.sum()
    made = 0
    for _ in range(count * 4):
        if made >= count:
            break
        name = names[int(g.rng.choice(len(names), p=p))]
        try:
            rows[name](g)
            made += 1
        except Rejected as e:
            g.rejected[name] += 1
            g.last_rejection = str(e)


def _elementwise(g: Gen) -> None:
    names = elementwise_ops()
    weights = [3.0 if n in ("Add", "Mul", "Sub", "Relu", "Exp", "Tanh") else 1.0 for n in names]
    names += ["patterns", "BiasAdd", "Sum", "Reshape", "ExpandDims"]
    weights += [2.0, 1.0, 1.5, 1.0, 0.5]
    _steps(g, names, weights, int(g.rng.integers(2, 10)))


def _mixed(g: Gen) -> None:
    rows = all_rows()
    names = list(rows)
    weights = [WEIGHTS.get(n, 0.4 if n in elementwise_ops() else 1.0) for n in names]
    _steps(g, names, weights, int(g.rng.integers(2, 9)))


def _reductions(g: Gen) -> None:
    _steps(
        g, ["Add", "Mul", "Exp", "Square", "patterns"], [1, 1, 1, 1, 1], int(g.rng.integers(0, 3))
    )
    _steps(g, ["Sum", "Softmax", "ArgMax", "Cumsum", "norms", "Add"], [6, 1, 1, 1, 1, 1],
           int(g.rng.integers(1, 5)))  # fmt: skip


def _dense(g: Gen) -> None:
    """matmul [+ bias] [activation] layers, some without activations (the chains a product
    feeds straight into the next), on variables or feeds."""
    dtype = "float32" if g.rng.random() < 0.85 else "float64"
    batch = int(g.rng.choice([1, 2, 3, 5, 8, 16]))
    width = int(g.rng.choice([1, 3, 4, 7, 16, 20]))
    x = g.feed(dtype, (batch, width))
    for _ in range(int(g.rng.integers(1, 5))):
        out = int(g.rng.choice([1, 2, 3, 5, 8, 16]))
        use_var = g.rng.random() < 0.7
        w = g.var(dtype, (width, out)) if use_var else g.feed(dtype, (width, out))
        if g.rng.random() < 0.15:  # the weights stored transposed
            wt = g.emit(f"tf.transpose({w})", [w], exact=True, inexact=0)[0]
            x = g.emit(f"tf.matmul({x}, {wt}, transpose_b=True)", [x, wt])[0]
        else:
            x = g.emit(f"tf.matmul({x}, {w})", [x, w])[0]
        r = g.rng.random()
        if r < 0.7:
            b = g.var(dtype, (out,)) if use_var else g.feed(dtype, (out,))
            x = g.emit(f"tf.nn.bias_add({x}, {b})" if r < 0.4 else f"{x} + {b}", [x, b])[0]
        if g.rng.random() < 0.5:
            act = str(g.rng.choice(ACTIVATIONS))
            x = g.emit(f"{act}({x})", [x])[0]
        width = out


def _conv(g: Gen) -> None:
    rows = all_rows()
    for _ in range(int(g.rng.integers(1, 4))):
        name = str(g.rng.choice(["Conv2D", "Conv2D", "MaxPool", "BiasAdd", "Relu"]))
        try:
            rows[name](g)
        except Rejected:
            g.rejected[name] += 1
    images = [v for v in g.vals if v.rank == 4 and v.kind == "f" and v.source == "op"]
    if images and g.rng.random() < 0.6:
        x = images[-1]
        flat = g.emit(f"tf.reshape({x}, [{x.shape[0]}, -1])", [x], exact=x.exact, inexact=0)[0]
        w = g.var(x.dtype, (flat.shape[1], int(g.rng.choice([1, 2, 3]))))
        g.emit(f"tf.matmul({flat}, {w})", [flat, w])


def _patterns(g: Gen) -> None:
    _steps(g, ["patterns", "Add", "Mul", "Transpose", "Reshape", "Cast", "Exp"],
           [5, 1, 1, 1, 1, 1, 1], int(g.rng.integers(2, 8)))  # fmt: skip


def _elementwise_only(g: Gen) -> None:
    """One element-wise op of every kind of input: broadcast, constant, exact."""
    names = elementwise_ops()
    op = names[int(g.rng.integers(0, len(names)))]
    build_elementwise(g, op)
    if elementwise(op).arity == 1 and g.rng.random() < 0.5:
        build_elementwise(g, op)


THEMES = [_elementwise, _elementwise, _mixed, _mixed, _mixed, _reductions, _dense, _dense, _conv,
          _patterns, _elementwise_only]  # fmt: skip


# -- losses, gradients, training -----------------------------------------------------------------
def finish(g: Gen) -> None:
    """Maybe a scalar loss of a float value with its gradients or an optimizer step; then the
    fetches: every value nothing reads, some others."""
    floats = [v for v in g.vals if v.kind == "f" and v.source in ("op", "feed", "var")]
    trains = any(v.source == "var" for v in g.vals)
    if floats and g.rng.random() < (0.8 if trains else 0.4):
        try:
            _loss_and_gradients(g, floats)
        except Rejected as e:
            g.rejected["gradients"] += 1
            g.last_rejection = str(e)
    # variables only the optimizer would update: feeds instead when nothing trains them
    sinks = [v for v in g.vals if v.name not in g.consumed and v.source == "op"]
    others = [v for v in g.vals if v.source == "op" and v not in sinks and g.rng.random() < 0.2]
    chosen = {v.name for v in sinks + others} | g.fetch_also
    fetch = [v.name for v in g.vals if v.name in chosen]
    if not fetch and g.vals:
        fetch = [g.vals[-1].name]
    g.case.fetch = fetch[:12]


def _loss_and_gradients(g: Gen, floats: list[Val]) -> None:
    rng = g.rng
    value = floats[-1] if rng.random() < 0.6 else floats[int(rng.integers(0, len(floats)))]
    r = rng.random()
    if r < 0.4:
        loss = g.emit(f"tf.reduce_sum({value})", [value])[0]
    elif r < 0.7:
        loss = g.emit(f"tf.reduce_mean(tf.square({value}))", [value])[0]
    else:
        weights = g.feed(value.dtype, value.shape)
        loss = g.emit(f"tf.reduce_sum({value} * {weights})", [value, weights])[0]
    behind = _ancestors(g, loss.name)
    variables = [v for v in g.vals if v.source == "var" and v.kind == "f" and v.name in behind]
    if variables and rng.random() < 0.7:
        opt = OPTIMIZERS[int(rng.integers(0, len(OPTIMIZERS)))]
        names = ", ".join(v.name for v in variables)
        g.emit(f"{opt}.minimize({loss}, var_list=[{names}])", [loss], kind="train", n_out=1)
        g.fetch_also.add(loss.name)
        return
    behind = _ancestors(g, loss.name)
    xs = [
        v for v in g.vals if v.source in ("feed", "var") and v.dtype in FLOATS and v.name in behind
    ]
    xs = [v for v in xs if rng.random() < 0.7] or xs[:1]
    if not xs:
        raise Rejected("no float feed to differentiate by")
    depth = 2 * loss.depth + 2
    outs = g.emit(f"tf.gradients({loss}, [{', '.join(v.name for v in xs)}])",
                  [loss, *xs], n_out=len(xs), fetch=True, seq=True)  # fmt: skip
    for v in outs:
        v.depth = depth
        g.case.depth[v.name] = depth


def _ancestors(g: Gen, name: str) -> set[str]:
    """The names `name`'s statement reads, directly or not."""
    producer = {n: s for s in g.case.stmts for n in s.out}
    seen, stack = set(), [name]
    while stack:
        n = stack.pop()
        if n in seen or n not in producer:
            continue
        seen.add(n)
        stack.extend(producer[n].reads())
    return seen


def one_per_op(seed: int, tries: int = 40) -> tuple[dict[str, Case], dict[str, str]]:
    """A case holding each op of the table (its row run on a fresh case until the graph has a
    node of that type), and for each op no row made, the last reason."""
    rows = all_rows()
    made: dict[str, Case] = {}
    failed: dict[str, str] = {}
    for op, build_row in sorted(rows.items()):
        if op not in REGISTRY:
            continue
        for attempt in range(tries):
            rng = np.random.default_rng([seed, attempt, zlib.crc32(op.encode())])
            g = Gen(rng, origin=f"{op} (seed {seed}, try {attempt})")
            try:
                build_row(g)
            except Rejected as e:
                failed[op] = str(e)
                continue
            if any(node["op"] == op for _, node in g.graph.nx.nodes(data=True)):
                finish(g)
                made[op] = g.case
                failed.pop(op, None)
                break
            failed[op] = "the row made no node of this type"
    return made, failed
