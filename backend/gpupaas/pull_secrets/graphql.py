"""GraphQL for image pull secrets. Thin: every rule lives in `pull_secrets.service`."""

from __future__ import annotations

from datetime import datetime

import strawberry

from gpupaas.accounts.graphql import ProjectType, project_of
from gpupaas.graphql.common import DeletePayload, UserError, attempt, delete_payload
from gpupaas.graphql.context import Info
from gpupaas.pull_secrets import service
from gpupaas.pull_secrets.models import ImagePullSecret


@strawberry.type(
    name="ImagePullSecret",
    description="A project's registry credentials, chosen by name for templates and services "
    "(imagePullSecret). The password is kept encrypted and never returned.",
)
class ImagePullSecretType:
    id: strawberry.ID
    name: str
    registry: str = strawberry.field(description='The registry\'s host (and port, path): "ghcr.io".')
    username: str
    created_at: datetime
    updated_at: datetime
    _model: strawberry.Private[ImagePullSecret]

    @strawberry.field
    async def project(self, info: Info) -> ProjectType:
        return await project_of(info, self._model.project_id)

    @classmethod
    def of(cls, secret: ImagePullSecret) -> ImagePullSecretType:
        return cls(
            id=strawberry.ID(str(secret.id)),
            name=secret.name,
            registry=secret.registry,
            username=secret.username,
            created_at=secret.created_at,
            updated_at=secret.updated_at,
            _model=secret,
        )


@strawberry.input
class CreateImagePullSecretInput:
    project: str
    name: str = strawberry.field(description='A DNS label, like "ngc" or "ghcr".')
    registry: str
    username: str
    password: str = strawberry.field(
        description="The password or access token: kept encrypted, never returned."
    )


@strawberry.input(description="Fields left out stay as they are; a new password replaces the old one.")
class UpdateImagePullSecretInput:
    id: strawberry.ID
    name: str | None = strawberry.field(
        default=None, description="Only its current value (IMMUTABLE otherwise)."
    )
    registry: str | None = None
    username: str | None = None
    password: str | None = None


@strawberry.type
class ImagePullSecretPayload:
    image_pull_secret: ImagePullSecretType | None
    user_errors: list[UserError]


def _payload(secret: ImagePullSecret | None, errors: list[UserError]) -> ImagePullSecretPayload:
    return ImagePullSecretPayload(
        image_pull_secret=ImagePullSecretType.of(secret) if secret else None, user_errors=errors
    )


@strawberry.type
class PullSecretsQuery:
    @strawberry.field(
        description="The project's image pull secrets by name: for its members and platform admins."
    )
    async def image_pull_secrets(self, info: Info, project: str) -> list[ImagePullSecretType]:
        return [ImagePullSecretType.of(s) for s in await service.list_secrets(info.context.actor, project)]


@strawberry.type
class PullSecretsMutation:
    @strawberry.mutation(description="For the project's admins.")
    async def create_image_pull_secret(
        self, info: Info, input: CreateImagePullSecretInput
    ) -> ImagePullSecretPayload:
        data = service.PullSecretIn(
            name=input.name, registry=input.registry, username=input.username, password=input.password
        )
        secret, errors = await attempt(
            service.create_secret(
                info.context.actor, input.project, data, secret_key=info.context.settings.secret_key
            )
        )
        return _payload(secret, errors)

    @strawberry.mutation(description="For the project's admins; services use it from their next start.")
    async def update_image_pull_secret(
        self, info: Info, input: UpdateImagePullSecretInput
    ) -> ImagePullSecretPayload:
        data = service.PullSecretIn(
            name=input.name, registry=input.registry, username=input.username, password=input.password
        )
        secret, errors = await attempt(
            service.update_secret(
                info.context.actor, input.id, data, secret_key=info.context.settings.secret_key
            )
        )
        return _payload(secret, errors)

    @strawberry.mutation(
        description="For the project's admins; refused (INVALID_STATE) while a template or a service "
        "instance names it."
    )
    async def delete_image_pull_secret(self, info: Info, id: strawberry.ID) -> DeletePayload:
        return await delete_payload(service.delete_secret(info.context.actor, id))
