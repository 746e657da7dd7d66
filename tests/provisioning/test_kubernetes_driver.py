"""The kubernetes driver against the fake Kubernetes API server (tests/fake_kube), and against a
real cluster when GPUPAAS_TEST_KUBECONFIG names a kubeconfig file (skipped otherwise)."""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gpupaas.provisioning.builtins import builtin_template
from gpupaas.provisioning.drivers.base import Driver, Observed, Owner, Phase
from gpupaas.provisioning.drivers.kubernetes import ClusterConnection, KubernetesDriver
from gpupaas.provisioning.plan import (
    INSTANCE_LABEL,
    PermanentError,
    Plan,
    TemporaryError,
    build_plan,
    namespace_for,
)
from gpupaas.provisioning.render.rendering import OutputDefinition
from tests.fake_kube import FakeKube, node, run_fake_kube
from tests.fake_kube.fixtures import fake_kube  # noqa: F401

REAL_KUBECONFIG = os.environ.get("GPUPAAS_TEST_KUBECONFIG")


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
) -> Plan:
    """A plan as build_plan makes it for a profile on a built-in template (or on `resources_text`)."""
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


# ------------------------------------------------------------------------- without a server at all


def test_the_driver_implements_the_protocol() -> None:
    implementation: Driver = KubernetesDriver(
        ClusterConnection(kubeconfig=kubeconfig_for("http://127.0.0.1:1"))
    )
    assert callable(implementation.apply)


def test_the_connection_keeps_its_credentials_out_of_repr() -> None:
    connection = ClusterConnection(kubeconfig=kubeconfig_for("http://127.0.0.1:1", token="s3cret"))

    assert "s3cret" not in repr(connection)


def test_nonsense_settings_are_refused() -> None:
    connection = ClusterConnection(kubeconfig=kubeconfig_for("http://127.0.0.1:1"))

    with pytest.raises(ValueError, match="readiness_timeout"):
        KubernetesDriver(connection, readiness_timeout=0)
    with pytest.raises(ValueError, match="poll_interval"):
        KubernetesDriver(connection, poll_interval=-1)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def test_an_unreachable_api_server_is_a_temporary_error() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    driver = KubernetesDriver(ClusterConnection(kubeconfig=kubeconfig_for(url)), request_timeout=2)
    try:
        with pytest.raises(TemporaryError, match=f"cannot reach the Kubernetes API server at {url}"):
            await driver.apply(make_plan())
        with pytest.raises(TemporaryError, match="cannot reach"):
            await driver.check()
    finally:
        await driver.close()


@pytest.mark.parametrize(
    ("kubeconfig", "context", "message"),
    [
        ("- not\n- a mapping\n", None, "the kubeconfig cannot be used: it is not a kubeconfig"),
        (kubeconfig_for("http://127.0.0.1:1"), "nope", "the kubeconfig cannot be used: .*nope"),
        ("", None, "neither a kubeconfig nor in-cluster configuration"),
    ],
)
async def test_a_kubeconfig_that_cannot_be_used_fails_every_call_permanently(
    kubeconfig: str, context: str | None, message: str
) -> None:
    driver = KubernetesDriver(ClusterConnection(kubeconfig=kubeconfig, context=context))
    try:
        with pytest.raises(PermanentError, match=message):
            await driver.check()
        with pytest.raises(PermanentError, match=message):
            await driver.observe(make_plan())
    finally:
        await driver.close()


async def test_in_cluster_configuration_outside_a_cluster_says_so() -> None:
    driver = KubernetesDriver(ClusterConnection(kubeconfig=None, in_cluster=True))
    try:
        with pytest.raises(PermanentError, match="the in-cluster configuration cannot be used"):
            await driver.check()
    finally:
        await driver.close()


# ------------------------------------------------------------------------------------ a real cluster

real_cluster = pytest.mark.skipif(
    not REAL_KUBECONFIG,
    reason="GPUPAAS_TEST_KUBECONFIG is not set (the path of a kubeconfig of a real cluster to test against)",
)


@pytest.fixture
def real_kubeconfig() -> str:
    assert REAL_KUBECONFIG is not None
    return Path(REAL_KUBECONFIG).read_text(encoding="utf-8")


