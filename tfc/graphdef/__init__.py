"""GraphDef in and out: tfc graphs as TensorFlow's GraphDef, and GraphDefs (TensorFlow's frozen
models included) imported into tfc graphs. A frontend: importing builds graphs from tfc's ops."""

from tfc.graphdef import graph_util
from tfc.graphdef.export import graph_to_graph_def
from tfc.graphdef.files import read_graph_def, write_graph
from tfc.graphdef.importer import GraphDefImportError, import_graph_def

__all__ = [
    "graph_util",
    "graph_to_graph_def",
    "read_graph_def",
    "write_graph",
    "GraphDefImportError",
    "import_graph_def",
]
