"""Ownership, pruning and faults through the whole compute flow with the kubernetes driver, against
the fake Kubernetes API server: a namespace someone else made is refused (FAILED, neither adopted
nor deleted), an object the instance's new configuration no longer renders goes on the next
deploy, and an API server that fails for longer than the worker's attempts used to last is ridden
out in one attempt."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gpupaas.accounts.models import User
from gpupaas.accounts.service import actor_for
from gpupaas.catalog.service.templates import InputDefinitionIn
from gpupaas.compute import service as compute
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Actor
from gpupaas.provisioning.plan import namespace_for
from gpupaas.runs.models import DeploymentRun
from gpupaas.settings import Settings
from tests.conftest import SECRET_KEY
from tests.factories import make_instance, make_profile, make_project, make_template, make_version
from tests.fake_kube import FakeKube, node
from tests.workers.conftest import kubernetes_runtime, wait_status

S = DeploymentStatus

# A namespace of the instance's own, and a ConfigMap whose name is an input.
WITH_SETTINGS = """\
apiVersion: v1
kind: Namespace
metadata:
  name: "{{ instance.namespace }}"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: "{{ inputs.settingsName }}"
  namespace: "{{ instance.namespace }}"
data:
  mode: fast
"""
SETTINGS_NAME = InputDefinitionIn(
    name="settingsName", type="STRING", default="settings-a", pattern="^[a-z-]+$"
)


@pytest.fixture
async def runtime(db: object, settings: Settings, fake_kube: FakeKube, tmp_path: Path) -> AsyncIterator[Any]:
    """A runtime (in-process bus, worker) and a KUBERNETES cluster on the fake server; the cluster."""
    nodes = [node("gpu-0", gpus=8), node("cpu-0")]
    kubeconfig = fake_kube.kubeconfig(tmp_path / "kubeconfig").read_text()
    async with kubernetes_runtime(
        settings, kubeconfig, nodes=nodes, fake=fake_kube, kubernetes_retry_seconds=30
    ) as (_, cluster):
        yield cluster


async def _root() -> Actor:
    return await actor_for(await User.get(username="root"))


async def _instance(cluster: Any, name: str) -> Any:
    project = await make_project("ml")
    version = await make_version(
        await make_template(project), resources=WITH_SETTINGS, inputs=[SETTINGS_NAME], outputs=[]
    )
    profile = await make_profile(project, version, cluster_id=str(cluster.id))
    return await make_instance(project, profile, name=name)


async def test_a_namespace_made_by_someone_else_fails_the_run_and_is_neither_adopted_nor_deleted(
    runtime: Any, fake_kube: FakeKube
) -> None:
    # given an instance whose namespace someone else made beforehand, with a ConfigMap in it
    instance = await _instance(runtime, "nb")
    ns = namespace_for("ml", "nb", str(instance.id))
    fake_kube.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {"team": "a"}}}
    )
    fake_kube.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "their-data", "namespace": ns},
            "data": {},
        }
    )

    # when it is deployed
    await compute.deploy(await _root(), str(instance.id))
    failed = await wait_status(instance.id, S.FAILED, S.SUCCESS)

    # then the run is FAILED with the reason, at its first attempt, and nothing was adopted
    assert failed.status == S.FAILED
    assert f"namespace {ns} exists and is not managed by gpupaas" in (failed.status_message or "")
    run = await DeploymentRun.get(instance_id=instance.id)
    assert run.attempts == 1
    namespace = fake_kube.get("v1", "Namespace", ns)
    assert namespace is not None
    assert namespace["metadata"]["labels"] == {"team": "a", "kubernetes.io/metadata.name": ns}
    assert fake_kube.get("v1", "ConfigMap", "settings-a", ns) is None

    # and destroying the instance deletes neither the namespace nor its ConfigMap
    await compute.destroy(await _root(), str(instance.id))
    gone = await wait_status(instance.id, S.NOT_DEPLOYED, S.FAILED)
    assert gone.status == S.NOT_DEPLOYED, gone.status_message
    assert fake_kube.get("v1", "Namespace", ns) is not None
    assert fake_kube.get("v1", "ConfigMap", "their-data", ns) is not None


async def test_an_object_the_new_configuration_no_longer_renders_is_deleted_by_the_next_deploy(
    runtime: Any, fake_kube: FakeKube
) -> None:
    # given an instance deployed with its ConfigMap named settings-a
    instance = await _instance(runtime, "train")
    ns = namespace_for("ml", "train", str(instance.id))
    await compute.deploy(await _root(), str(instance.id))
    done = await wait_status(instance.id, S.SUCCESS, S.FAILED)
    assert done.status == S.SUCCESS, done.status_message
    assert fake_kube.get("v1", "ConfigMap", "settings-a", ns) is not None
    namespace = fake_kube.get("v1", "Namespace", ns)
    assert namespace is not None

    # when its configuration names it settings-b and it is deployed again
    await compute.update_instance(
        await _root(),
        str(instance.id),
        compute.InstanceIn(inputs=[("settingsName", "settings-b")]),
        secret_key=SECRET_KEY,
    )
    await compute.deploy(await _root(), str(instance.id))
    again = await wait_status(instance.id, S.SUCCESS, S.FAILED)

    # then settings-a is gone, settings-b is there, and the namespace is the same one
    assert again.status == S.SUCCESS, again.status_message
    assert fake_kube.get("v1", "ConfigMap", "settings-a", ns) is None
    assert fake_kube.get("v1", "ConfigMap", "settings-b", ns) is not None
    after = fake_kube.get("v1", "Namespace", ns)
    assert after is not None and after["metadata"]["uid"] == namespace["metadata"]["uid"]


async def test_an_api_server_failing_longer_than_the_old_three_attempts_is_ridden_out_in_one_run(
    runtime: Any, fake_kube: FakeKube
) -> None:
    # given an API server that answers every write 503 four times over (a control plane restarting)
    instance = await _instance(runtime, "nb")
    rule = fake_kube.inject_error("PATCH", "", 503, times=4, message="the apiserver is restarting")

    await compute.deploy(await _root(), str(instance.id))
    done = await wait_status(instance.id, S.SUCCESS, S.FAILED)

    # then the run succeeds in its first attempt: the driver retried the write itself
    assert done.status == S.SUCCESS, done.status_message
    assert rule.hits == 4
    run = await DeploymentRun.get(instance_id=instance.id)
    assert run.attempts == 1
