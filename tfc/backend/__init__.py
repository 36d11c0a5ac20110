"""Building and loading generated code: the C compiler, nvcc, CUDA emulation, device memory."""
