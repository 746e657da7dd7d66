"""Ports named as people name them ("SSH", "JUPYTER", "Web UI"), through the API and the whole
pipeline: the labels are kept, Kubernetes gets DNS-safe names, and the service runs."""

from __future__ import annotations

import kubernetes_validate
import pytest

from gpupaas.bootstrap import seed
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from gpupaas.service_instances.models import ServiceInstance
from gpupaas.service_instances.states import ServiceStatus
from tests.conftest import GraphQLClient
from tests.factories import make_instance, make_profile, make_project, make_user, record_plans
from tests.workers.conftest import Pipeline, eventually, wait_status

pytestmark = pytest.mark.parametrize("pipeline", ["memory"], indirect=True)

CREATE_TEMPLATE = """mutation($input: CreateInstanceTemplateInput!) {
  createInstanceTemplate(input: $input) {
    instanceTemplate { id ports { name kubernetesName port } }
    userErrors { field message code }
  }
}"""
UPDATE_TEMPLATE = """mutation($input: UpdateInstanceTemplateInput!) {
  updateInstanceTemplate(input: $input) { instanceTemplate { id } userErrors { field message code } }
}"""
CREATE_SERVICE = """mutation($input: CreateServiceInstanceInput!) {
  createServiceInstance(input: $input) {
    serviceInstance { id ports { name kubernetesName } }
    userErrors { field message code }
  }
}"""
ONE = "query($id: ID!) { serviceInstance(id: $id) { status statusMessage connect { port url } } }"

PORTS = [
    {"name": "SSH", "port": 22},
    {"name": "JUPYTER", "port": 8888, "accessParams": [{"key": "token", "value": "{{generated_token}}"}]},
    {"name": "Web UI", "port": 8080},
    {"name": "web-ui", "port": 8081},
]


async def test_labelled_ports_run_with_kubernetes_names(
    db: object, pipeline: Pipeline, gql: GraphQLClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    await seed()
    alice = await make_user("alice")
    project = await make_project("ml", alice=Role.ADMIN)
    plans = record_plans(pipeline.driver(), monkeypatch)
    box = await make_instance(project, await make_profile(project), name="box", deploy=True, by=alice)
    await wait_status(box.id, DeploymentStatus.SUCCESS)

    # given a template whose ports carry labels, two of them the same but for case and spaces
    template = {"project": "ml", "name": "workbench", "vendor": "NVIDIA", "image": "ubuntu:24.04"}
    created = (await gql.data(CREATE_TEMPLATE, {"input": {**template, "ports": PORTS}}, token=alice.token))[
        "createInstanceTemplate"
    ]
    assert created["userErrors"] == []
    ports = created["instanceTemplate"]["ports"]
    assert [(p["name"], p["kubernetesName"]) for p in ports] == [
        ("SSH", "ssh"),
        ("JUPYTER", "jupyter"),
        ("Web UI", "web-ui"),
        ("web-ui", "web-ui-2"),
    ]
    # labels that differ in case only are one name: refused at the second, with the first named
    duplicate = [{"name": "Jupyter", "port": 1}, {"name": "JUPYTER", "port": 2}]
    refused = (
        await gql.data(
            UPDATE_TEMPLATE,
            {"input": {"id": created["instanceTemplate"]["id"], "ports": duplicate}},
            token=alice.token,
        )
    )["updateInstanceTemplate"]
    assert [(e["field"], e["code"]) for e in refused["userErrors"]] == [
        (["input", "ports", "1", "name"], "INVALID")
    ]
    assert 'port "Jupyter" has it' in refused["userErrors"][0]["message"]

    # when a service runs it
    launched = (
        await gql.data(
            CREATE_SERVICE,
            {
                "input": {
                    "project": "ml",
                    "computeInstance": str(box.id),
                    "template": created["instanceTemplate"]["id"],
                    "name": "bench",
                }
            },
            token=alice.token,
        )
    )["createServiceInstance"]
    assert launched["userErrors"] == []
    service_id = launched["serviceInstance"]["id"]
    assert [p["kubernetesName"] for p in launched["serviceInstance"]["ports"]] == [
        "ssh",
        "jupyter",
        "web-ui",
        "web-ui-2",
    ]

    async def settled() -> bool:
        found = await ServiceInstance.get(id=service_id)
        return found.status in (ServiceStatus.RUNNING, ServiceStatus.FAILED)

    await eventually(settled, what="the service to run")
    shown = (await gql.data(ONE, {"id": service_id}, token=alice.token))["serviceInstance"]
    assert shown["status"] == "RUNNING", shown["statusMessage"]

    # then Kubernetes sees the derived names, every manifest validates, and the links keep the labels
    (plan,) = [plan for plan in plans if plan.instance_id == service_id]
    for manifest in plan.manifests:
        kubernetes_validate.validate(manifest, "1.37.0", strict=True)
    deployment = next(m for m in plan.manifests if m["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert [p["name"] for p in container["ports"]] == ["ssh", "jupyter", "web-ui", "web-ui-2"]
    service = next(m for m in plan.manifests if m["kind"] == "Service")
    assert [p["name"] for p in service["spec"]["ports"]] == ["ssh", "jupyter", "web-ui", "web-ui-2"]
    links = {link["port"]: link["url"] for link in shown["connect"]}
    # the SSH port has no link: the template declares no SSH access, so nothing is known to listen
    assert set(links) >= {"JUPYTER"} and "SSH" not in links
    stored = (await ServiceInstance.get(id=service_id)).node_ports
    assert set(stored) == {"ssh", "jupyter", "web-ui", "web-ui-2"}
    assert f":{stored['jupyter']}/?token=" in links["JUPYTER"]
