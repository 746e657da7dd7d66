"""The worker's rights in infra/rbac/gpupaas-worker.yaml are enough and no more: the kubernetes driver,
authenticated as the worker's service account against the fake API server with those RBAC objects
loaded (tests/fake_kube/authz enforces them as kube-apiserver would), deploys, observes and
destroys every built-in template and every built-in GPU service; what the role does not grant
(a ClusterRoleBinding, a RoleBinding to cluster-admin, a Role that grants more than the worker
holds) is refused by the API server with 403 and fails the run with a message that says so; and
the cluster check names the permission a reduced role lacks."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpupaas.catalog.service.profiles import ResourcesIn
from gpupaas.clusters.models import ClusterStatus
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.gpu_resources import resource_name
from gpupaas.core.gpus import Vendor
from gpupaas.instance_templates.builtins import BUILTIN_INSTANCE_TEMPLATES, builtin_instance_template
from gpupaas.instance_templates.spec import resolve
from gpupaas.provisioning.builtins import BUILTIN_TEMPLATES
from gpupaas.provisioning.drivers.base import Observed, Phase
from gpupaas.provisioning.drivers.kubernetes.driver import KubernetesDriver
from gpupaas.provisioning.plan import PermanentError, namespace_for
from gpupaas.service_instances.plan import build_service_plan
from gpupaas.settings import Settings
from tests.factories import make_instance, make_profile, make_project, make_template, make_version
from tests.fake_kube import FakeKube, node
from tests.provisioning.drivers.kubernetes.clusters import make_plan, new_driver, ns
from tests.service_instances.ssh_setup import ssh_setup
from tests.ssh_keys.keygen import key_pair
from tests.workers.conftest import kubernetes_runtime, wait_status

WORKER_RBAC = Path(__file__).resolve().parents[4] / "infra" / "rbac" / "gpupaas-worker.yaml"
WORKER = "system:serviceaccount:gpupaas-system:gpupaas-worker"
WORKER_GROUPS = '["system:serviceaccounts" "system:serviceaccounts:gpupaas-system" "system:authenticated"]'

# GPU nodes of every vendor the built-in GPU services use, and a CPU node.
NODES = [
    node("h100-0", gpus=8, labels={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}),
    node("mi300-0", gpus=8, gpu_resource="amd.com/gpu"),
    node("ascend910b-0", gpus=8, gpu_resource="huawei.com/Ascend910"),
    node("ascend310p-0", gpus=8, gpu_resource="huawei.com/Ascend310P"),
    node("cpu-0"),
]

# The chip a built-in GPU service is made for, where its vendor's resource is per chip (Ascend).
MODELS = {"cann-910b": "Ascend910B", "cann-310p": "Ascend310P"}


def worker_token(fake: FakeKube) -> str:
    """Applies infra/rbac as a cluster admin would and returns the worker's token, as the README's
    "Register a Kubernetes cluster" reads it from the gpupaas-worker-token Secret."""
    fake.load_rbac(WORKER_RBAC)
    return fake.service_account_token("gpupaas-system", "gpupaas-worker")


@pytest.fixture
def worker_kubeconfig(fake: FakeKube, tmp_path: Path) -> str:
    fake.set_nodes(NODES)
    return fake.kubeconfig(tmp_path / "worker.kubeconfig", token=worker_token(fake)).read_text(
        encoding="utf-8"
    )


@pytest.fixture
async def worker(worker_kubeconfig: str) -> AsyncIterator[KubernetesDriver]:
    """The kubernetes driver with the worker's service-account token."""
    driver = new_driver(worker_kubeconfig)
    try:
        yield driver
    finally:
        await driver.close()


def unexpected_denials(fake: FakeKube) -> list[str]:
    """The worker's requests that RBAC refused, but the destroy sweep's lists of Secrets: the sweep
    asks every kind discovery lists, and the worker may not list Secrets (it reads its own by name)."""
    return [
        d.message
        for d in fake.denials
        if not (d.attributes.verb == "list" and d.attributes.resource == "secrets")
    ]


@pytest.mark.parametrize("template", [t.name for t in BUILTIN_TEMPLATES])
async def test_every_builtin_template_deploys_and_is_destroyed_with_the_worker_s_rights(
    fake: FakeKube, worker: KubernetesDriver, template: str
) -> None:
    plan = make_plan(template=template, allocation="DEDICATED" if template == "gpu-dedicated" else "SHARED")

    applied = await worker.apply(plan)
    observed = await worker.observe(plan)
    await worker.destroy(plan)

    assert applied.outputs["namespace"] == ns("nb")
    assert observed == Observed(Phase.READY)
    assert await worker.observe(plan) == Observed(Phase.ABSENT)
    assert fake.get("v1", "Namespace", ns("nb")) is None
    assert unexpected_denials(fake) == []
    assert {d.attributes.namespace for d in fake.denials} <= {ns("nb")}


