"""The run lifecycle (runs/lifecycle.py) on its own, the same for every kind of subject: queue,
claim with a lease, renew, finish, re-queue, drift, and what subscribers and workers are told. Each
test runs for compute instances and for GPU service instances."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from tortoise.transactions import in_transaction

from gpupaas.accounts.sharing import SharingMode
from gpupaas.bootstrap import seed
from gpupaas.compute import service as compute
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.run_kind import COMPUTE
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.errors import ErrorCode, UserErrors
from gpupaas.events.models import OutboxMessage
from gpupaas.instance_templates.models import InstanceTemplate
from gpupaas.runs import lifecycle as runs
from gpupaas.runs.kinds import RunKind
from gpupaas.runs.models import DeploymentRun
from gpupaas.runs.states import RunAction, RunStatus
from gpupaas.service_instances import service as services
from gpupaas.service_instances.run_kind import SERVICES
from gpupaas.service_instances.states import ServiceStatus
from tests.conftest import QueryCounter
from tests.factories import make_instance, make_profile, make_project, platform_actor

LEASE = timedelta(seconds=30)
KEY = "k" * 64


@dataclass
class Case:
    kind: RunKind[Any]
    subject: Any  # saved, with nothing queued yet
    action: RunAction  # what a run of it does here
    healthy: Any
    command_type: str
    subject_key: str  # the command's key for its subject's id


@pytest.fixture(params=["compute", "service"])
async def case(request: pytest.FixtureRequest, db: object) -> Case:
    await seed()
    project = await make_project("ml")
    box = await make_instance(project, await make_profile(project), name="box")
    if request.param == "compute":
        return Case(COMPUTE, box, RunAction.DEPLOY, DeploymentStatus.SUCCESS, "run", "instanceId")
    await ComputeInstance.filter(id=box.id).update(status=DeploymentStatus.SUCCESS)
    template = await InstanceTemplate.get(name="jupyterlab-pytorch")
    data = services.ServiceIn(
        project="ml", compute_instance=str(box.id), template=str(template.id), name="nb", start=False
    )
    service = await services.create_service(await platform_actor(), data, secret_key=KEY)
    return Case(SERVICES, service, RunAction.START, ServiceStatus.RUNNING, "service-run", "serviceId")


async def queued(case: Case) -> DeploymentRun:
    subject = await case.kind.model.get(id=case.subject.id)
    return await runs.queue(case.kind, subject, case.action)


async def fresh(case: Case) -> Any:
    return await case.kind.model.get(id=case.subject.id)


async def test_a_queued_run_has_its_command(case: Case) -> None:
    run = await queued(case)
    command = await OutboxMessage.get(topic="gpupaas.commands", key=str(case.subject.id))
    assert command.payload == {
        "type": case.command_type,
        "runId": str(run.id),
        case.subject_key: str(case.subject.id),
        "action": case.action.value,
    }
    assert case.kind.owns(run) and case.kind.subject_id(run) == case.subject.id
    assert run.status == RunStatus.QUEUED and run.queued_at is not None


async def test_a_claim_starts_the_subject_once(case: Case) -> None:
    run = await queued(case)
    claimed = await runs.claim(case.kind, str(run.id), "a", LEASE)
    assert claimed is not None and claimed.project_name == "ml" and not claimed.superseded
    assert claimed.run.status == RunStatus.RUNNING and claimed.run.attempts == 1
    assert (await fresh(case)).status == case.kind.started(case.action)
    events = await OutboxMessage.filter(topic="gpupaas.status", key=str(case.subject.id)).order_by("id")
    assert events[-1].payload["status"] == case.kind.started(case.action).value
    # redelivered, another worker, the other kind, not an id: nothing
    assert await runs.claim(case.kind, str(run.id), "a", LEASE) is None
    assert await runs.claim(case.kind, str(run.id), "b", LEASE) is None
    other: RunKind[Any] = SERVICES if case.kind is COMPUTE else COMPUTE
    assert await runs.claim(other, str(run.id), "b", LEASE) is None
    assert await runs.claim(case.kind, "not-an-id", "b", LEASE) is None


async def test_a_run_whose_worker_stopped_renewing_is_taken_over(case: Case) -> None:
    run = await queued(case)
    assert await runs.claim(case.kind, str(run.id), "a", timedelta(seconds=-1)) is not None
    assert not await runs.renew_lease(run.id, "b", LEASE)
    taken = await runs.claim(case.kind, str(run.id), "b", LEASE)
    assert taken is not None and taken.run.lease_owner == "b" and taken.run.attempts == 2
    assert not await runs.renew_lease(run.id, "a", LEASE)  # no longer a's
    assert await runs.renew_lease(run.id, "b", LEASE)
    # a's late result does not count; b's does
    assert not await runs.finish(case.kind, run.id, "a", succeeded=False, message="late")
    assert await runs.finish(case.kind, run.id, "b", succeeded=True, message=None)
    assert (await fresh(case)).status == case.healthy


async def test_finishing_moves_the_subject_and_keeps_the_history(case: Case) -> None:
    run = await queued(case)
    await runs.claim(case.kind, str(run.id), "a", LEASE)
    await runs.report_progress(run.id, "a", "applying")
    assert (await DeploymentRun.get(id=run.id)).message == "applying"
    applied = [{"apiVersion": "v1", "kind": "Namespace", "name": "x", "namespace": None}]
    outputs = {"namespace": "x", "nodePort.jupyter": "31000"}
    assert await runs.finish(
        case.kind, run.id, "a", succeeded=True, message=None, outputs=outputs, applied=applied
    )
    done = await DeploymentRun.get(id=run.id)
    assert (done.status, done.applied, done.lease_expires_at) == (RunStatus.SUCCEEDED, applied, None)
    subject = await fresh(case)
    assert subject.status == case.healthy and subject.status_message is None
    if case.kind is COMPUTE:
        assert subject.outputs == outputs
    else:
        assert subject.node_ports == {"jupyter": 31000}
    assert not await runs.finish(case.kind, run.id, "a", succeeded=True, message=None)  # once only


async def test_a_failed_run_fails_the_subject_with_its_message(case: Case) -> None:
    run = await queued(case)
    await runs.claim(case.kind, str(run.id), "a", LEASE)
    assert await runs.finish(case.kind, run.id, "a", succeeded=False, message="ImagePullBackOff")
    subject = await fresh(case)
    assert (subject.status.value, subject.status_message) == ("FAILED", "ImagePullBackOff")
    assert (await DeploymentRun.get(id=run.id)).status == RunStatus.FAILED


async def test_a_delete_removes_the_subject_once_its_destroy_succeeded(case: Case) -> None:
    subject = await fresh(case)
    run = await runs.queue(case.kind, subject, RunAction.DESTROY, delete_after=True)
    await runs.claim(case.kind, str(run.id), "a", LEASE)
    version = (await fresh(case)).version
    assert await runs.finish(case.kind, run.id, "a", succeeded=True, message=None)
    assert not await case.kind.model.exists(id=case.subject.id)
    last = (
        await OutboxMessage.filter(topic="gpupaas.status", key=str(case.subject.id)).order_by("-id").first()
    )
    assert last is not None and last.payload["deleted"] is True and last.payload["version"] == version + 1


async def test_a_status_write_on_a_stale_version_is_a_conflict(case: Case) -> None:
    stale = await fresh(case)
    await runs.write_status(case.kind, await fresh(case), case.healthy, None)
    with pytest.raises(UserErrors) as refused:
        await runs.write_status(case.kind, stale, case.healthy, None)
    problem = refused.value.problems[0]
    assert problem.code == ErrorCode.CONFLICT and f"the {case.kind.noun} was changed" in problem.message


async def test_the_reaper_requeues_lost_commands_and_gives_up_on_dead_workers(case: Case) -> None:
    run = await queued(case)
    # a command that seems lost is published again
    await DeploymentRun.filter(id=run.id).update(queued_at=runs.now() - timedelta(minutes=5))
    assert await runs.requeue_stale(case.kind, queued_for=timedelta(seconds=30), max_attempts=3) == 1
    commands = await OutboxMessage.filter(topic="gpupaas.commands", key=str(case.subject.id))
    assert len(commands) == 2
    # the other kind's reaper leaves it alone
    other: RunKind[Any] = SERVICES if case.kind is COMPUTE else COMPUTE
    await DeploymentRun.filter(id=run.id).update(queued_at=runs.now() - timedelta(minutes=5))
    assert await runs.requeue_stale(other, queued_for=timedelta(seconds=30), max_attempts=3) == 0
    # a worker that died: re-queued while attempts are left, then given up
    await runs.claim(case.kind, str(run.id), "a", timedelta(seconds=-1))
    assert await runs.requeue_stale(case.kind, queued_for=timedelta(seconds=30), max_attempts=3) == 1
    assert (await DeploymentRun.get(id=run.id)).status == RunStatus.RUNNING  # published again
    await DeploymentRun.filter(id=run.id).update(attempts=3)
    assert await runs.requeue_stale(case.kind, queued_for=timedelta(seconds=30), max_attempts=3) == 1
    gave_up = await DeploymentRun.get(id=run.id)
    assert gave_up.status == RunStatus.FAILED and case.kind.retry_hint in str(gave_up.message)
    subject = await fresh(case)
    assert subject.status.value == "FAILED" and case.kind.retry_hint in str(subject.status_message)


async def test_drift_fails_a_healthy_subject_and_recovery_restores_it(case: Case) -> None:
    assert not await runs.report_drift(case.kind, str(case.subject.id), True, "OOMKilled")  # not deployed
    await case.kind.model.filter(id=case.subject.id).update(status=case.healthy)
    assert await runs.report_drift(case.kind, str(case.subject.id), True, None)
    subject = await fresh(case)
    assert subject.status.value == "FAILED" and subject.drifted
    assert subject.status_message == f"drift: {case.kind.drift_reason}"
    assert not await runs.report_drift(case.kind, str(case.subject.id), True, "again")  # already failed
    assert await runs.report_drift(case.kind, str(case.subject.id), False, None)
    subject = await fresh(case)
    assert subject.status == case.healthy and not subject.drifted
    # a run that failed is not undone by a workload that looks healthy
    await case.kind.model.filter(id=case.subject.id).update(status="FAILED", drifted=False)
    assert not await runs.report_drift(case.kind, str(case.subject.id), False, None)
    assert not await runs.report_drift(case.kind, "not-an-id", True, None)


async def _webhook_wanting_everything(case: Case) -> Any:
    from gpupaas.webhooks import service as webhooks
    from gpupaas.webhooks.models import WebhookEvent

    events = [e for e in WebhookEvent if e != WebhookEvent.TEST]
    data = webhooks.WebhookIn(url="https://93.184.216.34/hook", events=events)
    hook, _ = await webhooks.create_webhook(
        await platform_actor(), "ml", data, secret_key=KEY, allow_private=False
    )
    return hook


async def test_success_and_failure_queue_webhook_deliveries_in_the_same_transaction(case: Case) -> None:
    import json

    from gpupaas.webhooks.models import WebhookDelivery

    hook = await _webhook_wanting_everything(case)
    # a run that fails: one FAILED event of the kind, with the subject and the message
    run = await queued(case)
    await runs.claim(case.kind, str(run.id), "a", LEASE)
    assert await WebhookDelivery.filter(webhook_id=hook.id).count() == 0  # the started status: none
    assert await runs.finish(case.kind, run.id, "a", succeeded=False, message="ImagePullBackOff")
    [failed] = await WebhookDelivery.filter(webhook_id=hook.id)
    assert failed.event == case.kind.failed_event
    body = json.loads(failed.body)
    assert body["type"] == case.kind.failed_event.value and body["project"]["name"] == "ml"
    assert body["data"] == {
        "id": str(case.subject.id),
        "name": case.subject.name,
        "status": "FAILED",
        "message": "ImagePullBackOff",
        "drifted": False,
    }
    # a run that succeeds: one SUCCESS event
    run = await queued(case)
    await runs.claim(case.kind, str(run.id), "a", LEASE)
    assert await runs.finish(case.kind, run.id, "a", succeeded=True, message=None)
    events = [d.event for d in await WebhookDelivery.filter(webhook_id=hook.id).order_by("created_at")]
    assert events == [case.kind.failed_event, case.kind.success_event]
    # drift fails it again, and says so
    assert await runs.report_drift(case.kind, str(case.subject.id), True, "OOMKilled")
    last = await WebhookDelivery.filter(webhook_id=hook.id).order_by("-created_at").first()
    assert last is not None and json.loads(last.body)["data"]["drifted"] is True


async def test_a_status_write_rolled_back_takes_its_deliveries_with_it(case: Case) -> None:
    from gpupaas.webhooks.models import WebhookDelivery

    hook = await _webhook_wanting_everything(case)

    class Abandoned(Exception):
        pass

    async def abandoned_write() -> None:
        async with in_transaction():
            await runs.write_status(case.kind, await fresh(case), case.kind.failed, "x")
            assert await WebhookDelivery.filter(webhook_id=hook.id).count() == 1  # queued inside
            raise Abandoned

    with pytest.raises(Abandoned):
        await abandoned_write()
    assert (await fresh(case)).status != case.kind.failed
    assert await WebhookDelivery.filter(webhook_id=hook.id).count() == 0


async def test_finishing_reads_the_subject_again_only_when_it_changed_since_the_claim(
    db: object, count_queries: QueryCounter
) -> None:
    # Given a claimed deploy of an instance,
    project = await make_project("ml")
    await make_project("other")
    instance = await make_instance(project, await make_profile(project), name="box")
    run = await runs.queue(COMPUTE, await ComputeInstance.get(id=instance.id), RunAction.DEPLOY)
    first = await runs.claim(COMPUTE, str(run.id), "a", LEASE)
    assert first is not None
    # when nothing changed it, its end is written from what the claim read (no SELECT of it),
    count_queries.statements.clear()
    assert await runs.finish(COMPUTE, run.id, "a", succeeded=True, message=None, claimed=first.subject)
    reads = [s for s in count_queries.statements if s.startswith("SELECT") and '"compute_instances"' in s]
    assert reads == [], reads
    assert (await ComputeInstance.get(id=instance.id)).status == DeploymentStatus.SUCCESS

    # and when a sharing change (which moves no version) came between claim and finish,
    again = await runs.queue(COMPUTE, await ComputeInstance.get(id=instance.id), RunAction.DEPLOY)
    second = await runs.claim(COMPUTE, str(again.id), "a", LEASE)
    assert second is not None
    await compute.set_sharing(await platform_actor(), str(instance.id), SharingMode.ALL_PROJECTS, None)
    assert await runs.finish(COMPUTE, again.id, "a", succeeded=True, message=None, claimed=second.subject)
    # then it is read again, and its last status event says whom it is shared with now.
    last = (
        await OutboxMessage.filter(key=str(instance.id), cursor__not_isnull=True).order_by("-cursor").first()
    )
    assert last is not None and last.payload["status"] == "SUCCESS"
    assert last.payload["sharedWith"] == "ALL"
