"""What GPU service instances supply to the run lifecycle (runs/): their states, their status
events (kind "service", with their compute instance) and their plans. A service instance's runs go
one at a time: a delete is accepted at once and waits for the start before it, and a start of a
service instance that is being deleted is superseded (it ends CANCELED, the delete runs next)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from gpupaas.compute.models import ComputeInstance
from gpupaas.core import crypto, time_limits
from gpupaas.provisioning.plan import SERVICE_LABEL, PermanentError, Plan
from gpupaas.provisioning.registry import ClusterTarget, resource_names
from gpupaas.pull_secrets import service as pull_secrets
from gpupaas.runs.kinds import Claimed, RunKind, Work
from gpupaas.runs.lifecycle import now
from gpupaas.runs.models import DeploymentRun
from gpupaas.runs.states import RunAction, RunStatus
from gpupaas.service_instances import ssh_material, states
from gpupaas.service_instances.models import ServiceInstance
from gpupaas.service_instances.plan import build_service_plan, node_ports_of
from gpupaas.service_instances.podspec import SshSetup
from gpupaas.service_instances.states import ServiceStatus
from gpupaas.settings import Settings
from gpupaas.webhooks.models import WebhookEvent

SERVICE_RUN = "service-run"


def generated_values(secret_key: str, service: ServiceInstance) -> dict[str, str]:
    """The service's `{{generated_*}}` values (secrets: not for logs)."""
    if not service.generated:
        return {}
    values = json.loads(crypto.decrypt(secret_key, service.generated))
    return {str(k): str(v) for k, v in values.items()}


def plan_of(
    service: ServiceInstance,
    instance: ComputeInstance,
    project_name: str,
    resource_names: Mapping[str, str],
    *,
    values: dict[str, str],
    running: bool,
    restart: str | None,
    registry: tuple[str, str, str] | None = None,
    ssh: SshSetup | None = None,
) -> Plan:
    """The service's plan in its compute instance (ValueError when its spec cannot run);
    `registry`: its image pull secret's registry, user and password (`pull_credentials`); `ssh`:
    its SSH server's image and keys (ssh.py `setup_for`), which a spec with SSH access needs."""
    snapshot = instance.profile_snapshot
    annotations = {
        **dict(snapshot.annotations),
        **{pair[0]: pair[1] for pair in instance.annotations},
    }
    return build_service_plan(
        service_id=str(service.id),
        name=service.name,
        # Unresolved: the pod reads the generated values from a Secret (podspec.py), so that the
        # Deployment holds no token.
        spec=service.spec_model(),
        generated=values,
        gpu_count=service.gpu_count,
        compute_id=str(instance.id),
        compute_name=instance.name,
        project=project_name,
        compute_resources=snapshot.resources.to_json(),
        profile_name=snapshot.profile_name,
        gpu_resource_names=dict(resource_names),
        allocation=snapshot.allocation_type.value,
        running=running,
        restart=restart,
        annotations=annotations,
        registry=registry,
        ssh=ssh,
    )


async def pull_credentials(secret_key: str, service: ServiceInstance) -> tuple[str, str, str] | None:
    """The service's image pull secret as its pod's Secret needs it (None: it names none); a
    PermanentError when the project no longer has it or it cannot be decrypted."""
    name = service.spec_model().image_pull_secret
    if name is None:
        return None
    secret = await pull_secrets.find(service.project_id, name)
    if secret is None:
        raise PermanentError(
            f'the project has no image pull secret "{name}" any more: create it again, or make a new '
            "service instance without it"
        )
    try:
        found = pull_secrets.credentials(secret, secret_key)
    except crypto.DecryptionError as error:
        raise PermanentError(f'image pull secret "{name}": {error}') from None
    return found.registry, found.username, found.password


async def _last_restart(service_id: uuid.UUID) -> str | None:
    """The id of the restart that made the running pod (its pod template's annotation), or None
    when its last start did."""
    last = (
        await DeploymentRun.filter(
            service_id=service_id,
            action__in=[RunAction.START, RunAction.RESTART],
            status=RunStatus.SUCCEEDED,
        )
        .order_by("-created_at")
        .first()
    )
    return str(last.id) if last is not None and last.action == RunAction.RESTART else None


