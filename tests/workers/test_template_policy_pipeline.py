"""The tenant confinement at render, through the API and the worker against the fake Kubernetes API
server: a version stored before the rule is refused at deploy with nothing applied; a platform
template that goes beyond the confinement is bound and deployed only on a cluster whose
templatePolicy trusts platform templates, and refused again when the cluster confines it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gpupaas.accounts.models import Project
from gpupaas.accounts.service import actor_for, ensure_system_project
from gpupaas.catalog.models import (
    ComputeProfile,
    EnvironmentTemplate,
    EnvironmentTemplateVersion,
    VersionState,
)
from gpupaas.clusters import service as clusters
from gpupaas.compute import service as compute
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from gpupaas.runtime import Runtime
from gpupaas.settings import Settings
from tests.conftest import GraphQLClient
from tests.factories import make_instance, make_profile, make_project, make_template, make_user, make_version
from tests.fake_kube import FakeKube, node
from tests.workers.conftest import kubernetes_runtime, wait_status

S = DeploymentStatus

NAMESPACE = """\
apiVersion: v1
kind: Namespace
metadata:
  name: "{{ instance.namespace }}"
"""
KUBE_SYSTEM = (
    NAMESPACE
    + """\
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: pwned
  namespace: kube-system
data:
  owner: mallory
"""
)
# A platform template for a cluster that trusts them: a reader of the cluster's nodes for the
# instance's service account, which a confined template may not create.
NODE_READER = (
    NAMESPACE
    + """\
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: "node-reader-{{ instance.id }}"
rules:
- apiGroups: [""]
  resources: [nodes]
  verbs: [get, list]
