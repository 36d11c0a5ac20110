"""If and While: conditionals and loops as ops that hold nested graphs (tfc.ir.subgraph).

If (inputs: pred, K carried values, captures; attributes then_branch, else_branch) runs one of
its branches. While (inputs: L loop variables, captures, and an optional maximum_iterations;
attributes cond, body) runs `body` while `cond` holds. A nested graph's Feed number i stands for
the op's input i (an If's input i + 1: input 0 is its predicate); its fetches are the op's
outputs. Compiled, an If is a C `if` around the kernels of its two branches and a While a C loop
around those of its condition and body (tfc/codegen/control_flow.py); the interpreter runs the
nested graphs with their references.

Values a branch or body updates in place (a TensorArray's buffer, its written-flags) are
*carried*: the op copies them into its own output buffer before the first branch or iteration
runs, and the nested graph works on that buffer, so the value the op was given stays as it was.
A While's loop variables are carried values; a value a body or condition updates that the user
did not pass in loop_vars (a TensorArray read with clear_after_read) becomes a loop variable the
user does not see.

Outputs: an If's R results, its K carried values, then values saved for its gradient (set by one
branch, left unset by the other). A While's L loop variables, the number of iterations it ran
(int32), then accumulators: a value of the body saved at every iteration (row i: iteration i) for
the gradient, [bound, ...] where `bound` is the static limit of the iterations the specialize
pass finds (maximum_iterations, or a counting loop's trip count).

Gradients (tf.gradients through cond and while_loop): an If's gradient is an If on the same
predicate whose branches are the gradients of the forward branches, so only the taken branch's
gradient runs; values of a branch that the gradient reads become saved outputs of the forward If.
A While's gradient is a While that runs the same number of iterations in reverse, its body the
gradient of the forward body: values of iteration i the gradient reads are accumulated by the
forward loop and read back at row i; values computed from loop-invariant inputs only are
recomputed. The gradient of a captured input is summed over the iterations.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import Graph, Operation, Tensor, get_default_graph
from tfc.ir.subgraph import Subgraph
from tfc.ir.tensor_shape import Shape, num_elements
from tfc.ops.evaluate import evaluate_graph, run_order
from tfc.ops.registry import OpContext, OpDef, apply_op, get_opdef, register

__all__ = [
    "fetch_tensor",
    "fetch_type",
    "make_if",
    "make_while",
    "mutated_feeds",
    "register_subgraph_gradients",
    "while_layout",
    "if_layout",
]

# tf.gradients over a nested graph, building into the default graph: autodiff registers it
# (tfc.autodiff.gradients), as the client registers the default session for Tensor.eval.
# (ys, xs, grad_ys) -> one gradient (or None) per x
_subgraph_gradients: list[Callable[..., list]] = []


def register_subgraph_gradients(fn: Callable[..., list]) -> None:
    """Install the function the gradient rules of If and While differentiate bodies with."""
    _subgraph_gradients[:] = [fn]


def _gradients(ys: list[Tensor], xs: list[Tensor], grad_ys: list[Tensor]) -> list:
    if not _subgraph_gradients:
        raise LookupError("gradients of control flow need tfc.autodiff (import tfc)")
    return _subgraph_gradients[0](ys, xs, grad_ys)


# -- nested graphs' interfaces ------------------------------------------------------------------
def fetch_tensor(graph: Graph, fetch: Any) -> Tensor | None:
    """The tensor of a nested graph's fetch (None: a branch leaves that output unset)."""
    if fetch is None:
        return None
    return graph.get_operation_by_name(fetch[0]).outputs[fetch[1]]


def fetch_type(graph: Graph, fetch: Any) -> tuple[_dt.DType, Shape] | None:
    if fetch is None:
        return None
    node = graph.node(fetch[0])
    shape = node["shapes"][fetch[1]]
    return node["dtypes"][fetch[1]], None if shape is None else tuple(shape)


def alias_root(graph: Graph, tensor: tuple[str, int]) -> tuple[str, int]:
    """The tensor whose buffer `tensor` is: followed through ops whose output 0 aliases an
    input (Identity, Reshape, a TensorArray write)."""
    name, out = tensor
    while out == 0:
        alias = get_opdef(graph.op_type(name)).alias
        if alias is None:
            break
        name, out = graph.input_edges(name)[alias]
    return name, out


