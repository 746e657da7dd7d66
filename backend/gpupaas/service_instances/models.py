"""GPU service instances: containers run from instance templates inside a compute instance."""

from __future__ import annotations

import uuid
from typing import Any

from tortoise import fields
from tortoise.models import Model

from gpupaas.accounts.models import Project, User
from gpupaas.compute.models import ComputeInstance
from gpupaas.instance_templates.models import InstanceTemplate
from gpupaas.instance_templates.spec import ServiceSpec, spec_from_json
from gpupaas.service_instances.states import ServiceStatus


class ServiceInstance(Model):
    """A container run from an instance template inside a compute instance (GPUStack's "GPU service
    instance"). `spec` is its own copy of the template's spec (with the caller's changes), with the
    `{{generated_*}}` placeholders left in; their values, generated once at creation, are kept
    encrypted in `generated` and filled in where the spec is used (the plan, the connect links)."""

    id = fields.UUIDField(primary_key=True)
    project: fields.ForeignKeyRelation[Project] = fields.ForeignKeyField(
        "gpupaas.Project", related_name="service_instances", on_delete=fields.CASCADE
    )
    project_id: uuid.UUID
    # A compute instance with service instances cannot be destroyed or deleted (compute/service.py).
    compute_instance: fields.ForeignKeyRelation[ComputeInstance] = fields.ForeignKeyField(
        "gpupaas.ComputeInstance", related_name="services", on_delete=fields.CASCADE
    )
    compute_instance_id: uuid.UUID
    # SET_NULL: the instance keeps its copy of the spec when its template is deleted.
    template: fields.ForeignKeyNullableRelation[InstanceTemplate] = fields.ForeignKeyField(
        "gpupaas.InstanceTemplate", related_name="service_instances", null=True, on_delete=fields.SET_NULL
    )
    template_id: uuid.UUID | None
    # Its creator, or whom a project admin gave it to (as compute instances' owners): with the
    # project's admins, the only one who may start, stop, restart or delete it and who sees its
    # connect links' access params. NULL: only admins (rows from before migration 0012).
    owner: fields.ForeignKeyNullableRelation[User] = fields.ForeignKeyField(
        "gpupaas.User", related_name="service_instances", null=True, on_delete=fields.SET_NULL
    )
    owner_id: uuid.UUID | None
    template_name = fields.CharField(max_length=63)
    name = fields.CharField(max_length=63)
    display_name = fields.CharField(max_length=128)
    spec: fields.JSONField[dict[str, Any]] = fields.JSONField(default=dict)
    # Fernet (core.crypto) of the JSON object {placeholder name: value}.
    generated = fields.TextField(default="")
    # Fernet of its SSH server's host key (OpenSSH PEM), made with it when its spec has SSH access:
    # the same across stop, start and restart, so that clients keep trusting it (service_instances/ssh.py).
    ssh_host_key = fields.TextField(default="", db_default="")
    gpu_count = fields.IntField(default=0)
    status = fields.CharEnumField(ServiceStatus, max_length=16, default=ServiceStatus.PENDING)
    status_message: str | None = fields.TextField(null=True)
    # The Service's node port of each port, by port name, as the cluster assigned them.
    node_ports: fields.JSONField[dict[str, int]] = fields.JSONField(default=dict)
    # FAILED because its pod failed on the cluster (drift) rather than because a run failed: it
    # turns back to RUNNING by itself when the pod recovers.
    drifted = fields.BooleanField(default=False)
    # Bumped by every status change: events carry it, writers use it as an optimistic lock.
    version = fields.IntField(default=1)
    # Time limits (core/time_limits.py): its own, within its compute instance's (copied at
    # creation); armed while it runs, with the due time the scheduler (workers/scheduler.py)
    # claims (a lease in stop_claimed_until).
    auto_stop_minutes: int | None = fields.IntField(null=True)
    max_lifetime_minutes: int | None = fields.IntField(null=True)
    running_since = fields.DatetimeField(null=True)
    stop_at = fields.DatetimeField(null=True)
    stop_reason: str | None = fields.TextField(null=True)
    lifetime_ends_at = fields.DatetimeField(null=True)
    stop_warned_at = fields.DatetimeField(null=True)
    stop_claimed_until = fields.DatetimeField(null=True)
    # Why the last auto-stop was not carried out (a compute instance that runs service instances).
    stop_refused: str | None = fields.TextField(null=True)
    created_at = fields.DatetimeField(auto_now_add=True)
    updated_at = fields.DatetimeField(auto_now=True)

    class Meta:
        table = "service_instances"
        # Its objects are named after it in the compute instance's namespace.
        unique_together = (("compute_instance", "name"),)
        indexes = (("project_id", "created_at"), ("owner_id", "created_at"), ("stop_at",))

    def spec_model(self) -> ServiceSpec:
        return spec_from_json(self.spec)


class ServiceInstanceSshKey(Model):
    """An SSH public key added to one service instance (besides its owner's): who may log in to it
    too. The line is the one ssh_keys.keys rebuilt from the parsed key, never the text as given."""

    id = fields.UUIDField(primary_key=True)
    service: fields.ForeignKeyRelation[ServiceInstance] = fields.ForeignKeyField(
        "gpupaas.ServiceInstance", related_name="ssh_keys", on_delete=fields.CASCADE
    )
    service_id: uuid.UUID
    added_by: fields.ForeignKeyNullableRelation[User] = fields.ForeignKeyField(
        "gpupaas.User", related_name="service_ssh_keys_added", null=True, on_delete=fields.SET_NULL
    )
    added_by_id: uuid.UUID | None
    name = fields.CharField(max_length=128)
    key_type = fields.CharField(max_length=64)
    bits = fields.IntField()
    fingerprint = fields.CharField(max_length=64)
    public_key = fields.TextField()
    created_at = fields.DatetimeField(auto_now_add=True)

    class Meta:
        table = "service_instance_ssh_keys"
        unique_together = (("service", "fingerprint"), ("service", "name"))
        ordering = ["name"]
