"""gpupaas.workers."""
