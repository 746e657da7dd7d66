"""The Kubernetes objects of a service instance: valid for every vendor, and what each one holds."""

from __future__ import annotations

import base64
import dataclasses
import re
from typing import Any

import pytest

from gpupaas.instance_templates.spec import Port, PullPolicy, ServiceSpec, Storage
from gpupaas.instance_templates.spec import Vendor as GpuVendor
from gpupaas.provisioning.plan import GPU_RESOURCE_NAMES
from gpupaas.provisioning.render.schema import validate_manifest
from gpupaas.service_instances.podspec import (
    build_objects,
    build_service,
    build_workload,
    build_workspace_volume,
    service_name,
)

SERVICE_ID = "5d0c7f7e-0000-4000-8000-00000000000a"
COMPUTE_ID = "3f1c2a9e-0000-4000-8000-000000000001"

SPEC = ServiceSpec(
    vendor="NVIDIA",
    image="nvcr.io/nvidia/pytorch:25.01-py3",
    command=("jupyter", "lab", "--ServerApp.token=abc"),
    container_disk="20Gi",
    mount_path="/workspace",
    ports=(
        Port(name="jupyter", port=8888, access_params=(("token", "abc"),)),
        Port(name="metrics", port=9100, protocol="UDP"),
        Port(name="sctp", port=9200, protocol="SCTP"),
    ),
    env=(("HF_HOME", "/workspace/hf"),),
)


def identity(**overrides: Any) -> dict[str, Any]:
    return {
        "name": "notebook-1",
        "namespace": "team-a-train-1",
        "instance_id": SERVICE_ID,
        "compute_instance_id": COMPUTE_ID,
        **overrides,
    }


def workload(spec: ServiceSpec = SPEC, **overrides: Any) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "gpu_count": 0 if spec.vendor == "CPU" else 2,
        "gpu_resource_name": GPU_RESOURCE_NAMES[spec.vendor],
        **identity(),
        **overrides,
    }
    return build_workload(spec=spec, **arguments)


def container(deployment: dict[str, Any]) -> dict[str, Any]:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return dict(containers[0])


@pytest.mark.parametrize(
    ("vendor", "resource"),
    [
        ("NVIDIA", "nvidia.com/gpu"),
        ("AMD", "amd.com/gpu"),
        ("INTEL", "gpu.intel.com/i915"),
        ("ASCEND", "huawei.com/Ascend910"),
    ],
)
def test_a_gpu_vendor_gets_its_extended_resource_in_requests_and_limits(
    vendor: GpuVendor, resource: str
) -> None:
    # given a spec of a GPU vendor / when its objects are built with 2 GPUs
    spec = dataclasses.replace(SPEC, vendor=vendor)
    objects = build_objects(spec=spec, **identity(), gpu_count=2, gpu_resource_name=resource)

    # then the Kubernetes API would take every object
    assert [obj["kind"] for obj in objects] == ["PersistentVolumeClaim", "Deployment", "Service"]
    for obj in objects:
        assert validate_manifest(obj) == [], obj["kind"]
    # and the container asks for exactly the GPUs, in requests and limits alike
    resources = container(objects[1])["resources"]
    assert resources["requests"] == resources["limits"] == {"ephemeral-storage": "20Gi", resource: "2"}
    # and it does not hide the GPUs it was given
    assert all(env["name"] != "NVIDIA_VISIBLE_DEVICES" for env in container(objects[1]).get("env", []))


def test_a_cpu_service_requests_no_gpu_and_sees_none() -> None:
    # given a CPU spec / when its objects are built
    spec = dataclasses.replace(SPEC, vendor="CPU", image="ubuntu:24.04")
    objects = build_objects(spec=spec, **identity(), gpu_count=0, gpu_resource_name=GPU_RESOURCE_NAMES["CPU"])

    # then they are valid, no GPU resource is named, and the NVIDIA runtime would expose no GPU
    for obj in objects:
        assert validate_manifest(obj) == [], obj["kind"]
    main = container(objects[1])
    assert main["resources"]["limits"] == {"ephemeral-storage": "20Gi"}
    assert main["env"][-1] == {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}


