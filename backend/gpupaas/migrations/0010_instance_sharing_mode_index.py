from tortoise import migrations
from tortoise.migrations import operations as ops
from tortoise.indexes import Index


class Migration(migrations.Migration):
    dependencies = [("gpupaas", "0009_data_version")]

    initial = False

    operations = [
        ops.AddIndex(
            model_name="ComputeInstance",
            index=Index(fields=["sharing_mode"]),
        ),
    ]
