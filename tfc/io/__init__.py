"""Files: safetensors and TensorFlow checkpoints, checkpoint state, meta graphs, atomic writes."""