def test_a_spec_that_sets_nvidia_visible_devices_keeps_its_value() -> None:
    spec = dataclasses.replace(SPEC, vendor="CPU", env=(("NVIDIA_VISIBLE_DEVICES", "none"),))

    assert container(workload(spec))["env"] == [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "none"}]


@pytest.mark.parametrize(
    ("policy", "expected"), [("ALWAYS", "Always"), ("IF_NOT_PRESENT", "IfNotPresent"), ("NEVER", "Never")]
)
def test_the_pull_policy_takes_kubernetes_spelling(policy: PullPolicy, expected: str) -> None:
    assert (
        container(workload(dataclasses.replace(SPEC, image_pull_policy=policy)))["imagePullPolicy"]
        == expected
    )


def test_the_container_runs_the_spec() -> None:
    # given the spec / when the workload is built
    deployment = workload()
    main = container(deployment)

    # then the container has its image, command in exec form, env, ports and workspace
    assert main["name"] == "main"
    assert main["image"] == SPEC.image
    assert main["command"] == ["jupyter", "lab", "--ServerApp.token=abc"]
    assert "args" not in main
    assert main["workingDir"] == "/workspace"
    assert main["env"] == [{"name": "HF_HOME", "value": "/workspace/hf"}]
    assert main["ports"] == [
        {"name": "jupyter", "containerPort": 8888, "protocol": "TCP"},
        {"name": "metrics", "containerPort": 9100, "protocol": "UDP"},
        {"name": "sctp", "containerPort": 9200, "protocol": "SCTP"},
    ]
    assert main["volumeMounts"] == [
        {"name": "workspace", "mountPath": "/workspace"},
        {"name": "dshm", "mountPath": "/dev/shm"},
    ]
    # and the pod mounts the workspace claim and a memory-backed /dev/shm
    pod = deployment["spec"]["template"]["spec"]
    assert pod["volumes"] == [
        {"name": "workspace", "persistentVolumeClaim": {"claimName": "notebook-1-workspace"}},
        {"name": "dshm", "emptyDir": {"medium": "Memory"}},
    ]
    assert pod["enableServiceLinks"] is False
    assert pod["automountServiceAccountToken"] is False
    # and it is ready once the first TCP port answers
    assert main["readinessProbe"]["tcpSocket"] == {"port": 8888}


def test_an_empty_command_keeps_the_images_entrypoint() -> None:
    main = container(workload(dataclasses.replace(SPEC, command=(), ports=(), env=())))

    assert "command" not in main
    assert "readinessProbe" not in main
    assert "ports" not in main
    assert "env" not in main


def test_no_readiness_probe_without_a_tcp_port() -> None:
    spec = dataclasses.replace(SPEC, ports=(Port(name="dns", port=53, protocol="UDP"),))

    assert "readinessProbe" not in container(workload(spec))


def test_the_deployment_runs_one_replica_and_recreates_it() -> None:
    # given a running instance and a stopped one
    running, stopped = workload(), workload(replicas=0)

    # then one replica, replaced only after the old pod let go of the GPUs
    assert running["apiVersion"] == "apps/v1"
    assert running["kind"] == "Deployment"
    assert running["spec"]["replicas"] == 1
    assert running["spec"]["strategy"] == {"type": "Recreate"}
    assert running["spec"]["progressDeadlineSeconds"] == 3600
    assert running["spec"]["selector"] == {"matchLabels": {"gpupaas.io/service": SERVICE_ID}}
    assert stopped["spec"]["replicas"] == 0
    assert validate_manifest(stopped) == []


def test_cpu_and_memory_are_requested_and_limited_alike() -> None:
    resources = container(workload(cpu="8", memory="64Gi"))["resources"]

    assert resources["requests"] == resources["limits"]
    assert resources["limits"]["cpu"] == "8"
    assert resources["limits"]["memory"] == "64Gi"


