"""Plain async factories for tests: each makes one thing through the services and returns it."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import pytest

from gpupaas.accounts import service as accounts
from gpupaas.accounts.models import Project, User
from gpupaas.catalog.models import (
    AllocationType,
    ComputeProfile,
    EnvironmentTemplate,
    EnvironmentTemplateVersion,
    VersionState,
)
from gpupaas.catalog.service import profiles, templates
from gpupaas.core.actor import Actor, Role
from gpupaas.core.gpus import Vendor
from gpupaas.provisioning.plan import Plan
from tests.conftest import SECRET_KEY

_seq = itertools.count(1)

NAMESPACE_YAML = """\
apiVersion: v1
kind: Namespace
metadata:
  name: "{{ instance.namespace }}"
  labels:
    team: "{{ inputs.team }}"
---
apiVersion: v1
kind: ResourceQuota
metadata:
  name: quota
  namespace: "{{ instance.namespace }}"
spec:
  hard:
    requests.cpu: "{{ resources.cpu }}"
    requests.memory: "{{ resources.memory }}"
"""

NAMESPACE_INPUTS = [
    templates.InputDefinitionIn(name="team", type="STRING", required=True, pattern="^[a-z]+$", default="ml"),
    templates.InputDefinitionIn(name="size", type="STRING", options=["small", "large"], default="small"),
]
NAMESPACE_OUTPUTS = [
    templates.OutputDefinitionIn(name="namespace", value="{{ instance.namespace }}"),
    templates.OutputDefinitionIn(name="team", value="team {{ inputs.team }}"),
]


@dataclass
class Person:
    user: User
    token: str

    @property
    def username(self) -> str:
        return self.user.username


async def make_user(username: str | None = None, *, platform_admin: bool = False) -> Person:
    user = await accounts.create_user(
        None, username or f"user{next(_seq)}", "correct horse battery", platform_admin
    )
    _, token = await accounts.create_api_token(await accounts.actor_for(user), "tests", None)
    return Person(user=user, token=token)


async def make_project(name: str | None = None, **members: Role) -> Project:
    """`make_project("ml", alice=Role.ADMIN)` also adds the named users as members."""
    project = await accounts.create_project(None, name or f"project-{next(_seq)}", None)
    for username, role in members.items():
        await accounts.set_member(None, project.name, username, role)
    return project


async def add_member(project: Project, person: Person, role: Role) -> None:
    await accounts.set_member(None, project.name, person.username, role)


async def platform_actor() -> Actor:
    admin = await User.get_or_none(username="root-factory")
    if admin is None:
        admin = await accounts.create_user(None, "root-factory", "correct horse battery", True)
    return await accounts.actor_for(admin)


async def make_template(project: Project, name: str | None = None) -> EnvironmentTemplate:
    return await templates.create_template(
        await platform_actor(), project.name, name or f"tmpl-{next(_seq)}", None, None
    )


async def make_version(
    template: EnvironmentTemplate,
    *,
    version: str | None = None,
    resources: str = NAMESPACE_YAML,
    inputs: list[templates.InputDefinitionIn] | None = None,
    outputs: list[templates.OutputDefinitionIn] | None = None,
    state: VersionState = VersionState.ACTIVE,
) -> EnvironmentTemplateVersion:
    return await templates.add_version(
        await platform_actor(),
        str(template.id),
        version or f"1.0.{next(_seq)}",
        resources,
        NAMESPACE_INPUTS if inputs is None else inputs,
        NAMESPACE_OUTPUTS if outputs is None else outputs,
        state,
        secret_key=SECRET_KEY,
    )


async def builtin_namespace_version() -> EnvironmentTemplateVersion:
    """The built-in gpu-namespace template's newest version (gpupaas.bootstrap.seed makes it): its
    ResourceQuota and the LimitRange that gives a container without requests its defaults, as a real
    cluster's namespace needs for a CPU service (one without GPUs has no CPU or memory of its own)."""
    version = (
        await EnvironmentTemplateVersion.filter(template__name="gpu-namespace")
        .order_by("-created_at")
        .first()
    )
    assert version is not None, "seed() makes the built-in gpu-namespace template"
    return version


async def make_profile(
    project: Project, version: EnvironmentTemplateVersion | None = None, **fields: Any
) -> ComputeProfile:
    if version is None:
        version = await make_version(await make_template(project))
    data = profiles.ProfileIn(
        name=fields.pop("name", f"profile-{next(_seq)}"),
        cluster_id=fields.pop("cluster_id", None),
        display_name=fields.pop("display_name", "Small GPU"),
        allocation_type=fields.pop("allocation_type", AllocationType.SHARED),
        template_version_id=str(version.id),
        resources=fields.pop(
            "resources",
            profiles.ResourcesIn(
                cpu="4", memory="16Gi", storage="100Gi", gpu_count=1, gpu_vendor=Vendor.NVIDIA
            ),
        ),
        **fields,
    )
    return await profiles.create_profile(await platform_actor(), project.name, data, secret_key=SECRET_KEY)


async def make_instance(
    project: Project,
    profile: ComputeProfile,
    name: str | None = None,
    *,
    by: Person | None = None,
    **fields: Any,
) -> Any:
    """Launched by `by` (its owner), or by a platform admin who is no member of the project."""
    from gpupaas.compute import service as compute

    deploy = bool(fields.pop("deploy", False))
    data = compute.InstanceIn(name=name or f"inst-{next(_seq)}", **fields)
    actor = await accounts.actor_for(by.user) if by is not None else await platform_actor()
    return await compute.create_instance(
        actor, project.name, str(profile.id), data, deploy, secret_key=SECRET_KEY
    )


async def make_webhook(project: str, *events: Any, enabled: bool = True) -> Any:
    """A webhook of `project` (by a platform admin) to a public address that nothing answers:
    enough for what is queued, not for what is delivered (tests/webhooks has a receiver)."""
    from gpupaas.webhooks import service as webhooks

    data = webhooks.WebhookIn(url="https://93.184.216.34/gpupaas", events=list(events), enabled=enabled)
    hook, _ = await webhooks.create_webhook(
        await platform_actor(), project, data, secret_key=SECRET_KEY, allow_private=False
    )
    return hook


def record_plans(driver: Any, monkeypatch: pytest.MonkeyPatch) -> list[Plan]:
    """The plans a driver is given from now on (in order), to read their manifests; the driver
    still applies them."""
    plans: list[Plan] = []
    apply = driver.apply

    async def recording(plan: Plan, *args: Any, **kwargs: Any) -> Any:
        plans.append(plan)
        return await apply(plan, *args, **kwargs)

    monkeypatch.setattr(driver, "apply", recording)
    return plans
