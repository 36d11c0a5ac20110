"""Reading an ONNX model: the file, its protobuf, its opsets and its checker, each failure a clear
error that names the file; `onnx` itself is imported only here, when a model is read."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

# the oldest default-domain opset the importer knows the semantics of
MIN_OPSET = 7


class OnnxImportError(ValueError):
    """An ONNX model tfc cannot import: the message names the file, and the node and operator
    where one is at fault."""


def require_onnx() -> Any:
    """The `onnx` package, or an ImportError that says how to install it."""
    try:
        import onnx
    except ImportError as e:
        raise ImportError(
            "tfc.onnx needs the onnx package (pip install 'tfc[onnx]', or pip install onnx)"
        ) from e
    return onnx


def newest_opset() -> int:
    """The newest default-domain opset the installed `onnx` knows."""
    return int(require_onnx().defs.onnx_opset_version())


def load_model(model: Any) -> tuple[Any, str]:
    """(the ModelProto, the name errors give it) of a ModelProto, serialized bytes or a path.
    Checks that it parses, that it passes ONNX's checker and that its opset is one tfc knows."""
    onnx = require_onnx()
    from google.protobuf.message import DecodeError

    if isinstance(model, onnx.ModelProto):
        source = model.graph.name or "<ModelProto>"
        proto = model
    elif isinstance(model, (bytes, bytearray, memoryview)):
        source = "<bytes>"
        proto = _parse(onnx, DecodeError, bytes(model), source)
    elif isinstance(model, (str, os.PathLike)):
        path = Path(model)
        source = str(path)
        if not path.exists():
            raise FileNotFoundError(f"{source}: no such ONNX model file")
        if not path.is_file():
            raise OnnxImportError(f"{source}: not a file")
        data = path.read_bytes()
        if not data:
            raise OnnxImportError(f"{source}: the file is empty, not an ONNX model")
        proto = _parse(onnx, DecodeError, data, source)
        _load_external_data(onnx, proto, path.parent, source)
    else:
        raise TypeError(
            f"import_model takes an onnx.ModelProto, its bytes or a file path, got "
            f"{type(model).__name__}"
        )
    proto = upgrade_old_opset(onnx, proto, source)
    check_model(onnx, proto, source)
    return proto, source


def upgrade_old_opset(onnx: Any, proto: Any, source: str) -> Any:
    """A model of a default-domain opset older than MIN_OPSET (PyTorch's early exporters wrote
    opset 6: Add with `broadcast` and `axis`, Dropout with `is_test`) converted to MIN_OPSET by
    ONNX's own version converter, whose adapters rewrite those operators; a newer model as it
    is. A model the converter cannot bring forward is refused naming its opset."""
    opset = default_opset(proto)
    if not opset or opset >= MIN_OPSET:
        return proto
    from onnx import version_converter

    try:
        return version_converter.convert_version(proto, MIN_OPSET)
    except (RuntimeError, ValueError, onnx.checker.ValidationError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise OnnxImportError(
            f"{source}: the model uses opset {opset} of the default ONNX domain, which tfc "
            f"imports only as ONNX's version converter brings it to opset {MIN_OPSET}, and the "
            f"converter fails: {first}"
        ) from None


def fixed_input_batch(path: str | os.PathLike, input_name: str | None = None) -> int | None:
    """The first dimension of the model file's input `input_name` (default: its one graph input
    that is not an initializer) when the file fixes it to a number; None when it is symbolic,
    unknown, or the model has no such single input. Reads the graph, not the external weights."""
    onnx = require_onnx()
    proto = onnx.load(os.fspath(path), load_external_data=False)
    graph = proto.graph
    initializers = {t.name for t in graph.initializer}
    if input_name is None:
        fed = [i for i in graph.input if i.name not in initializers]
    else:
        infos = [*graph.input, *graph.value_info, *graph.output]
        fed = [i for i in infos if i.name == input_name][:1]
    if len(fed) != 1 or fed[0].type.WhichOneof("value") != "tensor_type":
        return None
    dims = fed[0].type.tensor_type.shape.dim
    if not dims or not dims[0].HasField("dim_value") or dims[0].dim_value < 1:
        return None
    return int(dims[0].dim_value)


def _parse(onnx: Any, decode_error: type, data: bytes, source: str) -> Any:
    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(data)
    except (decode_error, RuntimeError, ValueError) as e:
        raise OnnxImportError(
            f"{source}: not a valid ONNX model (the protobuf does not parse: the file is "
            f"truncated or is not an ONNX ModelProto): {e}"
        ) from None
    if not proto.HasField("graph"):
        raise OnnxImportError(f"{source}: not an ONNX model (it holds no graph)")
    return proto


def _load_external_data(onnx: Any, proto: Any, base: Path, source: str) -> None:
    from onnx.external_data_helper import load_external_data_for_model, uses_external_data

    if any(uses_external_data(t) for t in proto.graph.initializer):
        try:
            load_external_data_for_model(proto, str(base))
        except (OSError, ValueError) as e:
            raise OnnxImportError(f"{source}: its external weights cannot be read: {e}") from None


def default_opset(proto: Any) -> int:
    """The model's default-domain ("" or "ai.onnx") opset."""
    for entry in proto.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return int(entry.version)
    return 1 if not proto.opset_import else 0


def check_model(onnx: Any, proto: Any, source: str) -> None:
    """ONNX's checker, and the opset range tfc imports."""
    opset = default_opset(proto)
    newest = newest_opset()
    if opset and not MIN_OPSET <= opset <= newest:
        raise OnnxImportError(
            f"{source}: the model uses opset {opset} of the default ONNX domain; tfc imports "
            f"opsets {MIN_OPSET} to {newest} (the newest the installed onnx "
            f"{onnx.__version__} knows)"
        )
    try:
        onnx.checker.check_model(proto)
    except onnx.checker.ValidationError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise OnnxImportError(f"{source}: the model is not valid ONNX: {first}") from None
    except ValueError as e:  # a model over 2 GiB is checked by path only
        if "2GB" not in str(e) and "2 GB" not in str(e):
            raise OnnxImportError(f"{source}: the model is not valid ONNX: {e}") from None


def infer_types(proto: Any) -> dict[str, Any]:
    """ONNX's shape inference on `proto`: every value's TypeProto by name (the ones it can
    infer), the model's own annotations first."""
    onnx = require_onnx()
    graph = proto.graph
    types: dict[str, Any] = {}
    try:
        inferred = onnx.shape_inference.infer_shapes(proto, strict_mode=False).graph
    except Exception:  # inference is advisory here: the converters' own shape rules decide
        inferred = graph
    for g in [*_graphs(inferred), *_graphs(graph)]:
        for info in [*g.value_info, *g.input, *g.output]:
            kind = info.type.WhichOneof("value")
            if kind is None or (kind == "tensor_type" and not info.type.tensor_type.elem_type):
                continue  # a subgraph output with no type: the inferred one, if any, stays
            types[info.name] = info.type
    return types


def _graphs(graph: Any) -> list[Any]:
    """`graph` and the subgraphs of its nodes' attributes (branches, loop bodies), nested."""
    found = [graph]
    for node in graph.node:
        for a in node.attribute:
            for sub in [a.g] if a.HasField("g") else list(a.graphs):
                found.extend(_graphs(sub))
    return found