"""
)

CREATE_PROFILE = """
mutation($input: CreateComputeProfileInput!) {
  createComputeProfile(input: $input) { computeProfile { id } userErrors { field message code } }
}"""
UPDATE_CLUSTER = """
mutation($input: UpdateClusterInput!) {
  updateCluster(input: $input) { cluster { templatePolicy } userErrors { field message code } }
}"""


@pytest.fixture
async def kube_runtime(
    db: object, settings: Settings, fake_kube: FakeKube, tmp_path: Path
) -> AsyncIterator[tuple[Runtime, Any]]:
    """A runtime (in-process bus, worker) and the default cluster, KUBERNETES, on the fake server."""
    nodes = [node("gpu-0", gpus=8), node("cpu-0")]
    kubeconfig = fake_kube.kubeconfig(tmp_path / "kubeconfig").read_text()
    async with kubernetes_runtime(
        settings, kubeconfig, nodes=nodes, fake=fake_kube, is_default=True
    ) as running:
        yield running


def writes(fake: FakeKube) -> list[str]:
    """Every request that could change the cluster, in order."""
    return [f"{r.method} {r.path}" for r in fake.requests if r.method not in ("GET", "HEAD")]


async def test_a_version_stored_before_the_rule_is_refused_at_deploy(
    kube_runtime: tuple[Runtime, Any], fake_kube: FakeKube
) -> None:
    project = await make_project("ml")
    template = await make_template(project)
    profile = await make_profile(
        project, await make_version(template, resources=NAMESPACE, inputs=[], outputs=[])
    )
    # As an older gpupaas stored it, before authoring checked the confinement, and bound to the
    # profile then: written directly.
    old = await EnvironmentTemplateVersion.create(
        template=template,
        version="0.9",
        state=VersionState.ACTIVE,
        resources=KUBE_SYSTEM,
        inputs=[],
        outputs=[],
    )
    await ComputeProfile.filter(id=profile.id).update(template_version_id=old.id)

    before = writes(fake_kube)  # the cluster's check may write (access reviews); none of the run's
    instance = await make_instance(project, await ComputeProfile.get(id=profile.id), name="nb", deploy=True)

    failed = await wait_status(instance.id, S.FAILED, S.SUCCESS)
    assert failed.status == S.FAILED
    assert failed.status_message == (
        "the project's template breaks the tenant confinement, so nothing was applied: document 2 "
        '(ConfigMap pwned), metadata.namespace: is "kube-system": a confined template creates objects '
        "only in its instance's namespace (leave metadata.namespace out, or write "
        '"{{ instance.namespace }}")'
    )
    assert writes(fake_kube) == before
    assert fake_kube.get("v1", "ConfigMap", "pwned", "kube-system") is None
    # Destroying it is not refused: nothing is left to delete, and the instance can go.
    await compute.destroy(
        await actor_for((await make_user("ops", platform_admin=True)).user), str(instance.id)
    )
    gone = await wait_status(instance.id, S.NOT_DEPLOYED, S.FAILED)
    assert gone.status == S.NOT_DEPLOYED, gone.status_message


async def _platform_version() -> EnvironmentTemplateVersion:
    system = await ensure_system_project()
    template = await EnvironmentTemplate.create(
        project=system, name="node-reader", display_name="Node reader"
    )
    return await make_version(template, resources=NODE_READER, inputs=[], outputs=[])


def _profile_input(project: Project, version: EnvironmentTemplateVersion, cluster: Any) -> dict[str, Any]:
    return {
        "project": project.name,
        "name": "reader",
        "displayName": "Reader",
        "allocationType": "SHARED",
        "environmentTemplateVersion": str(version.id),
        "cluster": str(cluster.id),
        "resources": {"cpu": "1", "memory": "1Gi", "storage": "1Gi", "gpuCount": 0, "gpuVendor": "CPU"},
    }


async def test_a_platform_template_beyond_the_confinement_needs_a_cluster_that_trusts_it(
    kube_runtime: tuple[Runtime, Any], fake_kube: FakeKube, gql: GraphQLClient
) -> None:
    _, cluster = kube_runtime
    alice = await make_user("alice")
    project = await make_project("ml", alice=Role.ADMIN)
    version = await _platform_version()
    root = await make_user("ops", platform_admin=True)

    # Bound to a CONFINED cluster (the default policy): refused when the profile is saved.
    refused = (
        await gql.data(
            CREATE_PROFILE, {"input": _profile_input(project, version, cluster)}, token=alice.token
        )
    )["createComputeProfile"]
    assert refused["computeProfile"] is None
    [error] = refused["userErrors"]
    assert error["field"] == ["input", "environmentTemplateVersion"] and error["code"] == "FORBIDDEN"
    assert error["message"].startswith(
        f'template "node-reader" version "{version.version}" goes beyond the tenant confinement of cluster '
        '"lab" (its templatePolicy is CONFINED; a platform admin may set TRUST_PLATFORM_TEMPLATES, or choose '
        "another cluster): document 2 (ClusterRole node-reader-"
    )

    # Only platform admins set the policy.
    trust = {"input": {"id": str(cluster.id), "templatePolicy": "TRUST_PLATFORM_TEMPLATES"}}
    denied = await gql(UPDATE_CLUSTER, trust, token=alice.token)
    assert denied["data"] is None and denied["errors"][0]["extensions"]["code"] == "FORBIDDEN", denied
    assert (await clusters.default_cluster()) is not None
    assert (await clusters.default_cluster()).template_policy.value == "CONFINED"  # type: ignore[union-attr]
    trusted = (await gql.data(UPDATE_CLUSTER, trust, token=root.token))["updateCluster"]
    assert trusted == {"cluster": {"templatePolicy": "TRUST_PLATFORM_TEMPLATES"}, "userErrors": []}

    created = (
        await gql.data(
            CREATE_PROFILE, {"input": _profile_input(project, version, cluster)}, token=alice.token
        )
    )["createComputeProfile"]
    assert created["userErrors"] == []
    profile = await ComputeProfile.get(id=created["computeProfile"]["id"])
    instance = await make_instance(project, profile, name="reader", deploy=True)
    done = await wait_status(instance.id, S.SUCCESS, S.FAILED)
    assert done.status == S.SUCCESS, done.status_message
    role = fake_kube.get("rbac.authorization.k8s.io/v1", "ClusterRole", f"node-reader-{instance.id}")
    assert role is not None and role["metadata"]["labels"]["gpupaas.io/instance"] == str(instance.id)

    # The cluster confines templates again: the next deploy is refused at render, with nothing applied.
    confine = {"input": {"id": str(cluster.id), "templatePolicy": "CONFINED"}}
    assert (await gql.data(UPDATE_CLUSTER, confine, token=root.token))["updateCluster"]["userErrors"] == []
    before = len(writes(fake_kube))
    await compute.deploy(await actor_for(root.user), str(instance.id))
    failed = await wait_status(instance.id, S.FAILED)
    assert (failed.status_message or "").startswith(
        "the platform template breaks the tenant confinement of this cluster (its templatePolicy is "
        "CONFINED; a platform admin may set TRUST_PLATFORM_TEMPLATES), so nothing was applied: document 2 "
        f"(ClusterRole node-reader-{instance.id}), kind: rbac.authorization.k8s.io/ClusterRole is not a kind"
    )
    assert len(writes(fake_kube)) == before
