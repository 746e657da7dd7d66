"""Capacity at a glance through the API: GPUs per model of a cluster (capacity from its last check,
allocated to deployed compute instances, free) and who holds them, as each caller may see it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import httpx
import pytest

from gpupaas.app import create_app
from gpupaas.core.actor import Role
from gpupaas.settings import Settings
from tests.conftest import GraphQLClient, QueryCounter
from tests.factories import make_instance, make_project, make_user
from tests.quotas.test_quotas import DEPLOY, gpu_profile

CREATE_CLUSTER = """mutation($input: CreateClusterInput!) {
  createCluster(input: $input) { cluster { id } userErrors { message } } }"""
CAPACITY = """query($project: String, $cluster: ID) { gpuCapacity(project: $project, cluster: $cluster) {
  clusterName models { vendor model capacity allocated free others
  holders { project owner instanceName gpus } } } }"""


def by_model(cluster: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f"{m['vendor']} {m['model']}": m for m in cluster["models"]}


async def test_capacity_per_model_and_its_holders_as_each_caller_sees_them(
    db: object, gql: GraphQLClient, count_queries: QueryCounter
) -> None:
    root = await make_user("root", platform_admin=True)
    bob, eve, carol = await make_user("bob"), await make_user("eve"), await make_user("carol")
    ml = await make_project("ml", bob=Role.MEMBER)
    other = await make_project("other", eve=Role.MEMBER)
    await make_project("third", carol=Role.MEMBER)
    created = await gql.data(
        CREATE_CLUSTER, {"input": {"name": "farm", "driver": "SIMULATED"}}, token=root.token
    )
    farm = created["createCluster"]["cluster"]["id"]
    # the simulated inventory: 2 nodes x 8 "H100 80GB", 1 x 4 "MI300X"
    for project, person, count in ((ml, bob, 2), (ml, bob, 1), (other, eve, 3)):
        profile = await gpu_profile(project, count, model="H100", cluster_id=farm)
        instance = await make_instance(project, profile, by=person, name=f"{person.username}-{count}")
        answer = await gql.data(DEPLOY, {"id": str(instance.id)}, token=person.token)
        assert answer["deployComputeInstance"]["userErrors"] == []
    await make_instance(ml, await gpu_profile(ml, 4, model="H100", cluster_id=farm), by=bob)  # saved only

    count_queries.statements.clear()
    everything = (await gql.data(CAPACITY, {"cluster": farm}, token=root.token))["gpuCapacity"]
    assert len(count_queries.statements) <= 8, count_queries.statements
    [cluster] = everything
    h100 = by_model(cluster)["NVIDIA H100 80GB"]
    assert (h100["capacity"], h100["allocated"], h100["free"], h100["others"]) == (16, 6, 10, 0)
    assert h100["holders"] == [
        {"project": "ml", "owner": "bob", "instanceName": "bob-1", "gpus": 1},
        {"project": "ml", "owner": "bob", "instanceName": "bob-2", "gpus": 2},
        {"project": "other", "owner": "eve", "instanceName": "eve-3", "gpus": 3},
    ]
    mi300x = by_model(cluster)["AMD MI300X"]
    assert (mi300x["capacity"], mi300x["allocated"], mi300x["free"], mi300x["holders"]) == (4, 0, 4, [])

    # a member: the clusters the project uses, holders of their own project, the rest as a number
    mine = (await gql.data(CAPACITY, {"project": "ml"}, token=bob.token))["gpuCapacity"]
    assert [c["clusterName"] for c in mine] == ["simulated", "farm"]
    h100 = by_model(mine[1])["NVIDIA H100 80GB"]
    assert (h100["capacity"], h100["allocated"], h100["free"], h100["others"]) == (16, 6, 10, 3)
    assert [h["instanceName"] for h in h100["holders"]] == ["bob-1", "bob-2"]
    # a project that uses no cluster but the default one sees only that one
    third = (await gql.data(CAPACITY, {"project": "third"}, token=carol.token))["gpuCapacity"]
    assert [c["clusterName"] for c in third] == ["simulated"]

    # every cluster and holder is for platform admins; other projects are not there for outsiders
    denied = await gql(CAPACITY, {}, token=bob.token)
    assert denied["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    hidden = await gql(CAPACITY, {"project": "ml"}, token=carol.token)
    assert hidden["errors"][0]["extensions"]["code"] == "NOT_FOUND"


@pytest.fixture
async def private_gql(settings: Settings) -> AsyncIterator[GraphQLClient]:
    """The API with GPUPAAS_MEMBERS_SEE_ALL_INSTANCES=false."""
    app = create_app(replace(settings, members_see_all_instances=False), migrate=False)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://testserver"
    ) as http:
        yield GraphQLClient(http)


async def test_members_who_do_not_see_each_others_instances_do_not_see_them_as_holders(
    db: object, private_gql: GraphQLClient
) -> None:
    gql = private_gql
    bob, olivia, alice = await make_user("bob"), await make_user("olivia"), await make_user("alice")
    ml = await make_project("ml", bob=Role.MEMBER, olivia=Role.MEMBER, alice=Role.ADMIN)
    for person, count in ((bob, 2), (olivia, 1)):
        profile = await gpu_profile(ml, count, model="H100")
        instance = await make_instance(ml, profile, by=person, name=f"{person.username}-{count}")
        answer = await gql.data(DEPLOY, {"id": str(instance.id)}, token=person.token)
        assert answer["deployComputeInstance"]["userErrors"] == []

    async def seen(person: Any) -> tuple[list[str], int]:
        [cluster] = (await gql.data(CAPACITY, {"project": "ml"}, token=person.token))["gpuCapacity"]
        [model] = cluster["models"]
        return [h["instanceName"] for h in model["holders"]], model["others"]

    assert await seen(olivia) == (["olivia-1"], 2)
    assert await seen(alice) == (["bob-2", "olivia-1"], 0)  # admins see every member's