class ServiceRuns(RunKind[ServiceInstance]):
    model = ServiceInstance
    noun = "service instance"
    command_type = SERVICE_RUN
    owner_label = SERVICE_LABEL
    one_at_a_time = True
    healthy = ServiceStatus.RUNNING
    failed = ServiceStatus.FAILED
    drift_reason = "its pod failed"
    retry_hint = "start it again to retry"
    success_event = WebhookEvent.SERVICE_INSTANCE_SUCCESS
    failed_event = WebhookEvent.SERVICE_INSTANCE_FAILED

    def owns(self, run: DeploymentRun) -> bool:
        return run.service_id is not None

    def runs_filter(self) -> dict[str, Any]:
        return {"service_id__isnull": False}

    def subject_id(self, run: DeploymentRun) -> uuid.UUID:
        assert run.service_id is not None  # one of this kind's runs
        return run.service_id

    def run_fields(self, subject: ServiceInstance) -> dict[str, Any]:
        return {"instance_id": subject.compute_instance_id, "service_id": subject.id}

    def subject_runs(self, subject_id: uuid.UUID) -> dict[str, Any]:
        return {"service_id": subject_id}

    def command(self, run: DeploymentRun) -> tuple[str, dict[str, Any]]:
        service_id = str(self.subject_id(run))
        return service_id, {
            "type": SERVICE_RUN,
            "runId": str(run.id),
            "serviceId": service_id,
            "action": run.action.value,
        }

    async def status_event(self, subject: ServiceInstance, *, deleted: bool) -> dict[str, Any]:
        return {
            "type": "status",
            "kind": "service",
            "instanceId": str(subject.id),
            "projectId": str(subject.project_id),
            "computeInstanceId": str(subject.compute_instance_id),
            "sharedWith": [],
            "status": subject.status.value,
            "message": subject.status_message,
            "version": subject.version,
            "deleted": deleted,
            "at": now().isoformat(),
        }

    def started(self, action: RunAction) -> ServiceStatus:
        return states.run_started(action)

    def succeeded(self, action: RunAction) -> ServiceStatus:
        return states.run_succeeded(action)

    may_supersede = True

    def superseded(self, subject: ServiceInstance, run: DeploymentRun) -> bool:
        """A start, stop or restart of a service instance that is being deleted: nothing to do; new
        SSH keys for one that no longer runs: its next start renders them."""
        if run.action == RunAction.APPLY_SSH_KEYS:
            return subject.status != ServiceStatus.RUNNING
        return subject.status == ServiceStatus.DELETING and run.action != RunAction.DESTROY

    def failed_after(self, action: RunAction) -> ServiceStatus:
        # New keys that could not be applied leave the pod as it was, running with the old ones.
        return ServiceStatus.RUNNING if action == RunAction.APPLY_SSH_KEYS else ServiceStatus.FAILED

    def result_fields(
        self, subject: ServiceInstance, run: DeploymentRun, succeeded: bool, outputs: dict[str, str] | None
    ) -> dict[str, Any]:
        ports = node_ports_of(outputs) if succeeded and outputs is not None else {}
        columns: dict[str, Any] = {"node_ports": ports} if ports else {}
        # Time limits count from a start (a restart keeps the due time); a stop ends them.
        if not succeeded:
            return columns
        if run.action == RunAction.START or (
            run.action == RunAction.RESTART and subject.running_since is None
        ):
            limits = time_limits.Limits(subject.auto_stop_minutes, subject.max_lifetime_minutes)
            columns.update(time_limits.arm(limits, now()))
        elif run.action in (RunAction.STOP, RunAction.DESTROY):
            columns.update(time_limits.disarmed())
        return columns

    async def work(self, claimed: Claimed[ServiceInstance], settings: Settings) -> Work:
        service, run = claimed.subject, claimed.run
        secret_key = settings.secret_key
        instance = await ComputeInstance.get(id=service.compute_instance_id)
        running = run.action in (RunAction.START, RunAction.RESTART, RunAction.APPLY_SSH_KEYS)
        restart = str(run.id) if run.action == RunAction.RESTART else None
        if run.action == RunAction.APPLY_SSH_KEYS:
            # The pod template as its last start or restart made it: the same pod keeps running.
            restart = await _last_restart(service.id)
        # Read once per run: a destroy needs no credentials, so it never fails for want of them.
        # A problem with them fails the run where plans fail: in plan().
        registry: tuple[str, str, str] | None = None
        ssh: SshSetup | None = None
        unusable: PermanentError | None = None
        if run.action != RunAction.DESTROY:
            try:
                registry = await pull_credentials(secret_key, service)
                ssh = await ssh_material.setup_for(service, secret_key, settings.ssh_image)
            except PermanentError as error:
                unusable = error

        def plan(target: ClusterTarget | None) -> Plan:
            if unusable is not None:
                raise unusable
            try:
                return plan_of(
                    service,
                    instance,
                    claimed.project_name,
                    resource_names(target),
                    values=generated_values(secret_key, service),
                    running=running,
                    restart=restart,
                    registry=registry,
                    ssh=ssh,
                )
            except crypto.DecryptionError as error:
                raise PermanentError(f"the service instance's generated values: {error}") from None
            except ValueError as error:
                raise PermanentError(f"the service instance cannot run: {error}") from None

        return Work(cluster_id=instance.profile_snapshot.cluster_id, plan=plan)


SERVICES = ServiceRuns()
