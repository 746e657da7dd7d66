"""Lists at a resourceVersion, as the official client asks for them: "0" (any), Exact (the state at
that version, or 410 Expired once compacted), NotOlderThan, too new (504), the options refused
together (422), and continue pages that all read one state. And quantities: strings in canonical
form wherever the schema says Quantity, as kube-apiserver stores them, and nothing else touched."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.fake_kube import FakeKube, run_fake_kube
from tests.fake_kube.quantities import canonical


def configmap(name: str, value: str = "1") -> Any:
    """A ConfigMap for the client (which sends a dict as it is)."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": value}}


def names(listed: client.V1ConfigMapList) -> list[str]:
    return [str(item.metadata.name) for item in listed.items if item.metadata]


def status(error: pytest.ExceptionInfo[ApiException]) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(error.value.body or "{}")
    return body


def version(listed: client.V1ConfigMapList) -> str:
    assert listed.metadata is not None and listed.metadata.resource_version is not None
    return listed.metadata.resource_version


def test_an_exact_list_reads_the_state_at_that_version(kube_client: client.ApiClient) -> None:
    core = client.CoreV1Api(kube_client)
    core.create_namespaced_config_map("default", configmap("a"))
    core.create_namespaced_config_map("default", configmap("b"))
    then = version(core.list_namespaced_config_map("default"))
    core.patch_namespaced_config_map("a", "default", {"data": {"v": "2"}})
    core.delete_namespaced_config_map("b", "default")
    core.create_namespaced_config_map("default", configmap("c"))

    past = core.list_namespaced_config_map("default", resource_version=then, resource_version_match="Exact")
    now = core.list_namespaced_config_map(
        "default", resource_version=then, resource_version_match="NotOlderThan"
    )
    anything = core.list_namespaced_config_map("default", resource_version="0")

    assert (names(past), version(past)) == (["a", "b", "kube-root-ca.crt"], then)
    assert [item.data for item in past.items if item.metadata and item.metadata.name == "a"] == [{"v": "1"}]
    assert names(now) == ["a", "c", "kube-root-ca.crt"] == names(anything)
    assert int(version(now)) > int(then)


def test_a_compacted_version_is_410_expired_and_a_future_one_504(fake_kube: FakeKube) -> None:
    with fake_kube.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        core.create_namespaced_config_map("default", configmap("a"))
        then = version(core.list_namespaced_config_map("default"))
        core.create_namespaced_config_map("default", configmap("b"))
        fake_kube.compact()

        with pytest.raises(ApiException) as expired:
            core.list_namespaced_config_map("default", resource_version=then, resource_version_match="Exact")
        with pytest.raises(ApiException) as legacy:  # a resourceVersion with a limit is Exact too
            core.list_namespaced_config_map("default", resource_version=then, limit=1)
        with pytest.raises(ApiException) as future:
            core.list_namespaced_config_map("default", resource_version=str(fake_kube.resource_version + 10))

    assert status(expired) | {"metadata": {}} == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "The resourceVersion for the provided list is too old.",
        "reason": "Expired",
        "code": 410,
    }
    assert status(legacy)["reason"] == "Expired"
    assert future.value.status == 504
    assert status(future)["reason"] == "Timeout"
    assert status(future)["message"].startswith("Timeout: Too large resource version: ")
    assert status(future)["details"]["causes"] == [
        {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
    ]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"resource_version_match": "Exact"},
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
        ),
        (
            {"resource_version": "0", "resource_version_match": "Exact"},
            'resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
        ),
        (
            {"resource_version": "1", "resource_version_match": "Newest"},
            'resourceVersionMatch: Unsupported value: "Newest": supported values: "Exact", "NotOlderThan", ""',
        ),
    ],
)
def test_options_that_do_not_go_together_are_invalid(
    kube_client: client.ApiClient, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ApiException) as error:
        client.CoreV1Api(kube_client).list_namespaced_config_map("default", **options)

    assert error.value.status == 422
    assert status(error)["message"] == f'ListOptions.meta.k8s.io "" is invalid: {message}'


def test_continue_pages_read_the_state_of_the_first_page(kube_client: client.ApiClient) -> None:
    core = client.CoreV1Api(kube_client)
    for name in ("a", "b", "c"):
        core.create_namespaced_config_map("default", configmap(name))

    first = core.list_namespaced_config_map("default", limit=2)
    core.delete_namespaced_config_map("c", "default")
    core.create_namespaced_config_map("default", configmap("d"))
    assert first.metadata is not None
    rest = core.list_namespaced_config_map("default", limit=2, _continue=first.metadata._continue)

    assert names(first) == ["a", "b"]
    assert names(rest) == ["c", "kube-root-ca.crt"]
    assert version(rest) == version(first)


WRITTEN = {"cpu": "1500m", "memory": "1024Mi", "ephemeral-storage": "1.5Gi", "nvidia.com/gpu": 1}
CANONICAL = {"cpu": "1500m", "memory": "1Gi", "ephemeral-storage": "1536Mi", "nvidia.com/gpu": "1"}


def test_quantities_are_strings_in_canonical_form_and_nothing_else_is_touched() -> None:
    pod: Any = {
        "metadata": {"name": "p"},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "busybox:1.36",
                    "resources": {"requests": WRITTEN, "limits": WRITTEN},
                }
            ]
        },
    }
    quota_body = {
        "metadata": {"name": "compute", "annotations": {"size": "1024Mi"}},
        "spec": {"hard": {"requests.cpu": "2000m", "requests.memory": "1.5Gi", "pods": 10}},
    }
    settings_body: Any = {"metadata": {"name": "s"}, "data": {"memory": "1024Mi"}}
    with run_fake_kube() as kube, kube.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "q"}})
        # As the driver sends it: JSON as written, a number where YAML had one (the client's own
        # models would refuse the number before it is sent).
        posted = httpx.post(f"{kube.url}/api/v1/namespaces/q/resourcequotas", json=quota_body)
        assert posted.status_code == 201, posted.text
        quota = core.read_namespaced_resource_quota("compute", "q")
        assert httpx.post(f"{kube.url}/api/v1/namespaces/q/pods", json=pod).status_code == 201
        created = core.read_namespaced_pod("p", "q")
        settings = core.create_namespaced_config_map("q", settings_body)
        raw = kube.get("v1", "Pod", "p", "q")

    assert quota.spec is not None
    assert quota.spec.hard == {"requests.cpu": "2", "requests.memory": "1536Mi", "pods": "10"}
    assert quota.metadata is not None and quota.metadata.annotations == {"size": "1024Mi"}
    assert created.spec is not None and created.spec.containers[0].resources is not None
    assert created.spec.containers[0].resources.requests == CANONICAL
    assert raw is not None and raw["spec"]["containers"][0]["resources"]["limits"] == CANONICAL
    assert settings.data == {"memory": "1024Mi"}


@pytest.mark.parametrize(
    ("written", "stored"),
    [
        ("1024Mi", "1Gi"),
        ("1.5Gi", "1536Mi"),
        ("0.5Ki", "512"),
        ("2000m", "2"),
        ("0.5", "500m"),
        ("1000", "1k"),
        ("1500M", "1500M"),
        ("1e3", "1e3"),
        ("1.5e3", "1500"),
        ("0", "0"),
        ("64Gi", "64Gi"),
    ],
)
def test_canonical_form_of_a_quantity(written: str, stored: str) -> None:
    assert canonical(written) == stored
