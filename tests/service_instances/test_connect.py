"""Connect links: which ports get one, and what it looks like."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpupaas.instance_templates.spec import Port, ServiceSpec, SshAccess
from gpupaas.service_instances.connect import ConnectLink, access_address_problem, connect_links, ssh_endpoint


def spec_with(*ports: Port) -> ServiceSpec:
    return ServiceSpec(vendor="NVIDIA", image="nvcr.io/nvidia/pytorch:25.01-py3", ports=ports)


def tcp(name: str, number: int, *params: tuple[str, str]) -> Port:
    return Port(name=name, port=number, access_params=params)


LINKS: list[tuple[str, Port, str | None]] = [
    (
        "jupyter with its token",
        tcp("jupyter", 8888, ("token", "abc123")),
        "http://127.0.0.1:8888/?token=abc123",
    ),
    ("named http", tcp("http", 9000), "http://127.0.0.1:9000/"),
    ("named https", tcp("https", 9443), "https://127.0.0.1:9443/"),
    ("a part of the name says https", tcp("api-https", 9443), "https://127.0.0.1:9443/"),
    ("named web", tcp("web", 5000), "http://127.0.0.1:5000/"),
    ("named ui", tcp("ui", 5000), "http://127.0.0.1:5000/"),
    ("a part of the name says http", tcp("http-api", 5000), "http://127.0.0.1:5000/"),
    ("port 80", tcp("app", 80), "http://127.0.0.1:80/"),
    ("port 443 is https", tcp("app", 443), "https://127.0.0.1:443/"),
    ("port 8000", tcp("api", 8000), "http://127.0.0.1:8000/"),
    ("port 8080", tcp("app", 8080), "http://127.0.0.1:8080/"),
    ("port 8888", tcp("app", 8888), "http://127.0.0.1:8888/"),
    ("tensorboard's port", tcp("tb", 6006), "http://127.0.0.1:6006/"),
    ("access params make a web port", tcp("app", 9999, ("key", "v")), "http://127.0.0.1:9999/?key=v"),
    ("params in order", tcp("app", 1234, ("b", "2"), ("a", "1")), "http://127.0.0.1:1234/?b=2&a=1"),
    ("empty param value", tcp("app", 1234, ("flag", "")), "http://127.0.0.1:1234/?flag="),
    (
        "params are URL-encoded",
        tcp("app", 1234, ("q", "a b&c=d#e+f"), ("path", "/lab/tree")),
        "http://127.0.0.1:1234/?q=a%20b%26c%3Dd%23e%2Bf&path=/lab/tree",
    ),
    # SSH ports without SSH access declared: nothing gpupaas knows of listens there, so no link
    ("named ssh", tcp("ssh", 2222), None),
    ("port 22", tcp("shell", 22), None),
    ("ssh on a web port is no web link", tcp("ssh", 8080), None),
    ("a database port", tcp("postgres", 5432), None),
    ("a UDP port named http", Port(name="http", port=80, protocol="UDP"), None),
    ("an SCTP port", Port(name="web", port=9999, protocol="SCTP"), None),
]


@pytest.mark.parametrize(("case", "port", "url"), LINKS, ids=[case[0] for case in LINKS])
def test_which_ports_get_links_and_how_they_look(case: str, port: Port, url: str | None) -> None:
    # given a spec with one port and the simulated cluster's address
    # when its links are made
    links = connect_links(spec_with(port), access_address="127.0.0.1")

    # then the port has this link, or none
    assert links == ([] if url is None else [ConnectLink(port=port.name, url=url)])


def test_node_ports_replace_container_ports() -> None:
    # given a Service whose node ports are known for some of the ports
    spec = replace(
        spec_with(tcp("jupyter", 8888, ("token", "t")), tcp("ssh", 22), tcp("http", 8000)),
        command=("sleep", "infinity"),
        ssh=SshAccess(port="ssh", user="root"),
    )

    # when the links are made
    links = connect_links(spec, access_address="10.0.0.5", node_ports={"jupyter": 30888, "ssh": 30022})

    # then those ports use their node ports, the others their own port, in the spec's order
    assert links == [
        ConnectLink(port="jupyter", url="http://10.0.0.5:30888/?token=t"),
        ConnectLink(port="ssh", url="ssh -p 30022 root@10.0.0.5"),
        ConnectLink(port="http", url="http://10.0.0.5:8000/"),
    ]


ADDRESSES: list[tuple[str, str, str]] = [
    ("a host name", "gpu.example.com", "http://gpu.example.com:8888/?token=t"),
    ("surrounding spaces", "  gpu.example.com ", "http://gpu.example.com:8888/?token=t"),
    ("an https URL keeps its scheme", "https://gpu.example.com", "https://gpu.example.com:8888/?token=t"),
    ("an http URL", "http://gpu.example.com/", "http://gpu.example.com:8888/?token=t"),
    (
        "a URL's port and path are dropped",
        "https://gpu.example.com:8443/base",
        "https://gpu.example.com:8888/?token=t",
    ),
    ("a host with a port", "gpu.example.com:30000", "http://gpu.example.com:8888/?token=t"),
    ("an IPv6 address", "fd00::1", "http://[fd00::1]:8888/?token=t"),
    ("a bracketed IPv6 address", "[fd00::1]", "http://[fd00::1]:8888/?token=t"),
    ("an IPv6 URL", "https://[fd00::1]", "https://[fd00::1]:8888/?token=t"),
]


@pytest.mark.parametrize(("case", "address", "url"), ADDRESSES, ids=[case[0] for case in ADDRESSES])
def test_the_access_address_gives_the_links_host(case: str, address: str, url: str) -> None:
    links = connect_links(spec_with(tcp("jupyter", 8888, ("token", "t"))), access_address=address)

    assert links == [ConnectLink(port="jupyter", url=url)]
    assert access_address_problem(address) is None


def test_an_ssh_link_uses_the_host_of_a_url_and_the_declared_user() -> None:
    spec = replace(spec_with(tcp("SSH", 22)), command=("sleep", "infinity"), ssh=SshAccess("SSH", "jovyan"))
    links = connect_links(spec, access_address="https://gpu.example.com")

    assert links == [ConnectLink(port="SSH", url="ssh -p 22 jovyan@gpu.example.com")]
    endpoint = ssh_endpoint(spec, access_address="https://gpu.example.com:8443/x", node_ports={"ssh": 30022})
    assert endpoint is not None
    assert (endpoint.host, endpoint.port, endpoint.user) == ("gpu.example.com", 30022, "jovyan")
    assert endpoint.command == "ssh -p 30022 jovyan@gpu.example.com"
    # no node port yet, no address, or no SSH access: no endpoint
    assert ssh_endpoint(spec, access_address="gpu.example.com", node_ports={}) is None
    assert ssh_endpoint(spec, access_address=None, node_ports={"ssh": 30022}) is None
    assert ssh_endpoint(replace(spec, ssh=None), access_address="h", node_ports={"ssh": 30022}) is None


UNUSABLE: list[tuple[str, str, str]] = [
    ("blank", "   ", "is empty"),
    ("another scheme", "ftp://gpu.example.com", 'not "ftp://"'),
    ("a URL without a host", "https://", "must name a host"),
    ("a host with a space", "gpu example.com", "must be a host name or an IP address"),
    ("a host with a slash", "gpu.example.com/x", "must be a host name or an IP address"),
]


@pytest.mark.parametrize(("case", "address", "problem"), UNUSABLE, ids=[case[0] for case in UNUSABLE])
def test_an_unusable_access_address_gives_no_links(case: str, address: str, problem: str) -> None:
    # given an address links cannot be made with / then there are none, and the settings learn why
    assert connect_links(spec_with(tcp("http", 80)), access_address=address) == []
    message = access_address_problem(address)
    assert message is not None
    assert problem in message


def test_no_access_address_means_no_links() -> None:
    assert connect_links(spec_with(tcp("http", 80)), access_address=None) == []


def test_no_ports_means_no_links() -> None:
    assert connect_links(spec_with(), access_address="127.0.0.1") == []