def mutated_feeds(graph: Graph) -> list[str]:
    """The Feeds of a nested graph that one of its ops updates in place (a TensorArray's buffer
    or flags): values the op holding the graph must carry."""
    found: list[str] = []
    for name in graph.node_names():
        inputs = graph.input_edges(name)
        for i in get_opdef(graph.op_type(name)).ref_inputs:
            if i < len(inputs):
                root = alias_root(graph, inputs[i])[0]
                if graph.op_type(root) == "Feed" and root not in found:
                    found.append(root)
    return found


def _is_variable(t: Tensor) -> bool:
    """Whether `t` is a variable's buffer (through aliases, and the captures of the nested
    graphs it is in)."""
    while True:
        name, out = alias_root(t.graph, (t.op.name, t.value_index))
        graph = t.graph
        if graph.op_type(name) == "VariableV2":
            return True
        outer = [o for o, feed in getattr(graph, "captures", []) if feed.op.name == name]
        if graph.op_type(name) != "Feed" or not outer:
            return False
        t = outer[0]


def _check_carried(carried: list[Tensor], what: str) -> None:
    for t in carried:
        if _is_variable(t):
            raise NotImplementedError(
                f"{what} updates variable {t.op.name} (an assign inside a branch or loop "
                "body): tfc does not compile variable updates inside tf.cond or tf.while_loop "
                "yet. Compute the new value in the branch or loop and assign it outside."
            )


def _common_shape(a: Shape, b: Shape) -> Shape:
    """The most specific shape both `a` and `b` have (TF's most_specific_compatible_shape)."""
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x if x == y else None for x, y in zip(a, b))


# == If ===========================================================================================
def _if_infer(ctx: OpContext) -> list:
    if ctx.in_dtypes[0] != _dt.bool_:
        raise TypeError(
            f"Input 'pred' of 'If' Op has type {ctx.in_dtypes[0].name} that does not match "
            "expected type of bool."
        )
    if ctx.in_shapes[0] is not None and len(ctx.in_shapes[0]) != 0:
        raise ctx.error(f"Shape must be rank 0 but is rank {len(ctx.in_shapes[0])}")
    then, other = ctx.attrs["then_branch"], ctx.attrs["else_branch"]
    fa, fb = then.graph_attrs["fetches"], other.graph_attrs["fetches"]
    if len(fa) != len(fb):
        raise ctx.error(f"The branches of an If give {len(fa)} and {len(fb)} outputs")
    outs = []
    for j, (ta, tb) in enumerate(zip(fa, fb)):
        a, b = fetch_type(then, ta), fetch_type(other, tb)
        if a is None and b is None:
            raise ctx.error(f"Neither branch of the If gives output {j}")
        if a is not None and b is not None:
            if a[0] != b[0]:
                raise TypeError(
                    "Outputs of 'true_fn' and 'false_fn' must have the same type(s). Received "
                    f"{a[0].name} from 'true_fn' and {b[0].name} from 'false_fn'."
                )
            outs.append((a[0], _common_shape(a[1], b[1])))
        else:
            outs.append(a or b)
    return outs


def _if_reference(ctx: OpContext, pred: np.ndarray, *args: np.ndarray) -> list:
    carried = ctx.attrs["carried"]
    values = [np.array(a, copy=True) for a in args[:carried]]
    branch = ctx.attrs["then_branch" if bool(pred) else "else_branch"]
    outs = evaluate_graph(branch, values + list(args[carried:]), ctx.state, copy_fetches=False)
    return [o if o is None or any(o is v for v in values) else np.array(o, copy=True) for o in outs]


