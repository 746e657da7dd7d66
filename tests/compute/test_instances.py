"""Compute instances through the API: launch (save or deploy), the snapshot, Save Changes,
deploy/destroy/delete rules, sharing, lists, and concurrent requests (no worker runs here)."""

from __future__ import annotations

import asyncio
from typing import Any

from gpupaas.accounts.sharing import SharingMode
from gpupaas.catalog.service import profile_settings, profiles, templates
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from gpupaas.core.gpus import Vendor
from gpupaas.events.models import OutboxMessage
from gpupaas.runs.models import DeploymentRun
from tests.conftest import SECRET_KEY, Database, GraphQLClient
from tests.factories import (
    make_instance,
    make_profile,
    make_project,
    make_template,
    make_user,
    make_version,
    platform_actor,
)

FIELDS = """
  id name displayName description profileName outdated status statusMessage
  project { name } profile { name } labels { key value } annotations { key value }
  inputs { key value } outputs { key value } sharing { mode projects { name } }
  runs { action status message } resources { cpu gpuCount gpuVendor } allocationType templateName
"""
CREATE = f"""
mutation($input: CreateComputeInstanceInput!) {{
  createComputeInstance(input: $input) {{ computeInstance {{ {FIELDS} }} userErrors {{ field message code }} }}
}}"""
UPDATE = f"""
mutation($input: UpdateComputeInstanceInput!) {{
  updateComputeInstance(input: $input) {{ computeInstance {{ {FIELDS} }} userErrors {{ field message code }} }}
}}"""
DEPLOY = "mutation($id: ID!) { deployComputeInstance(id: $id) { computeInstance { status runs { action status } } userErrors { field message code } } }"
DESTROY = "mutation($id: ID!) { destroyComputeInstance(id: $id) { computeInstance { status } userErrors { field message code } } }"
DELETE = (
    "mutation($id: ID!) { deleteComputeInstance(id: $id) { deletedId userErrors { field message code } } }"
)
SHARE = "mutation($id: ID!, $s: SharingInput!) { setComputeInstanceSharing(id: $id, sharing: $s) { computeInstance { sharing { mode projects { name } } } userErrors { field message code } } }"
LIST = """
query($project: String!, $search: String, $status: [DeploymentStatus!], $first: Int, $after: String) {
  computeInstances(project: $project, search: $search, status: $status, first: $first, after: $after) {
    totalCount pageInfo { hasNextPage endCursor } edges { node { name status project { name } } }
  }
}"""
ONE = f"query($id: ID!) {{ computeInstance(id: $id) {{ {FIELDS} }} }}"


async def _world() -> tuple[Any, Any, Any]:
    """alice is a MEMBER of ml (an end user), with a profile of ml's admin in the catalog."""
    alice = await make_user("alice")
    project = await make_project("ml", alice=Role.MEMBER)
    profile = await make_profile(project, name="a100-small")
    return alice, project, profile


async def test_launch_saves_or_queues(db: Database, gql: GraphQLClient) -> None:
    alice, _, profile = await _world()
    saved = (
        await gql.data(
            CREATE,
            {"input": {"project": "ml", "profile": str(profile.id), "name": "nb-1", "description": "mine"}},
            token=alice.token,
        )
    )["createComputeInstance"]
    assert saved["userErrors"] == []
    instance = saved["computeInstance"]
    assert instance["status"] == "NOT_DEPLOYED" and instance["runs"] == []
    assert instance["displayName"] == "nb-1" and instance["profileName"] == "a100-small"
    assert instance["profile"] == {"name": "a100-small"} and instance["outdated"] is False
    assert instance["resources"] == {"cpu": "4", "gpuCount": 1, "gpuVendor": "NVIDIA"}
    assert {"key": "team", "value": "ml"} in instance["inputs"]

    queued = (
        await gql.data(
            CREATE,
            {"input": {"project": "ml", "profile": str(profile.id), "name": "nb-2", "deploy": True}},
            token=alice.token,
        )
    )["createComputeInstance"]["computeInstance"]
    assert queued["status"] == "WAITING"
    assert queued["runs"] == [{"action": "DEPLOY", "status": "QUEUED", "message": None}]
    # the command and the status event were written with it, for the relay
    topics = [m.topic for m in await OutboxMessage.all().order_by("id")]
    assert topics.count("gpupaas.commands") == 1 and topics.count("gpupaas.status") == 2


