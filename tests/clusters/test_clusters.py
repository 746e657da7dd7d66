"""Clusters through the API: registered by platform admins, checked, kubeconfigs encrypted and
never returned, one default, named by profiles, and in the snapshot of instances."""

from __future__ import annotations

from typing import Any

import httpx

from gpupaas.app import create_app
from gpupaas.catalog.service.profiles import delete_profile
from gpupaas.clusters.models import Cluster
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from gpupaas.provisioning.inventory import DEFAULT_INVENTORY
from gpupaas.settings import Settings
from tests.conftest import GraphQLClient
from tests.factories import make_instance, make_profile, make_project, make_user, platform_actor

FIELDS = """id name displayName driver isDefault hasKubeconfig accessAddress status statusMessage serverVersion
  gpuResourceNames { vendor resourceName } nodes { name gpuResource gpuCount gpuModel }"""
CREATE = f"mutation($input: CreateClusterInput!) {{ createCluster(input: $input) {{ cluster {{ {FIELDS} }} userErrors {{ field message code }} }} }}"
UPDATE = f"mutation($input: UpdateClusterInput!) {{ updateCluster(input: $input) {{ cluster {{ {FIELDS} }} userErrors {{ field message code }} }} }}"
DELETE = "mutation($id: ID!) { deleteCluster(id: $id) { deletedId userErrors { field message code } } }"
LIST = f"{{ clusters {{ {FIELDS} }} }}"

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster: {server: "https://127.0.0.1:9", insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: super-secret-token}
contexts:
- name: lab
  context: {cluster: lab, user: admin}
