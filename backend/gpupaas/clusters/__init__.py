"""gpupaas.clusters: the Kubernetes clusters instances are deployed to."""