async def test_names_are_dns_labels_unique_and_immutable(db: Database, gql: GraphQLClient) -> None:
    alice, _, profile = await _world()
    bad = (
        await gql.data(
            CREATE,
            {"input": {"project": "ml", "profile": str(profile.id), "name": "Bad_Name"}},
            token=alice.token,
        )
    )["createComputeInstance"]
    assert bad["userErrors"][0]["field"] == ["input", "name"]
    first = (
        await gql.data(
            CREATE, {"input": {"project": "ml", "profile": str(profile.id), "name": "nb"}}, token=alice.token
        )
    )["createComputeInstance"]["computeInstance"]
    again = (
        await gql.data(
            CREATE, {"input": {"project": "ml", "profile": str(profile.id), "name": "nb"}}, token=alice.token
        )
    )["createComputeInstance"]
    assert again["userErrors"][0]["code"] == "TAKEN"
    renamed = (await gql.data(UPDATE, {"input": {"id": first["id"], "name": "other"}}, token=alice.token))[
        "updateComputeInstance"
    ]
    assert renamed["userErrors"][0]["code"] == "IMMUTABLE"


async def test_input_overrides_follow_the_profile(db: Database, gql: GraphQLClient) -> None:
    alice = await make_user("alice")
    project = await make_project("ml", alice=Role.MEMBER)
    profile = await make_profile(
        project,
        input_settings=[
            profile_settings.InputSettingIn(name="team", value="vision", override="NOT_ALLOWED"),
            profile_settings.InputSettingIn(
                name="size", value="small", override="RESTRICTED", allowed_values=["small", "large"]
            ),
        ],
    )

    async def launch(inputs: list[dict[str, str]], name: str) -> dict[str, Any]:
        data = {"project": "ml", "profile": str(profile.id), "name": name, "inputs": inputs}
        return (await gql.data(CREATE, {"input": data}, token=alice.token))["createComputeInstance"]  # type: ignore[no-any-return]

    locked = await launch([{"key": "team", "value": "nlp"}], "a")
    assert locked["userErrors"] == [
        {
            "field": ["input", "inputs", "0", "value"],
            "message": 'input "team" is set by the profile and cannot be changed',
            "code": "FORBIDDEN",
        }
    ]
    outside = await launch([{"key": "size", "value": "huge"}], "b")
    assert outside["userErrors"][0]["field"] == ["input", "inputs", "0", "value"]
    unknown = await launch([{"key": "nope", "value": "x"}], "c")
    assert unknown["userErrors"][0]["field"] == ["input", "inputs", "0", "key"]
    ok = await launch([{"key": "size", "value": "large"}], "d")
    assert ok["userErrors"] == []
    assert {"key": "size", "value": "large"} in ok["computeInstance"]["inputs"]
    assert {"key": "team", "value": "vision"} in ok["computeInstance"]["inputs"]


async def test_sensitive_inputs_are_masked(db: Database, gql: GraphQLClient) -> None:
    alice = await make_user("alice")
    project = await make_project("ml", alice=Role.MEMBER)
    version = await make_version(
        await make_template(project),
        inputs=[templates.InputDefinitionIn(name="team", type="STRING", default="ml", sensitive=True)],
        outputs=[],
    )
    profile = await make_profile(project, version)
    instance = await make_instance(project, profile, inputs=[("team", "secret-team")])
    shown = (await gql.data(ONE, {"id": str(instance.id)}, token=alice.token))["computeInstance"]
    assert shown["inputs"] == [{"key": "team", "value": "********"}]


