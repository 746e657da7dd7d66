"""The fake Kubernetes API server follows the API conventions, seen through the official client.

Every test talks to the server with `kubernetes` (CoreV1Api, AppsV1Api, DynamicClient, Watch),
the way the kubernetes driver does, so that the driver's tests against the fake mean something.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

import httpx
import kubernetes_validate
import pytest
import urllib3
from kubernetes import client, config, dynamic, watch
from kubernetes.client.exceptions import ApiException

from tests.fake_kube import FakeKube, node, run_fake_kube
from tests.fake_kube.schema import schema_causes

APPLY = "application/apply-patch+yaml"

M = TypeVar("M")
T = TypeVar("T")


# Types for the client --------------------------------------------------------------------------
# The generated API and its models are annotated; kubernetes.config, .watch and .dynamic are not:
# these are their signatures as the tests use them.


class _LoadKubeConfig(Protocol):
    def __call__(self, *, config_file: str, client_configuration: client.Configuration) -> None: ...


class _DynamicClient(Protocol):
    def __call__(self, api_client: client.ApiClient, /, *, cache_file: str) -> dynamic.DynamicClient: ...


class _Watch(Protocol):
    def stream(
        self, func: Callable[..., object], *args: object, **kwargs: object
    ) -> Iterator[dict[str, Any]]: ...

    def stop(self) -> None: ...


load_kube_config: _LoadKubeConfig = config.load_kube_config
new_watch: Callable[[], _Watch] = watch.Watch
dynamic_client: _DynamicClient = dynamic.DynamicClient


def json_as(model: type[M], obj: Mapping[str, Any]) -> M:
    """`obj` for a client method that takes a `model`: the client sends a dict as it is (the JSON
    the driver writes too), so only its type is the model's."""
    return cast(M, obj)


def present(value: T | None) -> T:
    """A field the server always fills in (the client's models type every field as optional)."""
    assert value is not None
    return value


class _HasMetadata(Protocol):
    @property
    def metadata(self) -> client.V1ObjectMeta | None: ...


def meta(obj: _HasMetadata) -> client.V1ObjectMeta:
    return present(obj.metadata)


def rv(obj: _HasMetadata) -> int:
    return int(present(meta(obj).resource_version))


def as_json(value: object) -> dict[str, Any]:
    """An answer the client leaves as JSON (`object` in its signature: a Status or the object)."""
    assert isinstance(value, dict)
    return value


def status_of(error: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(present(error.body))
    return body


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def deployment(
    name: str = "web",
    ns: str = "team-a",
    *,
    replicas: int = 2,
    image: str = "nginx:1.27",
    gpus: int = 0,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "app", "image": image}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns, "labels": labels or {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}},
        },
    }


@pytest.fixture
def core(kube_client: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(kube_client)


@pytest.fixture
def apps(kube_client: client.ApiClient) -> client.AppsV1Api:
    return client.AppsV1Api(kube_client)


@pytest.fixture
def team_a(core: client.CoreV1Api) -> str:
    core.create_namespace(json_as(client.V1Namespace, namespace("team-a")))
    return "team-a"


def wait_until(predicate: Any, timeout: float = 5.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


# Discovery -----------------------------------------------------------------------------------


def test_discovery_serves_the_dynamic_client_and_the_version(
    kube_client: client.ApiClient, tmp_path: Path
) -> None:
    dyn = dynamic_client(kube_client, cache_file=str(tmp_path / "discovery.json"))
    assert dyn.version["kubernetes"]["gitVersion"] == "v1.37.0"
    deployments = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    assert (deployments.name, deployments.namespaced) == ("deployments", True)
    assert "watch" in deployments.verbs and "patch" in deployments.verbs
    for api_version, kind in [
        ("v1", "Namespace"),
        ("v1", "ResourceQuota"),
        ("v1", "LimitRange"),
        ("v1", "ConfigMap"),
        ("v1", "Secret"),
        ("v1", "Service"),
        ("v1", "Pod"),
        ("v1", "PersistentVolumeClaim"),
        ("v1", "ServiceAccount"),
        ("v1", "Node"),
        ("apps/v1", "StatefulSet"),
        ("rbac.authorization.k8s.io/v1", "Role"),
        ("rbac.authorization.k8s.io/v1", "RoleBinding"),
        ("networking.k8s.io/v1", "NetworkPolicy"),
    ]:
        assert dyn.resources.get(api_version=api_version, kind=kind).kind == kind
    assert dyn.resources.get(api_version="v1", kind="Node").verbs == ["get", "list", "watch"]
    groups = client.ApisApi(kube_client).get_api_versions()
    assert {g.name for g in groups.groups} >= {"apps", "rbac.authorization.k8s.io", "networking.k8s.io"}
    assert client.VersionApi(kube_client).get_code().git_version == "v1.37.0"
    assert (tmp_path / "discovery.json").exists()


def test_the_dynamic_client_applies_and_reads_objects(kube_client: client.ApiClient, tmp_path: Path) -> None:
    dyn = dynamic_client(kube_client, cache_file=str(tmp_path / "discovery.json"))
    namespaces = dyn.resources.get(api_version="v1", kind="Namespace")
    namespaces.server_side_apply(body=namespace("team-b"), field_manager="gpupaas", force_conflicts=True)
    roles = dyn.resources.get(api_version="rbac.authorization.k8s.io/v1", kind="Role")
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "reader", "namespace": "team-b"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}],
    }
    created = roles.server_side_apply(body=role, field_manager="gpupaas", force_conflicts=True)
    assert created.metadata.uid
    listed = roles.get(namespace="team-b")
    assert [item.metadata.name for item in listed.items] == ["reader"]
    with pytest.raises(dynamic.exceptions.NotFoundError):
        roles.get(name="missing", namespace="team-b")


