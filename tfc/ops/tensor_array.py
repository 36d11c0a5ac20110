"""tf.TensorArray: a list of same-shaped tensors, written and read by index (in loops, mostly).

A TensorArray is two tensors: a buffer [capacity, *element_shape] holding its elements, and
int32 flags [capacity] (0: not written, 1: written, 2: read with clear_after_read). As in TF1,
where a TensorArray is a resource, its ops update them in place: a write's output is its input
buffer (an alias), so a loop that writes one element per iteration copies one element, not
the array. The tensors stand for the array's versions in order: ops reading the buffer run
before writes that do not depend on them (the scheduler treats the buffer as it treats a
variable: `ref_inputs`). Inside a tf.while_loop or tf.cond a TensorArray is carried
(tfc/ops/functional.py): the loop works on a copy of it in its own buffer.

The capacity is fixed when compiling: the `size` (a compile-time value), or for dynamic_size the
size plus the iteration bound of the loop that grows it (tfc/passes/specialize.py). Writing past
it is InvalidArgumentError naming the op. TF's errors are kept: writing an element twice,
reading out of range, reading an element cleared by an earlier read; an element never written
reads as zeros. The element shape is fixed too: from `element_shape`, the first write, or the
loop body that writes the array.

Gradients are dense tensors of the buffer's shape: a read's gradient adds rows at its indices
(TensorArrayPutRows, in place over the gradient summed so far), a write's zeroes them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import Graph, Tensor, get_default_graph, name_scope
from tfc.ir.tensor_shape import TensorShape, merge_shapes, num_elements, shape_str
from tfc.ops.array_common import INDEX_DTYPES
from tfc.ops.constant import constant, convert_to_tensor
from tfc.ops.control import no_op
from tfc.ops.flops import no_flops
from tfc.ops.kernels import Kernel, Param, RowsSpec, c_string, loop_kernel, view
from tfc.ops.registry import OpContext, OpDef, apply_op, check_dtype, register

__all__ = ["TensorArray"]

WRITTEN, CLEARED = 1, 2


def _scalar_or_vector(ctx: OpContext, i: int, what: str) -> int | None:
    """The number of indices of index input `i` (None: a scalar index)."""
    check_dtype(ctx, i, INDEX_DTYPES, what)
    shape = ctx.in_shapes[i]
    if shape is None:
        return None
    if len(shape) > 1:
        raise ctx.error(f"{what} must be a scalar or a vector, got rank {len(shape)}")
    return None if len(shape) == 0 else shape[0]


def _message_parts(ctx: OpContext, kind: str) -> tuple[str, str, str]:
    """A TensorArray error's text around its two numbers (an index or count, and the size)."""
    name = ctx.attrs.get("tensor_array_name") or ctx.name
    if ctx.attrs.get("dynamic_size", False):
        past = (
            " but the capacity tfc gave this TensorArray of dynamic size when compiling (its "
            "size and the iteration bound of the loop that grows it) is: "
        )
    else:
        past = " but array is not resizeable and size is: "
    table = {
        "write_range": (f"TensorArray {name}: Tried to write to index ", past, ""),
        "write_twice": (
            f"TensorArray {name}: Could not write to TensorArray index ",
            " because it has already been written to (size ",
            ").",
        ),
        "read_range": ("Tried to read from index ", " but array size is: ", ""),
        "read_cleared": (
            f"TensorArray {name}: Could not read index ",
            " twice because it was cleared after a previous read (perhaps try setting "
            "clear_after_read = false?) (size ",
            ").",
        ),
        "stack_partial": (
            f"TensorArray {name}: stack of a TensorArray of dynamic size with ",
            " elements written, but tfc compiled it with the capacity ",
            " (shapes are static in tfc: write every element up to the capacity)",
        ),
    }
    return table[kind]


def _messages(ctx: OpContext, *kinds: str) -> dict[str, str]:
    """C string literals of the TensorArray errors `kinds`: <kind>_a, _b, _c around the numbers."""
    out = {}
    for kind in kinds:
        for part, text in zip("abc", _message_parts(ctx, kind)):
            out[f"{kind}_{part}"] = c_string(text)
    return out


