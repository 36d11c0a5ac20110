"""The op registry: every op type declared once: shape rule, NumPy reference, kernel lowering.

An `OpDef` is the single source of truth for one op type (its TF name, e.g. "MatMul"):
    infer(ctx)           -> [(dtype, shape)] per output; raises ctx.error(...) on bad inputs
    reference(ctx, *xs)  -> NumPy outputs (the interpreter, constant folding and the tests' oracle)
    lower(ctx)           -> [Kernel]: typed kernel specs (tfc/ops/kernels.py) that every target
                            renders ([] when the output aliases an input; Fusion nodes are
                            lowered by tfc/codegen/fusion.py)
    grad(op, *dys)       -> one gradient per input (None where not differentiable); for an op
                            that broadcasts its inputs, a gradient may have the output's shape:
                            the gradient pass sums it back to the input's shape
plus flags: `host_only` ops never run on a GPU (placement keeps them on the host);
stateful/random ops are never merged, folded or pruned while their effects are wanted;
`const_inputs` are inputs whose *values* must be known when compiling (shapes, axes, perms;
negative indices count from the last input);
`ref_inputs` are inputs that name a variable to update; `alias` is the input whose buffer the
output shares (reshape, identity): no kernel, no copy; `inplace(ctx)` names the inputs whose
buffer output 0 may overwrite (its kernel reads element k of such an input before writing
element k of the output, and never reads the input again): the memory planner reuses a dying
input's bytes under the conditions of `tfc.passes.memory.inplace_candidates`; `scratch(ctx)` is
the temporary memory its kernels need, planned in the arena like a tensor alive for one step.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Graph, Operation, Tensor, get_default_graph
from tfc.ir.tensor_shape import Shape, is_fully_defined, num_elements, shape_str
from tfc.ops.kernels import (
    ExprTable,
    Operand,
    cast_expr,
    contiguous_strides,
    loop_kernel,
    view,
)


@dataclass
class OpDef:
    type: str
    infer: Callable[[OpContext], list]
    reference: Callable[..., Any] | None = None
    lower: Callable[[OpContext], list] | None = None
    grad: Callable[..., Any] | None = None
    differentiable: bool = True
    stateful: bool = False
    random: bool = False
    const_inputs: tuple[int, ...] = ()
    ref_inputs: tuple[int, ...] = ()
    reads_ref: bool = False  # AssignAdd reads the variable it updates; Assign does not
    alias: int | None = None
    input_names: tuple[str, ...] = ()
    expr: ExprTable | None = None  # element-wise ops: the C expression table (kernels.py)
    # input indices output 0 may overwrite, per node (a function: variadic ops have any arity);
    # element-wise ops use tfc.ops.elementwise.elementwise_inplace
    inplace: Callable[[OpContext], Sequence[int]] | None = None
    # FLOPs of one run of the node (tfc/ops/flops.py); None: element-wise ops (expr set) count
    # their expression's operations per element, others have no estimate (`tfc inspect` says so)
    flops: Callable[[OpContext], int] | None = None
    # bytes of arena the node's kernels use as temporary memory during its own step (packed GEMM
    # panels, im2col columns); a kernel Param with buf="scratch" points at them (64-byte aligned)
    scratch: Callable[[OpContext], int] | None = None
    # the op's kernel needs the host CPU (host memory, stdio, files, Python), so it can never
    # run on a GPU: placement puts it on the CPU of its task (tfc/passes/place.py)
    host_only: bool = False
    # the Session runs the op around the compiled program rather than inside it (queue ops:
    # dequeues before it, their outputs fed; enqueues after it, their inputs fetched; see
    # tfc/client/queue_runs.py): the prune pass takes it out of program graphs
    session_side: bool = False
    # why no native program can run the op (it calls Python, its output shape depends on its
    # input values, ...): a Session runs it with its reference in a Python stage between
    # compiled ones (tfc/passes/python_stage.py); native builds refuse it naming the op and
    # this reason. A function of the node's context decides per node ("" = native); ops
    # that leave it "" run in Python only where they read or make strings (python_reason).
    in_python: str | Callable[[OpContext], str] = ""
    # attributes holding nested graphs (If's branches, While's cond and body): the passes
    # compile them with the node (tfc/passes/nested.py), codegen renders them inside its step
    subgraphs: tuple[str, ...] = ()
    # the element dtypes beyond TF1's core ones (ir.dtypes.CORE: float32, float64, int32,
    # int64, bool, string) the op takes and gives, as TF's CPU kernels do (docs/dtypes.md); a
    # node with another dtype is refused when it is built, naming the op and the dtype.
    # Element-wise ops take theirs from their ExprTable.
    dtypes: Collection[_dt.DType] = ()
    # the dtype the op's kernels run a dtype in, where they have no kernel of their own for
    # it (HALVES_IN_FLOAT32: the 16-bit floats in float32): a node holding such tensors runs
    # them in the wider dtype, its inputs widened into scratch memory before its kernels and
    # its outputs narrowed back from it after them (`register` wraps infer, lower, scratch)
    computes_in: Callable[[_dt.DType], _dt.DType] | None = None


REGISTRY: dict[str, OpDef] = {}


# gradient rules that ops' modules give a name, for graph.gradient_override_map to pick for
# ops they build (tfc.autodiff.registry looks here after the user's tf.RegisterGradient names)
NAMED_GRADIENTS: dict[str, Callable] = {}


def register(opdef: OpDef) -> OpDef:
    if opdef.type in REGISTRY:
        raise ValueError(f"Op type '{opdef.type}' is registered twice")
    # the kernels' references compute 16-bit floats in float32; ops updating variables store
    # their values themselves, ops that run in Python see values as TF gives them (py_func)
    python_only = isinstance(opdef.in_python, str) and opdef.in_python
    if opdef.reference is not None and not opdef.ref_inputs and not python_only:
        opdef.reference = _reference_in_float32(opdef.reference)
    if opdef.computes_in is not None:
        _run_widened(opdef, opdef.computes_in)
    REGISTRY[opdef.type] = opdef
    return opdef


def accepted_dtypes(opdef: OpDef) -> tuple[_dt.DType, ...]:
    """The dtypes beyond the core ones that nodes of `opdef` may hold."""
    if opdef.expr is not None:
        # the dtypes it computes on, and the one it gives where its table fixes it
        given = () if opdef.expr.out is None else (opdef.expr.out,)
        return tuple(d for d in (*opdef.expr.supported(), *given) if d not in _dt.CORE)
    return tuple(opdef.dtypes)


def check_accepted_dtypes(opdef: OpDef, name: str, dtypes: Sequence[_dt.DType]) -> None:
    """Refuse a node whose inputs or outputs hold a dtype its op does not take (TypeError
    naming the op and the dtype)."""
    for dtype in dtypes:
        if dtype in _dt.CORE:
            continue
        extra = accepted_dtypes(opdef)
        if dtype in extra:
            continue
        why = {
            "q": ": tfc has no quantized types (tf.quantization's ops are not part of tfc)",
            "x": ": tfc has no resource or variant tensors (tfc's variables are ref variables)",
        }.get(dtype.kind, "")
        takes = (
            f"; tfc's {opdef.type} also takes {', '.join(d.name for d in extra)}" if extra else ""
        )
        raise TypeError(
            f"{opdef.type} (op '{name}') does not support dtype {dtype.name}{why}{takes}"
        )


# -- the 16-bit floats --------------------------------------------------------------------------
def _has_halves(dtypes: Sequence[_dt.DType]) -> bool:
    return any(d is not None and d.kind == "h" for d in dtypes)


def _widened(dtypes: Sequence[_dt.DType]) -> list:
    return [d.compute if d is not None else None for d in dtypes]


def _reference_in_float32(reference: Callable[..., Any]) -> Callable[..., Any]:
    """A NumPy reference that sees 16-bit floats as float32 (inputs and the context's dtypes)
    and whose 16-bit outputs round back: the references compute as the kernels do."""

    def run(ctx: OpContext, *values: Any) -> Any:
        if not (_has_halves(ctx.in_dtypes) or _has_halves(ctx.out_dtypes)):
            return reference(ctx, *values)
        args = [
            _dt.to_float32(v, d) if v is not None and d is not None and d.kind == "h" else v
            for v, d in zip(values, list(ctx.in_dtypes) + [None] * len(values))
        ]
        wide = replace(ctx, in_dtypes=_widened(ctx.in_dtypes), out_dtypes=_widened(ctx.out_dtypes))
        result = reference(wide, *args)
        outs = as_output_list(result)
        rounded = [
            _dt.as_numpy(v, d) if v is not None and d.kind == "h" else v
            for v, d in zip(outs, ctx.out_dtypes)
        ] + outs[len(ctx.out_dtypes) :]
        return rounded if isinstance(result, (list, tuple)) else rounded[0]

    run.__wrapped__ = reference  # type: ignore[attr-defined]
    return run


def HALVES_IN_FLOAT32(dtype: _dt.DType) -> _dt.DType:  # noqa: N802  a constant, as a function
    """OpDef.computes_in of ops whose kernels exist for float32 but not for 16-bit floats."""
    return dtype.compute


def widened_dtypes(ctx: OpContext, wide_inputs: Sequence[_dt.DType]) -> dict:
    """{wide dtype: the node's dtype} for the node's inputs its op runs in wider dtypes
    (`wide_inputs`: each input's dtype as the op's rules see it); a node mixing a dtype with
    another that widens to it is refused (TF's one type attribute)."""
    narrow: dict = {}
    for dtype, wide in zip(ctx.in_dtypes, wide_inputs):
        narrow.setdefault(wide, set()).add(dtype)
    mixed = [kinds for wide, kinds in narrow.items() if len(kinds) > 1]
    if mixed:
        names = " and ".join(sorted(d.name for d in mixed[0]))
        raise ctx.type_error(f"Inputs of {ctx.type} must have one type, got {names}")
    return {wide: kinds.pop() for wide, kinds in narrow.items() if wide not in kinds}


def _run_widened(opdef: OpDef, computes_in: Callable[[_dt.DType], _dt.DType]) -> None:
    """Make `opdef` run a node holding dtypes its kernels lack through its rules for the wider
    dtypes `computes_in` gives: the shape rule and the kernels see the wide dtypes; the lowering
    adds a kernel widening each such input into scratch memory before the op's kernels, and
    one narrowing each such output back after them. Compile-time inputs (axes, shapes) keep
    their dtype, but for 16-bit floats, which the rules read as float32 values (Range)."""
    infer, lower, scratch = opdef.infer, opdef.lower, opdef.scratch

    def wide_inputs(ctx: OpContext) -> list:
        n = len(ctx.in_dtypes)
        fixed = {i % n for i in opdef.const_inputs} if n else set()
        return [
            d if i in fixed and d.kind != "h" else computes_in(d)
            for i, d in enumerate(ctx.in_dtypes)
        ]

    def wide_ctx(ctx: OpContext) -> OpContext:
        outs = [computes_in(d) for d in ctx.out_dtypes]
        return replace(ctx, in_dtypes=wide_inputs(ctx), out_dtypes=outs)

    def widens(ctx: OpContext) -> bool:
        wide = wide_inputs(ctx) + [computes_in(d) for d in ctx.out_dtypes]
        return any(w is not d for w, d in zip(wide, [*ctx.in_dtypes, *ctx.out_dtypes]))

    def widened_infer(ctx: OpContext) -> list:
        wide = wide_inputs(ctx)
        narrow = widened_dtypes(ctx, wide)
        if not narrow:
            return infer(ctx)
        outs = infer(replace(ctx, in_dtypes=wide))
        return [(narrow.get(d, d), shape) for d, shape in outs]

    def regions(ctx: OpContext) -> tuple[int, list, list]:
        """(scratch bytes in all, the byte offset of each input's and each output's wide copy
        or None): the op's own scratch first, then the copies, each 64-byte aligned."""
        widened = wide_ctx(ctx)
        at = _round_up(scratch(widened) if scratch is not None else 0)
        places = []
        dtypes = [*ctx.in_dtypes, *ctx.out_dtypes]
        wide_dtypes = [*widened.in_dtypes, *widened.out_dtypes]
        for dtype, wide, shape in zip(dtypes, wide_dtypes, [*ctx.in_shapes, *ctx.out_shapes]):
            places.append(at if wide is not dtype else None)
            if wide is not dtype:
                at = _round_up(at + wide.size * num_elements(shape))
        return at, places[: len(ctx.in_dtypes)], places[len(ctx.in_dtypes) :]

    def widened_scratch(ctx: OpContext) -> int:
        if not widens(ctx):
            return scratch(ctx) if scratch is not None else 0
        return regions(ctx)[0]

    def copy_in_scratch(ctx: OpContext, dtype: _dt.DType, shape: Any, at: int) -> Operand:
        wide = computes_in(dtype)
        return Operand("scratch", wide, contiguous_strides(shape), at // wide.size)

    def widened_lower(ctx: OpContext) -> list:
        if not widens(ctx):
            return lower(ctx)
        _, ins, outs = regions(ctx)
        moved = {f"in{i}": (at, ctx.in_dtypes[i]) for i, at in enumerate(ins) if at is not None}
        moved |= {f"out{i}": (at, ctx.out_dtypes[i]) for i, at in enumerate(outs) if at is not None}
        kernels = []
        for i, at in enumerate(ins):
            if at is not None:
                dtype, shape = ctx.in_dtypes[i], ctx.in_shapes[i]
                wide = copy_in_scratch(ctx, dtype, shape, at)
                source = view(f"in{i}", dtype, shape)
                kernels += loop_kernel(shape, wide, [source], cast_expr(dtype, wide.dtype))
        for kernel in lower(wide_ctx(ctx)):
            params = []
            for p in kernel.params:
                if p.buf in moved:
                    at, dtype = moved[p.buf]
                    p = dataclasses.replace(
                        p, buf="scratch", offset=at // computes_in(dtype).size + p.offset
                    )
                params.append(p)
            kernel.params = params
            kernels.append(kernel)
        for i, at in enumerate(outs):
            if at is not None:
                dtype, shape = ctx.out_dtypes[i], ctx.out_shapes[i]
                wide = copy_in_scratch(ctx, dtype, shape, at)
                target = view(f"out{i}", dtype, shape)
                kernels += loop_kernel(shape, target, [wide], cast_expr(wide.dtype, dtype))
        return kernels

    opdef.infer, opdef.scratch = widened_infer, widened_scratch
    if lower is not None:
        opdef.lower = widened_lower


def _round_up(nbytes: int) -> int:
    return -(-nbytes // 64) * 64


def get_opdef(op_type: str) -> OpDef:
    try:
        return REGISTRY[op_type]
    except KeyError:
        raise NotImplementedError(f"No op named '{op_type}' is registered in tfc") from None


@dataclass
class OpContext:
    """What an op's rules see of one node: inputs, attributes, outputs, and compile-time values."""

    name: str
    type: str
    attrs: dict
    in_dtypes: list
    in_shapes: list
    out_dtypes: list = field(default_factory=list)
    out_shapes: list = field(default_factory=list)
    graph: Graph | None = None
    inputs: Sequence[tuple[str, int]] = ()
    state: Any = None  # the interpreter's variable/RNG store
    ref_names: Sequence[str] = ()

    @classmethod
    def for_node(cls, graph: Graph, name: str, **extra: Any) -> OpContext:
        """The context of node `name` as `graph` holds it now: its inputs' dtypes and shapes,
        its own outputs, and the graph, which tells compile-time values. `extra` sets the
        interpreter's fields (state, ref_names)."""
        node = graph.node(name)
        inputs = graph.input_edges(name)
        return cls(
            name=name,
            type=node["op"],
            attrs=node["attrs"],
            in_dtypes=[graph.node(s)["dtypes"][i] for s, i in inputs],
            in_shapes=[_as_shape(graph.node(s)["shapes"][i]) for s, i in inputs],
            out_dtypes=list(node["dtypes"]),
            out_shapes=[_as_shape(s) for s in node["shapes"]],
            graph=graph,
            inputs=inputs,
            **extra,
        )

    def const(self, i: int) -> np.ndarray | None:
        """The value of input `i` when it is known at compile time, else None."""
        if self.graph is None or i >= len(self.inputs):
            return None
        value = constant_value(self.graph, self.inputs[i])
        source = self.graph.node(self.inputs[i][0])["dtypes"][self.inputs[i][1]]
        if value is not None and i < len(self.in_dtypes) and self.in_dtypes[i] is not source:
            # a 16-bit float that the op's rules see widened (OpDef.computes_in): its values
            value = _dt.to_float32(value, source) if source.kind == "h" else value
        return value

    def require_const(self, i: int, what: str) -> np.ndarray:
        value = self.const(i)
        if value is None:
            src = f"{self.inputs[i][0]}:{self.inputs[i][1]}" if i < len(self.inputs) else "?"
            raise ValueError(
                f"The {what} of '{self.name}' (op: '{self.type}') must be known when the graph "
                f"is compiled, but it is computed by '{src}' from run-time values. tfc compiles "
                "ahead of time: pass a Python value, or a tensor that depends only on constants "
                "and static shapes."
            )
        return value

    def error(self, message: str) -> ValueError:
        shapes = ", ".join(shape_str(s) for s in self.in_shapes)
        return ValueError(
            f"{message} for '{self.name}' (op: '{self.type}') with input shapes: {shapes}."
        )

    def type_error(self, message: str) -> TypeError:
        return TypeError(f"{message} (op '{self.name}' of type {self.type})")


def _as_shape(shape: Any) -> Shape:
    return None if shape is None else tuple(shape)


def infer_outputs(graph: Graph, name: str) -> list:
    """Run the shape rule of node `name` on its current inputs; returns [(dtype, shape)]."""
    return get_opdef(graph.node(name)["op"]).infer(OpContext.for_node(graph, name))


def apply_op(
    op_type: str,
    inputs: Sequence[Tensor],
    attrs: dict | None = None,
    name: str | None = None,
    graph: Graph | None = None,
) -> Operation:
    """Create one node of type `op_type` in the graph of its inputs, running its shape rule."""
    opdef = get_opdef(op_type)
    graph = graph or _graph_of_inputs(inputs)
    # inside a branch or loop body, values from the graphs around it become its inputs
    inputs = [t if t.graph is graph else graph.capture(t) for t in inputs]
    if name and name.endswith("/"):
        node_name = name[:-1]
    else:
        node_name = graph.unique_name(name or op_type)
    edges = [(t.op.name, t.value_index) for t in inputs]
    attrs = dict(attrs or {})
    ctx = OpContext(
        name=node_name,
        type=op_type,
        attrs=attrs,
        in_dtypes=[t.dtype for t in inputs],
        in_shapes=[t._shape_tuple for t in inputs],
        graph=graph,
        inputs=edges,
    )
    outputs = opdef.infer(ctx)
    check_accepted_dtypes(opdef, node_name, [*ctx.in_dtypes, *(d for d, _ in outputs)])
    data_sources = {src for src, _ in edges}
    control = [c for c in graph.current_control_inputs() if c not in data_sources]
    if graph._colocation_stack and graph._colocation_stack[-1] is not None:
        attrs["_class"] = [f"loc:@{graph._colocation_stack[-1]}"]
    override = graph.gradient_override(op_type)
    if override is not None:
        attrs["_gradient_op_type"] = override
    graph.add_node(
        node_name,
        op_type,
        edges,
        attrs,
        [d for d, _ in outputs],
        [s for _, s in outputs],
        control_inputs=control,
    )
    graph.node(node_name)["device"] = graph.current_device(node_name)
    return graph.get_operation_by_name(node_name)


def _graph_of_inputs(inputs: Sequence[Tensor]) -> Graph:
    graph = None
    first = None
    default = get_default_graph()
    for t in inputs:
        if not isinstance(t, Tensor):
            raise TypeError(f"Op inputs must be Tensors, got {t!r}")
        if default.outer is not None:
            continue  # a branch or loop body being built: its ops belong to it
        if graph is None:
            graph, first = t.graph, t
        elif t.graph is not graph:
            raise ValueError(f"{t} must be from the same graph as {first}.")
    return graph or default


# -- ops that run in Python ---------------------------------------------------------------------
STRING_REASON = "it works on tf.string values, which live in Python (native code has no strings)"
# the in_python of ops like tf.unique: a native program knows every buffer's size when compiled
VALUE_DEPENDENT_REASON = "its output shape depends on its input values"


def python_reason(graph: Graph, name: str) -> str:
    """Why node `name` must run in Python, or "" when native code can run it: its OpDef's
    `in_python`, or else a string among its inputs or outputs. Consts and Feeds are values
    every stage holds, so they never need Python themselves (a native op reads constant
    strings at compile time: tf.Assert's messages)."""
    node = graph.node(name)
    if node["op"] in ("Const", "Feed"):
        return ""
    rule = get_opdef(node["op"]).in_python
    if callable(rule):
        return rule(OpContext.for_node(graph, name))
    if rule:
        return rule
    inputs = [graph.node(s)["dtypes"][i] for s, i in graph.input_edges(name)]
    if any(d.is_string for d in [*inputs, *node["dtypes"]]):
        return STRING_REASON
    return ""


# -- values known at compile time ---------------------------------------------------------------
_CONST_EVAL_LIMIT = 1 << 16  # elements; larger intermediate values are not evaluated eagerly


def constant_value(graph: Graph, tensor: tuple[str, int]) -> np.ndarray | None:
    """The value of `tensor` if it follows from constants and static shapes alone, else None.

    Evaluates small pure subgraphs with the ops' references (TF's `constant_value`): Const,
    Shape/Size/Rank of statically known shapes, and anything pure computed from those; never
    through a placeholder_with_default.
    """
    if graph._const_memo_version != graph.version:
        graph._const_memo = {}
        graph._const_memo_version = graph.version
    if tensor not in graph._const_memo:
        graph._const_memo[tensor] = _evaluate_constant(graph, tensor)
    return graph._const_memo[tensor]


def _evaluate_constant(graph: Graph, tensor: tuple[str, int]) -> np.ndarray | None:
    name, index = tensor
    node = graph.node(name)
    op_type = node["op"]
    if op_type == "Const":
        return node["attrs"]["value"]
    opdef = REGISTRY.get(op_type)
    if opdef is None or opdef.stateful or opdef.random or opdef.reference is None:
        return None
    if op_type == "PlaceholderWithDefault":
        # its default is a value a run may replace, so nothing built on it is fixed (TF's
        # constant_value does not look through it either); compiling never sees one: the prune
        # pass makes an unfed one an Identity of its default
        return None
    out_shape = node["shapes"][index]
    if not is_fully_defined(out_shape) or num_elements(out_shape) > _CONST_EVAL_LIMIT:
        return None
    ctx = OpContext.for_node(graph, name)
    if op_type in ("Shape", "Size", "Rank", "ShapeN"):
        values = [None] * len(ctx.inputs)  # these need only the static shapes of their inputs
        if not all(is_fully_defined(s) for s in ctx.in_shapes):
            return None
    else:
        values = []
        for src in ctx.inputs:
            v = constant_value(graph, src)
            if v is None:
                return None
            values.append(v)
    outs = as_output_list(opdef.reference(ctx, *values))
    return np.asarray(outs[index], dtype=node["dtypes"][index].np)


def as_output_list(result: Any) -> list:
    return list(result) if isinstance(result, (list, tuple)) else [result]


# -- small shared rules -------------------------------------------------------------------------
def same_as_input(ctx: OpContext, i: int = 0) -> list:
    return [(ctx.in_dtypes[i], ctx.in_shapes[i])]


def check_dtype(ctx: OpContext, i: int, allowed: Sequence[_dt.DType], what: str = "x") -> None:
    dtype = ctx.in_dtypes[i]
    if dtype not in allowed:
        names = ", ".join(d.name for d in allowed)
        raise TypeError(
            f"Value passed to parameter '{what}' has DataType {dtype.name} not in list of "
            f"allowed values: {names} (op '{ctx.name}' of type {ctx.type})"
        )


def check_same_dtypes(ctx: OpContext, names: Sequence[str] = ("x", "y")) -> None:
    first = ctx.in_dtypes[0]
    for i, dtype in enumerate(ctx.in_dtypes[1:], start=1):
        if dtype != first:
            arg = names[i] if i < len(names) else f"input {i}"
            raise TypeError(
                f"Input '{arg}' of '{ctx.type}' Op has type {dtype.name} that does not match "
                f"type {first.name} of argument '{names[0]}'."
            )


def broadcast_shape(ctx: OpContext, a: Shape, b: Shape) -> Shape:
    """NumPy broadcasting of two partial shapes; raises TF's error when they cannot broadcast."""
    if a is None or b is None:
        return None
    rank = max(len(a), len(b))
    a = (1,) * (rank - len(a)) + tuple(a)
    b = (1,) * (rank - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif x is None:
            out.append(y)
        elif y is None or x == y:
            out.append(x)
        else:
            raise ctx.error(f"Dimensions must be equal, but are {x} and {y}")
    return tuple(out)


def normalize_axis(ctx: OpContext, axis: int, rank: int, what: str = "axis") -> int:
    """`axis` in [0, rank); TF's negative axes count from the end."""
    axis = int(axis)
    if not -rank <= axis < rank:
        raise ctx.error(f"{what} {axis} is out of range [{-rank}, {rank})")
    return axis + rank if axis < 0 else axis
