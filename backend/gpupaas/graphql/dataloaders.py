"""DataLoaders, built fresh for every request, so that lists never run one query per row."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence
from functools import cached_property
from typing import Any, TypeVar

from strawberry.dataloader import DataLoader
from tortoise.models import Model

from gpupaas.accounts.models import Project
from gpupaas.catalog.models import (
    ComputeProfile,
    ComputeProfileShare,
    EnvironmentTemplate,
    EnvironmentTemplateVersion,
)
from gpupaas.clusters.models import Cluster
from gpupaas.compute.models import ComputeInstance, ComputeInstanceShare
from gpupaas.instance_templates.models import InstanceTemplate
from gpupaas.runs.models import DeploymentRun
from gpupaas.service_instances.models import ServiceInstance

M = TypeVar("M", bound=Model)


def _by_id(model: type[M]) -> DataLoader[uuid.UUID, M | None]:
    async def load(keys: Sequence[uuid.UUID]) -> list[M | None]:
        rows: list[Any] = await model.filter(id__in=list(keys))
        found = {row.id: row for row in rows}
        return [found.get(key) for key in keys]

    return DataLoader(load_fn=load)


async def _versions_of_templates(keys: Sequence[uuid.UUID]) -> list[list[EnvironmentTemplateVersion]]:
    grouped: dict[uuid.UUID, list[EnvironmentTemplateVersion]] = defaultdict(list)
    rows = await EnvironmentTemplateVersion.filter(template_id__in=list(keys)).order_by("-created_at", "-id")
    for row in rows:
        grouped[row.template_id].append(row)
    return [grouped.get(key, []) for key in keys]


async def _shares_of_profiles(keys: Sequence[uuid.UUID]) -> list[list[uuid.UUID]]:
    grouped: dict[uuid.UUID, list[uuid.UUID]] = defaultdict(list)
    rows = await ComputeProfileShare.filter(profile_id__in=list(keys)).values_list("profile_id", "project_id")
    for profile_id, project_id in rows:
        grouped[profile_id].append(project_id)
    return [grouped.get(key, []) for key in keys]


async def _runs_of_instances(keys: Sequence[uuid.UUID]) -> list[list[DeploymentRun]]:
    grouped: dict[uuid.UUID, list[DeploymentRun]] = defaultdict(list)
    for run in await DeploymentRun.filter(instance_id__in=list(keys), service_id=None).order_by(
        "-created_at", "-id"
    ):
        grouped[run.instance_id].append(run)
    return [grouped.get(key, []) for key in keys]


async def _services_of_instances(keys: Sequence[uuid.UUID]) -> list[list[ServiceInstance]]:
    grouped: dict[uuid.UUID, list[ServiceInstance]] = defaultdict(list)
    rows = await ServiceInstance.filter(compute_instance_id__in=list(keys)).order_by("-created_at", "-id")
    for row in rows:
        grouped[row.compute_instance_id].append(row)
    return [grouped.get(key, []) for key in keys]


async def _shares_of_instances(keys: Sequence[uuid.UUID]) -> list[list[uuid.UUID]]:
    grouped: dict[uuid.UUID, list[uuid.UUID]] = defaultdict(list)
    rows = await ComputeInstanceShare.filter(instance_id__in=list(keys)).values_list(
        "instance_id", "project_id"
    )
    for instance_id, project_id in rows:
        grouped[instance_id].append(project_id)
    return [grouped.get(key, []) for key in keys]


class Loaders:
    """One of each loader per request; created lazily, so a request pays only for what it uses."""

    @cached_property
    def project(self) -> DataLoader[uuid.UUID, Project | None]:
        return _by_id(Project)

    @cached_property
    def template(self) -> DataLoader[uuid.UUID, EnvironmentTemplate | None]:
        return _by_id(EnvironmentTemplate)

    @cached_property
    def version(self) -> DataLoader[uuid.UUID, EnvironmentTemplateVersion | None]:
        return _by_id(EnvironmentTemplateVersion)

    @cached_property
    def versions_of_template(self) -> DataLoader[uuid.UUID, list[EnvironmentTemplateVersion]]:
        return DataLoader(load_fn=_versions_of_templates)

    @cached_property
    def shares_of_profile(self) -> DataLoader[uuid.UUID, list[uuid.UUID]]:
        return DataLoader(load_fn=_shares_of_profiles)

    @cached_property
    def profile(self) -> DataLoader[uuid.UUID, ComputeProfile | None]:
        return _by_id(ComputeProfile)

    @cached_property
    def runs_of_instance(self) -> DataLoader[uuid.UUID, list[DeploymentRun]]:
        return DataLoader(load_fn=_runs_of_instances)

    @cached_property
    def shares_of_instance(self) -> DataLoader[uuid.UUID, list[uuid.UUID]]:
        return DataLoader(load_fn=_shares_of_instances)

    @cached_property
    def cluster(self) -> DataLoader[uuid.UUID, Cluster | None]:
        return _by_id(Cluster)

    @cached_property
    def default_cluster(self) -> DataLoader[bool, Cluster | None]:
        async def load(keys: Sequence[bool]) -> list[Cluster | None]:
            found = await Cluster.get_or_none(is_default=True)
            return [found for _ in keys]

        return DataLoader(load_fn=load)

    @cached_property
    def compute_instance(self) -> DataLoader[uuid.UUID, ComputeInstance | None]:
        return _by_id(ComputeInstance)

    @cached_property
    def instance_template(self) -> DataLoader[uuid.UUID, InstanceTemplate | None]:
        return _by_id(InstanceTemplate)

    @cached_property
    def services_of_instance(self) -> DataLoader[uuid.UUID, list[ServiceInstance]]:
        return DataLoader(load_fn=_services_of_instances)
