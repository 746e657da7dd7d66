"""The fake API server authenticates and authorizes as a kube-apiserver with RBAC would, seen
through the official client: tokens of service accounts and users, RoleBindings and
ClusterRoleBindings, resourceNames, subresources, non-resource URLs, the create that a server-side
apply of a new object needs, the escalation checks of RBAC writes, aggregation, and the
authorization.k8s.io reviews."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.fake_kube import FakeKube, run_fake_kube

APPLY = "application/apply-patch+yaml"
SA = "system:serviceaccount:team:robot"
SA_GROUPS = '["system:serviceaccounts" "system:serviceaccounts:team" "system:authenticated"]'

# A service account that may read pods and write configmaps in its own namespace, read nodes
# everywhere, and read one configmap ("settings") in "other".
ROBOT = """
apiVersion: v1
kind: Namespace
metadata:
  name: team
---
apiVersion: v1
kind: Namespace
metadata:
  name: other
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: robot
  namespace: team
---
apiVersion: v1
kind: Secret
metadata:
  name: robot-token
  namespace: team
  annotations:
    kubernetes.io/service-account.name: robot
type: kubernetes.io/service-account-token
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: pod-reader
rules:
  - apiGroups: [""]
    resources: [pods, pods/log]
    verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: robot-reads-pods
  namespace: team
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: pod-reader}
subjects: [{kind: ServiceAccount, name: robot}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: configmaps
  namespace: team
rules:
  - apiGroups: [""]
    resources: [configmaps]
    verbs: [get, list, create, patch, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: robot-writes-configmaps
  namespace: team
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: configmaps}
subjects: [{kind: ServiceAccount, name: robot, namespace: team}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: settings-reader
  namespace: other
rules:
  - apiGroups: [""]
    resources: [configmaps]
    resourceNames: [settings]
    verbs: [get, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: robot-reads-settings
  namespace: other
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: settings-reader}
subjects: [{kind: ServiceAccount, name: robot, namespace: team}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: robot-reads-nodes
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: node-reader}
subjects: [{kind: ServiceAccount, name: robot, namespace: team}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: node-reader
rules:
  - apiGroups: [""]
    resources: [nodes]
    verbs: [get, list]
"""


def configmap(name: str, namespace: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}}


def body(obj: dict[str, Any]) -> Any:
    """A manifest for a client method that takes a model: the client sends a dict as it is."""
    return obj


def status_of(error: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(error.body or "{}")
    return body


def refused(call: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """The Status of a call the server refuses (pytest fails if it succeeds)."""
    with pytest.raises(ApiException) as caught:
        call(*args, **kwargs)
    return status_of(caught.value)


@pytest.fixture
def robot(fake_kube: FakeKube, tmp_path: Path) -> Iterator[client.ApiClient]:
    """The API client of the service account team/robot, after ROBOT is applied."""
    path = tmp_path / "robot.yaml"
    path.write_text(ROBOT, encoding="utf-8")
    fake_kube.load_rbac(path)
    fake_kube.create(configmap("settings", "other"))
    fake_kube.create(configmap("secret-plans", "other"))
    token = fake_kube.service_account_token("team", "robot")
    with contextlib.closing(fake_kube.api_client(token)) as api_client:
        yield api_client


def test_the_tokens_controller_fills_the_service_account_token_secret(
    fake_kube: FakeKube, tmp_path: Path
) -> None:
    path = tmp_path / "robot.yaml"
    path.write_text(ROBOT, encoding="utf-8")
    fake_kube.load_rbac(path)

    token = fake_kube.service_account_token("team", "robot")

    secret = fake_kube.get("v1", "Secret", "robot-token", "team")
    account = fake_kube.get("v1", "ServiceAccount", "robot", "team")
    assert secret is not None and account is not None
    assert (
        secret["metadata"]["annotations"]["kubernetes.io/service-account.uid"] == account["metadata"]["uid"]
    )
    assert set(secret["data"]) == {"token", "ca.crt", "namespace"}
    assert token.count(".") == 2  # a JWT
    with fake_kube.api_client(token) as api_client:
        assert client.CoreV1Api(api_client).list_namespaced_pod("team").items == []


def test_a_role_binding_grants_a_cluster_role_in_its_namespace_only(
    fake_kube: FakeKube, robot: client.ApiClient
) -> None:
    core = client.CoreV1Api(robot)

    assert core.list_namespaced_pod("team").items == []
    status = refused(core.list_namespaced_pod, "other")

    assert status["code"] == 403
    assert status["reason"] == "Forbidden"
    assert status["message"] == (
        f'pods is forbidden: User "{SA}" cannot list resource "pods" in API group "" in the namespace "other"'
    )
    assert status["details"] == {"kind": "pods"}
    cluster_wide = refused(core.list_pod_for_all_namespaces)
    assert cluster_wide["message"] == (
        f'pods is forbidden: User "{SA}" cannot list resource "pods" in API group "" at the cluster scope'
    )


def test_a_cluster_role_binding_grants_everywhere(fake_kube: FakeKube, robot: client.ApiClient) -> None:
    core = client.CoreV1Api(robot)

    assert [n.metadata.name for n in core.list_node().items if n.metadata] == ["fake-node-1"]
    assert core.read_node("fake-node-1").metadata is not None
    status = refused(core.delete_node, "fake-node-1")
    assert status["message"] == (
        f'nodes "fake-node-1" is forbidden: User "{SA}" cannot delete resource "nodes" in API group "" '
        "at the cluster scope"
    )
    assert status["details"] == {"name": "fake-node-1", "kind": "nodes"}


def test_a_named_api_group_and_a_subresource_are_part_of_the_check(
    fake_kube: FakeKube, robot: client.ApiClient
) -> None:
    status = refused(client.AppsV1Api(robot).list_namespaced_deployment, "team")
    assert status["message"] == (
        f'deployments.apps is forbidden: User "{SA}" cannot list resource "deployments" in API group "apps" '
        'in the namespace "team"'
    )
    assert status["details"] == {"group": "apps", "kind": "deployments"}

    fake_kube.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web", "namespace": "team"},
            "spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]},
        }
    )
    fake_kube.wait_for(lambda: fake_kube.ready_pods("team"))
    core = client.CoreV1Api(robot)
    assert (
        core.read_namespaced_pod_log("web", "team")
        == "fake container main: running the entrypoint of nginx:1.27\n"
    )  # granted
    status = refused(core.patch_namespaced_pod_status, "web", "team", {"status": {"phase": "Failed"}})
    assert status["message"] == (
        f'pods "web" is forbidden: User "{SA}" cannot patch resource "pods/status" in API group "" '
        'in the namespace "team"'
    )


def test_resource_names_allow_only_the_named_objects(fake_kube: FakeKube, robot: client.ApiClient) -> None:
    core = client.CoreV1Api(robot)

    assert core.read_namespaced_config_map("settings", "other").metadata is not None
    status = refused(core.read_namespaced_config_map, "secret-plans", "other")
    assert status["message"] == (
        f'configmaps "secret-plans" is forbidden: User "{SA}" cannot get resource "configmaps" in API group "" '
        'in the namespace "other"'
    )
    # A list is allowed only when its field selector pins the name, as kubectl get NAME -w does.
    refused(core.list_namespaced_config_map, "other")
    listed = core.list_namespaced_config_map("other", field_selector="metadata.name=settings")
    assert [c.metadata.name for c in listed.items if c.metadata] == ["settings"]


def test_discovery_is_allowed_to_every_authenticated_user_and_other_paths_are_not(
    fake_kube: FakeKube, robot: client.ApiClient
) -> None:
    token = fake_kube.service_account_token("team", "robot")
    headers = {"Authorization": f"Bearer {token}"}
    for path in ("/version", "/api", "/api/v1", "/apis", "/apis/apps/v1", "/healthz"):
        assert httpx.get(fake_kube.url + path, headers=headers).status_code == 200, path

    answer = httpx.get(fake_kube.url + "/metrics", headers=headers)

    assert answer.status_code == 403
    assert answer.json()["message"] == f'forbidden: User "{SA}" cannot get path "/metrics"'


def test_a_server_side_apply_that_creates_needs_create_as_well_as_patch(
    fake_kube: FakeKube, tmp_path: Path
) -> None:
    path = tmp_path / "patcher.yaml"
    path.write_text(
        """
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: configmap-patcher
rules:
  - apiGroups: [""]
    resources: [configmaps]
    verbs: [get, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: patcher
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: configmap-patcher}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: patcher}]
""",
        encoding="utf-8",
    )
    fake_kube.load_rbac(path)
    fake_kube.add_user("patcher-token", "patcher")
    fake_kube.create(configmap("existing", "default"))
    with fake_kube.api_client("patcher-token") as api_client:
        core = client.CoreV1Api(api_client)

        updated = core.patch_namespaced_config_map(
            "existing",
            "default",
            configmap("existing", "default") | {"data": {"a": "1"}},
            field_manager="patcher",
            force=True,
            _content_type=APPLY,
        )
        status = refused(
            core.patch_namespaced_config_map,
            "new",
            "default",
            configmap("new", "default"),
            field_manager="patcher",
            force=True,
            _content_type=APPLY,
        )

    assert updated.data == {"a": "1"}
    assert status["code"] == 403
    assert status["message"].startswith('configmaps "new" is forbidden')
    assert fake_kube.get("v1", "ConfigMap", "new", "default") is None


def test_a_binding_whose_role_is_missing_says_so_in_the_denial(fake_kube: FakeKube, tmp_path: Path) -> None:
    path = tmp_path / "dangling.yaml"
    path.write_text(
        """
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: dangling
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: not-there}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: readers}]
""",
        encoding="utf-8",
    )
    fake_kube.load_rbac(path)
    fake_kube.add_user("reader-token", "reader", ["readers"])
    with fake_kube.api_client("reader-token") as api_client:
        status = refused(client.CoreV1Api(api_client).list_namespace)

    assert status["message"] == (
        'namespaces is forbidden: User "reader" cannot list resource "namespaces" in API group "" at the '
        'cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io "not-there" not found'
    )


# Escalation ------------------------------------------------------------------------------------

BINDER = """
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: binder
rules:
  - apiGroups: [rbac.authorization.k8s.io]
    resources: [roles, rolebindings, clusterroles, clusterrolebindings]
    verbs: [get, create, patch, update]
  - apiGroups: [""]
    resources: [configmaps]
    verbs: [get, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: binder
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: binder}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: binder}]
"""


@pytest.fixture
def binder(fake_kube: FakeKube, tmp_path: Path) -> Iterator[client.RbacAuthorizationV1Api]:
    """A user who may write every RBAC kind and read configmaps, but holds nothing else."""
    path = tmp_path / "binder.yaml"
    path.write_text(BINDER, encoding="utf-8")
    fake_kube.load_rbac(path)
    fake_kube.add_user("binder-token", "binder")
    with fake_kube.api_client("binder-token") as api_client:
        yield client.RbacAuthorizationV1Api(api_client)


def binding(name: str, role_kind: str, role: str, user: str = "mallory") -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": "default"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }


def test_binding_cluster_admin_without_holding_it_is_refused(
    fake_kube: FakeKube, binder: client.RbacAuthorizationV1Api
) -> None:
    status = refused(
        binder.patch_namespaced_role_binding,
        "to-admin",
        "default",
        binding("to-admin", "ClusterRole", "cluster-admin"),
        field_manager="binder",
        _content_type=APPLY,
    )

    assert status["code"] == 403
    assert status["message"] == (
        'rolebindings.rbac.authorization.k8s.io "to-admin" is forbidden: user "binder" '
        '(groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n'
        '{APIGroups:["*"], Resources:["*"], Verbs:["*"]}\n'
        '{NonResourceURLs:["*"], Verbs:["*"]}'
    )
    assert status["details"] == {
        "name": "to-admin",
        "group": "rbac.authorization.k8s.io",
        "kind": "rolebindings",
    }
    assert fake_kube.get("rbac.authorization.k8s.io/v1", "RoleBinding", "to-admin", "default") is None


def test_a_subject_may_grant_what_it_holds(
    fake_kube: FakeKube, binder: client.RbacAuthorizationV1Api
) -> None:
    role: dict[str, Any] = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "reader", "namespace": "default"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}],
    }
    binder.create_namespaced_role("default", body(role))
    binder.create_namespaced_role_binding("default", body(binding("read", "Role", "reader")))

    wider = role | {
        "metadata": {"name": "writer", "namespace": "default"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["get", "delete"]}],
    }
    status = refused(binder.create_namespaced_role, "default", wider)

    assert status["message"].endswith(
        "is attempting to grant RBAC permissions not currently held:\n"
        '{APIGroups:[""], Resources:["configmaps"], Verbs:["delete"]}\n'
        '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "delete"]}'
    )
    assert status["message"].startswith(
        'roles.rbac.authorization.k8s.io "writer" is forbidden: user "binder"'
    )


def test_bind_on_a_named_role_allows_binding_it_and_escalate_allows_writing_roles(
    fake_kube: FakeKube, binder: client.RbacAuthorizationV1Api, tmp_path: Path
) -> None:
    path = tmp_path / "delegation.yaml"
    path.write_text(
        """
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: may-bind-view-and-escalate-roles
rules:
  - apiGroups: [rbac.authorization.k8s.io]
    resources: [clusterroles]
    resourceNames: [view]
    verbs: [bind]
  - apiGroups: [rbac.authorization.k8s.io]
    resources: [roles]
    verbs: [escalate]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: view
