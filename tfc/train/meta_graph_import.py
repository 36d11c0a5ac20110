"""`tf.train.import_meta_graph`: a graph exported by tfc comes back, ready to restore and run.

Every node is checked against the op registry before the graph is trusted: the op must exist
in tfc and its shape rule must give the dtypes the file records and shapes compatible with
them (the file's shapes are kept: `set_shape` may have refined them). A failed import removes
the nodes it added, so the graph is as it was.
"""

from __future__ import annotations

import os
from typing import Any

from tfc.io.meta_graph import (
    MetaGraph,
    MetaGraphFormatError,
    OperationRef,
    TensorRef,
    VariableDef,
    decode_meta_graph,
    encode_meta_graph,
    read_meta_graph_file,
)
from tfc.ir.graph import GraphKeys, get_default_graph
from tfc.ir.tensor_shape import shape_str, shapes_compatible
from tfc.ops.registry import REGISTRY, infer_outputs
from tfc.train.saver import Saver
from tfc.variables import Variable

__all__ = ["import_meta_graph"]

_COLOCATION_ATTR = "_class"


def _load(meta_graph_or_file: Any) -> tuple[MetaGraph, str]:
    if isinstance(meta_graph_or_file, MetaGraph):
        # through the encoding, so an object gets the same checks as a file
        return decode_meta_graph(encode_meta_graph(meta_graph_or_file)), "<MetaGraph object>"
    path = os.fspath(meta_graph_or_file)
    try:
        return read_meta_graph_file(path), path
    except FileNotFoundError:
        hint = ""
        if path.endswith(".meta"):
            hint = (
                "; tfc's Saver.save writes no .meta file: write one with "
                "saver.export_meta_graph(prefix + '.meta')"
            )
        raise OSError(f"File {path} does not exist{hint}") from None


def import_meta_graph(
    meta_graph_or_file: Any,
    clear_devices: bool = False,
    import_scope: str | None = None,
    **kwargs: Any,
) -> Saver | None:
    """Add the graph of a meta graph file (or a MetaGraph from `export_meta_graph`) to the
    default graph, with its collections; returns a Saver for its variables (the exported saver
    when it has one), or None when it has no variables.

    With `import_scope` every name is put under that scope (made unique, as name scopes are).
    """
    if kwargs:
        raise TypeError(f"import_meta_graph() got unexpected arguments {sorted(kwargs)}")
    meta, source = _load(meta_graph_or_file)
    graph = get_default_graph()
    scope = graph.unique_name(import_scope.rstrip("/")) if import_scope else None

    def scoped(name: str) -> str:
        return f"{scope}/{name}" if scope else name

    clashes = [scoped(n.name) for n in meta.nodes if scoped(n.name) in graph.nx]
    if clashes:
        raise ValueError(
            f"Cannot import meta graph {source}: the graph already has nodes named "
            f"{', '.join(clashes[:5])}{' ...' if len(clashes) > 5 else ''}; import it into a "
            "new graph, or with an import_scope"
        )
    added: list[str] = []
    try:
        for node in meta.nodes:
            _add_node(graph, node, scoped, clear_devices, source)
            added.append(scoped(node.name))
    except BaseException:
        for name in reversed(added):
            graph.remove_node(name)
        raise
    _mark_scopes_used(graph, added)
    return _restore_collections(graph, meta, scope, scoped)


def _add_node(graph: Any, node: Any, scoped: Any, clear_devices: bool, source: str) -> None:
    where = f"meta graph {source}: node '{node.name}'"
    if node.op not in REGISTRY:
        raise MetaGraphFormatError(f"{where} has op '{node.op}', which tfc does not have")
    attrs = dict(node.attrs)
    if _COLOCATION_ATTR in attrs and isinstance(attrs[_COLOCATION_ATTR], list):
        attrs[_COLOCATION_ATTR] = [
            "loc:@" + scoped(c[len("loc:@") :]) if isinstance(c, str) and c.startswith("loc:@")
            else c
            for c in attrs[_COLOCATION_ATTR]
        ]  # fmt: skip
    name = scoped(node.name)
    graph.add_node(
        name,
        node.op,
        [(scoped(src), out) for src, out in node.inputs],
        attrs,
        node.dtypes,
        node.shapes,
        device="" if clear_devices else node.device,
        control_inputs=[scoped(c) for c in node.control_inputs],
    )
    try:
        try:
            inferred = infer_outputs(graph, name)
        except Exception as e:
            raise MetaGraphFormatError(f"{where} ({node.op}) is not valid: {e}") from None
        recorded = list(zip(node.dtypes, node.shapes))
        if len(inferred) != len(recorded):
            raise MetaGraphFormatError(
                f"{where} ({node.op}) records {len(recorded)} outputs; the op has {len(inferred)}"
            )
        for i, ((dtype, shape), (want_dtype, want_shape)) in enumerate(zip(recorded, inferred)):
            if dtype != want_dtype or not shapes_compatible(shape, want_shape):
                raise MetaGraphFormatError(
                    f"{where} ({node.op}) records output {i} as {dtype.name} "
                    f"{shape_str(shape)}; its inputs and attributes give {want_dtype.name} "
                    f"{shape_str(want_shape)}"
                )
    except BaseException:
        graph.remove_node(name)
        raise


def _mark_scopes_used(graph: Any, names: list[str]) -> None:
    """Make later name scopes avoid the imported ones ("dense" after importing "dense/kernel")."""
    prefixes = {n[:i] for n in names for i, c in enumerate(n) if c == "/"}
    with graph.name_scope(None):
        for prefix in sorted(prefixes):
            if graph.unique_name(prefix, mark_as_used=False) == prefix:
                graph.unique_name(prefix)


def _restore_collections(graph: Any, meta: MetaGraph, scope: str | None, scoped: Any) -> Any:
    variables: dict[str, Variable] = {}  # one Variable per variable, in every collection
    with graph.as_default():
        for key, items in meta.collections.items():
            for item in items:
                if isinstance(item, TensorRef):
                    value: Any = graph.get_tensor_by_name(scoped(item.name))
                elif isinstance(item, OperationRef):
                    value = graph.get_operation_by_name(scoped(item.name))
                elif isinstance(item, VariableDef):
                    value = variables.get(item.variable_name)
                    if value is None:
                        value = Variable(variable_def=item, import_scope=scope)
                        variables[item.variable_name] = value
                else:
                    value = item
                graph.add_to_collection(key, value)
        saver_def = meta.saver_def
        if saver_def is not None:
            var_list = {
                key: graph.get_operation_by_name(scoped(op)).outputs[0]
                for key, op in saver_def.var_list.items()
            }
            return Saver(
                var_list,
                max_to_keep=saver_def.max_to_keep,
                keep_checkpoint_every_n_hours=saver_def.keep_checkpoint_every_n_hours,
                sharded=saver_def.sharded,
                pad_step_number=saver_def.pad_step_number,
                save_relative_paths=saver_def.save_relative_paths,
                allow_empty=True,
            )
        imported = [v for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES)
                    if v in variables.values()]  # fmt: skip
        return Saver(imported) if imported else None
