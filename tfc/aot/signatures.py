"""Model files for `tfc compile`: loading one, building its graph, checking its signatures.
A GraphDef file (GraphDefModel: a frozen TensorFlow model, .pb or .pbtxt) and a TensorFlow Lite
model (TFLiteModel, .tflite) and an ONNX model (OnnxModel, .onnx) are models too: their graph
imported, as one predict signature from the input to the outputs."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import re
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tfc.graphdef import GraphDefImportError, import_graph_def, read_graph_def
from tfc.graphdef.importer import parse_tensor_name
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Graph, Operation, Tensor, get_default_graph
from tfc.onnx.importer import import_graph as import_onnx
from tfc.onnx.loading import OnnxImportError, fixed_input_batch
from tfc.ops.constant import placeholder
from tfc.tflite import TFLiteImportError
from tfc.tflite import import_graph as import_tflite

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# the element types the drivers convert data to and checkpoints hold
SUPPORTED_DTYPES = (_dt.float32, _dt.float64, _dt.int32, _dt.int64, _dt.bool_)
# --target embed's entry points also take and return int8 (quantized TFLite models)
EMBED_DTYPES = (*SUPPORTED_DTYPES, _dt.int8)
_EMBED_HINT = (
    " (the executables read and write no int8 data: compile an int8 model with --target embed, "
    "or convert it with float32 input and output)"
)
# outputs the predict driver compares with a label column when the model names none
_CLASS_OUTPUTS = ("probabilities", "logits", "class_ids", "classes")


class ModelError(ValueError):
    """A model file that does not follow the convention: the message says what to change."""


@dataclass
class TrainSignature:
    features: Tensor
    labels: Tensor | None
    loss: Tensor
    train_op: Operation
    hyperparameters: dict[str, Tensor]  # name -> a scalar PlaceholderWithDefault
    defaults: dict[str, float]  # name -> its default value
    label_classes: int = 0  # labels are class ids in [0, label_classes); 0: not known as such


@dataclass
class PredictSignature:
    features: Tensor
    outputs: dict[str, Tensor]
    label_output: str | None  # the output compared with a label column, if any
    argmax: bool  # its class is the argmax of its last axis (else it is the class)


@dataclass
class ModelSignatures:
    name: str
    graph: Graph
    train: TrainSignature | None
    predict: PredictSignature | None


@dataclasses.dataclass(frozen=True)
class ModelFile:
    """A model file of another framework that `tfc compile` takes: its path, and the names of
    the values where `--inputs` and `--outputs` cut it (None: the model's own)."""

    path: str
    inputs: tuple[str, ...] | None = None
    outputs: tuple[str, ...] | None = None

    @property
    def name(self) -> str:
        return Path(self.path).stem


@dataclasses.dataclass(frozen=True)
class GraphDefModel(ModelFile):
    """A GraphDef file (TensorFlow's frozen model) compiled by `tfc compile`: `inputs` names the
    tensor fed as `features` (default: the GraphDef's one Placeholder; a tensor that is not a
    placeholder cuts the graph there), `outputs` the tensors predicted ("probs:0" or "probs"),
    each named in the executable by its node name made a C identifier."""

    def signatures(self) -> dict[str, Any]:
        try:
            graph_def = read_graph_def(self.path)
        except ValueError as e:
            raise ModelError(str(e)) from None
        if not self.outputs:
            raise ModelError(
                f"{self.path}: a GraphDef names no outputs; give them with --outputs NAMES "
                "(e.g. --outputs probs:0)"
            )
        inputs = self.inputs or tuple(n.name for n in graph_def.node if n.op == "Placeholder")
        if len(inputs) != 1:
            raise ModelError(
                f"{self.path}: the predict executable feeds one input (features); the GraphDef "
                f"has {len(inputs)} placeholders {list(inputs)}: choose one with --inputs NAME"
            )
        nodes = {n.name: n for n in graph_def.node}
        wanted = [*inputs, *self.outputs]
        for name in wanted:
            if parse_tensor_name(name)[0] not in nodes:
                raise ModelError(f"{self.path}: the GraphDef has no node named {name!r}")
        try:
            input_map = self._cut_input_map(graph_def, inputs[0], nodes)
            tensors = import_graph_def(
                graph_def,
                input_map=input_map,
                return_elements=[_tensor_name(n) for n in self.outputs],
                name="",
            )
        except GraphDefImportError as e:
            raise ModelError(f"{self.path}: {e}") from None
        features = (
            input_map[_tensor_name(inputs[0])]
            if input_map
            else get_default_graph().get_tensor_by_name(_tensor_name(inputs[0]))
        )
        outputs: dict[str, Any] = {}
        for name, tensor in zip(self.outputs, tensors):
            key = c_identifier(parse_tensor_name(name)[0].replace("/", "_"))
            while key in outputs:
                key += "_"
            outputs[key] = tensor
        return {"predict": {"inputs": {"features": features}, "outputs": outputs}}

    def _cut_input_map(self, graph_def: Any, name: str, nodes: dict) -> dict[str, Tensor]:
        """{} when `name` is a Placeholder; else a placeholder of its dtype and shape that
        replaces it (the dtype and shape learned by importing the graph once aside)."""
        if nodes[parse_tensor_name(name)[0]].op == "Placeholder":
            return {}
        with Graph().as_default():
            (probe,) = import_graph_def(graph_def, return_elements=[_tensor_name(name)], name="")
        dims = probe.shape.as_list() if probe.shape.ndims is not None else None
        if dims:
            dims[0] = None  # the compiled batch takes the first dimension
        fed = placeholder(probe.dtype, dims, name="features")
        return {_tensor_name(name): fed}


def _tensor_name(name: str) -> str:
    node, index = parse_tensor_name(name)
    return f"{node}:{index}"


@dataclasses.dataclass(frozen=True)
class TFLiteModel(ModelFile):
    """A TensorFlow Lite model (.tflite, float32 or int8) compiled by `tfc compile`: `inputs`
    names the TFLite tensor fed as `features` (default: the model's one input; another tensor
    cuts the model there), `outputs` the tensors predicted (default: the model's outputs), each
    named in the executable by its tensor name made a C identifier."""

    def signatures(self) -> dict[str, Any]:
        try:
            imported = import_tflite(
                self.path,
                graph=get_default_graph(),
                input_names=self.inputs,
                output_names=self.outputs,
                dynamic_batch=True,
            )
        except TFLiteImportError as e:
            raise ModelError(str(e)) from None
        if len(imported.inputs) != 1:
            raise ModelError(
                f"{self.path}: the predict executable feeds one input (features); the model has "
                f"{len(imported.inputs)} inputs {imported.input_names}: choose one with --inputs"
            )
        outputs: dict[str, Any] = {}
        for name, tensor in zip(imported.output_names, imported.outputs):
            key = c_identifier(name.replace("/", "_").replace(":", "_"))
            while key in outputs:
                key += "_"
            outputs[key] = tensor
        return {"predict": {"inputs": {"features": imported.inputs[0]}, "outputs": outputs}}


@dataclasses.dataclass(frozen=True)
class OnnxModel(ModelFile):
    """An ONNX model file compiled by `tfc compile`: `batch` replaces the first dimension of the
    model's input (the compiled batch; None keeps the model's); `inputs`/`outputs` (ONNX value
    names) cut the subgraph between them. Its predict signature feeds the one input as
    `features` and fetches every output, named by its ONNX name made a C identifier."""

    batch: int | None = None

    def signatures(self) -> dict[str, Any]:
        try:
            m = import_onnx(self.path, self.batch, graph=get_default_graph(),
                            input_names=self.inputs, output_names=self.outputs)  # fmt: skip
        except OnnxImportError as e:
            raise ModelError(str(e)) from None
        if len(m.inputs) != 1:
            raise ModelError(
                f"{self.path}: the predict executable feeds one input (features); the model has "
                f"{len(m.inputs)}: {m.input_names}. Choose one with --inputs NAME"
            )
        outputs: dict[str, Any] = {}
        for name, tensor in zip(m.output_names, m.outputs):
            key = c_identifier(name)
            while key in outputs:
                key += "_"
            outputs[key] = tensor
        return {"predict": {"inputs": {"features": m.inputs[0]}, "outputs": outputs}}


ImportedModel = GraphDefModel | TFLiteModel | OnnxModel
# the model files tfc imports rather than runs, by suffix
_IMPORTED_SUFFIXES: dict[str, type] = {
    ".pb": GraphDefModel,
    ".pbtxt": GraphDefModel,
    ".tflite": TFLiteModel,
    ".onnx": OnnxModel,
}


def imported_model(
    model: Any, inputs: Any = None, outputs: Any = None, batch: int | None = None
) -> ImportedModel | None:
    """`model` as an imported model (a .pb/.pbtxt, .tflite or .onnx path, or one of those
    classes), cut at `inputs`/`outputs` when given, an ONNX model compiled at `batch` when given;
    None when `model` is none of them."""
    if not isinstance(model, (GraphDefModel, TFLiteModel, OnnxModel)):
        if not isinstance(model, (str, os.PathLike)):
            return None
        cls = _IMPORTED_SUFFIXES.get(Path(model).suffix.lower())
        if cls is None:
            return None
        if not Path(model).is_file():
            raise FileNotFoundError(f"model file {model} does not exist")
        model = cls(os.fspath(model))
    changes: dict[str, Any] = {}
    if inputs is not None:
        changes["inputs"] = tuple(inputs)
    if outputs is not None:
        changes["outputs"] = tuple(outputs)
    if batch is not None and isinstance(model, OnnxModel):
        changes["batch"] = int(batch)  # the others import the batch dimension as None
    return dataclasses.replace(model, **changes)


def default_batch(model: Any, fallback: int) -> int:
    """The batch `tfc compile` compiles `model` for when no --batch is given: the one an ONNX
    model's file fixes as its input's first dimension (a model exported at batch 1 often
    reshapes to [1, ...] inside, which another batch breaks), else `fallback`."""
    onnx_model = imported_model(model)
    if not isinstance(onnx_model, OnnxModel):
        return fallback
    names = onnx_model.inputs or (None,)
    if len(names) != 1:
        return fallback
    try:
        fixed = fixed_input_batch(onnx_model.path, names[0])
    except Exception:  # an unreadable file: the import that follows says why
        return fallback
    return fallback if fixed is None else fixed


def load_signatures_function(model: Any, batch: int | None = None) -> tuple[str, Callable[[], Any]]:
    """The model's name and its `signatures` function, from a path (a model file, a GraphDef,
    TFLite or ONNX file, or a directory holding model.py), a module or a callable. `batch` is
    the batch an ONNX model is imported with (a model file builds its own placeholders)."""
    imported = imported_model(model, batch=batch)
    if imported is not None:
        return imported.name, imported.signatures
    if callable(model) and not isinstance(model, types.ModuleType):
        return getattr(model, "__module__", None) or "model", model
    if isinstance(model, types.ModuleType):
        module, name = model, model.__name__.rsplit(".", 1)[-1]
    else:
        path = Path(model)
        if path.is_dir() and (path / "model.py").is_file():
            path = path / "model.py"  # an exported model directory (Estimator.export_saved_model)
        if not path.is_file():
            raise FileNotFoundError(f"model file {path} does not exist")
        name = path.stem
        spec = importlib.util.spec_from_file_location(f"_tfc_model_{name}", path)
        if spec is None or spec.loader is None:
            raise ModelError(f"{path} is not a Python file")
        module = importlib.util.module_from_spec(spec)
        # run as `python MODEL.py` runs it: it may import modules beside it, and no bytecode of
        # it is written there (an exported model directory keeps exactly its files)
        sys.path.insert(0, str(path.resolve().parent))
        try:
            exec(compile(path.read_bytes(), str(path), "exec"), module.__dict__)
        finally:
            sys.path.remove(str(path.resolve().parent))
    fn = getattr(module, "signatures", None)
    if not callable(fn):
        raise ModelError(
            f"model {name} defines no signatures() function: it must build the graph and "
            "return {'train': {...}, 'predict': {...}} (see `help(tfc.aot)`)"
        )
    return name, fn


def build_signatures(
    name: str, fn: Callable[[], Any], dtypes: tuple[_dt.DType, ...] = SUPPORTED_DTYPES
) -> ModelSignatures:
    """Run `fn` in a fresh default graph and check what it returns; inputs and outputs of
    predict must be of `dtypes`."""
    graph = Graph()
    with graph.as_default():
        sigs = fn()
    if not isinstance(sigs, dict) or not sigs:
        raise ModelError(f"signatures() of model {name} must return a non-empty dict")
    _check_keys(sigs, {"train", "predict"}, "signatures()")
    train = _train_signature(graph, sigs["train"]) if "train" in sigs else None
    predict = _predict_signature(graph, sigs["predict"], dtypes) if "predict" in sigs else None
    return ModelSignatures(name, graph, train, predict)


def _check_keys(d: Any, allowed: set[str], where: str, required: tuple[str, ...] = ()) -> None:
    if not isinstance(d, dict):
        raise ModelError(f"{where} must be a dict, got {type(d).__name__}")
    unknown = sorted(set(d) - allowed)
    if unknown:
        raise ModelError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(allowed)}")
    missing = [k for k in required if k not in d]
    if missing:
        raise ModelError(f"{where}: missing key(s) {missing}")


