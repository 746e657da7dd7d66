from tortoise import migrations
from tortoise.migrations import operations as ops
import functools
from gpupaas.core.actor import Role
from gpupaas.catalog.models import AllocationType, VersionState
from gpupaas.accounts.sharing import SharingMode
from gpupaas.core.gpus import Vendor
from json import dumps, loads
from tortoise.fields.base import OnDelete
from uuid import uuid4
from tortoise import fields
from tortoise.indexes import Index


class Migration(migrations.Migration):
    initial = True

    operations = [
        ops.CreateModel(
            name="Project",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                ("name", fields.CharField(unique=True, max_length=63)),
                ("display_name", fields.CharField(max_length=128)),
                ("is_system", fields.BooleanField(default=False)),
                ("created_at", fields.DatetimeField(auto_now=False, auto_now_add=True)),
            ],
            options={"table": "projects", "app": "gpupaas", "pk_attr": "id"},
            bases=["Model"],
        ),
        ops.CreateModel(
            name="EnvironmentTemplate",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                (
                    "project",
                    fields.ForeignKeyField(
                        "gpupaas.Project",
                        source_field="project_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="environment_templates",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
                ("name", fields.CharField(max_length=63)),
                ("display_name", fields.CharField(max_length=128)),
                ("description", fields.TextField(null=True, unique=False)),
                ("built_in", fields.BooleanField(default=False)),
                ("created_at", fields.DatetimeField(auto_now=False, auto_now_add=True)),
                ("updated_at", fields.DatetimeField(auto_now=True, auto_now_add=False)),
            ],
            options={
                "table": "environment_templates",
                "app": "gpupaas",
                "unique_together": (("project", "name"),),
                "pk_attr": "id",
            },
            bases=["Model"],
        ),
        ops.CreateModel(
            name="EnvironmentTemplateVersion",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                (
                    "template",
                    fields.ForeignKeyField(
                        "gpupaas.EnvironmentTemplate",
                        source_field="template_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="versions",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
                ("version", fields.CharField(max_length=63)),
                (
                    "state",
                    fields.CharEnumField(
                        default=VersionState.DRAFT,
                        description="DRAFT: DRAFT\nACTIVE: ACTIVE\nDISABLED: DISABLED",
                        enum_type=VersionState,
                        max_length=16,
                    ),
                ),
                ("resources", fields.TextField(unique=False)),
                (
                    "inputs",
                    fields.JSONField(
                        default=list, encoder=functools.partial(dumps, separators=(",", ":")), decoder=loads
                    ),
                ),
                (
                    "outputs",
                    fields.JSONField(
                        default=list, encoder=functools.partial(dumps, separators=(",", ":")), decoder=loads
                    ),
                ),
                ("created_at", fields.DatetimeField(auto_now=False, auto_now_add=True)),
            ],
            options={
                "table": "environment_template_versions",
                "app": "gpupaas",
                "unique_together": (("template", "version"),),
                "pk_attr": "id",
            },
            bases=["Model"],
        ),
        ops.CreateModel(
            name="ComputeProfile",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                (
                    "project",
                    fields.ForeignKeyField(
                        "gpupaas.Project",
                        source_field="project_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="compute_profiles",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
                ("name", fields.CharField(max_length=63)),
                ("display_name", fields.CharField(max_length=128)),
                ("description", fields.TextField(null=True, unique=False)),
                (
                    "allocation_type",
                    fields.CharEnumField(
                        description="DEDICATED: DEDICATED\nSHARED: SHARED",
                        enum_type=AllocationType,
                        max_length=16,
                    ),
                ),
                (
                    "template_version",
                    fields.ForeignKeyField(
                        "gpupaas.EnvironmentTemplateVersion",
                        source_field="template_version_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="profiles",
                        on_delete=OnDelete.RESTRICT,
                    ),
                ),
                ("cpu", fields.CharField(max_length=32)),
                ("memory", fields.CharField(max_length=32)),
                ("storage", fields.CharField(max_length=32)),
                ("gpu_count", fields.IntField()),
                (
                    "gpu_vendor",
                    fields.CharEnumField(
                        description="NVIDIA: NVIDIA\nAMD: AMD\nINTEL: INTEL\nASCEND: ASCEND\nCPU: CPU",
                        enum_type=Vendor,
                        max_length=16,
                    ),
                ),
                ("gpu_model", fields.CharField(null=True, max_length=128)),
                (
                    "labels",
                    fields.JSONField(
                        default=list, encoder=functools.partial(dumps, separators=(",", ":")), decoder=loads
                    ),
                ),
                (
                    "annotations",
                    fields.JSONField(
                        default=list, encoder=functools.partial(dumps, separators=(",", ":")), decoder=loads
                    ),
                ),
                ("icon_url", fields.TextField(null=True, unique=False)),
                ("readme", fields.TextField(null=True, unique=False)),
                ("readme_html", fields.TextField(null=True, unique=False)),
                (
                    "input_settings",
                    fields.JSONField(
                        default=list, encoder=functools.partial(dumps, separators=(",", ":")), decoder=loads
                    ),
                ),
                (
                    "output_settings",
                    fields.JSONField(
                        default=list, encoder=functools.partial(dumps, separators=(",", ":")), decoder=loads
                    ),
                ),
                (
                    "sharing_mode",
                    fields.CharEnumField(
                        default=SharingMode.NONE,
                        description="NONE: NONE\nALL_PROJECTS: ALL_PROJECTS\nSELECTED_PROJECTS: SELECTED_PROJECTS",
                        enum_type=SharingMode,
                        max_length=32,
                    ),
                ),
                ("revision", fields.IntField(default=1)),
                ("created_at", fields.DatetimeField(auto_now=False, auto_now_add=True)),
                ("updated_at", fields.DatetimeField(auto_now=True, auto_now_add=False)),
            ],
            options={
                "table": "compute_profiles",
                "app": "gpupaas",
                "unique_together": (("project", "name"),),
                "indexes": [Index(fields=["project_id", "created_at"])],
                "pk_attr": "id",
            },
            bases=["Model"],
        ),
        ops.CreateModel(
            name="ComputeProfileShare",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                (
                    "profile",
                    fields.ForeignKeyField(
                        "gpupaas.ComputeProfile",
                        source_field="profile_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="shares",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
                (
                    "project",
                    fields.ForeignKeyField(
                        "gpupaas.Project",
                        source_field="project_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="shared_profiles",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
            ],
            options={
                "table": "compute_profile_shares",
                "app": "gpupaas",
                "unique_together": (("profile", "project"),),
                "pk_attr": "id",
            },
            bases=["Model"],
        ),
        ops.CreateModel(
            name="User",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                ("username", fields.CharField(unique=True, max_length=64)),
                ("password_hash", fields.CharField(max_length=255)),
                ("is_platform_admin", fields.BooleanField(default=False)),
                ("created_at", fields.DatetimeField(auto_now=False, auto_now_add=True)),
            ],
            options={"table": "users", "app": "gpupaas", "pk_attr": "id"},
            bases=["Model"],
        ),
        ops.CreateModel(
            name="ApiToken",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                (
                    "user",
                    fields.ForeignKeyField(
                        "gpupaas.User",
                        source_field="user_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="api_tokens",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
                ("name", fields.CharField(max_length=128)),
                ("token_hash", fields.CharField(unique=True, max_length=64)),
                ("created_at", fields.DatetimeField(auto_now=False, auto_now_add=True)),
                ("last_used_at", fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
                ("expires_at", fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
            ],
            options={
                "table": "api_tokens",
                "app": "gpupaas",
                "unique_together": (("user", "name"),),
                "pk_attr": "id",
            },
            bases=["Model"],
        ),
        ops.CreateModel(
            name="Membership",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                (
                    "user",
                    fields.ForeignKeyField(
                        "gpupaas.User",
                        source_field="user_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="memberships",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
                (
                    "project",
                    fields.ForeignKeyField(
                        "gpupaas.Project",
                        source_field="project_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="memberships",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
                (
                    "role",
                    fields.CharEnumField(
                        description="ADMIN: ADMIN\nMEMBER: MEMBER", enum_type=Role, max_length=16
                    ),
                ),
                ("created_at", fields.DatetimeField(auto_now=False, auto_now_add=True)),
            ],
            options={
                "table": "memberships",
                "app": "gpupaas",
                "unique_together": (("user", "project"),),
                "pk_attr": "id",
            },
            bases=["Model"],
        ),
        ops.CreateModel(
            name="Session",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                (
                    "user",
                    fields.ForeignKeyField(
                        "gpupaas.User",
                        source_field="user_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="sessions",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
                ("token_hash", fields.CharField(unique=True, max_length=64)),
                ("created_at", fields.DatetimeField(auto_now=False, auto_now_add=True)),
                ("expires_at", fields.DatetimeField(auto_now=False, auto_now_add=False)),
            ],
            options={"table": "sessions", "app": "gpupaas", "pk_attr": "id"},
            bases=["Model"],
        ),
    ]