# CRUD and errors -----------------------------------------------------------------------------


def test_create_get_list_replace_delete(core: client.CoreV1Api, team_a: str) -> None:
    created = core.create_namespaced_config_map(
        team_a, json_as(client.V1ConfigMap, {"metadata": {"name": "settings"}, "data": {"a": "1"}})
    )
    assert meta(created).uid and meta(created).creation_timestamp
    assert rv(created) > 0
    assert present(meta(created).managed_fields)[0].operation == "Update"
    got = core.read_namespaced_config_map("settings", team_a)
    assert got.data == {"a": "1"}
    got.data["b"] = "2"
    replaced = core.replace_namespaced_config_map("settings", team_a, got)
    assert rv(replaced) > rv(created)
    # A stale resourceVersion is a 409 Conflict.
    with pytest.raises(ApiException) as stale:
        core.replace_namespaced_config_map("settings", team_a, got)
    assert stale.value.status == 409 and status_of(stale.value)["reason"] == "Conflict"
    assert "the object has been modified" in status_of(stale.value)["message"]
    names = [meta(item).name for item in core.list_namespaced_config_map(team_a).items]
    assert "settings" in names
    core.delete_namespaced_config_map("settings", team_a)
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_config_map("settings", team_a)
    assert missing.value.status == 404
    status = status_of(missing.value)
    assert (status["kind"], status["status"], status["reason"], status["code"]) == (
        "Status",
        "Failure",
        "NotFound",
        404,
    )
    assert status["message"] == 'configmaps "settings" not found'
    assert status["details"] == {"name": "settings", "kind": "configmaps"}


def test_create_twice_is_already_exists(apps: client.AppsV1Api, team_a: str) -> None:
    apps.create_namespaced_deployment(team_a, json_as(client.V1Deployment, deployment()))
    with pytest.raises(ApiException) as error:
        apps.create_namespaced_deployment(team_a, json_as(client.V1Deployment, deployment()))
    status = status_of(error.value)
    assert (error.value.status, status["reason"]) == (409, "AlreadyExists")
    assert status["message"] == 'deployments.apps "web" already exists'
    assert status["details"] == {"name": "web", "group": "apps", "kind": "deployments"}


def test_invalid_objects_are_422_with_causes(
    apps: client.AppsV1Api, core: client.CoreV1Api, team_a: str
) -> None:
    bad = deployment(name="Web_1")
    bad["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    del bad["spec"]["template"]["spec"]["containers"][0]["image"]
    with pytest.raises(ApiException) as error:
        apps.create_namespaced_deployment(team_a, json_as(client.V1Deployment, bad))
    status = status_of(error.value)
    assert (error.value.status, status["reason"]) == (422, "Invalid")
    assert status["details"]["kind"] == "Deployment" and status["details"]["group"] == "apps"
    fields = {cause["field"]: cause["reason"] for cause in status["details"]["causes"]}
    assert fields["metadata.name"] == "FieldValueInvalid"
    assert fields["spec.template.spec.containers[0].image"] == "FieldValueRequired"
    assert fields["spec.template.metadata.labels"] == "FieldValueInvalid"
    assert status["message"].startswith('Deployment.apps "Web_1" is invalid: [')


def test_schema_errors_name_each_field(fake_kube: FakeKube, team_a: str) -> None:
    body = {"metadata": {"name": "svc"}, "spec": {"ports": [{"port": "http"}], "colour": "blue"}}
    answer = httpx.post(f"{fake_kube.url}/api/v1/namespaces/{team_a}/services", json=body)
    assert answer.status_code == 422
    causes = {cause["field"]: cause for cause in answer.json()["details"]["causes"]}
    assert causes["spec.colour"]["message"] == 'Invalid value: "colour": field not declared in schema'
    assert causes["spec.ports[0].port"]["reason"] == "FieldValueTypeInvalid"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate({"apiVersion": "v1", "kind": "Service", **body}, "1.37.0", strict=True)


def test_schema_validation_agrees_with_kubernetes_validate() -> None:
    good = deployment()
    bad_type = deployment()
    bad_type["spec"]["replicas"] = "two"
    unknown = deployment()
    unknown["spec"]["template"]["spec"]["containers"][0]["gpus"] = 1
    missing = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s"},
        "spec": {"ports": [{"name": "x"}]},
    }
    for obj, valid in [(good, True), (bad_type, False), (unknown, False), (missing, False)]:
        assert (schema_causes(obj) == []) is valid
        if valid:
            kubernetes_validate.validate(obj, "1.37.0", strict=True)
        else:
            with pytest.raises(kubernetes_validate.ValidationError):
                kubernetes_validate.validate(obj, "1.37.0", strict=True)