@pytest.mark.parametrize("service", [t.name for t in BUILTIN_INSTANCE_TEMPLATES])
async def test_every_builtin_gpu_service_runs_and_is_deleted_with_the_worker_s_rights(
    fake: FakeKube, worker: KubernetesDriver, service: str
) -> None:
    builtin = builtin_instance_template(service)
    assert builtin is not None
    vendor = builtin.spec.vendor
    gpus = 0 if vendor == "CPU" else 2
    resources: dict[str, Any] = {
        "cpu": "8",
        "memory": "64Gi",
        "storage": "100Gi",
        "gpuCount": gpus,
        "gpuVendor": "NVIDIA" if vendor == "CPU" else vendor,
        "gpuModel": MODELS.get(service),
    }
    compute = make_plan(name="box", gpus=gpus, vendor=resources["gpuVendor"], model=MODELS.get(service))
    spec = resolve(builtin.spec, {"generated_token": "ab" * 16})
    service_plan = build_service_plan(
        service_id=str(uuid.uuid5(uuid.NAMESPACE_DNS, service)),
        name="svc",
        spec=spec,
        gpu_count=1 if gpus else 0,
        compute_id=compute.instance_id,
        compute_name="box",
        project="team-a",
        compute_resources=resources,
        profile_name="h100",
        # the shells declare SSH: their SSH server's Secret is applied with the worker's rights too
        ssh=ssh_setup(spec, key_pair().public_line),
    )
    assert service_plan.namespace == compute.namespace

    await worker.apply(compute)
    applied = await worker.apply(service_plan)
    running = await worker.observe(service_plan)
    [pod] = fake.pods(compute.namespace, f"gpupaas.io/service={service_plan.instance_id}")
    await worker.destroy(service_plan)
    gone = await worker.observe(service_plan)
    await worker.destroy(compute)

    assert running == Observed(Phase.READY)
    assert gone == Observed(Phase.ABSENT)
    kinds = (
        (["Secret"] if builtin.spec.ssh else [])
        + ["PersistentVolumeClaim", "Deployment"]
        + (["Service"] if builtin.spec.ports else [])
    )
    assert [r.kind for r in applied.objects] == kinds
    limits = pod["spec"]["containers"][0]["resources"]["limits"]
    if gpus:
        assert limits[resource_name(vendor, MODELS.get(service))] == "1"
    assert unexpected_denials(fake) == []


# Refused by the API server ---------------------------------------------------------------------

CLUSTER_ADMIN_FOR_ALL = """
apiVersion: v1
kind: Namespace
metadata:
  name: "{{ instance.namespace }}"
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: everyone-is-admin
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:authenticated"}]
"""

ADMIN_IN_THE_NAMESPACE = """
apiVersion: v1
kind: Namespace
metadata:
  name: "{{ instance.namespace }}"
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: mallory-is-admin
  namespace: "{{ instance.namespace }}"
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: mallory}]
"""

# A Role that grants what the worker itself does not hold: listing every Secret of the namespace.
SECRET_LISTER = """
apiVersion: v1
kind: Namespace
metadata:
  name: "{{ instance.namespace }}"
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: secret-lister
  namespace: "{{ instance.namespace }}"
rules:
  - apiGroups: [""]
    resources: [secrets]
    verbs: [get, list]
"""


