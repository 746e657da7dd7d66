"""SSH access through the kubernetes driver, against the fake Kubernetes API server: the service's
manifests (init container, wrapped command, `<name>-ssh` Secret) are accepted and strictly valid,
the Secret holds the keys, and new keys update the Secret in place without a new pod."""

from __future__ import annotations

import base64
from typing import Any

import kubernetes_validate

from gpupaas.instance_templates.builtins import builtin_instance_template
from gpupaas.provisioning.drivers.base import Observed, Phase
from gpupaas.provisioning.drivers.kubernetes.driver import KubernetesDriver
from gpupaas.provisioning.plan import Plan
from gpupaas.service_instances.plan import build_service_plan
from gpupaas.service_instances.podspec import SshSetup
from gpupaas.service_instances.ssh_material import new_host_key
from tests.fake_kube import FakeKube
from tests.service_instances.test_service_kubernetes import (  # noqa: F401 - the fixtures
    COMPUTE_ID,
    COMPUTE_NAME,
    COMPUTE_RESOURCES,
    NAMESPACE,
    PROJECT,
    SERVICE_ID,
    compute,
    driver,
    fake,
    kubeconfig,
    only_pod,
)
from tests.ssh_keys.keygen import key_pair

IMAGE = "registry.example.com/gpupaas/ssh-tools:2025.88-1"
HOST_KEY = new_host_key()


def shell_plan(authorized_keys: str) -> Plan:
    builtin = builtin_instance_template("ubuntu")
    assert builtin is not None and builtin.spec.ssh is not None
    return build_service_plan(
        service_id=SERVICE_ID,
        name="shell",
        spec=builtin.spec,
        gpu_count=0,
        compute_id=COMPUTE_ID,
        compute_name=COMPUTE_NAME,
        project=PROJECT,
        compute_resources=COMPUTE_RESOURCES,
        profile_name="h100",
        ssh=SshSetup(IMAGE, authorized_keys, HOST_KEY),
    )


def secret_data(kube: FakeKube) -> dict[str, str]:
    secret = kube.get("v1", "Secret", "shell-ssh", NAMESPACE)
    assert secret is not None
    data: dict[str, Any] = secret["data"]
    return {key: base64.b64decode(value).decode() for key, value in data.items()}


async def test_ssh_manifests_are_accepted_and_new_keys_reach_the_pod_without_a_restart(
    fake: FakeKube,  # noqa: F811
    driver: KubernetesDriver,  # noqa: F811
    compute: Plan,  # noqa: F811
) -> None:
    # given the Ubuntu shell with its owner's key
    alice = key_pair(comment="alice@laptop")
    plan = shell_plan(alice.public_line + "\n")
    for manifest in plan.manifests:
        kubernetes_validate.validate(manifest, "1.37.0", strict=True)

    # when the kubernetes driver applies it
    await driver.apply(plan)

    # then the API server took every object, the pod runs with the init container and the Secret
    assert await driver.observe(plan) == Observed(Phase.READY)
    assert secret_data(fake) == {
        "authorized_keys": alice.public_line + "\n",
        "ssh_host_ed25519_key": HOST_KEY,
    }
    pod = only_pod(fake)
    assert [c["image"] for c in pod["spec"]["initContainers"]] == [IMAGE]
    assert pod["spec"]["containers"][0]["command"][:3] == ["/gpupaas-ssh/bin/busybox", "sh", "-c"]
    volumes = {volume["name"]: volume for volume in pod["spec"]["volumes"]}
    assert volumes["gpupaas-ssh-keys"]["secret"]["secretName"] == "shell-ssh"
    deployment = fake.get("apps/v1", "Deployment", "shell", NAMESPACE)
    assert deployment is not None
    generation = deployment["metadata"]["generation"]

    # when a key is added (an APPLY_SSH_KEYS run: the same plan with the new authorized_keys)
    ci = key_pair(comment="ci")
    await driver.apply(shell_plan(alice.public_line + "\n" + ci.public_line + "\n"))

    # then the Secret holds both keys, and the pod is the same pod: no rollout
    assert secret_data(fake)["authorized_keys"] == f"{alice.public_line}\n{ci.public_line}\n"
    assert secret_data(fake)["ssh_host_ed25519_key"] == HOST_KEY  # the host key is kept
    assert only_pod(fake)["metadata"]["uid"] == pod["metadata"]["uid"]
    after = fake.get("apps/v1", "Deployment", "shell", NAMESPACE)
    assert after is not None and after["metadata"]["generation"] == generation
