"""Instance templates choose their services' storage (an ephemeral workspace, a new volume kept or
released on delete, or an existing claim of the namespace) and CPU and memory requests and limits
(instance_templates/spec.py). Null: the defaults, as before. Service instances keep both in their
own copy of the spec (a JSON column already)."""

from tortoise import fields, migrations
from tortoise.migrations import operations as ops


class Migration(migrations.Migration):
    dependencies = [("gpupaas", "0027_simulated_logs_and_events")]

    initial = False

    operations = [
        ops.AddField(model_name="InstanceTemplate", name="storage", field=fields.JSONField(null=True)),
        ops.AddField(model_name="InstanceTemplate", name="resources", field=fields.JSONField(null=True)),
    ]
