"""Quotas: what a project, and each member within it, may hold of GPUs, CPU, memory and
deployed instances; and the GPUs per model that the clusters have, hold and have free."""