def test_missing_namespace_is_404_and_terminating_namespace_is_403(
    fake_kube: FakeKube, core: client.CoreV1Api, team_a: str
) -> None:
    with pytest.raises(ApiException) as missing:
        core.create_namespaced_config_map("nowhere", json_as(client.V1ConfigMap, {"metadata": {"name": "x"}}))
    assert missing.value.status == 404
    assert status_of(missing.value)["details"] == {"name": "nowhere", "kind": "namespaces"}
    fake_kube.set_namespace_deletion_delay(30)
    core.delete_namespace(team_a)
    assert present(core.read_namespace(team_a).status).phase == "Terminating"
    with pytest.raises(ApiException) as forbidden:
        core.create_namespaced_config_map(team_a, json_as(client.V1ConfigMap, {"metadata": {"name": "x"}}))
    status = status_of(forbidden.value)
    assert (forbidden.value.status, status["reason"]) == (403, "Forbidden")
    assert status["message"] == (
        'configmaps "x" is forbidden: unable to create new content in namespace team-a because it is being terminated'
    )
    assert status["details"]["causes"][0]["reason"] == "NamespaceTerminating"
    # Deleting it again is a 409 Conflict, as the real namespace registry answers.
    with pytest.raises(ApiException) as again:
        core.delete_namespace(team_a)
    assert (again.value.status, status_of(again.value)["reason"]) == (409, "Conflict")
    with pytest.raises(ApiException) as protected:
        core.delete_namespace("default")
    assert protected.value.status == 403


# Server-side apply ---------------------------------------------------------------------------


def test_server_side_apply_creates_updates_conflicts_and_forces(
    fake_kube: FakeKube, apps: client.AppsV1Api, team_a: str
) -> None:
    fake_kube.pause_controllers()  # no status writes between the applies
    first = apps.patch_namespaced_deployment(
        "web", team_a, deployment(replicas=1), field_manager="gpupaas", force=True, _content_type=APPLY
    )
    assert meta(first).generation == 1
    entry = next(e for e in present(meta(first).managed_fields) if e.manager == "gpupaas")
    assert entry.operation == "Apply" and "f:replicas" in present(entry.fields_v1)["f:spec"]
    # Same manager, changed spec: an update, the generation moves on.
    second = apps.patch_namespaced_deployment(
        "web", team_a, deployment(replicas=3), field_manager="gpupaas", force=True, _content_type=APPLY
    )
    assert (present(second.spec).replicas, meta(second).generation) == (3, 2)
    # Another manager sets the same field to another value: 409 Conflict unless forced.
    scaler = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 5},
    }
    with pytest.raises(ApiException) as conflict:
        apps.patch_namespaced_deployment(
            "web", team_a, scaler, field_manager="autoscaler", _content_type=APPLY
        )
    status = status_of(conflict.value)
    assert (conflict.value.status, status["reason"]) == (409, "Conflict")
    assert (
        status["message"]
        == 'Apply failed with 1 conflict: conflict with "gpupaas" using apps/v1: .spec.replicas'
    )
    assert status["details"]["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "gpupaas" using apps/v1',
            "field": ".spec.replicas",
        }
    ]
    forced = apps.patch_namespaced_deployment(
        "web", team_a, scaler, field_manager="autoscaler", force=True, _content_type=APPLY
    )
    assert present(forced.spec).replicas == 5
    owners = {e.manager: present(e.fields_v1) for e in present(meta(forced).managed_fields)}
    assert "f:replicas" not in owners["gpupaas"]["f:spec"] and "f:replicas" in owners["autoscaler"]["f:spec"]
    # A field the manager stops applying is removed; a no-op apply keeps the resourceVersion.
    labelled = deployment(replicas=5, labels={"app": "web", "tier": "gpu"})
    applied = apps.patch_namespaced_deployment(
        "web", team_a, labelled, field_manager="gpupaas", _content_type=APPLY
    )
    assert meta(applied).labels == {"app": "web", "tier": "gpu"}
    again = apps.patch_namespaced_deployment(
        "web", team_a, labelled, field_manager="gpupaas", _content_type=APPLY
    )
    assert meta(again).resource_version == meta(applied).resource_version
    unlabelled = apps.patch_namespaced_deployment(
        "web", team_a, deployment(replicas=5), field_manager="gpupaas", _content_type=APPLY
    )
    assert meta(unlabelled).labels == {"app": "web"}


def test_apply_needs_a_field_manager_and_accepts_yaml(fake_kube: FakeKube, team_a: str) -> None:
    url = f"{fake_kube.url}/api/v1/namespaces/{team_a}/configmaps/settings"
    headers = {"Content-Type": APPLY}
    body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: '1'\n"
    answer = httpx.patch(url, content=body, headers=headers)
    assert answer.status_code == 422
    assert answer.json()["details"]["causes"][0]["field"] == "fieldManager"
    created = httpx.patch(url, params={"fieldManager": "gpupaas"}, content=body, headers=headers)
    assert created.status_code == 201 and created.json()["data"] == {"a": "1"}
    updated = httpx.patch(
        url, params={"fieldManager": "gpupaas"}, content=body.replace("'1'", "'2'"), headers=headers
    )
    assert updated.status_code == 200 and updated.json()["data"] == {"a": "2"}


def test_generation_moves_with_the_spec_and_resource_version_with_every_write(
    apps: client.AppsV1Api, team_a: str
) -> None:
    created = apps.create_namespaced_deployment(team_a, json_as(client.V1Deployment, deployment(replicas=1)))
    labelled = apps.patch_namespaced_deployment("web", team_a, {"metadata": {"labels": {"x": "y"}}})
    assert meta(labelled).generation == meta(created).generation == 1
    assert rv(labelled) > rv(created)
    scaled = apps.patch_namespaced_deployment("web", team_a, {"spec": {"replicas": 2}})
    assert meta(scaled).generation == 2
    ready = wait_until(
        lambda: (
            (d := present(apps.read_namespaced_deployment("web", team_a).status)).observed_generation == 2
            and d.ready_replicas == 2
            and d
        )
    )
    assert ready.available_replicas == 2


