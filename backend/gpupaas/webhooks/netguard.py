"""Where a webhook may send: http(s) URLs only, and by default only to public addresses.

A project admin is not trusted with the cluster's network: a webhook must not reach loopback,
private, link-local (the cloud metadata service at 169.254.169.254), unspecified or otherwise
non-global addresses, unless GPUPAAS_WEBHOOK_ALLOW_PRIVATE_NETWORKS says receivers live there.
The check runs when a webhook is saved, and again on every delivery on the address the name
resolves to *then*, which is the one the request goes to (a name that later resolves elsewhere,
DNS rebinding, gains nothing).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

URL_MAX = 2000
ALLOW_HINT = "set GPUPAAS_WEBHOOK_ALLOW_PRIVATE_NETWORKS=true for receivers on private networks"

# host, port -> the addresses it resolves to (tests give their own: DNS is our boundary).
Resolver = Callable[[str, int], Awaitable[list[str]]]
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


async def system_resolve(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: list[str] = []
    for info in infos:
        address = str(info[4][0]).split("%", 1)[0]  # an IPv6 zone is not part of the address
        if address not in seen:
            seen.append(address)
    return seen


class DestinationRefused(Exception):
    """The URL or the address it leads to is not one a webhook may send to."""


@dataclass(frozen=True)
class Target:
    """A webhook URL taken apart: what to connect to and what to tell the server."""

    scheme: str
    host: str  # without brackets
    port: int
    path: str  # with its query

    @property
    def netloc(self) -> str:
        """The Host header: the host as the URL names it, and a port that is not the default."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"


def parse_url(url: str) -> Target:
    """The URL's parts, or DestinationRefused saying what is wrong with it."""
    if len(url) > URL_MAX:
        raise DestinationRefused(f"at most {URL_MAX} characters")
    if any(c.isspace() or ord(c) < 32 for c in url):
        raise DestinationRefused("a URL holds no spaces or control characters")
    try:
        parts: SplitResult = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise DestinationRefused(f"not a URL: {error}") from None
    if parts.scheme not in ("http", "https"):
        raise DestinationRefused("only http:// and https:// URLs, like https://hooks.example.com/gpupaas")
    if not parts.hostname:
        raise DestinationRefused("the URL names no host, like https://hooks.example.com/gpupaas")
    if parts.username is not None or parts.password is not None:
        raise DestinationRefused(
            "no user or password in the URL: receivers check the signature header instead"
        )
    if parts.fragment:
        raise DestinationRefused("no #fragment: it is never sent")
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return Target(
        scheme=parts.scheme,
        host=parts.hostname,
        port=port if port is not None else (443 if parts.scheme == "https" else 80),
        path=path,
    )


def literal_address(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def refusal(address: str) -> str | None:
    """What the address is that a webhook may not send to (None: it may, it is a global one)."""
    try:
        ip: IPAddress = ipaddress.ip_address(address)
    except ValueError:
        return "not an IP address"
    if isinstance(ip, ipaddress.IPv6Address):
        # ::ffff:127.0.0.1 is 127.0.0.1, and 2002:7f00:1:: (6to4) carries it too
        ip = ip.ipv4_mapped or ip.sixtofour or ip
    if ip.is_loopback:
        what = "a loopback address"
    elif ip.is_link_local:
        what = "a link-local address (cloud metadata services live there)"
    elif ip.is_unspecified:
        what = "the unspecified address"
    elif ip.is_private:
        what = "a private address"
    elif ip.is_multicast:
        what = "a multicast address"
    elif not ip.is_global:
        what = "not a public address"
    else:
        return None
    return what


async def resolve_checked(target: Target, allow_private: bool, resolve: Resolver) -> str:
    """The address to connect to: the host's first address, when none of its addresses is refused.

    Every address is checked, not only the one used: a name that answers with a public and a
    private address is refused as a whole."""
    literal = literal_address(target.host)
    if literal is not None:
        addresses = [str(literal)]
    else:
        try:
            addresses = await resolve(target.host, target.port)
        except (OSError, UnicodeError) as error:
            raise DestinationRefused(f"{target.host} does not resolve (DNS): {error}") from None
        if not addresses:
            raise DestinationRefused(f"{target.host} does not resolve (DNS): no address")
    if not allow_private:
        for address in addresses:
            what = refusal(address)
            if what is not None:
                where = f"{address} is" if literal is not None else f"{target.host} resolves to {address},"
                raise DestinationRefused(f"{where} {what}: not allowed ({ALLOW_HINT})")
    return addresses[0]
