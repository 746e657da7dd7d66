"""Users can be disabled: a disabled user's sessions and API tokens sign nobody in, and they cannot
sign in, until a platform admin enables them again (accounts.service.set_user_disabled)."""

from tortoise import fields, migrations
from tortoise.migrations import operations as ops


class Migration(migrations.Migration):
    dependencies = [("gpupaas", "0013_encrypt_sensitive")]

    initial = False

    operations = [
        ops.AddField(
            model_name="User",
            name="disabled_at",
            field=fields.DatetimeField(null=True),
        ),
    ]