def make_if(pred: Tensor, then: Subgraph, other: Subgraph, name: str) -> Operation:
    """The If node of two built branches (their fetches set: the results), in the graph the
    branches are nested in. Captured values a branch updates in place become carried values."""
    graph = then.outer
    results = len(then.graph_attrs["fetches"])
    carried: list[Tensor] = []
    for branch in (then, other):
        mutated = set(mutated_feeds(branch))
        for outer, feed in branch.captures:
            if feed.op.name in mutated and not any(outer is c for c in carried):
                carried.append(outer)
    _check_carried(carried, f"cond '{name.rstrip('/')}'")
    for branch in (then, other):
        feeds = [branch.capture(t) for t in carried]
        branch.graph_attrs["fetches"] = branch.graph_attrs["fetches"] + [
            (f.op.name, 0) for f in feeds
        ]
    captures = _union_captures([then, other], exclude=carried)
    index = _feed_indexer(carried + captures, offset=0)
    for branch in (then, other):
        branch.set_feed_indices(lambda feed, b=branch: index(b, feed))
    attrs = {
        "then_branch": then,
        "else_branch": other,
        "results": results,
        "carried": len(carried),
    }
    waits = _control_captures([then, other])
    with graph.control_dependencies(waits):
        return apply_op("If", [pred, *carried, *captures], attrs, name=name, graph=graph)


def _union_captures(graphs: Sequence[Subgraph], exclude: Sequence[Tensor]) -> list[Tensor]:
    """The outer tensors the graphs capture, each once, in order of first capture."""
    found: list[Tensor] = []
    for g in graphs:
        for outer, _ in g.captures:
            if not any(outer is t for t in found) and not any(outer is t for t in exclude):
                found.append(outer)
    return found


def _feed_indexer(inputs: list[Tensor], offset: int) -> Callable[[Subgraph, Tensor], int]:
    """index(graph, feed) of a feed that captures one of `inputs` (its position + offset)."""

    def index(graph: Subgraph, feed: Tensor) -> int:
        for outer, inner in graph.captures:
            if inner is feed:
                for k, t in enumerate(inputs):
                    if t is outer:
                        return k + offset
        raise ValueError(f"feed {feed.name} of {graph.get_name_scope()} stands for no input")

    return index


def _control_captures(graphs: Sequence[Subgraph]) -> list[Operation]:
    found: list[Operation] = []
    for g in graphs:
        found += [op for op in g.control_captures if op not in found]
    return found


# -- If's gradient ------------------------------------------------------------------------------
def _if_grad(op: Operation, *dys: Tensor | None) -> list:
    graph = get_default_graph()  # where the gradient is built (a gradient body, for a nested If)
    attrs = op._node["attrs"]
    then, other = attrs["then_branch"], attrs["else_branch"]
    known = attrs["results"] + attrs["carried"]
    inputs = op.inputs
    wanted = [i for i in range(1, len(inputs)) if inputs[i].dtype.is_floating]
    outs = [j for j in range(known) if op.outputs[j].dtype.is_floating and dys[j] is not None]
    if not wanted or not outs:
        return [None] * len(inputs)
    branches = []
    for key, branch in (("then_branch", then), ("else_branch", other)):
        grad = Subgraph(graph, graph.get_name_scope(), forward=(branch, None))
        grad.forward = (branch, _if_saved_value(op, key, branch, grad))
        with grad.as_default():
            feeds = {}
            for name in branch.node_names():
                node = branch.node(name)
                if node["op"] == "Feed":
                    feeds[node["attrs"]["index"] + 1] = branch.get_operation_by_name(name)
            ys, grad_ys = [], []
            for j in outs:
                y = fetch_tensor(branch, branch.graph_attrs["fetches"][j])
                if y is not None:
                    ys.append(y)
                    grad_ys.append(grad.capture(dys[j]))
            xs = [feeds[i].outputs[0] for i in wanted if i in feeds]
            found = iter(_gradients(ys, xs, grad_ys) if ys and xs else [None] * len(xs))
            results = []
            for i in wanted:
                g = next(found) if i in feeds else None
                results.append(_zeros_like(grad.capture(inputs[i])) if g is None else g)
        grad.finish(results)
        branches.append(grad)
    with graph.name_scope("cond_grad") as scope:
        back = make_if(op.inputs[0], branches[0], branches[1], name=scope)
    grads: list[Tensor | None] = [None] * len(inputs)
    for k, i in enumerate(wanted):
        grads[i] = back.outputs[k]
    return grads


