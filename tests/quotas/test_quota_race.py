"""The quota holds under concurrent deploys: each deploy runs in its own transaction (on
PostgreSQL, each over its own connection of the pool), and the project's row, locked inside it,
makes them take turns, so that exactly the allowed number is accepted. (Without the lock, the
PostgreSQL run of this test accepted 5 of 8 deploys against a quota of 3.)"""

from __future__ import annotations

import asyncio

from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.states import DeploymentStatus
from tests.conftest import GraphQLClient
from tests.quotas.test_quotas import DEPLOY, gpu_profile, saved, set_quota, world


async def test_concurrent_deploys_never_exceed_the_quota(db: object, gql: GraphQLClient) -> None:
    ml, people = await world()
    await set_quota(gql, people["root"].token, gpus=3)
    one = await gpu_profile(ml, 1)
    bob = people["bob"]
    instances = [await saved(ml, one, bob) for _ in range(8)]
    results = await asyncio.gather(
        *(gql.data(DEPLOY, {"id": instance}, token=bob.token) for instance in instances)
    )
    outcomes = [r["deployComputeInstance"] for r in results]
    accepted = [o for o in outcomes if o["userErrors"] == []]
    refused = [o["userErrors"][0]["code"] for o in outcomes if o["userErrors"]]
    assert len(accepted) == 3
    assert refused == ["QUOTA_EXCEEDED"] * 5
    assert await ComputeInstance.filter(status=DeploymentStatus.WAITING).count() == 3