# Selectors -----------------------------------------------------------------------------------


def test_label_and_field_selectors(core: client.CoreV1Api, team_a: str) -> None:
    for name, labels in [
        ("a", {"tier": "gpu", "team": "x"}),
        ("b", {"tier": "cpu", "team": "y"}),
        ("c", {"tier": "gpu"}),
    ]:
        core.create_namespaced_config_map(
            team_a, json_as(client.V1ConfigMap, {"metadata": {"name": name, "labels": labels}})
        )

    def names(label_selector: str | None = None, field_selector: str | None = None) -> list[str]:
        found = core.list_namespaced_config_map(
            team_a, label_selector=label_selector, field_selector=field_selector
        ).items
        return sorted(present(meta(item).name) for item in found if meta(item).name != "kube-root-ca.crt")

    assert names(label_selector="tier=gpu") == ["a", "c"]
    assert names(label_selector="tier==gpu,team=x") == ["a"]
    assert names(label_selector="team!=x") == ["b", "c"]
    assert names(label_selector="team in (x, y)") == ["a", "b"]
    assert names(label_selector="team notin (x)") == ["b", "c"]
    assert names(label_selector="team") == ["a", "b"]
    assert names(label_selector="!team") == ["c"]
    assert names(field_selector="metadata.name=b") == ["b"]
    assert names(field_selector="metadata.name!=b", label_selector="tier") == ["a", "c"]
    with pytest.raises(ApiException) as bad:
        core.list_namespaced_config_map(team_a, label_selector="tier in (gpu")
    assert (bad.value.status, status_of(bad.value)["reason"]) == (400, "BadRequest")
    with pytest.raises(ApiException) as unsupported:
        core.list_namespaced_config_map(team_a, field_selector="data.a=1")
    assert "field label not supported" in status_of(unsupported.value)["message"]


def test_list_pages_with_limit_and_continue(core: client.CoreV1Api, team_a: str) -> None:
    for i in range(5):
        core.create_namespaced_secret(
            team_a, json_as(client.V1Secret, {"metadata": {"name": f"s{i}"}, "stringData": {"k": "v"}})
        )
    first = core.list_namespaced_secret(team_a, limit=2)
    assert [meta(s).name for s in first.items] == ["s0", "s1"]
    assert present(first.metadata).remaining_item_count == 3
    second = core.list_namespaced_secret(team_a, limit=10, _continue=present(first.metadata)._continue)
    assert [meta(s).name for s in second.items] == ["s2", "s3", "s4"]
    assert second.items[0].data == {"k": "dg=="} and second.items[0].type == "Opaque"


# Deletion ------------------------------------------------------------------------------------


def test_foreground_namespace_deletion_waits_for_its_content(
    fake_kube: FakeKube, core: client.CoreV1Api, apps: client.AppsV1Api, team_a: str
) -> None:
    fake_kube.set_namespace_deletion_delay(0.2)
    fake_kube.set_termination_delay(0.2)
    apps.create_namespaced_deployment(team_a, json_as(client.V1Deployment, deployment(replicas=2)))
    wait_until(lambda: len(fake_kube.ready_pods(team_a)) == 2)
    answer = as_json(core.delete_namespace(team_a, propagation_policy="Foreground"))
    assert answer["status"]["phase"] == "Terminating"
    terminating = core.read_namespace(team_a)
    assert meta(terminating).deletion_timestamp is not None
    assert "foregroundDeletion" in present(meta(terminating).finalizers)
    assert present(terminating.spec).finalizers == ["kubernetes"]
    started = time.monotonic()
    wait_until(
        lambda: (
            bool(fake_kube.pods(team_a)) and fake_kube.pods(team_a)[0]["metadata"].get("deletionTimestamp")
        )
    )

    def gone() -> bool:
        try:
            core.read_namespace(team_a)
        except ApiException as error:
            status: int = error.status
            return status == 404
        return False

    wait_until(gone)
    assert time.monotonic() - started >= 0.15
    assert fake_kube.pods(team_a) == [] and fake_kube.list("apps/v1", "Deployment", team_a) == []


def test_deployment_deletion_propagates(fake_kube: FakeKube, apps: client.AppsV1Api, team_a: str) -> None:
    apps.create_namespaced_deployment(team_a, json_as(client.V1Deployment, deployment(name="fg", replicas=1)))
    apps.create_namespaced_deployment(team_a, json_as(client.V1Deployment, deployment(name="bg", replicas=1)))
    apps.create_namespaced_deployment(
        team_a, json_as(client.V1Deployment, deployment(name="orphan", replicas=1))
    )
    wait_until(lambda: len(fake_kube.ready_pods(team_a)) == 3)
    fake_kube.set_termination_delay(0.3)
    answer = as_json(apps.delete_namespaced_deployment("fg", team_a, propagation_policy="Foreground"))
    assert answer["metadata"]["finalizers"] == ["foregroundDeletion"]
    # Foreground: the Deployment stays (deletionTimestamp set) while its ReplicaSet and pods go.
    held = apps.read_namespaced_deployment("fg", team_a)
    assert meta(held).deletion_timestamp is not None
    wait_until(lambda: fake_kube.get("apps/v1", "Deployment", "fg", team_a) is None)
    assert fake_kube.pods(team_a, "app=fg") == []
    # Background: the Deployment goes at once; its ReplicaSet and pods after it.
    status = as_json(apps.delete_namespaced_deployment("bg", team_a))
    assert status["status"] == "Success" and status["details"]["kind"] == "deployments"
    wait_until(lambda: fake_kube.pods(team_a, "app=bg") == [])
    # Orphan: the ReplicaSet stays, without its owner reference.
    apps.delete_namespaced_deployment("orphan", team_a, propagation_policy="Orphan")
    wait_until(lambda: fake_kube.get("apps/v1", "Deployment", "orphan", team_a) is None)
    orphans = fake_kube.list("apps/v1", "ReplicaSet", team_a, "app=orphan")
    assert len(orphans) == 1 and "ownerReferences" not in orphans[0]["metadata"]
    assert len(fake_kube.pods(team_a, "app=orphan")) == 1