def _raise(kind: str, ctx: OpContext, number: int, size: int) -> None:
    a, b, c = _message_parts(ctx, kind)
    raise errors.InvalidArgumentError(None, None, f"{a}{number}{b}{size}{c}")


def _rows_spec(ctx: OpContext, buffer: int, count: int, values: dict) -> RowsSpec:
    shape = ctx.in_shapes[buffer]
    return RowsSpec(
        dtype=ctx.in_dtypes[buffer],
        index_dtype=_dt.int32,
        rows=shape[0],
        width=num_elements(shape[1:]),
        count=count,
        values=values,
    )


# -- TensorArrayV3: a new array ------------------------------------------------------------------
def _create_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, INDEX_DTYPES, "size")
    size = ctx.const(0)
    capacity = ctx.attrs.get("capacity")
    # a dynamic array's capacity is fixed when compiling (by the loop that grows it)
    if capacity is None and size is not None and not ctx.attrs.get("dynamic_size"):
        capacity = int(size)
        if capacity < 0:
            raise ctx.error(f"TensorArray size must be >= 0, got {capacity}")
    elem = ctx.attrs["element_shape"]
    buffer = None if elem is None else (capacity, *elem)
    return [(ctx.attrs["dtype"], buffer), (_dt.int32, (capacity,))]


def _create_lower(ctx: OpContext) -> list:
    kernels = []
    for out, (dtype, shape) in enumerate(zip(ctx.out_dtypes, ctx.out_shapes)):
        kernels += loop_kernel(shape, view(f"out{out}", dtype, shape), [], "0")
    return kernels


register(
    OpDef(
        "TensorArrayV3",
        infer=_create_infer,
        reference=lambda ctx, size: [
            np.zeros(s, d.np) for d, s in zip(ctx.out_dtypes, ctx.out_shapes)
        ],
        lower=_create_lower,
        flops=no_flops,
        differentiable=False,
        stateful=True,  # a fresh buffer its writes update: never folded into a constant
        const_inputs=(0,),
        input_names=("size",),
    )
)


# -- TensorArrayWriteV3 / TensorArrayScatterV3: elements written in place -----------------------
def _write_infer(ctx: OpContext) -> list:
    buffer, flags, index, value = ctx.in_shapes
    dtype = ctx.in_dtypes[0]
    if ctx.in_dtypes[3] != dtype:
        raise TypeError(
            f"TensorArray dtype is {dtype.name} but Op is trying to write dtype "
            f"{ctx.in_dtypes[3].name} (op '{ctx.name}')"
        )
    count = _scalar_or_vector(ctx, 2, "index")
    if ctx.type == "TensorArrayWriteV3" and count is not None:
        raise ctx.error("TensorArray write takes a scalar index")
    elem = value if count is None or value is None else value[1:]
    if ctx.type == "TensorArrayScatterV3" and value is not None and index is not None:
        if merge_shapes(value[:1], index) is False:
            raise ctx.error(
                f"scatter writes {shape_str(index)} indices but {shape_str(value)} values"
            )
    if buffer is None:
        return [(dtype, None if elem is None else (None, *elem))]
    merged = merge_shapes(buffer[1:], elem)
    if merged is False:
        raise ValueError(
            f"Inconsistent shapes: saw {tuple(elem)} but expected {tuple(buffer[1:])} "
            f"(op '{ctx.name}')"
        )
    return [(dtype, (buffer[0], *merged) if merged is not None else buffer)]


def _write_reference(ctx: OpContext, buffer, flags, index, value) -> np.ndarray:
    indices = np.reshape(index, (-1,)).astype(np.int64)
    rows = np.reshape(value, (indices.size, *buffer.shape[1:]))
    for k, row in zip(indices, rows):
        if not 0 <= k < buffer.shape[0]:
            _raise("write_range", ctx, int(k), buffer.shape[0])
        if flags[k] != 0:
            _raise("write_twice", ctx, int(k), buffer.shape[0])
        flags[k] = WRITTEN
        buffer[k] = row
    return buffer


