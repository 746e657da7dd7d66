"""Quotas through the API: every dimension, a member's within the project's, the refusal's words,
saving without deploying, a destroy freeing quota, and who may read and set them."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from gpupaas.accounts.models import Project
from gpupaas.catalog.models import ComputeProfile
from gpupaas.catalog.service import profiles
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.run_kind import COMPUTE
from gpupaas.core.actor import Role
from gpupaas.core.gpus import Vendor
from gpupaas.runs import lifecycle as runs
from gpupaas.runs.models import DeploymentRun
from gpupaas.runs.states import RunStatus
from tests.conftest import GraphQLClient, QueryCounter
from tests.factories import Person, make_instance, make_profile, make_project, make_user, make_webhook

SET = """mutation($input: SetQuotaInput!) { setQuota(input: $input) {
  quota { project quota { gpus gpuLimits { vendor model count } cpu memory instances }
          usage { key label used limit usedShown limitShown }
          members { username quota { gpus } usage { key used limit } } }
  userErrors { field message code } } }"""
CLEAR = """mutation($project: String!, $username: String) { clearQuota(project: $project, username: $username) {
  quota { quota { gpus } members { username quota { gpus } } } userErrors { field message code } } }"""
READ = """query($project: String!) { projectQuota(project: $project) {
  project quota { gpus instances }
  usage { key label used limit usedShown limitShown }
  members { username quota { gpus gpuLimits { vendor model count } } usage { key used limit } } } }"""
DEPLOY = """mutation($id: ID!) { deployComputeInstance(id: $id) {
  computeInstance { status } userErrors { field message code } } }"""
CREATE = """mutation($input: CreateComputeInstanceInput!) { createComputeInstance(input: $input) {
  computeInstance { id status } userErrors { field message code } } }"""
DESTROY = """mutation($id: ID!) { destroyComputeInstance(id: $id) {
  computeInstance { status } userErrors { field message code } } }"""


def gpu_profile(
    project: Project, count: int, model: str | None = "A100", vendor: Vendor = Vendor.NVIDIA, **more: Any
) -> Any:
    resources = profiles.ResourcesIn(
        cpu=more.pop("cpu", "4"),
        memory=more.pop("memory", "16Gi"),
        storage="10Gi",
        gpu_count=count,
        gpu_vendor=vendor,
        gpu_model=model,
    )
    return make_profile(project, resources=resources, **more)


async def world() -> tuple[Project, dict[str, Person]]:
    people = {
        "root": await make_user("root", platform_admin=True),
        "alice": await make_user("alice"),
        "bob": await make_user("bob"),
        "olivia": await make_user("olivia"),
        "carol": await make_user("carol"),
    }
    ml = await make_project("ml", alice=Role.ADMIN, bob=Role.MEMBER, olivia=Role.MEMBER)
    await make_project("other", carol=Role.ADMIN)
    return ml, people


async def saved(project: Project, profile: ComputeProfile, by: Person) -> str:
    return str((await make_instance(project, profile, by=by)).id)


async def deploy(gql: GraphQLClient, instance: str, token: str) -> dict[str, Any]:
    result: dict[str, Any] = (await gql.data(DEPLOY, {"id": instance}, token=token))["deployComputeInstance"]
    return result


def refused(result: dict[str, Any]) -> str:
    assert result["computeInstance"] is None, result
    [error] = result["userErrors"]
    assert error["code"] == "QUOTA_EXCEEDED", error
    return str(error["message"])


async def set_quota(gql: GraphQLClient, token: str, **fields: Any) -> dict[str, Any]:
    result: dict[str, Any] = (await gql.data(SET, {"input": {"project": "ml", **fields}}, token=token))[
        "setQuota"
    ]
    return result


async def test_a_per_model_gpu_quota_refuses_the_deploy_past_it_with_what_is_used_and_asked(
    db: object, gql: GraphQLClient
) -> None:
    ml, people = await world()
    root, bob = people["root"].token, people["bob"]
    quota = await set_quota(gql, root, gpuLimits=[{"vendor": "NVIDIA", "model": "A100", "count": 8}])
    assert quota["userErrors"] == []
    six = await gpu_profile(ml, 6)
    four = await gpu_profile(ml, 4)
    other_model = await gpu_profile(ml, 4, model="H100")
    assert (await deploy(gql, await saved(ml, six, bob), bob.token))["computeInstance"]["status"] == "WAITING"
    message = refused(await deploy(gql, await saved(ml, four, bob), bob.token))
    assert message == 'project "ml" quota: 8 NVIDIA A100 GPUs; 6 in use, this deploy asks 4'
    # another model is not counted by the A100 limit
    assert (await deploy(gql, await saved(ml, other_model, bob), bob.token))["userErrors"] == []


async def test_total_vendor_cpu_memory_and_instance_limits_each_refuse(
    db: object, gql: GraphQLClient
) -> None:
    ml, people = await world()
    root, bob = people["root"].token, people["bob"]
    small = await gpu_profile(ml, 2, cpu="4", memory="16Gi")
    amd = await gpu_profile(ml, 2, model=None, vendor=Vendor.AMD)
    cpu_only = await gpu_profile(ml, 0, model=None, vendor=Vendor.CPU, cpu="8", memory="32Gi")
    first = await saved(ml, small, bob)
    assert (await deploy(gql, first, bob.token))["userErrors"] == []  # 2 GPUs, 4 CPU, 16Gi, 1 instance
    cases: list[tuple[dict[str, Any], ComputeProfile, str]] = [
        ({"gpus": 3}, small, 'project "ml" quota: 3 GPUs; 2 in use, this deploy asks 2'),
        (
            {"gpuLimits": [{"vendor": "AMD", "count": 1}]},
            amd,
            'project "ml" quota: 1 AMD GPUs; 0 in use, this deploy asks 2',
        ),
        ({"cpu": "10"}, cpu_only, 'project "ml" quota: 10 CPU cores; 4 in use, this deploy asks 8'),
        ({"memory": "40Gi"}, cpu_only, 'project "ml" quota: 40Gi memory; 16Gi in use, this deploy asks 32Gi'),
        (
            {"instances": 1},
            cpu_only,
            'project "ml" quota: 1 deployed instances; 1 in use, this deploy asks 1',
        ),
    ]
    for limits, profile, expected in cases:
        assert (await set_quota(gql, root, **limits))["userErrors"] == []
        assert refused(await deploy(gql, await saved(ml, profile, bob), bob.token)) == expected
    # a GPU-less deploy is not refused by GPU limits
    assert (await set_quota(gql, root, gpus=2))["userErrors"] == []
    assert (await deploy(gql, await saved(ml, cpu_only, bob), bob.token))["userErrors"] == []


async def test_a_launch_that_deploys_at_once_is_checked_and_saving_without_deploying_is_not(
    db: object, gql: GraphQLClient
) -> None:
    ml, people = await world()
    await set_quota(gql, people["root"].token, gpus=1)
    big = await gpu_profile(ml, 2)
    bob = people["bob"].token
    made = (
        await gql.data(
            CREATE,
            {"input": {"project": "ml", "profile": str(big.id), "name": "big", "deploy": True}},
            token=bob,
        )
    )["createComputeInstance"]
    assert made["computeInstance"] is None
    assert made["userErrors"][0]["code"] == "QUOTA_EXCEEDED"
    assert not await ComputeInstance.exists(name="big")  # nothing was saved by the refused launch
    kept = (
        await gql.data(CREATE, {"input": {"project": "ml", "profile": str(big.id), "name": "big"}}, token=bob)
    )["createComputeInstance"]
    assert kept["userErrors"] == [] and kept["computeInstance"]["status"] == "NOT_DEPLOYED"


async def _finish(instance: str) -> None:
    """The instance's queued run, taken and finished as a worker would."""
    run = await DeploymentRun.get(instance_id=instance, status=RunStatus.QUEUED)
    assert await runs.claim(COMPUTE, str(run.id), "worker-1", timedelta(minutes=1)) is not None
    assert await runs.finish(COMPUTE, run.id, "worker-1", succeeded=True, message=None)