async def test_a_cluster_role_binding_is_refused_with_403_and_a_clear_message(
    fake: FakeKube, worker: KubernetesDriver
) -> None:
    # trusted: the tenant policy would refuse it before the cluster sees it; here RBAC is the test
    plan = make_plan(resources_text=CLUSTER_ADMIN_FOR_ALL, outputs=(), trusted=True)

    with pytest.raises(PermanentError) as error:
        await worker.apply(plan)

    # the driver reads each object before it writes (it never adopts what it did not create): the
    # worker may not even read a ClusterRoleBinding
    assert str(error.value) == (
        "reading clusterrolebinding everyone-is-admin: clusterrolebindings.rbac.authorization.k8s.io "
        f'"everyone-is-admin" is forbidden: User "{WORKER}" cannot get resource "clusterrolebindings" in API '
        'group "rbac.authorization.k8s.io" at the cluster scope (HTTP 403 Forbidden); the kubeconfig\'s user '
        "needs this permission (RBAC)"
    )
    assert fake.get("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "everyone-is-admin") is None


async def test_a_role_binding_to_cluster_admin_is_refused_by_the_escalation_check(
    fake: FakeKube, worker: KubernetesDriver
) -> None:
    plan = make_plan(resources_text=ADMIN_IN_THE_NAMESPACE, outputs=(), trusted=True)

    with pytest.raises(PermanentError) as error:
        await worker.apply(plan)

    message = str(error.value)
    assert message.startswith(
        'applying rolebinding mallory-is-admin: rolebindings.rbac.authorization.k8s.io "mallory-is-admin" is '
        f'forbidden: user "{WORKER}" (groups={WORKER_GROUPS}) is attempting to grant RBAC permissions not '
        "currently held:"
    )
    assert '{APIGroups:["*"], Resources:["*"], Verbs:["*"]}' in message
    assert message.endswith("(HTTP 403 Forbidden); the kubeconfig's user needs this permission (RBAC)")
    assert fake.get("rbac.authorization.k8s.io/v1", "RoleBinding", "mallory-is-admin", ns("nb")) is None


async def test_a_role_that_grants_more_than_the_worker_holds_is_refused(
    fake: FakeKube, worker: KubernetesDriver
) -> None:
    """Secrets: the worker may write the ones its templates hold, but never list those of another
    namespace; and no Role anywhere may hand out more than the worker holds."""
    plan = make_plan(resources_text=SECRET_LISTER, outputs=())

    with pytest.raises(PermanentError) as error:
        await worker.apply(plan)

    assert '{APIGroups:[""], Resources:["secrets"], Verbs:["list"]}' in str(error.value)
    refused = [d for d in fake.denials if d.attributes.resource == "roles"]
    assert [(d.code, d.attributes.namespace) for d in refused] == [(403, ns("nb"))]


def reduced_role(tmp_path: Path, *dropped: tuple[str, str]) -> Path:
    """The worker's ClusterRole without these (resource, verb) pairs."""
    documents = [d for d in yaml.safe_load_all(WORKER_RBAC.read_text(encoding="utf-8")) if d]
    [role] = [d for d in documents if d["kind"] == "ClusterRole"]
    rules = []
    for rule in role["rules"]:
        for resource in rule.get("resources", []):
            verbs = [v for v in rule["verbs"] if (resource, v) not in dropped]
            if verbs:
                rules.append({**rule, "resources": [resource], "verbs": verbs})
    role["rules"] = rules
    path = tmp_path / "reduced.yaml"
    path.write_text(yaml.safe_dump(role), encoding="utf-8")
    return path


async def check_error(worker_kubeconfig: str) -> str:
    driver = new_driver(worker_kubeconfig)
    try:
        with pytest.raises(PermanentError) as error:
            await driver.check()
    finally:
        await driver.close()
    return str(error.value)


async def test_the_check_names_every_permission_a_reduced_role_lacks(
    fake: FakeKube, worker_kubeconfig: str, tmp_path: Path
) -> None:
    fake.load_rbac(reduced_role(tmp_path, ("nodes", "list"), ("pods", "watch"), ("deployments", "patch")))

    assert await check_error(worker_kubeconfig) == (
        "the kubeconfig's user may not list nodes (the cluster check); watch pods (the drift watch); patch "
        "deployments.apps (GPU services) in every namespace; grant them (RBAC), as "
        "infra/rbac/gpupaas-worker.yaml does"
    )


async def test_without_access_reviews_the_check_reports_the_refused_request(
    fake: FakeKube, worker_kubeconfig: str, tmp_path: Path
) -> None:
    fake.load_rbac(reduced_role(tmp_path, ("nodes", "list")))
    fake.inject_error("POST", "selfsubjectaccessreviews", 404, times=None)

    assert await check_error(worker_kubeconfig) == (
        f'listing the nodes (the driver needs list on nodes): nodes is forbidden: User "{WORKER}" cannot list '
        'resource "nodes" in API group "" at the cluster scope (HTTP 403 Forbidden); the kubeconfig\'s user '
        "needs this permission (RBAC)"
    )


# Through the worker ----------------------------------------------------------------------------


@pytest.fixture
async def worker_runtime(
    db: object, settings: Settings, fake: FakeKube, tmp_path: Path
) -> AsyncIterator[Any]:
    """A runtime whose KUBERNETES cluster is registered with the worker's kubeconfig."""
    kubeconfig = fake.kubeconfig(tmp_path / "worker.kubeconfig", token=worker_token(fake)).read_text()
    async with kubernetes_runtime(settings, kubeconfig, nodes=NODES, fake=fake) as (_, cluster):
        yield cluster


async def test_a_run_refused_by_rbac_is_failed_with_the_api_server_s_reason(
    worker_runtime: Any, fake: FakeKube
) -> None:
    cluster = worker_runtime
    assert cluster.status == ClusterStatus.READY, cluster.status_message
    project = await make_project("ml")
    version = await make_version(await make_template(project), resources=SECRET_LISTER, inputs=[], outputs=[])
    profile = await make_profile(
        project,
        version,
        cluster_id=str(cluster.id),
        resources=ResourcesIn(cpu="4", memory="16Gi", storage="10Gi", gpu_count=1, gpu_vendor=Vendor.NVIDIA),
    )
    instance = await make_instance(project, profile, name="peek", deploy=True)

    failed = await wait_status(instance.id, DeploymentStatus.FAILED, DeploymentStatus.SUCCESS)

    message = failed.status_message or ""
    assert failed.status == DeploymentStatus.FAILED, message
    assert (
        'applying role secret-lister: roles.rbac.authorization.k8s.io "secret-lister" is forbidden' in message
    )
    assert (
        f'user "{WORKER}"' in message
        and "is attempting to grant RBAC permissions not currently held" in message
    )
    assert '{APIGroups:[""], Resources:["secrets"], Verbs:["list"]}' in message
    assert message.endswith("the kubeconfig's user needs this permission (RBAC)")
    namespace = namespace_for("ml", "peek", str(instance.id))
    assert fake.get("rbac.authorization.k8s.io/v1", "Role", "secret-lister", namespace) is None
