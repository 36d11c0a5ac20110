"""tf.cond, tf.case, tf.switch_case and tf.while_loop: TF1's control flow, as If and While ops.

Branch and loop functions are called once, while the graph is built, each inside a nested
graph (tfc.ir.subgraph.Subgraph) that the If or While op then holds: ops they create belong to
the branch or body (they run only when it runs, every iteration for a body), values from
outside become its inputs, variables they create go to the outermost graph. Structures of
results (nested lists, tuples, dicts, TensorArrays) are flattened to tensors and packed back.

Bad input is reported as TF1 reports it: a Python bool or a non-scalar or non-bool predicate,
branches returning different structures or dtypes, a body changing a loop variable's dtype, or
its shape beyond its shape invariant, are errors when the graph is built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import (
    Operation,
    Tensor,
    control_dependencies,
    get_default_graph,
    name_scope,
)
from tfc.ir.subgraph import Subgraph
from tfc.ir.tensor_shape import TensorShape
from tfc.ops import nest
from tfc.ops.constant import constant, convert_to_tensor
from tfc.ops.flops import no_flops
from tfc.ops.functional import make_if, make_while
from tfc.ops.kernels import Kernel, Param, ScanSpec
from tfc.ops.registry import OpContext, OpDef, apply_op, register
from tfc.ops.tensor_array import TensorArray

__all__ = ["cond", "case", "switch_case", "while_loop"]


# -- flattening structures of tensors, TensorArrays and operations -------------------------------
def _leaves(structure: Any) -> list:
    return nest.flatten(structure)


def _as_flat_tensors(leaves: list, graph: Any, what: str) -> list:
    """The tensors a structure's leaves stand for, in `graph`: a TensorArray is two (its
    buffer and flags), an Operation none (it is run), anything else one."""
    flat: list = []
    for leaf in leaves:
        if isinstance(leaf, TensorArray):
            flat += [graph.capture(t) for t in leaf._tensors()]
        elif isinstance(leaf, Operation):
            continue
        elif leaf is None:
            raise ValueError(f"{what} returned None; every branch and body must return values")
        else:
            flat.append(graph.capture(convert_to_tensor(leaf)))
    return flat


def _pack(leaves: list, tensors: list) -> list:
    """Leaves like `leaves` made of `tensors` (TensorArrays take two)."""
    it = iter(tensors)
    out = []
    for leaf in leaves:
        if isinstance(leaf, TensorArray):
            buffer, flags = next(it), next(it)
            out.append(TensorArray._version(leaf, buffer, flags))
        else:
            out.append(next(it))
    return out


# == tf.cond =====================================================================================
def cond(
    pred: Any,
    true_fn: Callable[[], Any] | None = None,
    false_fn: Callable[[], Any] | None = None,
    strict: bool = False,
    name: str | None = None,
    fn1: Callable[[], Any] | None = None,
    fn2: Callable[[], Any] | None = None,
) -> Any:
    """`tf.cond`: `true_fn()` if `pred` else `false_fn()`; only the taken branch runs.

    The branches return the same structure of tensors (or TensorArrays, or operations to run)
    with the same dtypes. With strict=False a result that is a list or tuple of one element is
    that element, as in TF1.
    """
    true_fn = true_fn if true_fn is not None else fn1
    false_fn = false_fn if false_fn is not None else fn2
    if isinstance(pred, bool):
        raise TypeError("'pred' must not be a Python bool.")
    if not callable(true_fn):
        raise TypeError("'true_fn' must be callable.")
    if not callable(false_fn):
        raise TypeError("'false_fn' must be callable.")
    pred = convert_to_tensor(pred)
    graph = get_default_graph()
    with graph.name_scope(name or "cond") as scope:
        _check_predicate(pred, scope[:-1])
        built = []
        for fn, which in ((true_fn, "true_fn"), (false_fn, "false_fn")):
            branch = Subgraph(graph, scope[:-1])
            with branch.as_default():
                result = fn()
                if result is None:
                    raise ValueError(f"'{which}' must have a return value.")
                leaves = _leaves(result)
                flat = _as_flat_tensors(leaves, branch, which)
                ops = [leaf for leaf in leaves if isinstance(leaf, Operation)]
            built.append((branch, result, leaves, flat, ops))
        (then, r1, l1, f1, o1), (other, r2, l2, f2, o2) = built
        nest.assert_same_structure(r1, r2)
        for a, b in zip(l1, l2):
            if isinstance(a, Operation) != isinstance(b, Operation) or isinstance(
                a, TensorArray
            ) != isinstance(b, TensorArray):
                raise ValueError(
                    "'true_fn' and 'false_fn' must return the same kinds of values (tensors, "
                    f"TensorArrays, operations) at each place; got {a!r} and {b!r}"
                )
        for a, b in zip(f1, f2):
            if a.dtype != b.dtype:
                raise ValueError(
                    "Outputs of 'true_fn' and 'false_fn' must have the same type(s). Received "
                    f"{a.dtype.name} from 'true_fn' and {b.dtype.name} from 'false_fn'."
                )
        then.finish(f1, _ops_in(then, o1))
        other.finish(f2, _ops_in(other, o2))
        op = make_if(pred, then, other, name=scope)
        outputs = op.outputs[: len(f1)]
        ran = None
        if o1:  # an operation result stands for "the branch ran": pred, after the If
            with control_dependencies([op]):
                ran = apply_op("Identity", [pred], name="ran").outputs[0]
    packed = []
    tensors = iter(outputs)
    for leaf in l1:
        if isinstance(leaf, Operation):
            packed.append(ran)
        elif isinstance(leaf, TensorArray):
            packed.append(TensorArray._version(leaf, next(tensors), next(tensors)))
        else:
            packed.append(next(tensors))
    result = nest.pack_sequence_as(r1, packed)
    if not strict and isinstance(result, (list, tuple)) and len(result) == 1:
        return result[0]
    return result


def _ops_in(graph: Subgraph, ops: list[Operation]) -> list[Operation]:
    """The operations a branch returns, as ops of the branch (one from outside runs before the
    If: it is made a control input of the If)."""
    inner = []
    for op in ops:
        if op.graph is graph:
            inner.append(op)
        elif op not in graph.control_captures:
            graph.control_captures.append(op)
    return inner


def _check_predicate(pred: Tensor, where: str) -> None:
    if pred.dtype != _dt.bool_:
        raise TypeError(
            f"Input 'pred' of '{where}' has type {pred.dtype.name} that does not match expected "
            "type of bool."
        )
    shape = pred._shape_tuple
    if shape is not None and len(shape) != 0:
        raise ValueError(
            f"Shape must be rank 0 but is rank {len(shape)} for '{where}' (the predicate "
            f"{pred.name} has shape {pred.shape})"
        )


# == tf.case and tf.switch_case ==================================================================
def _check_predicate_infer(ctx: OpContext) -> list:
    if ctx.in_dtypes[0] != _dt.bool_ or (ctx.in_shapes[0] or ()) != ():
        raise ctx.error("the checked condition must be a scalar bool")
    return []


def _check_predicate_reference(ctx: OpContext, value: np.ndarray) -> list:
    if not bool(value):
        raise errors.InvalidArgumentError(None, None, ctx.attrs["message"])
    return []


register(
    OpDef(
        "CheckPredicate",
        infer=_check_predicate_infer,
        reference=_check_predicate_reference,
        lower=lambda ctx: [
            Kernel(
                "check_predicate",
                [Param("x", "bool", True, "in0")],
                ScanSpec(_dt.bool_, 1, {"message": ctx.attrs["message"]}),
                can_fail=True,
            )
        ],
        flops=no_flops,
        differentiable=False,
        stateful=True,  # it stands for a check that must run: never folded or merged away
    )
)


def _check(condition: Tensor, message: str) -> Operation:
    """An op failing the run with InvalidArgumentError(`message`) when `condition` is false."""
    return apply_op("CheckPredicate", [condition], {"message": message}, name="Assert")


def _case_pairs(pred_fn_pairs: Any) -> list[tuple[Tensor, Callable]]:
    if not isinstance(pred_fn_pairs, (list, tuple, dict)):
        raise TypeError(
            f"'pred_fn_pairs' must be a list, tuple, or dict. Received: {type(pred_fn_pairs)}"
        )
    if isinstance(pred_fn_pairs, dict):
        # as TF1 in graph mode: ordered by the predicates' names (dicts have no order of use)
        items = sorted(pred_fn_pairs.items(), key=lambda item: convert_to_tensor(item[0]).name)
    else:
        items = list(pred_fn_pairs)
    pairs = []
    for item in items:
        if not isinstance(item, tuple) or len(item) != 2:
            raise TypeError(f"Each entry in 'pred_fn_pairs' must be a 2-tuple. Received {item}.")
        pred, fn = item
        if isinstance(pred, bool):
            raise TypeError("pred must not be a Python bool")
        pred = convert_to_tensor(pred)
        if pred.dtype != _dt.bool_:
            raise TypeError(f"pred must be Tensor of type bool: {pred.name}")
        if not callable(fn):
            raise TypeError(f"fn for pred {pred.name} must be callable.")
        pairs.append((pred, fn))
    return pairs


def _count_true(preds: list[Tensor]) -> Tensor:
    stacked = apply_op("Pack", preds, {"axis": 0, "N": len(preds)}, name="preds").outputs[0]
    ints = apply_op("Cast", [stacked], {"DstT": _dt.int32, "SrcT": _dt.bool_}).outputs[0]
    axis = constant(np.array([0], np.int32), name="axis")
    return apply_op("Sum", [ints, axis], {"keep_dims": False}, name="count").outputs[0]


def case(
    pred_fn_pairs: Any,
    default: Callable[[], Any] | None = None,
    exclusive: bool = False,
    strict: bool = False,
    name: str = "case",
) -> Any:
    """`tf.case`: the result of the first fn whose predicate is true, else `default`'s.

    Without a default the last pair's fn is the default, and the run fails when no predicate
    is true (TF1's "None of conditions evaluated as True"); with exclusive=True the run fails
    when more than one is.
    """
    pairs = _case_pairs(pred_fn_pairs)
    if not pairs:
        raise ValueError("'pred_fn_pairs' must not be empty")
    if default is not None and not callable(default):
        raise TypeError("default must be callable.")
    preds = [p for p, _ in pairs]
    with name_scope(name, "case"):
        if default is None:
            last_pred, last_fn = pairs.pop()

            def default() -> Any:
                check = _check(last_pred, "Input error: None of conditions evaluated as True")
                with control_dependencies([check]):
                    return _identities(last_fn())

        fn = default
        for pred, action in reversed(pairs):
            fn = _cond_fn(pred, action, fn, strict)
        if exclusive and len(preds) > 1:
            at_most_one = apply_op("LessEqual", [_count_true(preds), constant(1)]).outputs[0]
            names = ", ".join(p.name for p in preds)
            check = _check(
                at_most_one,
                f"Input error: exclusive=True: more than 1 conditions ({names}) evaluated as True",
            )
            with control_dependencies([check]):
                return _identities(fn())
        return fn()


def _cond_fn(pred: Tensor, true_fn: Callable, false_fn: Callable, strict: bool) -> Callable:
    return lambda: cond(pred, true_fn, false_fn, strict=strict)


def _identities(result: Any) -> Any:
    """`result` with each tensor passed through an Identity made now (so the control
    dependencies in effect order it)."""

    def through(leaf: Any) -> Any:
        if isinstance(leaf, Tensor):
            return apply_op("Identity", [leaf], name="Identity").outputs[0]
        if isinstance(leaf, (TensorArray, Operation)) or leaf is None:
            return leaf
        return apply_op("Identity", [convert_to_tensor(leaf)], name="Identity").outputs[0]

    return nest.map_structure(through, result)


def switch_case(
    branch_index: Any,
    branch_fns: Any,
    default: Callable[[], Any] | None = None,
    name: str = "switch_case",
) -> Any:
    """`tf.switch_case`: `branch_fns[branch_index]()`; an index out of range runs `default`
    (the last branch when there is none). Only the chosen branch runs."""
    if isinstance(branch_fns, dict):
        items = sorted(branch_fns.items())
    else:
        items = [
            item if isinstance(item, tuple) else (k, item) for k, item in enumerate(branch_fns)
        ]
    if not items:
        raise ValueError("branch_fns must not be empty")
    for key, fn in items:
        if not isinstance(key, int) or not callable(fn):
            raise TypeError(f"branch_fns must be callables or (int, callable) pairs; got {key}")
    index = convert_to_tensor(branch_index)
    if index.dtype not in (_dt.int32, _dt.int64):
        raise TypeError(f"branch_index must be an int32 or int64 scalar, got {index.dtype.name}")
    if index._shape_tuple is not None and len(index._shape_tuple) != 0:
        raise ValueError(f"branch_index must be a scalar, got shape {index.shape}")
    with name_scope(name, "switch_case"):
        if default is None:
            (_, default), items = items[-1], items[:-1]
        fn = default
        for key, action in reversed(items):
            is_key = apply_op("Equal", [index, constant(key, dtype=index.dtype)]).outputs[0]
            fn = _cond_fn(is_key, action, fn, strict=True)
        return fn()


# == tf.while_loop ================================================================================
def while_loop(
    cond: Callable[..., Any],
    body: Callable[..., Any],
    loop_vars: Any,
    shape_invariants: Any = None,
    parallel_iterations: int = 10,
    back_prop: bool = True,
    swap_memory: bool = False,
    name: str | None = None,
    maximum_iterations: Any = None,
    return_same_structure: bool = False,
) -> Any:
    """`tf.while_loop`: repeat `body` while `cond` holds, on `loop_vars` (a structure of
    tensors and TensorArrays). Compiled to a native loop; at most `maximum_iterations`
    iterations run (then the loop stops, as in TF1). `parallel_iterations` and `swap_memory`
    are accepted for compatibility: the body's iterations run one after the other, in memory
    planned when compiling."""
    if not callable(cond):
        raise TypeError("'cond' must be callable.")
    if not callable(body):
        raise TypeError("'body' must be callable.")
    if parallel_iterations < 1:
        raise TypeError("'parallel_iterations' must be a positive integer.")
    single = not nest.is_nested(loop_vars)
    if single:
        loop_vars = [loop_vars]
    if isinstance(loop_vars, (list, tuple)) and len(loop_vars) == 0:
        raise ValueError("'loop_vars' must be provided.")
    graph = get_default_graph()
    leaves = [
        leaf if isinstance(leaf, TensorArray) else convert_to_tensor(leaf)
        for leaf in nest.flatten(loop_vars)
    ]
    structure = nest.pack_sequence_as(loop_vars, leaves)
    invariants = _shape_invariants(leaves, loop_vars, shape_invariants)
    limit = None
    if maximum_iterations is not None:
        limit = convert_to_tensor(maximum_iterations, dtype=None)
        if limit.dtype not in (_dt.int32, _dt.int64):
            raise TypeError(f"maximum_iterations must be an integer, got {limit.dtype.name}")
        if limit._shape_tuple is not None and len(limit._shape_tuple) != 0:
            raise ValueError(f"maximum_iterations must be a scalar, saw shape: {limit.shape}")
        if limit.dtype != _dt.int32:
            limit = apply_op("Cast", [limit], {"DstT": _dt.int32, "SrcT": limit.dtype}).outputs[0]
    with graph.name_scope(name or "while") as scope:
        flat_in = _as_flat_tensors(leaves, graph, "loop_vars")
        built = []
        for fn, which in ((cond, "cond"), (body, "body")):
            sub = Subgraph(graph, scope[:-1])
            with sub.as_default():
                args = [sub.add_feed(t.dtype, s, "loop_var") for t, s in zip(flat_in, invariants)]
                packed = nest.pack_sequence_as(structure, _pack(leaves, args))
                result = fn(*packed) if isinstance(packed, (list, tuple)) else fn(packed)
                if which == "cond":
                    pred = convert_to_tensor(result)
                    _check_loop_predicate(pred, scope[:-1])
                    out = [sub.capture(pred)]
                else:
                    out = _body_results(structure, leaves, result, sub, flat_in, invariants)
            sub.finish(out)
            built.append((sub, args))
        (cond_graph, cond_args), (body_graph, body_args) = built
        op = make_while(
            flat_in, cond_graph, body_graph, (cond_args, body_args), invariants, limit,
            back_prop, name=scope, parallel_iterations=parallel_iterations,
        )  # fmt: skip
    outputs = op.outputs[: len(flat_in)]
    packed = _pack(leaves, outputs)
    shapes = body_graph.graph_attrs.pop("element_shapes", {})
    for k, leaf in enumerate(packed):  # what the body's writes told of an array's elements
        if isinstance(leaf, TensorArray):
            learned = shapes.get(k)
            if learned is not None:
                leaf._element_shape = leaf._element_shape.merge_with(learned)
    result = nest.pack_sequence_as(structure, packed)
    if (single or len(nest.flatten(structure)) == 1) and not return_same_structure:
        if isinstance(result, (list, tuple)) and len(result) == 1:
            return result[0]
    return result


def _shape_invariants(leaves: list, loop_vars: Any, shape_invariants: Any) -> list:
    """One shape per flat tensor: a loop variable's invariant (its own shape by default);
    a TensorArray's buffer and flags keep theirs (the element shape may be fixed by the body)."""
    given = [None] * len(leaves)
    if shape_invariants is not None:
        if not nest.is_nested(shape_invariants) or isinstance(shape_invariants, TensorShape):
            shape_invariants = [shape_invariants]
        flat = nest.flatten(
            shape_invariants if len(leaves) > 1 or nest.is_nested(loop_vars) else shape_invariants
        )
        if len(flat) != len(leaves):
            raise ValueError(
                f"shape_invariants has {len(flat)} shapes for {len(leaves)} loop variables"
            )
        given = flat
    shapes = []
    for leaf, shape in zip(leaves, given):
        if isinstance(leaf, TensorArray):
            leaf._materialize()
            shapes += [leaf._buffer._shape_tuple, leaf._flags._shape_tuple]
            continue
        if shape is None:
            shapes.append(leaf._shape_tuple)
            continue
        invariant = TensorShape(shape)
        if not invariant.is_compatible_with(leaf.shape):
            raise ValueError(
                f"The shape invariant specified for {leaf.name} is not compatible with the "
                f"initial shape of the loop variable. It enters the loop with shape "
                f"{leaf.shape}, but the specified shape invariant is {invariant}."
            )
        shapes.append(invariant.as_tuple())
    return shapes


def _check_loop_predicate(pred: Tensor, where: str) -> None:
    if pred.dtype != _dt.bool_:
        raise TypeError(
            f"Input 'input' of 'LoopCond' Op has type {pred.dtype.name} that does not match "
            f"expected type of bool (the cond of '{where}' returned {pred.name})."
        )
    shape = pred._shape_tuple
    if shape is not None and len(shape) != 0:
        raise ValueError(
            f"Shape must be rank 0 but is rank {len(shape)} for '{where}/LoopCond' with input "
            f"shapes: {pred.shape}."
        )


def _body_results(
    structure: Any, leaves: list, result: Any, sub: Subgraph, flat_in: list, invariants: list
) -> list:
    """The body's results as flat tensors of `sub`, checked against the loop variables: the
    same structure, dtypes, and shapes within the invariants."""
    if not nest.is_nested(result):
        result = [result]
    expected = list(structure) if isinstance(structure, (list, tuple)) else [structure]
    got = list(result) if isinstance(result, (list, tuple)) else [result]
    nest.assert_same_structure(expected, got, check_types=False)
    out_leaves = nest.flatten(got)
    for leaf, out in zip(leaves, out_leaves):
        if isinstance(leaf, TensorArray) != isinstance(out, TensorArray):
            raise ValueError(
                f"The body returned {out!r} where the loop variable is {leaf!r}: a TensorArray "
                "loop variable must stay a TensorArray"
            )
    sub.graph_attrs["element_shapes"] = {
        k: out._element_shape for k, out in enumerate(out_leaves) if isinstance(out, TensorArray)
    }
    flat = _as_flat_tensors(out_leaves, sub, "body")
    for t_in, t_out, invariant in zip(flat_in, flat, invariants):
        if t_out.dtype != t_in.dtype:
            raise ValueError(
                f"Input tensor '{t_in.name}' enters the loop with type {t_in.dtype.name}, but "
                f"has type {t_out.dtype.name} after one iteration."
            )
        if not _shape_within(t_out._shape_tuple, invariant):
            raise ValueError(
                f"Input tensor '{t_in.name}' enters the loop with shape {TensorShape(invariant)},"
                f" but has shape {t_out.shape} after one iteration. To allow the shape to vary "
                "across iterations, use the `shape_invariants` argument of tf.while_loop to "
                "specify a less-specific shape."
            )
    return flat


def _shape_within(shape: Any, invariant: Any) -> bool:
    """TF's _ShapeLessThanOrEqual: `shape` is at least as specific as `invariant`."""
    if invariant is None:
        return True
    if shape is None or len(shape) != len(invariant):
        return False
    return all(b is None or a == b for a, b in zip(shape, invariant))
