"""Instance templates may ask for a GPU partition (a MIG profile's resource, such as
nvidia.com/mig-1g.10gb) instead of whole GPUs: core/gpu_resources.py."""

from tortoise import fields, migrations
from tortoise.migrations import operations as ops


class Migration(migrations.Migration):
    dependencies = [("gpupaas", "0024_status_streams")]

    initial = False

    operations = [
        ops.AddField(
            model_name="InstanceTemplate",
            name="gpu_partition",
            field=fields.CharField(null=True, max_length=63),
        ),
    ]
