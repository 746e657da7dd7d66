"""gpupaas."""
