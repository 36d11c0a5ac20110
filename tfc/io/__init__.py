"""Files: checkpoints, safetensors, checkpoint state, graph files, atomic writes."""