def test_every_object_carries_the_identity_labels() -> None:
    # given extra labels that try to override an identity label
    labels = {"team": "vision", "app.kubernetes.io/managed-by": "someone-else"}

    # when the objects are built
    objects = build_objects(
        spec=SPEC, **identity(), gpu_count=1, gpu_resource_name="nvidia.com/gpu", labels=labels
    )

    # then every object and the pod template carry the identity labels, and the extra ones
    expected = {
        "team": "vision",
        "app.kubernetes.io/managed-by": "gpupaas",
        "gpupaas.io/compute-instance": COMPUTE_ID,
        "gpupaas.io/service": SERVICE_ID,
        "app.kubernetes.io/name": "notebook-1",
    }
    for obj in objects:
        assert obj["metadata"]["labels"] == expected
        assert obj["metadata"]["namespace"] == "team-a-train-1"
    assert objects[1]["spec"]["template"]["metadata"]["labels"] == expected


def test_the_service_exposes_every_port_with_its_protocol() -> None:
    # given the spec / when its Service is built
    service = build_service(spec=SPEC, **identity())

    # then it selects the instance's pod and exposes its ports on node ports
    assert service is not None
    assert service["metadata"]["name"] == "notebook-1"
    assert service["spec"]["type"] == "NodePort"
    assert service["spec"]["selector"] == {"gpupaas.io/service": SERVICE_ID}
    assert service["spec"]["ports"] == [
        {"name": "jupyter", "port": 8888, "targetPort": 8888, "protocol": "TCP"},
        {"name": "metrics", "port": 9100, "targetPort": 9100, "protocol": "UDP"},
        {"name": "sctp", "port": 9200, "targetPort": 9200, "protocol": "SCTP"},
    ]


def test_a_cluster_ip_service_on_request() -> None:
    service = build_service(spec=SPEC, **identity(), service_type="ClusterIP")

    assert service is not None
    assert service["spec"]["type"] == "ClusterIP"
    assert validate_manifest(service) == []


def test_no_service_without_ports() -> None:
    spec = dataclasses.replace(SPEC, ports=())

    assert build_service(spec=spec, **identity()) is None
    assert [
        obj["kind"]
        for obj in build_objects(spec=spec, **identity(), gpu_count=1, gpu_resource_name="nvidia.com/gpu")
    ] == [
        "PersistentVolumeClaim",
        "Deployment",
    ]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("notebook", "notebook"),
        ("1-notebook", "svc-1-notebook"),
        ("1" + "a" * 58, "svc-1" + "a" * 58),
    ],
)
def test_a_service_name_starts_with_a_letter(name: str, expected: str) -> None:
    assert service_name(name) == expected


def test_a_long_name_starting_with_a_digit_makes_a_valid_service_name() -> None:
    # given a 63-character name starting with a digit
    name = "9" + "a" * 62

    # when its Service is built
    service = build_service(spec=SPEC, **identity(name=name))

    # then its name is a valid Service name, unique by a hash of the name
    assert service is not None
    assert len(service["metadata"]["name"]) <= 63
    assert service["metadata"]["name"] != service_name("9" + "a" * 61 + "b")
    assert validate_manifest(service) == []


def test_the_workspace_is_a_claim_of_its_own() -> None:
    # given a size and a storage class / when the workspace is built
    claim = build_workspace_volume(**identity(), size="100Gi", storage_class="fast-ssd")

    # then it is a ReadWriteOnce claim of that size, named after the instance
    assert claim["kind"] == "PersistentVolumeClaim"
    assert claim["metadata"]["name"] == "notebook-1-workspace"
    assert claim["spec"] == {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "100Gi"}},
        "storageClassName": "fast-ssd",
    }
    assert validate_manifest(claim) == []
    # and without a storage class the cluster's default is used
    assert "storageClassName" not in build_workspace_volume(**identity())["spec"]


