"""The tenant confinement through the API, at authoring: a project ADMIN's template version that
reaches outside its instance's namespace is refused when it is added, with the document, the
object and the field; a platform admin's global template is not confined there."""

from __future__ import annotations

from typing import Any

from gpupaas.core.actor import Role
from tests.conftest import GraphQLClient
from tests.factories import make_project, make_template, make_user

ADD_VERSION = """
mutation($input: AddEnvironmentTemplateVersionInput!) {
  addEnvironmentTemplateVersion(input: $input) {
    version { id version }
    userErrors { field message code }
  }
}"""
CREATE = """
mutation($input: CreateEnvironmentTemplateInput!) {
  createEnvironmentTemplate(input: $input) { environmentTemplate { id } userErrors { field message } }
}"""

NAMESPACE = """\
apiVersion: v1
kind: Namespace
metadata:
  name: "{{ instance.namespace }}"
"""
KUBE_SYSTEM_CONFIG_MAP = (
    NAMESPACE
    + """\
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: pwned
  namespace: kube-system
data:
  owner: mallory
"""
)
CLUSTER_ADMIN_BINDING = (
    NAMESPACE
    + """\
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: mallory-is-root
  namespace: "{{ instance.namespace }}"
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cluster-admin
subjects:
- kind: User
  name: mallory
  apiGroup: rbac.authorization.k8s.io
"""
)
CLUSTER_ROLE = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: gpu-metrics-reader
rules:
- apiGroups: ["metrics.k8s.io"]
  resources: [pods]
  verbs: [get, list]
"""


async def add_version(gql: GraphQLClient, token: str, template_id: str, resources: str) -> dict[str, Any]:
    result: dict[str, Any] = (
        await gql.data(
            ADD_VERSION,
            {"input": {"template": template_id, "version": "1.0.0", "resources": resources}},
            token=token,
        )
    )["addEnvironmentTemplateVersion"]
    return result


async def test_a_config_map_into_kube_system_is_refused_at_authoring(db: object, gql: GraphQLClient) -> None:
    admin = await make_user("alice")
    project = await make_project("ml", alice=Role.ADMIN)
    template = await make_template(project)

    result = await add_version(gql, admin.token, str(template.id), KUBE_SYSTEM_CONFIG_MAP)

    assert result["version"] is None
    assert result["userErrors"] == [
        {
            "field": ["input", "resources"],
            "message": 'document 2 (ConfigMap pwned), metadata.namespace: is "kube-system": a confined '
            "template creates objects only in its instance's namespace (leave metadata.namespace out, "
            'or write "{{ instance.namespace }}")',
            "code": "INVALID",
        }
    ]


async def test_a_role_binding_of_a_user_to_cluster_admin_is_refused_at_authoring(
    db: object, gql: GraphQLClient
) -> None:
    admin = await make_user("alice")
    project = await make_project("ml", alice=Role.ADMIN)
    template = await make_template(project)

    result = await add_version(gql, admin.token, str(template.id), CLUSTER_ADMIN_BINDING)

    assert result["version"] is None
    messages = [error["message"] for error in result["userErrors"]]
    assert messages == [
        'document 2 (RoleBinding mallory-is-root), roleRef.kind: is "ClusterRole": a confined template '
        'may bind only a Role of its own namespace, never a ClusterRole (such as "cluster-admin")',
        'document 2 (RoleBinding mallory-is-root), subjects[0].kind: is "User": a confined template may '
        "bind only ServiceAccounts of its own namespace",
    ]


async def test_a_platform_admin_may_not_add_it_to_a_project_s_template_either(
    db: object, gql: GraphQLClient
) -> None:
    # The rule goes by whose template it is (a project's ADMINs may add versions to it), not by who
    # adds this version.
    root = await make_user("root", platform_admin=True)
    template = await make_template(await make_project("ml"))

    result = await add_version(gql, root.token, str(template.id), CLUSTER_ROLE)

    assert result["version"] is None
    [error] = result["userErrors"]
    assert (
        "document 1 (ClusterRole gpu-metrics-reader), kind: rbac.authorization.k8s.io/ClusterRole is not a kind"
        in (error["message"])
    )


async def test_a_global_template_of_a_platform_admin_is_not_confined_at_authoring(
    db: object, gql: GraphQLClient
) -> None:
    root = await make_user("root", platform_admin=True)
    created = (
        await gql.data(CREATE, {"input": {"project": "gpupaas-system", "name": "metrics"}}, token=root.token)
    )["createEnvironmentTemplate"]
    assert created["userErrors"] == []

    result = await add_version(gql, root.token, created["environmentTemplate"]["id"], CLUSTER_ROLE)

    assert result["userErrors"] == [] and result["version"] is not None
