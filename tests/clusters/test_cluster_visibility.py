"""Who sees what of a cluster: platform admins everything; a project's members the name, display
name and GPU models of the cluster their instances (and the profiles they see) run on, and nothing
else of it (its status message names the API server's address); project admins the same of every
cluster, to choose one for a profile."""

from __future__ import annotations

from typing import Any

from gpupaas.accounts.sharing import SharingMode
from gpupaas.catalog.service.profiles import set_profile_sharing
from gpupaas.core.actor import Role
from tests.clusters.test_clusters import KUBECONFIG
from tests.conftest import GraphQLClient
from tests.factories import Person, make_instance, make_profile, make_project, make_user, platform_actor

CREATE = """mutation($input: CreateClusterInput!) {
  createCluster(input: $input) { cluster { id statusMessage } userErrors { message } }
}"""
SHOWN = "id name displayName gpuModels"
INSTANCE = "query($id: ID!) { computeInstance(id: $id) { cluster { %s } } }"
PROFILE = "query($id: ID!) { computeProfile(id: $id) { cluster { %s } } }"
LIST = "{ clusters { %s } }"
ONE = "query($id: ID!) { cluster(id: $id) { %s } }"
# Every field of a cluster but those everyone who sees it sees.
DETAILS = (
    "driver",
    "isDefault",
    "inCluster",
    "hasKubeconfig",
    "accessAddress",
    "gpuResourceNames { vendor }",
    "templatePolicy",
    "gpuModelLabels { vendor }",
    "dedicatedNodeLabel",
    "dedicatedNodeTaint",
    "status",
    "statusMessage",
    "serverVersion",
    "nodes { name }",
    "missingGpuModels",
    "checkedAt",
    "createdAt",
    "updatedAt",
)


async def _register(gql: GraphQLClient, root: Person, name: str, **fields: Any) -> dict[str, Any]:
    created = (await gql.data(CREATE, {"input": {"name": name, **fields}}, token=root.token))["createCluster"]
    assert created["userErrors"] == []
    cluster: dict[str, Any] = created["cluster"]
    return cluster


async def _forbidden(gql: GraphQLClient, query: str, variables: dict[str, Any], person: Person) -> str:
    """The message of the errors the query gets (one per cluster it reads), each FORBIDDEN."""
    body = await gql(query, variables, token=person.token)
    assert body.get("errors"), body
    assert {error["extensions"]["code"] for error in body["errors"]} == {"FORBIDDEN"}, body
    (message,) = {str(error["message"]) for error in body["errors"]}
    return message


async def test_members_see_the_name_and_gpu_models_of_their_instances_cluster_only(
    db: object, gql: GraphQLClient
) -> None:
    # given a simulated cluster (checked: its nodes have GPU models) and an unreachable one, whose
    # status message names its API server's address, each with a profile and an instance of a member
    root = await make_user("root", platform_admin=True)
    alice, eve = await make_user("alice"), await make_user("eve")
    project = await make_project("ml", alice=Role.MEMBER)
    await make_project("other", eve=Role.MEMBER)
    gpus = await _register(gql, root, "gpus", driver="SIMULATED", displayName="GPU farm")
    lab = await _register(gql, root, "lab", driver="KUBERNETES", kubeconfig=KUBECONFIG)
    assert "127.0.0.1:9" in lab["statusMessage"]
    on_gpus = await make_profile(project, cluster_id=gpus["id"])
    on_lab = await make_profile(project, cluster_id=lab["id"])
    instance = await make_instance(project, on_gpus)
    lab_instance = await make_instance(project, on_lab)
    await set_profile_sharing(await platform_actor(), str(on_lab.id), SharingMode.ALL_PROJECTS, None)

    # then a member reads nothing of their instance's cluster but what everyone sees: each other
    # field is refused, naming the field
    for field in DETAILS:
        message = await _forbidden(gql, INSTANCE % field, {"id": str(lab_instance.id)}, alice)
        assert message.startswith(f"Only platform admins see a cluster's {field.split(' ')[0]};"), message
        assert "127.0.0.1" not in message
    # nor does another project, of the cluster of a profile shared with it
    await _forbidden(gql, PROFILE % "statusMessage", {"id": str(on_lab.id)}, eve)
    # nor the registered clusters
    for person in (alice, eve):
        message = await _forbidden(gql, LIST % "name", {}, person)
        assert message.startswith("Only platform admins and project admins see the registered clusters")
        await _forbidden(gql, ONE % "name", {"id": lab["id"]}, person)

    # what they see is its name, display name and GPU models
    seen = (await gql.data(INSTANCE % SHOWN, {"id": str(instance.id)}, token=alice.token))["computeInstance"]
    assert seen["cluster"] == {
        "id": gpus["id"],
        "name": "gpus",
        "displayName": "GPU farm",
        "gpuModels": ["H100 80GB", "MI300X"],
    }
    lab_seen = await gql.data(INSTANCE % SHOWN, {"id": str(lab_instance.id)}, token=alice.token)
    assert lab_seen["computeInstance"]["cluster"]["name"] == "lab"
    assert "127.0.0.1" not in str(lab_seen)
    # and so does the other project, of the cluster of the profile shared with it
    shared = (await gql.data(PROFILE % SHOWN, {"id": str(on_lab.id)}, token=eve.token))["computeProfile"]
    assert shared["cluster"]["name"] == "lab"


async def test_project_admins_list_clusters_to_choose_one_and_see_no_more(
    db: object, gql: GraphQLClient
) -> None:
    root = await make_user("root", platform_admin=True)
    boss = await make_user("boss")
    await make_project("ml", boss=Role.ADMIN)
    lab = await _register(gql, root, "lab", driver="KUBERNETES", kubeconfig=KUBECONFIG)

    # a project admin lists every cluster, as it may choose one for a profile
    listed = (await gql.data(LIST % SHOWN, token=boss.token))["clusters"]
    assert [(c["name"], c["gpuModels"]) for c in listed] == [("simulated", []), ("lab", [])]
    one = (await gql.data(ONE % "name", {"id": lab["id"]}, token=boss.token))["cluster"]
    assert one == {"name": "lab"}
    # and sees nothing else of them
    for field in ("statusMessage", "status", "nodes { name }", "accessAddress"):
        await _forbidden(gql, LIST % field, {}, boss)
    # while a platform admin sees everything
    full = (await gql.data(ONE % " ".join((SHOWN, *DETAILS)), {"id": lab["id"]}, token=root.token))["cluster"]
    assert full["status"] == "UNREACHABLE" and "127.0.0.1:9" in full["statusMessage"]