async def test_the_snapshot_keeps_old_instances_as_they_were(db: Database, gql: GraphQLClient) -> None:
    alice, project, profile = await _world()
    before = await make_instance(project, profile, name="before")
    # the admin edits the profile: more CPU, another input value
    await profiles.update_profile(
        await platform_actor(),
        str(profile.id),
        profiles.ProfileIn(
            resources=profiles.ResourcesIn(
                cpu="16", memory="64Gi", storage="1Ti", gpu_count=2, gpu_vendor=Vendor.NVIDIA
            ),
            input_settings=[profile_settings.InputSettingIn(name="team", value="vision")],
        ),
        secret_key=SECRET_KEY,
    )
    after = await make_instance(project, profile, name="after")
    old = (await gql.data(ONE, {"id": str(before.id)}, token=alice.token))["computeInstance"]
    new = (await gql.data(ONE, {"id": str(after.id)}, token=alice.token))["computeInstance"]
    assert old["resources"] == {"cpu": "4", "gpuCount": 1, "gpuVendor": "NVIDIA"} and old["outdated"] is True
    assert {"key": "team", "value": "ml"} in old["inputs"]
    assert (
        new["resources"] == {"cpu": "16", "gpuCount": 2, "gpuVendor": "NVIDIA"} and new["outdated"] is False
    )
    assert {"key": "team", "value": "vision"} in new["inputs"]
    # deleting the profile leaves the instance on its snapshot, profile null
    await profiles.delete_profile(await platform_actor(), str(profile.id))
    orphan = (await gql.data(ONE, {"id": str(before.id)}, token=alice.token))["computeInstance"]
    assert orphan["profile"] is None and orphan["profileName"] == "a100-small"
    assert orphan["resources"]["cpu"] == "4"


async def test_save_changes_keeps_the_status(db: Database, gql: GraphQLClient) -> None:
    alice, project, profile = await _world()
    instance = await make_instance(project, profile, deploy=True, by=alice)
    changed = (
        await gql.data(
            UPDATE,
            {
                "input": {
                    "id": str(instance.id),
                    "displayName": "Notebook",
                    "labels": [{"key": "owner", "value": "alice"}],
                    "annotations": [{"key": "note", "value": "x y z"}],
                    "inputs": [{"key": "size", "value": "large"}],
                }
            },
            token=alice.token,
        )
    )["updateComputeInstance"]
    assert changed["userErrors"] == []
    shown = changed["computeInstance"]
    assert shown["status"] == "WAITING" and shown["displayName"] == "Notebook"
    assert shown["labels"] == [{"key": "owner", "value": "alice"}]
    assert {"key": "size", "value": "large"} in shown["inputs"]
    bad = (
        await gql.data(
            UPDATE,
            {"input": {"id": str(instance.id), "labels": [{"key": "bad key", "value": "x"}]}},
            token=alice.token,
        )
    )["updateComputeInstance"]
    assert bad["userErrors"][0]["field"] == ["input", "labels", "0", "key"]


async def test_requests_follow_the_state_machine(db: Database, gql: GraphQLClient) -> None:
    alice, project, profile = await _world()
    instance = await make_instance(project, profile, by=alice)
    iid = {"id": str(instance.id)}
    destroy = (await gql.data(DESTROY, iid, token=alice.token))["destroyComputeInstance"]
    assert destroy["userErrors"][0]["code"] == "INVALID_STATE"
    deployed = (await gql.data(DEPLOY, iid, token=alice.token))["deployComputeInstance"]
    assert deployed["computeInstance"]["status"] == "WAITING"
    for op, field in (
        (DEPLOY, "deployComputeInstance"),
        (DESTROY, "destroyComputeInstance"),
        (DELETE, "deleteComputeInstance"),
    ):
        refused = (await gql.data(op, iid, token=alice.token))[field]
        assert refused["userErrors"][0]["code"] == "INVALID_STATE", field
        assert "wait until the current run finishes" in refused["userErrors"][0]["message"]
    # the run finishes (as a worker would say), then destroy and delete are possible
    await ComputeInstance.filter(id=instance.id).update(status=DeploymentStatus.SUCCESS)
    await DeploymentRun.filter(instance_id=instance.id).update(status="SUCCEEDED")
    assert (await gql.data(DESTROY, iid, token=alice.token))["destroyComputeInstance"]["computeInstance"][
        "status"
    ] == "DESTROYING"


async def test_delete_of_a_saved_instance_is_immediate(db: Database, gql: GraphQLClient) -> None:
    alice, project, profile = await _world()
    instance = await make_instance(project, profile, by=alice)
    result = (await gql.data(DELETE, {"id": str(instance.id)}, token=alice.token))["deleteComputeInstance"]
    assert result == {"deletedId": str(instance.id), "userErrors": []}
    assert await ComputeInstance.get_or_none(id=instance.id) is None