def _if_saved_value(op: Operation, key: str, branch: Graph, grad: Subgraph) -> Callable:
    """The hook giving a gradient branch the values of the forward branch it reads: inputs of
    the forward If as they are, other values as outputs the forward branch saves (the other
    branch leaves them unset; the gradient of a branch runs only when the branch ran)."""
    saved = branch.__dict__.setdefault("saved_outputs", {})

    def value(t: Tensor) -> Tensor:
        if t.op.type == "Feed":
            return op.inputs[t.op._node["attrs"]["index"] + 1]
        k = saved.get(t.name)
        if k is None:
            k = saved[t.name] = _add_output(op, t.dtype, t._shape_tuple)
            for name in ("then_branch", "else_branch"):
                g = op._node["attrs"][name]
                if name == key:
                    entry = (t.op.name, t.value_index)
                else:  # the other branch leaves the output unset
                    attrs = {"dtype": t.dtype, "shape": t._shape_tuple}
                    undefined = apply_op("Undefined", [], attrs, name="unset", graph=g)
                    entry = (undefined.name, 0)
                g.graph_attrs["fetches"] = g.graph_attrs["fetches"] + [entry]
        return op.outputs[k]

    return value


def _add_output(op: Operation, dtype: _dt.DType, shape: Shape) -> int:
    node = op._node
    node["dtypes"] = node["dtypes"] + [dtype]
    node["shapes"] = node["shapes"] + [shape]
    op.graph.version += 1
    return len(node["dtypes"]) - 1


def _zeros_like(t: Tensor) -> Tensor:
    return apply_op("ZerosLike", [t], name="zeros_like").outputs[0]


# An output a branch leaves unset (a value the other branch saves for its gradient, which runs
# only when that branch ran): no kernel, its buffer is the If's output, left as it is. Its shape
# is the other branch's (set when specializing).
register(
    OpDef(
        "Undefined",
        infer=lambda ctx: [(ctx.attrs["dtype"], ctx.attrs["shape"])],
        reference=lambda ctx: np.zeros(ctx.out_shapes[0], ctx.out_dtypes[0].np),
        lower=lambda ctx: [],
        differentiable=False,
        stateful=True,  # never folded into a constant or merged with another
    )
)


register(
    OpDef(
        "If",
        infer=_if_infer,
        reference=_if_reference,
        grad=_if_grad,
        scratch=lambda ctx: if_layout(ctx.attrs, _arena_align(ctx)).nbytes,
        # conservatively an effect: a branch may hold random or stateful ops, so an If is never
        # folded, merged or dropped by the optimizations (only pruned when nothing needs it)
        stateful=True,
        input_names=("cond",),
        subgraphs=("then_branch", "else_branch"),
    )
)


# == While ========================================================================================
def _while_infer(ctx: OpContext) -> list:
    attrs = ctx.attrs
    loop_vars = attrs["loop_vars"]
    outs = [(ctx.in_dtypes[j], attrs["shape_invariants"][j]) for j in range(loop_vars)]
    outs.append((_dt.int32, ()))
    bound = attrs.get("bound")
    body = attrs["body"]
    for fetch in body.graph_attrs["fetches"][loop_vars:]:
        dtype, shape = fetch_type(body, fetch)
        outs.append((dtype, None if shape is None else (bound, *shape)))
    return outs


def _while_reference(ctx: OpContext, *args: np.ndarray) -> list:
    attrs = ctx.attrs
    loop_vars = attrs["loop_vars"]
    cond, body = attrs["cond"], attrs["body"]
    has_max = attrs["maximum_iterations"]
    limit = int(args[-1]) if has_max else None
    captures = list(args[loop_vars : len(args) - has_max])
    values = [np.array(a, copy=True) for a in args[:loop_vars]]
    saved = len(body.graph_attrs["fetches"]) - loop_vars
    rows: list[list[np.ndarray]] = [[] for _ in range(saved)]
    n = 0
    while limit is None or n < limit:
        (pred,) = evaluate_graph(cond, values + captures, ctx.state, copy_fetches=False)
        if not bool(pred):
            break
        outs = evaluate_graph(body, values + captures, ctx.state, copy_fetches=False)
        values = [o if o is v else np.array(o, copy=True) for o, v in zip(outs, values)]
        for a in range(saved):
            rows[a].append(np.array(outs[loop_vars + a], copy=True))
        n += 1
    accumulators = []
    for a in range(saved):
        dtype, shape = ctx.out_dtypes[loop_vars + 1 + a], ctx.out_shapes[loop_vars + 1 + a]
        if shape is None or shape[0] is None:
            raise ValueError(unbounded_message(ctx.name))
        acc = np.zeros(shape, dtype.np)
        if n > shape[0]:
            raise errors.InternalError(
                None, None, f"while_loop '{ctx.name}' ran {n} iterations, past its bound {shape[0]}"
            )
        for i, row in enumerate(rows[a]):
            acc[i] = row
        accumulators.append(acc)
    return values + [np.array(n, np.int32)] + accumulators


