"""Connect links: where a person reaches a service instance's ports.

`connect_links(spec, access_address=..., node_ports=...)` gives one link per port a person can
click or paste, in the spec's port order:

- The port the spec declares SSH access on (`spec.ssh`: gpupaas starts an SSH server there):
  `ssh -p <port> <user>@<host>`, the exact command (`ssh_endpoint` gives its parts). Other SSH
  ports (TCP, named "ssh" or a name with an "ssh" part like "ssh-admin", or port 22) get no link:
  nothing gpupaas knows of listens there. Checked first, so a port named "ssh" is never a web link.
- Web ports (TCP and any of: a name or a "-"-separated part of it that says web (http, https, web,
  ui, jupyter, tensorboard, gradio, streamlit); a well-known web port (80, 443, 8000, 8080, 8443,
  8888, and TensorBoard's 6006, Gradio's 7860, Streamlit's 8501); access params, which only make
  sense in a URL): `http(s)://<host>:<port>/?<access params>`, without "?" when there are none.
  https when the name says https or the port is 443 or 8443, else http.
- Any other port (UDP, SCTP, a TCP port that is neither) gets no link.

The port is the Service's node port for the port's name when `node_ports` has it, else the
container port. The access address is a host name or IP address (`127.0.0.1`, `gpu.example.com`,
`::1`), or a URL (`https://gpu.example.com`): a URL's scheme is kept for the web links (TLS may end
at that address) and its host is used; a port or path in the address is ignored, since every link
carries its own port. No access address (None or blank) means no links: we do not know where the
cluster is reachable, and "localhost" would be wrong for everyone but the server. An address that
cannot be used (another scheme, no host) gives no links either; `access_address_problem` says why,
for the settings that store it.

Access params are URL-encoded (RFC 3986: spaces as %20, "&", "=", "#" and "+" encoded) and keep
their order; `token=abc` stays as readable as it is. With `access_params=False` (for those who may
not use the service: members who do not own it) the links are the same without them.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote, urlencode, urlsplit

from gpupaas.instance_templates.port_names import kubernetes_name
from gpupaas.instance_templates.spec import Port, ServiceSpec, port_kubernetes_names, ssh_port

__all__ = [
    "HTTPS_PORTS",
    "WEB_PORTS",
    "WEB_PORT_NAMES",
    "ConnectLink",
    "access_address_problem",
    "connect_links",
    "is_ssh_port",
    "is_web_port",
    "ssh_endpoint",
]

WEB_PORT_NAMES = frozenset({"http", "https", "web", "ui", "jupyter", "tensorboard", "gradio", "streamlit"})
WEB_PORTS = frozenset({80, 443, 6006, 7860, 8000, 8080, 8443, 8501, 8888})
HTTPS_PORTS = frozenset({443, 8443})
SSH_PORT = 22

_HOST_NAME = re.compile(
    r"[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*\.?"
)


@dataclass(frozen=True)
class ConnectLink:
    port: str  # the port's name
    url: str


def _words(name: str) -> set[str]:
    """The words of a port's label: "Web UI" and "web-ui" both hold "web" and "ui"."""
    return set(kubernetes_name(name).split("-"))


def is_ssh_port(port: Port) -> bool:
    return port.protocol == "TCP" and ("ssh" in _words(port.name) or port.port == SSH_PORT)


def is_web_port(port: Port) -> bool:
    if port.protocol != "TCP" or is_ssh_port(port):
        return False
    return bool(_words(port.name) & WEB_PORT_NAMES) or port.port in WEB_PORTS or bool(port.access_params)


def _is_https(port: Port) -> bool:
    return "https" in _words(port.name) or port.port in HTTPS_PORTS


def _valid_host(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return len(host) <= 253 and _HOST_NAME.fullmatch(host) is not None
    return True


def _parse_address(address: str) -> tuple[str | None, str] | str:
    """(scheme or None, host), or a message saying why the address cannot be used."""
    text = address.strip()
    if not text:
        return "is empty"
    if "://" in text:
        try:
            parts = urlsplit(text)
            host = parts.hostname
        except ValueError:
            return "is not a valid URL"
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https"):
            return f'must be a host, or a URL starting with http:// or https:// (not "{scheme}://")'
        if not host or not _valid_host(host):
            return "must name a host, like https://gpu.example.com"
        return scheme, host
    host = text
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif host.count(":") == 1:  # host:port; the links carry their own ports
        host = host.split(":", 1)[0]
    if not _valid_host(host):
        return "must be a host name or an IP address, like 127.0.0.1 or gpu.example.com"
    return None, host


def access_address_problem(address: str) -> str | None:
    """Why an access address cannot make connect links, or None when it can."""
    parsed = _parse_address(address)
    return parsed if isinstance(parsed, str) else None


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def connect_links(
    spec: ServiceSpec,
    *,
    access_address: str | None,
    node_ports: Mapping[str, int] | None = None,
    access_params: bool = True,
) -> list[ConnectLink]:
    """The links of a resolved spec's ports (see the module's docstring for the rules)."""
    if access_address is None:
        return []
    parsed = _parse_address(access_address)
    if isinstance(parsed, str):
        return []
    scheme, host = parsed
    declared = ssh_port(spec)
    links: list[ConnectLink] = []
    for port, k8s_name in zip(spec.ports, port_kubernetes_names(spec), strict=True):
        number = port.port if node_ports is None else node_ports.get(k8s_name, port.port)
        if port is declared and spec.ssh is not None:
            links.append(ConnectLink(port=port.name, url=ssh_command(number, spec.ssh.user, host)))
        elif is_ssh_port(port):
            continue
        elif is_web_port(port):
            link_scheme = scheme or ("https" if _is_https(port) else "http")
            url = f"{link_scheme}://{_url_host(host)}:{number}/"
            if port.access_params and access_params:
                url += "?" + urlencode(port.access_params, quote_via=quote, safe="/:")
            links.append(ConnectLink(port=port.name, url=url))
    return links


def ssh_command(port: int, user: str, host: str) -> str:
    """The exact command a person runs: ``ssh -p 30022 root@gpu.example.com``."""
    return f"ssh -p {port} {user}@{host}"


@dataclass(frozen=True)
class SshEndpoint:
    host: str
    port: int
    user: str

    @property
    def command(self) -> str:
        return ssh_command(self.port, self.user, self.host)


def ssh_endpoint(
    spec: ServiceSpec, *, access_address: str | None, node_ports: Mapping[str, int]
) -> SshEndpoint | None:
    """Where the spec's SSH server is reached: the access address's host and the SSH port's node
    port; None without SSH access, an access address or the node port."""
    declared = ssh_port(spec)
    if spec.ssh is None or declared is None or access_address is None:
        return None
    parsed = _parse_address(access_address)
    if isinstance(parsed, str):
        return None
    names = dict(zip(spec.ports, port_kubernetes_names(spec), strict=True))
    number = node_ports.get(names[declared])
    if number is None:
        return None
    return SshEndpoint(host=parsed[1], port=number, user=spec.ssh.user)