current-context: lab
"""


async def test_the_embedded_default_is_a_simulated_cluster(db: object, gql: GraphQLClient) -> None:
    root = await make_user("root", platform_admin=True)
    clusters = (await gql.data(LIST, token=root.token))["clusters"]
    assert [(c["name"], c["driver"], c["isDefault"], c["status"]) for c in clusters] == [
        ("simulated", "SIMULATED", True, "READY")
    ]
    names = {g["vendor"]: g["resourceName"] for g in clusters[0]["gpuResourceNames"]}
    assert names == {
        "NVIDIA": "nvidia.com/gpu",
        "AMD": "amd.com/gpu",
        "INTEL": "gpu.intel.com/i915",
        "ASCEND": "huawei.com/Ascend910",
    }


async def test_a_fresh_app_shows_the_simulated_inventory_before_any_check(
    db: object, settings: Settings
) -> None:
    # given a simulated default cluster that was never checked (the test database's seed has no
    # drivers to check it with)
    root = await make_user("root", platform_admin=True)
    assert (await Cluster.get(name="simulated")).checked_at is None
    # when the app starts (its lifespan seeds with the process's drivers); nobody calls checkCluster
    app = create_app(settings, migrate=False)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            query = "{ clusters { name status checkedAt gpuModels nodes { name gpuCount gpuModel } } }"
            (cluster,) = (await GraphQLClient(http).data(query, token=root.token))["clusters"]
    # then its inventory is there: nodes, GPUs, GPU models and when it was looked at
    assert cluster["status"] == "READY"
    assert cluster["checkedAt"] is not None
    assert [(n["name"], n["gpuCount"], n["gpuModel"]) for n in cluster["nodes"]] == [
        (node.name, node.gpu_count, node.gpu_model) for node in DEFAULT_INVENTORY.nodes
    ]
    assert cluster["gpuModels"] == ["H100 80GB", "MI300X"]


async def test_register_a_simulated_cluster_and_check_it(db: object, gql: GraphQLClient) -> None:
    root = await make_user("root", platform_admin=True)
    result = (
        await gql.data(
            CREATE,
            {
                "input": {
                    "name": "lab",
                    "driver": "SIMULATED",
                    "accessAddress": "gpu.example.com",
                    "isDefault": True,
                }
            },
            token=root.token,
        )
    )["createCluster"]
    assert result["userErrors"] == []
    cluster = result["cluster"]
    assert cluster["status"] == "READY" and cluster["isDefault"] is True
    assert {
        "name": "h100-0",
        "gpuResource": "nvidia.com/gpu",
        "gpuCount": 8,
        "gpuModel": "H100 80GB",
    } in cluster["nodes"]
    # only one default
    defaults = [c["name"] for c in (await gql.data(LIST, token=root.token))["clusters"] if c["isDefault"]]
    assert defaults == ["lab"]


async def test_kubeconfigs_are_checked_encrypted_and_never_returned(db: object, gql: GraphQLClient) -> None:
    root = await make_user("root", platform_admin=True)
    bad = (
        await gql.data(
            CREATE,
            {"input": {"name": "k", "driver": "KUBERNETES", "kubeconfig": "just: text"}},
            token=root.token,
        )
    )["createCluster"]
    assert bad["userErrors"][0]["field"] == ["input", "kubeconfig"]
    assert "is not a kubeconfig" in bad["userErrors"][0]["message"]
    missing = (await gql.data(CREATE, {"input": {"name": "k", "driver": "KUBERNETES"}}, token=root.token))[
        "createCluster"
    ]
    assert missing["userErrors"][0]["code"] == "REQUIRED"
    wrong_context = (
        await gql.data(
            CREATE,
            {"input": {"name": "k", "driver": "KUBERNETES", "kubeconfig": KUBECONFIG, "context": "nope"}},
            token=root.token,
        )
    )["createCluster"]
    assert 'has no context "nope"' in wrong_context["userErrors"][0]["message"]

    created = (
        await gql.data(
            CREATE,
            {"input": {"name": "k", "driver": "KUBERNETES", "kubeconfig": KUBECONFIG}},
            token=root.token,
        )
    )["createCluster"]
    assert created["userErrors"] == []
    cluster = created["cluster"]
    assert cluster["hasKubeconfig"] is True
    # nothing listens on 127.0.0.1:9: the check says so, and the registration stands
    assert cluster["status"] == "UNREACHABLE" and cluster["statusMessage"]
    stored = await Cluster.get(name="k")
    assert stored.kubeconfig_encrypted and "super-secret-token" not in stored.kubeconfig_encrypted
    body = await gql(LIST, token=root.token)
    assert "super-secret-token" not in str(body)


async def test_names_drivers_and_the_default_cannot_be_changed_away(db: object, gql: GraphQLClient) -> None:
    root = await make_user("root", platform_admin=True)
    default = await Cluster.get(is_default=True)
    result = (
        await gql.data(
            UPDATE,
            {"input": {"id": str(default.id), "name": "other", "driver": "KUBERNETES", "isDefault": False}},
            token=root.token,
        )
    )["updateCluster"]
    assert {tuple(e["field"]): e["code"] for e in result["userErrors"]} == {
        ("input", "name"): "IMMUTABLE",
        ("input", "driver"): "IMMUTABLE",
        ("input", "isDefault"): "INVALID",
    }
    refused = (await gql.data(DELETE, {"id": str(default.id)}, token=root.token))["deleteCluster"]
    assert refused["userErrors"][0]["code"] == "INVALID_STATE"


async def test_profiles_name_a_cluster_and_instances_keep_it(db: object, gql: GraphQLClient) -> None:
    root = await make_user("root", platform_admin=True)
    lab = (await gql.data(CREATE, {"input": {"name": "lab", "driver": "SIMULATED"}}, token=root.token))[
        "createCluster"
    ]["cluster"]
    project = await make_project("ml")
    profile = await make_profile(project, cluster_id=lab["id"])
    shown = await gql.data(
        "query($id: ID!) { computeProfile(id: $id) { cluster { name } } }",
        {"id": str(profile.id)},
        token=root.token,
    )
    assert shown["computeProfile"]["cluster"] == {"name": "lab"}
    instance = await make_instance(project, profile)
    assert instance.profile_snapshot.cluster_id == lab["id"]
    # a cluster with profiles on it cannot be deleted
    refused = (await gql.data(DELETE, {"id": lab["id"]}, token=root.token))["deleteCluster"]
    assert (
        refused["userErrors"][0]["code"] == "INVALID_STATE"
        and profile.name in refused["userErrors"][0]["message"]
    )
    # a profile without a cluster snapshots the default
    plain = await make_profile(project)
    assert (await make_instance(project, plain)).profile_snapshot.cluster_id == str(
        (await Cluster.get(is_default=True)).id
    )
    bad = await gql.data(
        'mutation($id: ID!) { updateComputeProfile(input: {id: $id, cluster: "nope"}) { userErrors { field code } } }',
        {"id": str(profile.id)},
        token=root.token,
    )
    assert bad["updateComputeProfile"]["userErrors"] == [{"field": ["input", "cluster"], "code": "NOT_FOUND"}]


async def test_a_cluster_with_deployed_instances_cannot_be_deleted(db: object, gql: GraphQLClient) -> None:
    root = await make_user("root", platform_admin=True)
    lab = (await gql.data(CREATE, {"input": {"name": "lab", "driver": "SIMULATED"}}, token=root.token))[
        "createCluster"
    ]["cluster"]
    project = await make_project("ml")
    profile = await make_profile(project, cluster_id=lab["id"])
    instance = await make_instance(project, profile, name="nb")
    await ComputeInstance.filter(id=instance.id).update(status=DeploymentStatus.SUCCESS)
    await delete_profile(await platform_actor(), str(profile.id))
    refused = (await gql.data(DELETE, {"id": lab["id"]}, token=root.token))["deleteCluster"]
    assert refused["userErrors"][0]["code"] == "INVALID_STATE" and "nb" in refused["userErrors"][0]["message"]
    await ComputeInstance.filter(id=instance.id).update(status=DeploymentStatus.NOT_DEPLOYED)
    assert (await gql.data(DELETE, {"id": lab["id"]}, token=root.token))["deleteCluster"]["deletedId"] == lab[
        "id"
    ]


async def test_project_admins_cannot_register_clusters(db: object, gql: GraphQLClient) -> None:
    admin = await make_user("alice")
    await make_project("ml", alice=Role.ADMIN)
    body: dict[str, Any] = await gql(
        CREATE, {"input": {"name": "x", "driver": "SIMULATED"}}, token=admin.token
    )
    assert body["errors"][0]["extensions"]["code"] == "FORBIDDEN"
