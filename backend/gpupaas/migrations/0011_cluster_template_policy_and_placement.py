from tortoise import migrations
from tortoise.migrations import operations as ops
from gpupaas.provisioning.render.policy import TemplatePolicy
from orjson import loads
from tortoise.fields.data import JSON_DUMPS
from tortoise import fields


class Migration(migrations.Migration):
    dependencies = [("gpupaas", "0010_instance_sharing_mode_index")]

    initial = False

    operations = [
        ops.AddField(
            model_name="Cluster",
            name="dedicated_node_label",
            field=fields.CharField(null=True, max_length=400),
        ),
        ops.AddField(
            model_name="Cluster",
            name="dedicated_node_taint",
            field=fields.CharField(null=True, max_length=420),
        ),
        ops.AddField(
            model_name="Cluster",
            name="gpu_model_labels",
            field=fields.JSONField(default=dict, db_default="{}", encoder=JSON_DUMPS, decoder=loads),
        ),
        ops.AddField(
            model_name="Cluster",
            name="missing_gpu_models",
            field=fields.JSONField(default=list, db_default="[]", encoder=JSON_DUMPS, decoder=loads),
        ),
        ops.AddField(
            model_name="Cluster",
            name="template_policy",
            field=fields.CharEnumField(
                default=TemplatePolicy.CONFINED,
                description="CONFINED: CONFINED\nTRUST_PLATFORM_TEMPLATES: TRUST_PLATFORM_TEMPLATES",
                db_default="CONFINED",
                enum_type=TemplatePolicy,
                max_length=32,
            ),
        ),
    ]