async def test_delete_of_a_deployed_instance_destroys_first(db: Database, gql: GraphQLClient) -> None:
    alice, project, profile = await _world()
    instance = await make_instance(project, profile, by=alice)
    await ComputeInstance.filter(id=instance.id).update(status=DeploymentStatus.SUCCESS)
    result = (await gql.data(DELETE, {"id": str(instance.id)}, token=alice.token))["deleteComputeInstance"]
    assert result["deletedId"] == str(instance.id)
    still = await ComputeInstance.get(id=instance.id)
    assert still.status == DeploymentStatus.DESTROYING
    run = await DeploymentRun.get(instance_id=instance.id)
    assert run.action.value == "DESTROY" and run.delete_after


async def test_concurrent_deploys_cannot_both_win(db: Database, gql: GraphQLClient) -> None:
    alice, project, profile = await _world()
    instance = await make_instance(project, profile, by=alice)
    results = await asyncio.gather(
        *[gql.data(DEPLOY, {"id": str(instance.id)}, token=alice.token) for _ in range(8)]
    )
    winners = [r for r in results if not r["deployComputeInstance"]["userErrors"]]
    losers = [
        r["deployComputeInstance"]["userErrors"][0]["code"]
        for r in results
        if r["deployComputeInstance"]["userErrors"]
    ]
    assert len(winners) == 1
    assert set(losers) <= {"INVALID_STATE", "CONFLICT"} and len(losers) == 7
    assert await DeploymentRun.filter(instance_id=instance.id).count() == 1


async def test_sharing_makes_it_visible_read_only(db: Database, gql: GraphQLClient) -> None:
    alice, project, profile = await _world()
    bob = await make_user("bob")
    await make_project("research", bob=Role.MEMBER)
    instance = await make_instance(project, profile, name="shared-nb", by=alice)
    assert (await gql.data(ONE, {"id": str(instance.id)}, token=bob.token))["computeInstance"] is None
    shared = await gql.data(
        SHARE,
        {"id": str(instance.id), "s": {"mode": "SELECTED_PROJECTS", "projects": ["research"]}},
        token=alice.token,
    )
    assert shared["setComputeInstanceSharing"]["userErrors"] == [
        {
            "field": ["sharing", "projects", "0"],
            "message": 'project "research" not found',
            "code": "NOT_FOUND",
        }
    ]
    from gpupaas.compute import service as compute

    await compute.set_sharing(
        await platform_actor(), str(instance.id), SharingMode.SELECTED_PROJECTS, ["research"]
    )
    listed = (await gql.data(LIST, {"project": "research"}, token=bob.token))["computeInstances"]
    assert [(e["node"]["name"], e["node"]["project"]["name"]) for e in listed["edges"]] == [
        ("shared-nb", "ml")
    ]
    seen = (await gql.data(ONE, {"id": str(instance.id)}, token=bob.token))["computeInstance"]
    assert seen["name"] == "shared-nb"
    refused = await gql(DEPLOY, {"id": str(instance.id)}, token=bob.token)
    assert refused["errors"][0]["extensions"]["code"] == "FORBIDDEN"


async def test_list_searches_filters_by_status_and_pages(db: Database, gql: GraphQLClient) -> None:
    alice, project, profile = await _world()
    for i in range(4):
        await make_instance(project, profile, name=f"nb-{i}", description=f"notebook {i}")
    await make_instance(project, profile, name="train-1", deploy=True)
    everything = (await gql.data(LIST, {"project": "ml", "first": 3}, token=alice.token))["computeInstances"]
    assert everything["totalCount"] == 5 and everything["pageInfo"]["hasNextPage"]
    assert [e["node"]["name"] for e in everything["edges"]] == ["train-1", "nb-3", "nb-2"]
    rest = await gql.data(
        LIST, {"project": "ml", "first": 3, "after": everything["pageInfo"]["endCursor"]}, token=alice.token
    )
    assert [e["node"]["name"] for e in rest["computeInstances"]["edges"]] == ["nb-1", "nb-0"]
    waiting = (await gql.data(LIST, {"project": "ml", "status": ["WAITING"]}, token=alice.token))[
        "computeInstances"
    ]
    assert [e["node"]["name"] for e in waiting["edges"]] == ["train-1"]
    found = (await gql.data(LIST, {"project": "ml", "search": "notebook 2"}, token=alice.token))[
        "computeInstances"
    ]
    assert [e["node"]["name"] for e in found["edges"]] == ["nb-2"]


