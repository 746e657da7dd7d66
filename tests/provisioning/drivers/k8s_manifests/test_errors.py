"""Answers of the API server that are not 2xx: permanent or temporary, with the Status's words."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from gpupaas.provisioning.drivers.k8s_manifests.errors import (
    Transient,
    api_error,
    retry_after_seconds,
    status_text,
    unreachable,
)
from gpupaas.provisioning.plan import PermanentError, TemporaryError


def status_body(code: int, reason: str, message: str, **details: Any) -> str:
    return json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "details": details,
            "code": code,
        }
    )


def test_an_invalid_object_is_permanent_with_its_causes() -> None:
    body = status_body(
        422,
        "Invalid",
        'Deployment.apps "web" is invalid: spec.template.spec.containers[0].image: Required value',
        name="web",
        group="apps",
        kind="Deployment",
        causes=[
            {
                "reason": "FieldValueRequired",
                "message": "Required value",
                "field": "spec.template.spec.containers[0].image",
            },
            {
                "reason": "FieldValueInvalid",
                "message": "Invalid value: -1: must be greater than or equal to 0",
                "field": "spec.replicas",
            },
        ],
    )

    error = api_error(422, body, "applying deployment web")

    assert isinstance(error, PermanentError)
    assert str(error) == (
        'applying deployment web: Deployment.apps "web" is invalid: spec.template.spec.containers[0].image: '
        "Required value; spec.replicas: Invalid value: -1: must be greater than or equal to 0 "
        "(HTTP 422 Unprocessable Entity)"
    )


def test_a_forbidden_request_names_the_missing_permission() -> None:
    body = status_body(
        403,
        "Forbidden",
        'deployments.apps "web" is forbidden: User "system:serviceaccount:gpupaas:driver" cannot patch '
        'resource "deployments" in API group "apps" in the namespace "team-a-nb"',
    )

    error = api_error(403, body, "applying deployment web")

    assert isinstance(error, PermanentError)
    assert 'cannot patch resource "deployments" in API group "apps"' in str(error)
    assert "needs this permission (RBAC)" in str(error)


def test_a_namespace_still_terminating_is_temporary() -> None:
    body = status_body(
        403,
        "Forbidden",
        'configmaps "settings" is forbidden: unable to create new content in namespace team-a-nb because '
        "it is being terminated",
        causes=[{"reason": "NamespaceTerminating", "message": "namespace team-a-nb is being terminated"}],
    )

    assert isinstance(api_error(403, body, "applying configmap settings"), TemporaryError)


@pytest.mark.parametrize(
    ("status", "temporary"),
    [
        *[(code, True) for code in (500, 502, 503, 504, 429, 410)],
        *[(code, False) for code in (400, 401, 404, 405, 409, 415)],
    ],
)
def test_server_failures_are_temporary_and_client_errors_permanent(status: int, temporary: bool) -> None:
    error = api_error(status, status_body(status, "X", "something happened"), "applying pod nb-0")

    assert isinstance(error, TemporaryError if temporary else PermanentError)
    assert "something happened" in str(error)
    assert f"HTTP {status}" in str(error)


def test_a_body_that_is_no_status_is_quoted_shortly() -> None:
    assert status_text("<html>\n<h1>502 Bad Gateway</h1></html>") == "<html> <h1>502 Bad Gateway</h1></html>"
    assert status_text("x" * 600).endswith("...")
    assert status_text(None) == ""
    assert "Unauthorized" in str(api_error(401, None, "checking the cluster"))


@pytest.mark.parametrize(("status", "transient"), [(500, True), (503, True), (429, True), (410, False)])
def test_faults_that_go_away_by_themselves_are_transient_with_the_pause_asked_for(
    status: int, transient: bool
) -> None:
    error = api_error(status, status_body(status, "X", "busy"), "applying pod nb-0", retry_after="7")

    assert isinstance(error, Transient) is transient
    if isinstance(error, Transient):
        assert error.status == status
        assert error.retry_after == 7.0


def test_a_retry_after_is_seconds_or_a_date() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)

    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds("Thu, 01 Jan 2026 12:00:30 GMT", now) == 30.0
    assert retry_after_seconds("Thu, 01 Jan 2026 11:00:00 GMT", now) == 0.0
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds(None) is None


def test_nobody_answering_is_transient_without_a_status() -> None:
    error = unreachable("https://10.0.0.1:6443", "Connection refused", "applying namespace nb")

    assert isinstance(error, Transient) and error.status is None
    assert str(error) == (
        "applying namespace nb: cannot reach the Kubernetes API server at https://10.0.0.1:6443: Connection refused"
    )
