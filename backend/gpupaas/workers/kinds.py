"""Every kind of run the workers carry out, by the type of its command (the one place that knows
them all: a new kind of deployable thing is added here)."""

from __future__ import annotations

from typing import Any

from gpupaas.compute.run_kind import COMPUTE
from gpupaas.runs.kinds import RunKind
from gpupaas.service_instances.run_kind import SERVICES

KINDS: dict[str, RunKind[Any]] = {kind.command_type: kind for kind in (COMPUTE, SERVICES)}
# Drift reports come back by the label that marks a kind's objects on the cluster.
BY_OWNER_LABEL: dict[str, RunKind[Any]] = {kind.owner_label: kind for kind in KINDS.values()}
