"""Instance namespaces: readable, valid, and never shared between two instances."""

from __future__ import annotations

import uuid

from gpupaas.core.validation import dns_label
from gpupaas.provisioning.plan import namespace_for


def test_names_that_read_alike_get_different_namespaces() -> None:
    # project "a" + instance "b-c" and project "a-b" + instance "c" both read "a-b-c"
    first = namespace_for("a", "b-c", str(uuid.uuid4()))
    second = namespace_for("a-b", "c", str(uuid.uuid4()))
    assert first != second
    assert first.startswith("a-b-c-") and second.startswith("a-b-c-")


def test_an_instance_made_again_under_the_same_name_gets_a_new_namespace() -> None:
    assert namespace_for("ml", "nb", str(uuid.uuid4())) != namespace_for("ml", "nb", str(uuid.uuid4()))


def test_the_same_instance_always_gets_the_same_namespace() -> None:
    iid = str(uuid.uuid4())
    assert namespace_for("ml", "nb", iid) == namespace_for("ml", "nb", iid)


def test_namespaces_are_dns_labels_even_for_the_longest_names() -> None:
    longest = "x" * 63
    for project, name in [(longest, longest), ("a", "b"), ("p" * 53 + "-q", "r")]:
        namespace = namespace_for(project, name, str(uuid.uuid4()))
        assert dns_label(namespace) is None, namespace
        assert len(namespace) <= 63