REFUSED: list[tuple[str, dict[str, Any], str]] = [
    (
        "an unresolved placeholder",
        {"spec": dataclasses.replace(SPEC, command=("{{generated_token}}",))},
        "resolve it first",
    ),
    (
        "GPUs for a CPU service",
        {"spec": dataclasses.replace(SPEC, vendor="CPU"), "gpu_count": 1},
        "a CPU service cannot request GPUs",
    ),
    ("a negative GPU count", {"gpu_count": -1}, "gpu_count must be a whole number of GPUs"),
    ("a GPU count that is a boolean", {"gpu_count": True}, "gpu_count must be a whole number of GPUs"),
    ("a bad resource name", {"gpu_resource_name": "nvidia gpu"}, "is not a resource name"),
    ("two replicas", {"replicas": 2}, "replicas must be 1 (running) or 0 (stopped)"),
    ("a bad name", {"name": "Notebook"}, "name 'Notebook' must be a DNS-1123 label"),
    ("a bad namespace", {"namespace": ""}, "namespace '' must not be empty"),
    ("an empty instance id", {"instance_id": ""}, "instance_id '' must not be empty"),
    (
        "a compute instance id that is no label value",
        {"compute_instance_id": "a/b"},
        "compute_instance_id 'a/b' must be empty or consist of",
    ),
    ("a bad cpu", {"cpu": "8Gi"}, "cpu '8Gi' must be a number of CPU cores"),
    ("a bad memory", {"memory": "64GB"}, "memory '64GB' must be an amount of bytes"),
]