@pytest.fixture
async def real_driver(real_kubeconfig: str) -> AsyncIterator[KubernetesDriver]:
    driver = KubernetesDriver(
        ClusterConnection(
            kubeconfig=real_kubeconfig, context=os.environ.get("GPUPAAS_TEST_KUBE_CONTEXT") or None
        ),
        readiness_timeout=180,
        poll_interval=1,
    )
    try:
        yield driver
    finally:
        await driver.close()


@real_cluster
async def test_a_real_cluster_is_checked(real_driver: KubernetesDriver) -> None:
    info = await real_driver.check()

    assert info.server_version.startswith("v1.")
    assert info.nodes
    assert all(node.cpu and node.memory for node in info.nodes)


@real_cluster
async def test_a_real_cluster_applies_observes_and_destroys_a_cpu_only_namespace(
    real_driver: KubernetesDriver,
) -> None:
    # given a CPU-only plan in a namespace of its own
    plan = make_plan(
        project="gpupaas-it",
        name=uuid.uuid4().hex[:10],
        gpus=0,
        vendor="CPU",
        model=None,
        cpu="1",
        memory="1Gi",
    )
    assert await real_driver.observe(plan) == Observed(Phase.ABSENT)
    try:
        # when it is applied (twice: the second changes nothing)
        applied = await real_driver.apply(plan)
        again = await real_driver.apply(plan)

        # then it is there and ready
        assert applied.outputs["namespace"] == plan.namespace
        assert again == applied
        assert [ref.kind for ref in applied.objects] == ["Namespace", "ResourceQuota", "LimitRange"]
        assert await real_driver.observe(plan) == Observed(Phase.READY)
    finally:
        # and destroy removes it, namespace included
        await real_driver.destroy(plan)
    assert await real_driver.observe(plan) == Observed(Phase.ABSENT)
    await real_driver.destroy(plan)  # idempotent


# ----------------------------------------------------------------------------- the fake API server

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


def notebook_plan(name: str = "nb", *, gpus: int = 1, resources_text: str = NOTEBOOK) -> Plan:
    return make_plan(name=name, gpus=gpus, resources_text=resources_text, outputs=NOTEBOOK_OUTPUTS)


@pytest.fixture
def fake(fake_kube: FakeKube) -> FakeKube:  # noqa: F811 - the fixture imported above
    """A fresh fake API server for the test (tests/fake_kube), started and stopped by fake_kube."""
    return fake_kube


@pytest.fixture
def kubeconfig(fake: FakeKube, tmp_path: Path) -> str:
    return fake.kubeconfig(tmp_path / "kubeconfig").read_text(encoding="utf-8")


def new_driver(kubeconfig: str, **settings: float) -> KubernetesDriver:
    values = {"readiness_timeout": 5.0, "request_timeout": 5.0, "poll_interval": 0.05, **settings}
    return KubernetesDriver(ClusterConnection(kubeconfig=kubeconfig), **values)


@pytest.fixture
async def driver(kubeconfig: str) -> AsyncIterator[KubernetesDriver]:
    cluster = new_driver(kubeconfig)
    try:
        yield cluster
    finally:
        await cluster.close()


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


# ------------------------------------------------------------------------------------------- check


