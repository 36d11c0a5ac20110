"""tf.map_fn, tf.scan, tf.foldl, tf.foldr: loops over the first dimension of tensors, built as
TF1 builds them (a tf.while_loop reading the elements from TensorArrays and writing the
results to TensorArrays), so they compile to one native loop and differentiate like one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, get_default_graph, name_scope
from tfc.ir.subgraph import Subgraph
from tfc.ir.tensor_shape import TensorShape
from tfc.ops import nest
from tfc.ops.array import gather, stop_gradient
from tfc.ops.constant import constant, convert_to_tensor
from tfc.ops.control_flow import while_loop
from tfc.ops.registry import apply_op
from tfc.ops.tensor_array import TensorArray

__all__ = [
    "map_fn",
    "scan",
    "foldl",
    "foldr",
    "vectorized_map",
    "nondifferentiable_batch_function",
]


def _length(flat: list[Tensor], what: str) -> tuple[Tensor, int | None]:
    """The common first dimension of `flat` (a tensor, and its static value when known)."""
    if not flat:
        raise ValueError(f"{what}: elems must hold at least one tensor")
    static = None
    for t in flat:
        shape = t._shape_tuple
        if shape is not None and len(shape) == 0:
            raise ValueError(f"{what}: elements in elems must be 1+ dimensional, got {t.name}")
        if shape is not None and shape[0] is not None:
            if static is not None and static != shape[0]:
                raise ValueError(
                    f"{what}: all elems must have the same first dimension ({static} and "
                    f"{shape[0]})"
                )
            static = shape[0]
    if static is not None:
        return constant(static, dtype=_dt.int32, name="n"), static
    shape = apply_op("Shape", [flat[0]], {"out_type": _dt.int32}).outputs[0]
    begin, end, step = (constant([k], dtype=_dt.int32) for k in (0, 1, 1))
    attrs = {
        "begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0, "new_axis_mask": 0,
        "shrink_axis_mask": 1,
    }  # fmt: skip
    n = apply_op("StridedSlice", [shape, begin, end, step], attrs, name="n").outputs[0]
    return n, None


def _elements(flat: list[Tensor], n: Tensor) -> list[TensorArray]:
    return [
        TensorArray(t.dtype, size=n, element_shape=_rows(t), name="elems").unstack(t) for t in flat
    ]


def _rows(t: Tensor) -> TensorShape:
    shape = t._shape_tuple
    return TensorShape(None if shape is None else shape[1:])


def _stacked(tas: list[TensorArray], static: int | None) -> list[Tensor]:
    results = []
    for ta in tas:
        r = ta.stack()
        if static is not None and r._shape_tuple is not None:
            r.set_shape([static, *r._shape_tuple[1:]])
        results.append(r)
    return results


def map_fn(
    fn: Callable[[Any], Any],
    elems: Any,
    dtype: Any = None,
    parallel_iterations: int | None = None,
    back_prop: bool = True,
    swap_memory: bool = False,
    infer_shape: bool = True,
    name: str | None = None,
) -> Any:
    """`tf.map_fn`: fn applied to each element of `elems` (unpacked along dim 0), stacked;
    `dtype` is the structure of fn's output dtypes when it differs from elems'."""
    if not callable(fn):
        raise TypeError("fn must be callable.")
    with name_scope(name, "map"):
        flat = [convert_to_tensor(e) for e in nest.flatten(elems)]
        n, static = _length(flat, "map_fn")
        elems_ta = _elements(flat, n)
        out_structure = elems if dtype is None else dtype
        out_dtypes = (
            [t.dtype for t in flat]
            if dtype is None
            else [_dt.as_dtype(d) for d in nest.flatten(dtype)]
        )
        accs = [TensorArray(d, size=n, infer_shape=infer_shape, name="acc") for d in out_dtypes]

        def compute(i: Tensor, tas: list[TensorArray]) -> tuple:
            value = nest.pack_sequence_as(elems, [ta.read(i) for ta in elems_ta])
            out = fn(value)
            nest.assert_same_structure(out_structure, out, check_types=False)
            written = [ta.write(i, v) for ta, v in zip(tas, nest.flatten(out))]
            return i + 1, written

        _, done = while_loop(
            lambda i, _: i < n, compute, (constant(0, name="i"), accs),
            parallel_iterations=parallel_iterations or 10, back_prop=back_prop,
            swap_memory=swap_memory, maximum_iterations=n,
        )  # fmt: skip
        return nest.pack_sequence_as(out_structure, _stacked(list(done), static))


def scan(
    fn: Callable[[Any, Any], Any],
    elems: Any,
    initializer: Any = None,
    parallel_iterations: int = 10,
    back_prop: bool = True,
    swap_memory: bool = False,
    infer_shape: bool = True,
    reverse: bool = False,
    name: str | None = None,
) -> Any:
    """`tf.scan`: the accumulated values a = fn(a, x) over the elements x of `elems` (from the
    last with reverse=True), stacked; a starts as `initializer` (else the first element)."""
    if not callable(fn):
        raise TypeError("fn must be callable.")
    with name_scope(name, "scan"):
        flat = [convert_to_tensor(e) for e in nest.flatten(elems)]
        n, static = _length(flat, "scan")
        elems_ta = _elements(flat, n)
        first = n - 1 if reverse else constant(0, dtype=_dt.int32)
        if initializer is None:
            a_flat = [ta.read(first) for ta in elems_ta]
            structure = elems
            start = 1
        else:
            structure = initializer
            a_flat = [convert_to_tensor(a) for a in nest.flatten(initializer)]
            start = 0
        accs = [
            TensorArray(
                a.dtype,
                size=n,
                element_shape=a.shape if infer_shape else None,
                infer_shape=infer_shape,
                name="acc",
            )  # fmt: skip
            for a in a_flat
        ]
        if initializer is None:
            accs = [ta.write(first, a) for ta, a in zip(accs, a_flat)]

        def compute(i: Tensor, a: list[Tensor], tas: list[TensorArray]) -> tuple:
            x = nest.pack_sequence_as(elems, [ta.read(i) for ta in elems_ta])
            out = fn(nest.pack_sequence_as(structure, a), x)
            nest.assert_same_structure(structure, out, check_types=False)
            out_flat = [convert_to_tensor(v) for v in nest.flatten(out)]
            written = [ta.write(i, v) for ta, v in zip(tas, out_flat)]
            return (i - 1 if reverse else i + 1), out_flat, written

        if reverse:
            i0 = n - 1 - start

            def keep_going(i: Tensor, *_: Any) -> Tensor:
                return i >= 0
        else:
            i0 = constant(start, dtype=_dt.int32, name="i")

            def keep_going(i: Tensor, *_: Any) -> Tensor:
                return i < n

        _, _, done = while_loop(
            keep_going, compute, (i0, a_flat, accs),
            parallel_iterations=parallel_iterations, back_prop=back_prop,
            swap_memory=swap_memory, maximum_iterations=n,
        )  # fmt: skip
        return nest.pack_sequence_as(structure, _stacked(list(done), static))


def _fold(
    fn: Callable[[Any, Any], Any],
    elems: Any,
    initializer: Any,
    parallel_iterations: int,
    back_prop: bool,
    swap_memory: bool,
    reverse: bool,
    what: str,
) -> Any:
    if not callable(fn):
        raise TypeError("fn must be callable.")
    flat = [convert_to_tensor(e) for e in nest.flatten(elems)]
    n, _ = _length(flat, what)
    elems_ta = _elements(flat, n)
    first = n - 1 if reverse else constant(0, dtype=_dt.int32)
    if initializer is None:
        a = nest.pack_sequence_as(elems, [ta.read(first) for ta in elems_ta])
        start = 1
    else:
        a = initializer
        start = 0

    def compute(i: Tensor, a: Any) -> tuple:
        x = nest.pack_sequence_as(elems, [ta.read(i) for ta in elems_ta])
        return (i - 1 if reverse else i + 1), fn(a, x)

    if reverse:
        i0 = n - 1 - start

        def keep_going(i: Tensor, _: Any) -> Tensor:
            return i >= 0
    else:
        i0 = constant(start, dtype=_dt.int32, name="i")

        def keep_going(i: Tensor, _: Any) -> Tensor:
            return i < n

    _, result = while_loop(
        keep_going, compute, (i0, a), parallel_iterations=parallel_iterations,
        back_prop=back_prop, swap_memory=swap_memory, maximum_iterations=n,
    )  # fmt: skip
    return result


def foldl(
    fn: Callable[[Any, Any], Any],
    elems: Any,
    initializer: Any = None,
    parallel_iterations: int = 10,
    back_prop: bool = True,
    swap_memory: bool = False,
    name: str | None = None,
) -> Any:
    """`tf.foldl`: a = fn(a, x) over the elements of `elems` from the first; returns a."""
    with name_scope(name, "foldl"):
        return _fold(
            fn, elems, initializer, parallel_iterations, back_prop, swap_memory, False, "foldl"
        )


def foldr(
    fn: Callable[[Any, Any], Any],
    elems: Any,
    initializer: Any = None,
    parallel_iterations: int = 10,
    back_prop: bool = True,
    swap_memory: bool = False,
    name: str | None = None,
) -> Any:
    """`tf.foldr`: a = fn(a, x) over the elements of `elems` from the last; returns a."""
    with name_scope(name, "foldr"):
        return _fold(
            fn, elems, initializer, parallel_iterations, back_prop, swap_memory, True, "foldr"
        )


def _output_dtypes(fn: Callable[[Any], Any], elems: Any, flat: list[Tensor]) -> Any:
    """The structure of fn's output dtypes, from one call on the first elements traced into a
    nested graph that no op holds (so none of the traced ops runs)."""
    tracer = Subgraph(get_default_graph(), "vectorized_map_trace/")
    with tracer.as_default():
        first = [gather(tracer.capture(t), 0) for t in flat]
        out = fn(nest.pack_sequence_as(elems, first))
    return nest.map_structure(lambda t: convert_to_tensor(t).dtype, out)


def vectorized_map(
    fn: Callable[[Any], Any],
    elems: Any,
    fallback_to_while_loop: bool = True,
    warn: bool = True,
) -> Any:
    """`tf.vectorized_map`: fn applied to each element of `elems` (unpacked along dim 0), the
    results stacked: what map_fn computes. TF rewrites fn into batched ops where it can (and
    falls back to a while loop where it cannot); tfc always runs map_fn's loop, which compiles
    to one native loop, so the values are the same either way."""
    if not callable(fn):
        raise TypeError("fn must be callable.")
    with name_scope(None, "loop_body"):
        flat = [convert_to_tensor(e) for e in nest.flatten(elems)]
        _length(flat, "vectorized_map")
        dtypes = _output_dtypes(fn, elems, flat)
        return map_fn(fn, nest.pack_sequence_as(elems, flat), dtype=dtypes)


def nondifferentiable_batch_function(
    num_batch_threads: int,
    max_batch_size: int,
    batch_timeout_micros: int,
    allowed_batch_sizes: Any = None,
    max_enqueued_batches: int = 10,
    autograph: bool = True,
    enable_large_batch_splitting: bool = True,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`tf.nondifferentiable_batch_function`: a decorator for a function of tensors whose
    leading dimension is the batch. TF's serving runtime gathers the inputs of concurrent
    Session.run calls into one batch of at most `max_batch_size` and splits the results back;
    the results of each call are the function of its own inputs either way, which is what tfc
    computes for every run (compiled programs do not batch concurrent runs together). As the
    name says, no gradient flows through the results."""
    for what, value in (
        ("num_batch_threads", num_batch_threads),
        ("max_batch_size", max_batch_size),
        ("max_enqueued_batches", max_enqueued_batches),
    ):
        if int(value) < 1:
            raise ValueError(f"{what} must be positive, got {value}")
    if int(batch_timeout_micros) < 0:
        raise ValueError(f"batch_timeout_micros must be non-negative, got {batch_timeout_micros}")
    if allowed_batch_sizes is not None:
        sizes = [int(s) for s in allowed_batch_sizes]
        if sizes != sorted(set(sizes)) or not sizes or sizes[-1] != int(max_batch_size):
            raise ValueError(
                "allowed_batch_sizes must be increasing and end with max_batch_size, got "
                f"{list(allowed_batch_sizes)} for max_batch_size {max_batch_size}"
            )

    def decorator(fn: Callable[..., Any]) -> Callable[..., Any]:
        def batched(*args: Any) -> Any:
            with name_scope(None, "batch"):
                tensors = [convert_to_tensor(a) for a in args]
                out = fn(*tensors)
                return nest.map_structure(lambda t: stop_gradient(convert_to_tensor(t)), out)

        batched.__name__ = getattr(fn, "__name__", "batch_function")
        batched.__doc__ = fn.__doc__
        return batched

    return decorator
