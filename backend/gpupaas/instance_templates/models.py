"""Instance templates: the spec of a container service (GPUStack-style), global or per project.

A global template (the API's `project: null`) is stored in the system project, the one that also
holds the built-in environment templates: the unique (project, name) constraint then keeps names
unique per scope on every database, global ones included (a NULL project would not be unique).

The spec fields are stored in the API's shape (`spec.spec_to_json`): ports as
`[{name, port, protocol, accessParams: [{key, value}]}]`, env as `[{key, value}]`.
"""

from __future__ import annotations

import uuid
from enum import Enum
from typing import Any

from tortoise import fields
from tortoise.models import Model

from gpupaas.accounts.models import Project
from gpupaas.core.gpus import Vendor
from gpupaas.instance_templates.spec import (
    ServiceSpec,
    resources_to_json,
    spec_from_json,
    spec_to_json,
    storage_to_json,
)


class ImagePullPolicy(str, Enum):
    ALWAYS = "ALWAYS"
    IF_NOT_PRESENT = "IF_NOT_PRESENT"
    NEVER = "NEVER"


class Protocol(str, Enum):
    TCP = "TCP"
    UDP = "UDP"
    SCTP = "SCTP"


class InstanceTemplate(Model):
    id = fields.UUIDField(primary_key=True)
    # The system project for global templates (shown as `project: null`).
    project: fields.ForeignKeyRelation[Project] = fields.ForeignKeyField(
        "gpupaas.Project", related_name="instance_templates", on_delete=fields.CASCADE
    )
    project_id: uuid.UUID
    name = fields.CharField(max_length=63)
    display_name = fields.CharField(max_length=128)
    description: str | None = fields.TextField(null=True)
    vendor = fields.CharEnumField(Vendor, max_length=16)
    image = fields.CharField(max_length=1024)
    image_pull_policy = fields.CharEnumField(
        ImagePullPolicy, max_length=16, default=ImagePullPolicy.IF_NOT_PRESENT
    )
    command: fields.JSONField[list[str]] = fields.JSONField(default=list)
    container_disk = fields.CharField(max_length=64)
    mount_path = fields.CharField(max_length=1024)
    ports: fields.JSONField[list[dict[str, Any]]] = fields.JSONField(default=list)
    env: fields.JSONField[list[dict[str, str]]] = fields.JSONField(default=list)
    # A MIG profile's resource (nvidia.com/mig-1g.10gb) its services ask for instead of whole GPUs.
    gpu_partition = fields.CharField(max_length=63, null=True)
    # The name of an image pull secret of the project the service runs in (pull_secrets).
    image_pull_secret = fields.CharField(max_length=63, null=True)
    # The workspace's storage ({mode, size, reclaim, claimName}) and the container's CPU and memory
    # ({cpuRequest, cpuLimit, memoryRequest, memoryLimit}), as spec.py's JSON; null: the defaults
    # (a new volume of the GPUs' share, released on delete; CPU and memory by that share).
    storage: fields.JSONField[dict[str, Any] | None] = fields.JSONField(null=True)
    resources: fields.JSONField[dict[str, Any] | None] = fields.JSONField(null=True)
    # SSH access ({port, user}: the port's label and the user), or NULL for none.
    ssh: fields.JSONField[dict[str, str] | None] = fields.JSONField(null=True)
    built_in = fields.BooleanField(default=False)
    created_at = fields.DatetimeField(auto_now_add=True)
    updated_at = fields.DatetimeField(auto_now=True)

    class Meta:
        table = "instance_templates"
        unique_together = (("project", "name"),)

    def spec(self) -> ServiceSpec:
        """The template's spec, as a service instance copies it."""
        return spec_from_json(
            {
                "vendor": Vendor(self.vendor).value,
                "image": self.image,
                "imagePullPolicy": ImagePullPolicy(self.image_pull_policy).value,
                "command": self.command,
                "containerDisk": self.container_disk,
                "mountPath": self.mount_path,
                "ports": self.ports,
                "env": self.env,
                "gpuPartition": self.gpu_partition,
                "imagePullSecret": self.image_pull_secret,
                "storage": self.storage,
                "resources": self.resources,
                "ssh": self.ssh,
            }
        )

    def set_spec(self, spec: ServiceSpec) -> None:
        data = spec_to_json(spec)
        self.vendor = Vendor(data["vendor"])
        self.image = data["image"]
        self.image_pull_policy = ImagePullPolicy(data["imagePullPolicy"])
        self.command = data["command"]
        self.container_disk = data["containerDisk"]
        self.mount_path = data["mountPath"]
        self.ports = data["ports"]
        self.env = data["env"]
        self.gpu_partition = data["gpuPartition"]
        self.image_pull_secret = data["imagePullSecret"]
        default = ServiceSpec(vendor=spec.vendor, image=spec.image)
        self.storage = None if spec.storage == default.storage else storage_to_json(spec.storage)
        self.resources = None if spec.resources == default.resources else resources_to_json(spec.resources)
        self.ssh = data["ssh"]
