from tortoise import migrations
from tortoise.migrations import operations as ops
from tortoise.fields.base import OnDelete
from tortoise import fields
from tortoise.indexes import Index


class Migration(migrations.Migration):
    dependencies = [("gpupaas", "0011_cluster_template_policy_and_placement")]

    initial = False

    operations = [
        ops.AddField(
            model_name="ComputeInstance",
            name="owner",
            field=fields.ForeignKeyField(
                "gpupaas.User",
                source_field="owner_id",
                null=True,
                db_constraint=True,
                to_field="id",
                related_name="compute_instances",
                on_delete=OnDelete.SET_NULL,
            ),
        ),
        ops.AddIndex(
            model_name="ComputeInstance",
            index=Index(fields=["owner_id", "created_at"]),
        ),
        ops.AddField(
            model_name="ServiceInstance",
            name="owner",
            field=fields.ForeignKeyField(
                "gpupaas.User",
                source_field="owner_id",
                null=True,
                db_constraint=True,
                to_field="id",
                related_name="service_instances",
                on_delete=OnDelete.SET_NULL,
            ),
        ),
        ops.AddIndex(
            model_name="ServiceInstance",
            index=Index(fields=["owner_id", "created_at"]),
        ),
    ]
