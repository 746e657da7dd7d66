"""What compute instances supply to the run lifecycle (runs/): their states, their status events
(with whom they are shared, so that subscribers of other projects see them) and their plans."""

from __future__ import annotations

import uuid
from typing import Any

from gpupaas.accounts.sharing import SharingMode
from gpupaas.clusters import service as clusters
from gpupaas.compute import states
from gpupaas.compute.configuration import plan_for, sealed_outputs
from gpupaas.compute.models import ComputeInstance, ComputeInstanceShare
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core import time_limits
from gpupaas.core.crypto import Sealer
from gpupaas.core.quantities import parse_quantity
from gpupaas.events import rows
from gpupaas.metering.meter import Holding
from gpupaas.provisioning.plan import INSTANCE_LABEL, Plan
from gpupaas.provisioning.registry import ClusterTarget
from gpupaas.runs.kinds import Claimed, RunKind, Work
from gpupaas.runs.lifecycle import now
from gpupaas.runs.models import DeploymentRun
from gpupaas.runs.states import RunAction
from gpupaas.settings import Settings
from gpupaas.webhooks.models import WebhookEvent

RUN = "run"
CLUSTERS = "clusters"


async def shared_with(instance: ComputeInstance) -> list[str] | str:
    if instance.sharing_mode == SharingMode.ALL_PROJECTS:
        return "ALL"
    if instance.sharing_mode == SharingMode.SELECTED_PROJECTS:
        ids = await ComputeInstanceShare.filter(instance_id=instance.id).values_list("project_id", flat=True)
        return [str(i) for i in ids]
    return []


def _whole(quantity: str, per_unit: int) -> int:
    """A snapshot's quantity in whole units (millicores, bytes), rounded up; 0 when it cannot be
    read (a snapshot is checked when it is taken, so that is only old, hand-edited data)."""
    try:
        value = parse_quantity(quantity) * per_unit
    except ValueError:
        return 0
    return max(0, int(value.to_integral_value(rounding="ROUND_CEILING")))


class ComputeRuns(RunKind[ComputeInstance]):
    model = ComputeInstance
    noun = "instance"
    command_type = RUN
    owner_label = INSTANCE_LABEL
    healthy = DeploymentStatus.SUCCESS
    failed = DeploymentStatus.FAILED
    drift_reason = "a workload failed"
    retry_hint = "deploy again to retry"
    # A deployed instance holds its resources (its nodes or its namespace's quota; the service
    # instances inside it take their GPUs out of that quota, so they are not metered on their
    # own) from the deploy's SUCCESS until a destroy ends or the instance fails; a redeploy or a
    # destroy under way keeps the meter going.
    meter_starts = frozenset({DeploymentStatus.SUCCESS})
    meter_keeps = frozenset(
        {
            DeploymentStatus.SUCCESS,
            DeploymentStatus.WAITING,
            DeploymentStatus.IN_PROGRESS,
            DeploymentStatus.DESTROYING,
        }
    )
    success_event = WebhookEvent.COMPUTE_INSTANCE_SUCCESS
    failed_event = WebhookEvent.COMPUTE_INSTANCE_FAILED

    def owns(self, run: DeploymentRun) -> bool:
        return run.service_id is None

    def runs_filter(self) -> dict[str, Any]:
        return {"service_id__isnull": True}

    def subject_id(self, run: DeploymentRun) -> uuid.UUID:
        return run.instance_id

    def run_fields(self, subject: ComputeInstance) -> dict[str, Any]:
        return {"instance_id": subject.id}

    def subject_runs(self, subject_id: uuid.UUID) -> dict[str, Any]:
        return {"instance_id": subject_id, "service_id__isnull": True}

    def command(self, run: DeploymentRun) -> tuple[str, dict[str, Any]]:
        instance_id = str(run.instance_id)
        return instance_id, {
            "type": RUN,
            "runId": str(run.id),
            "instanceId": instance_id,
            "action": run.action.value,
        }

    async def status_event(self, subject: ComputeInstance, *, deleted: bool) -> dict[str, Any]:
        return {
            "type": "status",
            "instanceId": str(subject.id),
            "projectId": str(subject.project_id),
            "sharedWith": await shared_with(subject),
            "status": subject.status.value,
            "message": subject.status_message,
            "version": subject.version,
            "deleted": deleted,
            "at": now().isoformat(),
            # The instance as written: its subscribers build their answers from it, unread.
            "row": None if deleted else rows.dump(subject),
        }

    def started(self, action: RunAction) -> DeploymentStatus:
        return states.run_started(action)

    def succeeded(self, action: RunAction) -> DeploymentStatus:
        return states.run_succeeded(action)

    def result_fields(
        self, subject: ComputeInstance, run: DeploymentRun, succeeded: bool, outputs: dict[str, str] | None
    ) -> dict[str, Any]:
        if outputs is None and succeeded and run.action == RunAction.DESTROY:
            outputs = {}  # nothing deployed: nothing to show
        columns: dict[str, Any] = {} if outputs is None else {"outputs": outputs}
        # Time limits count from the first successful deploy (a redeploy keeps its due time);
        # a destroy ends them.
        if succeeded and run.action == RunAction.DEPLOY and subject.running_since is None:
            columns.update(time_limits.arm(_limits(subject), now()))
        elif succeeded and run.action == RunAction.DESTROY:
            columns.update(time_limits.disarmed())
        return columns

    def holding(self, subject: ComputeInstance) -> Holding:
        resources = subject.profile_snapshot.resources
        return Holding(
            kind="compute_instance",
            name=subject.name,
            project_id=subject.project_id,
            owner_id=subject.owner_id,
            gpu_count=resources.gpu_count,
            gpu_vendor=resources.gpu_vendor,
            gpu_model=resources.gpu_model or "",
            cpu_millicores=_whole(resources.cpu, 1000),
            memory_bytes=_whole(resources.memory, 1),
        )

    def claim_returning(self, dialect: str) -> dict[str, str]:
        return {CLUSTERS: clusters.stamp_sql(dialect)}

    async def work(self, claimed: Claimed[ComputeInstance], settings: Settings) -> Work:
        instance = claimed.subject
        secret_key = settings.secret_key

        def plan(target: ClusterTarget | None) -> Plan:
            return plan_for(instance, claimed.project_name, target, secret_key=secret_key)

        def keep_outputs(outputs: dict[str, str]) -> dict[str, str]:
            return sealed_outputs(instance, outputs, Sealer(secret_key))

        return Work(
            cluster_id=instance.profile_snapshot.cluster_id,
            plan=plan,
            keep_outputs=keep_outputs,
            cluster_stamp=claimed.returned.get(CLUSTERS),
        )


COMPUTE = ComputeRuns()


def _limits(instance: ComputeInstance) -> time_limits.Limits:
    return time_limits.Limits(instance.auto_stop_minutes, instance.max_lifetime_minutes)