def _write_lower(ctx: OpContext) -> list:
    count = int(np.prod(ctx.in_shapes[2] or (1,)))
    dtype = ctx.in_dtypes[0]
    params = [
        Param("y", dtype.c_type, False, "out0"),
        Param("flags", "int32_t", False, "in1"),
        Param("idx", ctx.in_dtypes[2].c_type, True, "in2"),
        Param("x", dtype.c_type, True, "in3"),
    ]
    values = _messages(ctx, "write_range", "write_twice")
    return [Kernel("ta_write", params, _rows_spec(ctx, 0, count, values), can_fail=True)]


def _write_grad(op, dy: Tensor) -> list:
    """The written rows' gradient is dy's at those indices; the array before the write does not
    hold them (they are zeroed)."""
    index = op.inputs[2]
    return [_put_rows(dy, index, None, "zero"), None, None, _gather_rows(dy, index)]


for _type in ("TensorArrayWriteV3", "TensorArrayScatterV3"):
    register(
        OpDef(
            _type,
            infer=_write_infer,
            reference=_write_reference,
            lower=_write_lower,
            grad=_write_grad,
            flops=no_flops,
            stateful=True,
            ref_inputs=(0, 1),
            reads_ref=True,
            alias=0,
            input_names=("handle", "flow_in", "index", "value"),
        )
    )


# -- TensorArrayReadV3 / TensorArrayGatherV3: elements read -------------------------------------
def _read_infer(ctx: OpContext) -> list:
    count = _scalar_or_vector(ctx, 1, "index")
    if ctx.type == "TensorArrayReadV3" and count is not None:
        raise ctx.error("TensorArray read takes a scalar index")
    buffer = ctx.in_shapes[0]
    elem = ctx.attrs.get("element_shape") if buffer is None else tuple(buffer[1:])
    if ctx.type == "TensorArrayGatherV3":
        indices = ctx.in_shapes[1]
        return [
            (ctx.in_dtypes[0], None if elem is None else (indices[0] if indices else None, *elem))
        ]
    return [(ctx.in_dtypes[0], elem)]


def _read_reference(ctx: OpContext, buffer, index, flags=None) -> np.ndarray:
    indices = np.reshape(index, (-1,)).astype(np.int64)
    for k in indices:
        if not 0 <= k < buffer.shape[0]:
            _raise("read_range", ctx, int(k), buffer.shape[0])
        if flags is not None:
            if flags[k] == CLEARED:
                _raise("read_cleared", ctx, int(k), buffer.shape[0])
            flags[k] = CLEARED
    return np.array(buffer[indices].reshape(ctx.out_shapes[0]), copy=True)


def _read_lower(ctx: OpContext) -> list:
    count = int(np.prod(ctx.in_shapes[1] or (1,)))
    dtype = ctx.in_dtypes[0]
    clear = len(ctx.in_shapes) > 2
    params = [
        Param("y", dtype.c_type, False, "out0"),
        Param("x", dtype.c_type, True, "in0"),
        Param("idx", ctx.in_dtypes[1].c_type, True, "in1"),
    ]
    if clear:
        params.append(Param("flags", "int32_t", False, "in2"))
    values = {**_messages(ctx, "read_range", "read_cleared"), "clear": clear}
    return [Kernel("ta_read", params, _rows_spec(ctx, 0, count, values), can_fail=True)]


def _read_grad(op, dy: Tensor) -> list:
    """Rows of zeros but for the read ones: added in place to whatever gradient the buffer
    collects (tfc.ops.functional.accumulate_gradient, the gradient walk's sums)."""
    buffer, index = op.inputs[:2]
    zeros = apply_op("ZerosLike", [buffer], name="zeros_like").outputs[0]
    return [_put_rows(zeros, index, dy, "add"), None] + [None] * (len(op.inputs) - 2)


for _type in ("TensorArrayReadV3", "TensorArrayGatherV3"):
    register(
        OpDef(
            _type,
            infer=_read_infer,
            reference=_read_reference,
            lower=_read_lower,
            grad=_read_grad,
            flops=no_flops,
            stateful=True,  # with clear_after_read it marks what it read (input 2, the flags)
            ref_inputs=(2,),
            reads_ref=True,
            input_names=("handle", "index", "flow_in"),
        )
    )