async def test_a_destroy_frees_the_quota_once_it_finishes(db: object, gql: GraphQLClient) -> None:
    ml, people = await world()
    await set_quota(gql, people["root"].token, gpus=4)
    four = await gpu_profile(ml, 4)
    bob = people["bob"].token
    first, second = await saved(ml, four, people["bob"]), await saved(ml, four, people["bob"])
    assert (await deploy(gql, first, bob))["userErrors"] == []
    await _finish(first)
    # a redeploy of what is deployed asks nothing new
    assert (await deploy(gql, first, bob))["userErrors"] == []
    await _finish(first)
    refused(await deploy(gql, second, bob))
    destroyed = (await gql.data(DESTROY, {"id": first}, token=bob))["destroyComputeInstance"]
    assert destroyed["computeInstance"]["status"] == "DESTROYING"
    refused(await deploy(gql, second, bob))  # still held while it is being destroyed
    await _finish(first)
    assert (await deploy(gql, second, bob))["userErrors"] == []


async def test_a_members_quota_counts_what_they_own_within_the_projects(
    db: object, gql: GraphQLClient
) -> None:
    ml, people = await world()
    root, alice = people["root"].token, people["alice"].token
    await set_quota(gql, root, gpus=8, gpuLimits=[{"vendor": "NVIDIA", "model": "A100", "count": 6}])
    beyond = await set_quota(
        gql, alice, username="bob", gpus=9, gpuLimits=[{"vendor": "NVIDIA", "model": "a100", "count": 7}]
    )
    assert [(e["field"], e["code"]) for e in beyond["userErrors"]] == [
        (["input", "gpus"], "INVALID"),
        (["input", "gpuLimits", "0", "count"], "INVALID"),
    ]
    assert beyond["userErrors"][0]["message"] == (
        'project "ml" allows 8 GPUs: a member\'s limit cannot be more (not 9)'
    )
    total = await set_quota(gql, alice, username="bob", gpuLimits=[{"vendor": "AMD", "count": 9}])
    assert [e["message"] for e in total["userErrors"]] == [
        'project "ml" allows 8 GPUs: a member\'s limit cannot be more (not 9)'
    ]
    within = await set_quota(gql, alice, username="bob", gpus=2)
    assert within["userErrors"] == []
    assert [(m["username"], m["quota"]) for m in within["quota"]["members"]] == [
        ("alice", None),
        ("bob", {"gpus": 2}),
        ("olivia", None),
    ]
    two = await gpu_profile(ml, 2)
    bob, olivia = people["bob"], people["olivia"]
    assert (await deploy(gql, await saved(ml, two, bob), bob.token))["userErrors"] == []
    message = refused(await deploy(gql, await saved(ml, two, bob), bob.token))
    assert message == 'quota of bob in project "ml": 2 GPUs; 2 in use, this deploy asks 2'
    # olivia has no quota of her own: only the project's
    assert (await deploy(gql, await saved(ml, two, olivia), olivia.token))["userErrors"] == []
    # an admin deploying bob's instance is held to bob's quota too
    assert refused(await deploy(gql, await saved(ml, two, bob), alice)).startswith("quota of bob")
    # the project's quota stays the bound for everyone: 4 of 6 A100s are used
    three = await gpu_profile(ml, 3)
    assert refused(await deploy(gql, await saved(ml, three, olivia), olivia.token)) == (
        'project "ml" quota: 6 NVIDIA A100 GPUs; 4 in use, this deploy asks 3'
    )


