"""What an answer of the API server that is not 2xx means for a run: a Kubernetes Status turned into
a PermanentError (retrying cannot help) or a TemporaryError, with a message a person can act on.

A fault of the API server or of the way to it that goes away by itself (connection refused or
reset, a timeout, 5xx, 429) is a `Transient` TemporaryError, with the pause the server asked for
(Retry-After) when it said: the driver retries the request itself (kubernetes/api.py). Other
TemporaryErrors (a namespace still terminating, an expired list) are states of the cluster that
the worker's next attempt of the run may find changed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from gpupaas.provisioning.drivers.k8s_manifests.objects import mappings_in
from gpupaas.provisioning.plan import DriverError, PermanentError, TemporaryError

__all__ = ["RetriesExhausted", "Transient", "api_error", "retry_after_seconds", "status_text", "unreachable"]


_REASONS = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    409: "Conflict",
    410: "Gone",
    415: "Unsupported Media Type",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}
_MAX_BODY_TEXT = 500


class Transient(TemporaryError):
    """A fault that goes away by itself: the request may be sent again as it is. `status`: the HTTP
    status the API server answered, None when nobody answered; `retry_after`: the seconds it asked
    the client to wait (its Retry-After header), None when it did not say."""

    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class RetriesExhausted(PermanentError):
    """A transient fault that lasted longer than the driver retries it, or past the run's deadline:
    the run fails, naming the last error."""


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """A Retry-After header's pause in seconds: delay-seconds ("3") or an HTTP-date (RFC 9110
    10.2.3); None when there is none or it cannot be read. A date in the past is 0."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def _parse_status(body: str | bytes | None) -> Mapping[str, Any] | None:
    if not body:
        return None
    try:
        parsed = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    return parsed if isinstance(parsed, dict) else None


def status_text(body: str | bytes | None) -> str:
    """A Status's message with the causes it does not already spell out ("spec.replicas: Invalid
    value: -1: must be greater than or equal to 0"), or the start of a body that is no Status."""
    status = _parse_status(body)
    if status is None:
        text = body.decode(errors="replace") if isinstance(body, bytes) else (body or "")
        text = " ".join(text.split())
        return text[:_MAX_BODY_TEXT] + ("..." if len(text) > _MAX_BODY_TEXT else "")
    message = str(status.get("message") or status.get("reason") or "").strip()
    details = status.get("details")
    causes = mappings_in(details.get("causes")) if isinstance(details, Mapping) else []
    extra: list[str] = []
    for cause in causes:
        text = ": ".join(str(p) for p in (cause.get("field"), cause.get("message")) if p)
        if text and text not in message and cause.get("message", "") not in message:
            extra.append(text)
    return "; ".join([part for part in (message, *extra) if part])


def _terminating(body: str | bytes | None) -> bool:
    status = _parse_status(body) or {}
    details = status.get("details")
    causes = mappings_in(details.get("causes")) if isinstance(details, Mapping) else []
    return any(c.get("reason") == "NamespaceTerminating" for c in causes) or (
        "because it is being terminated" in str(status.get("message") or "")
    )


def api_error(
    status: int, body: str | bytes | None, action: str, *, retry_after: str | None = None
) -> DriverError:
    """The error of a request the API server answered with `status` (not 2xx).

    5xx and 429 are Transient (the request is retried, after `retry_after`, the answer's
    Retry-After header, when it is given); 410 (an expired list) and a 403 for a namespace that is
    still terminating (a destroy not finished yet) are temporary. Other 4xx are permanent:
    retrying the same request cannot help. `action` says what was being done ("applying
    deployment web").
    """
    text = status_text(body) or _REASONS.get(status, "")
    code = f"HTTP {status} {_REASONS.get(status, '')}".rstrip()
    if status == 403 and _terminating(body):
        return TemporaryError(
            f"{action}: {text} (a previous destroy has not finished; try again when it has)"
        )
    if status >= 500 or status == 429:
        return Transient(
            f"{action}: the API server answered {code}: {text}",
            status=status,
            retry_after=retry_after_seconds(retry_after),
        )
    if status == 410:
        return TemporaryError(f"{action}: the API server answered {code}: {text}")
    if status == 401:
        return PermanentError(
            f"{action}: the API server did not accept the credentials ({code}: {text}); check the "
            "kubeconfig's user (an expired token, a client certificate of another cluster)"
        )
    if status == 403:
        return PermanentError(
            f"{action}: {text} ({code}); the kubeconfig's user needs this permission (RBAC)"
        )
    return PermanentError(f"{action}: {text} ({code})")


def unreachable(host: str, detail: str, action: str) -> Transient:
    return Transient(f"{action}: cannot reach the Kubernetes API server at {host}: {detail}")
