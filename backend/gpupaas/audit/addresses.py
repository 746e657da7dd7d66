"""The client address an audit entry names: the peer address uvicorn gives, or, when that peer is
a trusted proxy (GPUPAAS_TRUSTED_PROXIES), the address X-Forwarded-For says it forwarded for.

X-Forwarded-For is read from the right: each trusted proxy appends the address it received from,
so the first address from the right that is not a trusted proxy is the client. Anything a client
wrote itself sits further left and is never believed.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def networks(specs: Sequence[str]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(spec, strict=False) for spec in specs)


def _trusted(address: str, trusted: Sequence[Network]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in net for net in trusted)


def client_address(peer: str | None, forwarded_for: str | None, trusted: Sequence[Network]) -> str | None:
    if peer is None or not trusted or not _trusted(peer, trusted) or not forwarded_for:
        return peer
    hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
    for hop in reversed(hops):
        if not _trusted(hop, trusted):
            return hop[:64]
    return hops[0][:64] if hops else peer
