"""A GPU service's log and events through the real websocket, read by the API process with the
kubernetes driver from the fake Kubernetes API server (tests/fake_kube): the service launched
on a KUBERNETES cluster, its container's log followed (a line the container writes arrives live),
its events listed then watched (the pod's crash arrives as a Warning)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gpupaas.app import create_app
from gpupaas.bootstrap import seed
from gpupaas.catalog.models import EnvironmentTemplate, EnvironmentTemplateVersion
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from gpupaas.instance_templates.models import InstanceTemplate
from gpupaas.provisioning.plan import SERVICE_LABEL, namespace_for
from gpupaas.runtime import Runtime
from gpupaas.service_instances.models import ServiceInstance
from gpupaas.service_instances.states import ServiceStatus
from gpupaas.settings import Settings
from tests import ws
from tests.conftest import serving
from tests.factories import make_instance, make_profile, make_project, make_user
from tests.fake_kube import FakeKube, node
from tests.service_instances.test_service_logs import CREATE, DOWNLOAD, EVENTS, LOGS, data
from tests.workers.conftest import eventually, kubernetes_runtime, wait_status


@pytest.fixture
async def kube(
    db: object, settings: Settings, fake_kube: FakeKube, tmp_path: Path
) -> AsyncIterator[tuple[Runtime, Any, str]]:
    """A runtime with a KUBERNETES cluster on the fake API server, and the app under uvicorn."""
    kubeconfig = fake_kube.kubeconfig(tmp_path / "kubeconfig").read_text()
    nodes = [node("gpu-0", gpus=8), node("cpu-0")]
    async with kubernetes_runtime(settings, kubeconfig, nodes=nodes, fake=fake_kube) as (runtime, cluster):
        await seed()
        async with serving(create_app(runtime.settings, migrate=False, runtime=runtime)) as url:
            yield runtime, cluster, url


async def test_a_log_is_followed_and_events_arrive_from_the_api_server(
    kube: tuple[Runtime, Any, str], fake_kube: FakeKube
) -> None:
    _, cluster, url = kube
    alice = await make_user("alice")
    project = await make_project("ml", alice=Role.MEMBER)
    builtin = await EnvironmentTemplate.get(name="gpu-namespace", built_in=True)
    version = await EnvironmentTemplateVersion.get(template_id=builtin.id)
    profile = await make_profile(project, version, cluster_id=str(cluster.id))
    box = await make_instance(project, profile, name="box", deploy=True, by=alice)
    done = await wait_status(box.id, DeploymentStatus.SUCCESS, DeploymentStatus.FAILED)
    assert done.status == DeploymentStatus.SUCCESS, done.status_message
    template = await InstanceTemplate.get(name="jupyterlab-pytorch")
    variables = {"project": "ml", "computeInstance": str(box.id), "template": str(template.id), "name": "nb"}
    created = (await data(url, alice, CREATE, {"input": variables}))["createServiceInstance"]
    assert created["userErrors"] == []
    service_id = created["serviceInstance"]["id"]

    async def running() -> bool:
        service = await ServiceInstance.get(id=service_id)
        assert service.status != ServiceStatus.FAILED, service.status_message
        return service.status == ServiceStatus.RUNNING

    await eventually(running, what="the service to run on the fake cluster")
    namespace = namespace_for("ml", "box", str(box.id))
    [pod] = fake_kube.pods(namespace, f"{SERVICE_LABEL}={service_id}")
    pod_name = pod["metadata"]["name"]

    async with ws.connect(url, token=alice.token) as logs, ws.connect(url, token=alice.token) as events:
        await logs.subscribe(LOGS, {"id": service_id, "tail": 10})
        first = (await logs.next_data())["serviceInstanceLogs"]
        assert first["containers"] == ["main"]
        assert all(line["pod"] == pod_name and line["container"] == "main" for line in first["lines"])
        assert first["lines"][0]["text"].startswith("fake container main: running ")
        assert first["lines"][0]["at"]
        # What the container writes now arrives while followed.
        fake_kube.write_log(namespace, pod_name, "main", "epoch 1: loss 0.42")
        seen = [line["text"] for line in first["lines"]]
        while "epoch 1: loss 0.42" not in seen:
            chunk = (await logs.next_data(timeout=20))["serviceInstanceLogs"]
            seen.extend(line["text"] for line in chunk["lines"])
        # The download reads the same log through the query.
        download = (await data(url, alice, DOWNLOAD, {"id": service_id}))["serviceInstanceLogs"]
        assert download["text"].splitlines()[-1].endswith(" epoch 1: loss 0.42")

        await events.subscribe(EVENTS, {"id": service_id})
        got: list[dict[str, Any]] = []
        while not {"Scheduled", "Started"} <= {e["reason"] for e in got}:
            got.append((await events.next_data(timeout=20))["serviceInstanceClusterEvents"])
        assert ("Pod", pod_name) in {(e["objectKind"], e["objectName"]) for e in got}
        fake_kube.fail_pod(namespace, pod_name, "Error", "the notebook crashed", exit_code=2)
        while not any(e["type"] == "WARNING" and e["objectName"] == pod_name for e in got):
            got.append((await events.next_data(timeout=20))["serviceInstanceClusterEvents"])