def test_finalizers_hold_an_object_until_removed(core: client.CoreV1Api, team_a: str) -> None:
    core.create_namespaced_config_map(
        team_a,
        json_as(client.V1ConfigMap, {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}),
    )
    core.delete_namespaced_config_map("held", team_a)
    held = core.read_namespaced_config_map("held", team_a)
    assert meta(held).deletion_timestamp is not None
    with pytest.raises(ApiException) as adding:
        core.patch_namespaced_config_map(
            "held", team_a, {"metadata": {"finalizers": ["example.com/hold", "example.com/more"]}}
        )
    assert adding.value.status == 422
    core.patch_namespaced_config_map("held", team_a, {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as gone:
        core.read_namespaced_config_map("held", team_a)
    assert gone.value.status == 404


# Watch ---------------------------------------------------------------------------------------


def test_watch_streams_added_modified_deleted_and_bookmarks(
    fake_kube: FakeKube, core: client.CoreV1Api, team_a: str
) -> None:
    fake_kube.set_bookmark_interval(0.1)
    listed = core.list_namespaced_config_map(team_a, label_selector="watched=yes")
    start = present(listed.metadata).resource_version
    core.create_namespaced_config_map(
        team_a, json_as(client.V1ConfigMap, {"metadata": {"name": "w", "labels": {"watched": "yes"}}})
    )
    core.create_namespaced_config_map(team_a, json_as(client.V1ConfigMap, {"metadata": {"name": "other"}}))
    core.patch_namespaced_config_map("w", team_a, {"data": {"k": "v"}})
    core.delete_namespaced_config_map("w", team_a)
    seen: list[tuple[str, str | None]] = []
    watcher = new_watch()
    for event in watcher.stream(
        core.list_namespaced_config_map,
        team_a,
        label_selector="watched=yes",
        resource_version=start,
        allow_watch_bookmarks=True,
        timeout_seconds=5,
    ):
        name = event["object"].metadata.name if event["type"] != "BOOKMARK" else None
        seen.append((event["type"], name))
        if event["type"] == "BOOKMARK":
            bookmark_rv = event["raw_object"]["metadata"]["resourceVersion"]
            watcher.stop()
    assert seen == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w"), ("BOOKMARK", None)]
    assert int(bookmark_rv) >= fake_kube.resource_version - 1


def test_watch_from_a_compacted_resource_version_is_410(
    fake_kube: FakeKube, core: client.CoreV1Api, team_a: str
) -> None:
    old = present(core.list_namespaced_config_map(team_a).metadata).resource_version
    core.create_namespaced_config_map(team_a, json_as(client.V1ConfigMap, {"metadata": {"name": "c"}}))
    fake_kube.compact()
    with pytest.raises(ApiException) as gone:
        for _ in new_watch().stream(
            core.list_namespaced_config_map, team_a, resource_version=old, timeout_seconds=2
        ):
            pass
    assert gone.value.status == 410
    assert "too old resource version" in gone.value.reason
    # A fresh list gives a resourceVersion that can be watched again.
    fresh = present(core.list_namespaced_config_map(team_a).metadata).resource_version
    core.delete_namespaced_config_map("c", team_a)
    events = new_watch().stream(
        core.list_namespaced_config_map, team_a, resource_version=fresh, timeout_seconds=2
    )
    assert next(iter(events))["type"] == "DELETED"


def test_a_small_history_expires_old_watches(core: client.CoreV1Api) -> None:
    with run_fake_kube(history_size=5) as kube:
        api = client.CoreV1Api(kube.api_client())
        old = present(api.list_namespace().metadata).resource_version
        for i in range(10):
            api.create_namespace(json_as(client.V1Namespace, namespace(f"ns-{i}")))
        events = new_watch().stream(api.list_namespace, resource_version=old, timeout_seconds=1)
        with pytest.raises(ApiException) as gone:
            next(iter(events))
        assert gone.value.status == 410


def test_drop_watches_ends_streams_and_the_client_resumes(
    fake_kube: FakeKube, core: client.CoreV1Api, team_a: str
) -> None:
    start = present(core.list_namespaced_config_map(team_a).metadata).resource_version
    watcher = new_watch()
    stream = watcher.stream(core.list_namespaced_config_map, team_a, resource_version=start)
    core.create_namespaced_config_map(team_a, json_as(client.V1ConfigMap, {"metadata": {"name": "one"}}))
    first = next(stream)
    assert (first["type"], first["object"].metadata.name) == ("ADDED", "one")
    assert fake_kube.drop_watches() == 1
    core.create_namespaced_config_map(team_a, json_as(client.V1ConfigMap, {"metadata": {"name": "two"}}))
    second = next(stream)  # the client re-watches from the last resourceVersion it saw
    assert (second["type"], second["object"].metadata.name) == ("ADDED", "two")
    watcher.stop()
    watches = [r for r in fake_kube.requests if r.query.get("watch") in ("true", "True")]
    assert (
        len(watches) == 2 and watches[1].query["resourceVersion"] == first["object"].metadata.resource_version
    )


# The cluster behind the API ------------------------------------------------------------------


def test_a_deployment_becomes_available_with_ready_pods(
    fake_kube: FakeKube, apps: client.AppsV1Api, core: client.CoreV1Api, team_a: str
) -> None:
    fake_kube.set_pod_delay(3600)  # the kubelet keeps the pods ContainerCreating, however slow the test
    apps.patch_namespaced_deployment(
        "web", team_a, deployment(replicas=3), field_manager="gpupaas", _content_type=APPLY
    )
    pending = wait_until(lambda: core.list_namespaced_pod(team_a, label_selector="app=web").items)
    assert all(present(p.status).phase == "Pending" for p in pending)
    # the controllers restart with a short delay: the kubelet starts the pods 0.1 s later
    fake_kube.set_pod_delay(0.1)
    fake_kube.pause_controllers()
    fake_kube.resume_controllers()
    available = wait_until(
        lambda: (
            (d := present(apps.read_namespaced_deployment("web", team_a).status)).available_replicas == 3
            and d
        )
    )
    conditions = {c.type: (c.status, c.reason) for c in available.conditions}
    assert conditions["Available"] == ("True", "MinimumReplicasAvailable")
    assert conditions["Progressing"] == ("True", "NewReplicaSetAvailable")
    pods = core.list_namespaced_pod(team_a, label_selector="app=web").items
    assert len(pods) == 3
    for pod in pods:
        pod_status, labels = present(pod.status), present(meta(pod).labels)
        assert pod_status.phase == "Running" and present(pod.spec).node_name == "fake-node-1"
        assert {c.type: c.status for c in present(pod_status.conditions)}["Ready"] == "True"
        assert present(pod_status.container_statuses)[0].ready
        owner = present(meta(pod).owner_references)[0]
        assert (owner.kind, owner.controller) == ("ReplicaSet", True)
        assert labels["app"] == "web" and "pod-template-hash" in labels
    # A new template rolls out: new pods, the old ones go.
    old_names = {meta(p).name for p in pods}
    apps.patch_namespaced_deployment(
        "web",
        team_a,
        deployment(replicas=3, image="nginx:1.28"),
        field_manager="gpupaas",
        _content_type=APPLY,
    )

    def rolled() -> bool:
        current = fake_kube.ready_pods(team_a, "app=web")
        return len(current) == 3 and not old_names & {p["metadata"]["name"] for p in current}

    wait_until(rolled)
    wait_until(lambda: present(apps.read_namespaced_deployment("web", team_a).status).updated_replicas == 3)


def test_an_unschedulable_gpu_pod_says_why(fake_kube: FakeKube, core: client.CoreV1Api, team_a: str) -> None:
    fake_kube.set_nodes([node(f"gpu-{i}", gpus=8) for i in range(4)])
    pod = {
        "metadata": {"name": "big"},
        "spec": {
            "containers": [
                {"name": "train", "image": "trainer:1", "resources": {"limits": {"nvidia.com/gpu": "16"}}}
            ]
        },
    }
    core.create_namespaced_pod(team_a, json_as(client.V1Pod, pod))

    def unschedulable() -> Any:
        found = core.read_namespaced_pod("big", team_a)
        return next((c for c in present(found.status).conditions or [] if c.type == "PodScheduled"), None)

    condition = wait_until(unschedulable)
    assert (condition.status, condition.reason) == ("False", "Unschedulable")
    assert condition.message.startswith("0/4 nodes are available: 4 Insufficient nvidia.com/gpu.")
    assert present(core.read_namespaced_pod("big", team_a).status).phase == "Pending"
    events = wait_until(
        lambda: (
            core.list_namespaced_event(
                team_a, field_selector="involvedObject.name=big,reason=FailedScheduling"
            ).items
        )
    )
    assert events[0].type == "Warning"
    # More capacity: the scheduler tries again.
    fake_kube.set_nodes([node("gpu-big", gpus=16)])
    wait_until(lambda: present(core.read_namespaced_pod("big", team_a).status).phase == "Running")


def test_make_unschedulable_progress_deadline_and_pending_claims(
    fake_kube: FakeKube, apps: client.AppsV1Api, core: client.CoreV1Api, team_a: str
) -> None:
    core.create_namespaced_pod(
        team_a,
        json_as(
            client.V1Pod, {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x:1"}]}}
        ),
    )
    wait_until(lambda: present(core.read_namespaced_pod("p", team_a).status).phase == "Running")
    fake_kube.make_unschedulable(team_a, "p", "0/1 nodes are available: 1 node(s) were unschedulable.")
    pending = present(core.read_namespaced_pod("p", team_a).status)
    scheduled = next(c for c in present(pending.conditions) if c.type == "PodScheduled")
    assert (pending.phase, scheduled.reason) == ("Pending", "Unschedulable")
    assert scheduled.message == "0/1 nodes are available: 1 node(s) were unschedulable."
    fake_kube.recover_pod(team_a, "p")
    wait_until(lambda: present(core.read_namespaced_pod("p", team_a).status).phase == "Running")
    # PVCs stay Pending while binding is off.
    fake_kube.set_pvc_delay(None)
    claim = {
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    core.create_namespaced_persistent_volume_claim(team_a, json_as(client.V1PersistentVolumeClaim, claim))
    # A rollout that cannot finish times out after progressDeadlineSeconds.
    stuck = deployment(replicas=1, gpus=64)
    stuck["spec"]["progressDeadlineSeconds"] = 1
    apps.create_namespaced_deployment(team_a, json_as(client.V1Deployment, stuck))

    def timed_out() -> Any:
        conditions = present(apps.read_namespaced_deployment("web", team_a).status).conditions or []
        return next((c for c in conditions if c.type == "Progressing" and c.status == "False"), None)

    condition = wait_until(timed_out)
    assert condition.reason == "ProgressDeadlineExceeded"
    assert present(core.read_namespaced_persistent_volume_claim("data", team_a).status).phase == "Pending"
    fake_kube.set_pvc_delay(0)
    wait_until(
        lambda: present(core.read_namespaced_persistent_volume_claim("data", team_a).status).phase == "Bound"
    )


def test_fail_pod_and_recover_pod(
    fake_kube: FakeKube, apps: client.AppsV1Api, core: client.CoreV1Api, team_a: str
) -> None:
    apps.create_namespaced_deployment(team_a, json_as(client.V1Deployment, deployment(replicas=1)))
    pod = wait_until(lambda: fake_kube.ready_pods(team_a, "app=web"))[0]
    name = pod["metadata"]["name"]
    fake_kube.fail_pod(team_a, name, "OOMKilled", "out of memory")
    failed = present(core.read_namespaced_pod(name, team_a).status)
    container = present(failed.container_statuses)[0]
    assert failed.phase == "Running" and not container.ready
    assert present(present(container.state).waiting).reason == "CrashLoopBackOff"
    terminated = present(present(container.last_state).terminated)
    assert (terminated.reason, terminated.exit_code) == ("OOMKilled", 137)
    assert container.restart_count == 1

    def available_replicas() -> int | None:
        return present(apps.read_namespaced_deployment("web", team_a).status).available_replicas

    wait_until(lambda: (available_replicas() or 0) == 0)
    fake_kube.recover_pod(team_a, name)
    wait_until(lambda: available_replicas() == 1)
    # restartPolicy Never: the pod fails for good.
    core.create_namespaced_pod(
        team_a,
        json_as(
            client.V1Pod,
            {
                "metadata": {"name": "job"},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x:1"}]},
            },
        ),
    )
    wait_until(lambda: present(core.read_namespaced_pod("job", team_a).status).phase == "Running")
    fake_kube.fail_pod(team_a, "job", "Error", "exit 3", exit_code=3)
    job = present(core.read_namespaced_pod("job", team_a).status)
    assert job.phase == "Failed"
    assert present(present(present(job.container_statuses)[0].state).terminated).exit_code == 3


def test_statefulset_pods_come_up_in_order_with_bound_claims(
    fake_kube: FakeKube, apps: client.AppsV1Api, core: client.CoreV1Api, team_a: str
) -> None:
    fake_kube.set_pod_delay(0.05)
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": team_a},
        "spec": {
            "replicas": 2,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {
                    "containers": [
                        {
                            "name": "db",
                            "image": "postgres:17",
                            "volumeMounts": [{"name": "data", "mountPath": "/d"}],
                        }
                    ]
                },
            },
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
                }
            ],
        },
    }
    apps.patch_namespaced_stateful_set("db", team_a, sts, field_manager="gpupaas", _content_type=APPLY)
    wait_until(lambda: present(apps.read_namespaced_stateful_set("db", team_a).status).ready_replicas == 2)
    pods = sorted(
        core.list_namespaced_pod(team_a, label_selector="app=db").items, key=lambda p: present(meta(p).name)
    )
    assert [meta(p).name for p in pods] == ["db-0", "db-1"]
    assert present(present(pods[0].status).start_time) <= present(present(pods[1].status).start_time)
    claims = core.list_namespaced_persistent_volume_claim(team_a).items
    assert sorted(present(meta(c).name) for c in claims) == ["data-db-0", "data-db-1"]
    assert all((s := present(c.status)).phase == "Bound" and s.capacity == {"storage": "1Gi"} for c in claims)


