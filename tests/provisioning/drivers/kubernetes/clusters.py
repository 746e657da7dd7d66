"""Plans, kubeconfigs and readings of the fake API server that the kubernetes driver's tests share."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Callable

import pytest

from gpupaas.provisioning.builtins import builtin_template
from gpupaas.provisioning.drivers.k8s_manifests.pods import IMMEDIATE, Graces
from gpupaas.provisioning.drivers.kubernetes.connection import ClusterConnection
from gpupaas.provisioning.drivers.kubernetes.driver import KubernetesDriver
from gpupaas.provisioning.plan import Plan, build_plan, namespace_for
from gpupaas.provisioning.render.policy import TemplatePolicy, TemplateScope
from gpupaas.provisioning.render.rendering import OutputDefinition
from tests.fake_kube import FakeKube

REAL_KUBECONFIG = os.environ.get("GPUPAAS_TEST_KUBECONFIG")


real_cluster = pytest.mark.skipif(
    not REAL_KUBECONFIG,
    reason="GPUPAAS_TEST_KUBECONFIG is not set (the path of a kubeconfig of a real cluster to test against)",
)


def ns(name: str, project: str = "team-a") -> str:
    """The namespace build_plan gives this test's instance (readable, with a digest of its id)."""
    return namespace_for(project, name, str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{project}/{name}")))


def make_plan(
    *,
    template: str = "gpu-namespace",
    name: str = "nb",
    project: str = "team-a",
    allocation: str = "SHARED",
    gpus: int = 4,
    vendor: str = "NVIDIA",
    model: str | None = "H100",
    cpu: str = "8",
    memory: str = "64Gi",
    resources_text: str | None = None,
    outputs: tuple[OutputDefinition, ...] | None = None,
    trusted: bool = False,
) -> Plan:
    """A plan as build_plan makes it for a profile on a built-in template (or on `resources_text`),
    confined as a project's template is (`trusted`: a platform template on a cluster that trusts them)."""
    builtin = builtin_template(template)
    assert builtin is not None
    return build_plan(
        instance_id=str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{project}/{name}")),
        instance_name=name,
        project=project,
        profile_name="h100",
        allocation=allocation,
        resources={
            "cpu": cpu,
            "memory": memory,
            "storage": "100Gi",
            "gpuCount": gpus,
            "gpuVendor": vendor,
            "gpuModel": model,
        },
        template_resources=resources_text or builtin.resources,
        input_definitions=builtin.inputs if resources_text is None else (),
        input_values={d.name: d.default for d in builtin.inputs if d.default is not None},
        outputs=builtin.outputs if outputs is None else outputs,
        labels={"team": "ml"},
        annotations={"gpupaas.io/owner": "alice"},
        template_scope=TemplateScope.PLATFORM if trusted else TemplateScope.PROJECT,
        template_policy=TemplatePolicy.TRUST_PLATFORM_TEMPLATES if trusted else TemplatePolicy.CONFINED,
    )


class Recorder:
    def __init__(self) -> None:
        self.messages: list[str] = []

    async def __call__(self, message: str) -> None:
        self.messages.append(message)


def kubeconfig_for(url: str, token: str = "test-token") -> str:
    return (
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: fake\n  cluster:\n    server: {url}\n"
        f"users:\n- name: tester\n  user:\n    token: {token}\n"
        "contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: tester\n"
        "current-context: fake\n"
    )


# A notebook Deployment on the profile's GPUs behind a NodePort Service. Written out of order on
# purpose: the driver applies the Namespace first and the Service last.
NOTEBOOK = """
apiVersion: v1
kind: Service
metadata:
  name: jupyter
spec:
  type: NodePort
  selector:
    app: jupyter
  ports:
    - name: http
      port: 8888
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: jupyter
spec:
  replicas: 1
  selector:
    matchLabels:
      app: jupyter
  template:
    metadata:
      labels:
        app: jupyter
    spec:
      containers:
        - name: main
          image: quay.io/jupyter/base-notebook:2026-01-01
          ports:
            - containerPort: 8888
          resources:
            limits:
              "{{ resources.gpuResourceName }}": "{{ resources.gpuCount }}"
---
apiVersion: v1
kind: Namespace
metadata:
  name: "{{ instance.namespace }}"
"""


NOTEBOOK_OUTPUTS = (
    OutputDefinition("port", None, "{{ objects.Service.spec.ports.0.nodePort }}"),
    OutputDefinition(
        "address", None, "{{ objects.Service.spec.clusterIP }}:{{ objects.Service.spec.ports.0.port }}"
    ),
)


def notebook_plan(
    name: str = "nb", *, gpus: int = 1, resources_text: str = NOTEBOOK, trusted: bool = False
) -> Plan:
    return make_plan(
        name=name, gpus=gpus, resources_text=resources_text, outputs=NOTEBOOK_OUTPUTS, trusted=trusted
    )


def new_driver(
    kubeconfig: str,
    *,
    readiness_timeout: float = 5.0,
    request_timeout: float = 5.0,
    poll_interval: float = 0.05,
    graces: Graces = IMMEDIATE,
    clock: Callable[[], float] = time.monotonic,
    retry_seconds: float = 1.0,
    retry_first_pause: float = 0.02,
) -> KubernetesDriver:
    """A driver for the tests. Unless a test gives it graces, it forgives nothing: the first crash,
    pull error or unschedulable pod fails (the tests of graces give their own, and a `FakeClock`).
    Transient faults are retried for `retry_seconds`, the first pause `retry_first_pause` (the
    settings' defaults are 300 s and 0.5 s)."""
    return KubernetesDriver(
        ClusterConnection(kubeconfig=kubeconfig),
        readiness_timeout=readiness_timeout,
        request_timeout=request_timeout,
        poll_interval=poll_interval,
        graces=graces,
        clock=clock,
        retry_seconds=retry_seconds,
        retry_first_pause=retry_first_pause,
    )


class FakeClock:
    """A driver's clock that moves only when the test says (`advance`), so that a test can let
    minutes pass for the driver's graces and deadline in no time. `reads` counts the readings:
    the driver has looked at the time since the test moved it once `reads` has grown."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.reads = 0
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []

    def __call__(self) -> float:
        self.reads += 1
        for reads, waiter in list(self._waiters):
            if self.reads > reads and not waiter.done():
                waiter.set_result(None)
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    async def read_after(self, reads: int, timeout: float = 5.0) -> None:
        """Until the clock has been read more than `reads` times (the driver has looked again).
        The driver reads it on the test's event loop."""
        if self.reads > reads:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append((reads, waiter))
        try:
            await asyncio.wait_for(waiter, timeout)
        finally:
            self._waiters.remove((reads, waiter))


def versions(fake: FakeKube, plan: Plan) -> dict[tuple[str, str], str]:
    """(kind, name) -> resourceVersion of every object labelled with the instance."""
    found: dict[tuple[str, str], str] = {}
    selector = f"gpupaas.io/instance={plan.instance_id}"
    for api_version, kind in (
        ("v1", "Namespace"),
        ("v1", "ResourceQuota"),
        ("v1", "LimitRange"),
        ("v1", "Service"),
        ("v1", "Pod"),
        ("apps/v1", "Deployment"),
        ("apps/v1", "ReplicaSet"),
    ):
        for obj in fake.list(api_version, kind, None, selector):
            found[(kind, obj["metadata"]["name"])] = obj["metadata"]["resourceVersion"]
    return found


async def first_pod(fake: FakeKube, namespace: str) -> str:
    names: list[str] = await asyncio.to_thread(fake.wait_for, lambda: fake.pod_names(namespace))
    return names[0]


SETTINGS_ONLY = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: fast
"""
