"""tfc as an ONNX backend (`onnx.backend.base.Backend`): a model is imported into a tfc graph and
run by a Session, compiled to native code per input shape, so ONNX's own conformance suite
(`onnx.backend.test.BackendTest(tfc.onnx.backend, __name__)`) runs against tfc.

    import tfc.onnx.backend as backend
    rep = backend.prepare(model)            # or backend.run_model(model, inputs)
    outputs = rep.run([x])                  # NumPy arrays, in the model's output order

Device "CPU" runs the generated C; "CUDA" places every op on the GPU (generated CUDA), and is
supported where tfc finds a GPU.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

import tfc.onnx.types as _types
from tfc.client.session import Session
from tfc.ir.graph import Graph
from tfc.onnx.importer import ImportedModel, graph_inputs_behind, import_graph
from tfc.onnx.loading import OnnxImportError, load_model, require_onnx
from tfc.onnx.node import NotKnownError

_onnx = require_onnx()
from onnx.backend.base import Backend, BackendRep, Device, DeviceType, namedtupledict  # noqa: E402

__all__ = [
    "TfcBackend",
    "TfcRep",
    "feed_dict",
    "feed_value",
    "fetch_value",
    "import_for_values",
    "prepare",
    "run_imported",
    "run_model",
    "run_node",
    "supports_device",
]

GPU_DEVICE = "/device:GPU:0"


def feed_value(value: Any, elem_type: int, name: str) -> np.ndarray:
    """An input value as tfc computes it: narrow integers and half floats in their wider tfc
    dtype, checked to fit the ONNX type declared for it."""
    array = np.asarray(value)
    dtype = _types.COMPUTE[elem_type]
    if array.dtype.kind == "V" and elem_type in _types.INTEGER_RANGES:  # ml_dtypes' int4, ...
        array = array.astype(np.int64)
    if elem_type in _types.INTEGER_RANGES:
        if array.dtype.kind not in "iub":
            raise TypeError(
                f"input '{name}' must hold {_types.name(elem_type)} values, got {array.dtype}"
            )
        low, high = _types.INTEGER_RANGES[elem_type]
        if array.size and (array.min() < low or array.max() > min(high, 2**63 - 1)):
            raise ValueError(
                f"input '{name}' holds values outside {_types.name(elem_type)}'s "
                f"range that tfc computes ([{low}, {min(high, 2**63 - 1)}])"
            )
    if array.dtype.kind == "V" or array.dtype.name == "bfloat16":
        array = array.astype(np.float32)
    return np.ascontiguousarray(array.astype(dtype.np, copy=False))


def fetch_value(value: np.ndarray, elem_type: int) -> np.ndarray:
    """An output value in the NumPy dtype ONNX gives its declared type."""
    target = _types.numpy_dtype(elem_type)
    array = np.asarray(value)
    if array.dtype == target:
        return array
    with np.errstate(over="ignore"):
        return array.astype(target)


def import_for_values(
    model: Any,
    values: Mapping[str, Any] | None = None,
    *,
    batch: int | None = None,
    graph: Graph | None = None,
    scope: str | None = None,
    device: str | None = None,
) -> ImportedModel:
    """`model` imported for a run on `values` (its inputs by name): where an axis, a shape or a
    count the graph needs when it is built is computed from inputs, those inputs are imported
    as the constants `values` holds (the program is compiled for them, as a Session compiles
    for the fed shapes). Without `values` such a model raises the NotKnownError. `graph`
    (default: a new one per attempt) receives the ops, under `device` when given."""
    proto, _ = load_model(model)
    bound: dict[str, Any] = {}
    attempt = 0
    while True:
        target = graph if graph is not None else Graph()
        where = f"{scope or 'model'}_{attempt}" if graph is not None and attempt else scope
        try:
            with target.device(device) if device else contextlib.nullcontext():
                return import_graph(proto, batch, graph=target, scope=where, constants=bound)
        except NotKnownError as e:
            behind = sorted(
                {n for v in e.values for n in graph_inputs_behind(proto, v)} - set(bound)
            )
            if values is None or not behind or any(n not in values for n in behind):
                raise
            for name in behind:
                bound[name] = np.asarray(values[name])
            attempt += 1


class TfcRep(BackendRep):
    """A prepared model: its tfc graph and the Session that runs it. A model whose shapes or
    axes come from its inputs is imported again per value of those inputs."""

    def __init__(self, model: Any, device: str = "CPU", **kwargs: Any) -> None:
        self.device = device
        self.kwargs = kwargs
        self.proto = model
        self.specialized: dict[tuple, tuple[ImportedModel, Session]] = {}
        try:
            self.model: ImportedModel | None = self._import(None)
            self.session: Session | None = Session(graph=self.model.graph)
        except NotKnownError as e:
            self.model, self.session = None, None
            behind = [n for v in e.values for n in graph_inputs_behind(model, v)]
            if not behind:
                raise
            self.input_names = [
                i.name
                for i in model.graph.input
                if i.name not in {t.name for t in model.graph.initializer}
            ]

    def _import(self, values: Mapping[str, Any] | None) -> ImportedModel:
        on_gpu = Device(self.device).type == DeviceType.CUDA
        return import_for_values(
            self.proto, values, device=GPU_DEVICE if on_gpu else None, **self.kwargs
        )

    @property
    def graph(self) -> Graph:
        assert self.model is not None
        return self.model.graph

    def _values(self, inputs: Any, names: list[str], source: str) -> list:
        if isinstance(inputs, Mapping):
            unknown = sorted(set(inputs) - set(names))
            if unknown:
                raise ValueError(
                    f"{source}: the model has no input named {unknown}; its inputs are {names}"
                )
            values = [inputs.get(n) for n in names]
        elif isinstance(inputs, np.ndarray) or not isinstance(inputs, Sequence):
            values = [inputs]
        else:
            values = list(inputs)
        if len(values) != len(names) or any(v is None for v in values):
            raise ValueError(
                f"{source}: the model takes {len(names)} inputs {names}, got {len(values)}"
            )
        return values

    def run(self, inputs: Any, **kwargs: Any) -> Any:
        """The model's outputs for `inputs` (a list in the model's input order, a dict by
        input name, or one array), as a named tuple in the model's output order."""
        if self.model is not None and self.session is not None:
            return run_imported(self.model, self.session, inputs)
        values = dict(zip(self.input_names, self._values(inputs, self.input_names, "model")))
        model = self._import(values)
        key = tuple(
            (n, np.asarray(v).dtype.str, np.asarray(v).shape, np.asarray(v).tobytes())
            for n, v in sorted(model.constants.items())
        )
        if key not in self.specialized:
            self.specialized[key] = (model, Session(graph=model.graph))
        model, session = self.specialized[key]
        return run_imported(model, session, {n: values[n] for n in model.input_names})

    def close(self) -> None:
        for session in [self.session, *(s for _, s in self.specialized.values())]:
            if session is not None:
                session.close()