# -- TensorArrayStack: the whole buffer ---------------------------------------------------------
def _stack_infer(ctx: OpContext) -> list:
    buffer, elem = ctx.in_shapes[0], ctx.attrs.get("element_shape")
    if buffer is None and elem is not None:
        buffer = (ctx.in_shapes[1][0] if ctx.in_shapes[1] else None, *elem)
    return [(ctx.in_dtypes[0], buffer)]


def _stack_reference(ctx: OpContext, buffer, flags) -> np.ndarray:
    if ctx.attrs.get("dynamic_size"):
        written = int(np.count_nonzero(flags))
        if written != buffer.shape[0]:
            _raise("stack_partial", ctx, written, buffer.shape[0])
    return buffer


def _stack_lower(ctx: OpContext) -> list:
    if not ctx.attrs.get("dynamic_size") or not ctx.in_shapes[0][0]:
        return []  # the buffer is the stacked value
    params = [Param("flags", "int32_t", True, "in1")]
    values = _messages(ctx, "stack_partial")
    return [Kernel("ta_stack_check", params, _rows_spec(ctx, 0, 0, values), can_fail=True)]


register(
    OpDef(
        "TensorArrayStack",
        infer=_stack_infer,
        reference=_stack_reference,
        lower=_stack_lower,
        grad=lambda op, dy: [dy, None],
        flops=no_flops,
        alias=0,
        input_names=("handle", "flow_in"),
    )
)


# -- TensorArrayUnstack: a new array holding the rows of a tensor ------------------------------
def _unstack_infer(ctx: OpContext) -> list:
    shape = ctx.in_shapes[0]
    if shape is not None and len(shape) == 0:
        raise ctx.error("TensorArray unstack needs a value of rank at least 1")
    rows = None if shape is None else shape[0]
    return [(ctx.in_dtypes[0], shape), (_dt.int32, (rows,))]


def _unstack_lower(ctx: OpContext) -> list:
    shape, dtype = ctx.out_shapes[0], ctx.out_dtypes[0]
    copy = loop_kernel(shape, view("out0", dtype, shape), [view("in0", dtype, shape)], "{0}")
    flags = ctx.out_shapes[1]
    return copy + loop_kernel(flags, view("out1", _dt.int32, flags), [], str(WRITTEN))


register(
    OpDef(
        "TensorArrayUnstack",
        infer=_unstack_infer,
        reference=lambda ctx, value: [
            np.array(value, copy=True),
            np.full(value.shape[:1], WRITTEN, np.int32),
        ],
        lower=_unstack_lower,
        grad=lambda op, dy, dflags: [dy],
        flops=no_flops,
        stateful=True,  # a fresh buffer (see TensorArrayV3)
        input_names=("value",),
    )
)


# -- TensorArraySizeV3: how many elements a dynamic array has -----------------------------------
def _size_lower(ctx: OpContext) -> list:
    params = [Param("y", "int32_t", False, "out0"), Param("flags", "int32_t", True, "in0")]
    spec = RowsSpec(_dt.int32, _dt.int32, ctx.in_shapes[0][0], 1, 0)
    return [Kernel("ta_size", params, spec)]


register(
    OpDef(
        "TensorArraySizeV3",
        infer=lambda ctx: [(_dt.int32, ())],
        reference=lambda ctx, flags: np.array(
            int(np.flatnonzero(flags).max()) + 1 if np.any(flags) else 0, np.int32
        ),
        lower=_size_lower,
        differentiable=False,
        input_names=("flow_in",),
    )
)


# -- TensorArrayPutRows: gradient arithmetic on rows --------------------------------------------
def _put_rows_infer(ctx: OpContext) -> list:
    _scalar_or_vector(ctx, 1, "indices")
    if ctx.attrs["mode"] not in ("set", "add", "zero"):
        raise ctx.error(f"unknown mode {ctx.attrs['mode']!r}")
    return [(ctx.in_dtypes[0], ctx.in_shapes[0])]