def unbounded_message(name: str) -> str:
    return (
        f"while_loop '{name}' keeps a value of every iteration (for its gradient, or a "
        "TensorArray it grows), but the number of its iterations is not known when compiling: "
        "tfc plans all memory ahead of time. Pass maximum_iterations to tf.while_loop, or count "
        "with a loop variable from a constant to a constant bound (i < n)."
    )


def make_while(
    loop_vars: list[Tensor],
    cond: Subgraph,
    body: Subgraph,
    args: tuple[list[Tensor], list[Tensor]],
    shape_invariants: list[Shape],
    maximum_iterations: Tensor | None,
    back_prop: bool,
    name: str,
    parallel_iterations: int = 10,
) -> Operation:
    """The While node of a built condition and body (`args`: their loop-variable feeds; the
    condition's fetch is its predicate, the body's the next loop variables), in the graph they
    are nested in. Captured values either updates in place become loop variables."""
    graph = body.outer
    loop_vars = list(loop_vars)
    invariants = list(shape_invariants)
    arg_feeds = {id(g): list(a) for g, a in zip((cond, body), args)}
    for g in (cond, body):
        mutated = set(mutated_feeds(g))
        for outer, feed in g.captures:
            if feed.op.name in mutated and not any(outer is t for t in loop_vars):
                loop_vars.append(outer)
                invariants.append(outer._shape_tuple)
    promoted = loop_vars[len(args[1]) :]
    _check_carried(promoted, f"while_loop '{name.rstrip('/')}'")
    for g in (cond, body):
        arg_feeds[id(g)] += [g.capture(t) for t in promoted]
    body.graph_attrs["fetches"] = body.graph_attrs["fetches"] + [
        (f.op.name, 0) for f in arg_feeds[id(body)][len(args[1]) :]
    ]
    captures = _union_captures([cond, body], exclude=promoted)
    capture_index = _feed_indexer(captures, offset=len(loop_vars))
    for g in (cond, body):
        feeds = arg_feeds[id(g)]

        def index(feed: Tensor, g: Subgraph = g, feeds: list = feeds) -> int:
            for k, f in enumerate(feeds):
                if f is feed:
                    return k
            return capture_index(g, feed)

        g.set_feed_indices(index)
    attrs = {
        "cond": cond,
        "body": body,
        "loop_vars": len(loop_vars),
        "shape_invariants": tuple(invariants),
        "maximum_iterations": maximum_iterations is not None,
        "back_prop": bool(back_prop),
        "parallel_iterations": int(parallel_iterations),
    }
    inputs = [*loop_vars, *captures] + (
        [maximum_iterations] if maximum_iterations is not None else []
    )
    with graph.control_dependencies(_control_captures([cond, body])):
        return apply_op("While", inputs, attrs, name=name, graph=graph)