def feed_dict(model: ImportedModel, inputs: Any) -> dict:
    """The Session feeds of `inputs` for an imported model: a list in the model's input order,
    a dict by input name, or one array for a model with one input; each checked against the
    input's declared type and shape."""
    m = model
    if isinstance(inputs, Mapping):
        unknown = sorted(set(inputs) - set(m.input_names))
        if unknown:
            raise ValueError(
                f"{m.source}: the model has no input named {unknown}; its "
                f"inputs are {m.input_names}"
            )
        values = [inputs.get(n) for n in m.input_names]
    elif isinstance(inputs, np.ndarray) or not isinstance(inputs, Sequence):
        values = [inputs]
    else:
        values = list(inputs)
    if len(values) != len(m.inputs) or any(v is None for v in values):
        raise ValueError(
            f"{m.source}: the model takes {len(m.inputs)} inputs {m.input_names}, got {len(values)}"
        )
    feeds = {}
    for name, ph, elem, value in zip(m.input_names, m.inputs, m.input_types, values):
        try:
            array = feed_value(value, elem, name)
        except (TypeError, ValueError) as e:
            raise type(e)(f"{m.source}: {e}") from None
        expected = ph._shape_tuple
        if (
            expected is not None
            and array.ndim != len(expected)
            and array.size == 1
            and all(d == 1 for d in expected)
        ):
            array = array.reshape([1] * len(expected))  # one value given for a scalar input
        if expected is not None and (
            len(expected) != array.ndim
            or any(d is not None and d != s for d, s in zip(expected, array.shape))
        ):
            shown = tuple("?" if d is None else d for d in expected)
            raise ValueError(
                f"{m.source}: input '{name}' has shape {array.shape}; the model takes {shown}"
            )
        feeds[ph] = array
    return feeds


