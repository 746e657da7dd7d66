"""What every process makes sure of at start-up, idempotently: the built-in templates and a
default (simulated) cluster exist."""

from __future__ import annotations

from gpupaas.catalog.service.templates import sync_builtin_templates
from gpupaas.clusters.service import ensure_default_cluster
from gpupaas.graphql import response_cache
from gpupaas.instance_templates.service import sync_builtin_instance_templates
from gpupaas.provisioning.registry import Checker


async def seed(checker: Checker | None = None) -> None:
    """`checker` (the process's drivers): what fills the simulated default cluster's inventory."""
    await sync_builtin_templates()
    await sync_builtin_instance_templates()
    await ensure_default_cluster(checker)
    # What this process may have added is new to every other process's response cache.
    await response_cache.bump()
