"""API errors as the Kubernetes API answers them: a Status object (apiVersion v1, kind Status,
status Failure) with message, reason, code and details {name, group, kind, causes}."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tests.fake_kube.resources import ResourceType
from tests.fake_kube.schema import Cause

REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Gone",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


class ApiError(Exception):
    def __init__(
        self,
        code: int,
        message: str,
        reason: str | None = None,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason if reason is not None else REASONS.get(code, "Unknown")
        self.details = details
        self.headers = headers or {}

    def status(self) -> dict[str, Any]:
        return status_object(self.code, self.message, self.reason, self.details)


def status_object(
    code: int, message: str, reason: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


def _details(rt: ResourceType, name: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name}
    if rt.group:
        details["group"] = rt.group
    details["kind"] = rt.plural
    return details


def not_found(rt: ResourceType, name: str) -> ApiError:
    return ApiError(404, f'{rt.qualified} "{name}" not found', details=_details(rt, name))


def already_exists(rt: ResourceType, name: str) -> ApiError:
    return ApiError(409, f'{rt.qualified} "{name}" already exists', "AlreadyExists", _details(rt, name))


def conflict(rt: ResourceType, name: str, why: str, causes: Iterable[dict[str, str]] = ()) -> ApiError:
    details = _details(rt, name)
    if causes := list(causes):
        details["causes"] = causes
    return ApiError(409, f'Operation cannot be fulfilled on {rt.qualified} "{name}": {why}', details=details)


def modified(rt: ResourceType, name: str) -> ApiError:
    return conflict(
        rt,
        name,
        "the object has been modified; please apply your changes to the latest version and try again",
    )


def invalid(rt: ResourceType, name: str, causes: list[Cause]) -> ApiError:
    texts = [cause.text() for cause in causes]
    summary = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    details: dict[str, Any] = {"name": name}
    if rt.group:
        details["group"] = rt.group
    details["kind"] = rt.kind
    details["causes"] = [cause.to_json() for cause in causes]
    return ApiError(422, f'{rt.qualified_kind} "{name}" is invalid: {summary}', details=details)


def invalid_options(kind: str, causes: list[Cause]) -> ApiError:
    """An invalid request option (PatchOptions, DeleteOptions), as the meta.k8s.io group kinds."""
    texts = [cause.text() for cause in causes]
    summary = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    details = {"group": "meta.k8s.io", "kind": kind, "causes": [cause.to_json() for cause in causes]}
    return ApiError(422, f'{kind}.meta.k8s.io "" is invalid: {summary}', details=details)


def forbidden(rt: ResourceType, name: str, why: str, causes: Iterable[dict[str, str]] = ()) -> ApiError:
    details = _details(rt, name)
    if causes := list(causes):
        details["causes"] = causes
    return ApiError(403, f'{rt.qualified} "{name}" is forbidden: {why}', details=details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, message)


def method_not_allowed() -> ApiError:
    return ApiError(405, "the server does not allow this method on the requested resource")


def not_found_path(path: str) -> ApiError:
    return ApiError(
        404,
        "the server could not find the requested resource",
        details={
            "causes": [{"reason": "UnexpectedServerResponse", "message": f"404 page not found: {path}"}]
        },
    )


def expired(message: str) -> ApiError:
    return ApiError(410, message, "Expired")


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized")