def run_imported(model: ImportedModel, session: Session, inputs: Any) -> Any:
    """Run an imported model's outputs in `session` for `inputs` (see feed_dict): a named tuple
    in the model's output order, each in the NumPy dtype of its declared ONNX type."""
    results = session.run(model.outputs, feed_dict(model, inputs))
    values = [fetch_value(r, elem) for r, elem in zip(results, model.output_types)]
    fields = [_field(n, i) for i, n in enumerate(model.output_names)]
    return namedtupledict("Outputs", fields)(*values)


def _field(name: str, index: int) -> str:
    cleaned = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    if not cleaned or cleaned[0].isdigit() or cleaned[0] == "_":
        cleaned = f"output_{index}_{cleaned}"
    return cleaned


class TfcBackend(Backend):
    """ONNX's backend API over tfc: prepare imports and compiles, run executes natively."""

    @classmethod
    def is_compatible(cls, model: Any, device: str = "CPU", **kwargs: Any) -> bool:
        try:
            cls.prepare(model, device)
        except (OnnxImportError, TypeError, NotImplementedError):
            return False
        return True

    @classmethod
    def prepare(cls, model: Any, device: str = "CPU", **kwargs: Any) -> TfcRep:
        """Import `model` (a ModelProto, its bytes or a path) for `device` ("CPU" or "CUDA").
        `batch` (a keyword) replaces the first dim of every input."""
        if not cls.supports_device(device):
            raise ValueError(f"tfc does not run on device {device!r} here")
        options = {k: v for k, v in kwargs.items() if k == "batch"}
        proto, _ = load_model(model)
        return TfcRep(proto, device, **options)

    @classmethod
    def run_model(cls, model: Any, inputs: Any, device: str = "CPU", **kwargs: Any) -> Any:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(
        cls,
        node: Any,
        inputs: Any,
        device: str = "CPU",
        outputs_info: Sequence[tuple[Any, tuple]] | None = None,
        **kwargs: Any,
    ) -> Any:
        """Run one NodeProto on `inputs` (a list in the node's input order, or a dict by input
        name): the node alone in a model of the newest opset, its input types the arrays'."""
        from onnx import helper

        names = [n for n in node.input if n]
        if isinstance(inputs, Mapping):
            values = [inputs[n] for n in names]
        else:
            values = list(inputs)
        if len(values) != len(names):
            raise ValueError(f"node {node.op_type} takes {len(names)} inputs, got {len(values)}")
        graph_inputs = [
            helper.make_tensor_value_info(
                n, helper.np_dtype_to_tensor_dtype(np.asarray(v).dtype), np.asarray(v).shape
            )
            for n, v in zip(names, values)
        ]
        graph_outputs = []
        for j, out in enumerate(o for o in node.output if o):
            if outputs_info and j < len(outputs_info):
                dtype, shape = outputs_info[j]
                elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
                graph_outputs.append(helper.make_tensor_value_info(out, elem, shape))
            else:
                graph_outputs.append(helper.make_empty_tensor_value_info(out))
        model = helper.make_model(
            helper.make_graph([node], f"{node.op_type}_node", graph_inputs, graph_outputs),
            opset_imports=[helper.make_opsetid("", _onnx.defs.onnx_opset_version())],
        )
        return cls.prepare(model, device, **kwargs).run(values)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        kind = Device(device).type
        if kind == DeviceType.CPU:
            return True
        if kind == DeviceType.CUDA:
            from tfc.backend.cuda_runtime import gpu_status

            return gpu_status()[0]
        return False


prepare = TfcBackend.prepare
run_model = TfcBackend.run_model
run_node = TfcBackend.run_node
supports_device = TfcBackend.supports_device
is_compatible = TfcBackend.is_compatible