async def test_usage_reads_used_against_limit_and_members_see_only_their_own(
    db: object, gql: GraphQLClient, count_queries: QueryCounter
) -> None:
    ml, people = await world()
    await set_quota(gql, people["root"].token, gpus=8, memory="64Gi", instances=5)
    await set_quota(gql, people["alice"].token, username="bob", gpus=4)
    bob = people["bob"]
    await deploy(gql, await saved(ml, await gpu_profile(ml, 3), bob), bob.token)
    await saved(ml, await gpu_profile(ml, 3), bob)  # saved only: not counted
    count_queries.statements.clear()
    seen = (await gql.data(READ, {"project": "ml"}, token=bob.token))["projectQuota"]
    assert len(count_queries.statements) <= 8, count_queries.statements
    assert seen["quota"] == {"gpus": 8, "instances": 5}
    usage = {line["key"]: line for line in seen["usage"]}
    assert (usage["gpus"]["used"], usage["gpus"]["limit"]) == (3, 8)
    assert (usage["memory"]["usedShown"], usage["memory"]["limitShown"]) == ("16Gi", "64Gi")
    assert (usage["cpu"]["used"], usage["cpu"]["limit"]) == (4, None)
    assert (usage["instances"]["used"], usage["instances"]["limit"]) == (1, 5)
    assert [m["username"] for m in seen["members"]] == ["bob"]  # a MEMBER: only their own
    [mine] = seen["members"]
    assert {u["key"]: (u["used"], u["limit"]) for u in mine["usage"]}["gpus"] == (3, 4)
    admin = (await gql.data(READ, {"project": "ml"}, token=people["alice"].token))["projectQuota"]
    assert [m["username"] for m in admin["members"]] == ["alice", "bob", "olivia"]
    outsider = await gql(READ, {"project": "ml"}, token=people["carol"].token)
    assert outsider["data"]["projectQuota"] is None
    cleared = (await gql.data(CLEAR, {"project": "ml", "username": "bob"}, token=people["alice"].token))[
        "clearQuota"
    ]
    assert [m["quota"] for m in cleared["quota"]["members"]] == [None, None, None]
    cleared = (await gql.data(CLEAR, {"project": "ml"}, token=people["root"].token))["clearQuota"]
    assert cleared["quota"]["quota"] is None


