"""Files: checkpoints, safetensors, checkpoint state, atomic writes."""
