"""gpupaas.events."""
