"""The deploy pipeline end to end, on the in-process bus and on Kafka (tansu): deploy, outputs,
redeploy after edits, destroy, delete, failures, retries, dead letters."""

from __future__ import annotations

import json
from typing import Any

from gpupaas.accounts.models import Project
from gpupaas.catalog.models import ComputeProfile, EnvironmentTemplate, EnvironmentTemplateVersion
from gpupaas.catalog.service.profile_settings import OutputSettingIn
from gpupaas.catalog.service.profiles import ResourcesIn
from gpupaas.compute import configuration
from gpupaas.compute import service as compute
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from gpupaas.core.gpus import Vendor
from gpupaas.events.bus import COMMANDS_TOPIC, DEAD_LETTER_TOPIC
from gpupaas.provisioning.drivers.base import Phase
from gpupaas.provisioning.plan import namespace_for
from gpupaas.runs.models import DeploymentRun
from gpupaas.runs.states import RunStatus
from tests.conftest import SECRET_KEY, GraphQLClient
from tests.factories import make_instance, make_profile, make_project, make_user, platform_actor
from tests.workers.conftest import Pipeline, eventually, wait_status

S = DeploymentStatus


async def _builtin_profile(project: Project, name: str = "gpu-namespace", **fields: Any) -> ComputeProfile:
    template = await EnvironmentTemplate.get(name=name, built_in=True)
    version = await EnvironmentTemplateVersion.get(template_id=template.id)
    return await make_profile(project, version, **fields)


async def test_deploy_reaches_success_with_outputs(db: object, pipeline: Pipeline) -> None:
    project = await make_project("ml")
    profile = await _builtin_profile(project)
    instance = await make_instance(project, profile, name="nb", deploy=True)
    done = await wait_status(instance.id, S.SUCCESS, S.FAILED)
    assert done.status == S.SUCCESS, done.status_message
    assert done.outputs["namespace"] == namespace_for("ml", "nb", str(instance.id))
    assert "nvidia.com/gpu 1" in done.outputs["quota"]
    run = await DeploymentRun.get(instance_id=instance.id)
    assert run.status == RunStatus.SUCCEEDED and run.attempts == 1
    assert run.started_at is not None and run.finished_at is not None
    plan = configuration.plan_for(done, "ml", secret_key=SECRET_KEY)
    assert (await pipeline.driver().observe(plan)).phase == Phase.READY


async def test_redeploy_applies_saved_changes_then_destroy_and_delete(db: object, pipeline: Pipeline) -> None:
    alice = await make_user("alice")
    project = await make_project("ml", alice=Role.MEMBER)
    profile = await _builtin_profile(project)
    from gpupaas.accounts.service import actor_for

    me = await actor_for(alice.user)
    instance = await compute.create_instance(
        me, "ml", str(profile.id), compute.InstanceIn(name="nb"), True, secret_key=SECRET_KEY
    )
    await wait_status(instance.id, S.SUCCESS)
    # Edit Configuration, Save Changes: the status stays SUCCESS until the next deploy applies them
    saved = await compute.update_instance(
        me,
        str(instance.id),
        compute.InstanceIn(labels=[("team", "vision")], inputs=[("maxPods", "20")]),
        secret_key=SECRET_KEY,
    )
    assert saved.status == S.SUCCESS
    await compute.deploy(me, str(instance.id))
    redeployed = await wait_status(instance.id, S.SUCCESS, S.FAILED)
    assert redeployed.status == S.SUCCESS
    plan = configuration.plan_for(redeployed, "ml", secret_key=SECRET_KEY)
    assert plan.labels["team"] == "vision"
    runs = await DeploymentRun.filter(instance_id=instance.id).order_by("created_at")
    assert [r.status for r in runs] == [RunStatus.SUCCEEDED, RunStatus.SUCCEEDED]

    await compute.destroy(me, str(instance.id))
    destroyed = await wait_status(instance.id, S.NOT_DEPLOYED, S.FAILED)
    assert destroyed.status == S.NOT_DEPLOYED and destroyed.outputs == {}
    assert (await pipeline.driver().observe(plan)).phase == Phase.ABSENT

    await compute.deploy(me, str(instance.id))
    await wait_status(instance.id, S.SUCCESS)
    await compute.delete(me, str(instance.id))

    async def gone() -> bool:
        return not await ComputeInstance.exists(id=instance.id)

    await eventually(gone, what="the deleted instance to disappear")
    assert (await pipeline.driver().observe(plan)).phase == Phase.ABSENT


async def test_capacity_shortage_fails_with_a_message_a_person_can_act_on(
    db: object, pipeline: Pipeline
) -> None:
    project = await make_project("ml")
    profile = await _builtin_profile(
        project,
        resources=ResourcesIn(
            cpu="8", memory="64Gi", storage="100Gi", gpu_count=64, gpu_vendor=Vendor.NVIDIA
        ),
    )
    instance = await make_instance(project, profile, deploy=True)
    failed = await wait_status(instance.id, S.FAILED, S.SUCCESS)
    assert failed.status == S.FAILED
    assert "Insufficient nvidia.com/gpu: 64 requested" in (failed.status_message or "")
    run = await DeploymentRun.get(instance_id=instance.id)
    assert run.status == RunStatus.FAILED and run.message == failed.status_message


