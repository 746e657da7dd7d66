from tortoise import migrations
from tortoise.migrations import operations as ops
import functools
from json import dumps, loads
from tortoise import fields


class Migration(migrations.Migration):
    dependencies = [("gpupaas", "0003_simulated_cluster")]

    initial = False

    operations = [
        ops.AddField(
            model_name="DeploymentRun",
            name="applied",
            field=fields.JSONField(
                default=list, encoder=functools.partial(dumps, separators=(",", ":")), decoder=loads
            ),
        ),
    ]
