"""A fake Kubernetes API server for the tests of the kubernetes driver.

No kube-apiserver can run on the test machines, so the driver (which uses the official
`kubernetes` client) talks to this in-memory server instead. It follows the API conventions for
the kinds the project uses: discovery and OpenAPI v3 documents (openapi.py: `kubectl apply
--server-side` validates through them), CRUD with Status errors (404, 409 AlreadyExists/Conflict,
422 Invalid with causes, 403 in a Terminating namespace), server-side apply with managedFields
and conflicts, merge/strategic/JSON patches, label and field selectors, lists at a
resourceVersion (Exact, NotOlderThan, 410 once compacted), watches with bookmarks and 410 Expired,
quantities in canonical form, deletion with finalizers and propagation policies, authentication
and RBAC authorization with the escalation checks (authz/: tokens of service accounts and users;
unknown tokens are the admin), and a controllable cluster behind it (scheduler, kubelet,
Deployment/StatefulSet/DaemonSet/Job controllers, claims and volumes, namespaces, quotas).

    with run_fake_kube() as kube:
        api = kubernetes.client.CoreV1Api(kube.api_client())
        ...

Fixtures (tests/fake_kube/fixtures.py): `fake_kube`, `fake_kube_async`, `kube_client`,
`kubeconfig_path`. For an identity with RBAC: `kube.load_rbac(path)` applies a file of
ServiceAccounts, token Secrets, roles and bindings, `kube.service_account_token(namespace, name)`
reads the token, and `kube.kubeconfig(path, token=...)` or `kube.api_client(token)` use it.
"""

from tests.fake_kube.controllers import DEFAULT_NODES, node
from tests.fake_kube.server import FakeKube, RequestRecord, run_fake_kube, run_fake_kube_async

__all__ = ["DEFAULT_NODES", "FakeKube", "RequestRecord", "node", "run_fake_kube", "run_fake_kube_async"]
