"""tfc.onnx: ONNX models as tfc graphs (`import_model`), and tfc graphs as ONNX models (`export`).

    graph, inputs, outputs = tfc.onnx.import_model("model.onnx")
    with tfc.Session(graph=graph) as sess:
        probabilities = sess.run(outputs[0], {inputs[0]: images})

The `onnx` package is needed only when a model is read or written (pip install 'tfc[onnx]').
`tfc.onnx.backend` runs ONNX's backend API (`import tfc.onnx.backend`); `tfc compile
model.onnx -o OUT` builds the native predict executable and the embeddable library.
"""

from tfc.onnx.export import OnnxExportError, export
from tfc.onnx.importer import ImportedModel, import_graph, import_model
from tfc.onnx.loading import OnnxImportError

__all__ = [
    "ImportedModel",
    "OnnxExportError",
    "OnnxImportError",
    "export",
    "import_graph",
    "import_model",
]