rules:
  - apiGroups: ["*"]
    resources: ["*"]
    verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: delegation
  namespace: default
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: may-bind-view-and-escalate-roles}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: binder}]
""",
        encoding="utf-8",
    )
    fake_kube.load_rbac(path)

    binder.create_namespaced_role_binding("default", body(binding("viewers", "ClusterRole", "view")))
    binder.create_namespaced_role(
        "default",
        body(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": {"name": "anything", "namespace": "default"},
                "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
            }
        ),
    )
    # ... only where the RoleBinding gives them: not in kube-system, not cluster-wide.
    elsewhere = binding("viewers", "ClusterRole", "view") | {
        "metadata": {"name": "viewers", "namespace": "kube-system"}
    }
    assert refused(binder.create_namespaced_role_binding, "kube-system", elsewhere)["code"] == 403
    assert (
        refused(
            binder.create_namespaced_role_binding,
            "default",
            binding("admins", "ClusterRole", "cluster-admin"),
        )["code"]
        == 403
    )


def test_cluster_role_bindings_of_roles_the_subject_lacks_are_refused(
    fake_kube: FakeKube, binder: client.RbacAuthorizationV1Api
) -> None:
    crb: dict[str, Any] = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "me-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "binder"}],
    }

    status = refused(binder.create_cluster_role_binding, crb)

    assert status["message"].startswith(
        'clusterrolebindings.rbac.authorization.k8s.io "me-admin" is forbidden: user "binder"'
    )
    missing = refused(
        binder.create_cluster_role_binding,
        crb | {"roleRef": crb["roleRef"] | {"name": "no-such-role"}, "metadata": {"name": "x"}},
    )
    assert (missing["code"], missing["message"]) == (
        404,
        'clusterrole.rbac.authorization.k8s.io "no-such-role" not found',
    )


def test_an_aggregated_cluster_role_gathers_the_rules_of_the_roles_it_selects(
    fake_kube: FakeKube, binder: client.RbacAuthorizationV1Api
) -> None:
    def cluster_role(name: str, labels: dict[str, str], resources: list[str]) -> dict[str, Any]:
        return {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name, "labels": labels},
            "rules": [{"apiGroups": [""], "resources": resources, "verbs": ["get"]}],
        }

    aggregate = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "gpu-reader"},
        "aggregationRule": {
            "clusterRoleSelectors": [{"matchLabels": {"example.com/aggregate-to-gpu": "true"}}]
        },
    }
    status = refused(binder.create_cluster_role, aggregate)
    assert status["message"] == (
        'clusterroles.rbac.authorization.k8s.io "gpu-reader" is forbidden: must have cluster-admin privileges '
        "to use the aggregationRule"
    )
    fake_kube.create(aggregate)
    fake_kube.create(cluster_role("nodes-part", {"example.com/aggregate-to-gpu": "true"}, ["nodes"]))
    fake_kube.create(cluster_role("pods-part", {"example.com/aggregate-to-gpu": "true"}, ["pods"]))
    fake_kube.create(cluster_role("unrelated", {}, ["secrets"]))

    def rules() -> list[Any]:
        role = fake_kube.get("rbac.authorization.k8s.io/v1", "ClusterRole", "gpu-reader")
        return list((role or {}).get("rules") or [])

    fake_kube.wait_for(lambda: len(rules()) == 2)
    assert rules() == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
    ]
    fake_kube.delete("rbac.authorization.k8s.io/v1", "ClusterRole", "pods-part")
    fake_kube.wait_for(lambda: len(rules()) == 1)


# Reviews and identities ------------------------------------------------------------------------


def test_self_subject_access_and_rules_reviews_answer_what_the_caller_may_do(
    fake_kube: FakeKube, robot: client.ApiClient
) -> None:
    authorization = client.AuthorizationV1Api(robot)

    def may(
        verb: str, resource: str, namespace: str = "", name: str = ""
    ) -> client.V1SubjectAccessReviewStatus:
        attributes = client.V1ResourceAttributes(verb=verb, resource=resource, namespace=namespace, name=name)
        review = authorization.create_self_subject_access_review(
            client.V1SelfSubjectAccessReview(
                spec=client.V1SelfSubjectAccessReviewSpec(resource_attributes=attributes)
            )
        )
        assert review.status is not None
        return review.status

    allowed = may("list", "pods", "team")
    assert allowed.allowed is True
    assert allowed.reason == (
        'RBAC: allowed by RoleBinding "robot-reads-pods/team" of ClusterRole "pod-reader" to ServiceAccount '
        '"robot/team"'
    )
    assert may("list", "pods", "other").allowed is False
    assert may("get", "configmaps", "other", "settings").allowed is True
    assert may("get", "configmaps", "other", "secret-plans").allowed is False

    rules = authorization.create_self_subject_rules_review(
        client.V1SelfSubjectRulesReview(spec=client.V1SelfSubjectRulesReviewSpec(namespace="other"))
    )
    assert rules.status is not None
    resource_rules = [(r.resources, r.resource_names, r.verbs) for r in rules.status.resource_rules]
    assert (["configmaps"], ["settings"], ["get", "list"]) in resource_rules
    assert (["nodes"], None, ["get", "list"]) in resource_rules
    assert not any(r == ["pods", "pods/log"] for r, _, _ in resource_rules)  # granted in "team" only


def test_a_deleted_service_account_s_token_is_refused(fake_kube: FakeKube, robot: client.ApiClient) -> None:
    core = client.CoreV1Api(robot)
    assert core.list_namespaced_pod("team").items == []

    fake_kube.delete("v1", "ServiceAccount", "robot", "team")

    status = refused(core.list_namespaced_pod, "team")
    assert (status["code"], status["message"]) == (401, "Unauthorized")
    fake_kube.wait_for(lambda: fake_kube.get("v1", "Secret", "robot-token", "team") is None)


def test_without_a_known_token_the_caller_is_the_admin_unless_the_server_requires_one() -> None:
    with run_fake_kube() as kube, kube.api_client("anything") as api_client:
        assert client.RbacAuthorizationV1Api(api_client).list_cluster_role().items
    with run_fake_kube(token="the-admin-token") as kube:
        with kube.api_client("the-admin-token") as admin:
            names = [
                r.metadata.name
                for r in client.RbacAuthorizationV1Api(admin).list_cluster_role().items
                if r.metadata
            ]
        assert "cluster-admin" in names and "system:discovery" in names
        with kube.api_client("a-guess") as stranger:
            assert refused(client.CoreV1Api(stranger).list_namespace)["code"] == 401
