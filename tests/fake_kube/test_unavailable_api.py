"""The fake's broken aggregated API, as the official client meets it on a real cluster whose
metrics-server is down: /apis lists the group, its discovery answers 503."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.fake_kube import FakeKube


def test_an_unavailable_aggregated_api_is_listed_but_its_discovery_answers_503(fake_kube: FakeKube) -> None:
    fake_kube.add_unavailable_api("metrics.k8s.io", "v1beta1")
    api = fake_kube.api_client()

    groups = client.ApisApi(api).get_api_versions()
    answer = api.call_api(*api.param_serialize("GET", "/apis/metrics.k8s.io/v1beta1"))
    with pytest.raises(ApiException) as error:
        client.CustomObjectsApi(api).list_cluster_custom_object("metrics.k8s.io", "v1beta1", "pods")

    assert "metrics.k8s.io" in [group.name for group in groups.groups]
    assert answer.status == 503
    assert answer.read() == b"service unavailable\n"  # type: ignore[no-untyped-call]
    assert error.value.status == 503
    # the rest of the API answers as before
    assert client.CoreV1Api(api).list_namespace().items
