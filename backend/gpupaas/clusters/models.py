"""Registered clusters: where a profile's instances are deployed, and with which driver."""

from __future__ import annotations

from enum import Enum
from typing import Any

from tortoise import fields
from tortoise.models import Model

from gpupaas.provisioning.registry import ClusterDriver
from gpupaas.provisioning.render.policy import TemplatePolicy


class ClusterStatus(str, Enum):
    UNKNOWN = "UNKNOWN"
    READY = "READY"
    UNREACHABLE = "UNREACHABLE"


class Cluster(Model):
    id = fields.UUIDField(primary_key=True)
    name = fields.CharField(max_length=63, unique=True)
    display_name = fields.CharField(max_length=128)
    driver = fields.CharEnumField(ClusterDriver, max_length=16)
    # Encrypted at rest (core.crypto) and never returned by the API.
    kubeconfig_encrypted: str | None = fields.TextField(null=True)
    in_cluster = fields.BooleanField(default=False)
    context = fields.CharField(max_length=253, null=True)
    # Host (or URL) users reach services on: the start of connect links.
    access_address = fields.CharField(max_length=253, null=True)
    # {vendor: extended resource name}, e.g. {"NVIDIA": "nvidia.com/gpu"}
    gpu_resource_names: fields.JSONField[dict[str, str]] = fields.JSONField(default=dict)
    # Whom the cluster trusts with more than the tenant confinement (provisioning/render/policy.py).
    template_policy = fields.CharEnumField(
        TemplatePolicy,
        max_length=32,
        default=TemplatePolicy.CONFINED,
        db_default=TemplatePolicy.CONFINED.value,
    )
    # Placement (drivers/k8s_manifests/placement.py): {vendor: node label holding the GPU model}
    # over the defaults; the label DEDICATED profiles' pods require ("key=value") and the taint
    # they tolerate ("key=value:Effect"), None when the cluster has no dedicated nodes.
    gpu_model_labels: fields.JSONField[dict[str, str]] = fields.JSONField(default=dict, db_default="{}")
    dedicated_node_label = fields.CharField(max_length=400, null=True)
    dedicated_node_taint = fields.CharField(max_length=420, null=True)
    is_default = fields.BooleanField(default=False)
    status = fields.CharEnumField(ClusterStatus, max_length=16, default=ClusterStatus.UNKNOWN)
    status_message: str | None = fields.TextField(null=True)
    server_version = fields.CharField(max_length=64, null=True)
    # What the last check saw: [{name, cpu, memory, gpuResource, gpuCount, gpuModel}]
    nodes: fields.JSONField[list[dict[str, Any]]] = fields.JSONField(default=list)
    # The GPU models of the profiles deploying here that the last check found on no node.
    missing_gpu_models: fields.JSONField[list[str]] = fields.JSONField(default=list, db_default="[]")
    checked_at = fields.DatetimeField(null=True)
    created_at = fields.DatetimeField(auto_now_add=True)
    updated_at = fields.DatetimeField(auto_now=True)

    class Meta:
        table = "clusters"
