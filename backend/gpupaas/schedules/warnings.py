"""The warning before an auto-stop: one status event on the status topic (live subscribers of the
instance and of its project see it, with the instance's current status and a message saying when
it stops and why), and the project's webhooks that want AUTO_STOP_WARNING get it.
`emit_auto_stop_warning` is the one place that sends it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from gpupaas.core.time_limits import duration
from gpupaas.events import outbox
from gpupaas.runs.kinds import RunKind, Subject
from gpupaas.webhooks import service as webhooks
from gpupaas.webhooks.models import WebhookEvent

WARNING_TYPE = "AUTO_STOP_WARNING"


def warning_message(noun: str, stop_at: datetime, reason: str, now: datetime) -> str:
    left = max(0, int((stop_at - now).total_seconds() // 60))
    return (
        f"this {noun} stops in {duration(left)} ({stop_at:%Y-%m-%d %H:%M} UTC, {reason}): "
        "its owner can extend it"
    )


async def emit_auto_stop_warning(
    kind: RunKind[Any], subject: Subject, *, stop_at: datetime, reason: str, now: datetime
) -> dict[str, Any]:
    """Inside the caller's transaction (which claimed the warning): the warning event about
    `subject`, whose version the caller has just moved on (subscribers never go backwards).
    Returns the event's payload."""
    payload = await kind.status_event(subject, deleted=False)
    payload["message"] = warning_message(kind.noun, stop_at, reason, now)
    payload["warning"] = {"type": WARNING_TYPE, "stopAt": stop_at.isoformat(), "reason": reason}
    await outbox.add_status(str(subject.id), payload)
    # and the project's webhooks that want it, in the same transaction
    data = {
        "id": str(subject.id),
        "name": subject.name,
        "kind": kind.noun,
        "stopAt": stop_at.isoformat(),
        "reason": reason,
        "message": payload["message"],
    }
    await webhooks.publish(subject.project_id, WebhookEvent.AUTO_STOP_WARNING, data)
    return payload
