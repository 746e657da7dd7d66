"""What the simulated API server fills in: uids, resourceVersions, node ports, workload status."""

from __future__ import annotations

import base64
import json

import pytest

from gpupaas.provisioning.models import SimulatedAllocation
from gpupaas.provisioning.plan import PermanentError
from gpupaas.provisioning.render.rendering import OutputDefinition
from tests.conftest import Database
from tests.provisioning.drivers.simulated.plans import Recorder, driver, make_plan, ns


async def test_the_applied_objects_carry_what_the_server_fills_in(db: Database) -> None:
    cluster = driver()
    plan = make_plan()

    await cluster.apply(plan)

    row = await SimulatedAllocation.get(instance_id=plan.instance_id)
    namespace, quota, limits = row.objects
    assert namespace["status"] == {"phase": "Active"}
    assert namespace["metadata"]["labels"]["kubernetes.io/metadata.name"] == ns("train-1")
    assert namespace["metadata"]["labels"]["gpupaas.io/instance"] == plan.instance_id
    assert quota["status"]["hard"]["requests.nvidia.com/gpu"] == 4
    assert quota["status"]["used"]["requests.nvidia.com/gpu"] == "0"
    uids = {obj["metadata"]["uid"] for obj in row.objects}
    assert len(uids) == 3
    assert sorted(int(obj["metadata"]["resourceVersion"]) for obj in row.objects) == [1, 2, 3]
    assert all(obj["metadata"]["creationTimestamp"].endswith("Z") for obj in row.objects)
    assert "status" not in limits
    # the plan itself is left as it was
    assert "uid" not in plan.manifests[0]["metadata"]


async def test_a_changed_object_gets_a_new_resource_version_and_keeps_its_uid(db: Database) -> None:
    cluster = driver()
    await cluster.apply(make_plan(cpu="8"))
    before = {obj["kind"]: obj["metadata"] for obj in (await SimulatedAllocation.get()).objects}

    await cluster.apply(make_plan(cpu="16"))

    after = {obj["kind"]: obj["metadata"] for obj in (await SimulatedAllocation.get()).objects}
    assert after["ResourceQuota"]["uid"] == before["ResourceQuota"]["uid"]
    assert after["ResourceQuota"]["resourceVersion"] == "4"
    assert after["ResourceQuota"]["generation"] == 2
    assert after["Namespace"] == before["Namespace"]


NODE_PORT = """
apiVersion: v1
kind: Namespace
metadata:
  name: "{{ instance.namespace }}"
---
apiVersion: v1
kind: Service
metadata:
  name: jupyter
  namespace: "{{ instance.namespace }}"
spec:
  type: NodePort
  selector:
    app: jupyter
  ports:
    - name: http
      port: 8888
"""


NODE_PORT_OUTPUTS = (
    OutputDefinition("port", None, "{{ objects.Service.spec.ports.0.nodePort }}"),
    OutputDefinition(
        "address", None, "{{ objects.Service.spec.clusterIP }}:{{ objects.Service.spec.ports.0.targetPort }}"
    ),
)


async def test_a_node_port_service_gets_a_stable_port_in_the_outputs(db: Database) -> None:
    # given a template with a NodePort Service and outputs reading it
    cluster = driver()
    first = make_plan(name="a", resources_text=NODE_PORT, outputs=NODE_PORT_OUTPUTS)
    second = make_plan(name="b", resources_text=NODE_PORT, outputs=NODE_PORT_OUTPUTS)

    # when two instances apply it, one of them twice
    outputs = (await cluster.apply(first)).outputs
    again = (await cluster.apply(first)).outputs
    other = (await cluster.apply(second)).outputs

    # then each gets a node port in range, kept across applies and unique in the cluster
    assert 30000 <= int(outputs["port"]) <= 32767
    assert again == outputs
    assert other["port"] != outputs["port"]
    assert outputs["address"].startswith("10.")
    assert outputs["address"].endswith(":8888")
    service = (await SimulatedAllocation.get(instance_id=first.instance_id)).objects[1]
    assert service["spec"]["ports"][0]["protocol"] == "TCP"
    assert (await SimulatedAllocation.get(instance_id=first.instance_id)).node_ports == [int(outputs["port"])]