def _element(graph: Graph, value: Any, where: str) -> Tensor | Operation:
    if isinstance(value, (Tensor, Operation, str)):
        try:
            return graph.as_graph_element(value)
        except (KeyError, TypeError, ValueError) as e:
            raise ModelError(f"{where}: {e}") from None
    if hasattr(value, "op") and isinstance(getattr(value, "op", None), Operation):
        return value.op  # a Variable
    raise ModelError(f"{where}: expected a tensor or an op of the model's graph, got {value!r}")


def _tensor(graph: Graph, value: Any, where: str) -> Tensor:
    t = _element(graph, value, where)
    if not isinstance(t, Tensor):
        raise ModelError(f"{where}: expected a tensor, got the op {t.name}")
    return t


def _input(
    graph: Graph, value: Any, where: str, dtypes: tuple[_dt.DType, ...] = SUPPORTED_DTYPES
) -> Tensor:
    t = _tensor(graph, value, where)
    if t.op.type != "Placeholder":
        raise ModelError(f"{where}: {t.name} must be a tf.placeholder, not a {t.op.type}")
    dims = t.shape.as_list() if t.shape.ndims is not None else None
    if not dims or any(d is None for d in dims[1:]):
        raise ModelError(
            f"{where}: placeholder {t.name} must have a shape [batch, ...] with every dimension "
            f"but the first known, got {t.shape}"
        )
    if t.dtype not in dtypes:
        raise ModelError(
            f"{where}: placeholder {t.name} has dtype {t.dtype.name}; supported: "
            f"{', '.join(d.name for d in dtypes)}{_EMBED_HINT if t.dtype in EMBED_DTYPES else ''}"
        )
    return t


