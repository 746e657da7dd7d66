"""Port labels and the Kubernetes names derived from them."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpupaas.instance_templates.port_names import kubernetes_name, kubernetes_names

# Kubernetes' IsValidPortName: an IANA service name.
IANA = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?")


def is_iana_name(name: str) -> bool:
    return (
        1 <= len(name) <= 15
        and IANA.fullmatch(name) is not None
        and "--" not in name
        and re.search("[a-z]", name) is not None
    )


@pytest.mark.parametrize(
    ("label", "name"),
    [
        ("SSH", "ssh"),
        ("JUPYTER", "jupyter"),
        ("Web UI", "web-ui"),
        ("jupyter", "jupyter"),
        ("http", "http"),
        ("  TensorBoard  ", "tensorboard"),
        ("8888", "p-8888"),
        ("my_port", "my-port"),
        ("a--b", "a-b"),
        ("-web-", "web"),
        ("jupyter-notebook-server", "jupyter-noteboo"),
        ("123456789012345x", "p-1234567890123"),
        ("!!!", "port"),
        ("Jupyter Lab (token)", "jupyter-lab-tok"),
        ("Ünïcode", "n-code"),
    ],
)
def test_a_label_gives_a_kubernetes_name(label: str, name: str) -> None:
    assert kubernetes_name(label) == name
    assert is_iana_name(name)


def test_names_are_made_unique_with_a_suffix_that_fits() -> None:
    assert kubernetes_names(["Web UI", "web-ui", "WEB_UI"]) == ["web-ui", "web-ui-2", "web-ui-3"]
    assert kubernetes_names(["jupyter-notebook-server", "jupyter-notebook-client"]) == [
        "jupyter-noteboo",
        "jupyter-noteb-2",
    ]


def test_a_valid_kubernetes_name_is_kept_as_it_is() -> None:
    """Specs stored before labels existed had Kubernetes names: they keep them (and their node ports)."""
    assert kubernetes_names(["jupyter", "http", "dns-tcp"]) == ["jupyter", "http", "dns-tcp"]


@given(st.lists(st.text(min_size=1, max_size=40), max_size=40))
def test_any_labels_give_unique_valid_names(labels: list[str]) -> None:
    names = kubernetes_names(labels)
    assert len(names) == len(labels)
    assert len(set(names)) == len(names)
    assert all(is_iana_name(name) for name in names), names
    assert kubernetes_names(labels) == names  # the same labels, the same names