def _put_rows_reference(ctx: OpContext, base, index, values=None) -> np.ndarray:
    out = np.array(base, copy=True)
    indices = np.reshape(index, (-1,)).astype(np.int64)
    for k in indices:
        if not 0 <= k < base.shape[0]:
            raise errors.InvalidArgumentError(
                None, None, f"indices = {int(k)} is not in [0, {base.shape[0]})"
            )
    mode = ctx.attrs["mode"]
    if mode == "zero":
        out[indices] = 0
    else:
        rows = np.reshape(values, (indices.size, *base.shape[1:]))
        for k, row in zip(indices, rows):
            out[k] = row if mode == "set" else out[k] + row
    return out


def _put_rows_lower(ctx: OpContext) -> list:
    count = int(np.prod(ctx.in_shapes[1] or (1,)))
    dtype = ctx.in_dtypes[0]
    params = [
        Param("y", dtype.c_type, False, "out0"),
        Param("x", dtype.c_type, True, "in0"),
        Param("idx", ctx.in_dtypes[1].c_type, True, "in1"),
    ]
    if ctx.attrs["mode"] != "zero":
        params.append(Param("v", dtype.c_type, True, "in2"))
    spec = _rows_spec(ctx, 0, count, {"mode": ctx.attrs["mode"]})
    return [Kernel("ta_put_rows", params, spec, can_fail=True)]


def _put_rows_grad(op, dy: Tensor) -> list:
    mode = op._node["attrs"]["mode"]
    index = op.inputs[1]
    base = dy if mode == "add" else _put_rows(dy, index, None, "zero")
    grads = [base, None]
    if mode != "zero":
        grads.append(_gather_rows(dy, index))
    return grads


register(
    OpDef(
        "TensorArrayPutRows",
        infer=_put_rows_infer,
        reference=_put_rows_reference,
        lower=_put_rows_lower,
        grad=_put_rows_grad,
        flops=no_flops,
        # the kernel copies the base (unless it is the output's own buffer), then changes rows
        inplace=lambda ctx: [0],
        input_names=("base", "indices", "values"),
    )
)


def _put_rows(base: Tensor, index: Tensor, values: Tensor | None, mode: str) -> Tensor:
    inputs = [base, index] + ([] if values is None else [values])
    return apply_op("TensorArrayPutRows", inputs, {"mode": mode}, name="put_rows").outputs[0]


def _gather_rows(buffer: Tensor, index: Tensor) -> Tensor:
    axis = constant(0, dtype=_dt.int32, name="axis")
    return apply_op("GatherV2", [buffer, index, axis], {"batch_dims": 0}, name="rows").outputs[0]


# == the Python class ============================================================================
def _index(value: Any, name: str) -> Tensor:
    t = convert_to_tensor(value, dtype=_dt.int32) if not isinstance(value, Tensor) else value
    if t.dtype != _dt.int32:
        if t.dtype not in INDEX_DTYPES:
            raise TypeError(f"TensorArray {name} must be int32, got {t.dtype.name}")
        t = apply_op("Cast", [t], {"DstT": _dt.int32, "SrcT": t.dtype}, name="Cast").outputs[0]
    return t