async def test_permanent_failure_and_then_a_redeploy(db: object, pipeline: Pipeline) -> None:
    project = await make_project("ml")
    profile = await _builtin_profile(project)
    instance = await make_instance(
        project, profile, annotations=[("simulated.gpupaas.io/fail", "apply")], deploy=True
    )
    failed = await wait_status(instance.id, S.FAILED, S.SUCCESS)
    assert failed.status == S.FAILED and "simulated failure" in (failed.status_message or "")
    actor = await platform_actor()
    await compute.update_instance(
        actor, str(instance.id), compute.InstanceIn(annotations=[]), secret_key=SECRET_KEY
    )
    await compute.deploy(actor, str(instance.id))
    assert (await wait_status(instance.id, S.SUCCESS, S.FAILED)).status == S.SUCCESS


async def test_temporary_failures_are_retried(db: object, pipeline: Pipeline) -> None:
    project = await make_project("ml")
    profile = await _builtin_profile(project)
    instance = await make_instance(
        project, profile, annotations=[("simulated.gpupaas.io/fail-times", "2")], deploy=True
    )
    done = await wait_status(instance.id, S.SUCCESS, S.FAILED)
    assert done.status == S.SUCCESS, done.status_message


async def test_temporary_failures_give_up_after_the_attempts(db: object, pipeline: Pipeline) -> None:
    project = await make_project("ml")
    profile = await _builtin_profile(project)
    instance = await make_instance(
        project, profile, annotations=[("simulated.gpupaas.io/fail-times", "10")], deploy=True
    )
    failed = await wait_status(instance.id, S.FAILED, S.SUCCESS)
    assert failed.status == S.FAILED
    assert (failed.status_message or "").startswith("gave up after 3 attempts")


async def test_a_command_delivered_twice_has_one_effect(db: object, pipeline: Pipeline) -> None:
    project = await make_project("ml")
    profile = await _builtin_profile(project)
    instance = await make_instance(project, profile, deploy=True)
    done = await wait_status(instance.id, S.SUCCESS)
    run = await DeploymentRun.get(instance_id=instance.id)
    # the same command again, as a redelivery after a rebalance would bring it
    command = {"type": "run", "runId": str(run.id), "instanceId": str(instance.id), "action": "DEPLOY"}
    await pipeline.runtime.bus.publish(COMMANDS_TOPIC, str(instance.id), json.dumps(command).encode())
    worker = pipeline.runtime.worker
    assert worker is not None
    handled = worker.handled

    async def seen() -> bool:
        return worker.handled > handled

    await eventually(seen, what="the duplicate to be consumed")
    again = await DeploymentRun.get(id=run.id)
    assert again.attempts == 1 and again.status == RunStatus.SUCCEEDED
    assert (await ComputeInstance.get(id=instance.id)).version == done.version  # no status change at all


async def test_unreadable_commands_go_to_the_dead_letter_topic(db: object, pipeline: Pipeline) -> None:
    letters = pipeline.runtime.bus.consumer([DEAD_LETTER_TOPIC], group="dead-letter-readers")
    await letters.start()
    try:
        await pipeline.runtime.bus.publish(COMMANDS_TOPIC, "x", b"{not json")
        received = []
        for _ in range(60):
            received += await letters.getmany(timeout=0.5)
            if received:
                break
        assert received and received[0].value == b"{not json"
        assert dict(received[0].headers)["error"].startswith(b"cannot read the command")
        # and processing goes on
        project = await make_project("ml")
        instance = await make_instance(project, await _builtin_profile(project), deploy=True)
        assert (await wait_status(instance.id, S.SUCCESS, S.FAILED)).status == S.SUCCESS
    finally:
        await letters.stop()


async def test_deploy_through_graphql(db: object, pipeline: Pipeline, gql: GraphQLClient) -> None:
    alice = await make_user("alice")
    project = await make_project("ml", alice=Role.MEMBER)
    profile = await _builtin_profile(project)
    created = await gql.data(
        'mutation($p: ID!) { createComputeInstance(input: {project: "ml", profile: $p, name: "nb", deploy: true}) '
        "{ computeInstance { id status } userErrors { message } } }",
        {"p": str(profile.id)},
        token=alice.token,
    )
    iid = created["createComputeInstance"]["computeInstance"]["id"]
    await wait_status(iid, S.SUCCESS, S.FAILED)
    shown = await gql.data(
        "query($id: ID!) { computeInstance(id: $id) { status outputs { key value } runs { action status } } }",
        {"id": iid},
        token=alice.token,
    )
    instance = shown["computeInstance"]
    assert instance["status"] == "SUCCESS"
    assert {"key": "namespace", "value": namespace_for("ml", "nb", iid)} in instance["outputs"]
    assert instance["runs"] == [{"action": "DEPLOY", "status": "SUCCEEDED"}]


async def test_users_see_the_outputs_the_profile_shows(
    db: object, pipeline: Pipeline, gql: GraphQLClient
) -> None:
    alice = await make_user("alice")
    project = await make_project("ml", alice=Role.MEMBER)
    profile = await _builtin_profile(
        project,
        output_settings=[
            OutputSettingIn(name="namespace", display_name="Namespace"),
            OutputSettingIn(name="gpuResource", visible=False),
        ],
    )
    instance = await make_instance(project, profile, name="nb", deploy=True)
    done = await wait_status(instance.id, S.SUCCESS, S.FAILED)
    assert set(done.outputs) >= {"namespace", "quota", "gpuResource"}  # all evaluated and kept
    shown = await gql.data(
        "query($id: ID!) { computeInstance(id: $id) { outputs { key value } } }",
        {"id": str(instance.id)},
        token=alice.token,
    )
    keys = [o["key"] for o in shown["computeInstance"]["outputs"]]
    assert "Namespace" in keys and "quota" in keys and "gpuResource" not in keys
