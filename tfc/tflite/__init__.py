"""TensorFlow Lite models (`.tflite` flatbuffers, float32 or int8) imported as tfc graphs."""

from tfc.tflite.importer import ImportedGraph, TFLiteImportError, import_graph, import_model

__all__ = ["import_model", "import_graph", "ImportedGraph", "TFLiteImportError"]
