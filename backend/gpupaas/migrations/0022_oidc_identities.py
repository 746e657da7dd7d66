"""Users can be OpenID Connect identities (accounts/oidc.py): the (issuer, subject) a user signs in
as, unique together (local accounts have neither), and the project roles the provider's groups gave
at the last sign-in. A user made by a sign-in has an empty password hash, which no password
matches: no column change is needed for that."""

from orjson import loads
from tortoise import fields, migrations
from tortoise.fields.data import JSON_DUMPS
from tortoise.migrations import operations as ops
from tortoise.migrations.constraints import UniqueConstraint


class Migration(migrations.Migration):
    dependencies = [("gpupaas", "0021_people_and_sign_in_throttling")]

    initial = False

    operations = [
        ops.AddField(
            model_name="User",
            name="oidc_issuer",
            field=fields.CharField(null=True, max_length=255),
        ),
        ops.AddField(
            model_name="User",
            name="oidc_roles",
            field=fields.JSONField(null=True, encoder=JSON_DUMPS, decoder=loads),
        ),
        ops.AddField(
            model_name="User",
            name="oidc_subject",
            field=fields.CharField(null=True, max_length=255),
        ),
        ops.AddConstraint(
            model_name="User",
            constraint=UniqueConstraint(fields=("oidc_issuer", "oidc_subject"), name=None),
        ),
    ]