def _hyperparameter(graph: Graph, name: str, value: Any) -> tuple[Tensor, float]:
    where = f"train hyperparameter '{name}'"
    if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
        raise ModelError(f"{where}: the name must be an identifier")
    t = _tensor(graph, value, where)
    if t.op.type != "PlaceholderWithDefault" or t.shape.as_list() != []:
        raise ModelError(
            f"{where}: {t.name} must be a scalar tf.placeholder_with_default, e.g. "
            f"tf.placeholder_with_default(0.01, [], name='{name}')"
        )
    if t.dtype not in (_dt.float32, _dt.float64, _dt.int32, _dt.int64):
        raise ModelError(f"{where}: {t.name} must be a number, not {t.dtype.name}")
    from tfc.reference.interp import Interpreter

    try:
        default = Interpreter(graph).run(t.op.inputs[0])
    except Exception as e:  # the default must be computable before anything runs
        raise ModelError(f"{where}: its default must be a constant ({e})") from None
    return t, float(np.asarray(default))


def _train_signature(graph: Graph, sig: Any) -> TrainSignature:
    _check_keys(
        sig,
        {"inputs", "loss", "train_op", "hyperparameters"},
        "signatures()['train']",
        ("inputs", "loss", "train_op"),
    )
    inputs = sig["inputs"]
    _check_keys(inputs, {"features", "labels"}, "train inputs", ("features",))
    features = _input(graph, inputs["features"], "train input 'features'")
    labels = _input(graph, inputs["labels"], "train input 'labels'") if "labels" in inputs else None
    loss = _tensor(graph, sig["loss"], "train loss")
    if loss.shape.as_list() != [] or not loss.dtype.is_floating:
        raise ModelError(
            f"train loss: {loss.name} must be a float scalar, got {loss.dtype.name}{loss.shape}"
        )
    train_op = _element(graph, sig["train_op"], "train_op")
    if isinstance(train_op, Tensor):
        train_op = train_op.op
    hparams, defaults = {}, {}
    for name, value in (sig.get("hyperparameters") or {}).items():
        hparams[name], defaults[name] = _hyperparameter(graph, name, value)
    fed = [features, labels, *hparams.values()]
    if len({t for t in fed if t is not None}) != sum(t is not None for t in fed):
        raise ModelError("train: features, labels and hyperparameters must be distinct tensors")
    classes = label_classes(labels) if labels is not None else 0
    return TrainSignature(features, labels, loss, train_op, hparams, defaults, classes)


