"""gpupaas.compute."""
