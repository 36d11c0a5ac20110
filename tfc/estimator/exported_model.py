"""An Estimator's exported serving model: a directory that `tfc compile` takes as a model.

    <export_dir_base>/<timestamp>/
        model.py      signatures(): the serving graph's predict signature (the model file
                      convention of tfc.aot), read back from graph.json
        graph.json    the serving graph as a meta graph file (tfc.io.meta_graph): its nodes,
                      collections and variables; meta_info["serving"] names the signature
        variables/    a checkpoint of the serving graph's variables (`predict --checkpoint`)

    tfc compile <export_dir> -o build
    build/predict --checkpoint <export_dir>/variables --data rows.csv

A compiled predict program reads one features tensor per example, so a serving input of
several placeholders is packed into one [batch, columns] placeholder whose columns hold the
inputs side by side, in the receiver's order (graph.json's "inputs" and model.py say which).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import tfc.logging as tf_logging
from tfc.aot.signatures import build_signatures, load_signatures_function
from tfc.client.session import Session
from tfc.estimator.export import ServingInputReceiver
from tfc.io.meta_graph import read_meta_graph_file
from tfc.ir.graph import Graph, GraphKeys, Tensor, get_default_graph, name_scope
from tfc.ops.array import reshape
from tfc.ops.array_index import slice as slice_columns
from tfc.ops.constant import placeholder
from tfc.train.meta_graph_export import export_meta_graph
from tfc.train.meta_graph_import import import_meta_graph
from tfc.train.saver import Saver

__all__ = ["single_features_input", "write_exported_model", "load_signatures"]

GRAPH_FILE = "graph.json"
MODEL_FILE = "model.py"
VARIABLES_DIR = "variables"
_MAX_DIRECTORY_ATTEMPTS = 10

_MODEL_SOURCE = '''"""{name}: a serving model exported by tf.estimator.Estimator.export_saved_model.

    tfc compile {dirname} -o build
    build/predict --checkpoint {dirname}/{variables} --data rows.csv