def test_quota_failures_show_on_the_deployment(
    apps: client.AppsV1Api, core: client.CoreV1Api, team_a: str
) -> None:
    core.create_namespaced_resource_quota(
        team_a,
        json_as(
            client.V1ResourceQuota,
            {
                "metadata": {"name": "compute"},
                "spec": {"hard": {"requests.nvidia.com/gpu": "2", "pods": "10"}},
            },
        ),
    )
    apps.create_namespaced_deployment(team_a, json_as(client.V1Deployment, deployment(replicas=3, gpus=1)))

    def failure() -> Any:
        conditions = present(apps.read_namespaced_deployment("web", team_a).status).conditions or []
        return next((c for c in conditions if c.type == "ReplicaFailure"), None)

    condition = wait_until(failure)
    assert (condition.status, condition.reason) == ("True", "FailedCreate")
    assert (
        "exceeded quota: compute, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=2"
        in (condition.message)
    )
    quota = wait_until(
        lambda: (
            (q := present(core.read_namespaced_resource_quota("compute", team_a).status)).used
            and q.used.get("requests.nvidia.com/gpu") == "2"
            and q
        )
    )
    assert quota.hard == {"requests.nvidia.com/gpu": "2", "pods": "10"}


def test_status_patches_services_and_node_ports(
    apps: client.AppsV1Api, core: client.CoreV1Api, team_a: str
) -> None:
    service = {
        "metadata": {"name": "web"},
        "spec": {"type": "NodePort", "selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]},
    }
    created = core.create_namespaced_service(team_a, json_as(client.V1Service, service))
    port = present(present(created.spec).ports)[0]
    assert 30000 <= present(port.node_port) <= 32767 and port.protocol == "TCP"
    assert present(created.spec).cluster_ip
    # The main resource ignores status; the status subresource takes it (merge patch).
    apps.create_namespaced_deployment(team_a, json_as(client.V1Deployment, deployment(replicas=0)))
    apps.patch_namespaced_deployment("web", team_a, {"status": {"replicas": 7}})
    assert present(apps.read_namespaced_deployment("web", team_a).status).replicas is None
    patched = apps.patch_namespaced_deployment_status(
        "web", team_a, {"status": {"observedGeneration": 9}}, _content_type="application/merge-patch+json"
    )
    assert present(patched.status).observed_generation == 9
    strategic = apps.patch_namespaced_deployment_status(
        "web",
        team_a,
        {"status": {"conditions": [{"type": "Available", "status": "False", "reason": "Test"}]}},
        _content_type="application/strategic-merge-patch+json",
    )
    assert [c.reason for c in present(present(strategic.status).conditions) if c.type == "Available"] == [
        "Test"
    ]


def test_injected_errors_latency_and_the_request_log(
    fake_kube: FakeKube, core: client.CoreV1Api, team_a: str
) -> None:
    rule = fake_kube.inject_error("POST", r"/configmaps$", 503, times=2)
    for _ in range(2):
        with pytest.raises(ApiException) as error:
            core.create_namespaced_config_map(
                team_a, json_as(client.V1ConfigMap, {"metadata": {"name": "x"}})
            )
        assert (error.value.status, status_of(error.value)["reason"]) == (503, "ServiceUnavailable")
    assert rule.hits == 2
    core.create_namespaced_config_map(team_a, json_as(client.V1ConfigMap, {"metadata": {"name": "x"}}))
    # The client retries reads answered 429/5xx with Retry-After by itself (client-go style).
    retried = fake_kube.inject_error("GET", r"/configmaps$", 429, times=2, retry_after=0)
    core.list_namespaced_config_map(team_a)
    assert retried.hits == 2
    fake_kube.set_latency(0.5, path_regex=r"/secrets")
    with pytest.raises(urllib3.exceptions.MaxRetryError):
        core.list_namespaced_secret(team_a, _request_timeout=(1, 0.1))
    fake_kube.set_latency(0, path_regex=r"/secrets")
    applied = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    core.patch_namespaced_config_map(
        "x", team_a, applied, field_manager="gpupaas", force=True, _content_type=APPLY
    )
    patches = [r for r in fake_kube.requests if r.method == "PATCH"]
    assert patches[-1].content_type == APPLY
    assert patches[-1].query == {"fieldManager": "gpupaas", "force": "true"}
    assert patches[-1].path == f"/api/v1/namespaces/{team_a}/configmaps/x"


def test_a_required_token_rejects_a_bad_kubeconfig(tmp_path: Path) -> None:
    with run_fake_kube(token="s3cret") as kube:
        good = client.Configuration()
        load_kube_config(config_file=str(kube.kubeconfig(tmp_path / "good")), client_configuration=good)
        assert good.host == kube.url
        assert meta(client.CoreV1Api(client.ApiClient(good)).read_namespace("default")).name == "default"
        bad = client.Configuration()
        load_kube_config(
            config_file=str(kube.kubeconfig(tmp_path / "bad", token="nope")), client_configuration=bad
        )
        with pytest.raises(ApiException) as error:
            client.CoreV1Api(client.ApiClient(bad)).list_namespace()
        assert (error.value.status, status_of(error.value)["reason"]) == (401, "Unauthorized")


def test_every_stored_object_passes_kubernetes_validate(
    fake_kube: FakeKube, apps: client.AppsV1Api, core: client.CoreV1Api, team_a: str
) -> None:
    apps.create_namespaced_deployment(team_a, json_as(client.V1Deployment, deployment(replicas=2, gpus=1)))
    core.create_namespaced_service(
        team_a, json_as(client.V1Service, {"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}})
    )
    wait_until(lambda: len(fake_kube.ready_pods(team_a)) == 2)
    for api_version, kind in [
        ("v1", "Namespace"),
        ("v1", "Node"),
        ("v1", "Pod"),
        ("v1", "Service"),
        ("v1", "Event"),
        ("v1", "ServiceAccount"),
        ("apps/v1", "Deployment"),
        ("apps/v1", "ReplicaSet"),
    ]:
        for obj in fake_kube.list(api_version, kind):
            kubernetes_validate.validate(obj, "1.37.0", strict=True)


async def test_the_async_runner_serves_the_sync_client_through_threads(fake_kube_async: FakeKube) -> None:
    api = client.CoreV1Api(fake_kube_async.api_client())
    await asyncio.to_thread(api.create_namespace, json_as(client.V1Namespace, namespace("async-ns")))
    fake_kube_async.set_pod_delay(0)
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x:1"}]}}
    await asyncio.to_thread(api.create_namespaced_pod, "async-ns", json_as(client.V1Pod, pod))
    for _ in range(200):
        found = await asyncio.to_thread(api.read_namespaced_pod, "p", "async-ns")
        if present(found.status).phase == "Running":
            break
        await asyncio.sleep(0.01)
    assert present(found.status).phase == "Running"
