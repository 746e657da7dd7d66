"""The fake Kubernetes API server's fixtures, for the tests in this folder."""

from tests.fake_kube.fixtures import fake_kube, fake_kube_async, kube_client, kubeconfig_path

__all__ = ["fake_kube", "fake_kube_async", "kube_client", "kubeconfig_path"]