async def test_who_may_set_quotas(db: object, gql: GraphQLClient) -> None:
    _, people = await world()

    async def outcome(token: str, **fields: Any) -> str:
        body = await gql(SET, {"input": {"project": "ml", **fields}}, token=token)
        if body.get("errors"):
            return str(body["errors"][0]["extensions"]["code"])
        errors = body["data"]["setQuota"]["userErrors"]
        return str(errors[0]["code"]) if errors else "OK"

    # the project's quota: platform admins only
    assert [await outcome(people[p].token, gpus=1) for p in ("carol", "bob", "alice", "root")] == [
        "NOT_FOUND",
        "FORBIDDEN",
        "FORBIDDEN",
        "OK",
    ]
    # a member's: the project's admins (and platform admins)
    assert [
        await outcome(people[p].token, username="bob", gpus=1) for p in ("carol", "bob", "alice", "root")
    ] == ["NOT_FOUND", "FORBIDDEN", "OK", "OK"]
    assert await outcome(people["alice"].token, username="carol", gpus=1) == "NOT_FOUND"


async def test_limits_are_validated_with_messages(db: object, gql: GraphQLClient) -> None:
    _, people = await world()
    result = await set_quota(
        gql,
        people["root"].token,
        gpus=-1,
        cpu="lots",
        memory="12 apples",
        instances=10**6,
        gpuLimits=[
            {"vendor": "NVIDIA", "model": "A100", "count": 2},
            {"vendor": "NVIDIA", "model": " a100 ", "count": 3},
            {"vendor": "CPU", "count": 1},
        ],
    )
    fields = [tuple(e["field"]) for e in result["userErrors"]]
    assert fields == [
        ("input", "gpus"),
        ("input", "instances"),
        ("input", "cpu"),
        ("input", "memory"),
        ("input", "gpuLimits", "1", "model"),
        ("input", "gpuLimits", "2", "vendor"),
    ]
    messages = [e["message"] for e in result["userErrors"]]
    assert messages[0] == "must be between 0 and 100000 (leave it empty for no limit)"
    assert messages[4] == "NVIDIA a100 is given twice"
    assert messages[5] == "CPU is not a GPU vendor: limit CPU with the cpu field"


SERVICE = """mutation($input: CreateServiceInstanceInput!) { createServiceInstance(input: $input) {
  serviceInstance { status gpuCount } userErrors { field message code } } }"""


async def test_service_instances_run_on_their_compute_instances_gpus_and_take_no_quota(
    db: object, gql: GraphQLClient
) -> None:
    from gpupaas.instance_templates.models import InstanceTemplate

    ml, people = await world()
    await set_quota(gql, people["root"].token, gpus=2, instances=1)
    bob = people["bob"]
    box = await saved(ml, await gpu_profile(ml, 2), bob)
    assert (await deploy(gql, box, bob.token))["userErrors"] == []
    await _finish(box)  # SUCCESS: the project's 2 GPUs and 1 instance are all used
    template = await InstanceTemplate.get(name="jupyterlab-pytorch", built_in=True)
    data = {"project": "ml", "computeInstance": box, "template": str(template.id), "gpuCount": 2}
    started = (await gql.data(SERVICE, {"input": {**data, "name": "lab"}}, token=bob.token))[
        "createServiceInstance"
    ]
    assert started["userErrors"] == [] and started["serviceInstance"]["status"] == "PENDING"
    usage = (await gql.data(READ, {"project": "ml"}, token=bob.token))["projectQuota"]["usage"]
    assert {u["key"]: u["used"] for u in usage}["gpus"] == 2  # counted once, by the compute instance


async def test_a_refusal_is_told_to_the_projects_webhooks_that_want_it(
    db: object, gql: GraphQLClient
) -> None:
    from gpupaas.webhooks.models import WebhookDelivery, WebhookEvent

    ml, people = await world()
    root, bob = people["root"].token, people["bob"]
    await make_webhook("ml", WebhookEvent.QUOTA_REACHED)
    await make_webhook("ml", WebhookEvent.COMPUTE_INSTANCE_FAILED)
    assert (await set_quota(gql, root, gpus=2))["userErrors"] == []
    four = await gpu_profile(ml, 4)
    message = refused(await deploy(gql, await saved(ml, four, bob), bob.token))
    # the deploy rolled back, its QUOTA_REACHED event did not: one delivery, to the webhook that wants it
    [delivery] = await WebhookDelivery.all()
    assert delivery.event == WebhookEvent.QUOTA_REACHED
    body = json.loads(delivery.body)
    assert body["type"] == "QUOTA_REACHED" and body["data"]["message"] == message, body
    assert await ComputeInstance.filter(status="NOT_DEPLOYED").count() == 1
