"""gpupaas: a self-hosted GPU PaaS."""