class TensorArray:
    """`tf.TensorArray`; see the module docstring. Writes return a new TensorArray (use it, as
    in TF); the old one names the array before the write."""

    def __init__(
        self,
        dtype: Any,
        size: Any = None,
        dynamic_size: bool | None = None,
        clear_after_read: bool | None = None,
        tensor_array_name: str | None = None,
        handle: Any = None,
        flow: Any = None,
        infer_shape: bool = True,
        element_shape: Any = None,
        colocate_with_first_write_call: bool = True,
        name: str | None = None,
    ) -> None:
        if handle is not None or flow is not None:
            raise NotImplementedError("tfc's TensorArray cannot be made from a handle or flow")
        if size is None:
            raise ValueError("Size must be provided if handle is not provided")
        self._dtype = _dt.as_dtype(dtype)
        self._dynamic_size = bool(dynamic_size)
        self._clear_after_read = True if clear_after_read is None else bool(clear_after_read)
        self._infer_shape = infer_shape
        self._element_shape = TensorShape(element_shape)
        self._graph: Graph = get_default_graph()
        with name_scope(name, "TensorArray") as scope:
            self._scope = scope
            self._name = tensor_array_name or scope.rstrip("/")
            self._size = _index(size, "size")
        self._buffer: Tensor | None = None
        self._flags: Tensor | None = None
        if self._element_shape.is_fully_defined():
            self._materialize()

    @classmethod
    def _version(cls, like: TensorArray, buffer: Tensor, flags: Tensor) -> TensorArray:
        """The array `like` after an op: the same array, the buffer and flags `buffer`, `flags`."""
        ta = cls.__new__(cls)
        ta.__dict__.update(like.__dict__)
        ta._buffer, ta._flags = buffer, flags
        shape = buffer._shape_tuple
        if shape is not None:
            ta._element_shape = ta._element_shape.merge_with(TensorShape(shape[1:]))
        return ta

    # -- the two tensors ------------------------------------------------------------------------
    def _materialize(self) -> None:
        """Make the array's buffer and flags (in the graph the array was created in), with the
        element shape known so far (a loop body that writes it fixes the rest when compiling)."""
        if self._buffer is not None:
            return
        elem = self._element_shape.as_tuple() if self._element_shape.rank is not None else None
        attrs = {
            "dtype": self._dtype,
            "element_shape": elem,
            "dynamic_size": self._dynamic_size,
            "clear_after_read": self._clear_after_read,
            "tensor_array_name": self._name,
        }
        with self._graph.as_default(), self._graph.name_scope(self._scope):
            op = apply_op("TensorArrayV3", [self._size], attrs, name="TensorArrayV3")
        self._buffer, self._flags = op.outputs

    def _tensors(self) -> list[Tensor]:
        """[buffer, flags]: what a loop or a branch carries."""
        self._materialize()
        return [self._buffer, self._flags]

    @property
    def flow(self) -> Tensor:
        """The buffer: each version of the array is one (TF's flow orders its ops the same)."""
        self._materialize()
        return self._buffer

    handle = flow

    @property
    def dtype(self) -> _dt.DType:
        return self._dtype

    @property
    def element_shape(self) -> TensorShape:
        return self._element_shape

    @property
    def dynamic_size(self) -> bool:
        return self._dynamic_size

    def _attrs(self) -> dict:
        shape = self._element_shape
        return {
            "tensor_array_name": self._name,
            "dynamic_size": self._dynamic_size,
            # what Python knows of the element shape, for ops on a buffer of unknown rank
            "element_shape": shape.as_tuple() if shape.rank is not None else None,
        }

    def _check_value(self, value: Any, rows: bool) -> Tensor:
        v = convert_to_tensor(value, dtype=None if isinstance(value, Tensor) else self._dtype)
        if v.dtype != self._dtype:
            raise TypeError(
                f"TensorArray dtype is {self._dtype.name} but Op is trying to write dtype "
                f"{v.dtype.name}"
            )
        shape = v.shape
        elem = TensorShape(shape.as_tuple()[1:]) if rows and shape.rank is not None else shape
        if not rows or shape.rank is not None:
            merged = merge_shapes(self._element_shape.as_tuple(), elem.as_tuple())
            if merged is False:
                raise ValueError(
                    f"Inconsistent shapes: saw {elem.as_tuple()} but expected "
                    f"{self._element_shape.as_tuple()}"
                )
            self._element_shape = TensorShape(merged)
        return v

    # -- writing --------------------------------------------------------------------------------
    def write(self, index: Any, value: Any, name: str | None = None) -> TensorArray:
        with name_scope(name, "TensorArrayWrite"):
            v = self._check_value(value, rows=False)
            buffer, flags = self._tensors()
            i = _index(index, "index")
            op = apply_op("TensorArrayWriteV3", [buffer, flags, i, v], self._attrs())
        return TensorArray._version(self, op.outputs[0], flags)

    def scatter(self, indices: Any, value: Any, name: str | None = None) -> TensorArray:
        with name_scope(name, "TensorArrayScatter"):
            v = self._check_value(value, rows=True)
            buffer, flags = self._tensors()
            i = _index(indices, "indices")
            op = apply_op("TensorArrayScatterV3", [buffer, flags, i, v], self._attrs())
        return TensorArray._version(self, op.outputs[0], flags)

    def unstack(self, value: Any, name: str | None = None) -> TensorArray:
        """The array holding the rows of `value` (TF: a scatter at 0, 1, ... n-1)."""
        with name_scope(name, "TensorArrayUnstack"):
            v = self._check_value(value, rows=True)
            rows = v._shape_tuple[0] if v._shape_tuple else None
            size = self._size.op._node["attrs"]["value"] if self._size.op.type == "Const" else None
            fresh = self._buffer is None or self._buffer.op.type == "TensorArrayV3"
            if fresh and (size is None or rows is None or int(size) == rows):
                op = apply_op("TensorArrayUnstack", [v], name="TensorArrayUnstack")
                return TensorArray._version(self, op.outputs[0], op.outputs[1])
            if rows is None:
                raise ValueError(
                    "tfc unstacks into a TensorArray of another size only values whose first "
                    f"dimension is known; {v.name} has shape {v.shape}"
                )
            indices = constant(np.arange(rows, dtype=np.int32), name="indices")
            return self.scatter(indices, v)

    def split(self, value: Any, lengths: Any, name: str | None = None) -> TensorArray:
        """Rows of `value` split by `lengths` (all equal in tfc: elements have one shape)."""
        with name_scope(name, "TensorArraySplit"):
            v = convert_to_tensor(value, dtype=self._dtype)
            lens = np.asarray(lengths).reshape(-1)
            if lens.size == 0 or np.any(lens != lens[0]):
                raise ValueError(
                    f"tfc's TensorArray holds elements of one shape: split lengths {lens.tolist()} "
                    "must all be equal"
                )
            shape = v._shape_tuple
            rows = apply_op(
                "Reshape",
                [v, constant(np.array([lens.size, int(lens[0]), *shape[1:]], np.int32))],
            ).outputs[0]
            return self.unstack(rows)

    # -- reading --------------------------------------------------------------------------------
    def _reading(self, index: Tensor, op_type: str, name: str | None, scope: str) -> Tensor:
        with name_scope(name, scope):
            buffer, flags = self._tensors()
            inputs = [buffer, index] + ([flags] if self._clear_after_read else [])
            return apply_op(op_type, inputs, self._attrs()).outputs[0]

    def read(self, index: Any, name: str | None = None) -> Tensor:
        return self._reading(_index(index, "index"), "TensorArrayReadV3", name, "TensorArrayRead")

    def gather(self, indices: Any, name: str | None = None) -> Tensor:
        i = _index(indices, "indices")
        return self._reading(i, "TensorArrayGatherV3", name, "TensorArrayGather")

    def stack(self, name: str | None = None) -> Tensor:
        with name_scope(name, "TensorArrayStack"):
            buffer, flags = self._tensors()
            return apply_op("TensorArrayStack", [buffer, flags], self._attrs()).outputs[0]

    def concat(self, name: str | None = None) -> Tensor:
        """The elements concatenated along their first dimension (one shape: a reshape)."""
        stacked = self.stack(name=name)
        shape = stacked._shape_tuple
        if shape is None or len(shape) < 2 or any(d is None for d in shape[2:]):
            raise ValueError(
                f"tfc's TensorArray concat needs elements of rank >= 1 whose shape after the "
                f"first dimension is known; they have shape {shape_str(shape)}"
            )
        target = constant(np.array([-1, *shape[2:]], np.int32), name="concat_shape")
        return apply_op("Reshape", [stacked, target], name="concat").outputs[0]

    def size(self, name: str | None = None) -> Tensor:
        if not self._dynamic_size:
            return self._size
        with name_scope(name, "TensorArraySize"):
            _, flags = self._tensors()
            return apply_op("TensorArraySizeV3", [flags]).outputs[0]

    def identity(self) -> TensorArray:
        return TensorArray._version(self, *self._tensors())

    def close(self, name: str | None = None) -> Any:
        return no_op(name=name or "TensorArrayClose")

    def __repr__(self) -> str:
        return f"<tfc.TensorArray '{self._name}' dtype={self._dtype.name}>"
