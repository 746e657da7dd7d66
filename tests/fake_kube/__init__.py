"""A fake Kubernetes API server for the tests of the kubernetes driver.

No kube-apiserver can run on the test machines, so the driver (which uses the official
`kubernetes` client) talks to this in-memory server instead. It follows the API conventions for
the kinds the project uses: discovery, CRUD with Status errors (404, 409 AlreadyExists/Conflict,
422 Invalid with causes, 403 in a Terminating namespace), server-side apply with managedFields
and conflicts, merge/strategic/JSON patches, label and field selectors, watches with bookmarks
and 410 Expired, deletion with finalizers and propagation policies, and a controllable cluster
behind it (scheduler, kubelet, Deployment/StatefulSet controllers, namespaces, quotas).

    with run_fake_kube() as kube:
        api = kubernetes.client.CoreV1Api(kube.api_client())
        ...

Fixtures (tests/fake_kube/fixtures.py): `fake_kube`, `fake_kube_async`, `kube_client`,
`kubeconfig_path`.
"""

from tests.fake_kube.controllers import DEFAULT_NODES, node
from tests.fake_kube.server import FakeKube, RequestRecord, run_fake_kube, run_fake_kube_async

__all__ = ["DEFAULT_NODES", "FakeKube", "RequestRecord", "node", "run_fake_kube", "run_fake_kube_async"]