# -- While's gradient ---------------------------------------------------------------------------
def _while_grad(op: Operation, *dys: Tensor | None) -> list:
    graph = get_default_graph()  # where the gradient is built (a gradient body, for a nested loop)
    attrs = op._node["attrs"]
    inputs = op.inputs
    n_lv = attrs["loop_vars"]
    n_in = len(inputs) - attrs["maximum_iterations"]
    if not attrs["back_prop"]:
        return [None] * len(inputs)
    body: Subgraph = attrs["body"]
    lv = [j for j in range(n_lv) if inputs[j].dtype.is_floating]
    caps = [c for c in range(n_lv, n_in) if inputs[c].dtype.is_floating]
    if not lv and not caps or all(dys[j] is None for j in lv):
        return [None] * len(inputs)
    with graph.name_scope("while_grad") as scope:
        count = op.outputs[n_lv]
        start = apply_op("Sub", [count, _int32_const(1, graph)], name="start").outputs[0]
        init = [start]
        init += [dys[j] if dys[j] is not None else _zeros_like(op.outputs[j]) for j in lv]
        init += [_zeros_like(inputs[c]) for c in caps]
        cond = Subgraph(graph, scope[:-1])
        with cond.as_default():
            k = cond.add_feed(_dt.int32, (), "counter")
            cond_args = [k] + [cond.add_feed(t.dtype, t._shape_tuple, "grad") for t in init[1:]]
            pred = apply_op("GreaterEqual", [k, _int32_const(0, cond)], name="more").outputs[0]
        cond.finish([pred])
        grad = Subgraph(graph, scope[:-1])
        with grad.as_default():
            k = grad.add_feed(_dt.int32, (), "counter")
            grad.forward = (body, _while_saved_value(op, body, grad, k))
            body_args = [k] + [grad.add_feed(t.dtype, t._shape_tuple, "grad") for t in init[1:]]
            g_lv = body_args[1 : 1 + len(lv)]
            g_caps = body_args[1 + len(lv) :]
            feeds = _feeds_by_index(body)
            fetches = body.graph_attrs["fetches"]
            ys = [fetch_tensor(body, fetches[j]) for j in lv]
            xs = [feeds[j] for j in lv] + [feeds.get(c) for c in caps]
            present = [x for x in xs if x is not None]
            found = iter(_gradients(ys, present, list(g_lv)))
            grads = [next(found) if x is not None else None for x in xs]
            nxt = [apply_op("Sub", [k, _int32_const(1, grad)], name="next").outputs[0]]
            for g, arg in zip(grads[: len(lv)], g_lv):
                nxt.append(g if g is not None else _zeros_like(arg))
            for g, arg in zip(grads[len(lv) :], g_caps):
                nxt.append(arg if g is None else accumulate_gradient(arg, g))
        grad.finish(nxt)
        back = make_while(
            init, cond, grad, (cond_args, body_args), [t._shape_tuple for t in init],
            maximum_iterations=count, back_prop=False, name=scope,
        )  # fmt: skip
    result: list[Tensor | None] = [None] * len(inputs)
    for k, j in enumerate(lv):
        result[j] = back.outputs[1 + k]
    for k, c in enumerate(caps):
        result[c] = back.outputs[1 + len(lv) + k]
    return result


def _int32_const(value: int, graph: Graph) -> Tensor:
    array = np.array(value, np.int32)
    array.setflags(write=False)
    return apply_op("Const", [], {"value": array, "dtype": _dt.int32}, "Const", graph).outputs[0]


def _feeds_by_index(graph: Graph) -> dict[int, Tensor]:
    feeds = {}
    for name in graph.node_names():
        node = graph.node(name)
        if node["op"] == "Feed":
            feeds[node["attrs"]["index"]] = graph.get_operation_by_name(name).outputs[0]
    return feeds


def accumulate_gradient(total: Tensor, part: Tensor) -> Tensor:
    """total + part, where `part` is one iteration's gradient of a captured value: a gradient
    that is zero but for some rows (a TensorArray read's) adds just those rows, in place."""
    node = part.op._node
    if node["op"] == "TensorArrayPutRows" and node["attrs"].get("mode") == "add":
        base = part.op.inputs[0]
        if base.op.type in ("ZerosLike", "Fill") and base._shape_tuple == total._shape_tuple:
            rows = part.op.inputs[1:]
            return apply_op("TensorArrayPutRows", [total, *rows], {"mode": "add"}).outputs[0]
    return apply_op("Add", [total, part], name="accumulate").outputs[0]


