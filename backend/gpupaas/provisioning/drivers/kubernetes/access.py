"""Asking the API server which of the driver's own permissions a kubeconfig's user lacks
(k8s_manifests/access.py): one SelfSubjectAccessReview each, side by side."""

from __future__ import annotations

import asyncio

from gpupaas.provisioning.drivers.k8s_manifests.access import (
    DRIVER_PERMISSIONS,
    SELF_SUBJECT_ACCESS_REVIEWS,
    Permission,
    access_review,
    allowed,
)
from gpupaas.provisioning.drivers.k8s_manifests.api import Request
from gpupaas.provisioning.drivers.kubernetes.api import KubeApi
from gpupaas.provisioning.plan import PermanentError

__all__ = ["missing_permissions"]


async def missing_permissions(api: KubeApi) -> list[Permission]:
    """The driver's permissions the user lacks; none when the server cannot say (no
    SelfSubjectAccessReview, or the user may not create one): then the requests themselves will."""

    async def ask(permission: Permission) -> bool | None:
        request = Request(
            "POST",
            SELF_SUBJECT_ACCESS_REVIEWS,
            content_type="application/json",
            body=access_review(permission),
        )
        try:
            answer = await api.call(
                request, f"asking whether it may {permission.describe()}", missing_ok=True
            )
        except PermanentError:
            return None
        return None if answer is None else allowed(answer)

    answers = await asyncio.gather(*(ask(permission) for permission in DRIVER_PERMISSIONS))
    if any(answer is None for answer in answers):
        return []
    return [permission for permission, ok in zip(DRIVER_PERMISSIONS, answers, strict=True) if not ok]
