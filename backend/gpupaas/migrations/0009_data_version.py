from tortoise import migrations
from tortoise.migrations import operations as ops
from tortoise import fields


class Migration(migrations.Migration):
    dependencies = [("gpupaas", "0008_service_instances")]

    initial = False

    operations = [
        ops.CreateModel(
            name="DataVersion",
            fields=[
                ("id", fields.IntField(generated=True, primary_key=True, unique=True, db_index=True)),
                ("value", fields.BigIntField(default=0)),
            ],
            options={
                "table": "data_version",
                "app": "gpupaas",
                "pk_attr": "id",
                "table_description": "One row (id 1): a counter bumped after every write that can change a cached read (every",
            },
            bases=["Model"],
        ),
    ]
