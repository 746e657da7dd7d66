"""How deliveries are signed: HMAC-SHA256 with the webhook's secret over "<timestamp>.<body>".

Headers of every delivery:
- `X-Gpupaas-Event`: the event (COMPUTE_INSTANCE_FAILED, ...);
- `X-Gpupaas-Event-Id`: the event's id, the same in every attempt (receivers drop repeats);
- `X-Gpupaas-Delivery`: this delivery's id (one per webhook and event);
- `X-Gpupaas-Timestamp`: when this attempt was signed, in Unix seconds;
- `X-Gpupaas-Signature`: `v1=` and the hex HMAC-SHA256 of `<timestamp>.<body>` keyed by the secret.

A receiver recomputes the signature over the raw body it got, compares in constant time, and
refuses timestamps too far from its clock (a replayed old request). `verify` is that check.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

EVENT = "X-Gpupaas-Event"
EVENT_ID = "X-Gpupaas-Event-Id"
DELIVERY = "X-Gpupaas-Delivery"
TIMESTAMP = "X-Gpupaas-Timestamp"
SIGNATURE = "X-Gpupaas-Signature"
SCHEME = "v1="
SECRET_PREFIX = "whsec_"


def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def signature(secret: str, timestamp: int, body: bytes) -> str:
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return SCHEME + mac.hexdigest()


def verify(secret: str, timestamp: str, body: bytes, header: str, *, now: int, tolerance: int = 300) -> bool:
    """Whether a delivery is genuine: the signature matches and the timestamp is recent."""
    try:
        moment = int(timestamp)
    except ValueError:
        return False
    if abs(now - moment) > tolerance:
        return False
    return hmac.compare_digest(signature(secret, moment, body), header)