Each data row holds the features: {layout}.
Outputs: {outputs}.
"""

from pathlib import Path

from tfc.estimator.exported_model import load_signatures


def signatures():
    return load_signatures(Path(__file__).resolve().parent)
'''


def single_features_input(
    graph: Graph, receiver: ServingInputReceiver
) -> tuple[Tensor, list[dict], dict[Tensor, Tensor]]:
    """The one features placeholder a compiled predict program feeds, its column layout, and
    the receiver tensors it replaces (old -> new).

    One receiver placeholder is used as it is; several (of one dtype) are packed: a new
    placeholder "features" holds them side by side, and every consumer of a receiver
    placeholder reads its columns instead. Call it after the model_fn has built its graph.
    """
    receivers = receiver.receiver_tensors
    widths = []
    for key, t in receivers.items():
        dims = t.shape.as_list() if t.shape.ndims is not None else None
        if t.op.type != "Placeholder" or not dims or any(d is None for d in dims[1:]):
            raise ValueError(
                f"export: receiver tensor '{key}' must be a placeholder of shape [batch, ...] "
                f"with every dimension but the first known (a compiled predict program feeds "
                f"it), got {t.op.type} {t.shape}"
            )
        width = 1
        for d in dims[1:]:
            width *= d
        widths.append((key, t, dims, width))
    if len(receivers) == 1:
        key, t, dims, width = widths[0]
        return t, [{"name": key, "shape": dims[1:], "columns": [0, width]}], {}
    dtypes = {t.dtype for _, t, _, _ in widths}
    if len(dtypes) != 1:
        named = ", ".join(f"{k}: {t.dtype.name}" for k, t, _, _ in widths)
        raise ValueError(
            f"export: the receiver tensors have dtypes {named}; a compiled predict program "
            "reads one features tensor, so they must share one dtype (cast them in the "
            "serving_input_receiver_fn)"
        )
    batches = {dims[0] for _, _, dims, _ in widths}
    batch = batches.pop() if len(batches) == 1 else None
    layout, replaced, start = [], {}, 0
    with graph.as_default(), name_scope(None):
        packed = placeholder(dtypes.pop(), [batch, sum(w for *_, w in widths)], name="features")
        for key, t, dims, width in widths:
            with name_scope(f"features/{key}"):
                part = reshape(slice_columns(packed, [0, start], [-1, width]), [-1, *dims[1:]])
            for consumer, index in graph.consumers(t.op.name, 0):
                graph.set_input(consumer, index, (part.op.name, 0))
            replaced[t] = part
            layout.append({"name": key, "shape": dims[1:], "columns": [start, start + width]})
            start += width
    return packed, layout, replaced


def _timestamped_dir(export_dir_base: str) -> str:
    for attempt in range(_MAX_DIRECTORY_ATTEMPTS):
        path = os.path.join(export_dir_base, str(int(time.time())))
        if not os.path.exists(path):
            return path
        time.sleep(1)
        tf_logging.warning(
            "Directory %s already exists; retrying (attempt %d/%d)",
            path,
            attempt + 1,
            _MAX_DIRECTORY_ATTEMPTS,
        )
    raise RuntimeError(
        f"Failed to obtain a unique export directory name after {_MAX_DIRECTORY_ATTEMPTS} attempts."
    )


def _layout_text(layout: list[dict]) -> str:
    parts = []
    for entry in layout:
        a, b = entry["columns"]
        where = f"column {a}" if b == a + 1 else f"columns {a}-{b - 1}"
        parts.append(f"{entry['name']} {entry['shape']} ({where})")
    return ", ".join(parts)


def write_exported_model(
    export_dir_base: str,
    graph: Graph,
    features: Tensor,
    layout: list[dict],
    outputs: dict[str, Tensor],
    label_output: str | None,
    checkpoint: str,
    session_config: Any = None,
    assets_extra: dict | None = None,
) -> str:
    """Write the serving model of `graph` (variables from `checkpoint`) into a new timestamped
    directory of export_dir_base, check that tfc compile accepts it, and return its path."""
    export_dir = _timestamped_dir(export_dir_base)
    temp_dir = os.path.join(export_dir_base, "temp-" + os.path.basename(export_dir))
    os.makedirs(os.path.join(temp_dir, VARIABLES_DIR))
    try:
        with graph.as_default():
            variables = graph.get_collection(GraphKeys.GLOBAL_VARIABLES)
            saver = Saver(variables, save_relative_paths=True)  # the directory moves
            with Session(graph=graph, config=session_config) as sess:
                saver.restore(sess, checkpoint)
                saver.save(sess, os.path.join(temp_dir, VARIABLES_DIR, "variables"))
        signature = {
            "features": features.name,
            "outputs": {k: t.name for k, t in outputs.items()},
            "label_output": label_output,
            "inputs": layout,
        }
        export_meta_graph(
            os.path.join(temp_dir, GRAPH_FILE),
            meta_info_def={"serving": signature},
            graph=graph,
            as_text=True,
        )
        model = _MODEL_SOURCE.format(
            name=os.path.basename(export_dir),
            dirname=os.path.basename(export_dir),
            variables=VARIABLES_DIR,
            layout=_layout_text(layout),
            outputs=", ".join(f"{k} {t.dtype.name}{t.shape}" for k, t in outputs.items()),
        )
        Path(temp_dir, MODEL_FILE).write_text(model)
        for dest, source in (assets_extra or {}).items():
            target = os.path.join(temp_dir, "assets.extra", dest)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(source, target)
        # the signature must satisfy tfc compile: fail here, not at the user's compile
        build_signatures(*load_signatures_function(os.path.join(temp_dir, MODEL_FILE)))
        os.rename(temp_dir, export_dir)
    except BaseException:
        shutil.rmtree(temp_dir, ignore_errors=True)
        raise
    tf_logging.info("SavedModel written to: %s", export_dir)
    return export_dir


def load_signatures(directory: str | os.PathLike) -> dict:
    """An exported model's predict signature, its graph imported into the default graph: what
    the model.py of an export directory returns to tfc compile."""
    meta = read_meta_graph_file(Path(directory, GRAPH_FILE))
    signature = meta.meta_info.get("serving")
    if not isinstance(signature, dict):
        raise ValueError(f"{directory}/{GRAPH_FILE} names no serving signature in its meta_info")
    import_meta_graph(meta)
    graph = get_default_graph()
    predict = {
        "inputs": {"features": graph.get_tensor_by_name(signature["features"])},
        "outputs": {k: graph.get_tensor_by_name(n) for k, n in signature["outputs"].items()},
    }
    if signature.get("label_output"):
        predict["label_output"] = signature["label_output"]
    return {"predict": predict}