async def test_check_reports_the_version_and_the_gpus_of_every_node(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    fake.set_nodes(
        [
            node("h100-0", gpus=8, labels={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}),
            node(
                "mi300-0", gpus=4, gpu_resource="amd.com/gpu", labels={"amd.com/gpu.product-name": "MI300X"}
            ),
            node("cpu-0", cpu="16", memory="64Gi"),
        ]
    )

    info = await driver.check()

    assert info.server_version == "v1.37.0"
    assert [(n.name, n.cpu, n.memory, dict(n.gpus), n.gpu_model, n.ready) for n in info.nodes] == [
        ("cpu-0", "16", "64Gi", {}, None, True),
        ("h100-0", "32", "256Gi", {"nvidia.com/gpu": 8}, "NVIDIA-H100-80GB-HBM3", True),
        ("mi300-0", "32", "256Gi", {"amd.com/gpu": 4}, "MI300X", True),
    ]
    assert info.gpus == {"nvidia.com/gpu": 8, "amd.com/gpu": 4}


async def test_check_says_which_permission_is_missing(fake: FakeKube, driver: KubernetesDriver) -> None:
    fake.inject_error(
        "GET",
        r"^/api/v1/nodes$",
        403,
        message='nodes is forbidden: User "system:serviceaccount:gpupaas:driver" cannot list resource '
        '"nodes" in API group "" at the cluster scope',
    )

    with pytest.raises(PermanentError) as error:
        await driver.check()

    assert 'cannot list resource "nodes"' in str(error.value)
    assert "(RBAC)" in str(error.value)


async def test_credentials_the_server_refuses_are_permanent(tmp_path: Path) -> None:
    with run_fake_kube(token="the-right-token") as fake:
        text = fake.kubeconfig(tmp_path / "kubeconfig", token="a-wrong-token").read_text(encoding="utf-8")
        cluster = new_driver(text)
        try:
            with pytest.raises(PermanentError, match="did not accept the credentials"):
                await cluster.check()
        finally:
            await cluster.close()


# ------------------------------------------------------------------------------------------- apply


async def test_a_gpu_namespace_plan_is_applied_with_its_labels_and_outputs(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    plan = make_plan()
    progress = Recorder()

    applied = await driver.apply(plan, progress)

    assert applied.outputs == {
        "namespace": ns("nb"),
        "quota": "cpu 8, memory 64Gi, storage 100Gi, nvidia.com/gpu 4",
        "gpuResource": "nvidia.com/gpu",
    }
    assert [(r.api_version, r.kind, r.name, r.namespace) for r in applied.objects] == [
        ("v1", "Namespace", ns("nb"), None),
        ("v1", "ResourceQuota", "compute", ns("nb")),
        ("v1", "LimitRange", "container-defaults", ns("nb")),
    ]
    namespace = fake.get("v1", "Namespace", ns("nb"))
    assert namespace is not None
    assert namespace["metadata"]["labels"] == {
        "team": "ml",
        "app.kubernetes.io/managed-by": "gpupaas",
        "gpupaas.io/instance": plan.instance_id,
        "gpupaas.io/profile": "h100",
        "kubernetes.io/metadata.name": ns("nb"),
    }
    assert namespace["metadata"]["annotations"] == {"gpupaas.io/owner": "alice"}
    quota = fake.get("v1", "ResourceQuota", "compute", ns("nb"))
    assert quota is not None
    assert str(quota["spec"]["hard"]["requests.nvidia.com/gpu"]) == "4"
    assert progress.messages == ["Applying 3 objects", "Waiting for 3 objects to be ready"]
    assert await driver.observe(plan) == Observed(Phase.READY)


async def test_a_dedicated_plan_gives_its_namespace_the_reserved_nodes_selector(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    plan = make_plan(template="gpu-dedicated", allocation="DEDICATED", gpus=8)

    applied = await driver.apply(plan)

    assert applied.outputs["nodeSelector"] == f"gpupaas.io/reserved-for={ns('nb')}"
    namespace = fake.get("v1", "Namespace", ns("nb"))
    assert namespace is not None
    annotations = namespace["metadata"]["annotations"]
    assert annotations["scheduler.alpha.kubernetes.io/node-selector"] == f"gpupaas.io/reserved-for={ns('nb')}"
    assert f'"value": "{ns("nb")}"' in annotations["scheduler.alpha.kubernetes.io/defaultTolerations"]
    assert annotations["gpupaas.io/owner"] == "alice"


async def test_a_deployment_behind_a_node_port_service_reports_its_port(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    plan = notebook_plan()

    applied = await driver.apply(plan)

    service = fake.get("v1", "Service", "jupyter", ns("nb"))
    assert service is not None
    port = service["spec"]["ports"][0]["nodePort"]
    assert 30000 <= port <= 32767
    assert applied.outputs == {"port": str(port), "address": f"{service['spec']['clusterIP']}:8888"}
    assert [r.kind for r in applied.objects] == ["Namespace", "Deployment", "Service"]
    # the pods carry the instance's labels, so that drift and destroy find them
    pods = fake.pods(ns("nb"), f"gpupaas.io/instance={plan.instance_id}")
    assert len(pods) == 1
    assert pods[0]["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gpupaas"
    assert await driver.observe(plan) == Observed(Phase.READY)


async def test_every_write_is_a_server_side_apply_by_gpupaas_with_force(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    await driver.apply(notebook_plan())

    writes = [r for r in fake.requests if r.method not in ("GET", "HEAD")]
    assert [w.path for w in writes] == [
        f"/api/v1/namespaces/{ns('nb')}",
        f"/apis/apps/v1/namespaces/{ns('nb')}/deployments/jupyter",
        f"/api/v1/namespaces/{ns('nb')}/services/jupyter",
    ]
    for write in writes:
        assert write.method == "PATCH"
        assert write.content_type == "application/apply-patch+yaml"
        assert write.query == {"fieldManager": "gpupaas", "force": "true"}


async def test_applying_an_unchanged_plan_again_changes_nothing(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    plan = notebook_plan()
    first = await driver.apply(plan)
    before = versions(fake, plan)

    again = await driver.apply(plan)

    assert again == first
    assert versions(fake, plan) == before
    assert len(before) == 5  # namespace, deployment, replicaset, pod, service


async def test_a_run_that_died_half_way_is_finished_by_the_next_without_duplicates(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    plan = make_plan()
    fake.inject_error("PATCH", r"/resourcequotas/", 500)

    with pytest.raises(TemporaryError, match="HTTP 500"):
        await driver.apply(plan)
    applied = await driver.apply(plan)

    assert applied.outputs["namespace"] == ns("nb")
    assert [
        n["metadata"]["name"] for n in fake.list("v1", "Namespace") if n["metadata"]["name"] == ns("nb")
    ] == [ns("nb")]
    assert len(fake.list("v1", "ResourceQuota", ns("nb"))) == 1
    assert len(fake.list("v1", "LimitRange", ns("nb"))) == 1


async def test_an_unschedulable_gpu_pod_fails_the_run_with_the_schedulers_reason(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    fake.set_nodes([node(f"gpu-{i}", gpus=4) for i in range(4)])

    with pytest.raises(PermanentError) as error:
        await driver.apply(notebook_plan(gpus=8))

    assert "cannot be scheduled: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu." in str(error.value)
    assert str(error.value).startswith("pod jupyter-")


async def test_a_pod_that_cannot_pull_its_image_fails_the_run(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    fake.set_pod_delay(30)
    run = asyncio.create_task(driver.apply(notebook_plan()))
    pod = await first_pod(fake, ns("nb"))

    fake.fail_pod(
        ns("nb"),
        pod,
        "ImagePullBackOff",
        'Back-off pulling image "quay.io/jupyter/base-notebook:2026-01-01"',
    )

    with pytest.raises(PermanentError) as error:
        await run
    assert str(error.value) == (
        f'pod {pod}: ImagePullBackOff (container main: Back-off pulling image "quay.io/jupyter/base-notebook:2026-01-01")'
    )


async def test_a_run_that_is_not_ready_in_time_fails_saying_what_it_waited_for(
    fake: FakeKube, kubeconfig: str
) -> None:
    fake.set_pod_delay(30)
    cluster = new_driver(kubeconfig, readiness_timeout=1)
    try:
        with pytest.raises(PermanentError) as error:
            await cluster.apply(notebook_plan())
    finally:
        await cluster.close()

    assert str(error.value).startswith("not ready after 1 s: ")
    assert "ContainerCreating" in str(error.value) or "replicas available" in str(error.value)


CLAIM = """
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 10Gi
"""


async def test_a_claim_that_is_never_bound_times_out_naming_it(fake: FakeKube, kubeconfig: str) -> None:
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns("nb")}})
    fake.set_pvc_delay(None)
    cluster = new_driver(kubeconfig, readiness_timeout=0.5)
    try:
        with pytest.raises(PermanentError) as error:
            await cluster.apply(make_plan(resources_text=CLAIM, outputs=()))
    finally:
        await cluster.close()

    assert (
        str(error.value)
        == "not ready after 0.5 s: persistentvolumeclaim data: Pending (waiting for a volume)"
    )


async def test_a_kind_the_cluster_does_not_serve_is_refused_before_anything_is_applied(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    certificate = (
        NOTEBOOK + "---\napiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata:\n  name: tls\n"
    )

    with pytest.raises(PermanentError) as error:
        await driver.apply(notebook_plan(resources_text=certificate))

    assert str(error.value) == (
        "certificate tls: the cluster does not serve kind Certificate of cert-manager.io/v1 "
        "(is its CustomResourceDefinition installed?)"
    )
    assert not [r for r in fake.requests if r.method == "PATCH"]


async def test_a_template_that_overrides_the_identity_labels_is_refused(driver: KubernetesDriver) -> None:
    stolen = SETTINGS_ONLY.replace(
        "  name: settings\n", "  name: settings\n  labels:\n    app.kubernetes.io/managed-by: helm\n"
    )

    with pytest.raises(PermanentError, match=r'label app\.kubernetes\.io/managed-by is "helm"'):
        await driver.apply(make_plan(resources_text=stolen, outputs=()))


async def test_an_invalid_object_fails_with_the_cause(driver: KubernetesDriver) -> None:
    plan = notebook_plan(resources_text=NOTEBOOK.replace("replicas: 1", "replicas: -1"))

    with pytest.raises(PermanentError) as error:
        await driver.apply(plan)

    assert "applying deployment jupyter: " in str(error.value)
    assert "spec.replicas: Invalid value: -1: must be greater than or equal to 0" in str(error.value)
    assert "HTTP 422" in str(error.value)


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        *[(code, TemporaryError) for code in (500, 503, 429)],
        *[(code, PermanentError) for code in (400, 403, 404, 409)],
    ],
)
async def test_server_errors_are_temporary_and_client_errors_permanent(
    fake: FakeKube, driver: KubernetesDriver, status: int, kind: type[Exception]
) -> None:
    fake.inject_error("PATCH", r"/limitranges/", status, message="injected for the test")

    with pytest.raises(kind) as error:
        await driver.apply(make_plan())

    assert "applying limitrange container-defaults: " in str(error.value)
    assert "injected for the test" in str(error.value)


async def test_a_slow_api_server_is_a_temporary_error(fake: FakeKube, kubeconfig: str) -> None:
    fake.set_latency(3, method="PATCH")
    cluster = new_driver(kubeconfig, request_timeout=0.3)
    try:
        with pytest.raises(TemporaryError, match="cannot reach the Kubernetes API server"):
            await cluster.apply(make_plan())
    finally:
        await cluster.close()


async def test_applying_into_a_namespace_still_terminating_is_temporary(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    plan = make_plan()
    await driver.apply(plan)
    fake.set_namespace_deletion_delay(30)
    fake.delete("v1", "Namespace", ns("nb"))

    with pytest.raises(TemporaryError, match="terminating"):
        await driver.apply(plan)


# ----------------------------------------------------------------------------------------- destroy


async def test_destroy_deletes_everything_and_waits_until_the_namespace_is_gone(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    plan = notebook_plan()
    await driver.apply(plan)
    fake.set_namespace_deletion_delay(0.3)
    fake.clear_requests()
    progress = Recorder()

    await driver.destroy(plan, progress)

    assert fake.get("v1", "Namespace", ns("nb")) is None
    assert versions(fake, plan) == {}
    assert progress.messages == ["Deleting 3 objects", f"Waiting for namespace {ns('nb')} to terminate"]
    deletes = [r for r in fake.requests if r.method == "DELETE"]
    assert deletes[0].path == f"/api/v1/namespaces/{ns('nb')}/services/jupyter"
    assert deletes[-1].path == f"/api/v1/namespaces/{ns('nb')}"
    assert await driver.observe(plan) == Observed(Phase.ABSENT)
    await driver.destroy(plan)  # idempotent
    assert await driver.observe(plan) == Observed(Phase.ABSENT)


SETTINGS_ONLY = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: fast
"""


async def test_destroy_also_deletes_what_the_plan_no_longer_names_and_keeps_a_namespace_it_does_not_own(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    # given a plan that applies into an existing namespace, and an object of the instance that an
    # older version of its template left there
    plan = make_plan(resources_text=SETTINGS_ONLY, outputs=())
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": plan.namespace}})
    await driver.apply(plan)
    fake.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": "old-token",
                "namespace": plan.namespace,
                "labels": {"gpupaas.io/instance": plan.instance_id},
            },
            "stringData": {"token": "x"},
        }
    )

    await driver.destroy(plan)

    assert fake.get("v1", "ConfigMap", "settings", plan.namespace) is None
    assert fake.get("v1", "Secret", "old-token", plan.namespace) is None
    assert fake.get("v1", "Namespace", plan.namespace) is not None


# ----------------------------------------------------------------------------------------- observe


async def test_observe_follows_the_instance(fake: FakeKube, driver: KubernetesDriver) -> None:
    plan = notebook_plan()
    assert await driver.observe(plan) == Observed(Phase.ABSENT)

    await driver.apply(plan)
    assert await driver.observe(plan) == Observed(Phase.READY)

    pod = await first_pod(fake, ns("nb"))
    fake.fail_pod(ns("nb"), pod, "OOMKilled")
    observed = await driver.observe(plan)
    assert observed.phase == Phase.FAILED
    assert observed.message is not None
    assert observed.message.startswith(f"pod {pod}: OOMKilled (container main exited with code 137")

    fake.recover_pod(ns("nb"), pod)
    assert await driver.observe(plan) == Observed(Phase.READY)


# ------------------------------------------------------------------------------------------- drift


class Changes:
    """What watch_drift reported, to wait for."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[tuple[str, Observed]] = asyncio.Queue()

    async def __call__(self, owner: Owner, observed: Observed) -> None:
        assert owner.label == INSTANCE_LABEL  # a compute instance's pods
        await self.queue.put((owner.id, observed))

    async def next(self) -> tuple[str, Phase, str | None]:
        instance, observed = await asyncio.wait_for(self.queue.get(), timeout=5)
        return instance, observed.phase, observed.message


def pod_lists(fake: FakeKube) -> int:
    """How many times the pods were listed (not watched) across namespaces."""
    return sum(1 for r in fake.requests if r.path == "/api/v1/pods" and r.query.get("watch") != "true")


async def test_drift_reports_a_failed_pod_and_its_recovery_across_dropped_and_compacted_watches(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    plan = notebook_plan()
    await driver.apply(plan)
    pod = await first_pod(fake, ns("nb"))
    changes = Changes()
    stop = asyncio.Event()
    watch = asyncio.create_task(driver.watch_drift(changes, stop=stop))
    try:
        await asyncio.to_thread(fake.wait_for, lambda: pod_lists(fake) == 1)
        oom = f"pod {pod}: OOMKilled (container main exited with code 137; CrashLoopBackOff)"

        # a pod that dies turns the instance FAILED with the reason; its recovery READY
        fake.fail_pod(ns("nb"), pod, "OOMKilled")
        assert await changes.next() == (plan.instance_id, Phase.FAILED, oom)
        fake.recover_pod(ns("nb"), pod)
        assert await changes.next() == (plan.instance_id, Phase.READY, None)

        # the watch is cut (an API server restart): it goes on from its resourceVersion
        assert fake.drop_watches() == 1
        fake.fail_pod(ns("nb"), pod, "OOMKilled")
        assert await changes.next() == (plan.instance_id, Phase.FAILED, oom)
        fake.recover_pod(ns("nb"), pod)
        assert await changes.next() == (plan.instance_id, Phase.READY, None)
        assert pod_lists(fake) == 1

        # the history is compacted while the watch is cut: 410 Gone, so it lists again
        fake.compact()
        fake.drop_watches()
        fake.fail_pod(ns("nb"), pod, "Error", exit_code=2)
        assert await changes.next() == (
            plan.instance_id,
            Phase.FAILED,
            f"pod {pod}: Error (container main exited with code 2; CrashLoopBackOff)",
        )
        assert pod_lists(fake) == 2
    finally:
        stop.set()
        await asyncio.wait_for(watch, timeout=5)
    assert changes.queue.empty()


async def test_a_drift_watch_stops_when_asked_and_when_cancelled(driver: KubernetesDriver) -> None:
    stop = asyncio.Event()
    watch = asyncio.create_task(driver.watch_drift(Changes(), stop=stop))
    await asyncio.sleep(0.2)

    stop.set()
    await asyncio.wait_for(watch, timeout=2)

    other = asyncio.create_task(driver.watch_drift(Changes(), stop=asyncio.Event()))
    await asyncio.sleep(0.2)
    other.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(other, timeout=2)
