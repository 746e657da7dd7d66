from tortoise import migrations
from tortoise.migrations import operations as ops
from tortoise import fields


class Migration(migrations.Migration):
    dependencies = [("gpupaas", "0005_clusters")]

    initial = False

    operations = [
        ops.AddField(
            model_name="OutboxMessage",
            name="claimed_by",
            field=fields.CharField(null=True, max_length=128),
        ),
        ops.AddField(
            model_name="OutboxMessage",
            name="claimed_until",
            field=fields.DatetimeField(null=True, auto_now=False, auto_now_add=False),
        ),
    ]