# ops a class id passes through unchanged on its way to the loss
_LABEL_PASSTHROUGH = ("Identity", "Cast", "Reshape", "Squeeze", "ExpandDims", "StopGradient")


def label_classes(labels: Tensor) -> int:
    """How many classes the class ids in `labels` select among: the last dimension of the
    logits of the sparse softmax cross-entropy they reach (through casts and reshapes), so the
    executables can refuse a label outside [0, classes) where it is read. 0 when they reach
    none, or logits without a static class count (labels that are not class ids)."""
    found, seen, frontier = set(), set(), [labels]
    while frontier:
        tensor = frontier.pop()
        for op in tensor.consumers():
            if op.name in seen:
                continue
            seen.add(op.name)
            if op.type in _LABEL_PASSTHROUGH and op.inputs[0] is tensor:
                frontier.extend(op.outputs[:1])
            elif op.type == "SparseSoftmaxCrossEntropyWithLogits" and op.inputs[1] is tensor:
                last = op.inputs[0].shape.as_list()
                found.add(last[-1] if last else None)
    if len(found) != 1 or None in found:
        return 0
    return int(found.pop())


def _predict_signature(
    graph: Graph, sig: Any, dtypes: tuple[_dt.DType, ...] = SUPPORTED_DTYPES
) -> PredictSignature:
    _check_keys(
        sig, {"inputs", "outputs", "label_output"}, "signatures()['predict']", ("inputs", "outputs")
    )
    _check_keys(sig["inputs"], {"features"}, "predict inputs", ("features",))
    features = _input(graph, sig["inputs"]["features"], "predict input 'features'", dtypes)
    outputs: dict[str, Tensor] = {}
    if not isinstance(sig["outputs"], dict) or not sig["outputs"]:
        raise ModelError("predict outputs must be a non-empty dict of name -> tensor")
    for name, value in sig["outputs"].items():
        if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
            raise ModelError(f"predict output {name!r}: the name must be an identifier")
        t = _tensor(graph, value, f"predict output '{name}'")
        if t in outputs.values():
            raise ModelError(f"predict output '{name}': {t.name} is already another output")
        if t.dtype not in dtypes:
            hint = _EMBED_HINT if t.dtype in EMBED_DTYPES else ""
            raise ModelError(
                f"predict output '{name}': dtype {t.dtype.name} is not supported{hint}"
            )
        outputs[name] = t
    label_output = sig.get("label_output")
    if label_output is None:
        label_output = next((k for k in _CLASS_OUTPUTS if k in outputs), None)
    elif label_output not in outputs:
        raise ModelError(
            f"predict label_output '{label_output}' is not one of the outputs {sorted(outputs)}"
        )
    argmax = False
    if label_output is not None:
        t = outputs[label_output]
        dims = t.shape.as_list() if t.shape.ndims is not None else None
        argmax = bool(t.dtype.is_floating and dims is not None and len(dims) == 2)
        per_example = dims is not None and (len(dims) == 1 or dims[1:] == [1])
        if not argmax and not (t.dtype.is_integer and per_example):
            if "label_output" in sig:
                raise ModelError(
                    f"predict label_output '{label_output}' must be [batch, classes] floats "
                    f"(scores) or [batch] integers (class ids), got {t.dtype.name}{t.shape}"
                )
            label_output = None
    return PredictSignature(features, outputs, label_output, argmax)


def c_identifier(name: str) -> str:
    """`name` as the C identifier that prefixes a compiled model's symbols."""
    ident = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    if not ident or ident[0].isdigit():
        ident = f"m_{ident}"
    if not ident.isascii():
        raise ModelError(f"model name {name!r}: use ASCII letters, digits and _")
    return ident