async def test_a_node_port_taken_by_another_instance_is_refused(db: Database) -> None:
    cluster = driver()
    outputs = (
        await cluster.apply(make_plan(name="a", resources_text=NODE_PORT, outputs=NODE_PORT_OUTPUTS))
    ).outputs
    taken = NODE_PORT.replace("port: 8888", f"port: 8888\n      nodePort: {outputs['port']}")

    with pytest.raises(PermanentError) as error:
        await cluster.apply(make_plan(name="b", resources_text=taken, outputs=()))

    assert (
        str(error.value) == f"Service jupyter: spec.ports[0].nodePort: {outputs['port']} is already allocated"
    )


async def test_the_node_port_is_chosen_from_the_instance_id(db: Database) -> None:
    plan = make_plan(
        instance_id="3f1c2a9e-0000-4000-8000-000000000001",
        resources_text=NODE_PORT,
        outputs=NODE_PORT_OUTPUTS,
    )
    port = (await driver().apply(plan)).outputs["port"]
    await driver().destroy(plan)

    assert (await driver().apply(plan)).outputs["port"] == port


WORKLOAD = """
apiVersion: v1
kind: Namespace
metadata:
  name: "{{ instance.namespace }}"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
  namespace: "{{ instance.namespace }}"
spec:
  replicas: 2
  selector:
    matchLabels: {app: vllm}
  template:
    metadata:
      labels: {app: vllm}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:latest
---
apiVersion: v1
kind: Service
metadata:
  name: vllm
  namespace: "{{ instance.namespace }}"
spec:
  type: LoadBalancer
  selector: {app: vllm}
  ports:
    - port: 80
      targetPort: 8000
"""


async def test_workloads_report_ready_and_a_load_balancer_gets_an_address(db: Database) -> None:
    outputs = (
        OutputDefinition("ready", None, "{{ objects.Deployment.status.readyReplicas }}"),
        OutputDefinition("url", None, "http://{{ objects.Service.status.loadBalancer.ingress.0.ip }}"),
        OutputDefinition("nodePort", None, "{{ objects.Service.spec.ports.0.nodePort }}"),
    )
    progress = Recorder()

    values = (await driver().apply(make_plan(resources_text=WORKLOAD, outputs=outputs), progress)).outputs

    assert values["ready"] == "2"
    assert values["url"].startswith("http://198.51.100.")
    assert 30000 <= int(values["nodePort"]) <= 32767
    assert progress.messages[-1] == "Waiting for 3 objects to be ready"


SECRET = """
apiVersion: v1
kind: Namespace
metadata:
  name: "{{ instance.namespace }}"
---
apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: "{{ instance.namespace }}"
type: Opaque
data:
  user: YWRtaW4=
stringData:
  password: PASSWORD
"""


async def test_a_secret_is_kept_as_a_cluster_keeps_it_and_no_manifest_is_kept(db: Database) -> None:
    # given a template whose Secret is written with stringData (as templates put input values in)
    cluster = driver()
    plan = make_plan(resources_text=SECRET.replace("PASSWORD", "pl41n-s3cr3t"), outputs=())

    # when it is applied
    await cluster.apply(plan)

    # then the Secret is kept as the API server keeps one: stringData merged into data, base64,
    # and nothing of the row holds the value in plain text (no manifest as applied is kept)
    row = await SimulatedAllocation.get(instance_id=plan.instance_id)
    secret = next(obj for obj in row.objects if obj["kind"] == "Secret")
    assert "stringData" not in secret
    assert secret["data"] == {"user": "YWRtaW4=", "password": base64.b64encode(b"pl41n-s3cr3t").decode()}
    stored = await SimulatedAllocation.filter(instance_id=plan.instance_id).values()
    assert "pl41n-s3cr3t" not in json.dumps(stored, default=str)
    version = secret["metadata"]["resourceVersion"]

    # and applying it again changes nothing, while another value makes a new version of it
    await cluster.apply(plan)
    again = next(obj for obj in (await SimulatedAllocation.get()).objects if obj["kind"] == "Secret")
    assert again["metadata"]["resourceVersion"] == version
    await cluster.apply(make_plan(resources_text=SECRET.replace("PASSWORD", "0ther"), outputs=()))
    changed = next(obj for obj in (await SimulatedAllocation.get()).objects if obj["kind"] == "Secret")
    assert changed["metadata"]["resourceVersion"] != version
    assert changed["metadata"]["uid"] == secret["metadata"]["uid"]
    assert changed["data"]["password"] == base64.b64encode(b"0ther").decode()