async def test_profiles_outside_the_catalog_cannot_be_launched(db: Database, gql: GraphQLClient) -> None:
    alice, _, _ = await _world()
    other = await make_project("other")
    foreign = await make_profile(other)
    result = (
        await gql.data(
            CREATE, {"input": {"project": "ml", "profile": str(foreign.id), "name": "x"}}, token=alice.token
        )
    )["createComputeInstance"]
    assert result["userErrors"][0] == {
        "field": ["input", "profile"],
        "message": "No such compute profile in this project's catalog.",
        "code": "NOT_FOUND",
    }
    await profiles.set_profile_sharing(
        await platform_actor(), str(foreign.id), SharingMode.ALL_PROJECTS, None
    )
    result = (
        await gql.data(
            CREATE, {"input": {"project": "ml", "profile": str(foreign.id), "name": "x"}}, token=alice.token
        )
    )["createComputeInstance"]
    assert result["userErrors"] == []


async def test_launch_refuses_what_the_next_deploy_could_not_render(db: Database, gql: GraphQLClient) -> None:
    # an optional input without a default that the template uses: users must give it a value
    alice = await make_user("alice")
    project = await make_project("ml", alice=Role.MEMBER)
    version = await make_version(
        await make_template(project),
        inputs=[templates.InputDefinitionIn(name="team", type="STRING")],
        outputs=[],
    )
    profile = await make_profile(project, version)
    refused = (
        await gql.data(
            CREATE, {"input": {"project": "ml", "profile": str(profile.id), "name": "nb"}}, token=alice.token
        )
    )["createComputeInstance"]
    assert refused["computeInstance"] is None
    assert refused["userErrors"][0]["field"] == ["input", "inputs"]
    assert 'no value for input "team"' in refused["userErrors"][0]["message"]
    given = {
        "project": "ml",
        "profile": str(profile.id),
        "name": "nb",
        "inputs": [{"key": "team", "value": "vision"}],
    }
    assert (await gql.data(CREATE, {"input": given}, token=alice.token))["createComputeInstance"][
        "userErrors"
    ] == []


async def test_drift_fails_a_deployed_instance_and_recovery_restores_it(
    db: Database, gql: GraphQLClient
) -> None:
    from gpupaas.compute.run_kind import COMPUTE
    from gpupaas.runs import lifecycle as runs

    alice, project, profile = await _world()
    instance = await make_instance(project, profile)
    # nothing happens to an instance that is not deployed
    assert not await runs.report_drift(COMPUTE, str(instance.id), True, "pod nb-0: OOMKilled")
    await ComputeInstance.filter(id=instance.id).update(status=DeploymentStatus.SUCCESS)
    assert await runs.report_drift(COMPUTE, str(instance.id), True, "pod nb-0: OOMKilled")
    failed = (await gql.data(ONE, {"id": str(instance.id)}, token=alice.token))["computeInstance"]
    assert failed["status"] == "FAILED" and failed["statusMessage"] == "drift: pod nb-0: OOMKilled"
    assert await runs.report_drift(COMPUTE, str(instance.id), False, None)
    assert (await ComputeInstance.get(id=instance.id)).status == DeploymentStatus.SUCCESS
    # a run that failed (not drift) is not turned SUCCESS by a healthy pod
    await ComputeInstance.filter(id=instance.id).update(status=DeploymentStatus.FAILED, drifted=False)
    assert not await runs.report_drift(COMPUTE, str(instance.id), False, None)
    assert (await ComputeInstance.get(id=instance.id)).status == DeploymentStatus.FAILED


async def test_the_list_runs_a_fixed_number_of_queries(
    db: Database, gql: GraphQLClient, count_queries: Any
) -> None:
    alice, project, profile = await _world()
    await gql.data("{ me { username } }", token=alice.token)  # records the token's first use

    async def count() -> int:
        count_queries.statements.clear()
        await gql.data(
            '{ computeInstances(project: "ml", first: 100) { edges { node { name outdated profile { name } '
            "project { name } runs { status } sharing { mode projects { name } } cluster { name } } } } }",
            token=alice.token,
        )
        return len(count_queries.statements)

    for i in range(2):
        await make_instance(project, profile, name=f"a-{i}", deploy=True)
    small = await count()
    for i in range(8):
        await make_instance(project, profile, name=f"b-{i}", deploy=True)
    assert await count() == small