def _while_saved_value(op: Operation, body: Graph, grad: Subgraph, counter: Tensor) -> Callable:
    """The hook giving a gradient body the values of the forward body it reads: captured inputs
    of the forward While as they are; values computed from them and constants alone (not
    random, not stateful) computed again; other values accumulated by the forward loop, one row
    per iteration, and read at row `counter`."""
    saved = body.__dict__.setdefault("saved_outputs", {})
    attrs = op._node["attrs"]
    n_lv = attrs["loop_vars"]
    invariant = _loop_invariant_nodes(body, n_lv)

    def value(t: Tensor) -> Tensor:
        if t.op.type == "Feed" and t.op._node["attrs"]["index"] >= n_lv:
            return op.inputs[t.op._node["attrs"]["index"]]
        with grad.as_default():
            if t.op.name in invariant:
                ins = [grad.capture(x) for x in t.op.inputs]
                copy = apply_op(t.op.type, ins, dict(t.op._node["attrs"]), t.op.name.split("/")[-1])
                return copy.outputs[t.value_index]
            k = saved.get(t.name)
            if k is None:
                body.graph_attrs["fetches"] = body.graph_attrs["fetches"] + [
                    (t.op.name, t.value_index)
                ]
                k = saved[t.name] = _add_output(op, t.dtype, None)
                _refresh_accumulator_shapes(op)
            rows = grad.capture(op.outputs[k])
            axis = _int32_const(0, grad)
            return apply_op("GatherV2", [rows, counter, axis], {"batch_dims": 0}, "saved").outputs[
                0
            ]

    return value


def _refresh_accumulator_shapes(op: Operation) -> None:
    node = op._node
    outs = _while_infer(OpContext.for_node(op.graph, op.name))
    node["shapes"] = [s for _, s in outs]


def _loop_invariant_nodes(body: Graph, loop_vars: int) -> set[str]:
    """Nodes of a loop body whose values are the same in every iteration: computed from
    captured inputs and constants only, by ops that are neither stateful nor random."""
    varying: set[str] = set()
    for name in run_order(body):
        node = body.node(name)
        opdef = get_opdef(node["op"])
        if node["op"] == "Feed":
            if node["attrs"]["index"] < loop_vars:
                varying.add(name)
            continue
        if opdef.stateful or opdef.random or opdef.subgraphs:
            varying.add(name)
        elif any(p in varying for p in body.nx.predecessors(name)):
            varying.add(name)
    return {n for n in body.nx.nodes if n not in varying and body.op_type(n) != "Feed"}


register(
    OpDef(
        "While",
        infer=_while_infer,
        reference=_while_reference,
        grad=_while_grad,
        scratch=lambda ctx: (
            while_layout(ctx.attrs, ctx.out_dtypes, ctx.out_shapes, _arena_align(ctx)).nbytes
        ),
        stateful=True,  # see If
        subgraphs=("cond", "body"),
    )
)


# == memory layout shared by the memory plan and code generation ===============================
@dataclass(frozen=True)
class Layout:
    """Where a functional op keeps its working memory inside its scratch region (offsets from
    the region's start): the second buffer of each double-buffered loop variable, the
    predicate, and the arena of its nested graphs (they never run at the same time, so they
    share one region)."""

    nbytes: int
    next_buffers: dict[int, int]  # loop variable -> offset of its second buffer
    predicate: int
    arena: int


def _align(n: int, align: int) -> int:
    return (n + align - 1) // align * align


def while_layout(attrs: dict, out_dtypes: list, out_shapes: list, align: int) -> Layout:
    """The scratch layout of a While whose body and condition are memory planned (before they
    are: every loop variable double-buffered, arenas as their naive sizes)."""
    body, cond = attrs["body"], attrs["cond"]
    modes = body.graph_attrs.get("carried") or ["double"] * attrs["loop_vars"]
    offset = 0
    nxt = {}
    for j, mode in enumerate(modes):
        if mode == "double":
            nxt[j] = offset
            size = num_elements(out_shapes[j] or ()) * out_dtypes[j].size
            offset += _align(max(size, 1), align)
    predicate = offset
    offset += _align(1, align)
    arena = offset
    offset += max(_arena_of(body), _arena_of(cond))
    return Layout(offset, nxt, predicate, arena)


def if_layout(attrs: dict, align: int) -> Layout:
    arena = max(_arena_of(attrs["then_branch"]), _arena_of(attrs["else_branch"]))
    return Layout(arena, {}, 0, 0)


def _arena_align(ctx: OpContext) -> int:
    graph = ctx.graph
    return int(graph.graph_attrs.get("arena_align", 64)) if graph is not None else 64


def _arena_of(graph: Graph) -> int:
    attrs = graph.graph_attrs
    return int(attrs.get("arena_bytes", attrs.get("arena_naive_bytes", 0)))