@pytest.mark.parametrize(("case", "overrides", "message"), REFUSED, ids=[case[0] for case in REFUSED])
def test_arguments_that_cannot_make_a_valid_workload_are_refused(
    case: str, overrides: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        workload(**overrides)


def test_a_bad_workspace_size_is_refused() -> None:
    with pytest.raises(ValueError, match="workspace size '0' must be greater than zero"):
        build_workspace_volume(**identity(), size="0")


def test_a_bad_service_type_is_refused() -> None:
    with pytest.raises(ValueError, match="service_type must be ClusterIP or NodePort"):
        build_service(spec=SPEC, **identity(), service_type="LoadBalancer")  # type: ignore[arg-type]


def test_generated_values_reach_the_pod_through_a_secret_of_their_own() -> None:
    # given a spec whose command, env and access params use {{generated_token}}, and its value
    spec = dataclasses.replace(
        SPEC,
        command=("jupyter", "lab", "--ServerApp.token={{generated_token}}"),
        env=(("JUPYTER_TOKEN", "{{ generated_token }}"), ("HF_HOME", "/workspace/hf")),
        ports=(Port(name="jupyter", port=8888, access_params=(("token", "{{generated_token}}"),)),),
    )
    token = "f" * 32
    # when its objects are built
    claim, secret, deployment, service = build_objects(
        spec=spec,
        gpu_count=1,
        gpu_resource_name="nvidia.com/gpu",
        generated={"generated_token": token},
        **identity(),
    )
    # then a Secret holds the value (as data: what the API server keeps of a Secret) and the pod
    # reads it from there: the Deployment holds a reference, never the token
    assert (claim["kind"], secret["kind"], deployment["kind"], service["kind"]) == (
        "PersistentVolumeClaim",
        "Secret",
        "Deployment",
        "Service",
    )
    assert secret["metadata"]["name"] == "notebook-1-generated"
    assert secret["metadata"]["labels"]["gpupaas.io/service"] == SERVICE_ID
    assert secret["data"] == {"generated_token": base64.b64encode(token.encode()).decode()}
    assert token not in str(deployment)
    main = container(deployment)
    assert main["command"] == ["jupyter", "lab", "--ServerApp.token=$(GPUPAAS_GENERATED_TOKEN)"]
    # the value is defined first: the kubelet expands $(NAME) only from variables defined before
    assert main["env"][:3] == [
        {
            "name": "GPUPAAS_GENERATED_TOKEN",
            "valueFrom": {"secretKeyRef": {"name": "notebook-1-generated", "key": "generated_token"}},
        },
        {"name": "JUPYTER_TOKEN", "value": "$(GPUPAAS_GENERATED_TOKEN)"},
        {"name": "HF_HOME", "value": "/workspace/hf"},
    ]
    for manifest in (secret, deployment):
        assert validate_manifest(manifest) == []

    # a spec whose pod uses no placeholder (one in an access param only) gets no Secret
    links_only = dataclasses.replace(spec, command=("jupyter", "lab"), env=())
    kinds = [
        obj["kind"]
        for obj in build_objects(
            spec=links_only,
            gpu_count=1,
            gpu_resource_name="nvidia.com/gpu",
            generated={"generated_token": token},
            **identity(),
        )
    ]
    assert kinds == ["PersistentVolumeClaim", "Deployment", "Service"]
    # and an env variable of the spec cannot take the name gpupaas gives a generated value
    clashing = dataclasses.replace(spec, env=(("GPUPAAS_GENERATED_TOKEN", "mine"),))
    with pytest.raises(
        ValueError, match="env GPUPAAS_GENERATED_TOKEN is where gpupaas puts a generated value"
    ):
        workload(clashing, generated={"generated_token": token})


# ---------------------------------------------------------------------------------------- storage modes


def objects(spec: ServiceSpec, **overrides: Any) -> dict[str, dict[str, Any]]:
    built = build_objects(
        spec=spec, gpu_count=1, gpu_resource_name="nvidia.com/gpu", **identity(), **overrides
    )
    for obj in built:
        assert validate_manifest(obj) == [], obj
    return {obj["kind"]: obj for obj in built}


def workspace_volume(deployment: dict[str, Any]) -> dict[str, Any]:
    volumes = deployment["spec"]["template"]["spec"]["volumes"]
    return next(volume for volume in volumes if volume["name"] == "workspace")


def test_a_new_volume_is_a_claim_of_its_size_released_by_default() -> None:
    built = objects(dataclasses.replace(SPEC, storage=Storage(size="75Gi")))
    claim = built["PersistentVolumeClaim"]
    assert claim["spec"]["resources"]["requests"]["storage"] == "75Gi"
    assert "annotations" not in claim["metadata"]
    assert workspace_volume(built["Deployment"]) == {
        "name": "workspace",
        "persistentVolumeClaim": {"claimName": "notebook-1-workspace"},
    }


def test_a_kept_volume_is_annotated_for_the_drivers() -> None:
    built = objects(dataclasses.replace(SPEC, storage=Storage(reclaim="KEEP")), workspace_size="40Gi")
    claim = built["PersistentVolumeClaim"]
    assert claim["metadata"]["annotations"] == {"gpupaas.io/reclaim": "Keep"}
    assert claim["spec"]["resources"]["requests"]["storage"] == "40Gi"  # the share when no size


def test_an_ephemeral_workspace_is_an_emptydir_counted_as_ephemeral_storage() -> None:
    built = objects(dataclasses.replace(SPEC, storage=Storage(mode="EPHEMERAL", size="10Gi")))
    assert "PersistentVolumeClaim" not in built
    assert workspace_volume(built["Deployment"]) == {"name": "workspace", "emptyDir": {"sizeLimit": "10Gi"}}
    resources = container(built["Deployment"])["resources"]
    # the container disk (20Gi) and the workspace (10Gi): what the quota and the scheduler count
    assert resources["requests"]["ephemeral-storage"] == "30Gi"
    assert resources["limits"]["ephemeral-storage"] == "30Gi"
    unsized = objects(dataclasses.replace(SPEC, storage=Storage(mode="EPHEMERAL")))
    assert workspace_volume(unsized["Deployment"]) == {"name": "workspace", "emptyDir": {}}
    assert container(unsized["Deployment"])["resources"]["requests"]["ephemeral-storage"] == "20Gi"


def test_an_existing_claim_is_mounted_and_not_made() -> None:
    built = objects(dataclasses.replace(SPEC, storage=Storage(mode="EXISTING_CLAIM", claim_name="datasets")))
    assert "PersistentVolumeClaim" not in built
    assert workspace_volume(built["Deployment"]) == {
        "name": "workspace",
        "persistentVolumeClaim": {"claimName": "datasets"},
    }


def test_cpu_and_memory_requests_and_limits_may_differ() -> None:
    deployment = workload(cpu="2", cpu_limit="4", memory="8Gi", memory_limit="16Gi")
    resources = container(deployment)["resources"]
    assert resources["requests"]["cpu"] == "2" and resources["limits"]["cpu"] == "4"
    assert resources["requests"]["memory"] == "8Gi" and resources["limits"]["memory"] == "16Gi"
    # a limit alone is the request too, as the API server defaults it
    alone = container(workload(cpu_limit="3"))["resources"]
    assert alone["requests"]["cpu"] == "3" and alone["limits"]["cpu"] == "3"
    assert validate_manifest(deployment) == []
